/**
 * gpumem verbs: where an RDMA device sits for the process's GPU, as the
 * topology module ranks NICs: its rank, distance, whether it reaches the
 * GPU's memory by DMA, whether the GPU is bound to it, and the estimates of
 * a transport that follow.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IB_PLACE_H_
#define UCT_GPUMEM_IB_PLACE_H_

#include <uct/gpumem/topo/topo.h>

BEGIN_C_DECLS

/**
 * An RDMA device's place for one GPU.
 */
typedef struct uct_gpumem_ib_place {
    int                    known;        /* Both are in the topology */
    unsigned               rank;         /* 0: the GPU's nearest NIC */
    gpumem_topo_relation_t relation;
    unsigned               hops;         /* PCI links between them */
    int                    dma_reaches;  /* It reaches the GPU's memory by
                                            DMA, facts that cannot be read
                                            counted favourable */
    char                   reason[GPUMEM_TOPO_REASON_MAX]; /* Why not, or
                                                              why unknown */

    /* The NIC gpumem_topo_bind_nics() gives the GPU, where it gives one */
    int                    bind_known;
    int                    bound;        /* It is this one */
    gpumem_topo_nic_bind_t bind;         /* Its place */
    char                   bound_nic[GPUMEM_TOPO_NAME_MAX];
} uct_gpumem_ib_place_t;


/**
 * The place of the NIC named @a nic for GPU @a gpu of @a topo (NULL: none;
 * @a gpu indexes the topology's devices), the GPU's NIC bound by
 * gpumem_topo_bind_nics() with @a bind_flags. A NIC or GPU the topology
 * does not list (soft-RoCE, for one) is not known, and reaches: nothing
 * says otherwise.
 */
void uct_gpumem_ib_place_find(const gpumem_topo_t *topo, unsigned gpu,
                              const char *nic, unsigned bind_flags,
                              uct_gpumem_ib_place_t *place);


/**
 * Bandwidth and latency of a transport through a NIC at @a place, from
 * those of its port: the full bandwidth under the GPU's switch, 90% through
 * their host bridge, 75% across host bridges, 50% across sockets; 50 ns
 * more latency a PCI link. Unknown places keep the port's. A NIC the GPU
 * is not bound to is estimated below the bound NIC, were its port there.
 */
void uct_gpumem_ib_place_estimates(const uct_gpumem_ib_place_t *place,
                                   double port_bandwidth,
                                   double port_latency,
                                   double *bandwidth_p, double *latency_p);

END_C_DECLS

#endif
