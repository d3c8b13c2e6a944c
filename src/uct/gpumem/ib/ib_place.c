/**
 * gpumem verbs: an RDMA device's place for the process's GPU, from the
 * topology module's ranking of NICs, and the estimates it gives.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_place.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <string.h>


/* Per PCI link between the GPU and the NIC */
#define UCT_GPUMEM_IB_PLACE_HOP_LATENCY  50e-9


void uct_gpumem_ib_place_find(const gpumem_topo_t *topo, unsigned gpu,
                              const char *nic, uct_gpumem_ib_place_t *place)
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
}

void uct_gpumem_ib_place_estimates(const uct_gpumem_ib_place_t *place,
                                   double port_bandwidth,
                                   double port_latency,
                                   double *bandwidth_p, double *latency_p)
{
    double share;

    if (!place->known) {
        *bandwidth_p = port_bandwidth;
        *latency_p   = port_latency;
        return;
    }

    switch (place->relation) {
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
    *latency_p   = port_latency +
                   (place->hops * UCT_GPUMEM_IB_PLACE_HOP_LATENCY);
}
