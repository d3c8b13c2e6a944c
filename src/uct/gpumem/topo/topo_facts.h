/**
 * gpumem topology: facts saved once by an administrator (as root, who can
 * read what unprivileged jobs cannot) and applied to later loads.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TOPO_FACTS_H_
#define GPUMEM_TOPO_FACTS_H_

#include "topo.h"

BEGIN_C_DECLS

/**
 * Override the facts of @a topo's devices with those saved in @a path: each
 * fact applies to every device (or path hop, or host bridge) at its PCI
 * address. A malformed file is UCS_ERR_INVALID_PARAM, naming the line, with
 * nothing applied; a missing one UCS_ERR_IO_ERROR.
 */
ucs_status_t gpumem_topo_facts_apply(gpumem_topo_t *topo, const char *path);

END_C_DECLS

#endif
