/**
 * gpumem IPC transport: what the process's transport did and holds, the
 * one part of the transport the public calls and the tests read.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_STATS_H_
#define UCT_GPUMEM_IPC_STATS_H_

#include <ucs/sys/compiler_def.h>
#include <stdint.h>

BEGIN_C_DECLS

/**
 * What the process's IPC transport did and holds, for tests and diagnostics.
 */
typedef struct uct_gpumem_ipc_stats {
    uint64_t unpacks;    /* Keys that came to the cache */
    uint64_t hits;       /* ... whose memory was mapped already */
    uint64_t imports;    /* Mappings made, on any GPU */
    uint64_t stale;      /* Entries dropped: address reused or owner gone */
    uint64_t evicted;    /* Idle entries dropped past the limit */
    uint64_t entries;    /* Entries now */
    uint64_t idle;       /* ... of which idle */
    uint64_t puts;       /* Operations posted: zcopy, short, bcopy */
    uint64_t gets;
    uint64_t bytes;      /* ... and the bytes they moved */
} uct_gpumem_ipc_stats_t;


/**
 * The process's statistics. Counters grow from the plugin's load; entries
 * and idle are those of the cache now (0 when none is open).
 */
void uct_gpumem_ipc_stats(uct_gpumem_ipc_stats_t *stats);

END_C_DECLS

#endif
