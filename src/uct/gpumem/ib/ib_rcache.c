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
#include <ucs/time/time.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>


/* The most a region of the caches is aligned to: the smallest page of host
 * memory and of GPU memory, so that a region lies in the mapping of its
 * bytes and, for device memory, in their allocation */
#define UCT_GPUMEM_IB_RCACHE_ALIGN_MAX \
    ucs_min(ucs_get_page_size(), GPUMEM_PAGE_SIZE)

/* A lookup in a cache, as UCX estimates its own (RCACHE_OVERHEAD=auto) */
#define UCT_GPUMEM_IB_RCACHE_OVERHEAD  180e-9


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

/* The alignment of the caches' regions: the setting's where this UCX has
 * one, at most the most they may have */
static ucs_status_t
uct_gpumem_ib_rcache_align(uct_gpumem_ib_md_t *md,
                           const uct_gpumem_rcache_config_t *config)
{
    size_t setting = uct_gpumem_rcache_config_align(config);

    md->rcache_align = UCT_GPUMEM_IB_RCACHE_ALIGN_MAX;
    if (setting == 0) {
        return UCS_OK;
    }

    if (!ucs_is_pow2(setting) || (setting < UCS_PGT_ADDR_ALIGN)) {
        ucs_error("gpumem: %s: UCX_GPUMEM_IB_RCACHE_ADDR_ALIGN=%zu is not a "
                  "power of 2 of at least %d", md->domain.name, setting,
                  (int)UCS_PGT_ADDR_ALIGN);
        return UCS_ERR_INVALID_PARAM;
    }

    if (setting > md->rcache_align) {
        ucs_diag("gpumem: %s: the registration cache aligns its regions to "
                 "%zu bytes, not UCX_GPUMEM_IB_RCACHE_ADDR_ALIGN=%zu: more "
                 "could reach past their memory", md->domain.name,
                 md->rcache_align, setting);
    } else {
        md->rcache_align = setting;
    }
    return UCS_OK;
}

ucs_status_t uct_gpumem_ib_rcache_init(uct_gpumem_ib_md_t *md, int enable,
                                       const uct_gpumem_rcache_config_t *config)
{
    char name[GPUMEM_REG_DEVICE_NAME_MAX + 32];
    ucs_rcache_params_t params;
    ucs_status_t status;
    int access;

    if (enable == UCS_NO) {
        return UCS_OK;
    }

    status = uct_gpumem_ib_rcache_align(md, config);
    if (status != UCS_OK) {
        return status;
    }

    md->rcache_overhead = (config->overhead == UCS_TIME_AUTO) ?
                          UCT_GPUMEM_IB_RCACHE_OVERHEAD :
                          ucs_time_to_sec(config->overhead);
    uct_gpumem_rcache_params_init(&params, config,
                                  sizeof(uct_gpumem_ib_rcache_region_t),
                                  md->rcache_align,
                                  &uct_gpumem_ib_rcache_ops, md);
    params.ucm_events  = UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MEM_TYPE_FREE;
    /* Device memory has no page frames to check */
    params.flags      |= UCS_RCACHE_FLAG_NO_PFN_CHECK;

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
                                   UCT_GPUMEM_IB_RCACHE_ALIGN_MAX));
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

    status = uct_gpumem_rcache_get(rcache, address, length, md->rcache_align,
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
