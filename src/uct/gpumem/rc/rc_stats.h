/**
 * gpumem RDMA transport: what the process's endpoints moved, the one part of
 * the transport the public calls read.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_RC_STATS_H_
#define UCT_GPUMEM_RC_STATS_H_

#include <ucs/sys/compiler_def.h>
#include <stdint.h>

BEGIN_C_DECLS

/* Bytes the process's gpumem_rc endpoints posted in RDMA writes and reads
 * so far, from the plugin's load (gpumem_rc_bytes) */
uint64_t uct_gpumem_rc_bytes(void);

END_C_DECLS

#endif
