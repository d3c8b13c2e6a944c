/**
 * gpumem IPC transport: active messages. A message goes into a slot of the
 * peer interface's receive FIFO (ipc_fifo.h), whose progress gives it to
 * its handler; a sender that finds the FIFO full waits in the endpoint's
 * pending queue until a slot is free, as with UCX's shared-memory
 * transports.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_ep.h"
#include <uct/gpumem/compat/gpumem_compat.h>

#include <ucs/debug/log.h>
#include <string.h>


/* A message claims no slot: it is dropped (UCS_INPROGRESS) */
#define UCT_GPUMEM_IPC_AM_DROPPED  UCS_INPROGRESS


/* The peer's interface said it closed: the endpoint fails, once */
static void uct_gpumem_ipc_ep_peer_closed(uct_gpumem_ipc_ep_t *ep)
{
    if (ep->super.failure == UCS_OK) {
        ucs_diag("gpumemipc: ep %p: the interface of process %d it sends to "
                 "is closed", ep, (int)ep->peer_pid);
        uct_gpumem_ep_fail(&ep->super, UCS_ERR_CONNECTION_RESET);
    }
}

/* A message of a failed endpoint: accepted and dropped until the error
 * handler is told (at progress, as UCX's transports tell a peer's failure),
 * the failure itself after */
static ucs_status_t uct_gpumem_ipc_ep_am_failed(uct_gpumem_ipc_ep_t *ep)
{
    if (uct_gpumem_ep_failure_told(&ep->super)) {
        return ep->super.failure;
    }

    ucs_trace_data("gpumemipc: ep %p failed (%s): a message is dropped", ep,
                   ucs_status_string(ep->super.failure));
    return UCT_GPUMEM_IPC_AM_DROPPED;
}

/**
 * A slot of the peer's FIFO for a message of @a id: UCS_OK when the
 * endpoint has not failed, its peer is there, none of its requests waits
 * before the message, and a slot was free (the bytes of what came before a
 * fence landed by then); UCT_GPUMEM_IPC_AM_DROPPED for the message of an
 * endpoint that failed and was not told yet; else what stops it.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_ipc_ep_am_claim(uct_gpumem_ipc_ep_t *ep, uint8_t id,
                           const char *op_name, unsigned flags,
                           uint64_t *index_p,
                           uct_gpumem_ipc_fifo_elem_t **elem_p)
{
    UCT_GPUMEM_CHECK_PARAM(id < UCT_AM_ID_MAX, "gpumemipc: %s of active "
                           "message id %u (below %d is one)", op_name, id,
                           (int)UCT_AM_ID_MAX);

    if (ucs_unlikely(ep->fifo.ctl->closed)) {
        uct_gpumem_ipc_ep_peer_closed(ep);
    }

    /* UCP's keepalive message asks whether the peer lives, as UCX's shared
     * memory transports answer it: at each one, not only once the dead
     * peer's FIFO has filled up with them */
    if (ucs_unlikely(flags & UCT_SEND_FLAG_PEER_CHECK)) {
        (void)uct_gpumem_ipc_ep_check(&ep->super.super.super, 0, NULL);
    }

    if (ucs_unlikely(ep->super.failure != UCS_OK)) {
        return uct_gpumem_ipc_ep_am_failed(ep);
    }

    if (ucs_unlikely(!ucs_queue_is_empty(&ep->pending) &&
                     !ep->dispatching)) {
        return UCS_ERR_NO_RESOURCE;
    }

    uct_gpumem_iface_fence_wait(ucs_derived_of(ep->super.super.super.iface,
                                               uct_gpumem_iface_t), 0);
    if (uct_gpumem_ipc_fifo_claim(&ep->fifo, index_p, elem_p) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* The message is in its slot: the receiver may have it, and is woken if it
 * sleeps for it */
static void uct_gpumem_ipc_ep_am_publish(uct_gpumem_ipc_ep_t *ep,
                                         uint64_t index,
                                         uct_gpumem_ipc_fifo_elem_t *elem,
                                         uint8_t id, size_t length,
                                         unsigned flags)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                               uct_gpumem_iface_t);
    uint8_t elem_flags        = (flags & UCT_SEND_FLAG_SIGNALED) ?
                                UCT_GPUMEM_IPC_FIFO_FLAG_SIGNALED : 0;

    if (uct_gpumem_ipc_fifo_publish(&ep->fifo, index, elem, id, length,
                                    elem_flags)) {
        uct_gpumem_iface_event_send(iface, &ep->fifo.signal_addr,
                                    ep->fifo.signal_addr_len);
    }
    ucs_trace_data("gpumemipc: ep %p sent am %u, %zu bytes, to process %d",
                   ep, id, length, (int)ep->peer_pid);
}

ucs_status_t uct_gpumem_ipc_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                        uint64_t header, const void *payload,
                                        unsigned length)
{
    uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);
    uct_gpumem_ipc_fifo_elem_t *elem;
    ucs_status_t status;
    uint64_t index;
    uint8_t *data;

    UCT_GPUMEM_CHECK_LENGTH(sizeof(header) + length,
                            UCT_GPUMEM_IPC_AM_MAX_SHORT, "am_short");
    status = uct_gpumem_ipc_ep_am_claim(ep, id, "am_short", 0, &index, &elem);
    if (status != UCS_OK) {
        return (status == UCT_GPUMEM_IPC_AM_DROPPED) ? UCS_OK : status;
    }

    data = uct_gpumem_ipc_fifo_elem_data(elem);
    memcpy(data, &header, sizeof(header));
    memcpy(data + sizeof(header), payload, length);
    UCT_TL_EP_STAT_OP(&ep->super.super, AM, SHORT, sizeof(header) + length);
    uct_gpumem_ipc_ep_am_publish(ep, index, elem, id, sizeof(header) + length,
                                 0);
    return UCS_OK;
}

ssize_t uct_gpumem_ipc_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                   uct_pack_callback_t pack_cb, void *arg,
                                   unsigned flags)
{
    uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);
    uct_gpumem_ipc_fifo_elem_t *elem;
    ucs_status_t status;
    uint64_t index;
    size_t length;

    status = uct_gpumem_ipc_ep_am_claim(ep, id, "am_bcopy", flags, &index,
                                        &elem);
    if (status == UCT_GPUMEM_IPC_AM_DROPPED) {
        /* Packed where it goes no further */
        return pack_cb(ucs_derived_of(tl_ep->iface,
                                      uct_gpumem_iface_t)->bounce, arg);
    } else if (status != UCS_OK) {
        return status;
    }

    /* The caller packs no more than max_bcopy, the slot's size */
    length = pack_cb(uct_gpumem_ipc_fifo_elem_data(elem), arg);
    ucs_assertv(length <= UCT_GPUMEM_IPC_AM_MAX_BCOPY, "packed %zu bytes",
                length);
    UCT_TL_EP_STAT_OP(&ep->super.super, AM, BCOPY, length);
    uct_gpumem_ipc_ep_am_publish(ep, index, elem, id, length, flags);
    return length;
}

ucs_status_t uct_gpumem_ipc_ep_pending_add(uct_ep_h tl_ep,
                                           uct_pending_req_t *req,
                                           unsigned UCS_V_UNUSED flags)
{
    uct_gpumem_ipc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                   uct_gpumem_ipc_iface_t);

    /* A request behind others waits for them, whatever is free; a failed
     * endpoint's and a closed peer's wait for the error handler's purge */
    if (ucs_queue_is_empty(&ep->pending) && !ep->dispatching &&
        (ep->super.failure == UCS_OK) && !ep->fifo.ctl->closed &&
        uct_gpumem_ipc_fifo_has_room(&ep->fifo)) {
        return UCS_ERR_BUSY;
    }

    /* Listed once, also when it is added while its requests are given
     * their turn (it is off the list then) */
    if (ucs_list_is_empty(&ep->pending_list)) {
        ucs_list_add_tail(&iface->pending_eps, &ep->pending_list);
    }
    uct_pending_req_queue_push(&ep->pending, req);
    UCT_TL_EP_STAT_PEND(&ep->super.super);
    return UCS_OK;
}

ucs_status_t uct_gpumem_ipc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp)
{
    uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);

    /* What waits is not sent yet: the flush waits behind it, as a pending
     * request of its own */
    if (!ucs_queue_is_empty(&ep->pending) && !ep->dispatching) {
        return UCS_ERR_NO_RESOURCE;
    }

    return uct_gpumem_ep_flush(tl_ep, flags, comp);
}

/* The endpoint's queue emptied: it leaves the interface's list */
static void uct_gpumem_ipc_ep_pending_done(uct_gpumem_ipc_ep_t *ep)
{
    if (ucs_queue_is_empty(&ep->pending)) {
        ucs_list_del(&ep->pending_list);
        ucs_list_head_init(&ep->pending_list);
    }
}

void uct_gpumem_ipc_ep_pending_purge(uct_ep_h tl_ep,
                                     uct_pending_purge_callback_t cb,
                                     void *arg)
{
    uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);
    uct_pending_req_priv_queue_t UCS_V_UNUSED *priv;

    if (ucs_queue_is_empty(&ep->pending)) {
        return;
    }

    uct_pending_queue_purge(priv, &ep->pending, 1, cb, arg);
    uct_gpumem_ipc_ep_pending_done(ep);
}

void uct_gpumem_ipc_ep_pending_drop(uct_gpumem_ipc_ep_t *ep)
{
    if (!ucs_queue_is_empty(&ep->pending)) {
        ucs_debug("gpumemipc: ep %p goes with requests waiting", ep);
        ucs_queue_head_init(&ep->pending);
    }
    uct_gpumem_ipc_ep_pending_done(ep);
}

#ifdef HAVE_UCT_EP_INVALIDATE_PARAMS
ucs_status_t
uct_gpumem_ipc_ep_invalidate(uct_ep_h tl_ep,
                             const uct_ep_invalidate_params_t *params)
{
    uint64_t flags = (params == NULL) ? 0 : params->field_mask;
#else
ucs_status_t uct_gpumem_ipc_ep_invalidate(uct_ep_h tl_ep, unsigned flags)
{
#endif
    uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);

    UCT_GPUMEM_CHECK_PARAM(flags == 0, "gpumemipc: ep_invalidate with "
                           "fields or flags 0x%llx", (unsigned long long)flags);
    ucs_debug("gpumemipc: ep %p to process %d invalidated", ep,
              (int)ep->peer_pid);
    uct_gpumem_ep_fail(&ep->super, UCS_ERR_ENDPOINT_TIMEOUT);
    return UCS_OK;
}

/* The messages that came, each to its handler, which copies what it keeps
 * (the slot goes back to the senders when it returns) */
static unsigned uct_gpumem_ipc_iface_am_receive(uct_gpumem_ipc_iface_t *iface)
{
    uct_gpumem_ipc_fifo_t *fifo = &iface->fifo;
    unsigned count              = 0;
    uct_gpumem_ipc_fifo_elem_t *elem;
    uint32_t length;
    uint8_t id, flags;

    while ((count < iface->super.config.max_poll) &&
           ((elem = uct_gpumem_ipc_fifo_next(fifo)) != NULL)) {
        if (uct_gpumem_ipc_fifo_elem_read(elem, UCS_LOG_LEVEL_ERROR, &id,
                                          &length, &flags) == UCS_OK) {
            ucs_trace_data("gpumemipc: iface %p received am %u, %u bytes",
                           iface, id, length);
            (void)uct_iface_invoke_am(&iface->super.super, id,
                                      uct_gpumem_ipc_fifo_elem_data(elem),
                                      length, 0);
        }
        uct_gpumem_ipc_fifo_release(fifo);
        ++count;
    }
    if (count == 0) {
        count = uct_gpumem_ipc_fifo_skip_dead(fifo);
    }
    return count;
}

/* The waiting requests of each endpoint whose peer's FIFO has a free slot,
 * in order, until one finds none; an endpoint whose peer closed fails. The
 * endpoints are taken off the list first: a request may add to any
 * endpoint's queue, or purge it, while it runs */
static unsigned
uct_gpumem_ipc_iface_pending_progress(uct_gpumem_ipc_iface_t *iface)
{
    unsigned count = 0;
    uct_pending_req_priv_queue_t UCS_V_UNUSED *priv;
    ucs_list_link_t turn;
    uct_gpumem_ipc_ep_t *ep;

    ucs_list_head_init(&turn);
    ucs_list_splice_tail(&turn, &iface->pending_eps);
    ucs_list_head_init(&iface->pending_eps);

    while (!ucs_list_is_empty(&turn)) {
        ep = ucs_list_extract_head(&turn, uct_gpumem_ipc_ep_t, pending_list);
        ucs_list_head_init(&ep->pending_list);

        if (ucs_unlikely(ep->fifo.ctl->closed)) {
            uct_gpumem_ipc_ep_peer_closed(ep);
        } else if ((ep->super.failure == UCS_OK) &&
                   uct_gpumem_ipc_fifo_has_room(&ep->fifo)) {
            ep->dispatching = 1;
            uct_pending_queue_dispatch(priv, &ep->pending,
                                       uct_gpumem_ipc_fifo_has_room(
                                               &ep->fifo));
            ep->dispatching = 0;
            ++count;
        }

        if (!ucs_queue_is_empty(&ep->pending) &&
            ucs_list_is_empty(&ep->pending_list)) {
            ucs_list_add_tail(&iface->pending_eps, &ep->pending_list);
        }
    }
    return count;
}

unsigned uct_gpumem_ipc_iface_am_progress(uct_gpumem_ipc_iface_t *iface)
{
    unsigned count;

    /* Awake: no sender needs to signal */
    if (ucs_unlikely(iface->fifo.ctl->armed)) {
        iface->fifo.ctl->armed = 0;
    }

    count = uct_gpumem_ipc_iface_am_receive(iface);
    if (ucs_unlikely(!ucs_list_is_empty(&iface->pending_eps))) {
        count += uct_gpumem_ipc_iface_pending_progress(iface);
    }
    return count;
}
