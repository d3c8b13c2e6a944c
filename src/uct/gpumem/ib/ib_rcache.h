/**
 * gpumem verbs: the registration caches of a memory domain (UCS's rcache):
 * memory registered again through uct_md_mem_reg() is not registered with
 * the device again. One cache per access a registration grants, so that a
 * cached registration never grants more than its caller asked; a range
 * leaves the caches when its memory is unmapped or its device memory freed
 * (UCM's events).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IB_RCACHE_H_
#define UCT_GPUMEM_IB_RCACHE_H_

#include "ib_md.h"

BEGIN_C_DECLS

/**
 * Make the domain's caches, as UCX_GPUMEM_IB_RCACHE says: UCS_YES fails
 * where they cannot be made, UCS_TRY registers without them then (said at
 * diag level), UCS_NO makes none; with the settings @a config
 * (UCX_GPUMEM_IB_RCACHE_*), of which a bad alignment is an error.
 */
ucs_status_t uct_gpumem_ib_rcache_init(uct_gpumem_ib_md_t *md, int enable,
                                       const uct_gpumem_rcache_config_t *config);


/* Destroy the domain's caches, deregistering what they hold */
void uct_gpumem_ib_rcache_cleanup(uct_gpumem_ib_md_t *md);


/* Whether the caches take these bytes: some, and an aligned range around
 * them that does not wrap. The rest is registered without them, and
 * refused naming why. */
int uct_gpumem_ib_rcache_takes(const void *address, size_t length);


/**
 * A handle on @a length bytes at @a address of a cached registration of
 * the aligned range around them, granting @a params' access: the cached
 * one, or a new one. The handle is a view of those bytes alone: a peer's
 * key of it reaches no more. Give it back with uct_gpumem_ib_rcache_put().
 */
ucs_status_t uct_gpumem_ib_rcache_get(uct_gpumem_ib_md_t *md,
                                      uct_gpumem_ib_reg_params_t *params,
                                      void *address, size_t length,
                                      uct_mem_h *memh_p);


/* The handle goes; the registration stays cached while its memory does */
void uct_gpumem_ib_rcache_put(uct_gpumem_ib_memh_t *memh);

END_C_DECLS

#endif
