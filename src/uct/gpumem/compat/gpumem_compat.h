/**
 * gpumem: the internal UCX API as every supported UCX (1.13 to master) has it.
 *
 * The internal API a component is written against changes between UCX
 * releases: the arguments of memory domain and component ops, the internal
 * ops of an interface, a few UCS helpers. Configure probes the UCX headers it
 * is given (config/m4/ucx_api.m4) and this unit, alone, reads the answers:
 * the transports write each op once against the stable part of its
 * arguments, and name the adapter this header defines for it.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_COMPAT_H_
#define UCT_GPUMEM_COMPAT_H_

#include <uct/base/uct_md.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_component.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/memory/rcache.h>
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>

BEGIN_C_DECLS

/* Named in UCX 1.14 */
#ifndef UCT_DMABUF_FD_INVALID
#  define UCT_DMABUF_FD_INVALID -1
#endif


/*
 * Checks of a caller's arguments that hold in every UCX build. UCX compiles
 * UCT_CHECK_PARAM, and the checks built on it, out of its release builds
 * (--disable-params-check), where a length past a bounce buffer would overrun
 * it; the messages are UCX's.
 */
#define UCT_GPUMEM_CHECK_PARAM(_condition, _err_message, ...) \
    if (!(_condition)) { \
        ucs_error(_err_message, ## __VA_ARGS__); \
        return UCS_ERR_INVALID_PARAM; \
    }

#define UCT_GPUMEM_CHECK_IOV_SIZE(_iovcnt, _max_iov, _name) \
    UCT_GPUMEM_CHECK_PARAM((_iovcnt) <= (_max_iov), \
                           "iovcnt(%lu) should be limited by %lu in %s", \
                           (unsigned long)(_iovcnt), \
                           (unsigned long)(_max_iov), _name)

#define UCT_GPUMEM_CHECK_LENGTH(_length, _max_length, _name) \
    UCT_GPUMEM_CHECK_PARAM((size_t)(_length) <= (size_t)(_max_length), \
                           "Invalid %s length: %zu (expected: <= %zu)", \
                           _name, (size_t)(_length), (size_t)(_max_length))


/**
 * What a memory domain can do, as every UCX version's query has it; the
 * adapter of UCT_GPUMEM_MD_QUERY_DEFINE writes it into the attributes of the
 * running UCX.
 */
/* What a memory domain that invalidates declares: UCX 1.16 and later name
 * the invalidation of RMA access apart, and their UCP asks for it */
#ifdef HAVE_UCT_MD_FLAG_INVALIDATE_RMA
#  define UCT_GPUMEM_MD_FLAG_INVALIDATE \
    ((uint64_t)UCT_MD_FLAG_INVALIDATE | (uint64_t)UCT_MD_FLAG_INVALIDATE_RMA)
#else
#  define UCT_GPUMEM_MD_FLAG_INVALIDATE ((uint64_t)UCT_MD_FLAG_INVALIDATE)
#endif

typedef struct uct_gpumem_md_attr {
    uint64_t          flags;            /* UCT_MD_FLAG_* */
    size_t            max_alloc;
    size_t            max_reg;
    uint64_t          reg_mem_types;
    uint64_t          detect_mem_types;
    uint64_t          alloc_mem_types;
    uint64_t          access_mem_types;
    uint64_t          dmabuf_mem_types; /* Where UCX has it */
    size_t            rkey_packed_size;
    ucs_linear_func_t reg_cost;
} uct_gpumem_md_attr_t;


/**
 * What the memory domain knows of an address: the memory attributes of
 * every UCX version. The fields UCT_MD_MEM_ATTR_FIELD_* of field_mask are
 * asked for; the callee sets those it can.
 */
typedef struct uct_gpumem_mem_attr {
    uint64_t          field_mask;
    ucs_memory_type_t mem_type;
    ucs_sys_device_t  sys_dev;
    void              *base_address;
    size_t            alloc_length;
    int               dmabuf_fd;        /* UCT_DMABUF_FD_INVALID: none */
    size_t            dmabuf_offset;
} uct_gpumem_mem_attr_t;

/* Field bits of uct_gpumem_mem_attr_t the oldest UCX lacks */
#define UCT_GPUMEM_MEM_ATTR_FIELD_DMABUF_FD     UCS_BIT(4)
#define UCT_GPUMEM_MEM_ATTR_FIELD_DMABUF_OFFSET UCS_BIT(5)


void uct_gpumem_md_attr_export(const uct_gpumem_md_attr_t *attr,
                               void *ucx_md_attr);
void uct_gpumem_mem_attr_import(const void *ucx_mem_attr,
                                uct_gpumem_mem_attr_t *attr);
void uct_gpumem_mem_attr_export(const uct_gpumem_mem_attr_t *attr,
                                void *ucx_mem_attr);


/*
 * Memory domain ops whose arguments changed. Each macro defines a static
 * function _name, with the arguments of the running UCX, that calls _impl
 * with the arguments every version has:
 *
 *  query:     _impl(md, uct_gpumem_md_attr_t*)
 *  mem_reg:   _impl(md, address, length, unsigned flags, memh_p)
 *  mkey_pack: _impl(md, memh, address, length, params, buffer); address and
 *             length are the registration's where UCX gives none (< 1.16)
 *  mem_alloc: _impl(md, length_p, address_p, mem_type, sys_dev, flags,
 *             alloc_name, memh_p); sys_dev is UCS_SYS_DEVICE_ID_UNKNOWN
 *             where UCX asks for none (< 1.19)
 *  mem_query: _impl(md, address, length, uct_gpumem_mem_attr_t*)
 */
#define UCT_GPUMEM_MD_QUERY_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, UCT_GPUMEM_MD_ATTR_T *ucx_attr) \
    { \
        uct_gpumem_md_attr_t attr = {0}; \
        ucs_status_t status; \
        \
        status = _impl(md, &attr); \
        if (status == UCS_OK) { \
            uct_gpumem_md_attr_export(&attr, ucx_attr); \
        } \
        return status; \
    }

#define UCT_GPUMEM_MD_MEM_QUERY_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, const void *address, \
                              size_t length, \
                              UCT_GPUMEM_MD_MEM_ATTR_T *ucx_attr) \
    { \
        uct_gpumem_mem_attr_t attr; \
        ucs_status_t status; \
        \
        uct_gpumem_mem_attr_import(ucx_attr, &attr); \
        status = _impl(md, address, length, &attr); \
        if (status == UCS_OK) { \
            uct_gpumem_mem_attr_export(&attr, ucx_attr); \
        } \
        return status; \
    }

#ifdef HAVE_UCT_MD_QUERY_V2
#  define UCT_GPUMEM_MD_ATTR_T uct_md_attr_v2_t
#else
#  define UCT_GPUMEM_MD_ATTR_T uct_md_attr_t
#endif

#ifdef HAVE_UCT_MD_MEM_QUERY_V2
#  define UCT_GPUMEM_MD_MEM_ATTR_T uct_md_mem_attr_v2_t
#else
#  define UCT_GPUMEM_MD_MEM_ATTR_T uct_md_mem_attr_t
#endif

#ifdef HAVE_UCT_MD_MEM_REG_PARAMS
#  define UCT_GPUMEM_MD_MEM_REG_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, void *address, size_t length, \
                              const uct_md_mem_reg_params_t *params, \
                              uct_mem_h *memh_p) \
    { \
        return _impl(md, address, length, \
                     UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, \
                                                0), \
                     memh_p); \
    }
#else
#  define UCT_GPUMEM_MD_MEM_REG_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, void *address, size_t length, \
                              unsigned flags, uct_mem_h *memh_p) \
    { \
        return _impl(md, address, length, flags, memh_p); \
    }
#endif

#ifdef HAVE_UCT_MD_MKEY_PACK_ADDRESS
#  define UCT_GPUMEM_MD_MKEY_PACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, uct_mem_h memh, void *address, \
                              size_t length, \
                              const uct_md_mkey_pack_params_t *params, \
                              void *buffer) \
    { \
        return _impl(md, memh, address, length, params, buffer); \
    }
#else
#  define UCT_GPUMEM_MD_MKEY_PACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, uct_mem_h memh, \
                              const uct_md_mkey_pack_params_t *params, \
                              void *buffer) \
    { \
        return _impl(md, memh, NULL, 0, params, buffer); \
    }
#endif

#ifdef HAVE_UCT_MD_MEM_ALLOC_SYS_DEV
#  define UCT_GPUMEM_MD_MEM_ALLOC_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, size_t *length_p, \
                              void **address_p, ucs_memory_type_t mem_type, \
                              ucs_sys_device_t sys_dev, unsigned flags, \
                              const char *alloc_name, uct_mem_h *memh_p) \
    { \
        return _impl(md, length_p, address_p, mem_type, sys_dev, flags, \
                     alloc_name, memh_p); \
    }
#else
#  define UCT_GPUMEM_MD_MEM_ALLOC_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, size_t *length_p, \
                              void **address_p, ucs_memory_type_t mem_type, \
                              unsigned flags, const char *alloc_name, \
                              uct_mem_h *memh_p) \
    { \
        return _impl(md, length_p, address_p, mem_type, \
                     UCS_SYS_DEVICE_ID_UNKNOWN, flags, alloc_name, memh_p); \
    }
#endif

/* Component: rkey_unpack, _impl(component, rkey_buffer, rkey_p, handle_p) */
#ifdef HAVE_UCT_RKEY_UNPACK_PARAMS
#  define UCT_GPUMEM_RKEY_UNPACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_component_t *component, \
                              const void *rkey_buffer, \
                              const uct_rkey_unpack_params_t *params, \
                              uct_rkey_t *rkey_p, void **handle_p) \
    { \
        (void)params; \
        return _impl(component, rkey_buffer, rkey_p, handle_p); \
    }
#else
#  define UCT_GPUMEM_RKEY_UNPACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_component_t *component, \
                              const void *rkey_buffer, uct_rkey_t *rkey_p, \
                              void **handle_p) \
    { \
        return _impl(component, rkey_buffer, rkey_p, handle_p); \
    }
#endif


/*
 * Typed stubs, in place of casts of ucs_empty_function*: memory domains and
 * components.
 */
ucs_status_t uct_gpumem_md_mem_free_unsupported(uct_md_h md, uct_mem_h memh);
ucs_status_t uct_gpumem_md_mem_advise_unsupported(uct_md_h md, uct_mem_h memh,
                                                  void *addr, size_t length,
                                                  unsigned advice);
ucs_status_t uct_gpumem_md_detect_memory_type_unsupported(
        uct_md_h md, const void *address, size_t length,
        ucs_memory_type_t *mem_type_p);
ucs_status_t uct_gpumem_md_mem_query_unsupported(
        uct_md_h md, const void *address, size_t length,
        UCT_GPUMEM_MD_MEM_ATTR_T *mem_attr);
#ifdef HAVE_UCT_MD_MEM_ALLOC_SYS_DEV
ucs_status_t uct_gpumem_md_mem_alloc_unsupported(
        uct_md_h md, size_t *length_p, void **address_p,
        ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev, unsigned flags,
        const char *alloc_name, uct_mem_h *memh_p);
#else
ucs_status_t uct_gpumem_md_mem_alloc_unsupported(
        uct_md_h md, size_t *length_p, void **address_p,
        ucs_memory_type_t mem_type, unsigned flags, const char *alloc_name,
        uct_mem_h *memh_p);
#endif
ucs_status_t uct_gpumem_component_cm_open_unsupported(
        uct_component_h component, uct_worker_h worker,
        const uct_cm_config_t *config, uct_cm_h *cm_p);
ucs_status_t uct_gpumem_component_rkey_ptr_unsupported(
        uct_component_t *component, uct_rkey_t rkey, void *handle,
        uint64_t raddr, void **laddr_p);
ucs_status_t uct_gpumem_component_rkey_release_none(uct_component_t *component,
                                                    uct_rkey_t rkey,
                                                    void *handle);
void uct_gpumem_component_md_vfs_init_none(uct_md_h md);

/* Members of uct_md_ops_t that only some versions have (1.14 and 1.15
 * have both of the first two) */
#define UCT_GPUMEM_MD_OPS_COMPAT \
    UCT_GPUMEM_MD_OPS_SOCKADDR \
    UCT_GPUMEM_MD_OPS_ATTACH \
    UCT_GPUMEM_MD_OPS_MEM_ELEM

#ifdef HAVE_UCT_MD_OPS_IS_SOCKADDR_ACCESSIBLE
int uct_gpumem_md_is_sockaddr_accessible_never(
        uct_md_h md, const ucs_sock_addr_t *sockaddr,
        uct_sockaddr_accessibility_t mode);
#  define UCT_GPUMEM_MD_OPS_SOCKADDR \
    .is_sockaddr_accessible = uct_gpumem_md_is_sockaddr_accessible_never,
#else
#  define UCT_GPUMEM_MD_OPS_SOCKADDR
#endif

#ifdef HAVE_UCT_MD_OPS_MEM_ATTACH
ucs_status_t uct_gpumem_md_mem_attach_unsupported(
        uct_md_h md, const void *mkey_buffer,
        uct_md_mem_attach_params_t *params, uct_mem_h *memh_p);
#  define UCT_GPUMEM_MD_OPS_ATTACH \
    .mem_attach = uct_gpumem_md_mem_attach_unsupported,
#else
#  define UCT_GPUMEM_MD_OPS_ATTACH
#endif

#ifdef HAVE_UCT_MD_OPS_MEM_ELEM_PACK
#  define UCT_GPUMEM_MD_OPS_MEM_ELEM \
    .mem_elem_pack = uct_gpumem_md_mem_elem_pack_unsupported, \
    UCT_GPUMEM_MD_OPS_MEM_ELEM_RELEASE
#else
#  define UCT_GPUMEM_MD_OPS_MEM_ELEM
#endif

#ifdef HAVE_UCT_MD_OPS_MEM_ELEM_RELEASE
void uct_gpumem_md_mem_elem_release_none(uct_md_h md, void *release_handle);
ucs_status_t uct_gpumem_md_mem_elem_pack_unsupported(
        uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
        uct_device_mem_elem_t *mem_elem, void **release_handle_p);
#  define UCT_GPUMEM_MD_OPS_MEM_ELEM_RELEASE \
    .mem_elem_release = uct_gpumem_md_mem_elem_release_none,
#else
#  ifdef HAVE_UCT_MD_OPS_MEM_ELEM_PACK
ucs_status_t uct_gpumem_md_mem_elem_pack_unsupported(
        uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
        uct_device_mem_elem_t *mem_elem);
#  endif
#  define UCT_GPUMEM_MD_OPS_MEM_ELEM_RELEASE
#endif

/* Members of uct_component_t that only some versions have */
#ifdef HAVE_UCT_COMPONENT_RKEY_COMPARE
ucs_status_t uct_gpumem_component_rkey_compare_by_value(
        uct_component_t *component, uct_rkey_t rkey1, uct_rkey_t rkey2,
        const uct_rkey_compare_params_t *params, int *result);
#  define UCT_GPUMEM_COMPONENT_COMPAT \
    .rkey_compare = uct_gpumem_component_rkey_compare_by_value,
#else
#  define UCT_GPUMEM_COMPONENT_COMPAT
#endif


/*
 * Typed stubs of interface and endpoint ops.
 */
ucs_status_t uct_gpumem_ep_pending_add_busy(uct_ep_h ep, uct_pending_req_t *req,
                                            unsigned flags);
void uct_gpumem_ep_pending_purge_none(uct_ep_h ep,
                                      uct_pending_purge_callback_t cb,
                                      void *arg);
ucs_status_t uct_gpumem_ep_check_unsupported(uct_ep_h ep, unsigned flags,
                                             uct_completion_t *comp);
ucs_status_t uct_gpumem_iface_event_fd_get_unsupported(uct_iface_h iface,
                                                       int *fd_p);
ucs_status_t uct_gpumem_iface_event_arm_unsupported(uct_iface_h iface,
                                                    unsigned events);
ucs_status_t uct_gpumem_iface_get_address_none(uct_iface_h iface,
                                               uct_iface_addr_t *addr);
ucs_status_t uct_gpumem_iface_get_device_address_none(
        uct_iface_h iface, uct_device_addr_t *addr);
void uct_gpumem_iface_vfs_refresh_none(uct_iface_h iface);
ucs_status_t uct_gpumem_ep_query_unsupported(uct_ep_h ep,
                                             uct_ep_attr_t *ep_attr);
#ifdef HAVE_UCT_EP_INVALIDATE_PARAMS
ucs_status_t uct_gpumem_ep_invalidate_unsupported(
        uct_ep_h ep, const uct_ep_invalidate_params_t *params);
#else
ucs_status_t uct_gpumem_ep_invalidate_unsupported(uct_ep_h ep, unsigned flags);
#endif


/**
 * The internal ops of a gpumem interface: its performance estimate, and for
 * the rest what every version of UCX asks for. Reachability and connection
 * in the versions with _v2 ops go to the interface's own
 * iface_is_reachable and ep_connect_to_ep.
 */
#define UCT_GPUMEM_IFACE_INTERNAL_OPS(_estimate_perf) \
    UCT_GPUMEM_IFACE_INTERNAL_OPS_EP(_estimate_perf, uct_base_ep_is_connected)

/* The same, for a transport that connects endpoint to endpoint and so tells
 * itself whether an endpoint is connected to a given remote one (where UCX
 * asks: 1.16 and later) */
#define UCT_GPUMEM_IFACE_INTERNAL_OPS_EP(_estimate_perf, _ep_is_connected) \
    UCT_GPUMEM_IFACE_INTERNAL_OPS_EP_INVALIDATE( \
            _estimate_perf, _ep_is_connected, \
            uct_gpumem_ep_invalidate_unsupported)

/* The same, for a transport whose endpoint can be invalidated */
#define UCT_GPUMEM_IFACE_INTERNAL_OPS_EP_INVALIDATE(_estimate_perf, \
                                                    _ep_is_connected, \
                                                    _ep_invalidate) \
    .iface_estimate_perf = _estimate_perf, \
    .iface_vfs_refresh   = uct_gpumem_iface_vfs_refresh_none, \
    .ep_query            = uct_gpumem_ep_query_unsupported, \
    .ep_invalidate       = _ep_invalidate, \
    UCT_GPUMEM_IOP_IS_CONNECTED(_ep_is_connected) \
    UCT_GPUMEM_IFACE_INTERNAL_OPS_V2

#define UCT_GPUMEM_IFACE_INTERNAL_OPS_V2 \
    UCT_GPUMEM_IOP_QUERY_V2 \
    UCT_GPUMEM_IOP_CONNECT_TO_EP_V2 \
    UCT_GPUMEM_IOP_IS_REACHABLE_V2 \
    UCT_GPUMEM_IOP_DEVICE_EP \
    UCT_GPUMEM_IOP_PUT_SGL \
    UCT_GPUMEM_IOP_GET_SGL \
    UCT_GPUMEM_IOP_OUTSTANDING_PURGE \
    UCT_GPUMEM_IOP_MEM_ELEMENT_PACK

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_IFACE_QUERY_V2
#  define UCT_GPUMEM_IOP_QUERY_V2 .iface_query_v2 = uct_iface_base_query_v2,
#else
#  define UCT_GPUMEM_IOP_QUERY_V2
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_CONNECT_TO_EP_V2
ucs_status_t uct_gpumem_ep_connect_to_ep_v2(
        uct_ep_h ep, const uct_device_addr_t *device_addr,
        const uct_ep_addr_t *ep_addr,
        const uct_ep_connect_to_ep_params_t *params);
#  define UCT_GPUMEM_IOP_CONNECT_TO_EP_V2 \
    .ep_connect_to_ep_v2 = uct_gpumem_ep_connect_to_ep_v2,
#else
#  define UCT_GPUMEM_IOP_CONNECT_TO_EP_V2
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_IFACE_IS_REACHABLE_V2
int uct_gpumem_iface_is_reachable_v2(
        const uct_iface_h iface, const uct_iface_is_reachable_params_t *params);
#  define UCT_GPUMEM_IOP_IS_REACHABLE_V2 \
    .iface_is_reachable_v2 = uct_gpumem_iface_is_reachable_v2,
#else
#  define UCT_GPUMEM_IOP_IS_REACHABLE_V2
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_IS_CONNECTED
#  define UCT_GPUMEM_IOP_IS_CONNECTED(_func) .ep_is_connected = _func,
#else
#  define UCT_GPUMEM_IOP_IS_CONNECTED(_func)
#endif

/* The bandwidth of one path through the interface (UCX 1.20 and later): UCP
 * divides it by the interface's to share a device among lanes, and a lane
 * whose share is nothing carries nothing */
#ifdef HAVE_UCT_PERF_ATTR_PATH_BANDWIDTH
#  define UCT_GPUMEM_PERF_ATTR_SET_PATH_BANDWIDTH(_perf_attr, _dedicated, \
                                                  _shared) \
    do { \
        if ((_perf_attr)->field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH) { \
            (_perf_attr)->path_bandwidth.dedicated = (_dedicated); \
            (_perf_attr)->path_bandwidth.shared    = (_shared); \
        } \
    } while (0)
#else
#  define UCT_GPUMEM_PERF_ATTR_SET_PATH_BANDWIDTH(_perf_attr, _dedicated, \
                                                  _shared) \
    do { } while (0)
#endif

/* Capability flags that only some versions have */
#ifdef UCT_IFACE_FLAG_INTER_NODE
#  define UCT_GPUMEM_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#  define UCT_GPUMEM_IFACE_FLAG_INTER_NODE 0
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_GET_DEVICE_EP
ucs_status_t uct_gpumem_ep_get_device_ep_unsupported(
        uct_ep_h ep, uct_device_ep_h *device_ep_p);
#  define UCT_GPUMEM_IOP_DEVICE_EP \
    .ep_get_device_ep = uct_gpumem_ep_get_device_ep_unsupported,
#else
#  define UCT_GPUMEM_IOP_DEVICE_EP
#endif

/* Put and get of a scatter-gather list share their arguments */
#if defined(HAVE_UCT_IFACE_INTERNAL_OPS_EP_PUT_SGL_ZCOPY) || \
    defined(HAVE_UCT_IFACE_INTERNAL_OPS_EP_GET_SGL_ZCOPY)
ucs_status_t uct_gpumem_ep_sgl_zcopy_unsupported(
        uct_ep_h ep, void * const *buffers, const size_t *lengths,
        uct_mem_h const *memhs, const uint64_t *remote_addrs,
        uct_rkey_t const *rkeys, const size_t *counts, const size_t *strides,
        size_t count, uct_completion_t *comp);
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_PUT_SGL_ZCOPY
#  define UCT_GPUMEM_IOP_PUT_SGL \
    .ep_put_sgl_zcopy = uct_gpumem_ep_sgl_zcopy_unsupported,
#else
#  define UCT_GPUMEM_IOP_PUT_SGL
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_GET_SGL_ZCOPY
#  define UCT_GPUMEM_IOP_GET_SGL \
    .ep_get_sgl_zcopy = uct_gpumem_ep_sgl_zcopy_unsupported,
#else
#  define UCT_GPUMEM_IOP_GET_SGL
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_OUTSTANDING_PURGE
ucs_status_t uct_gpumem_ep_outstanding_purge_unsupported(
        uct_ep_h ep, const uct_ep_outstanding_purge_params_t *params);
#  define UCT_GPUMEM_IOP_OUTSTANDING_PURGE \
    .ep_outstanding_purge = uct_gpumem_ep_outstanding_purge_unsupported,
#else
#  define UCT_GPUMEM_IOP_OUTSTANDING_PURGE
#endif

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_IFACE_MEM_ELEMENT_PACK
ucs_status_t uct_gpumem_iface_mem_element_pack_unsupported(
        const uct_iface_h iface, uct_mem_h memh, uct_rkey_t rkey,
        uct_device_mem_element_t *mem_element);
#  define UCT_GPUMEM_IOP_MEM_ELEMENT_PACK \
    .iface_mem_element_pack = uct_gpumem_iface_mem_element_pack_unsupported,
#else
#  define UCT_GPUMEM_IOP_MEM_ELEMENT_PACK
#endif


/**
 * The settings of an interface's memory pool of registered buffers
 * (uct_iface_mpool_init), _prefix "MAX_BUFS" and _prefix "BUFS_GROW", with
 * UCX's help text. UCX 1.16 and later add the largest chunk and its growth
 * (_prefix "MAX_CHUNK_SIZE", _prefix "GROW_FACTOR"); they take the values
 * of ucs_mpool_params_reset().
 */
#ifdef HAVE_UCT_IFACE_MPOOL_CONFIG_MAX_CHUNK_SIZE
#  define UCT_GPUMEM_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, \
                                             _mp_name, _offset, _desc) \
    UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, 128m, 1.0, \
                                  _mp_name, _offset, _desc)
#else
#  define UCT_GPUMEM_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, \
                                             _mp_name, _offset, _desc) \
    UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, _mp_name, \
                                  _offset, _desc)
#endif


/**
 * A memory pool of fixed-size elements, as ucs_mpool_init() of every
 * version makes it.
 */
ucs_status_t uct_gpumem_mpool_init(ucs_mpool_t *mp, size_t priv_size,
                                   size_t elem_size, size_t align_offset,
                                   size_t alignment, unsigned elems_per_chunk,
                                   unsigned max_elems, ucs_mpool_ops_t *ops,
                                   const char *name);


/**
 * Fill @a opts from the defaults and the environment (UCX_ and the table's
 * prefix), as the global list @a entry describes them; a bad value is
 * logged by UCS's parser, naming the variable.
 */
ucs_status_t uct_gpumem_config_fill(void *opts,
                                    ucs_config_global_list_entry_t *entry);


/**
 * Name a system device in UCX's topology (ucx_info -d, logs).
 */
void uct_gpumem_topo_set_device_name(ucs_sys_device_t sys_dev,
                                     const char *name);


/*
 * Registration caches (UCS's rcache): created with an alignment until UCX
 * 1.17, asked for one at each lookup since; a merge op called without a NULL
 * check from UCX 1.18. Their settings (RCACHE_MAX_REGIONS, ...) are a
 * domain's table until UCX 1.15 (uct_md_config_rcache_table), UCS's since
 * (ucs_config_rcache_table), of the same fields.
 */
#ifdef HAVE_UCS_CONFIG_RCACHE_TABLE
typedef ucs_rcache_config_t uct_gpumem_rcache_config_t;
#  define UCT_GPUMEM_RCACHE_CONFIG_TABLE ucs_config_rcache_table
#else
typedef uct_md_rcache_config_t uct_gpumem_rcache_config_t;
#  define UCT_GPUMEM_RCACHE_CONFIG_TABLE uct_md_config_rcache_table
#endif

/* The regions' alignment is a setting (RCACHE_ADDR_ALIGN) until UCX 1.17;
 * from 1.18 each lookup gives its own, and the table has none: the
 * settings' default of it, and the alignment set (0 where none is) */
#ifdef HAVE_UCS_RCACHE_GET_ALIGNMENT
#  define UCT_GPUMEM_RCACHE_CONFIG_ALIGN(_default) ""
#  define uct_gpumem_rcache_config_align(_config) \
    ((void)(_config), (size_t)0)
#else
#  define UCT_GPUMEM_RCACHE_CONFIG_ALIGN(_default) \
    "RCACHE_ADDR_ALIGN=" _default ";"
#  define uct_gpumem_rcache_config_align(_config) \
    ((size_t)(_config)->alignment)
#endif

/**
 * Parameters of a cache of regions of @a region_struct_size bytes, aligned
 * to @a alignment (a power of 2, at most a page), with @a config's limits,
 * event priority and fork behaviour, and @a ops and @a context.
 */
void uct_gpumem_rcache_params_init(ucs_rcache_params_t *params,
                                   const uct_gpumem_rcache_config_t *config,
                                   size_t region_struct_size,
                                   size_t alignment,
                                   const ucs_rcache_ops_t *ops,
                                   void *context);


/**
 * ucs_rcache_get() of the range around the bytes aligned to @a alignment,
 * the cache's.
 */
ucs_status_t uct_gpumem_rcache_get(ucs_rcache_t *rcache, void *address,
                                   size_t length, size_t alignment, int prot,
                                   void *arg, ucs_rcache_region_t **region_p);


#ifdef HAVE_UCS_RCACHE_OPS_MERGE
void uct_gpumem_rcache_merge_nothing(void *context, ucs_rcache_t *rcache,
                                     void *arg, ucs_rcache_region_t *region);
#  define UCT_GPUMEM_RCACHE_OPS_COMPAT \
    .merge = uct_gpumem_rcache_merge_nothing,
#else
#  define UCT_GPUMEM_RCACHE_OPS_COMPAT
#endif

END_C_DECLS

#endif
