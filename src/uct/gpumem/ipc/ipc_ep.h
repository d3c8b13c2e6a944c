/**
 * gpumem IPC transport: the endpoint to a process of the machine whose GPU
 * this process's GPU reaches.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_EP_H_
#define UCT_GPUMEM_IPC_EP_H_

#include "ipc_iface.h"

#include <ucs/type/class.h>


typedef struct uct_gpumem_ipc_ep {
    uct_gpumem_ep_t      super;
    pid_t                peer_pid;
    uint32_t             peer_iface_id;  /* Its interface in the process */
    uct_keepalive_info_t keepalive;  /* The peer's start: ep_check tells a
                                        dead peer, or its pid reused */
    gpumem_pci_addr_t    peer_gpu;
} uct_gpumem_ipc_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_gpumem_ipc_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gpumem_ipc_ep_t, uct_ep_t);


#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_IS_CONNECTED
/* Whether the endpoint is connected to the interface the addresses name:
 * the machine, the process, its interface among the process's, and its
 * GPU */
int uct_gpumem_ipc_ep_is_connected(const uct_ep_h tl_ep,
                                   const uct_ep_is_connected_params_t *params);
#endif


/* Whether the peer process still lives; the interface's error handler is
 * called for the endpoint at progress where it does not */
ucs_status_t uct_gpumem_ipc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp);

ucs_status_t uct_gpumem_ipc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                         unsigned length, uint64_t remote_addr,
                                         uct_rkey_t rkey);

ssize_t uct_gpumem_ipc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                    void *arg, uint64_t remote_addr,
                                    uct_rkey_t rkey);

ucs_status_t uct_gpumem_ipc_ep_get_bcopy(uct_ep_h tl_ep,
                                         uct_unpack_callback_t unpack_cb,
                                         void *arg, size_t length,
                                         uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp);

ucs_status_t uct_gpumem_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                         size_t iovcnt, uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp);

ucs_status_t uct_gpumem_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                         size_t iovcnt, uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp);

#endif
