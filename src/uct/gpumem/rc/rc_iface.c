/**
 * gpumem RDMA transport: the interface on a port of a gpumem_ib memory
 * domain's device: the ports it offers, its address and estimates, its
 * completion queue and progress, flush and fence of all its endpoints.
 *
 * The memory domain registers host and device memory (dma-buf or BAR
 * window, as it decides); the transport moves the bytes with RDMA WRITE and
 * READ of reliable-connected queue pairs, which UCP connects endpoint to
 * endpoint through its wire-up.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_iface.h"
#include <uct/gpumem/base/gpumem_iface_params.h>
#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/util/gpumem_config.h>
#include "rc_ep.h"

#include <uct/api/v2/uct_v2.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/type/class.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Completions one poll of the queue reads at most */
#define UCT_GPUMEM_RC_POLL_MAX         32

/* Bounce buffers a chunk of the pool holds where TX_BUFS_GROW is 0 */
#define UCT_GPUMEM_RC_TX_BUFS_GROW     64

/* Service levels are 4 bits */
#define UCT_GPUMEM_RC_SL_MAX           15

/* A P_Key: the partition, and the bit of its full members */
#define UCT_GPUMEM_RC_PKEY_PARTITION   0x7fff
#define UCT_GPUMEM_RC_PKEY_FULL_MEMBER 0x8000


/* Index: enum ibv_mtu; 0 takes the port's active MTU */
static const char *uct_gpumem_rc_mtu_names[] = {
    "default", "256", "512", "1024", "2048", "4096", NULL
};

static ucs_config_field_t uct_gpumem_rc_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_rc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"TX_QUEUE_LEN", "256",
     "Work requests an endpoint keeps in flight; beyond them operations\n"
     "return UCS_ERR_NO_RESOURCE and wait in the pending queue.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, tx_queue_len),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"PEER_ACCESS", "remote",
     "What the peer of an endpoint may do through its queue pair:\n"
     " local        - neither read nor write this process's memory\n"
     " remote_write - write it\n"
     " remote       - read and write it\n"
     "A peer reads or writes a region only where both the queue pair and the\n"
     "region allow it (the domain's MAX_ACCESS caps the regions); an RDMA\n"
     "operation the queue pair refuses fails its endpoint. UCP's protocols,\n"
     "and the flushes of writes in any order (UCX_GPUMEM_IB_ORDER), need\n"
     "remote.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, peer_access),
     UCS_CONFIG_TYPE_ENUM(uct_gpumem_ib_access_names)},

    {"CQ_LEN", "4096",
     "Completions the interface's queue holds: work requests of all its\n"
     "endpoints in flight together.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, cq_len),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"MAX_POLL", "16",
     "Most completions one progress call gives.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, max_poll),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"MAX_SGE", "auto",
     "Most scatter-gather entries (uct_iov_t) of one put or get; auto: as\n"
     "many as the device takes, up to 16.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, max_sge),
     UCS_CONFIG_TYPE_ULUNITS},

    {"GID_INDEX", "auto",
     "GID by which peers address a RoCE port; auto: the first RoCE v2 GID\n"
     "of an IPv4 address, else the first RoCE v2 GID, else the first\n"
     "RoCE v1 GID. InfiniBand ports are addressed by their LID.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, gid_index),
     UCS_CONFIG_TYPE_ULUNITS},

    {"PATH_MTU", "default",
     "Path MTU of the queue pairs: default (the port's active MTU), 256,\n"
     "512, 1024, 2048 or 4096; a connection takes the smaller of its two\n"
     "sides'.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, path_mtu),
     UCS_CONFIG_TYPE_ENUM(uct_gpumem_rc_mtu_names)},

    {"TIMEOUT", "1s",
     "Time without an acknowledgement before a packet is sent again; the\n"
     "device takes the least power of two times 4.096 us that is not\n"
     "shorter.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, timeout),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {"RETRY_COUNT", "7",
     "Times a packet is sent again before the endpoint fails with\n"
     "UCS_ERR_ENDPOINT_TIMEOUT (at most 7; soft-RoCE, rdma_rxe, takes 7\n"
     "as without end, so that a peer gone is never found there).",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, retry_count),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"RNR_TIMEOUT", "640us",
     "Time a peer waits before it sends again to a queue pair that had no\n"
     "receive posted (receiver not ready); the device takes the least of\n"
     "IBTA's times (10 us to 655.36 ms) that is not shorter. gpumem_rc's\n"
     "peers send no messages, only RDMA WRITE and READ, which need none.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, rnr_timeout),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {"RNR_RETRY_COUNT", "7",
     "Times a send refused by a receiver that is not ready is sent again\n"
     "(at most 7, which the device takes as: without end).",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, rnr_retry_count),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"HOP_LIMIT", "64",
     "RoCE: time to live of the packets' IP header; InfiniBand: hop limit of\n"
     "their global route header, where they carry one. At most 255.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, hop_limit),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"SL", "0",
     "InfiniBand: service level of the queue pairs; RoCE: the Ethernet\n"
     "priority a device derives from it. At most 15.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, sl),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"PKEY", "auto",
     "Partition of the queue pairs: a P_Key of the port's table (0x0 to\n"
     "0x7fff; its full member is preferred); auto: the port's first\n"
     "(index 0), its default.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, pkey),
     UCS_CONFIG_TYPE_HEX},

    {"MAX_RD_ATOMIC", "16",
     "RDMA READs an endpoint keeps in flight, and takes from its peer, at\n"
     "most; the device's limit caps it.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, max_rd_atomic),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"SEG_SIZE", "8k",
     "Largest put/get bcopy: the size of the registered host buffer the\n"
     "bytes pass through.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, seg_size),
     UCT_GPUMEM_CONFIG_TYPE_SIZE},

    {"MAX_INLINE", "64",
     "Largest put short: bytes the device copies from the request as it is\n"
     "posted (inline); at most what the device's queue pairs take, as\n"
     "ibv_create_qp() answers when the interface opens.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, max_inline),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    UCT_GPUMEM_IFACE_MPOOL_CONFIG_FIELDS("TX_", -1, 64, "bcopy bounce",
        ucs_offsetof(uct_gpumem_rc_iface_config_t, tx_mp),
        "\nWhile all are in flight, operations return UCS_ERR_NO_RESOURCE\n"
        "(and UCP's wait in the pending queue) until one completes."),

    {"BW", "auto",
     "Bandwidth UCP expects of the port; auto: the port's signalling rate\n"
     "less its encoding (lanes times lane speed), less again the farther\n"
     "the NIC from the process's GPU in the topology: 90% through their\n"
     "host bridge, 75% across host bridges, 50% across sockets.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, bandwidth),
     UCT_GPUMEM_CONFIG_TYPE_BW},

    {"LATENCY", "700ns",
     "Time UCP expects a put of a few bytes to take to land, plus 50 ns a\n"
     "PCI link between the NIC and the process's GPU in the topology.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, latency),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {"OVERHEAD", "75ns",
     "CPU time UCP expects posting a work request to take.",
     ucs_offsetof(uct_gpumem_rc_iface_config_t, overhead),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {NULL}
};


uint8_t uct_gpumem_rc_timeout_exp(double seconds)
{
    double periods = seconds / 4.096e-6;
    unsigned exp;

    for (exp = 1; (exp < 31) && (ldexp(1.0, exp) < periods); ++exp) {
    }
    return exp;
}

uint8_t uct_gpumem_rc_rnr_timer(double seconds)
{
    /* IBTA's RNR NAK timer field, in units of 10 us, from code 1 on; code 0
     * is the longest, 655.36 ms */
    static const unsigned times[] = {
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
        384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
        16384, 24576, 32768, 49152
    };
    /* A time parsed from "640us" may fall a rounding error above its code */
    double units = (seconds * 1e5) - 1e-6;
    unsigned code;

    for (code = 1; code < ucs_static_array_size(times); ++code) {
        if (times[code] >= units) {
            return code;
        }
    }
    return 0;
}

double uct_gpumem_rc_port_bandwidth(uint8_t width, uint8_t speed)
{
    double lanes, gbps, encoding;

    switch (width) {
    case 1:  lanes = 1;  break;
    case 2:  lanes = 4;  break;
    case 4:  lanes = 8;  break;
    case 8:  lanes = 12; break;
    case 16: lanes = 2;  break;
    default: return 0;
    }

    /* Lane rates in Gb/s; SDR to QDR encode 8 bits in 10, the later ones
     * 64 in 66 */
    encoding = 64.0 / 66.0;
    switch (speed) {
    case 1:   gbps = 2.5;      encoding = 0.8; break;
    case 2:   gbps = 5.0;      encoding = 0.8; break;
    case 4:   gbps = 10.0;     encoding = 0.8; break;
    case 8:   gbps = 10.3125;  break;
    case 16:  gbps = 14.0625;  break;
    case 32:  gbps = 25.78125; break;
    case 64:  gbps = 53.125;   break;
    case 128: gbps = 106.25;   break;
    default:  return 0;
    }

    return lanes * gbps * encoding * 1e9 / 8;
}

static int uct_gpumem_rc_gid_is_ipv4(const union ibv_gid *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    return !memcmp(gid->raw, prefix, sizeof(prefix));
}

static int uct_gpumem_rc_gid_is_zero(const union ibv_gid *gid)
{
    static const union ibv_gid zero;

    return !memcmp(gid->raw, zero.raw, sizeof(zero.raw));
}

int uct_gpumem_rc_gid_choose(const struct ibv_gid_entry *entries,
                             unsigned count)
{
    int v2 = -1, v1 = -1;
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (uct_gpumem_rc_gid_is_zero(&entries[i].gid)) {
            continue;
        }

        if (entries[i].gid_type == IBV_GID_TYPE_ROCE_V2) {
            if (uct_gpumem_rc_gid_is_ipv4(&entries[i].gid)) {
                return i;
            }
            if (v2 < 0) {
                v2 = i;
            }
        } else if ((entries[i].gid_type == IBV_GID_TYPE_ROCE_V1) &&
                   (v1 < 0)) {
            v1 = i;
        }
    }

    return (v2 >= 0) ? v2 : v1;
}

/* The PCI device of an RDMA device, for UCP's distances; none for soft
 * devices */
static ucs_sys_device_t uct_gpumem_rc_sys_device(const char *dev_name)
{
    ucs_sys_device_t sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    char path[PATH_MAX], *real, *bdf;
    unsigned domain, bus, slot, function;
    ucs_sys_bus_id_t bus_id;

    ucs_snprintf_safe(path, sizeof(path), "/sys/class/infiniband/%s/device",
                      dev_name);
    real = realpath(path, NULL);
    if (real == NULL) {
        return sys_dev;
    }

    bdf = strrchr(real, '/');
    if ((bdf != NULL) &&
        (sscanf(bdf + 1, "%x:%x:%x.%x", &domain, &bus, &slot,
                &function) == 4)) {
        bus_id.domain   = domain;
        bus_id.bus      = bus;
        bus_id.slot     = slot;
        bus_id.function = function;
        (void)ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev);
    }

    free(real);
    return sys_dev;
}

static int uct_gpumem_rc_port_usable(const struct ibv_port_attr *attr)
{
    return (attr->state == IBV_PORT_ACTIVE) &&
           ((attr->link_layer == IBV_LINK_LAYER_INFINIBAND) ||
            (attr->link_layer == IBV_LINK_LAYER_ETHERNET) ||
            (attr->link_layer == IBV_LINK_LAYER_UNSPECIFIED));
}

static ucs_status_t
uct_gpumem_rc_query_devices(uct_md_h uct_md,
                            uct_tl_device_resource_t **tl_devices_p,
                            unsigned *num_tl_devices_p)
{
    uct_gpumem_ib_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ib_md_t);
    uct_tl_device_resource_t *devices;
    struct ibv_device_attr dev_attr;
    struct ibv_port_attr port_attr;
    ucs_sys_device_t sys_dev;
    unsigned count;
    uint8_t port;
    int ret;

    ret = ibv_query_device(md->context, &dev_attr);
    if (ret != 0) {
        ucs_error("gpumem_rc: %s: ibv_query_device() failed: %s",
                  md->domain.name, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    devices = ucs_calloc(ucs_max(dev_attr.phys_port_cnt, 1),
                         sizeof(*devices), "gpumem_rc_devices");
    if (devices == NULL) {
        ucs_error("gpumem_rc: failed to allocate %u device resources",
                  dev_attr.phys_port_cnt);
        return UCS_ERR_NO_MEMORY;
    }

    sys_dev = uct_gpumem_rc_sys_device(md->domain.name);
    count   = 0;
    for (port = 1; port <= dev_attr.phys_port_cnt; ++port) {
        ret = ibv_query_port(md->context, port, &port_attr);
        if ((ret != 0) || !uct_gpumem_rc_port_usable(&port_attr)) {
            ucs_debug("gpumem_rc: %s:%u is left out: %s", md->domain.name,
                      port, (ret != 0) ? strerror(ret) : "not active");
            continue;
        }

        ucs_snprintf_zero(devices[count].name, sizeof(devices[count].name),
                          "%s:%u", md->domain.name, port);
        devices[count].type       = UCT_DEVICE_TYPE_NET;
        devices[count].sys_device = sys_dev;
        ++count;
    }

    if (count == 0) {
        ucs_free(devices);
        devices = NULL;
    }

    *tl_devices_p     = devices;
    *num_tl_devices_p = count;
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_rc_iface_get_device_address(uct_iface_h tl_iface,
                                       uct_device_addr_t *addr)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);

    uct_gpumem_rc_dev_addr_pack(&iface->dev_addr, addr);
    return UCS_OK;
}

static int uct_gpumem_rc_iface_is_reachable(
        const uct_iface_h tl_iface, const uct_device_addr_t *dev_addr,
        const uct_iface_addr_t UCS_V_UNUSED *iface_addr)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);
    uct_gpumem_rc_dev_addr_t peer;

    if ((dev_addr == NULL) ||
        (uct_gpumem_rc_dev_addr_unpack(dev_addr, UCS_LOG_LEVEL_DEBUG,
                                       &peer) != UCS_OK) ||
        (peer.is_eth != iface->dev_addr.is_eth)) {
        return 0;
    }

    /* InfiniBand routes within a subnet only */
    return peer.is_eth || !memcmp(peer.gid, iface->dev_addr.gid, 8);
}

static ucs_status_t uct_gpumem_rc_iface_query(uct_iface_h tl_iface,
                                              uct_iface_attr_t *iface_attr)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);
    size_t mtu                   = 128u << iface->path_mtu;

    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->iface_addr_len          = 0;
    iface_attr->device_addr_len         = UCT_GPUMEM_RC_DEV_ADDR_SIZE;
    iface_attr->ep_addr_len             = UCT_GPUMEM_RC_EP_ADDR_SIZE;
    iface_attr->max_conn_priv           = 0;
    /* Across machines: UCP (1.18 and later) takes a transport without
     * INTER_NODE for one inside a machine */
    iface_attr->cap.flags               = UCT_IFACE_FLAG_CONNECT_TO_EP |
                                          UCT_GPUMEM_IFACE_FLAG_INTER_NODE |
                                          UCT_IFACE_FLAG_PUT_SHORT     |
                                          UCT_IFACE_FLAG_PUT_BCOPY     |
                                          UCT_IFACE_FLAG_PUT_ZCOPY     |
                                          UCT_IFACE_FLAG_GET_BCOPY     |
                                          UCT_IFACE_FLAG_GET_ZCOPY     |
                                          UCT_IFACE_FLAG_PENDING       |
                                          UCT_IFACE_FLAG_EP_CHECK      |
                                          UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    iface_attr->cap.event_flags         = 0;

    iface_attr->cap.put.max_short       = iface->config.max_inline;
    iface_attr->cap.put.max_bcopy       = iface->config.seg_size;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = iface->port_attr.max_msg_sz;
    iface_attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.put.align_mtu       = mtu;
    iface_attr->cap.put.max_iov         = iface->max_sge;

    iface_attr->cap.get.max_bcopy       = iface->config.seg_size;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = iface->port_attr.max_msg_sz;
    iface_attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.get.align_mtu       = mtu;
    iface_attr->cap.get.max_iov         = iface->max_sge;

    iface_attr->cap.am.opt_zcopy_align  = 1;
    iface_attr->cap.am.align_mtu        = 1;

    uct_gpumem_iface_perf_attr(&iface->config.perf, iface_attr);
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_rc_iface_estimate_perf(uct_iface_h tl_iface,
                                  uct_perf_attr_t *perf_attr)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);

    uct_gpumem_iface_perf_estimate(&iface->config.perf, perf_attr);
    return UCS_OK;
}

static unsigned uct_gpumem_rc_iface_progress(uct_iface_h tl_iface)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);
    struct ibv_wc wc[UCT_GPUMEM_RC_POLL_MAX];
    uct_gpumem_rc_ep_t *ep, *tmp;
    int i, count;

    count = ibv_poll_cq(iface->cq, ucs_min(iface->config.max_poll,
                                           UCT_GPUMEM_RC_POLL_MAX), wc);
    if (ucs_unlikely(count < 0)) {
        ucs_error("gpumem_rc: %s:%u: ibv_poll_cq() failed: %d",
                  iface->md->domain.name, iface->port_num, count);
        return 0;
    }

    for (i = 0; i < count; ++i) {
        uct_gpumem_rc_ep_complete(iface,
                                  (uct_gpumem_rc_op_t*)(uintptr_t)wc[i].wr_id,
                                  wc[i].status);
    }

    if (count > 0) {
        ucs_list_for_each_safe(ep, tmp, &iface->pending_eps, pending_link) {
            uct_gpumem_rc_ep_pending_dispatch(iface, ep);
        }
    }

    return count;
}

static ucs_status_t uct_gpumem_rc_iface_flush(uct_iface_h tl_iface,
                                              unsigned UCS_V_UNUSED flags,
                                              uct_completion_t *comp)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);
    uct_gpumem_rc_ep_t *ep;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (!ucs_list_is_empty(&iface->pending_eps)) {
        return UCS_ERR_NO_RESOURCE;
    }

    ucs_list_for_each(ep, &iface->eps, list) {
        if (!ep->destroyed && (ep->posted > 0)) {
            UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
            return UCS_INPROGRESS;
        }
    }

    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    return UCS_OK;
}

static ucs_status_t uct_gpumem_rc_iface_fence(uct_iface_h tl_iface,
                                              unsigned flags)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gpumem_rc_iface_t);
    ucs_status_t status          = UCS_OK;
    uct_gpumem_rc_ep_t *ep;
    ucs_status_t ep_status;

    /* Every endpoint is fenced that can be; the first that cannot (its
     * read-back found no room) tells, and a call again fences it then */
    ucs_list_for_each(ep, &iface->eps, list) {
        if (ep->destroyed) {
            continue;
        }

        ep_status = uct_gpumem_rc_ep_fence(&ep->super.super, flags);
        if ((ep_status != UCS_OK) && (status == UCS_OK)) {
            status = ep_status;
        }
    }

    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FENCE(&iface->super);
    }
    return status;
}

static void UCS_CLASS_DELETE_FUNC_NAME(uct_gpumem_rc_iface_t)(uct_iface_t*);

static uct_iface_ops_t uct_gpumem_rc_iface_ops = {
    .ep_put_short             = uct_gpumem_rc_ep_put_short,
    .ep_put_bcopy             = uct_gpumem_rc_ep_put_bcopy,
    .ep_put_zcopy             = uct_gpumem_rc_ep_put_zcopy,
    .ep_get_bcopy             = uct_gpumem_rc_ep_get_bcopy,
    .ep_get_zcopy             = uct_gpumem_rc_ep_get_zcopy,
    .ep_pending_add           = uct_gpumem_rc_ep_pending_add,
    .ep_pending_purge         = uct_gpumem_rc_ep_pending_purge,
    .ep_flush                 = uct_gpumem_rc_ep_flush,
    .ep_fence                 = uct_gpumem_rc_ep_fence,
    .ep_check                 = uct_gpumem_rc_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_rc_ep_t),
    .ep_destroy               = uct_gpumem_rc_ep_destroy,
    .ep_get_address           = uct_gpumem_rc_ep_get_address,
    .ep_connect_to_ep         = uct_gpumem_rc_ep_connect_to_ep,
    .iface_flush              = uct_gpumem_rc_iface_flush,
    .iface_fence              = uct_gpumem_rc_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gpumem_rc_iface_progress,
    .iface_event_fd_get       = uct_gpumem_iface_event_fd_get_unsupported,
    .iface_event_arm          = uct_gpumem_iface_event_arm_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_rc_iface_t),
    .iface_query              = uct_gpumem_rc_iface_query,
    .iface_get_device_address = uct_gpumem_rc_iface_get_device_address,
    .iface_get_address        = uct_gpumem_iface_get_address_none,
    .iface_is_reachable       = uct_gpumem_rc_iface_is_reachable
};

static uct_iface_internal_ops_t uct_gpumem_rc_iface_internal_ops = {
    UCT_GPUMEM_IFACE_INTERNAL_OPS_EP(uct_gpumem_rc_iface_estimate_perf,
                                     uct_gpumem_rc_ep_is_connected)
};

static ucs_mpool_ops_t uct_gpumem_rc_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

/* A bounce buffer of a chunk that uct_iface_mpool_init() allocated and the
 * gpumem_ib domain registered */
static void uct_gpumem_rc_desc_init(uct_iface_h UCS_V_UNUSED tl_iface,
                                    void *obj, uct_mem_h memh)
{
    uct_gpumem_rc_desc_t *desc = obj;

    desc->lkey = uct_gpumem_ib_memh_view(memh)->region->mr.lkey;
}

/* "<device>:<port>" of this memory domain's device */
static ucs_status_t uct_gpumem_rc_iface_parse_port(uct_gpumem_ib_md_t *md,
                                                   const char *dev_name,
                                                   uint8_t *port_p)
{
    const char *colon = strrchr(dev_name, ':');
    size_t name_len   = strlen(md->domain.name);
    char *end;
    unsigned long port;

    if ((colon == NULL) || ((size_t)(colon - dev_name) != name_len) ||
        strncmp(dev_name, md->domain.name, name_len)) {
        ucs_error("gpumem_rc: device '%s' is not a port of %s", dev_name,
                  md->domain.name);
        return UCS_ERR_NO_DEVICE;
    }

    port = strtoul(colon + 1, &end, 10);
    if ((*end != '\0') || (port == 0) || (port > UINT8_MAX)) {
        ucs_error("gpumem_rc: device '%s' names no port", dev_name);
        return UCS_ERR_NO_DEVICE;
    }

    *port_p = port;
    return UCS_OK;
}

/* The GID of a RoCE port, as configured or chosen */
static ucs_status_t
uct_gpumem_rc_iface_choose_gid(uct_gpumem_rc_iface_t *iface,
                               const uct_gpumem_rc_iface_config_t *config)
{
    struct ibv_context *context = iface->md->context;
    int len                     = iface->port_attr.gid_tbl_len;
    struct ibv_gid_entry *entries;
    int i, chosen;

    if (config->gid_index != UCS_ULUNITS_AUTO) {
        if (config->gid_index >= (unsigned long)len) {
            ucs_error("gpumem_rc: %s:%u has %d GIDs, GID_INDEX is %lu",
                      iface->md->domain.name, iface->port_num, len,
                      config->gid_index);
            return UCS_ERR_INVALID_PARAM;
        }
        iface->gid_index = config->gid_index;
        return UCS_OK;
    }

    entries = ucs_calloc(ucs_max(len, 1), sizeof(*entries), "gpumem_rc_gids");
    if (entries == NULL) {
        ucs_error("gpumem_rc: failed to allocate %d GID entries", len);
        return UCS_ERR_NO_MEMORY;
    }

    /* Entries that cannot be read stay zero, and are passed over */
    for (i = 0; i < len; ++i) {
        (void)ibv_query_gid_ex(context, iface->port_num, i, &entries[i], 0);
    }

    chosen = uct_gpumem_rc_gid_choose(entries, len);
    ucs_free(entries);
    if (chosen < 0) {
        ucs_error("gpumem_rc: %s:%u has no RoCE GID (no IP address on its "
                  "netdev?)", iface->md->domain.name, iface->port_num);
        return UCS_ERR_NO_DEVICE;
    }

    iface->gid_index = chosen;
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_rc_iface_port_init(uct_gpumem_rc_iface_t *iface,
                              const uct_gpumem_rc_iface_config_t *config)
{
    struct ibv_context *context = iface->md->context;
    union ibv_gid gid;
    ucs_status_t status;
    int ret;

    ret = ibv_query_port(context, iface->port_num, &iface->port_attr);
    if (ret != 0) {
        ucs_error("gpumem_rc: %s:%u: ibv_query_port() failed: %s",
                  iface->md->domain.name, iface->port_num, strerror(ret));
        return UCS_ERR_NO_DEVICE;
    }

    if (!uct_gpumem_rc_port_usable(&iface->port_attr)) {
        ucs_error("gpumem_rc: %s:%u is not active",
                  iface->md->domain.name, iface->port_num);
        return UCS_ERR_NO_DEVICE;
    }

    iface->dev_addr.is_eth = (iface->port_attr.link_layer ==
                              IBV_LINK_LAYER_ETHERNET);
    if (iface->dev_addr.is_eth) {
        status = uct_gpumem_rc_iface_choose_gid(iface, config);
        if (status != UCS_OK) {
            return status;
        }
        iface->dev_addr.lid = 0;
    } else {
        iface->gid_index    = (config->gid_index == UCS_ULUNITS_AUTO) ? 0 :
                              config->gid_index;
        iface->dev_addr.lid = iface->port_attr.lid;
    }

    ret = ibv_query_gid(context, iface->port_num, iface->gid_index, &gid);
    if (ret != 0) {
        ucs_error("gpumem_rc: %s:%u: ibv_query_gid(%u) failed: %s",
                  iface->md->domain.name, iface->port_num, iface->gid_index,
                  strerror(ret));
        return UCS_ERR_NO_DEVICE;
    }
    memcpy(iface->dev_addr.gid, gid.raw, sizeof(gid.raw));

    iface->path_mtu = (config->path_mtu == 0) ?
                      iface->port_attr.active_mtu :
                      ucs_min((enum ibv_mtu)config->path_mtu,
                              iface->port_attr.active_mtu);
    return UCS_OK;
}

/* What the interface is opened on: a port of this domain's device, in
 * device mode, with an AM alignment it can keep */
static ucs_status_t
uct_gpumem_rc_iface_check_params(uct_gpumem_rc_iface_t *iface,
                                 const uct_iface_params_t *params)
{
    ucs_status_t status;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("gpumem_rc: opens on a device port only");
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_gpumem_rc_iface_parse_port(iface->md,
                                            params->mode.device.dev_name,
                                            &iface->port_num);
    if (status != UCS_OK) {
        return status;
    }

    return uct_gpumem_iface_check_am_alignment(params, UCT_GPUMEM_RC_TL_NAME);
}

/* The most times a queue pair sends again: 3 bits of its attributes */
#define UCT_GPUMEM_RC_RETRY_MAX  7

/* Settings no device could take */
/* A flush after writes in any order reads their last byte back from the
 * peer (uct_gpumem_rc_ep_read_back): the peers, configured alike, must let
 * it. Less than remote is said, since UCP's protocols need it. */
static ucs_status_t
uct_gpumem_rc_iface_check_peer_access(const uct_gpumem_rc_iface_t *iface,
                                      const uct_gpumem_rc_iface_config_t
                                      *config)
{
    const char *name = uct_gpumem_ib_access_names[config->peer_access];

    if ((iface->md->order == GPUMEM_REG_ORDER_ANY) &&
        (config->peer_access != GPUMEM_REG_ACCESS_REMOTE)) {
        ucs_error("gpumem_rc: PEER_ACCESS=%s refuses the reads by which a "
                  "peer flushes its writes in any order "
                  "(UCX_GPUMEM_IB_ORDER=any_order): it takes remote", name);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->peer_access != GPUMEM_REG_ACCESS_REMOTE) {
        ucs_diag("gpumem_rc: PEER_ACCESS=%s: a peer's RDMA %s of this "
                 "process's memory fails its endpoint; UCP's protocols take "
                 "remote", name,
                 (config->peer_access == GPUMEM_REG_ACCESS_LOCAL) ?
                 "READ or WRITE" : "READ");
    }
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_rc_iface_check_config(const uct_gpumem_rc_iface_config_t *config)
{
    if ((config->tx_queue_len == 0) || (config->cq_len == 0) ||
        (config->seg_size == 0) || (config->tx_mp.max_bufs == 0)) {
        ucs_error("gpumem_rc: TX_QUEUE_LEN, CQ_LEN, SEG_SIZE and TX_MAX_BUFS "
                  "must not be 0");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->retry_count > UCT_GPUMEM_RC_RETRY_MAX) ||
        (config->rnr_retry_count > UCT_GPUMEM_RC_RETRY_MAX)) {
        ucs_error("gpumem_rc: RETRY_COUNT is %u and RNR_RETRY_COUNT %u, each "
                  "at most %u", config->retry_count, config->rnr_retry_count,
                  UCT_GPUMEM_RC_RETRY_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->hop_limit > UINT8_MAX) {
        ucs_error("gpumem_rc: HOP_LIMIT is %u, at most %u",
                  config->hop_limit, UINT8_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->sl > UCT_GPUMEM_RC_SL_MAX) {
        ucs_error("gpumem_rc: SL is %u, at most %u", config->sl,
                  UCT_GPUMEM_RC_SL_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->pkey != UCS_HEXUNITS_AUTO) &&
        (config->pkey > UCT_GPUMEM_RC_PKEY_PARTITION)) {
        ucs_error("gpumem_rc: PKEY is 0x%lx, at most 0x%x", config->pkey,
                  UCT_GPUMEM_RC_PKEY_PARTITION);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

/* The index of the port's P_Key of the partition PKEY names: its full
 * member, else its limited one */
static ucs_status_t
uct_gpumem_rc_iface_choose_pkey(uct_gpumem_rc_iface_t *iface,
                                const uct_gpumem_rc_iface_config_t *config)
{
    int limited = -1;
    __be16 raw;
    uint16_t pkey;
    int i;

    if (config->pkey == UCS_HEXUNITS_AUTO) {
        iface->config.pkey_index = 0;
        return UCS_OK;
    }

    for (i = 0; i < iface->port_attr.pkey_tbl_len; ++i) {
        if (ibv_query_pkey(iface->md->context, iface->port_num, i,
                           &raw) != 0) {
            continue;
        }

        pkey = be16toh(raw);
        if ((pkey & UCT_GPUMEM_RC_PKEY_PARTITION) != config->pkey) {
            continue;
        }

        if (pkey & UCT_GPUMEM_RC_PKEY_FULL_MEMBER) {
            iface->config.pkey_index = i;
            return UCS_OK;
        }

        if (limited < 0) {
            limited = i;
        }
    }

    if (limited < 0) {
        ucs_error("gpumem_rc: %s:%u has no P_Key of partition 0x%lx (PKEY) "
                  "among its %u", iface->md->domain.name, iface->port_num,
                  config->pkey, iface->port_attr.pkey_tbl_len);
        return UCS_ERR_INVALID_PARAM;
    }

    iface->config.pkey_index = limited;
    return UCS_OK;
}

/* What the queue pairs are made with: sizes as the device allows them, and
 * the times, retries and path of their connections */
static ucs_status_t
uct_gpumem_rc_iface_qp_config_init(uct_gpumem_rc_iface_t *iface,
                                   const uct_gpumem_rc_iface_config_t *config,
                                   const struct ibv_device_attr *dev_attr)
{
    iface->max_sge                   = ucs_min(dev_attr->max_sge,
                                               UCT_GPUMEM_RC_SGE_MAX);
    if (config->max_sge != UCS_ULUNITS_AUTO) {
        iface->max_sge               = ucs_max(ucs_min(iface->max_sge,
                                                       config->max_sge), 1);
    }
    iface->config.tx_queue_len       = ucs_min(config->tx_queue_len,
                                               (unsigned)dev_attr->max_qp_wr);
    iface->config.max_poll           = ucs_max(config->max_poll, 1);
    iface->config.qp_access_flags    = uct_gpumem_ib_qp_access_flags(
                                               config->peer_access);
    iface->config.seg_size           = config->seg_size;
    iface->config.timeout            = uct_gpumem_rc_timeout_exp(
                                               config->timeout);
    iface->config.retry_count        = config->retry_count;
    iface->config.rnr_timer          = uct_gpumem_rc_rnr_timer(
                                               config->rnr_timeout);
    iface->config.rnr_retry          = config->rnr_retry_count;
    iface->config.hop_limit          = config->hop_limit;
    iface->config.sl                 = config->sl;
    iface->config.max_rd_atomic      = ucs_min(config->max_rd_atomic,
                                         dev_attr->max_qp_init_rd_atom);
    iface->config.max_dest_rd_atomic = ucs_min(config->max_rd_atomic,
                                               dev_attr->max_qp_rd_atom);
    return uct_gpumem_rc_iface_choose_pkey(iface, config);
}

/* What UCP expects of the port: its rate and latency, less the farther the
 * NIC from the process's GPU */
static void
uct_gpumem_rc_iface_perf_init(uct_gpumem_rc_iface_t *iface,
                              const uct_gpumem_rc_iface_config_t *config)
{
    int bw_auto = UCS_CONFIG_DBL_IS_AUTO(config->bandwidth);
    double bandwidth;

    iface->config.perf.latency    = config->latency;
    iface->config.perf.am_latency = 0;
    iface->config.perf.overhead   = config->overhead;
    iface->config.perf.shared    = 0;
    iface->config.perf.bandwidth = bw_auto ?
                                   uct_gpumem_rc_port_bandwidth(
                                           iface->port_attr.active_width,
                                           iface->port_attr.active_speed) :
                                   config->bandwidth;
    if (iface->config.perf.bandwidth <= 0) {
        /* A port that reports no known rate: as an SDR 1x one */
        iface->config.perf.bandwidth = uct_gpumem_rc_port_bandwidth(1, 1);
    }

    /* So that each GPU's bytes go by its nearest NIC; a configured
     * bandwidth stays as it is */
    uct_gpumem_ib_place_estimates(&iface->md->place,
                                  iface->config.perf.bandwidth,
                                  iface->config.perf.latency,
                                  bw_auto ? &iface->config.perf.bandwidth :
                                            &bandwidth,
                                  &iface->config.perf.latency);
}

static ucs_status_t
uct_gpumem_rc_iface_cq_create(uct_gpumem_rc_iface_t *iface,
                              const uct_gpumem_rc_iface_config_t *config,
                              const struct ibv_device_attr *dev_attr)
{
    unsigned cq_len = ucs_min(config->cq_len, (unsigned)dev_attr->max_cqe);

    iface->cq = ibv_create_cq(iface->md->context, cq_len, NULL, NULL, 0);
    if (iface->cq == NULL) {
        ucs_error("gpumem_rc: %s: ibv_create_cq(%u) failed: %s",
                  iface->md->domain.name, cq_len, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    iface->cq_available = cq_len;
    return UCS_OK;
}

/* The operations in flight, and the bounce buffers of bcopy in chunks that
 * UCX allocates and the gpumem_ib domain registers (UCX_GPUMEM_RC_TX_*) */
static ucs_status_t
uct_gpumem_rc_iface_mpools_init(uct_gpumem_rc_iface_t *iface,
                                const uct_gpumem_rc_iface_config_t *config)
{
    uct_iface_mpool_config_t tx_mp = config->tx_mp;
    ucs_status_t status;

    /* A chunk holds no more buffers than the pool may (ucs_mpool_init()
     * refuses more) */
    if (tx_mp.bufs_grow == 0) {
        tx_mp.bufs_grow = UCT_GPUMEM_RC_TX_BUFS_GROW;
    }
    tx_mp.bufs_grow = ucs_min(tx_mp.bufs_grow, tx_mp.max_bufs);

    status = uct_gpumem_mpool_init(&iface->op_mp, 0,
                                   sizeof(uct_gpumem_rc_op_t), 0,
                                   UCS_SYS_CACHE_LINE_SIZE, 256, UINT_MAX,
                                   &uct_gpumem_rc_op_mpool_ops,
                                   "gpumem_rc_ops");
    if (status != UCS_OK) {
        return status;
    }

    status = uct_iface_mpool_init(&iface->super, &iface->desc_mp,
                                  sizeof(uct_gpumem_rc_desc_t) +
                                  iface->config.seg_size,
                                  sizeof(uct_gpumem_rc_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE, &tx_mp,
                                  tx_mp.bufs_grow,
                                  uct_gpumem_rc_desc_init,
                                  "gpumem_rc_descs");
    if (status != UCS_OK) {
        ucs_mpool_cleanup(&iface->op_mp, 1);
        return status;
    }

    return UCS_OK;
}

static void uct_gpumem_rc_iface_mpools_cleanup(uct_gpumem_rc_iface_t *iface)
{
    ucs_mpool_cleanup(&iface->desc_mp, 1);
    ucs_mpool_cleanup(&iface->op_mp, 1);
}

/* A queue pair on the interface's completion queue; NULL and errno where
 * the device refuses it */
static struct ibv_qp *
uct_gpumem_rc_iface_qp_new(uct_gpumem_rc_iface_t *iface, unsigned max_inline,
                           struct ibv_qp_cap *cap_p)
{
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp *qp;

    memset(&init_attr, 0, sizeof(init_attr));
    init_attr.send_cq             = iface->cq;
    init_attr.recv_cq             = iface->cq;
    init_attr.qp_type             = IBV_QPT_RC;
    init_attr.sq_sig_all          = 1;
    init_attr.cap.max_send_wr     = iface->config.tx_queue_len;
    init_attr.cap.max_send_sge    = iface->max_sge;
    init_attr.cap.max_recv_wr     = 1;
    init_attr.cap.max_recv_sge    = 1;
    init_attr.cap.max_inline_data = max_inline;

    qp = ibv_create_qp(iface->md->pd, &init_attr);
    if (qp != NULL) {
        *cap_p = init_attr.cap;
    }
    return qp;
}

ucs_status_t uct_gpumem_rc_iface_qp_create(uct_gpumem_rc_iface_t *iface,
                                           unsigned max_inline,
                                           struct ibv_qp **qp_p,
                                           struct ibv_qp_cap *cap_p)
{
    struct ibv_qp *qp;

    qp = uct_gpumem_rc_iface_qp_new(iface, max_inline, cap_p);
    if (qp == NULL) {
        ucs_error("gpumem_rc: %s:%u: ibv_create_qp(send_wr=%u, sge=%u, "
                  "inline=%u) failed: %s", iface->md->domain.name,
                  iface->port_num, iface->config.tx_queue_len, iface->max_sge,
                  max_inline, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    *qp_p = qp;
    return UCS_OK;
}

/* The bytes of put short: MAX_INLINE, or what the device's queue pairs take
 * where that is less. The device tells only by creating one (no attribute
 * of ibv_query_device() says it), so a queue pair is made and destroyed
 * here, asking less while the device refuses. */
static ucs_status_t
uct_gpumem_rc_iface_inline_init(uct_gpumem_rc_iface_t *iface,
                                const uct_gpumem_rc_iface_config_t *config)
{
    unsigned max_inline = config->max_inline;
    struct ibv_qp_cap cap;
    struct ibv_qp *qp;
    int ret;

    while ((qp = uct_gpumem_rc_iface_qp_new(iface, max_inline,
                                            &cap)) == NULL) {
        /* A device refuses an inline size it cannot take with EINVAL; any
         * other failure is not the size's */
        if ((max_inline == 0) || (errno != EINVAL)) {
            ucs_error("gpumem_rc: %s:%u: ibv_create_qp(send_wr=%u, sge=%u) "
                      "failed: %s", iface->md->domain.name, iface->port_num,
                      iface->config.tx_queue_len, iface->max_sge,
                      strerror(errno));
            return UCS_ERR_IO_ERROR;
        }

        ucs_debug("gpumem_rc: %s:%u refuses queue pairs of %u inline bytes: "
                  "%s", iface->md->domain.name, iface->port_num, max_inline,
                  strerror(errno));
        max_inline /= 2;
    }

    ret = ibv_destroy_qp(qp);
    if (ret != 0) {
        ucs_warn("gpumem_rc: ibv_destroy_qp(0x%x) failed: %s", qp->qp_num,
                 strerror(ret));
    }

    iface->config.max_inline = ucs_min(max_inline, cap.max_inline_data);
    if (iface->config.max_inline < config->max_inline) {
        ucs_diag("gpumem_rc: %s:%u: MAX_INLINE is %u, the device's queue "
                  "pairs take %u", iface->md->domain.name, iface->port_num,
                  config->max_inline, iface->config.max_inline);
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_gpumem_rc_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gpumem_rc_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpumem_rc_iface_config_t);
    struct ibv_device_attr dev_attr;
    ucs_status_t status;
    int ret;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_gpumem_rc_iface_ops,
                              &uct_gpumem_rc_iface_internal_ops, md, worker,
                              params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_GPUMEM_RC_TL_NAME));

    self->md = ucs_derived_of(md, uct_gpumem_ib_md_t);
    ucs_list_head_init(&self->eps);
    ucs_list_head_init(&self->pending_eps);

    status = uct_gpumem_rc_iface_check_params(self, params);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_iface_check_peer_access(self, config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_iface_port_init(self, config);
    if (status != UCS_OK) {
        return status;
    }

    ret = ibv_query_device(self->md->context, &dev_attr);
    if (ret != 0) {
        ucs_error("gpumem_rc: %s: ibv_query_device() failed: %s",
                  self->md->domain.name, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    status = uct_gpumem_rc_iface_qp_config_init(self, config, &dev_attr);
    if (status != UCS_OK) {
        return status;
    }

    uct_gpumem_rc_iface_perf_init(self, config);

    status = uct_gpumem_rc_iface_cq_create(self, config, &dev_attr);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_iface_mpools_init(self, config);
    if (status != UCS_OK) {
        goto err_destroy_cq;
    }

    status = uct_gpumem_rc_iface_inline_init(self, config);
    if (status != UCS_OK) {
        goto err_cleanup_mpools;
    }

    ucs_debug("gpumem_rc: iface %p on %s:%u, GID index %u, path MTU %u, "
              "inline %u, %.0f MB/s, %.0f ns", self, self->md->domain.name,
              self->port_num, self->gid_index, 128u << self->path_mtu,
              self->config.max_inline,
              self->config.perf.bandwidth / UCS_MBYTE,
              self->config.perf.latency * 1e9);
    return UCS_OK;

err_cleanup_mpools:
    uct_gpumem_rc_iface_mpools_cleanup(self);
err_destroy_cq:
    ibv_destroy_cq(self->cq);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_rc_iface_t)
{
    uct_gpumem_rc_ep_t *ep, *tmp;
    int ret;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* Endpoints destroyed with work requests in flight, and any the user
     * left: their queue pairs go before the completion queue */
    ucs_list_for_each_safe(ep, tmp, &self->eps, list) {
        if (!ep->destroyed) {
            ucs_debug("gpumem_rc: iface %p closes with ep %p", self, ep);
        }
        uct_gpumem_rc_ep_free(ep);
    }

    ret = ibv_destroy_cq(self->cq);
    if (ret != 0) {
        ucs_warn("gpumem_rc: ibv_destroy_cq() failed: %s", strerror(ret));
    }
    uct_gpumem_rc_iface_mpools_cleanup(self);
}

UCS_CLASS_DEFINE(uct_gpumem_rc_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpumem_rc_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpumem_rc_iface_t, uct_iface_t);


/* Registered with the gpumem_ib component when the plugin loads
 * (gpumem_component.c) */
uct_tl_t uct_gpumem_rc_tl = {
    .name          = UCT_GPUMEM_RC_TL_NAME,
    .query_devices = uct_gpumem_rc_query_devices,
    .iface_open    = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_rc_iface_t),
    .config        = {
        .name      = UCT_GPUMEM_RC_TL_NAME " transport",
        .prefix    = "GPUMEM_RC_",
        .table     = uct_gpumem_rc_iface_config_table,
        .size      = sizeof(uct_gpumem_rc_iface_config_t)
    }
};
