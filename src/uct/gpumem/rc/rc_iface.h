/**
 * gpumem RDMA transport: the interface on one port of a gpumem_ib memory
 * domain's device: its completion queue, addresses, estimates, and the
 * operations in flight.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_RC_IFACE_H_
#define UCT_GPUMEM_RC_IFACE_H_

#include "rc_addr.h"

#include <uct/gpumem/ib/ib_md.h>
#include <uct/base/uct_iface.h>
#include <uct/gpumem/base/gpumem_iface_perf.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <infiniband/verbs.h>


/* UCX 1.13 holds 9 characters of a transport name (UCT_TL_NAME_MAX) */
#define UCT_GPUMEM_RC_TL_NAME  "gpumem_rc"

/* Most scatter-gather entries of a work request (kept on the stack) */
#define UCT_GPUMEM_RC_SGE_MAX  16


typedef struct uct_gpumem_rc_iface_config {
    uct_iface_config_t super;
    unsigned           tx_queue_len;   /* Work requests of a queue pair */
    unsigned           cq_len;         /* Completions of the interface */
    unsigned           max_poll;
    unsigned           peer_access;    /* gpumem_reg_access_t */
    unsigned long      max_sge;        /* UCS_ULUNITS_AUTO: the device's */
    unsigned long      gid_index;      /* UCS_ULUNITS_AUTO: chosen */
    unsigned           path_mtu;       /* uct_gpumem_rc_mtu_t */
    double             timeout;        /* Before a retransmission */
    unsigned           retry_count;
    double             rnr_timeout;    /* Peers wait before a send again */
    unsigned           rnr_retry_count;
    unsigned           hop_limit;      /* Of the global route header */
    unsigned           sl;             /* Service level */
    unsigned long      pkey;           /* UCS_HEXUNITS_AUTO: index 0's;
                                          UCS_CONFIG_TYPE_HEX writes a
                                          size_t for auto */
    unsigned           max_rd_atomic;  /* Reads in flight per queue pair */
    size_t             seg_size;       /* Bounce buffer of bcopy */
    unsigned           max_inline;     /* Bytes of put short */
    uct_iface_mpool_config_t tx_mp;    /* Bounce buffers */
    double             bandwidth;      /* UCS_CONFIG_DBL_AUTO: the port's */
    double             latency;
    double             overhead;
} uct_gpumem_rc_iface_config_t;


struct uct_gpumem_rc_ep;


/**
 * A registered bounce buffer of the bcopy operations.
 */
typedef struct uct_gpumem_rc_desc {
    uint32_t lkey;
    uint8_t  data[0];
} uct_gpumem_rc_desc_t;


/**
 * A work request in flight, or a flush waiting behind them, in its
 * endpoint's queue.
 */
typedef struct uct_gpumem_rc_op {
    ucs_queue_elem_t        queue;
    struct uct_gpumem_rc_ep *ep;
    uct_completion_t        *comp;
    int                     posted;      /* A work request, not a flush */
    int                     done;        /* Its completion was polled */
    ucs_status_t            status;      /* Once done */
    enum ibv_wr_opcode      opcode;      /* For the log of a failure */
    uint64_t                remote_addr;
    size_t                  length;
    uint32_t                rkey;
    uct_gpumem_rc_desc_t    *desc;       /* Bounce buffer, or NULL */
    uct_unpack_callback_t   unpack_cb;   /* get bcopy: where the bytes go */
    void                    *unpack_arg;
} uct_gpumem_rc_op_t;


typedef struct uct_gpumem_rc_iface {
    uct_base_iface_t         super;
    uct_gpumem_ib_md_t       *md;
    uint8_t                  port_num;
    struct ibv_port_attr     port_attr;
    uint8_t                  gid_index;
    uct_gpumem_rc_dev_addr_t dev_addr;
    enum ibv_mtu             path_mtu;
    unsigned                 max_sge;
    struct ibv_cq            *cq;
    unsigned                 cq_available;  /* Completions the queue can
                                               still take */
    ucs_mpool_t              op_mp;
    ucs_mpool_t              desc_mp;       /* uct_gpumem_rc_desc_t, in
                                               chunks the domain
                                               registered */
    ucs_list_link_t          eps;           /* Every endpoint, destroyed
                                               ones waiting for their
                                               completions included */
    ucs_list_link_t          pending_eps;   /* Those with pending requests */
    struct {
        unsigned             tx_queue_len;
        unsigned             max_poll;
        unsigned             qp_access_flags; /* What peers may do */
        size_t               seg_size;
        unsigned             max_inline;    /* As the queue pairs take */
        uint8_t              timeout;       /* As ibv_modify_qp takes it */
        uint8_t              retry_count;
        uint8_t              rnr_timer;     /* As ibv_modify_qp takes it */
        uint8_t              rnr_retry;
        uint8_t              hop_limit;
        uint8_t              sl;
        uint16_t             pkey_index;
        uint8_t              max_rd_atomic;
        uint8_t              max_dest_rd_atomic;
        uct_gpumem_iface_perf_t perf;  /* What UCP selects lanes by */
    } config;
} uct_gpumem_rc_iface_t;


extern uct_tl_t uct_gpumem_rc_tl;


/**
 * The exponent ibv_modify_qp takes for a retransmission timeout
 * (4.096 us * 2^exponent), the least that waits at least @a seconds.
 */
uint8_t uct_gpumem_rc_timeout_exp(double seconds);


/**
 * The code ibv_modify_qp takes for the time a peer waits before it sends
 * again to a queue pair that had no receive posted (IBTA's table, from
 * 10 us to 655.36 ms), the least that waits at least @a seconds; the longest
 * where none does.
 */
uint8_t uct_gpumem_rc_rnr_timer(double seconds);


/**
 * Bytes per second of a port of @a width and @a speed (ibv_port_attr's
 * active_width and active_speed codes), 0 for unknown codes.
 */
double uct_gpumem_rc_port_bandwidth(uint8_t width, uint8_t speed);


/**
 * Create a queue pair of the interface, taking @a max_inline bytes inline;
 * @a cap_p: what the device made of the capabilities asked.
 */
ucs_status_t uct_gpumem_rc_iface_qp_create(uct_gpumem_rc_iface_t *iface,
                                           unsigned max_inline,
                                           struct ibv_qp **qp_p,
                                           struct ibv_qp_cap *cap_p);


/**
 * Whether the interface may post one more work request of @a ep now: room
 * in the endpoint's queue and the completion queue, and a bounce buffer.
 */
int uct_gpumem_rc_iface_has_resources(uct_gpumem_rc_iface_t *iface,
                                      struct uct_gpumem_rc_ep *ep);


/**
 * The GID a RoCE port is addressed by, among @a count entries of its table:
 * the first RoCE v2 GID of an IPv4 address, else the first RoCE v2 GID,
 * else the first RoCE v1 GID that is not zero.
 *
 * @return Its position in @a entries, or -1 when none fits.
 */
int uct_gpumem_rc_gid_choose(const struct ibv_gid_entry *entries,
                             unsigned count);

#endif
