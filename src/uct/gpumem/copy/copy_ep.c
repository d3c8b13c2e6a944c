/**
 * gpumem copy transport: the endpoint's operations. Short and bcopy
 * operations copy before they return; zero-copy ones go to the interface's
 * queue and complete through its progress.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "copy_ep.h"
#include <uct/gpumem/compat/gpumem_compat.h>

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <string.h>


static UCS_CLASS_INIT_FUNC(uct_gpumem_copy_ep_t, const uct_ep_params_t *params)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(params->iface,
                                                    uct_gpumem_copy_iface_t);

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    if ((params->iface_addr == NULL) ||
        memcmp(params->iface_addr, &iface->id, sizeof(iface->id))) {
        ucs_error("gpumemcpy: iface %p reaches only the interfaces of its "
                  "own process, whose address is 0x%" PRIx64, iface,
                  iface->id);
        return UCS_ERR_UNREACHABLE;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_gpumem_ep_t, &iface->super);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_copy_ep_t)
{
}

UCS_CLASS_DEFINE(uct_gpumem_copy_ep_t, uct_gpumem_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gpumem_copy_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpumem_copy_ep_t, uct_ep_t);


static UCS_F_ALWAYS_INLINE uct_gpumem_copy_iface_t *
uct_gpumem_copy_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, uct_gpumem_copy_iface_t);
}

ucs_status_t uct_gpumem_copy_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t UCS_V_UNUSED rkey)
{
    ucs_status_t status;

    status = uct_gpumem_copy_iface_copy_sync(uct_gpumem_copy_ep_iface(tl_ep),
                                             (void*)(uintptr_t)remote_addr,
                                             buffer, length);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, SHORT,
                      length);
    ucs_trace_data("gpumemcpy PUT_SHORT %u bytes from %p to 0x%" PRIx64 ": "
                   "%s", length, buffer, remote_addr,
                   ucs_status_string(status));
    return status;
}

ucs_status_t uct_gpumem_copy_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t UCS_V_UNUSED rkey)
{
    ucs_status_t status;

    status = uct_gpumem_copy_iface_copy_sync(uct_gpumem_copy_ep_iface(tl_ep),
                                             buffer,
                                             (const void*)(uintptr_t)
                                                     remote_addr,
                                             length);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, SHORT,
                      length);
    ucs_trace_data("gpumemcpy GET_SHORT %u bytes from 0x%" PRIx64 " to %p: "
                   "%s", length, remote_addr, buffer,
                   ucs_status_string(status));
    return status;
}

ssize_t uct_gpumem_copy_ep_put_bcopy(uct_ep_h tl_ep,
                                     uct_pack_callback_t pack_cb, void *arg,
                                     uint64_t remote_addr,
                                     uct_rkey_t UCS_V_UNUSED rkey)
{
    uct_gpumem_copy_iface_t *iface = uct_gpumem_copy_ep_iface(tl_ep);
    ucs_status_t status;
    size_t length;

    length = pack_cb(iface->super.bounce, arg);
    UCT_GPUMEM_CHECK_LENGTH(length, iface->super.config.bounce_size, "put_bcopy");

    status = uct_gpumem_copy_iface_copy_sync(iface,
                                             (void*)(uintptr_t)remote_addr,
                                             iface->super.bounce, length);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, BCOPY,
                      length);
    ucs_trace_data("gpumemcpy PUT_BCOPY %zu bytes to 0x%" PRIx64 ": %s",
                   length, remote_addr, ucs_status_string(status));
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_gpumem_copy_ep_get_bcopy(uct_ep_h tl_ep,
                                          uct_unpack_callback_t unpack_cb,
                                          void *arg, size_t length,
                                          uint64_t remote_addr,
                                          uct_rkey_t UCS_V_UNUSED rkey,
                                          uct_completion_t UCS_V_UNUSED *comp)
{
    uct_gpumem_copy_iface_t *iface = uct_gpumem_copy_ep_iface(tl_ep);
    ucs_status_t status;

    UCT_GPUMEM_CHECK_LENGTH(length, iface->super.config.bounce_size, "get_bcopy");

    status = uct_gpumem_copy_iface_copy_sync(iface, iface->super.bounce,
                                             (const void*)(uintptr_t)
                                                     remote_addr,
                                             length);
    if (status == UCS_OK) {
        unpack_cb(arg, iface->super.bounce, length);
    }

    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, BCOPY,
                      length);
    ucs_trace_data("gpumemcpy GET_BCOPY %zu bytes from 0x%" PRIx64 ": %s",
                   length, remote_addr, ucs_status_string(status));
    return status;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_copy_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                         uint64_t remote_addr, uct_completion_t *comp,
                         int is_put)
{
    uct_gpumem_copy_iface_t *iface = uct_gpumem_copy_ep_iface(tl_ep);
    uct_gpumem_ep_t *ep            = ucs_derived_of(tl_ep, uct_gpumem_ep_t);
    void *remote                   = (void*)(uintptr_t)remote_addr;
    ucs_status_t status;
    size_t length;

    UCT_GPUMEM_CHECK_IOV_SIZE(iovcnt, 1ul, is_put ? "put_zcopy" : "get_zcopy");
    if (iovcnt == 0) {
        return UCS_OK;
    }

    UCT_GPUMEM_CHECK_PARAM(iov[0].count <= 1, "gpumemcpy: iov count %u: the "
                           "buffer must be contiguous", iov[0].count);
    length = uct_iov_get_length(iov);

    if (is_put) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY, length);
        status = uct_gpumem_copy_iface_post(iface, ep, remote, iov[0].buffer,
                                            length, comp);
    } else {
        UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY, length);
        status = uct_gpumem_copy_iface_post(iface, ep, iov[0].buffer, remote,
                                            length, comp);
    }

    ucs_trace_data("gpumemcpy %s_ZCOPY %zu bytes %s 0x%" PRIx64 ": %s",
                   is_put ? "PUT" : "GET", length, is_put ? "to" : "from",
                   remote_addr, ucs_status_string(status));
    return status;
}

ucs_status_t uct_gpumem_copy_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t UCS_V_UNUSED rkey,
                                          uct_completion_t *comp)
{
    return uct_gpumem_copy_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, comp, 1);
}

ucs_status_t uct_gpumem_copy_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t UCS_V_UNUSED rkey,
                                          uct_completion_t *comp)
{
    return uct_gpumem_copy_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, comp, 0);
}
