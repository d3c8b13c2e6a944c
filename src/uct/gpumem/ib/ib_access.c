/**
 * gpumem verbs: UCT access flags to an access, an access and an order to
 * a region's IBV_ACCESS_* flags, an access to a queue pair's.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_access.h"

#include <uct/api/uct.h>
#include <infiniband/verbs.h>


/* In the order of gpumem_reg_access_t */
const char *uct_gpumem_ib_access_names[] = {
    [GPUMEM_REG_ACCESS_LOCAL]        = "local",
    [GPUMEM_REG_ACCESS_REMOTE_WRITE] = "remote_write",
    [GPUMEM_REG_ACCESS_REMOTE]       = "remote",
    [GPUMEM_REG_ACCESS_LAST]         = NULL
};

gpumem_reg_access_t uct_gpumem_ib_access_from_uct_flags(
        unsigned uct_flags, gpumem_reg_access_t max_access)
{
    gpumem_reg_access_t access;

    if (uct_flags & (UCT_MD_MEM_ACCESS_REMOTE_GET |
                     UCT_MD_MEM_ACCESS_REMOTE_ATOMIC)) {
        access = GPUMEM_REG_ACCESS_REMOTE;
    } else if (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_PUT) {
        access = GPUMEM_REG_ACCESS_REMOTE_WRITE;
    } else {
        access = GPUMEM_REG_ACCESS_LOCAL;
    }

    /* The accesses are ordered: each grants all that the one before does */
    return (access < max_access) ? access : max_access;
}

unsigned uct_gpumem_ib_access_flags(gpumem_reg_access_t access,
                                    gpumem_reg_order_t order)
{
    unsigned flags;

    /* The NIC writes every region for this process's reads and receives,
     * hence LOCAL_WRITE whatever the access; verbs also requires it with
     * REMOTE_WRITE */
    switch (access) {
    case GPUMEM_REG_ACCESS_REMOTE:
        flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                IBV_ACCESS_REMOTE_READ;
        break;
    case GPUMEM_REG_ACCESS_REMOTE_WRITE:
        flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        break;
    default:
        flags = IBV_ACCESS_LOCAL_WRITE;
        break;
    }

#if HAVE_DECL_IBV_ACCESS_RELAXED_ORDERING
    if (order == GPUMEM_REG_ORDER_ANY) {
        flags |= IBV_ACCESS_RELAXED_ORDERING;
    }
#else
    (void)order;
#endif

    return flags;
}

unsigned uct_gpumem_ib_qp_access_flags(gpumem_reg_access_t access)
{
    switch (access) {
    case GPUMEM_REG_ACCESS_REMOTE:
        return IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    case GPUMEM_REG_ACCESS_REMOTE_WRITE:
        return IBV_ACCESS_REMOTE_WRITE;
    default:
        return 0;
    }
}
