/**
 * gpumem IPC transport: the endpoint's operations. Each resolves the remote
 * range through its key to the mapping of the peer's memory on the GPU that
 * holds the local buffer (the process's GPU for host memory), and gives the
 * copy to that GPU's engine: zero-copy completes through the interface's
 * progress, short and bcopy before they return.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_ep.h"
#include <uct/gpumem/util/gpumem_proc.h>
#include <uct/gpumem/compat/gpumem_compat.h>

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <unistd.h>
#include <limits.h>
#include <string.h>


static UCS_CLASS_INIT_FUNC(uct_gpumem_ipc_ep_t, const uct_ep_params_t *params)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(params->iface,
                                                   uct_gpumem_ipc_iface_t);
    char gpu_name[GPUMEM_TOPO_PCI_STR_MAX];
    uct_gpumem_ipc_peer_t peer;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    if (!uct_gpumem_ipc_iface_reaches(iface, params->dev_addr,
                                      params->iface_addr, &peer)) {
        return UCS_ERR_UNREACHABLE;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_gpumem_ep_t, &iface->super);

    self->peer_pid      = peer.pid;
    self->peer_iface_id = peer.iface_id;
    self->peer_gpu      = peer.gpu;

    self->dispatching   = 0;
    ucs_queue_head_init(&self->pending);
    ucs_list_head_init(&self->pending_list);

    status = uct_ep_keepalive_init(&self->keepalive, self->peer_pid);
    if (status != UCS_OK) {
        ucs_error("gpumemipc: process %d, the peer, is gone", self->peer_pid);
        return status;
    }

    /* Where its active messages go */
    status = uct_gpumem_ipc_fifo_attach(peer.pid, peer.iface_id, peer.fifo_fd,
                                        &self->fifo);
    if (status != UCS_OK) {
        return status;
    }

    ucs_debug("gpumemipc: ep %p to process %d on GPU %s", self,
              self->peer_pid,
              gpumem_pci_addr_str(&self->peer_gpu, gpu_name,
                                  sizeof(gpu_name)));
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_ipc_ep_t)
{
    uct_gpumem_ipc_ep_pending_drop(self);
    uct_gpumem_ipc_fifo_detach(&self->fifo);
}

UCS_CLASS_DEFINE(uct_gpumem_ipc_ep_t, uct_gpumem_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gpumem_ipc_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpumem_ipc_ep_t, uct_ep_t);


#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_IS_CONNECTED
int uct_gpumem_ipc_ep_is_connected(const uct_ep_h tl_ep,
                                   const uct_ep_is_connected_params_t *params)
{
    const uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                   uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_peer_t peer;
    uint64_t machine;

    if ((params->field_mask & UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) &&
        (params->device_addr != NULL)) {
        memcpy(&machine, params->device_addr, sizeof(machine));
        if (machine != uct_gpumem_ipc_cache_machine(iface->md->cache)) {
            return 0;
        }
    }

    /* An interface is told apart by its address only */
    if (!(params->field_mask & UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR) ||
        (params->iface_addr == NULL) ||
        (uct_gpumem_ipc_iface_addr_unpack(params->iface_addr,
                                          UCS_LOG_LEVEL_DEBUG,
                                          &peer) != UCS_OK)) {
        return 0;
    }

    return (peer.pid == ep->peer_pid) && (peer.iface_id == ep->peer_iface_id) &&
           gpumem_pci_addr_equal(&peer.gpu, &ep->peer_gpu);
}
#endif

/* A key rkey_unpack gave: neither UCT_INVALID_RKEY nor none at all */
static UCS_F_ALWAYS_INLINE int uct_gpumem_ipc_rkey_given(uct_rkey_t rkey)
{
    return (rkey != UCT_INVALID_RKEY) && (rkey != 0);
}

/* The remote range, which the key must give whole */
static ucs_status_t
uct_gpumem_ipc_ep_check_range(const uct_gpumem_ipc_rkey_t *key,
                              uint64_t remote_addr, size_t length,
                              const char *op_name)
{
    if ((remote_addr < key->address) || (length > key->length) ||
        (remote_addr - key->address > key->length - length)) {
        ucs_error("gpumemipc: %s of %zu bytes at 0x%lx: the remote key "
                  "gives %zu bytes at 0x%lx", op_name, length,
                  (unsigned long)remote_addr, key->length,
                  (unsigned long)key->address);
        return UCS_ERR_INVALID_ADDR;
    }
    return UCS_OK;
}

/* The first GPU of the process, other than @a not_gpu, whose mapping of the
 * peer's memory the cache gives: its engine reaches the memory */
static ucs_status_t
uct_gpumem_ipc_ep_map_via(uct_gpumem_ipc_iface_t *iface,
                          const uct_gpumem_ipc_rkey_t *key, unsigned not_gpu,
                          unsigned *via_p, gpumem_region_t **mapping_p)
{
    uct_gpumem_context_t *context = iface->super.context;
    unsigned via;

    for (via = 0; via < context->num_gpus; ++via) {
        if ((via != not_gpu) &&
            (uct_gpumem_ipc_cache_map(iface->md->cache, key->entry, via,
                                      mapping_p) == UCS_OK)) {
            *via_p = via;
            return UCS_OK;
        }
    }
    return UCS_ERR_UNREACHABLE;
}

/* Where a copy runs and what it touches: the local buffer is device memory
 * of this process, whose GPU's engine moves the bytes, or host memory,
 * moved by the engine of the process's GPU; the remote range is reached
 * through that GPU's mapping of the peer's memory. Where that GPU does not
 * reach the peer's memory, another of the process's GPUs that does moves
 * host memory itself, and stages device memory of the first (*staged_p);
 * the peer's memory that no GPU of the process reaches is unreachable. */
static ucs_status_t
uct_gpumem_ipc_ep_resolve(uct_gpumem_ipc_iface_t *iface,
                          const uct_gpumem_ipc_rkey_t *key,
                          const void *buffer, uint64_t remote_addr,
                          size_t length, const char *op_name,
                          unsigned *gpu_p, int *local_dev_p,
                          uint64_t *mapped_p, unsigned *staged_p)
{
    gpumem_region_t *mapping;
    ucs_status_t status;
    unsigned gpu, via;
    int found;

    status = uct_gpumem_ipc_ep_check_range(key, remote_addr, length,
                                           op_name);
    if (status != UCS_OK) {
        return status;
    }

    found = uct_gpumem_context_find_gpu(iface->super.context, buffer);
    gpu   = (found < 0) ? iface->md->gpu : (unsigned)found;
    via   = gpu;

    status = uct_gpumem_ipc_cache_map(iface->md->cache, key->entry, gpu,
                                      &mapping);
    if (status == UCS_ERR_UNREACHABLE) {
        status = uct_gpumem_ipc_ep_map_via(iface, key, gpu, &via, &mapping);
        if (status != UCS_OK) {
            ucs_error("gpumemipc: %s of %zu bytes at 0x%lx: no GPU of this "
                      "process reaches the memory of that key", op_name,
                      length, (unsigned long)remote_addr);
        }
    }
    if (status != UCS_OK) {
        return status;
    }

    if ((via != gpu) && (found >= 0)) {
        *staged_p = gpu;
        gpu       = via;
    } else {
        *staged_p = UINT_MAX;
        gpu       = via;
    }
    *gpu_p       = gpu;
    *local_dev_p = (found >= 0);
    *mapped_p    = gpumem_region_address(mapping) +
                   (remote_addr - key->alloc_address);
    return UCS_OK;
}

/*
 * A copy between the peer's memory and device memory of a GPU that does not
 * reach it (@a local_gpu): in steps through host memory, which @a gpu, whose
 * engine reaches the peer's memory, and @a local_gpu both reach, as CUDA
 * stages a copy between two GPUs without peer access. Returns when the
 * bytes landed.
 */
static ucs_status_t
uct_gpumem_ipc_ep_staged_copy(uct_gpumem_ipc_iface_t *iface, unsigned gpu,
                              unsigned local_gpu, uint64_t local,
                              uint64_t mapped, size_t length, int is_put)
{
    gpumem_gpu_t *remote_engine = iface->super.context->gpus[gpu];
    gpumem_gpu_t *local_engine  = iface->super.context->gpus[local_gpu];
    size_t chunk                = ucs_min(length,
                                          UCT_GPUMEM_IPC_STAGE_CHUNK);
    ucs_status_t status         = UCS_OK;
    size_t offset, size;
    uint64_t stage;
    void *buf;

    buf = ucs_malloc(chunk, "gpumem_ipc_stage");
    if (buf == NULL) {
        ucs_error("gpumemipc: failed to allocate %zu bytes to stage a copy",
                  chunk);
        return UCS_ERR_NO_MEMORY;
    }
    stage = (uintptr_t)buf;

    for (offset = 0; (offset < length) && (status == UCS_OK);
         offset += size) {
        size = ucs_min(chunk, length - offset);
        if (is_put) {
            status = gpumem_copy_sync(local_engine, stage, 0, local + offset,
                                      1, size);
            if (status == UCS_OK) {
                status = gpumem_copy_sync(remote_engine, mapped + offset, 1,
                                          stage, 0, size);
            }
        } else {
            status = gpumem_copy_sync(remote_engine, stage, 0,
                                      mapped + offset, 1, size);
            if (status == UCS_OK) {
                status = gpumem_copy_sync(local_engine, local + offset, 1,
                                          stage, 0, size);
            }
        }
    }

    ucs_free(buf);
    return status;
}

/* A copy that returns when its bytes landed, staged where it must be */
static ucs_status_t
uct_gpumem_ipc_ep_copy_sync(uct_gpumem_ipc_iface_t *iface, unsigned gpu,
                            unsigned staged, uint64_t local, int local_dev,
                            uint64_t mapped, size_t length, int is_put)
{
    if (staged != UINT_MAX) {
        return uct_gpumem_ipc_ep_staged_copy(iface, gpu, staged, local,
                                             mapped, length, is_put);
    }
    return is_put ? uct_gpumem_ipc_iface_copy(iface, gpu, mapped, 1, local,
                                              local_dev, length) :
                    uct_gpumem_ipc_iface_copy(iface, gpu, local, local_dev,
                                              mapped, 1, length);
}

static void uct_gpumem_ipc_ep_trace(const uct_gpumem_ipc_ep_t *ep,
                                    const char *op_name, size_t length,
                                    int is_put, uint64_t remote_addr,
                                    ucs_status_t status)
{
    if (!UCS_STATUS_IS_ERR(status)) {
        uct_gpumem_ipc_stats_count_op(is_put, length);
    }
    ucs_trace_data("gpumemipc %s %zu bytes %s 0x%lx of process %d: %s",
                   op_name, length, is_put ? "to" : "from",
                   (unsigned long)remote_addr, ep->peer_pid,
                   ucs_status_string(status));
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_ipc_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                        uint64_t remote_addr, uct_rkey_t rkey,
                        uct_completion_t *comp, int is_put)
{
    uct_gpumem_ipc_iface_t *iface    = ucs_derived_of(tl_ep->iface,
                                                      uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_ep_t *ep          = ucs_derived_of(tl_ep,
                                                      uct_gpumem_ipc_ep_t);
    const uct_gpumem_ipc_rkey_t *key = (const uct_gpumem_ipc_rkey_t*)rkey;
    const char *op_name              = is_put ? "put_zcopy" : "get_zcopy";
    uint64_t local, mapped;
    ucs_status_t status;
    unsigned gpu, staged;
    size_t length;
    int local_dev;

    UCT_GPUMEM_CHECK_IOV_SIZE(iovcnt, 1ul, op_name);
    if (iovcnt == 0) {
        return UCS_OK;
    }

    UCT_GPUMEM_CHECK_PARAM(iov[0].count <= 1, "gpumemipc: iov count %u: the "
                           "buffer must be contiguous", iov[0].count);

    /* Nothing to move reaches no remote memory, whatever the key */
    length = uct_iov_get_length(iov);
    if (length == 0) {
        return UCS_OK;
    }

    UCT_GPUMEM_CHECK_PARAM(uct_gpumem_ipc_rkey_given(rkey), "gpumemipc: %s "
                           "needs the remote key of gpumem_ipc", op_name);

    status = uct_gpumem_ipc_ep_resolve(iface, key, iov[0].buffer, remote_addr,
                                       length, op_name, &gpu, &local_dev,
                                       &mapped, &staged);
    if (status != UCS_OK) {
        return status;
    }

    local = (uintptr_t)iov[0].buffer;
    if (staged != UINT_MAX) {
        if (is_put) {
            UCT_TL_EP_STAT_OP(&ep->super.super, PUT, ZCOPY, length);
        } else {
            UCT_TL_EP_STAT_OP(&ep->super.super, GET, ZCOPY, length);
        }
        status = uct_gpumem_ipc_ep_staged_copy(iface, gpu, staged, local,
                                               mapped, length, is_put);
    } else if (is_put) {
        UCT_TL_EP_STAT_OP(&ep->super.super, PUT, ZCOPY, length);
        status = uct_gpumem_ipc_iface_post(iface, &ep->super, gpu, mapped, 1, local,
                                           local_dev, length, key->entry,
                                           comp);
    } else {
        UCT_TL_EP_STAT_OP(&ep->super.super, GET, ZCOPY, length);
        status = uct_gpumem_ipc_iface_post(iface, &ep->super, gpu, local, local_dev,
                                           mapped, 1, length, key->entry,
                                           comp);
    }

    uct_gpumem_ipc_ep_trace(ep, op_name, length, is_put, remote_addr, status);
    return status;
}

ucs_status_t uct_gpumem_ipc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp)
{
    uct_gpumem_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gpumem_ipc_ep_t);

    /* UCT's own check of the arguments differs between versions */
    UCT_GPUMEM_CHECK_PARAM(flags == 0, "gpumemipc: ep_check flags 0x%x",
                           flags);

    /* An interface that closed said so in its FIFO */
    if (ep->fifo.ctl->closed) {
        ucs_diag("gpumemipc: ep %p: interface %u of process %d, the peer, is "
                 "closed", ep, ep->peer_iface_id, (int)ep->peer_pid);
        uct_gpumem_ep_fail(&ep->super, UCS_ERR_CONNECTION_RESET);
        return UCS_OK;
    }

    /* A peer in this process lives as long as its interface */
    if (ep->peer_pid == gpumem_proc_pid()) {
        if (!uct_gpumem_ipc_open_has(ep->peer_iface_id)) {
            ucs_diag("gpumemipc: ep %p: interface %u of this process, the "
                     "peer, is closed", ep, ep->peer_iface_id);
            uct_gpumem_ep_fail(&ep->super, UCS_ERR_CONNECTION_RESET);
        }
        return UCS_OK;
    }

    uct_ep_keepalive_check(tl_ep, &ep->keepalive, ep->peer_pid, flags, comp);
    return UCS_OK;
}

ucs_status_t uct_gpumem_ipc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                         unsigned length, uint64_t remote_addr,
                                         uct_rkey_t rkey)
{
    uct_gpumem_ipc_iface_t *iface    = ucs_derived_of(tl_ep->iface,
                                                      uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_ep_t *ep          = ucs_derived_of(tl_ep,
                                                      uct_gpumem_ipc_ep_t);
    const uct_gpumem_ipc_rkey_t *key = (const uct_gpumem_ipc_rkey_t*)rkey;
    ucs_status_t status;
    uint64_t mapped;
    unsigned gpu, staged;
    int local_dev;

    UCT_GPUMEM_CHECK_LENGTH(length, UCT_GPUMEM_IPC_PUT_MAX_SHORT, "put_short");
    if (length == 0) {
        return UCS_OK;
    }

    UCT_GPUMEM_CHECK_PARAM(uct_gpumem_ipc_rkey_given(rkey),
                           "gpumemipc: put_short needs the remote key of "
                           "gpumem_ipc");

    /* The buffer may be device memory: the engine reads it, not the CPU */
    status = uct_gpumem_ipc_ep_resolve(iface, key, buffer, remote_addr,
                                       length, "put_short", &gpu, &local_dev,
                                       &mapped, &staged);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super.super, PUT, SHORT, length);
    status = uct_gpumem_ipc_ep_copy_sync(iface, gpu, staged, (uintptr_t)buffer,
                                         local_dev, mapped, length, 1);
    uct_gpumem_ipc_ep_trace(ep, "put_short", length, 1, remote_addr, status);
    return status;
}

ssize_t uct_gpumem_ipc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                    void *arg, uint64_t remote_addr,
                                    uct_rkey_t rkey)
{
    uct_gpumem_ipc_iface_t *iface    = ucs_derived_of(tl_ep->iface,
                                                      uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_ep_t *ep          = ucs_derived_of(tl_ep,
                                                      uct_gpumem_ipc_ep_t);
    const uct_gpumem_ipc_rkey_t *key = (const uct_gpumem_ipc_rkey_t*)rkey;
    ucs_status_t status;
    uint64_t mapped;
    size_t length;
    unsigned gpu, staged;
    int local_dev;

    length = pack_cb(iface->super.bounce, arg);
    UCT_GPUMEM_CHECK_LENGTH(length, UCT_GPUMEM_IPC_MAX_BCOPY, "put_bcopy");
    if (length == 0) {
        return 0;
    }

    UCT_GPUMEM_CHECK_PARAM(uct_gpumem_ipc_rkey_given(rkey),
                           "gpumemipc: put_bcopy needs the remote key of "
                           "gpumem_ipc");

    status = uct_gpumem_ipc_ep_resolve(iface, key, iface->super.bounce, remote_addr,
                                       length, "put_bcopy", &gpu, &local_dev,
                                       &mapped, &staged);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super.super, PUT, BCOPY, length);
        status = uct_gpumem_ipc_iface_copy(iface, gpu, mapped, 1,
                                           (uintptr_t)iface->super.bounce, 0,
                                           length);
    }

    uct_gpumem_ipc_ep_trace(ep, "put_bcopy", length, 1, remote_addr, status);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_gpumem_ipc_ep_get_bcopy(uct_ep_h tl_ep,
                                         uct_unpack_callback_t unpack_cb,
                                         void *arg, size_t length,
                                         uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t UCS_V_UNUSED *comp)
{
    uct_gpumem_ipc_iface_t *iface    = ucs_derived_of(tl_ep->iface,
                                                      uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_ep_t *ep          = ucs_derived_of(tl_ep,
                                                      uct_gpumem_ipc_ep_t);
    const uct_gpumem_ipc_rkey_t *key = (const uct_gpumem_ipc_rkey_t*)rkey;
    ucs_status_t status;
    uint64_t mapped;
    unsigned gpu, staged;
    int local_dev;

    UCT_GPUMEM_CHECK_LENGTH(length, UCT_GPUMEM_IPC_MAX_BCOPY, "get_bcopy");
    if (length == 0) {
        unpack_cb(arg, iface->super.bounce, 0);
        return UCS_OK;
    }

    UCT_GPUMEM_CHECK_PARAM(uct_gpumem_ipc_rkey_given(rkey),
                           "gpumemipc: get_bcopy needs the remote key of "
                           "gpumem_ipc");

    status = uct_gpumem_ipc_ep_resolve(iface, key, iface->super.bounce, remote_addr,
                                       length, "get_bcopy", &gpu, &local_dev,
                                       &mapped, &staged);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super.super, GET, BCOPY, length);
        status = uct_gpumem_ipc_iface_copy(iface, gpu,
                                           (uintptr_t)iface->super.bounce, 0,
                                           mapped, 1, length);
    }

    /* The bytes are here when it returns: done, no completion */
    if (status == UCS_OK) {
        unpack_cb(arg, iface->super.bounce, length);
    }

    uct_gpumem_ipc_ep_trace(ep, "get_bcopy", length, 0, remote_addr, status);
    return status;
}

ucs_status_t uct_gpumem_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                         size_t iovcnt, uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp)
{
    return uct_gpumem_ipc_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                   comp, 1);
}

ucs_status_t uct_gpumem_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                         size_t iovcnt, uint64_t remote_addr,
                                         uct_rkey_t rkey,
                                         uct_completion_t *comp)
{
    return uct_gpumem_ipc_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                   comp, 0);
}
