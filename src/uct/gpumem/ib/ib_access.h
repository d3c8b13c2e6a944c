/**
 * gpumem verbs: what a registration asks of the NIC, as UCX asks it and as
 * verbs grants it.
 *
 * Pure functions, so that the mapping is tested where no NIC exists.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IB_ACCESS_H_
#define UCT_GPUMEM_IB_ACCESS_H_

#include <uct/gpumem/reg/reg.h>
#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/**
 * The accesses' names, in their order and ending with NULL: "local",
 * "remote_write", "remote"; the values of the settings that take an access.
 */
extern const char *uct_gpumem_ib_access_names[];


/**
 * The least access that covers a registration's UCT access flags
 * (UCT_MD_MEM_ACCESS_*), never more than @a max_access:
 *
 * - no remote flag                        -> local
 * - UCT_MD_MEM_ACCESS_REMOTE_PUT alone    -> remote write
 * - UCT_MD_MEM_ACCESS_REMOTE_GET, _ATOMIC -> remote (there is no access that
 *                                            lets peers read but not write)
 *
 * Atomics are not granted by any access.
 */
gpumem_reg_access_t uct_gpumem_ib_access_from_uct_flags(
        unsigned uct_flags, gpumem_reg_access_t max_access);


/**
 * The IBV_ACCESS_* flags of an access and an order, granting nothing the
 * access does not:
 *
 * - local        -> IBV_ACCESS_LOCAL_WRITE (the NIC writes a region for this
 *                   process's reads and receives)
 * - remote write -> LOCAL_WRITE | REMOTE_WRITE
 * - remote       -> LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ
 *
 * Any order adds IBV_ACCESS_RELAXED_ORDERING where rdma-core has it; it is an
 * optional flag, which a device or kernel without relaxed ordering ignores.
 */
unsigned uct_gpumem_ib_access_flags(gpumem_reg_access_t access,
                                    gpumem_reg_order_t order);


/**
 * The IBV_ACCESS_* flags of a queue pair that lets its peer do what an
 * access says, and nothing more (a peer reads or writes a region only
 * through a queue pair that allows it, and only if the region allows it
 * too):
 *
 * - local        -> none
 * - remote write -> IBV_ACCESS_REMOTE_WRITE
 * - remote       -> IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ
 */
unsigned uct_gpumem_ib_qp_access_flags(gpumem_reg_access_t access);

END_C_DECLS

#endif
