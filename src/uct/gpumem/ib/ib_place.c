/**
 * gpumem verbs: an RDMA device's place for the process's GPU, from the
 * topology module's ranking and binding of NICs, and the estimates it gives.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_place.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>


/* Per PCI link between the GPU and the NIC */
#define UCT_GPUMEM_IB_PLACE_HOP_LATENCY  50e-9

/* How far below the bound NIC's estimates another NIC's are kept */
#define UCT_GPUMEM_IB_PLACE_BIND_MARGIN  0.01


/* The GPU's bound NIC, so that the estimates put it first */
static void uct_gpumem_ib_place_bind(const gpumem_topo_t *topo, unsigned gpu,
                                     const gpumem_topo_dev_t *dev,
                                     unsigned bind_flags,
                                     uct_gpumem_ib_place_t *place)
{
    gpumem_topo_nic_bind_t *binds;

    binds = ucs_calloc(topo->num_gpus, sizeof(*binds), "gpumem_ib_binds");
    if (binds == NULL) {
        return;
    }

    if (gpumem_topo_bind_nics(topo, bind_flags, binds) == UCS_OK) {
        place->bind_known = 1;
        place->bind       = binds[gpu];
        place->bound      = (&topo->devs[binds[gpu].nic] == dev);
        ucs_strncpy_zero(place->bound_nic, topo->devs[binds[gpu].nic].name,
                         sizeof(place->bound_nic));
    }
    ucs_free(binds);
}


void uct_gpumem_ib_place_find(const gpumem_topo_t *topo, unsigned gpu,
                              const char *nic, unsigned bind_flags,
                              uct_gpumem_ib_place_t *place)
{
    const gpumem_topo_dev_t *dev;
    gpumem_topo_nic_rank_t *ranks;
    unsigned i;

    memset(place, 0, sizeof(*place));
    place->dma_reaches = 1;

    dev = (topo == NULL) ? NULL : gpumem_topo_find_by_name(topo, nic);
    if ((dev == NULL) || (dev->type != GPUMEM_TOPO_DEV_NIC)) {
        ucs_snprintf_zero(place->reason, sizeof(place->reason),
                          "%s is not in the topology", nic);
        return;
    }

    if (gpu >= topo->num_gpus) {
        ucs_snprintf_zero(place->reason, sizeof(place->reason),
                          "GPU %u is not in the topology", gpu);
        return;
    }

    ranks = ucs_calloc(topo->num_nics, sizeof(*ranks), "gpumem_ib_ranks");
    if (ranks == NULL) {
        ucs_snprintf_zero(place->reason, sizeof(place->reason),
                          "no memory to rank %u NICs", topo->num_nics);
        return;
    }

    /* A fact that cannot be read does not take the NIC away from the GPU:
     * only a known rule does */
    gpumem_topo_rank_nics(topo, gpu, GPUMEM_TOPO_ASSUME, ranks);
    for (i = 0; i < topo->num_nics; ++i) {
        if (&topo->devs[ranks[i].nic] != dev) {
            continue;
        }

        place->known       = 1;
        place->rank        = i;
        place->relation    = ranks[i].relation;
        place->hops        = ranks[i].hops;
        place->dma_reaches = ranks[i].gdr.reaches;
        ucs_strncpy_zero(place->reason, ranks[i].gdr.reason,
                         sizeof(place->reason));
        break;
    }

    ucs_free(ranks);
    uct_gpumem_ib_place_bind(topo, gpu, dev, bind_flags, place);
}

/* A port's bandwidth and latency through a NIC so placed from the GPU */
static void uct_gpumem_ib_place_at(gpumem_topo_relation_t relation,
                                   unsigned hops, double port_bandwidth,
                                   double port_latency, double *bandwidth_p,
                                   double *latency_p)
{
    double share;

    switch (relation) {
    case GPUMEM_TOPO_REL_SAME_GPU:
    case GPUMEM_TOPO_REL_SAME_SWITCH:
        share = 1.0;
        break;
    case GPUMEM_TOPO_REL_HOST_BRIDGE:
        share = 0.9;
        break;
    case GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES:
        share = 0.75;
        break;
    default:
        share = 0.5;
        break;
    }

    *bandwidth_p = port_bandwidth * share;
    *latency_p   = port_latency + (hops * UCT_GPUMEM_IB_PLACE_HOP_LATENCY);
}

void uct_gpumem_ib_place_estimates(const uct_gpumem_ib_place_t *place,
                                   double port_bandwidth,
                                   double port_latency,
                                   double *bandwidth_p, double *latency_p)
{
    const double margin = UCT_GPUMEM_IB_PLACE_BIND_MARGIN;
    double bound_bandwidth, bound_latency;

    if (!place->known) {
        *bandwidth_p = port_bandwidth;
        *latency_p   = port_latency;
        return;
    }

    uct_gpumem_ib_place_at(place->relation, place->hops, port_bandwidth,
                           port_latency, bandwidth_p, latency_p);
    if (!place->bind_known || place->bound) {
        return;
    }

    /*
     * UCP opens every device and takes the best estimated for each rank, so
     * ranks on GPUs whose nearest NIC is one would all go by it. The GPU's
     * bound NIC is to be that best one: any other NIC is estimated a margin
     * below where its port would be at the bound NIC's place. That lowers
     * only a NIC as near as the bound one or nearer (another GPU's, most
     * often); a farther one keeps its estimates, lower already, or in one of
     * them only. The margin, 1%, is well above UCP's tie of two scores
     * (1e-6 of them) and small enough not to change which NICs UCP adds as
     * further rails. Ports of one rate are ordered so; a faster port of
     * another GPU's may still be chosen, for its rate.
     */
    uct_gpumem_ib_place_at(place->bind.relation, place->bind.hops,
                           port_bandwidth, port_latency, &bound_bandwidth,
                           &bound_latency);
    *bandwidth_p = ucs_min(*bandwidth_p, bound_bandwidth * (1.0 - margin));
    *latency_p   = ucs_max(*latency_p, bound_latency * (1.0 + margin));
}
