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
    uct_gpumem_ep_t            super;
    pid_t                      peer_pid;
    uint32_t                   peer_iface_id;  /* Its interface in the
                                                  process */
    uct_keepalive_info_t       keepalive;    /* The peer's start: ep_check
                                                tells a dead peer, or its
                                                pid reused */
    gpumem_pci_addr_t          peer_gpu;
    uct_gpumem_ipc_fifo_peer_t fifo;         /* The peer's receive FIFO,
                                                where its messages go */
    ucs_queue_head_t           pending;      /* uct_pending_req_t waiting
                                                for a slot of it */
    ucs_list_link_t            pending_list; /* In the interface's
                                                pending_eps while some
                                                wait */
    int                        dispatching;  /* Its pending requests are
                                                being given their turn */
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

/* Active messages, into the peer's receive FIFO (ipc_am.c) */
ucs_status_t uct_gpumem_ipc_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                        uint64_t header, const void *payload,
                                        unsigned length);

ssize_t uct_gpumem_ipc_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                   uct_pack_callback_t pack_cb, void *arg,
                                   unsigned flags);

/* A request waits for a slot of the peer's FIFO: UCS_ERR_BUSY when one is
 * free now and none waits before it */
ucs_status_t uct_gpumem_ipc_ep_pending_add(uct_ep_h tl_ep,
                                           uct_pending_req_t *req,
                                           unsigned flags);

/* UCS_ERR_NO_RESOURCE while requests wait: the flush is to wait behind
 * them; else the base's */
ucs_status_t uct_gpumem_ipc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp);

void uct_gpumem_ipc_ep_pending_purge(uct_ep_h tl_ep,
                                     uct_pending_purge_callback_t cb,
                                     void *arg);

/* Drops the endpoint's waiting requests, unpurged: it goes */
void uct_gpumem_ipc_ep_pending_drop(uct_gpumem_ipc_ep_t *ep);

/* The endpoint fails as if its peer had not answered: its error handler is
 * called at progress with UCS_ERR_ENDPOINT_TIMEOUT */
#ifdef HAVE_UCT_EP_INVALIDATE_PARAMS
ucs_status_t
uct_gpumem_ipc_ep_invalidate(uct_ep_h tl_ep,
                             const uct_ep_invalidate_params_t *params);
#else
ucs_status_t uct_gpumem_ipc_ep_invalidate(uct_ep_h tl_ep, unsigned flags);
#endif

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
