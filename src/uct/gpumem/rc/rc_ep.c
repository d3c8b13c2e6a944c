/**
 * gpumem RDMA transport: the endpoint: its queue pair's life (create,
 * connect, fail, destroy with work requests in flight), RDMA WRITE and READ
 * of registered host and device memory, flush, fence and pending requests.
 *
 * Every work request is signaled, and the completions of one queue pair come
 * in the order of posting, so an endpoint gives its completions, flushes
 * included, in that order. A failed work request fails the queue pair: the
 * first failure's status is the endpoint's, given to every operation after
 * it, to every later call, and once to the interface's error handler.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_ep.h"
#include <uct/gpumem/compat/gpumem_compat.h>

#include <uct/base/uct_iov.inl>
#include <ucs/arch/atomic.h>
#include <ucs/async/async.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <errno.h>
#include <string.h>


ucs_status_t uct_gpumem_rc_wc_status(enum ibv_wc_status wc_status)
{
    switch (wc_status) {
    case IBV_WC_SUCCESS:
        return UCS_OK;
    case IBV_WC_REM_ACCESS_ERR:
        return UCS_ERR_INVALID_ADDR;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case IBV_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_MW_BIND_ERR:
        return UCS_ERR_INVALID_PARAM;
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_ABORT_ERR:
        return UCS_ERR_CONNECTION_RESET;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* Every endpoint's posted bytes, for uct_gpumem_rc_bytes() */
static uint64_t uct_gpumem_rc_posted_bytes;

uint64_t uct_gpumem_rc_bytes(void)
{
    return ucs_atomic_fadd64(&uct_gpumem_rc_posted_bytes, 0);
}

static const char *uct_gpumem_rc_opcode_name(enum ibv_wr_opcode opcode)
{
    return (opcode == IBV_WR_RDMA_READ) ? "RDMA READ" : "RDMA WRITE";
}

static uct_gpumem_rc_iface_t *uct_gpumem_rc_ep_iface(uct_gpumem_rc_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_gpumem_rc_iface_t);
}

/* Flushes what is in flight with IBV_WC_WR_FLUSH_ERR */
static void uct_gpumem_rc_ep_qp_to_error(uct_gpumem_rc_ep_t *ep)
{
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    ret           = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE);
    if (ret != 0) {
        ucs_warn("gpumem_rc: ep %p: moving QP 0x%x to the error state "
                 "failed: %s", ep, ep->qp->qp_num, strerror(ret));
    }
}

static UCS_CLASS_INIT_FUNC(uct_gpumem_rc_ep_t, const uct_ep_params_t *params)
{
    uct_gpumem_rc_iface_t *iface = ucs_derived_of(params->iface,
                                                  uct_gpumem_rc_iface_t);
    struct ibv_qp_attr attr;
    struct ibv_qp_cap cap;
    ucs_status_t status;
    int ret;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (params->field_mask & (UCT_EP_PARAM_FIELD_DEV_ADDR   |
                              UCT_EP_PARAM_FIELD_IFACE_ADDR |
                              UCT_EP_PARAM_FIELD_SOCKADDR   |
                              UCT_EP_PARAM_FIELD_CM)) {
        ucs_error("gpumem_rc: endpoints connect to endpoints only "
                  "(uct_ep_connect_to_ep)");
        return UCS_ERR_UNSUPPORTED;
    }

    /* As the interface's probe found the device to take them */
    status = uct_gpumem_rc_iface_qp_create(iface, iface->config.max_inline,
                                           &self->qp, &cap);
    if (status != UCS_OK) {
        return status;
    }
    ucs_assert(cap.max_inline_data >= iface->config.max_inline);

    /* The queue pair lets the peer do what PEER_ACCESS says; each region
     * may allow it less */
    memset(&attr, 0, sizeof(attr));
    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = iface->config.pkey_index;
    attr.port_num        = iface->port_num;
    attr.qp_access_flags = iface->config.qp_access_flags;
    ret = ibv_modify_qp(self->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                        IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (ret != 0) {
        ucs_error("gpumem_rc: QP 0x%x to INIT failed: %s", self->qp->qp_num,
                  strerror(ret));
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_qp;
    }

    self->connected    = 0;
    self->sq_available = iface->config.tx_queue_len;
    self->posted       = 0;
    self->fence        = 0;
    self->writes_unread = 0;
    self->last_write   = 0;
    self->last_rkey    = 0;
    self->read_backs   = 0;
    self->status       = UCS_OK;
    self->failure_said = 0;
    self->destroyed    = 0;
    self->in_progress  = 0;
    ucs_queue_head_init(&self->ops);
    ucs_queue_head_init(&self->pending);
    ucs_list_head_init(&self->pending_link);
    UCS_ASYNC_BLOCK(iface->super.worker->async);
    ucs_list_add_tail(&iface->eps, &self->list);
    UCS_ASYNC_UNBLOCK(iface->super.worker->async);
    ucs_debug("gpumem_rc: ep %p: QP 0x%x on %s:%u", self, self->qp->qp_num,
              iface->md->domain.name, iface->port_num);
    return UCS_OK;

err_destroy_qp:
    ibv_destroy_qp(self->qp);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_rc_ep_t)
{
    uct_gpumem_rc_op_t *op;
    int ret;

    ret = ibv_destroy_qp(self->qp);
    if (ret != 0) {
        ucs_warn("gpumem_rc: ibv_destroy_qp(0x%x) failed: %s",
                 self->qp->qp_num, strerror(ret));
    }

    /* Left only where the interface closes with work requests in flight */
    ucs_queue_for_each_extract(op, &self->ops, queue, 1) {
        if (op->desc != NULL) {
            ucs_mpool_put(op->desc);
        }
        ucs_mpool_put(op);
    }

    ucs_list_del(&self->pending_link);
    UCS_ASYNC_BLOCK(uct_gpumem_rc_ep_iface(self)->super.worker->async);
    ucs_list_del(&self->list);
    UCS_ASYNC_UNBLOCK(uct_gpumem_rc_ep_iface(self)->super.worker->async);
}

UCS_CLASS_DEFINE(uct_gpumem_rc_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gpumem_rc_ep_t, uct_ep_t, const uct_ep_params_t*);


void uct_gpumem_rc_ep_free(uct_gpumem_rc_ep_t *ep)
{
    UCS_CLASS_DELETE(uct_gpumem_rc_ep_t, ep);
}

void uct_gpumem_rc_ep_reap(uct_gpumem_rc_ep_t *ep)
{
    if (ep->destroyed && (ep->posted == 0) && (ep->in_progress == 0)) {
        uct_gpumem_rc_ep_free(ep);
    }
}

/* The user is done with the endpoint: it goes now, or, with work requests
 * in flight, once their completions (flushed at once) are polled, since a
 * queue pair's completions may remain in the shared queue after it is
 * destroyed. Completions the user asked for are no longer called. */
void uct_gpumem_rc_ep_destroy(uct_ep_h tl_ep)
{
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_op_t *op;

    if (!ucs_queue_is_empty(&ep->pending)) {
        ucs_debug("gpumem_rc: ep %p destroyed with pending requests", ep);
        ucs_queue_head_init(&ep->pending);
    }
    ucs_list_del(&ep->pending_link);
    ucs_list_head_init(&ep->pending_link);

    ucs_queue_for_each(op, &ep->ops, queue) {
        op->comp      = NULL;
        op->unpack_cb = NULL;
    }

    ep->destroyed = 1;
    if (ep->posted > 0) {
        ucs_debug("gpumem_rc: ep %p destroyed with %u work requests in "
                  "flight", ep, ep->posted);
        uct_gpumem_rc_ep_qp_to_error(ep);
    }

    uct_gpumem_rc_ep_reap(ep);
}

ucs_status_t uct_gpumem_rc_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    uct_gpumem_rc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    uct_gpumem_rc_ep_addr_t ep_addr;

    ep_addr.qp_num   = ep->qp->qp_num;
    ep_addr.path_mtu = iface->path_mtu;
    uct_gpumem_rc_ep_addr_pack(&ep_addr, addr);
    return UCS_OK;
}

static ucs_status_t uct_gpumem_rc_ep_to_rtr(uct_gpumem_rc_ep_t *ep,
                                            const uct_gpumem_rc_dev_addr_t *dev,
                                            const uct_gpumem_rc_ep_addr_t *peer)
{
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state              = IBV_QPS_RTR;
    attr.path_mtu              = ucs_min(iface->path_mtu,
                                         (enum ibv_mtu)peer->path_mtu);
    attr.dest_qp_num           = peer->qp_num;
    attr.rq_psn                = 0;
    attr.max_dest_rd_atomic    = iface->config.max_dest_rd_atomic;
    attr.min_rnr_timer         = iface->config.rnr_timer;
    attr.ah_attr.port_num      = iface->port_num;
    attr.ah_attr.sl            = iface->config.sl;
    if (dev->is_eth) {
        attr.ah_attr.is_global      = 1;
        attr.ah_attr.grh.sgid_index = iface->gid_index;
        attr.ah_attr.grh.hop_limit  = iface->config.hop_limit;
        memcpy(attr.ah_attr.grh.dgid.raw, dev->gid, sizeof(dev->gid));
    } else {
        attr.ah_attr.dlid           = dev->lid;
    }

    ret = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_AV |
                        IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (ret != 0) {
        ucs_error("gpumem_rc: QP 0x%x to RTR (peer QP 0x%x) failed: %s",
                  ep->qp->qp_num, peer->qp_num, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

static ucs_status_t uct_gpumem_rc_ep_to_rts(uct_gpumem_rc_ep_t *ep)
{
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTS;
    attr.sq_psn        = 0;
    attr.timeout       = iface->config.timeout;
    attr.retry_cnt     = iface->config.retry_count;
    attr.rnr_retry     = iface->config.rnr_retry;
    attr.max_rd_atomic = iface->config.max_rd_atomic;
    ret = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN |
                        IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    if (ret != 0) {
        ucs_error("gpumem_rc: QP 0x%x to RTS failed: %s", ep->qp->qp_num,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

ucs_status_t uct_gpumem_rc_ep_connect_to_ep(uct_ep_h tl_ep,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_ep_addr_t *ep_addr)
{
    uct_gpumem_rc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    uct_gpumem_rc_dev_addr_t dev;
    uct_gpumem_rc_ep_addr_t peer;
    ucs_status_t status;

    if (ep->connected) {
        ucs_error("gpumem_rc: ep %p is connected already", ep);
        return UCS_ERR_ALREADY_EXISTS;
    }

    status = uct_gpumem_rc_dev_addr_unpack(dev_addr, UCS_LOG_LEVEL_ERROR,
                                           &dev);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_addr_unpack(ep_addr, &peer);
    if (status != UCS_OK) {
        return status;
    }

    if (dev.is_eth != iface->dev_addr.is_eth) {
        ucs_error("gpumem_rc: ep %p: the peer's port is %s, this one %s",
                  ep, dev.is_eth ? "Ethernet" : "InfiniBand",
                  iface->dev_addr.is_eth ? "Ethernet" : "InfiniBand");
        return UCS_ERR_UNREACHABLE;
    }

    status = uct_gpumem_rc_ep_to_rtr(ep, &dev, &peer);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_to_rts(ep);
    if (status != UCS_OK) {
        return status;
    }

    ep->connected   = 1;
    ep->peer_dev    = dev;
    ep->peer_qp_num = peer.qp_num;
    ucs_debug("gpumem_rc: ep %p: QP 0x%x connected to QP 0x%x", ep,
              ep->qp->qp_num, peer.qp_num);
    return UCS_OK;
}

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_IS_CONNECTED
int uct_gpumem_rc_ep_is_connected(const uct_ep_h tl_ep,
                                  const uct_ep_is_connected_params_t *params)
{
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_dev_addr_t dev;
    uct_gpumem_rc_ep_addr_t peer;

    if (!ep->connected) {
        return 0;
    }

    if ((params->field_mask & UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) &&
        ((uct_gpumem_rc_ep_addr_unpack(params->ep_addr, &peer) != UCS_OK) ||
         (peer.qp_num != ep->peer_qp_num))) {
        return 0;
    }

    if ((params->field_mask & UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) &&
        ((uct_gpumem_rc_dev_addr_unpack(params->device_addr,
                                        UCS_LOG_LEVEL_DEBUG, &dev) != UCS_OK) ||
         (dev.is_eth != ep->peer_dev.is_eth) ||
         (!dev.is_eth && (dev.lid != ep->peer_dev.lid)) ||
         (dev.is_eth &&
          memcmp(dev.gid, ep->peer_dev.gid, sizeof(dev.gid))))) {
        return 0;
    }

    return 1;
}
#endif

int uct_gpumem_rc_iface_has_resources(uct_gpumem_rc_iface_t *iface,
                                      uct_gpumem_rc_ep_t *ep)
{
    return (ep->sq_available > 0) && (iface->cq_available > 0) &&
           !ucs_mpool_is_empty(&iface->desc_mp);
}

/* The bytes of @a iov as scatter-gather entries: each in its memory handle's
 * registration */
static ucs_status_t uct_gpumem_rc_ep_sge(const uct_iov_t *iov, size_t iovcnt,
                                         struct ibv_sge *sge,
                                         int *num_sge_p, size_t *length_p)
{
    gpumem_reg_local_t local;
    gpumem_reg_view_t *view;
    ucs_status_t status;
    size_t i, length;
    int num_sge;

    num_sge = 0;
    length  = 0;
    for (i = 0; i < iovcnt; ++i) {
        if (uct_iov_get_length(&iov[i]) == 0) {
            continue;
        }

        if (iov[i].memh == UCT_MEM_HANDLE_NULL) {
            ucs_error("gpumem_rc: %zu bytes at %p have no memory handle: "
                      "register them with the gpumem_ib memory domain",
                      uct_iov_get_length(&iov[i]), iov[i].buffer);
            return UCS_ERR_INVALID_PARAM;
        }

        /* Bytes below the view wrap to an offset past it */
        view   = uct_gpumem_ib_memh_view(iov[i].memh);
        status = gpumem_reg_view_local(view,
                                       (uintptr_t)iov[i].buffer -
                                       view->address,
                                       uct_iov_get_length(&iov[i]), &local);
        if (status != UCS_OK) {
            return status;
        }

        sge[num_sge].addr   = local.address;
        sge[num_sge].length = local.length;
        sge[num_sge].lkey   = local.lkey;
        length             += local.length;
        ++num_sge;
    }

    *num_sge_p = num_sge;
    *length_p  = length;
    return UCS_OK;
}

/* The peer's key covers [remote_addr, +length): a slice of a registration
 * is all that its holder may reach, though the peer's device would let it
 * reach the whole registration. Zero bytes reach nothing: any key will do,
 * UCT_INVALID_RKEY too (UCX's own tests give it with zero-length buffers),
 * and the caller posts nothing. */
static ucs_status_t
uct_gpumem_rc_ep_check_remote(const gpumem_reg_remote_view_t *remote,
                              uint64_t remote_addr, size_t length)
{
    uint64_t offset;

    if (length == 0) {
        return UCS_OK;
    }

    /* Neither UCT_INVALID_RKEY nor no key at all: a key rkey_unpack gave */
    if ((remote == NULL) || ((uct_rkey_t)remote == UCT_INVALID_RKEY)) {
        ucs_error("gpumem_rc: an operation on [0x%" PRIx64 ", +%zu) needs "
                  "the peer's remote key", remote_addr, length);
        return UCS_ERR_INVALID_PARAM;
    }

    offset = remote_addr - remote->address;
    if ((remote_addr >= remote->address) && (offset <= remote->length) &&
        (length <= (remote->length - offset))) {
        return UCS_OK;
    }

    ucs_error("gpumem_rc: [0x%" PRIx64 ", +%zu) lies outside the peer's "
              "key [0x%" PRIx64 ", +%" PRIu64 ") on %s", remote_addr, length,
              remote->address, remote->length, remote->device_name);
    return UCS_ERR_INVALID_ADDR;
}

/* Whether @a ep may post now: connected, not failed, room in its queue and
 * in the completion queue */
static ucs_status_t uct_gpumem_rc_ep_can_post(uct_gpumem_rc_iface_t *iface,
                                              uct_gpumem_rc_ep_t *ep)
{
    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }

    if (ucs_unlikely(!ep->connected)) {
        ucs_error("gpumem_rc: ep %p is not connected", ep);
        return UCS_ERR_NOT_CONNECTED;
    }

    if (!uct_gpumem_rc_iface_has_resources(iface, ep)) {
        UCS_STATS_UPDATE_COUNTER(iface->super.stats, UCT_IFACE_STAT_TX_NO_DESC,
                                 1);
        return UCS_ERR_NO_RESOURCE;
    }

    return UCS_OK;
}

static uct_gpumem_rc_op_t *
uct_gpumem_rc_ep_op_get(uct_gpumem_rc_iface_t *iface, uct_gpumem_rc_ep_t *ep,
                        enum ibv_wr_opcode opcode, uint64_t remote_addr,
                        size_t length, uint32_t rkey, uct_completion_t *comp)
{
    uct_gpumem_rc_op_t *op = ucs_mpool_get(&iface->op_mp);

    if (op == NULL) {
        ucs_error("gpumem_rc: failed to allocate an operation");
        return NULL;
    }

    op->ep          = ep;
    op->comp        = comp;
    op->posted      = 1;
    op->done        = 0;
    op->status      = UCS_INPROGRESS;
    op->opcode      = opcode;
    op->remote_addr = remote_addr;
    op->length      = length;
    op->rkey        = rkey;
    op->desc        = NULL;
    op->unpack_cb   = NULL;
    op->unpack_arg  = NULL;
    return op;
}

/* Post the work request of @a op; on failure @a op (and its bounce buffer)
 * go back */
static ucs_status_t uct_gpumem_rc_ep_post(uct_gpumem_rc_iface_t *iface,
                                          uct_gpumem_rc_ep_t *ep,
                                          uct_gpumem_rc_op_t *op,
                                          struct ibv_sge *sge, int num_sge,
                                          int send_flags)
{
    struct ibv_send_wr wr, *bad_wr;
    int ret;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = (uintptr_t)op;
    wr.sg_list             = sge;
    wr.num_sge             = num_sge;
    wr.opcode              = op->opcode;
    wr.send_flags          = IBV_SEND_SIGNALED | send_flags |
                             (ep->fence ? IBV_SEND_FENCE : 0);
    wr.wr.rdma.remote_addr = op->remote_addr;
    wr.wr.rdma.rkey        = op->rkey;

    ret = ibv_post_send(ep->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_error("gpumem_rc: ep %p: posting %s of %zu bytes on QP 0x%x "
                  "failed: %s", ep, uct_gpumem_rc_opcode_name(op->opcode),
                  op->length, ep->qp->qp_num, strerror(ret));
        if (op->desc != NULL) {
            ucs_mpool_put(op->desc);
        }
        ucs_mpool_put(op);
        return UCS_ERR_IO_ERROR;
    }

    ep->fence = 0;
    ucs_atomic_add64(&uct_gpumem_rc_posted_bytes, op->length);
    if ((op->opcode == IBV_WR_RDMA_WRITE) && (op->length > 0) &&
        (iface->md->order == GPUMEM_REG_ORDER_ANY)) {
        ep->writes_unread = 1;
        ep->last_write    = op->remote_addr + op->length - 1;
        ep->last_rkey     = op->rkey;
    }
    --ep->sq_available;
    --iface->cq_available;
    ++ep->posted;
    ucs_queue_push(&ep->ops, &op->queue);
    return UCS_OK;
}

static ucs_status_t uct_gpumem_rc_ep_zcopy(uct_gpumem_rc_ep_t *ep,
                                           enum ibv_wr_opcode opcode,
                                           const uct_iov_t *iov, size_t iovcnt,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp)
{
    uct_gpumem_rc_iface_t *iface           = uct_gpumem_rc_ep_iface(ep);
    const gpumem_reg_remote_view_t *remote = (const void*)rkey;
    struct ibv_sge sge[UCT_GPUMEM_RC_SGE_MAX];
    uct_gpumem_rc_op_t *op;
    ucs_status_t status;
    size_t length;
    int num_sge;

    status = uct_gpumem_rc_ep_can_post(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    if (ucs_unlikely(iovcnt > iface->max_sge)) {
        ucs_error("gpumem_rc: %zu scatter-gather entries, at most %u",
                  iovcnt, iface->max_sge);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gpumem_rc_ep_sge(iov, iovcnt, sge, &num_sge, &length);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_check_remote(remote, remote_addr, length);
    if ((status != UCS_OK) || (length == 0)) {
        return status;
    }

    op = uct_gpumem_rc_ep_op_get(iface, ep, opcode, remote_addr, length,
                                 remote->rkey, comp);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_rc_ep_post(iface, ep, op, sge, num_sge, 0);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

/* A bounce buffer: UCS_ERR_NO_RESOURCE while every one the pool may have
 * is in flight (pending requests wait for one), UCS_ERR_NO_MEMORY where the
 * pool could not grow (its allocator logged why) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_rc_ep_desc_get(uct_gpumem_rc_iface_t *iface,
                          uct_gpumem_rc_desc_t **desc_p)
{
    uct_gpumem_rc_desc_t *desc;

    UCT_TL_IFACE_GET_TX_DESC(&iface->super, &iface->desc_mp, desc,
                             goto err);
    *desc_p = desc;
    return UCS_OK;

err:
    return ucs_mpool_is_empty(&iface->desc_mp) ? UCS_ERR_NO_RESOURCE :
                                                 UCS_ERR_NO_MEMORY;
}

/* Post @a length bytes of the bounce buffer @a desc: an RDMA WRITE of what
 * was packed into it, or an RDMA READ into it, whose bytes @a unpack_cb
 * takes at completion; on failure @a desc goes back */
static ucs_status_t
uct_gpumem_rc_ep_post_desc(uct_gpumem_rc_iface_t *iface,
                           uct_gpumem_rc_ep_t *ep, enum ibv_wr_opcode opcode,
                           uct_gpumem_rc_desc_t *desc, size_t length,
                           uint64_t remote_addr, uint32_t rkey,
                           uct_unpack_callback_t unpack_cb, void *unpack_arg,
                           uct_completion_t *comp)
{
    uct_gpumem_rc_op_t *op;
    struct ibv_sge sge;

    op = uct_gpumem_rc_ep_op_get(iface, ep, opcode, remote_addr, length, rkey,
                                 comp);
    if (op == NULL) {
        ucs_mpool_put(desc);
        return UCS_ERR_NO_MEMORY;
    }

    op->desc       = desc;
    op->unpack_cb  = unpack_cb;
    op->unpack_arg = unpack_arg;
    sge.addr       = (uintptr_t)desc->data;
    sge.length     = length;
    sge.lkey       = desc->lkey;
    return uct_gpumem_rc_ep_post(iface, ep, op, &sge, 1, 0);
}

/* UCT's put short takes host memory: the device copies the bytes from the
 * request, which the CPU writes. UCP gives it host memory only (its
 * protocols choose put short by the memory type; UCX 1.13's first ones
 * take host memory for RMA: README, gpumem_rc), and device memory goes by
 * zero-copy, so the buffer is not looked up here. */
ucs_status_t uct_gpumem_rc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    uct_gpumem_rc_ep_t *ep                 = ucs_derived_of(tl_ep,
                                                            uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface           = uct_gpumem_rc_ep_iface(ep);
    const gpumem_reg_remote_view_t *remote = (const void*)rkey;
    uct_gpumem_rc_op_t *op;
    struct ibv_sge sge;
    ucs_status_t status;

    UCT_GPUMEM_CHECK_LENGTH(length, iface->config.max_inline, "put_short");

    status = uct_gpumem_rc_ep_can_post(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_check_remote(remote, remote_addr, length);
    if ((status != UCS_OK) || (length == 0)) {
        return status;
    }

    op = uct_gpumem_rc_ep_op_get(iface, ep, IBV_WR_RDMA_WRITE, remote_addr,
                                 length, remote->rkey, NULL);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    /* Inline: the device copies the bytes as the request is posted */
    sge.addr   = (uintptr_t)buffer;
    sge.length = length;
    sge.lkey   = 0;
    status     = uct_gpumem_rc_ep_post(iface, ep, op, &sge, 1,
                                       IBV_SEND_INLINE);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, SHORT, length);
    return status;
}

ssize_t uct_gpumem_rc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    uct_gpumem_rc_ep_t *ep                 = ucs_derived_of(tl_ep,
                                                            uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface           = uct_gpumem_rc_ep_iface(ep);
    const gpumem_reg_remote_view_t *remote = (const void*)rkey;
    uct_gpumem_rc_desc_t *desc;
    ucs_status_t status;
    size_t length;

    status = uct_gpumem_rc_ep_can_post(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_desc_get(iface, &desc);
    if (status != UCS_OK) {
        return status;
    }

    length = pack_cb(desc->data, arg);
    ucs_assert(length <= iface->config.seg_size);
    status = uct_gpumem_rc_ep_check_remote(remote, remote_addr, length);
    if ((status != UCS_OK) || (length == 0)) {
        ucs_mpool_put(desc);
        return (status != UCS_OK) ? status : 0;
    }

    status = uct_gpumem_rc_ep_post_desc(iface, ep, IBV_WR_RDMA_WRITE, desc,
                                        length, remote_addr, remote->rkey,
                                        NULL, NULL, NULL);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}

ucs_status_t uct_gpumem_rc_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_gpumem_rc_ep_t *ep                 = ucs_derived_of(tl_ep,
                                                            uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface           = uct_gpumem_rc_ep_iface(ep);
    const gpumem_reg_remote_view_t *remote = (const void*)rkey;
    uct_gpumem_rc_desc_t *desc;
    ucs_status_t status;

    UCT_GPUMEM_CHECK_LENGTH(length, iface->config.seg_size, "get_bcopy");

    status = uct_gpumem_rc_ep_can_post(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_check_remote(remote, remote_addr, length);
    if ((status != UCS_OK) || (length == 0)) {
        return status;
    }

    status = uct_gpumem_rc_ep_desc_get(iface, &desc);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_post_desc(iface, ep, IBV_WR_RDMA_READ, desc,
                                        length, remote_addr, remote->rkey,
                                        unpack_cb, arg, comp);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return UCS_INPROGRESS;
}

ucs_status_t uct_gpumem_rc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    ucs_status_t status;

    status = uct_gpumem_rc_ep_zcopy(ep, IBV_WR_RDMA_WRITE, iov, iovcnt,
                                    remote_addr, rkey, comp);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, ZCOPY,
                                 uct_iov_total_length(iov, iovcnt));
    return status;
}

ucs_status_t uct_gpumem_rc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    ucs_status_t status;

    status = uct_gpumem_rc_ep_zcopy(ep, IBV_WR_RDMA_READ, iov, iovcnt,
                                    remote_addr, rkey, comp);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, GET, ZCOPY,
                                 uct_iov_total_length(iov, iovcnt));
    return status;
}

/* A zero-length RDMA WRITE, which the peer's queue pair acknowledges
 * (IBTA C9-88: it names no memory, so no key is checked). Where the peer is
 * gone, the retries run out and the endpoint fails as any operation's
 * would, told to the error handler at progress. Work in flight tells as
 * much, so none is added to it, nor to an endpoint that failed already. */
ucs_status_t uct_gpumem_rc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t UCS_V_UNUSED *comp)
{
    uct_gpumem_rc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    uct_gpumem_rc_op_t *op;

    /* UCT's own check of the arguments differs between versions */
    UCT_GPUMEM_CHECK_PARAM(flags == 0, "gpumem_rc: ep_check flags 0x%x",
                           flags);

    if ((ep->status != UCS_OK) || !ep->connected || (ep->posted > 0) ||
        !uct_gpumem_rc_iface_has_resources(iface, ep)) {
        return UCS_OK;
    }

    op = uct_gpumem_rc_ep_op_get(iface, ep, IBV_WR_RDMA_WRITE, 0, 0, 0,
                                 NULL);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ucs_trace("gpumem_rc: ep %p: ep_check on QP 0x%x", ep, ep->qp->qp_num);
    return uct_gpumem_rc_ep_post(iface, ep, op, NULL, 0, 0);
}

/* The status of a completion: the work request's own, or, flushed after a
 * failure, the failure's */
static ucs_status_t uct_gpumem_rc_ep_wc_result(uct_gpumem_rc_ep_t *ep,
                                               uct_gpumem_rc_op_t *op,
                                               enum ibv_wc_status wc_status)
{
    ucs_status_t status = uct_gpumem_rc_wc_status(wc_status);

    if (wc_status == IBV_WC_SUCCESS) {
        return UCS_OK;
    }

    if ((wc_status == IBV_WC_WR_FLUSH_ERR) &&
        ((ep->status != UCS_OK) || ep->destroyed)) {
        /* Flushed after a failure, or by this side's own flush or
         * destroy */
        return (ep->status != UCS_OK) ? ep->status : status;
    }

    if (wc_status == IBV_WC_WR_FLUSH_ERR) {
        /* Neither: the device moved the queue pair to the error state by
         * itself, which it does, and tells this side of with no completion,
         * when it refuses a request of the peer (such as an RDMA READ of
         * memory deregistered since, which a peer's device sends again when
         * its answer was slow). That is the connection's end, not a cancel
         * of this side's own. */
        ep->status = UCS_ERR_CONNECTION_RESET;
        ucs_error("gpumem_rc: ep %p: QP 0x%x was moved to the error state by "
                  "the device, which refused a request of the peer to this "
                  "side (as an RDMA READ of memory deregistered since); %s of "
                  "%zu bytes to [0x%" PRIx64 ", rkey 0x%x) was flushed: %s",
                  ep, ep->qp->qp_num, uct_gpumem_rc_opcode_name(op->opcode),
                  op->length, op->remote_addr, op->rkey,
                  ucs_status_string(ep->status));
        return ep->status;
    }

    if (ep->status == UCS_OK) {
        ep->status = status;
        if (!ep->destroyed) {
            ucs_error("gpumem_rc: ep %p: %s of %zu bytes to [0x%" PRIx64
                      ", rkey 0x%x) on QP 0x%x failed: %s (%s)", ep,
                      uct_gpumem_rc_opcode_name(op->opcode), op->length,
                      op->remote_addr, op->rkey, ep->qp->qp_num,
                      ibv_wc_status_str(wc_status),
                      ucs_status_string(status));
        }
    }
    return ep->status;
}

void uct_gpumem_rc_ep_report(uct_gpumem_rc_iface_t *iface,
                             uct_gpumem_rc_ep_t *ep)
{
    if ((ep->status == UCS_OK) || ep->failure_said || ep->destroyed) {
        return;
    }

    ep->failure_said = 1;
    (void)uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                  ep->status);
}

void uct_gpumem_rc_ep_complete(uct_gpumem_rc_iface_t *iface,
                               uct_gpumem_rc_op_t *op,
                               enum ibv_wc_status wc_status)
{
    uct_gpumem_rc_ep_t *ep = op->ep;
    uct_gpumem_rc_op_t *head;
    uct_completion_t *comp;
    ucs_status_t status;

    ucs_assert(ep->posted > 0);
    ++iface->cq_available;
    ++ep->sq_available;
    --ep->posted;
    op->status = uct_gpumem_rc_ep_wc_result(ep, op, wc_status);
    op->done   = 1;

    /* Give every completion up to the first work request still in flight;
     * a callback may post, flush or destroy the endpoint */
    ++ep->in_progress;
    while (!ucs_queue_is_empty(&ep->ops)) {
        head = ucs_queue_head_elem_non_empty(&ep->ops, uct_gpumem_rc_op_t,
                                             queue);
        if (head->posted && !head->done) {
            break;
        }

        ucs_queue_pull_non_empty(&ep->ops);
        comp   = head->comp;
        status = head->posted ? head->status : ep->status;
        if (head->desc != NULL) {
            if ((head->unpack_cb != NULL) && (status == UCS_OK)) {
                head->unpack_cb(head->unpack_arg, head->desc->data,
                                head->length);
            }
            ucs_mpool_put(head->desc);
        }
        ucs_mpool_put(head);
        if (comp != NULL) {
            uct_invoke_completion(comp, status);
        }
    }

    uct_gpumem_rc_ep_report(iface, ep);
    --ep->in_progress;
    uct_gpumem_rc_ep_reap(ep);
}

ucs_status_t uct_gpumem_rc_ep_pending_add(uct_ep_h tl_ep,
                                          uct_pending_req_t *req,
                                          unsigned UCS_V_UNUSED flags)
{
    uct_gpumem_rc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);

    /* A failed endpoint answers every operation at once */
    if ((ep->status != UCS_OK) ||
        (ucs_queue_is_empty(&ep->pending) &&
         uct_gpumem_rc_iface_has_resources(iface, ep))) {
        return UCS_ERR_BUSY;
    }

    /* Linked once: a request dispatched from the queue may come back to an
     * empty queue while the endpoint is still linked */
    if (ucs_list_is_empty(&ep->pending_link)) {
        ucs_list_add_tail(&iface->pending_eps, &ep->pending_link);
    }
    uct_pending_req_queue_push(&ep->pending, req);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

void uct_gpumem_rc_ep_pending_purge(uct_ep_h tl_ep,
                                    uct_pending_purge_callback_t cb,
                                    void *arg)
{
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_pending_req_priv_queue_t *priv;

    uct_pending_queue_purge(priv, &ep->pending, 1, cb, arg);
    ucs_list_del(&ep->pending_link);
    ucs_list_head_init(&ep->pending_link);
}

void uct_gpumem_rc_ep_pending_dispatch(uct_gpumem_rc_iface_t *iface,
                                       uct_gpumem_rc_ep_t *ep)
{
    uct_pending_req_priv_queue_t *priv;

    uct_pending_queue_dispatch(priv, &ep->pending,
                               uct_gpumem_rc_iface_has_resources(iface, ep));
    if (ucs_queue_is_empty(&ep->pending)) {
        ucs_list_del(&ep->pending_link);
        ucs_list_head_init(&ep->pending_link);
    }
}

/* The domain registers memory to be written in any order (PCIe relaxed
 * ordering), and peers, configured alike, do too: a write's completion then
 * says nothing of whether its bytes, or earlier ones, have landed. A READ
 * does: PCIe lets no read pass earlier writes on the way to the memory. So
 * a flush or a fence after such writes reads back their last byte, and
 * completes only after it. */
static ucs_status_t uct_gpumem_rc_ep_read_back(uct_gpumem_rc_iface_t *iface,
                                               uct_gpumem_rc_ep_t *ep)
{
    uct_gpumem_rc_desc_t *desc;
    ucs_status_t status;

    status = uct_gpumem_rc_ep_can_post(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_desc_get(iface, &desc);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_rc_ep_post_desc(iface, ep, IBV_WR_RDMA_READ, desc, 1,
                                        ep->last_write, ep->last_rkey, NULL,
                                        NULL, NULL);
    if (status != UCS_OK) {
        return status;
    }

    ep->writes_unread = 0;
    ++ep->read_backs;
    return UCS_OK;
}

ucs_status_t uct_gpumem_rc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp)
{
    uct_gpumem_rc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    uct_gpumem_rc_op_t *op;
    ucs_status_t status;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* What is in flight completes with UCS_ERR_CANCELED; the queue
         * pair takes no more */
        if ((ep->status == UCS_OK) && ep->connected) {
            ep->status       = UCS_ERR_CANCELED;
            ep->failure_said = 1;
            uct_gpumem_rc_ep_qp_to_error(ep);
        }
    } else if (!ucs_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    } else if (ep->writes_unread && (ep->status == UCS_OK)) {
        status = uct_gpumem_rc_ep_read_back(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (ep->posted == 0) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return ((ep->status == UCS_ERR_CANCELED) &&
                (flags & UCT_FLUSH_FLAG_CANCEL)) ? UCS_OK : ep->status;
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    op = ucs_mpool_get(&iface->op_mp);
    if (op == NULL) {
        ucs_error("gpumem_rc: failed to allocate a flush");
        return UCS_ERR_NO_MEMORY;
    }

    op->ep        = ep;
    op->comp      = comp;
    op->posted    = 0;
    op->done      = 0;
    op->status    = UCS_INPROGRESS;
    op->desc      = NULL;
    op->unpack_cb = NULL;
    ucs_queue_push(&ep->ops, &op->queue);
    return UCS_INPROGRESS;
}

/* Writes of one queue pair land in order already, but for memory written
 * in any order, which a read-back orders; IBV_SEND_FENCE holds the next
 * work request until earlier READs have returned their bytes */
ucs_status_t uct_gpumem_rc_ep_fence(uct_ep_h tl_ep,
                                    unsigned UCS_V_UNUSED flags)
{
    uct_gpumem_rc_ep_t *ep       = ucs_derived_of(tl_ep, uct_gpumem_rc_ep_t);
    uct_gpumem_rc_iface_t *iface = uct_gpumem_rc_ep_iface(ep);
    ucs_status_t status;

    if (ep->writes_unread && (ep->status == UCS_OK)) {
        status = uct_gpumem_rc_ep_read_back(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (ep->posted > 0) {
        ep->fence = 1;
    }
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}
