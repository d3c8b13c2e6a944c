/**
 * gpumem: the base of the GPU transports (gpumemcpy, gpumemipc): an
 * interface whose zero-copy operations are copies on the GPUs' copy
 * engines, kept in a queue until progress gives their completions, with
 * flushes, fences, completion events and the estimates UCP asks for.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IFACE_H_
#define UCT_GPUMEM_IFACE_H_

#include <uct/gpumem/gpumem_context.h>
#include <uct/gpumem/base/gpumem_iface_perf.h>
#include <uct/gpumem/mem/gpumem_copy.h>
#include <uct/base/uct_iface.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/type/class.h>
#include <sys/un.h>


typedef struct uct_gpumem_iface uct_gpumem_iface_t;


/* The events the interfaces give (UCT's event_flags) */
#define UCT_GPUMEM_IFACE_EVENT_FLAGS \
    (UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | \
     UCT_IFACE_FLAG_EVENT_FD)


/* What every GPU transport's configuration starts with */
typedef struct uct_gpumem_iface_config {
    uct_iface_config_t super;
    unsigned           max_poll;   /* Completions one progress call gives */
} uct_gpumem_iface_config_t;

extern ucs_config_field_t uct_gpumem_iface_config_table[];


/**
 * An endpoint of a GPU transport: counts its operations in the queue, which
 * still run and complete when it goes (as on a stream that goes on after
 * its user leaves).
 */
typedef struct uct_gpumem_ep {
    uct_base_ep_t   super;
    unsigned        outstanding;   /* Its operations not completed */
    ucs_status_t    failure;       /* UCS_OK, or the peer's failure found,
                                      told once to the error handler */
    ucs_list_link_t failed;        /* In iface->failed_eps until told */
} uct_gpumem_ep_t;

UCS_CLASS_DECLARE(uct_gpumem_ep_t, uct_gpumem_iface_t*);


/**
 * A zero-copy operation in the interface's queue, or a flush waiting for
 * those posted before it. A transport's operation starts with it.
 */
typedef struct uct_gpumem_iface_op {
    ucs_queue_elem_t queue;
    uint64_t         seq;      /* Posting order of the interface; a flush's:
                                  of the last operation before it */
    uct_gpumem_ep_t  *ep;      /* Counts it outstanding; NULL once the ep is
                                  gone */
    uct_completion_t *comp;
    ucs_status_t     status;   /* UCS_INPROGRESS until its bytes landed */
    int              started;  /* The engine has its copy */
    gpumem_copy_t    copy;     /* Once started */
} uct_gpumem_iface_op_t;


/* What a transport does with the operations of its queue */
typedef struct uct_gpumem_iface_op_ops {
    /* Gives a queued operation not started yet to its engine: UCS_OK or an
     * error when it ended at once, UCS_INPROGRESS when op->copy is to be
     * polled. NULL where every operation is started when it is pushed */
    ucs_status_t (*start)(uct_gpumem_iface_t *iface,
                          uct_gpumem_iface_op_t *op);

    /* Gives back what the operation held, once its bytes landed or, at the
     * interface's close, it was dropped */
    void         (*release)(uct_gpumem_iface_t *iface,
                            uct_gpumem_iface_op_t *op);
} uct_gpumem_iface_op_ops_t;


/* What a transport tells the base it derives from */
typedef struct uct_gpumem_iface_desc {
    const char                      *tl_name;
    const char                      *dev_name;
    uct_gpumem_context_t            *context;
    const uct_gpumem_iface_op_ops_t *op_ops;
    size_t                          op_size;      /* Of its operation */
    size_t                          bounce_size;  /* Host bytes of bcopy */
    int                             in_order;     /* One operation at a time,
                                                     in posting order, as on
                                                     one stream; else all at
                                                     once, completing in any
                                                     order */
    uct_iface_internal_ops_t        *internal_ops; /* The transport's own, or
                                                      NULL: the base's */
} uct_gpumem_iface_desc_t;


struct uct_gpumem_iface {
    uct_base_iface_t                super;
    uct_gpumem_context_t            *context;
    const uct_gpumem_iface_op_ops_t *op_ops;
    const char                      *tl_name;
    int                             in_order;
    int                             fenced;   /* What is posted next waits
                                                 for the bytes of the queue */
    uint64_t                        seq;      /* Of the last posted */
    ucs_mpool_t                     op_mp;
    ucs_queue_head_t                ops;      /* Not completed, oldest
                                                 first */
    ucs_queue_head_t                flushes;  /* Waiting, oldest first */
    ucs_list_link_t                 failed_eps; /* uct_gpumem_ep_t whose
                                                   failure progress tells */
    void                            *bounce;  /* config.bounce_size bytes */
    struct {
        int                         fd;       /* Datagram socket, readable
                                                 once signalled */
        int                         armed;    /* Armed, and not signalled
                                                 since */
        struct sockaddr_un          addr;     /* Its abstract address, where
                                                 peers signal too */
        socklen_t                   addr_len;
    } event;                                  /* Completions and arrivals,
                                                 for wakeup */
    struct {
        size_t                      bounce_size;
        unsigned                    max_poll;
        uct_gpumem_iface_perf_t     perf;     /* What UCP selects lanes by */
    } config;
};

UCS_CLASS_DECLARE(uct_gpumem_iface_t, uct_iface_ops_t*, uct_md_h,
                  uct_worker_h, const uct_iface_params_t*,
                  const uct_iface_config_t*, const uct_gpumem_iface_desc_t*);


/* An operation to fill and push, or NULL when none is left (the caller
 * decides what that means for its operation) */
static UCS_F_ALWAYS_INLINE uct_gpumem_iface_op_t *
uct_gpumem_iface_op_get(uct_gpumem_iface_t *iface)
{
    return (uct_gpumem_iface_op_t*)ucs_mpool_get_inline(&iface->op_mp);
}

/**
 * Queues @a op, whose transport part is filled, for @a ep; @a started when
 * the engine has its copy (op->copy), else the transport's start gives it
 * when its turn comes. @a comp is called once its bytes landed.
 */
void uct_gpumem_iface_op_push(uct_gpumem_iface_t *iface, uct_gpumem_ep_t *ep,
                              uct_gpumem_iface_op_t *op, int started,
                              uct_completion_t *comp);

/* Runs every queued operation until its bytes landed, completions left to
 * progress: what a fence asks before the next operation */
void uct_gpumem_iface_drain(uct_gpumem_iface_t *iface);

/**
 * Before an operation that copies at once (short, bcopy; @a queued: a
 * zero-copy one posted to the queue): waits for the bytes of what came
 * before a fence, where the operation could otherwise pass them.
 */
static UCS_F_ALWAYS_INLINE void
uct_gpumem_iface_fence_wait(uct_gpumem_iface_t *iface, int queued)
{
    if (ucs_unlikely(iface->fenced) && !(queued && iface->in_order)) {
        uct_gpumem_iface_drain(iface);
    }
}

/**
 * A flush: UCS_OK when nothing of @a ep (of the whole interface if NULL) is
 * outstanding, UCS_INPROGRESS otherwise, and then @a comp, if given, is
 * called once what was posted before has completed.
 */
ucs_status_t uct_gpumem_iface_flush_ops(uct_gpumem_iface_t *iface,
                                        uct_gpumem_ep_t *ep,
                                        uct_completion_t *comp);

/**
 * The estimates UCP selects by: each of @a bandwidth and @a latency the
 * setting given (UCX_GPUMEM_<TL>_BW, _LATENCY), or where it is auto
 * (UCS_CONFIG_DBL_AUTO, UCS_TIME_AUTO) the transport's own figure,
 * @a dflt_bandwidth and @a dflt_latency (seconds); @a shared: the bandwidth
 * is shared by the machine's processes.
 */
void uct_gpumem_iface_set_perf(uct_gpumem_iface_t *iface, double bandwidth,
                               ucs_time_t latency, double overhead,
                               double dflt_bandwidth, double dflt_latency,
                               int shared);

/**
 * The peer of @a ep failed (@a status says how): the interface's error
 * handler is told at the next progress, once, as UCX's transports tell a
 * failure found by ep_check (never within the call that found it).
 */
void uct_gpumem_ep_fail(uct_gpumem_ep_t *ep, ucs_status_t status);

/* Signals the event socket at @a addr: this interface's, or a peer's
 * whose arrival a sleeper waits for */
void uct_gpumem_iface_event_send(uct_gpumem_iface_t *iface,
                                 const struct sockaddr_un *addr,
                                 socklen_t addr_len);

/* Whether the failure of @a ep was told to the error handler already */
static UCS_F_ALWAYS_INLINE int
uct_gpumem_ep_failure_told(uct_gpumem_ep_t *ep)
{
    return (ep->failure != UCS_OK) && ucs_list_is_empty(&ep->failed);
}

/* The common part of uct_iface_query(): the base's, the addresses' sizes
 * left to the transport, no active messages, events and estimates */
void uct_gpumem_iface_query_common(uct_gpumem_iface_t *iface,
                                   uct_iface_attr_t *iface_attr);


/* The entries of uct_iface_ops_t that the base gives every GPU transport:
 * no operation runs out of resources, so pending_add answers UCS_ERR_BUSY
 * (try again now) and nothing waits */
#define UCT_GPUMEM_IFACE_BASE_OPS \
    .ep_pending_add         = uct_gpumem_ep_pending_add_busy, \
    .ep_pending_purge       = uct_gpumem_ep_pending_purge_none, \
    .ep_flush               = uct_gpumem_ep_flush, \
    .ep_fence               = uct_gpumem_ep_fence, \
    .iface_flush            = uct_gpumem_iface_flush, \
    .iface_fence            = uct_gpumem_iface_fence, \
    .iface_progress_enable  = uct_base_iface_progress_enable, \
    .iface_progress_disable = uct_base_iface_progress_disable, \
    .iface_progress         = uct_gpumem_iface_progress, \
    .iface_event_fd_get     = uct_gpumem_iface_event_fd_get, \
    .iface_event_arm        = uct_gpumem_iface_event_arm


/* The operations of uct_iface_ops_t the GPU transports share */
unsigned uct_gpumem_iface_progress(uct_iface_h tl_iface);

ucs_status_t uct_gpumem_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                    uct_completion_t *comp);

ucs_status_t uct_gpumem_iface_fence(uct_iface_h tl_iface, unsigned flags);

ucs_status_t uct_gpumem_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);

/* UCS_ERR_BUSY while operations are in flight, since their completions come
 * at progress, or while the descriptor was signalled and not yet read. The
 * base receives nothing: a transport that receives arms its arrivals after
 * this (gpumemipc's active messages) */
ucs_status_t uct_gpumem_iface_event_arm(uct_iface_h tl_iface,
                                        unsigned events);

ucs_status_t uct_gpumem_iface_estimate_perf(uct_iface_h tl_iface,
                                            uct_perf_attr_t *perf_attr);

ucs_status_t uct_gpumem_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp);

ucs_status_t uct_gpumem_ep_fence(uct_ep_h tl_ep, unsigned flags);

#endif
