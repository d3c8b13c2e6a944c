/**
 * gpumem: the performance estimates every gpumem interface gives UCP.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_iface_perf.h"
#include <uct/gpumem/compat/gpumem_compat.h>

#include <ucs/sys/math.h>
#include <stdint.h>


static double
uct_gpumem_iface_perf_am_latency(const uct_gpumem_iface_perf_t *perf)
{
    return (perf->am_latency > 0) ? perf->am_latency : perf->latency;
}

static int uct_gpumem_iface_perf_is_am(uct_ep_operation_t op)
{
    return (op == UCT_EP_OP_AM_SHORT) || (op == UCT_EP_OP_AM_BCOPY) ||
           (op == UCT_EP_OP_AM_ZCOPY);
}

void uct_gpumem_iface_perf_attr(const uct_gpumem_iface_perf_t *perf,
                                uct_iface_attr_t *iface_attr)
{
    double am_latency = uct_gpumem_iface_perf_am_latency(perf);

    iface_attr->latency             = ucs_linear_func_make(am_latency, 0);
    iface_attr->bandwidth.dedicated = perf->shared ? 0 : perf->bandwidth;
    iface_attr->bandwidth.shared    = perf->shared ? perf->bandwidth : 0;
    iface_attr->overhead            = perf->overhead;
    iface_attr->priority            = 0;
}

void uct_gpumem_iface_perf_estimate(const uct_gpumem_iface_perf_t *perf,
                                    uct_perf_attr_t *perf_attr)
{
    double dedicated = perf->shared ? 0 : perf->bandwidth;
    double shared    = perf->shared ? perf->bandwidth : 0;

    /* Every operation and memory type moves at the interface's one rate, on
     * one path as on all */
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
        perf_attr->bandwidth.dedicated = dedicated;
        perf_attr->bandwidth.shared    = shared;
    }
    UCT_GPUMEM_PERF_ATTR_SET_PATH_BANDWIDTH(perf_attr, dedicated, shared);
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
        perf_attr->send_pre_overhead = perf->overhead;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        perf_attr->send_post_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
        perf_attr->recv_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) {
        perf_attr->latency = ucs_linear_func_make(
                ((perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION) &&
                 uct_gpumem_iface_perf_is_am(perf_attr->operation)) ?
                uct_gpumem_iface_perf_am_latency(perf) : perf->latency, 0);
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = SIZE_MAX;
    }
}
