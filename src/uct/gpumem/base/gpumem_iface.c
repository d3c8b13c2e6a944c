/**
 * gpumem: the base of the GPU transports: the queue of copies on the GPUs'
 * engines, its progress, flushes and fences, and the events.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_iface.h"
#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/util/gpumem_config.h>
#include "gpumem_iface_params.h"

#include <ucs/debug/log.h>
#include <ucs/arch/cpu.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>
#include <sys/socket.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>


ucs_config_field_t uct_gpumem_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"MAX_POLL", "16",
     "Most completions one progress call gives.",
     ucs_offsetof(uct_gpumem_iface_config_t, max_poll),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {NULL}
};


/* A sleeper on the armed descriptor wakes to progress what was posted: a
 * datagram to the interface's own socket, where peers send theirs */
static void uct_gpumem_iface_event_signal(uct_gpumem_iface_t *iface)
{
    iface->event.armed = 0;
    uct_gpumem_iface_event_send(iface, &iface->event.addr,
                                iface->event.addr_len);
}

static UCS_F_ALWAYS_INLINE void
uct_gpumem_iface_event_posted(uct_gpumem_iface_t *iface)
{
    if (iface->event.armed) {
        uct_gpumem_iface_event_signal(iface);
    }
}

void uct_gpumem_iface_event_send(uct_gpumem_iface_t *iface,
                                 const struct sockaddr_un *addr,
                                 socklen_t addr_len)
{
    static const uint8_t one = 1;
    ssize_t ret;

    /* A full queue holds a signal already; a peer gone needs none */
    ret = sendto(iface->event.fd, &one, sizeof(one), MSG_DONTWAIT,
                 (const struct sockaddr*)addr, addr_len);
    if ((ret < 0) && (errno != EAGAIN) && (errno != ECONNREFUSED) &&
        (errno != ENOENT)) {
        ucs_warn("%s: cannot signal event socket %d: %s", iface->tl_name,
                 iface->event.fd, strerror(errno));
    }
}

/* Reads the signals of the descriptor, a bounded number (anyone may send
 * to an abstract address): whether there was any */
static int uct_gpumem_iface_event_drain(uct_gpumem_iface_t *iface)
{
    uint8_t buffer[64];
    int signalled = 0;
    int i;

    for (i = 0; i < 64; ++i) {
        if (recv(iface->event.fd, buffer, sizeof(buffer), MSG_DONTWAIT) < 0) {
            break;
        }
        signalled = 1;
    }
    return signalled;
}

ucs_status_t uct_gpumem_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    *fd_p = ucs_derived_of(tl_iface, uct_gpumem_iface_t)->event.fd;
    return UCS_OK;
}

ucs_status_t uct_gpumem_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(tl_iface, uct_gpumem_iface_t);

    if (events & ~(UCT_EVENT_SEND_COMP | UCT_EVENT_RECV |
                   UCT_EVENT_RECV_SIG)) {
        ucs_error("%s: cannot arm for events 0x%x", iface->tl_name, events);
        return UCS_ERR_INVALID_PARAM;
    }

    /* A signal not yet read: the sleeper's progress has work to see */
    if (uct_gpumem_iface_event_drain(iface)) {
        iface->event.armed = 0;
        return UCS_ERR_BUSY;
    }

    /* A peer's failure to tell is progress's work too */
    if (!ucs_list_is_empty(&iface->failed_eps) ||
        ((events & UCT_EVENT_SEND_COMP) &&
         (!ucs_queue_is_empty(&iface->ops) ||
          !ucs_queue_is_empty(&iface->flushes)))) {
        iface->event.armed = 0;
        return UCS_ERR_BUSY;
    }

    iface->event.armed = 1;
    return UCS_OK;
}

/* One step of a queued operation: its start, or a poll of its copy */
static void uct_gpumem_iface_op_advance(uct_gpumem_iface_t *iface,
                                        uct_gpumem_iface_op_t *op)
{
    if (op->status != UCS_INPROGRESS) {
        return;
    }

    if (!op->started) {
        ucs_assert(iface->op_ops->start != NULL);
        op->started = 1;
        op->status  = iface->op_ops->start(iface, op);
    } else {
        op->status  = gpumem_copy_poll(&op->copy);
    }

    if (op->status != UCS_INPROGRESS) {
        iface->op_ops->release(iface, op);
    }
}

void uct_gpumem_iface_op_push(uct_gpumem_iface_t *iface, uct_gpumem_ep_t *ep,
                              uct_gpumem_iface_op_t *op, int started,
                              uct_completion_t *comp)
{
    op->seq     = ++iface->seq;
    op->ep      = ep;
    op->comp    = comp;
    op->status  = UCS_INPROGRESS;
    op->started = started;
    ++ep->outstanding;
    ucs_queue_push(&iface->ops, &op->queue);
    uct_gpumem_iface_event_posted(iface);
}

void uct_gpumem_iface_drain(uct_gpumem_iface_t *iface)
{
    uct_gpumem_iface_op_t *op;

    ucs_queue_for_each(op, &iface->ops, queue) {
        while (op->status == UCS_INPROGRESS) {
            uct_gpumem_iface_op_advance(iface, op);
        }
    }
    iface->fenced = 0;
}

ucs_status_t uct_gpumem_iface_flush_ops(uct_gpumem_iface_t *iface,
                                        uct_gpumem_ep_t *ep,
                                        uct_completion_t *comp)
{
    uct_gpumem_iface_op_t *flush;

    if ((ep != NULL) ? (ep->outstanding == 0) :
                       ucs_queue_is_empty(&iface->ops)) {
        return UCS_OK;
    }

    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    flush = uct_gpumem_iface_op_get(iface);
    if (flush == NULL) {
        ucs_error("%s: cannot queue a flush", iface->tl_name);
        return UCS_ERR_NO_MEMORY;
    }

    flush->seq    = iface->seq;
    flush->ep     = NULL;
    flush->comp   = comp;
    flush->status = UCS_OK;
    ucs_queue_push(&iface->flushes, &flush->queue);
    uct_gpumem_iface_event_posted(iface);
    return UCS_INPROGRESS;
}

/* An operation off the queue: its ep counts it no more, before any
 * completion is called, since a completion may destroy the ep */
static void uct_gpumem_iface_op_dequeued(uct_gpumem_iface_op_t *op)
{
    if (op->ep != NULL) {
        ucs_assert(op->ep->outstanding > 0);
        --op->ep->outstanding;
        op->ep = NULL;
    }
}

static void uct_gpumem_iface_op_complete(uct_gpumem_iface_op_t *op)
{
    uct_completion_t *comp = op->comp;
    ucs_status_t status    = op->status;

    ucs_mpool_put_inline(op);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}

/* The flushes that wait for nothing still queued and were posted before
 * @a next (the sequence of the next completion to give), in order */
static unsigned uct_gpumem_iface_complete_flushes(uct_gpumem_iface_t *iface,
                                                  uint64_t next)
{
    uint64_t oldest = ucs_queue_is_empty(&iface->ops) ? UINT64_MAX :
                      ucs_queue_head_elem_non_empty(&iface->ops,
                                                    uct_gpumem_iface_op_t,
                                                    queue)->seq;
    uct_gpumem_iface_op_t *flush;
    unsigned count = 0;

    while (!ucs_queue_is_empty(&iface->flushes)) {
        flush = ucs_queue_head_elem_non_empty(&iface->flushes,
                                              uct_gpumem_iface_op_t, queue);
        if ((flush->seq >= oldest) || (flush->seq >= next)) {
            break;
        }

        ucs_queue_pull_non_empty(&iface->flushes);
        uct_gpumem_iface_op_complete(flush);
        ++count;
    }
    return count;
}

/* The failures of peers found since the last progress, each told to the
 * error handler, which may destroy its endpoint */
static unsigned uct_gpumem_iface_tell_failures(uct_gpumem_iface_t *iface)
{
    unsigned count = 0;
    uct_gpumem_ep_t *ep;

    while (!ucs_list_is_empty(&iface->failed_eps)) {
        ep = ucs_list_extract_head(&iface->failed_eps, uct_gpumem_ep_t,
                                   failed);
        ucs_list_head_init(&ep->failed);
        (void)uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                      ep->failure);
        ++count;
    }
    return count;
}

void uct_gpumem_ep_fail(uct_gpumem_ep_t *ep, ucs_status_t status)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(ep->super.super.iface,
                                               uct_gpumem_iface_t);

    ucs_assert(status != UCS_OK);
    if (ep->failure != UCS_OK) {
        return;
    }

    ep->failure = status;
    ucs_list_add_tail(&iface->failed_eps, &ep->failed);
    uct_gpumem_iface_event_posted(iface);
}

unsigned uct_gpumem_iface_progress(uct_iface_h tl_iface)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(tl_iface, uct_gpumem_iface_t);
    unsigned count            = 0;
    ucs_queue_head_t done;
    uct_gpumem_iface_op_t *op;
    ucs_queue_iter_t iter;

    /* Nothing posted, nothing to tell: the common case of a polling loop */
    if (ucs_likely(ucs_queue_is_empty(&iface->ops) &&
                   ucs_queue_is_empty(&iface->flushes) &&
                   ucs_list_is_empty(&iface->failed_eps))) {
        iface->fenced = 0;
        return 0;
    }

    /* Every engine moves its share (in order, the head's alone); the
     * completions are given after the walk, since a completion may post
     * again */
    ucs_queue_head_init(&done);
    ucs_queue_for_each_safe(op, iter, &iface->ops, queue) {
        uct_gpumem_iface_op_advance(iface, op);
        if ((op->status != UCS_INPROGRESS) &&
            (count < iface->config.max_poll)) {
            ucs_queue_del_iter(&iface->ops, iter);
            uct_gpumem_iface_op_dequeued(op);
            ucs_queue_push(&done, &op->queue);
            ++count;
        } else if (iface->in_order) {
            break;
        }
    }

    if (ucs_queue_is_empty(&iface->ops)) {
        iface->fenced = 0;
    }

    /* A flush completes before what was posted after it */
    ucs_queue_for_each_extract(op, &done, queue, 1) {
        count += uct_gpumem_iface_complete_flushes(iface, op->seq);
        uct_gpumem_iface_op_complete(op);
    }

    count += uct_gpumem_iface_complete_flushes(iface, UINT64_MAX);
    if (ucs_unlikely(!ucs_list_is_empty(&iface->failed_eps))) {
        count += uct_gpumem_iface_tell_failures(iface);
    }
    return count;
}

ucs_status_t uct_gpumem_iface_flush(uct_iface_h tl_iface,
                                    unsigned UCS_V_UNUSED flags,
                                    uct_completion_t *comp)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(tl_iface, uct_gpumem_iface_t);
    ucs_status_t status;

    status = uct_gpumem_iface_flush_ops(iface, NULL, comp);
    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}

/* What is posted after a fence waits for the bytes of what was before it:
 * lazily, at the next operation that could pass them */
ucs_status_t uct_gpumem_iface_fence(uct_iface_h tl_iface,
                                    unsigned UCS_V_UNUSED flags)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(tl_iface, uct_gpumem_iface_t);

    iface->fenced = !ucs_queue_is_empty(&iface->ops);
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

void uct_gpumem_iface_query_common(uct_gpumem_iface_t *iface,
                                   uct_iface_attr_t *iface_attr)
{
    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->ep_addr_len            = 0;
    iface_attr->max_conn_priv          = 0;
    iface_attr->cap.event_flags        = UCT_GPUMEM_IFACE_EVENT_FLAGS;

    iface_attr->cap.am.max_short       = 0;
    iface_attr->cap.am.max_bcopy       = 0;
    iface_attr->cap.am.min_zcopy       = 0;
    iface_attr->cap.am.max_zcopy       = 0;
    iface_attr->cap.am.opt_zcopy_align = 1;
    iface_attr->cap.am.align_mtu       = 1;
    iface_attr->cap.am.max_hdr         = 0;
    iface_attr->cap.am.max_iov         = 1;

    uct_gpumem_iface_perf_attr(&iface->config.perf, iface_attr);
}

void uct_gpumem_iface_set_perf(uct_gpumem_iface_t *iface, double bandwidth,
                               ucs_time_t latency, double overhead,
                               double dflt_bandwidth, double dflt_latency,
                               int shared)
{
    uct_gpumem_iface_perf_t *perf = &iface->config.perf;

    perf->bandwidth  = UCS_CONFIG_DBL_IS_AUTO(bandwidth) ? dflt_bandwidth :
                       bandwidth;
    perf->latency    = (latency == UCS_TIME_AUTO) ? dflt_latency :
                       ucs_time_to_sec(latency);
    perf->am_latency = 0;
    perf->overhead   = overhead;
    perf->shared     = shared;
}

ucs_status_t uct_gpumem_iface_estimate_perf(uct_iface_h tl_iface,
                                            uct_perf_attr_t *perf_attr)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(tl_iface, uct_gpumem_iface_t);

    uct_gpumem_iface_perf_estimate(&iface->config.perf, perf_attr);
    return UCS_OK;
}

static uct_iface_internal_ops_t uct_gpumem_iface_internal_ops = {
    UCT_GPUMEM_IFACE_INTERNAL_OPS(uct_gpumem_iface_estimate_perf)
};

static ucs_mpool_ops_t uct_gpumem_iface_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

/* A datagram socket of an address the kernel gives (Linux's abstract
 * namespace), to which this interface and its peers send signals */
static ucs_status_t uct_gpumem_iface_event_init(uct_gpumem_iface_t *iface)
{
    struct sockaddr_un addr;
    socklen_t addr_len;

    iface->event.armed = 0;
    iface->event.fd    = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK |
                                SOCK_CLOEXEC, 0);
    if (iface->event.fd < 0) {
        ucs_error("%s: cannot create the event socket: %s", iface->tl_name,
                  strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    /* Binding the family alone asks for an abstract address */
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    addr_len        = sizeof(addr);
    if ((bind(iface->event.fd, (struct sockaddr*)&addr,
              sizeof(sa_family_t)) < 0) ||
        (getsockname(iface->event.fd, (struct sockaddr*)&addr,
                     &addr_len) < 0)) {
        ucs_error("%s: cannot bind the event socket: %s", iface->tl_name,
                  strerror(errno));
        close(iface->event.fd);
        return UCS_ERR_IO_ERROR;
    }

    iface->event.addr     = addr;
    iface->event.addr_len = addr_len;
    return UCS_OK;
}

UCS_CLASS_INIT_FUNC(uct_gpumem_iface_t, uct_iface_ops_t *ops, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config,
                    const uct_gpumem_iface_desc_t *desc)
{
    const uct_gpumem_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpumem_iface_config_t);
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops,
                              (desc->internal_ops != NULL) ?
                              desc->internal_ops :
                              &uct_gpumem_iface_internal_ops, md, worker,
                              params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(desc->tl_name));

    status = uct_gpumem_iface_check_params(params, desc->tl_name,
                                           desc->dev_name);
    if (status != UCS_OK) {
        return status;
    }

    ucs_assert(desc->op_size >= sizeof(uct_gpumem_iface_op_t));
    self->context            = desc->context;
    self->op_ops             = desc->op_ops;
    self->tl_name            = desc->tl_name;
    self->in_order           = desc->in_order;
    self->fenced             = 0;
    self->seq                = 0;
    self->config.bounce_size = desc->bounce_size;
    self->config.max_poll    = ucs_max(config->max_poll, 1);
    ucs_queue_head_init(&self->ops);
    ucs_queue_head_init(&self->flushes);
    ucs_list_head_init(&self->failed_eps);

    self->bounce = ucs_malloc(desc->bounce_size, "gpumem_iface_bounce");
    if (self->bounce == NULL) {
        ucs_error("%s: failed to allocate a %zu-byte bounce buffer",
                  desc->tl_name, desc->bounce_size);
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_mpool_init(&self->op_mp, 0, desc->op_size, 0,
                                   UCS_SYS_CACHE_LINE_SIZE, 128, UINT_MAX,
                                   &uct_gpumem_iface_op_mpool_ops,
                                   "gpumem_iface_ops");
    if (status != UCS_OK) {
        goto err_free_bounce;
    }

    status = uct_gpumem_iface_event_init(self);
    if (status != UCS_OK) {
        goto err_mpool;
    }
    return UCS_OK;

err_mpool:
    ucs_mpool_cleanup(&self->op_mp, 1);
err_free_bounce:
    ucs_free(self->bounce);
    return status;
}

UCS_CLASS_CLEANUP_FUNC(uct_gpumem_iface_t)
{
    uct_gpumem_iface_op_t *op;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* What the engines were given they finish, so that no byte lands after
     * the close; what they were not given is dropped. No completion is
     * called. */
    if (!ucs_queue_is_empty(&self->ops)) {
        ucs_debug("%s: iface %p closes with operations queued",
                  self->tl_name, self);
    }
    ucs_queue_for_each_extract(op, &self->ops, queue, 1) {
        if (op->status == UCS_INPROGRESS) {
            if (op->started) {
                (void)gpumem_copy_wait(&op->copy, UCS_INPROGRESS);
            }
            self->op_ops->release(self, op);
        }
        ucs_mpool_put_inline(op);
    }
    ucs_queue_for_each_extract(op, &self->flushes, queue, 1) {
        ucs_mpool_put_inline(op);
    }

    ucs_mpool_cleanup(&self->op_mp, 1);
    ucs_free(self->bounce);
    close(self->event.fd);
}

UCS_CLASS_DEFINE(uct_gpumem_iface_t, uct_base_iface_t);


UCS_CLASS_INIT_FUNC(uct_gpumem_ep_t, uct_gpumem_iface_t *iface)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    self->outstanding = 0;
    self->failure     = UCS_OK;
    ucs_list_head_init(&self->failed);
    return UCS_OK;
}

/* What it posted still lands and completes, counted by no ep */
UCS_CLASS_CLEANUP_FUNC(uct_gpumem_ep_t)
{
    uct_gpumem_iface_t *iface = ucs_derived_of(self->super.super.iface,
                                               uct_gpumem_iface_t);
    uct_gpumem_iface_op_t *op;

    /* A failure not yet told is not: the endpoint is gone */
    ucs_list_del(&self->failed);
    if (self->outstanding == 0) {
        return;
    }

    ucs_queue_for_each(op, &iface->ops, queue) {
        if (op->ep == self) {
            op->ep = NULL;
        }
    }
}

UCS_CLASS_DEFINE(uct_gpumem_ep_t, uct_base_ep_t);

/* A copy given to the engine is not cancelled: with UCT_FLUSH_FLAG_CANCEL
 * too, a flush waits for what was posted */
ucs_status_t uct_gpumem_ep_flush(uct_ep_h tl_ep, unsigned UCS_V_UNUSED flags,
                                 uct_completion_t *comp)
{
    uct_gpumem_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ep_t);
    ucs_status_t status;

    status = uct_gpumem_iface_flush_ops(ucs_derived_of(tl_ep->iface,
                                                       uct_gpumem_iface_t),
                                        ep, comp);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    }
    return status;
}

ucs_status_t uct_gpumem_ep_fence(uct_ep_h tl_ep, unsigned UCS_V_UNUSED flags)
{
    uct_gpumem_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_ep_t);
    uct_gpumem_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                               uct_gpumem_iface_t);

    if (ep->outstanding > 0) {
        iface->fenced = 1;
    }
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}
