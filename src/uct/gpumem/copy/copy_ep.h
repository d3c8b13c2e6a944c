/**
 * gpumem copy transport: the endpoint, whose remote addresses are addresses
 * of this process (host or device memory), needing no key.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_COPY_EP_H_
#define UCT_GPUMEM_COPY_EP_H_

#include "copy_iface.h"

#include <ucs/type/class.h>


typedef struct uct_gpumem_copy_ep {
    uct_gpumem_ep_t super;
} uct_gpumem_copy_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_gpumem_copy_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpumem_copy_ep_t, uct_ep_t);


ucs_status_t uct_gpumem_copy_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey);

ucs_status_t uct_gpumem_copy_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey);

ssize_t uct_gpumem_copy_ep_put_bcopy(uct_ep_h tl_ep,
                                     uct_pack_callback_t pack_cb, void *arg,
                                     uint64_t remote_addr,
                                     uct_rkey_t rkey);

ucs_status_t uct_gpumem_copy_ep_get_bcopy(uct_ep_h tl_ep,
                                          uct_unpack_callback_t unpack_cb,
                                          void *arg, size_t length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);

ucs_status_t uct_gpumem_copy_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);

ucs_status_t uct_gpumem_copy_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);

#endif
