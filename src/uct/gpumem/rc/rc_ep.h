/**
 * gpumem RDMA transport: the endpoint, a reliable-connected queue pair,
 * with its operations in flight, its pending requests and its failure.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_RC_EP_H_
#define UCT_GPUMEM_RC_EP_H_

#include "rc_iface.h"
#include "rc_stats.h"

#include <ucs/type/class.h>


typedef struct uct_gpumem_rc_ep {
    uct_base_ep_t   super;
    struct ibv_qp   *qp;
    int             connected;
    unsigned        sq_available;  /* Work requests it may still post */
    unsigned        posted;        /* Work requests in flight */
    ucs_queue_head_t ops;          /* uct_gpumem_rc_op_t, in posting order */
    ucs_queue_head_t pending;      /* uct_pending_req_t */
    ucs_list_link_t pending_link;  /* In iface->pending_eps, while pending
                                      is not empty */
    ucs_list_link_t list;          /* In iface->eps */
    int             fence;         /* The next work request waits for those
                                      before it */
    int             writes_unread; /* RDMA WRITEs into memory written in any
                                      order since the last read-back */
    uint64_t        last_write;    /* Their last byte, as the peer names it */
    uint32_t        last_rkey;
    unsigned        read_backs;    /* Read-backs posted, for tests */
    ucs_status_t    status;        /* The first failure, or UCS_OK */
    int             failure_said;  /* The error handler was told */
    int             destroyed;     /* Gone for its user: freed once its
                                      work requests completed */
    unsigned        in_progress;   /* Its completions are being given:
                                      destruction waits */
    uct_gpumem_rc_dev_addr_t peer_dev; /* Once connected: the peer's port */
    uint32_t        peer_qp_num;   /* and queue pair */
} uct_gpumem_rc_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_gpumem_rc_ep_t, uct_ep_t,
                           const uct_ep_params_t*);


/**
 * The status an operation completes with, for a work completion's status.
 *
 * UCS_ERR_INVALID_ADDR: the peer's device refused the access (the region
 * is not open to it, the key is wrong, the bytes lie outside the region);
 * UCS_ERR_ENDPOINT_TIMEOUT: the peer never answered (retries exceeded);
 * UCS_ERR_CANCELED: flushed, after an earlier failure or a cancel;
 * UCS_ERR_INVALID_PARAM: a fault of the local request (key, length,
 * protection); UCS_ERR_CONNECTION_RESET: the peer failed the request;
 * UCS_ERR_IO_ERROR: the rest.
 */
ucs_status_t uct_gpumem_rc_wc_status(enum ibv_wc_status wc_status);


/* Give a polled completion to the operation it ends */
void uct_gpumem_rc_ep_complete(uct_gpumem_rc_iface_t *iface,
                               uct_gpumem_rc_op_t *op,
                               enum ibv_wc_status wc_status);

/* Tell the interface's error handler of a failed endpoint, once */
void uct_gpumem_rc_ep_report(uct_gpumem_rc_iface_t *iface,
                             uct_gpumem_rc_ep_t *ep);

/* Free an endpoint whose user destroyed it, once nothing is in flight */
void uct_gpumem_rc_ep_reap(uct_gpumem_rc_ep_t *ep);

/* Destroy the queue pair and free, whatever is in flight (interface
 * close) */
void uct_gpumem_rc_ep_free(uct_gpumem_rc_ep_t *ep);


void uct_gpumem_rc_ep_destroy(uct_ep_h tl_ep);

ucs_status_t uct_gpumem_rc_ep_get_address(uct_ep_h tl_ep,
                                          uct_ep_addr_t *addr);

ucs_status_t uct_gpumem_rc_ep_connect_to_ep(uct_ep_h tl_ep,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_ep_addr_t *ep_addr);

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_IS_CONNECTED
/* Whether the endpoint is connected to the remote endpoint (and port) of
 * the addresses UCP gives */
int uct_gpumem_rc_ep_is_connected(const uct_ep_h tl_ep,
                                  const uct_ep_is_connected_params_t *params);
#endif

ucs_status_t uct_gpumem_rc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey);

ssize_t uct_gpumem_rc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey);

ucs_status_t uct_gpumem_rc_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);

ucs_status_t uct_gpumem_rc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);

ucs_status_t uct_gpumem_rc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);

ucs_status_t uct_gpumem_rc_ep_pending_add(uct_ep_h tl_ep,
                                          uct_pending_req_t *req,
                                          unsigned flags);

void uct_gpumem_rc_ep_pending_purge(uct_ep_h tl_ep,
                                    uct_pending_purge_callback_t cb,
                                    void *arg);

/* Run the pending requests of @a ep while resources last */
void uct_gpumem_rc_ep_pending_dispatch(uct_gpumem_rc_iface_t *iface,
                                       uct_gpumem_rc_ep_t *ep);

ucs_status_t uct_gpumem_rc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);

ucs_status_t uct_gpumem_rc_ep_fence(uct_ep_h tl_ep, unsigned flags);

/* UCP's keepalive: a peer gone fails the endpoint (UCS_ERR_ENDPOINT_TIMEOUT)
 * once the queue pair's retries run out */
ucs_status_t uct_gpumem_rc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);

#endif
