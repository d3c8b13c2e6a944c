/**
 * gpumem: the performance estimates every gpumem interface gives UCP.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IFACE_PERF_H_
#define UCT_GPUMEM_IFACE_PERF_H_

#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>

BEGIN_C_DECLS

/**
 * What UCP selects lanes by: one line of latency, bandwidth and the CPU's
 * overhead per operation, the same for every operation of the interface but
 * for the latency of its active messages where they have their own path.
 */
typedef struct uct_gpumem_iface_perf {
    double bandwidth;  /* Bytes per second */
    double latency;    /* Seconds a copy or RDMA operation of a few bytes
                          takes */
    double am_latency; /* Seconds an active message takes where it does not
                          go the way of the copies (a receive FIFO in shared
                          memory); 0: the same as latency */
    double overhead;   /* Seconds of the sender's CPU per operation */
    int    shared;     /* The bandwidth is shared by the machine's processes
                          (an engine or bus they all use), else dedicated */
} uct_gpumem_iface_perf_t;


/*
 * Fill the estimates of uct_iface_query(). Its one latency is the active
 * messages': that is what UCP's protocols of UCX 1.13 read for the messages
 * of a rendezvous and for its transfer alike, comparing it with eager
 * messages without their copies to and from the GPU (where each pays the
 * engine's start at least as often as the transfer). Versions that ask per
 * operation (uct_iface_estimate_perf) get each operation's.
 */
void uct_gpumem_iface_perf_attr(const uct_gpumem_iface_perf_t *perf,
                                uct_iface_attr_t *iface_attr);

/* Answer uct_iface_estimate_perf() for the fields it asks */
void uct_gpumem_iface_perf_estimate(const uct_gpumem_iface_perf_t *perf,
                                    uct_perf_attr_t *perf_attr);

END_C_DECLS

#endif
