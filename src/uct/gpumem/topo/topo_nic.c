/**
 * gpumem topology: which NIC each GPU should use.
 *
 * NICs are ranked by their placement relative to the GPU (same switch,
 * across switches under one host bridge, through the host bridge, across
 * sockets), then by PCI links between them, then by PCI address so that the
 * order is stable. Each rank carries whether the NIC reaches the GPU's
 * memory by DMA (GPUDirect RDMA), by the bus rules of reaches().
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo.h"



static int gpumem_topo_nic_rank_cmp(const gpumem_topo_t *topo,
                                    const gpumem_topo_nic_rank_t *a,
                                    const gpumem_topo_nic_rank_t *b)
{
    if (a->relation != b->relation) {
        return (a->relation < b->relation) ? -1 : 1;
    }
    if (a->hops != b->hops) {
        return (a->hops < b->hops) ? -1 : 1;
    }
    return gpumem_pci_addr_cmp(&topo->devs[a->nic].reach.addr,
                               &topo->devs[b->nic].reach.addr);
}

void gpumem_topo_rank_nics(const gpumem_topo_t *topo, unsigned gpu,
                           unsigned flags, gpumem_topo_nic_rank_t *ranks)
{
    const gpumem_topo_reach_t *gpu_reach = &topo->devs[gpu].reach;
    const gpumem_topo_reach_t *nic_reach;
    gpumem_topo_nic_rank_t rank;
    unsigned i, j, count = 0;

    for (i = 0; i < topo->num_devs; ++i) {
        if (topo->devs[i].type != GPUMEM_TOPO_DEV_NIC) {
            continue;
        }
        nic_reach             = &topo->devs[i].reach;
        ranks[count].nic      = i;
        ranks[count].relation = gpumem_topo_relation(gpu_reach, nic_reach,
                                                     &ranks[count].hops);
        gpumem_topo_dma_reaches(nic_reach, gpu_reach, flags,
                                &ranks[count].gdr);
        ++count;
    }

    /* Insertion sort: a machine has few NICs, and the comparison needs the
     * topology, which qsort() cannot pass */
    for (i = 1; i < count; ++i) {
        rank = ranks[i];
        for (j = i; (j > 0) &&
                    (gpumem_topo_nic_rank_cmp(topo, &rank, &ranks[j - 1]) < 0);
             --j) {
            ranks[j] = ranks[j - 1];
        }
        ranks[j] = rank;
    }
}
