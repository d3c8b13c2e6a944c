/**
 * gpumem verbs: the registration caches of a memory domain.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_rcache.h"

#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/mem/gpumem_mem.h>
#include <ucm/api/ucm.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>


/* Regions of the caches: a multiple of the smallest page of host memory
 * and of GPU memory, so that a region of device memory lies in the
 * allocation of its bytes */
#define UCT_GPUMEM_IB_RCACHE_ALIGN \
    ucs_min(ucs_get_page_size(), GPUMEM_PAGE_SIZE)

/* Memory freed or unmapped is deregistered by UCS's thread once this much
 * waits, as UCX's domains do by default (UCX_RCACHE_MAX_UNRELEASED) */
#define UCT_GPUMEM_IB_RCACHE_MAX_UNRELEASED  (512ul << 20)


/* A cached registration: a view of all of it, of which each caller's
 * handle holds a slice of the bytes it asked for */
typedef struct uct_gpumem_ib_rcache_region {
    ucs_rcache_region_t super;
    gpumem_reg_view_t   view;
} uct_gpumem_ib_rcache_region_t;


static ucs_status_t
uct_gpumem_ib_rcache_mem_reg(void *context, ucs_rcache_t UCS_V_UNUSED *rcache,
                             void *arg,
                             ucs_rcache_region_t *rregion, uint16_t flags)
{
    uct_gpumem_ib_rcache_region_t *region =
            ucs_derived_of(rregion, uct_gpumem_ib_rcache_region_t);
    uct_gpumem_ib_reg_params_t params     =
            *(const uct_gpumem_ib_reg_params_t*)arg;

    /* A range merged from several is tried again alone where it fails: only
     * that failure is the caller's */
    if (flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) {
        params.super.log_level = UCS_LOG_LEVEL_DEBUG;
    }

    return uct_gpumem_ib_md_register_range(context, &params,
                                           (void*)rregion->super.start,
                                           rregion->super.end -
                                           rregion->super.start,
                                           &region->view);
}

static void
uct_gpumem_ib_rcache_mem_dereg(void UCS_V_UNUSED *context,
                               ucs_rcache_t UCS_V_UNUSED *rcache,
                               ucs_rcache_region_t *rregion)
{
    uct_gpumem_ib_rcache_region_t *region =
            ucs_derived_of(rregion, uct_gpumem_ib_rcache_region_t);

    /* A failure is logged by the driver, which keeps the registration until
     * the domain closes */
    (void)gpumem_reg_view_release(&region->view);
}

static void uct_gpumem_ib_rcache_dump_region(void UCS_V_UNUSED *context,
                                             ucs_rcache_t UCS_V_UNUSED *rcache,
                                             ucs_rcache_region_t *rregion,
                                             char *buf, size_t max)
{
    uct_gpumem_ib_rcache_region_t *region =
            ucs_derived_of(rregion, uct_gpumem_ib_rcache_region_t);
    const gpumem_reg_region_t *reg_region = region->view.region;

    snprintf(buf, max, "%s access, lkey 0x%" PRIx32 " rkey 0x%" PRIx32,
             gpumem_reg_access_name(reg_region->access), reg_region->mr.lkey,
             reg_region->mr.rkey);
}

static const ucs_rcache_ops_t uct_gpumem_ib_rcache_ops = {
    .mem_reg     = uct_gpumem_ib_rcache_mem_reg,
    .mem_dereg   = uct_gpumem_ib_rcache_mem_dereg,
    UCT_GPUMEM_RCACHE_OPS_COMPAT
    .dump_region = uct_gpumem_ib_rcache_dump_region
};

ucs_status_t uct_gpumem_ib_rcache_init(uct_gpumem_ib_md_t *md, int enable)
{
    char name[GPUMEM_REG_DEVICE_NAME_MAX + 32];
    ucs_rcache_params_t params;
    ucs_status_t status;
    int access;

    if (enable == UCS_NO) {
        return UCS_OK;
    }

    uct_gpumem_rcache_params_init(&params,
                                  sizeof(uct_gpumem_ib_rcache_region_t),
                                  UCT_GPUMEM_IB_RCACHE_ALIGN,
                                  &uct_gpumem_ib_rcache_ops, md);
    params.ucm_events     = UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MEM_TYPE_FREE;
    params.max_unreleased = UCT_GPUMEM_IB_RCACHE_MAX_UNRELEASED;
    /* Device memory has no page frames to check; a child of a fork has
     * none of the registrations, as UCX's own domains purge theirs */
    params.flags      = UCS_RCACHE_FLAG_NO_PFN_CHECK |
                        UCS_RCACHE_FLAG_PURGE_ON_FORK;

    for (access = 0; access < GPUMEM_REG_ACCESS_LAST; ++access) {
        snprintf(name, sizeof(name), "%s_%s", md->domain.name,
                 gpumem_reg_access_name(access));
        status = ucs_rcache_create(&params, name, NULL, &md->rcache[access]);
        if (status != UCS_OK) {
            md->rcache[access] = NULL;
            uct_gpumem_ib_rcache_cleanup(md);
            if (enable == UCS_YES) {
                ucs_error("gpumem: %s: the registration cache could not be "
                          "made (UCX_GPUMEM_IB_RCACHE=yes): %s",
                          md->domain.name, ucs_status_string(status));
                return status;
            }

            ucs_diag("gpumem: %s registers memory without a cache: it could "
                     "not be made: %s", md->domain.name,
                     ucs_status_string(status));
            return UCS_OK;
        }
    }

    return UCS_OK;
}

void uct_gpumem_ib_rcache_cleanup(uct_gpumem_ib_md_t *md)
{
    int access;

    for (access = 0; access < GPUMEM_REG_ACCESS_LAST; ++access) {
        if (md->rcache[access] != NULL) {
            ucs_rcache_destroy(md->rcache[access]);
            md->rcache[access] = NULL;
        }
    }
}

int uct_gpumem_ib_rcache_takes(const void *address, size_t length)
{
    return (length > 0) &&
           ((uintptr_t)address <= (UINTPTR_MAX - length -
                                   UCT_GPUMEM_IB_RCACHE_ALIGN));
}

ucs_status_t uct_gpumem_ib_rcache_get(uct_gpumem_ib_md_t *md,
                                      uct_gpumem_ib_reg_params_t *params,
                                      void *address, size_t length,
                                      uct_mem_h *memh_p)
{
    ucs_rcache_t *rcache = md->rcache[params->super.access];
    uct_gpumem_ib_rcache_region_t *region;
    ucs_rcache_region_t *rregion;
    uct_gpumem_ib_memh_t *memh;
    ucs_status_t status;

    memh = uct_gpumem_ib_memh_alloc(md, params->super.log_level);
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_rcache_get(rcache, address, length,
                                   UCT_GPUMEM_IB_RCACHE_ALIGN,
                                   PROT_READ | PROT_WRITE, params, &rregion);
    if (status != UCS_OK) {
        goto err_free;
    }

    /* The caller's bytes of it, no more: a peer's key reaches them alone */
    region = ucs_derived_of(rregion, uct_gpumem_ib_rcache_region_t);
    status = gpumem_reg_view_slice(&region->view,
                                   (uintptr_t)address - rregion->super.start,
                                   length, &memh->view);
    if (status != UCS_OK) {
        goto err_put;
    }

    memh->rcache = rcache;
    memh->region = rregion;
    *memh_p      = memh;
    return UCS_OK;

err_put:
    ucs_rcache_region_put(rcache, rregion);
err_free:
    ucs_free(memh);
    return status;
}

void uct_gpumem_ib_rcache_put(uct_gpumem_ib_memh_t *memh)
{
    /* A slice, never the registration's last view: the region holds one */
    (void)gpumem_reg_view_release(&memh->view);
    ucs_rcache_region_put(memh->rcache, memh->region);
    ucs_free(memh);
}
