/**
 * gpumem copy transport: its memory domain, the gpumem component's: open,
 * query, close, and device memory: allocation, detection and queries;
 * registration and keys as the copy transport needs them.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "copy_md.h"
#include <uct/gpumem/compat/gpumem_compat.h>

#include <ucm/gpumem/ucm_gpumem.h>
#include <uct/gpumem/mem/gpumem_nic.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>


static ucs_config_field_t uct_gpumem_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};

static ucs_status_t uct_gpumem_md_query_attr(uct_md_h uct_md,
                                             uct_gpumem_md_attr_t *md_attr)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);
    uint64_t mem_types  = UCS_BIT(md->mem_type);

    /* Allocation and detection of device memory. Registration of host and
     * device memory, which the copy transport needs no more than an address
     * for, is there because UCP selects the lanes of its memory-type
     * endpoint and stages rendezvous fragments only on memory domains that
     * register host memory; no rkey is needed (NEED_RKEY is not set) */
    md_attr->flags            = UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_REG;
    md_attr->max_alloc        = gpumem_gpu_vram_size(
            md->context->gpus[md->alloc_gpu]);
    md_attr->max_reg          = SIZE_MAX;
    md_attr->reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) | mem_types;
    md_attr->detect_mem_types = mem_types;
    md_attr->alloc_mem_types  = mem_types;
    /* The copy engine reaches host memory too: UCP (1.19 and later) takes
     * the lanes of its memory-type endpoint, host lane included, from the
     * domains that access both memory types */
    md_attr->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST) | mem_types;
    /* mem_query gives a dma-buf where the driver exports one; not
     * advertised, since whether the kernel lets it is known only then */
    md_attr->dmabuf_mem_types = 0;
    md_attr->rkey_packed_size = 0;
    md_attr->reg_cost         = ucs_linear_func_make(0, 0);
    return UCS_OK;
}

UCT_GPUMEM_MD_QUERY_DEFINE(uct_gpumem_md_query, uct_gpumem_md_query_attr)

/* The GPU a system device names: the allocation GPU where UCX names none;
 * -1 where it names a device that is not one of this domain's GPUs */
static int uct_gpumem_md_alloc_gpu(uct_gpumem_md_t *md,
                                   ucs_sys_device_t sys_dev)
{
    unsigned i;

    if (sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN) {
        return md->alloc_gpu;
    }

    for (i = 0; i < md->context->num_gpus; ++i) {
        if (md->context->sys_devs[i] == sys_dev) {
            return i;
        }
    }

    return -1;
}

static ucs_status_t
uct_gpumem_md_mem_alloc_on(uct_md_h uct_md, size_t *length_p,
                           void **address_p, ucs_memory_type_t mem_type,
                           ucs_sys_device_t sys_dev,
                           unsigned UCS_V_UNUSED flags,
                           const char *alloc_name, uct_mem_h *memh_p)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);
    gpumem_region_t *region;
    ucs_status_t status;
    int gpu;

    if (mem_type != md->mem_type) {
        ucs_debug("gpumem: %s: cannot allocate %s memory, only %s",
                  alloc_name, ucs_memory_type_names[mem_type],
                  ucs_memory_type_names[md->mem_type]);
        return UCS_ERR_UNSUPPORTED;
    }

    gpu = uct_gpumem_md_alloc_gpu(md, sys_dev);
    if (gpu < 0) {
        ucs_debug("gpumem: %s: system device %u (%s) is none of the %u GPUs "
                  "of this domain", alloc_name, sys_dev,
                  ucs_topo_sys_device_get_name(sys_dev),
                  md->context->num_gpus);
        return UCS_ERR_UNSUPPORTED;
    }

    status = gpumem_alloc(md->context->gpus[gpu], GPUMEM_KIND_GPU, *length_p,
                          0, &region);
    if (status != UCS_OK) {
        if (status == UCS_ERR_NO_MEMORY) {
            ucs_debug("gpumem: %s: no room for %zu bytes on GPU %d now",
                      alloc_name, *length_p, gpu);
        }
        return status;
    }

    *address_p = (void*)gpumem_region_address(region);
    *length_p  = gpumem_region_size(region);
    *memh_p    = region;
    ucm_gpumem_dispatch_alloc(*address_p, *length_p, md->mem_type,
                              md->context->sys_devs[gpu]);
    ucs_trace("gpumem: %s: allocated %zu bytes at %p on GPU %d", alloc_name,
              *length_p, *address_p, gpu);
    return UCS_OK;
}

UCT_GPUMEM_MD_MEM_ALLOC_DEFINE(uct_gpumem_md_mem_alloc,
                               uct_gpumem_md_mem_alloc_on)

/* The one handle of every registration: the copy engines reach host memory
 * and the process's device memory by address, with nothing pinned or
 * mapped, so a registration holds nothing */
static char uct_gpumem_md_reg_handle;

static ucs_status_t
uct_gpumem_md_mem_reg_flags(uct_md_h uct_md, void *address, size_t length,
                            unsigned flags, uct_mem_h *memh_p)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);
    uintptr_t start     = (uintptr_t)address;
    uint64_t base;
    size_t size;
    int gpu, own;

    /* Device memory is registered only within one allocation: the core's,
     * or the application's own as the driver knows it, to the end of its
     * last block (gpumem_alloc_holds) */
    gpu = uct_gpumem_context_find_gpu(md->context, address);
    if ((gpu >= 0) &&
        ((gpumem_find_allocation(md->context->gpus[gpu], start, &base, &size,
                                 NULL, &own) != UCS_OK) ||
         !gpumem_alloc_holds(base, size, start, length))) {
        ucs_log((flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
                UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR,
                "gpumem: cannot register %zu bytes at %p: no allocation of "
                "GPU %d holds them", length, address, gpu);
        return UCS_ERR_INVALID_ADDR;
    }

    *memh_p = &uct_gpumem_md_reg_handle;
    return UCS_OK;
}

UCT_GPUMEM_MD_MEM_REG_DEFINE(uct_gpumem_md_mem_reg, uct_gpumem_md_mem_reg_flags)

static ucs_status_t
uct_gpumem_md_mem_dereg(uct_md_h UCS_V_UNUSED uct_md,
                        const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    if (params->memh != &uct_gpumem_md_reg_handle) {
        ucs_error("gpumem: deregistration of %p, which mem_reg did not give",
                  params->memh);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

static ucs_status_t uct_gpumem_md_mem_free(uct_md_h uct_md, uct_mem_h memh)
{
    uct_gpumem_md_t *md     = ucs_derived_of(uct_md, uct_gpumem_md_t);
    gpumem_region_t *region = memh;
    void *address           = (void*)gpumem_region_address(region);

    ucm_gpumem_dispatch_free(address, gpumem_region_size(region),
                             md->mem_type);
    return gpumem_free(gpumem_region_gpu(region), region);
}

static ucs_status_t
uct_gpumem_md_detect_memory_type(uct_md_h uct_md, const void *address,
                                 size_t UCS_V_UNUSED length,
                                 ucs_memory_type_t *mem_type_p)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);

    if (uct_gpumem_context_find_gpu(md->context, address) < 0) {
        return UCS_ERR_INVALID_ADDR;
    }

    *mem_type_p = md->mem_type;
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_md_mem_query_attr(uct_md_h uct_md, const void *address,
                             size_t length, uct_gpumem_mem_attr_t *mem_attr)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);
    uint64_t base, dmabuf_offset;
    int gpu, own, fd;
    size_t size, mapped;

    gpu = uct_gpumem_context_find_gpu(md->context, address);
    if (gpu < 0) {
        return UCS_ERR_INVALID_ADDR;
    }

    /* The core's own allocation, else the application's as the driver
     * knows it (cudaMalloc), else the range asked about */
    if (gpumem_find_allocation(md->context->gpus[gpu], (uintptr_t)address,
                               &base, &mapped, &size, &own) != UCS_OK) {
        base = (uintptr_t)address;
        size = length;
        own  = 0;
    }

    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = md->mem_type;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = md->context->sys_devs[gpu];
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = (void*)base;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = size;
    }
    /* A dma-buf of the core's VRAM, where the driver exports one: the
     * caller owns the descriptor */
    if ((mem_attr->field_mask & UCT_GPUMEM_MEM_ATTR_FIELD_DMABUF_FD) && own &&
        (gpumem_dmabuf(md->context->gpus[gpu], (uintptr_t)address, &fd,
                       &dmabuf_offset) == UCS_OK)) {
        mem_attr->dmabuf_fd     = fd;
        mem_attr->dmabuf_offset = dmabuf_offset;
    }
    return UCS_OK;
}

UCT_GPUMEM_MD_MEM_QUERY_DEFINE(uct_gpumem_md_mem_query,
                               uct_gpumem_md_mem_query_attr)

static void uct_gpumem_md_close(uct_md_h uct_md)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);

    uct_gpumem_context_put(md->context);
    ucs_free(md);
}

/* rkey_packed_size is 0: nothing to pack */
static ucs_status_t
uct_gpumem_md_mkey_pack_none(uct_md_h UCS_V_UNUSED md,
                             uct_mem_h UCS_V_UNUSED memh,
                             void UCS_V_UNUSED *address,
                             size_t UCS_V_UNUSED length,
                             const uct_md_mkey_pack_params_t UCS_V_UNUSED
                                     *params,
                             void UCS_V_UNUSED *buffer)
{
    return UCS_OK;
}

UCT_GPUMEM_MD_MKEY_PACK_DEFINE(uct_gpumem_md_mkey_pack,
                               uct_gpumem_md_mkey_pack_none)

static uct_md_ops_t uct_gpumem_md_ops = {
    .close              = uct_gpumem_md_close,
    .query              = uct_gpumem_md_query,
    .mem_alloc          = uct_gpumem_md_mem_alloc,
    .mem_free           = uct_gpumem_md_mem_free,
    .mem_advise         = uct_gpumem_md_mem_advise_unsupported,
    .mem_reg            = uct_gpumem_md_mem_reg,
    .mem_dereg          = uct_gpumem_md_mem_dereg,
    .mem_query          = uct_gpumem_md_mem_query,
    .mkey_pack          = uct_gpumem_md_mkey_pack,
    .detect_memory_type = uct_gpumem_md_detect_memory_type,
    UCT_GPUMEM_MD_OPS_COMPAT
};

static ucs_status_t
uct_gpumem_md_open(uct_component_t *component, const char *md_name,
                   const uct_md_config_t UCS_V_UNUSED *md_config,
                   uct_md_h *md_p)
{
    uct_gpumem_settings_t settings;
    uct_gpumem_md_t *md;
    ucs_status_t status;

    status = uct_gpumem_settings_read(&settings);
    if (status != UCS_OK) {
        return status;
    }

    md = ucs_calloc(1, sizeof(*md), "uct_gpumem_md_t");
    if (md == NULL) {
        ucs_error("gpumem: failed to allocate memory domain %s", md_name);
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    status = uct_gpumem_context_get(&settings, &md->context);
    if (status != UCS_OK) {
        goto err_free;
    }

    if (settings.alloc_gpu >= md->context->num_gpus) {
        ucs_error("gpumem: UCX_GPUMEM_ALLOC_GPU=%u but the machine has %u "
                  "GPUs", settings.alloc_gpu, md->context->num_gpus);
        status = UCS_ERR_INVALID_PARAM;
        goto err_put;
    }

    md->super.ops       = &uct_gpumem_md_ops;
    md->super.component = component;
    md->mem_type        = settings.mem_type;
    md->alloc_gpu       = settings.alloc_gpu;
    *md_p               = &md->super;
    goto out;

err_put:
    uct_gpumem_context_put(md->context);
err_free:
    ucs_free(md);
out:
    uct_gpumem_settings_release(&settings);
    return status;
}

/* A peer that reaches this domain's transport is this process, and the
 * copy transport takes remote addresses as they are: the key is no key */
static ucs_status_t
uct_gpumem_rkey_unpack_none(uct_component_t UCS_V_UNUSED *component,
                            const void UCS_V_UNUSED *rkey_buffer,
                            uct_rkey_t *rkey_p, void **handle_p)
{
    *rkey_p   = UCT_INVALID_RKEY;
    *handle_p = NULL;
    return UCS_OK;
}

UCT_GPUMEM_RKEY_UNPACK_DEFINE(uct_gpumem_rkey_unpack,
                              uct_gpumem_rkey_unpack_none)

uct_component_t uct_gpumem_component = {
    .name               = "gpumem",
    .query_md_resources = uct_gpumem_context_query_md_resources,
    .md_open            = uct_gpumem_md_open,
    .cm_open            = uct_gpumem_component_cm_open_unsupported,
    .rkey_unpack        = uct_gpumem_rkey_unpack,
    .rkey_ptr           = uct_gpumem_component_rkey_ptr_unsupported,
    .rkey_release       = uct_gpumem_component_rkey_release_none,
    .md_config          = {
        .name           = "gpumem memory domain",
        .prefix         = "GPUMEM_",
        .table          = uct_gpumem_md_config_table,
        .size           = sizeof(uct_gpumem_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_gpumem_component),
    .flags              = 0,
    .md_vfs_init        = uct_gpumem_component_md_vfs_init_none,
    UCT_GPUMEM_COMPONENT_COMPAT
};
