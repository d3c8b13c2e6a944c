/**
 * gpumem: the internal UCX API as every supported UCX (1.13 to master) has it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_compat.h"

#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/topo/base/topo.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* The stubs below ignore their arguments, as their names say */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#ifdef HAVE_UCT_MD_QUERY_V2
void uct_gpumem_md_attr_export(const uct_gpumem_md_attr_t *attr,
                               void *ucx_md_attr)
{
    uct_md_attr_v2_t *md_attr = ucx_md_attr;

    /* Every field UCX has, ours or its defaults; UCX fills in the component
     * name and the rest of its own after the op returns */
#  ifdef HAVE_UCT_MD_BASE_MD_QUERY
    uct_md_base_md_query(md_attr);
#  else
    /* UCX zeroes the attributes before the op; only what is not 0 */
#    ifdef HAVE_UCT_MD_ATTR_V2_REG_ALIGNMENT
    md_attr->reg_alignment = 1;
#    endif
#  endif
    md_attr->flags            = attr->flags;
    md_attr->max_alloc        = attr->max_alloc;
    md_attr->max_reg          = attr->max_reg;
    md_attr->reg_mem_types    = attr->reg_mem_types;
    md_attr->detect_mem_types = attr->detect_mem_types;
    md_attr->alloc_mem_types  = attr->alloc_mem_types;
    md_attr->access_mem_types = attr->access_mem_types;
    md_attr->dmabuf_mem_types = attr->dmabuf_mem_types;
    md_attr->rkey_packed_size = attr->rkey_packed_size;
    md_attr->reg_cost         = attr->reg_cost;
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
}
#else
void uct_gpumem_md_attr_export(const uct_gpumem_md_attr_t *attr,
                               void *ucx_md_attr)
{
    uct_md_attr_t *md_attr = ucx_md_attr;

    md_attr->cap.flags            = attr->flags;
    md_attr->cap.max_alloc        = attr->max_alloc;
    md_attr->cap.max_reg          = attr->max_reg;
    md_attr->cap.reg_mem_types    = attr->reg_mem_types;
    md_attr->cap.detect_mem_types = attr->detect_mem_types;
    md_attr->cap.alloc_mem_types  = attr->alloc_mem_types;
    md_attr->cap.access_mem_types = attr->access_mem_types;
    md_attr->rkey_packed_size     = attr->rkey_packed_size;
    md_attr->reg_cost             = attr->reg_cost;
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
}
#endif

void uct_gpumem_mem_attr_import(const void *ucx_mem_attr,
                                uct_gpumem_mem_attr_t *attr)
{
    const UCT_GPUMEM_MD_MEM_ATTR_T *mem_attr = ucx_mem_attr;

    memset(attr, 0, sizeof(*attr));
    attr->field_mask = mem_attr->field_mask;
    attr->sys_dev    = UCS_SYS_DEVICE_ID_UNKNOWN;
    attr->dmabuf_fd  = UCT_DMABUF_FD_INVALID;
}

void uct_gpumem_mem_attr_export(const uct_gpumem_mem_attr_t *attr,
                                void *ucx_mem_attr)
{
    UCT_GPUMEM_MD_MEM_ATTR_T *mem_attr = ucx_mem_attr;
    uint64_t fields                    = mem_attr->field_mask;

    if (fields & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = attr->mem_type;
    }
    if (fields & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = attr->sys_dev;
    }
    if (fields & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = attr->base_address;
    }
    if (fields & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = attr->alloc_length;
    }
#ifdef HAVE_UCT_MD_MEM_ATTR_FIELD_DMABUF
    if (fields & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD) {
        mem_attr->dmabuf_fd = attr->dmabuf_fd;
    }
    if (fields & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET) {
        mem_attr->dmabuf_offset = attr->dmabuf_offset;
    }
#endif
#ifdef HAVE_UCT_MD_MEM_QUERY_V2
    if (fields & UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS) {
        /* Device memory of a gpumem domain is registrable by the NIC */
        mem_attr->mem_flags = UCS_MEM_FLAG_REGISTRABLE;
    }
#endif
}

ucs_status_t uct_gpumem_md_mem_free_unsupported(uct_md_h md, uct_mem_h memh)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_md_mem_advise_unsupported(uct_md_h md, uct_mem_h memh,
                                                  void *addr, size_t length,
                                                  unsigned advice)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_md_detect_memory_type_unsupported(
        uct_md_h md, const void *address, size_t length,
        ucs_memory_type_t *mem_type_p)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_md_mem_query_unsupported(
        uct_md_h md, const void *address, size_t length,
        UCT_GPUMEM_MD_MEM_ATTR_T *mem_attr)
{
    return UCS_ERR_UNSUPPORTED;
}

#ifdef HAVE_UCT_MD_MEM_ALLOC_SYS_DEV
ucs_status_t uct_gpumem_md_mem_alloc_unsupported(
        uct_md_h md, size_t *length_p, void **address_p,
        ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev, unsigned flags,
        const char *alloc_name, uct_mem_h *memh_p)
#else
ucs_status_t uct_gpumem_md_mem_alloc_unsupported(
        uct_md_h md, size_t *length_p, void **address_p,
        ucs_memory_type_t mem_type, unsigned flags, const char *alloc_name,
        uct_mem_h *memh_p)
#endif
{
    return UCS_ERR_UNSUPPORTED;
}

#ifdef HAVE_UCT_MD_OPS_IS_SOCKADDR_ACCESSIBLE
int uct_gpumem_md_is_sockaddr_accessible_never(
        uct_md_h md, const ucs_sock_addr_t *sockaddr,
        uct_sockaddr_accessibility_t mode)
{
    return 0;
}
#elif defined(HAVE_UCT_MD_OPS_MEM_ATTACH)
ucs_status_t uct_gpumem_md_mem_attach_unsupported(
        uct_md_h md, const void *mkey_buffer,
        uct_md_mem_attach_params_t *params, uct_mem_h *memh_p)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

#ifdef HAVE_UCT_MD_OPS_MEM_ELEM_RELEASE
ucs_status_t uct_gpumem_md_mem_elem_pack_unsupported(
        uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
        uct_device_mem_elem_t *mem_elem, void **release_handle_p)
{
    return UCS_ERR_UNSUPPORTED;
}

void uct_gpumem_md_mem_elem_release_none(uct_md_h md, void *release_handle)
{
}
#elif defined(HAVE_UCT_MD_OPS_MEM_ELEM_PACK)
ucs_status_t uct_gpumem_md_mem_elem_pack_unsupported(
        uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
        uct_device_mem_elem_t *mem_elem)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

ucs_status_t uct_gpumem_component_cm_open_unsupported(
        uct_component_h component, uct_worker_h worker,
        const uct_cm_config_t *config, uct_cm_h *cm_p)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_component_rkey_ptr_unsupported(
        uct_component_t *component, uct_rkey_t rkey, void *handle,
        uint64_t raddr, void **laddr_p)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_component_rkey_release_none(uct_component_t *component,
                                                    uct_rkey_t rkey,
                                                    void *handle)
{
    return UCS_OK;
}

void uct_gpumem_component_md_vfs_init_none(uct_md_h md)
{
}

#ifdef HAVE_UCT_COMPONENT_RKEY_COMPARE
/* A gpumem key is its value: two keys are the same key when equal */
ucs_status_t uct_gpumem_component_rkey_compare_by_value(
        uct_component_t *component, uct_rkey_t rkey1, uct_rkey_t rkey2,
        const uct_rkey_compare_params_t *params, int *result)
{
    if ((params->field_mask != 0) || (result == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    *result = (rkey1 > rkey2) ? 1 : (rkey1 < rkey2) ? -1 : 0;
    return UCS_OK;
}
#endif

ucs_status_t uct_gpumem_ep_pending_add_busy(uct_ep_h ep, uct_pending_req_t *req,
                                            unsigned flags)
{
    return UCS_ERR_BUSY;
}

void uct_gpumem_ep_pending_purge_none(uct_ep_h ep,
                                      uct_pending_purge_callback_t cb,
                                      void *arg)
{
}

ucs_status_t uct_gpumem_ep_check_unsupported(uct_ep_h ep, unsigned flags,
                                             uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_iface_event_fd_get_unsupported(uct_iface_h iface,
                                                       int *fd_p)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_iface_event_arm_unsupported(uct_iface_h iface,
                                                    unsigned events)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_gpumem_iface_get_address_none(uct_iface_h iface,
                                               uct_iface_addr_t *addr)
{
    return UCS_OK;
}

ucs_status_t uct_gpumem_iface_get_device_address_none(
        uct_iface_h iface, uct_device_addr_t *addr)
{
    return UCS_OK;
}

void uct_gpumem_iface_vfs_refresh_none(uct_iface_h iface)
{
}

ucs_status_t uct_gpumem_ep_query_unsupported(uct_ep_h ep,
                                             uct_ep_attr_t *ep_attr)
{
    return UCS_ERR_UNSUPPORTED;
}

#ifdef HAVE_UCT_EP_INVALIDATE_PARAMS
ucs_status_t uct_gpumem_ep_invalidate_unsupported(
        uct_ep_h ep, const uct_ep_invalidate_params_t *params)
#else
ucs_status_t uct_gpumem_ep_invalidate_unsupported(uct_ep_h ep, unsigned flags)
#endif
{
    return UCS_ERR_UNSUPPORTED;
}

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_CONNECT_TO_EP_V2
ucs_status_t uct_gpumem_ep_connect_to_ep_v2(
        uct_ep_h ep, const uct_device_addr_t *device_addr,
        const uct_ep_addr_t *ep_addr,
        const uct_ep_connect_to_ep_params_t *params)
{
    if (ep->iface->ops.ep_connect_to_ep == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    return ep->iface->ops.ep_connect_to_ep(ep, device_addr, ep_addr);
}
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_IFACE_IS_REACHABLE_V2
int uct_gpumem_iface_is_reachable_v2(
        const uct_iface_h iface, const uct_iface_is_reachable_params_t *params)
{
    const uct_device_addr_t *device_addr =
            UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, device_addr,
                            DEVICE_ADDR, NULL);
    const uct_iface_addr_t *iface_addr =
            UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params, iface_addr,
                            IFACE_ADDR, NULL);
    int reachable;

    reachable = iface->ops.iface_is_reachable(iface, device_addr, iface_addr);
#  ifdef HAVE_UCT_IFACE_SCOPE_IS_REACHABLE
    /* Within the scope asked about: a device of this machine, or the
     * network (UCP asks both ways, and marks a lane reachable within the
     * device scope as one inside the machine) */
    reachable = reachable && uct_iface_scope_is_reachable(iface, params);
#  endif
    if (!reachable &&
        ucs_test_all_flags(params->field_mask,
                           UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING |
                           UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH) &&
        (params->info_string != NULL) && (params->info_string_length > 0)) {
        /* The interface logs why at debug level */
        ucs_snprintf_zero(params->info_string, params->info_string_length,
                          "not reachable by this gpumem interface");
    }

    return reachable;
}
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_GET_DEVICE_EP
ucs_status_t uct_gpumem_ep_get_device_ep_unsupported(
        uct_ep_h ep, uct_device_ep_h *device_ep_p)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

#if defined(HAVE_UCT_IFACE_INTERNAL_OPS_EP_PUT_SGL_ZCOPY) || \
    defined(HAVE_UCT_IFACE_INTERNAL_OPS_EP_GET_SGL_ZCOPY)
ucs_status_t uct_gpumem_ep_sgl_zcopy_unsupported(
        uct_ep_h ep, void * const *buffers, const size_t *lengths,
        uct_mem_h const *memhs, const uint64_t *remote_addrs,
        uct_rkey_t const *rkeys, const size_t *counts, const size_t *strides,
        size_t count, uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_OUTSTANDING_PURGE
ucs_status_t uct_gpumem_ep_outstanding_purge_unsupported(
        uct_ep_h ep, const uct_ep_outstanding_purge_params_t *params)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_IFACE_MEM_ELEMENT_PACK
ucs_status_t uct_gpumem_iface_mem_element_pack_unsupported(
        const uct_iface_h iface, uct_mem_h memh, uct_rkey_t rkey,
        uct_device_mem_element_t *mem_element)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

ucs_status_t uct_gpumem_mpool_init(ucs_mpool_t *mp, size_t priv_size,
                                   size_t elem_size, size_t align_offset,
                                   size_t alignment, unsigned elems_per_chunk,
                                   unsigned max_elems, ucs_mpool_ops_t *ops,
                                   const char *name)
{
#ifdef HAVE_UCS_MPOOL_PARAMS
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.priv_size       = priv_size;
    params.elem_size       = elem_size;
    params.align_offset    = align_offset;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = max_elems;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, priv_size, elem_size, align_offset, alignment,
                          elems_per_chunk, max_elems, ops, name);
#endif
}

ucs_status_t uct_gpumem_config_fill(void *opts,
                                    ucs_config_global_list_entry_t *entry)
{
#ifdef HAVE_UCS_CONFIG_PARSER_FILL_OPTS_ENTRY
    return ucs_config_parser_fill_opts(opts, entry, UCS_DEFAULT_ENV_PREFIX, 0);
#else
    return ucs_config_parser_fill_opts(opts, entry->table,
                                       UCS_DEFAULT_ENV_PREFIX, entry->prefix,
                                       0);
#endif
}

void uct_gpumem_topo_set_device_name(ucs_sys_device_t sys_dev,
                                     const char *name)
{
#ifdef HAVE_UCS_TOPO_SYS_DEVICE_SET_NAME_PRIORITY
    /* The priority of UCX's own GPU names (cuda, rocm), under a NIC's */
    (void)ucs_topo_sys_device_set_name(sys_dev, name, 10);
#else
    (void)ucs_topo_sys_device_set_name(sys_dev, name);
#endif
}


void uct_gpumem_rcache_params_init(ucs_rcache_params_t *params,
                                   const uct_gpumem_rcache_config_t *config,
                                   size_t region_struct_size,
                                   size_t alignment,
                                   const ucs_rcache_ops_t *ops,
                                   void *context)
{
    /* As ucs_rcache_set_params() (UCX 1.16) and uct_md_set_rcache_params()
     * (1.13) fill them, but for the alignment, the caller's */
    memset(params, 0, sizeof(*params));
    params->ucm_event_priority = config->event_prio;
    params->max_regions        = config->max_regions;
    params->max_size           = config->max_size;
    params->max_unreleased     = config->max_unreleased;
    params->flags              = config->purge_on_fork ?
                                 UCS_RCACHE_FLAG_PURGE_ON_FORK : 0;
#ifdef HAVE_UCS_RCACHE_PARAMS_ALIGNMENT
    params->alignment          = alignment;
    params->max_alignment      = alignment;
#endif
    params->region_struct_size = region_struct_size;
    params->ops                = ops;
    params->context            = context;
}

ucs_status_t uct_gpumem_rcache_get(ucs_rcache_t *rcache, void *address,
                                   size_t length, size_t alignment, int prot,
                                   void *arg, ucs_rcache_region_t **region_p)
{
#ifdef HAVE_UCS_RCACHE_GET_ALIGNMENT
    return ucs_rcache_get(rcache, address, length, alignment, prot, arg,
                          region_p);
#else
    (void)alignment; /* The cache's, given at its creation */
    return ucs_rcache_get(rcache, address, length, prot, arg, region_p);
#endif
}

#ifdef HAVE_UCS_RCACHE_OPS_MERGE
void uct_gpumem_rcache_merge_nothing(void *context, ucs_rcache_t *rcache,
                                     void *arg, ucs_rcache_region_t *region)
{
}
#endif
