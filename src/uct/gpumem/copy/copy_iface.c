/**
 * gpumem copy transport: the interface: its device, address, capabilities
 * and estimates, and the queue of copies it runs on the GPUs' copy engines.
 *
 * It is what UCP uses to stage device memory (the memory-type endpoint:
 * eager packing and unpacking, the rendezvous pipeline's fragments) and to
 * move device memory between buffers of one process. One device serves all
 * the process's GPUs: UCP keeps one memory-type endpoint per memory type and
 * hands it plain virtual addresses, so each copy goes to the engine of the
 * GPU that holds its device side, as cudaMemcpyDefault does with unified
 * addressing.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "copy_iface.h"
#include <uct/gpumem/base/gpumem_compat.h>
#include <uct/gpumem/base/gpumem_config.h>
#include <uct/gpumem/base/gpumem_iface_params.h>
#include "copy_ep.h"

#include <uct/api/v2/uct_v2.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <ucs/sys/sys.h>
#include <pthread.h>
#include <unistd.h>
#include <limits.h>
#include <string.h>


static ucs_config_field_t uct_gpumem_copy_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_copy_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Largest put/get bcopy: the size of the host buffer the bytes pass\n"
     "through on their way to or from the copy engine.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, seg_size),
     UCT_GPUMEM_CONFIG_TYPE_SIZE},

    {"MAX_POLL", "16",
     "Most completions one progress call gives.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, max_poll),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    /* Measured with "ucx_perftest -l -x gpumemcpy -d gpumem -t put_bw"
     * (device memory from libgpumem_perftest) on the machine of the tests:
     * 4 MiB host->device 10.3 GB/s, 1 MiB device->device 19.9 GB/s, 64 KiB
     * 28 GB/s (in cache), 8 B 67 ns an operation */
    {"BW", "10000MBs",
     "Bandwidth UCP expects of a copy. The default is what the emu driver's\n"
     "engine (a memmove by the calling thread) moves at the sizes the\n"
     "rendezvous pipeline copies, 4 MiB out of cache; a real GPU's engine\n"
     "moves what its bus does.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, bandwidth),
     UCS_CONFIG_TYPE_BW},

    {"LATENCY", "100ns",
     "Time UCP expects a copy of a few bytes to take. The default is the\n"
     "emu driver's (a lock, a page table walk, a call); a real GPU's engine\n"
     "takes some microseconds.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, latency),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {"OVERHEAD", "50ns",
     "CPU time UCP expects posting a copy to take, the rest of the latency\n"
     "being the engine's.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, overhead),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {NULL}
};


static ucs_status_t
uct_gpumem_copy_query_devices(uct_md_h uct_md,
                              uct_tl_device_resource_t **tl_devices_p,
                              unsigned *num_tl_devices_p)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);

    /* No GPU, nothing to copy with: UCP then closes the memory domain */
    if (md->context->num_gpus == 0) {
        *tl_devices_p     = NULL;
        *num_tl_devices_p = 0;
        return UCS_OK;
    }

    /* The device is all GPUs, so it sits on no single one */
    return uct_single_device_resource(uct_md, UCT_GPUMEM_COPY_DEV_NAME,
                                      UCT_DEVICE_TYPE_ACC,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, tl_devices_p,
                                      num_tl_devices_p);
}

/* This process among all: remote addresses are virtual addresses of the
 * process, which any of its interfaces reaches. A random value, made anew
 * in a forked child: pids repeat across PID namespaces and machines */
uct_gpumem_copy_iface_addr_t uct_gpumem_copy_process_id(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static uct_gpumem_copy_iface_addr_t id;
    static pid_t id_pid;
    uct_gpumem_copy_iface_addr_t result;
    pid_t pid = getpid();

    pthread_mutex_lock(&lock);
    if ((id_pid != pid) || (id == 0)) {
        id     = ucs_generate_uuid((uintptr_t)&id ^ (uint64_t)pid);
        id_pid = pid;
    }
    result = id;
    pthread_mutex_unlock(&lock);
    return result;
}

static ucs_status_t
uct_gpumem_copy_iface_get_address(uct_iface_h tl_iface,
                                  uct_iface_addr_t *iface_addr)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    /* UCP packs addresses at any offset: no aligned store */
    memcpy(iface_addr, &iface->id, sizeof(iface->id));
    return UCS_OK;
}

/* Remote addresses are virtual addresses of this process: only its own
 * interfaces (UCP's memory-type and self endpoints, another worker of the
 * process) can use them */
static int uct_gpumem_copy_iface_is_reachable(
        const uct_iface_h tl_iface,
        const uct_device_addr_t UCS_V_UNUSED *dev_addr,
        const uct_iface_addr_t *iface_addr)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    return (iface_addr != NULL) &&
           !memcmp(iface_addr, &iface->id, sizeof(iface->id));
}

static ucs_status_t uct_gpumem_copy_iface_event_fd_get(uct_iface_h tl_iface,
                                                       int *fd_p)
{
    *fd_p = ucs_derived_of(tl_iface, uct_gpumem_copy_iface_t)->event.fd;
    return UCS_OK;
}

/* Completions come at progress: busy while anything is queued */
static ucs_status_t uct_gpumem_copy_iface_event_arm(uct_iface_h tl_iface,
                                                    unsigned events)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    return uct_gpumem_iface_event_arm(&iface->event, events,
                                      !ucs_queue_is_empty(&iface->queue),
                                      UCT_GPUMEM_COPY_TL_NAME);
}

static ucs_status_t uct_gpumem_copy_iface_query(uct_iface_h tl_iface,
                                                uct_iface_attr_t *iface_attr)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->iface_addr_len          = sizeof(uct_gpumem_copy_iface_addr_t);
    iface_attr->device_addr_len         = 0;
    iface_attr->ep_addr_len             = 0;
    iface_attr->max_conn_priv           = 0;
    /* PENDING: no operation returns UCS_ERR_NO_RESOURCE, so pending_add
     * answers UCS_ERR_BUSY (try again now) and the queue is never used */
    iface_attr->cap.flags               = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                          UCT_IFACE_FLAG_PUT_SHORT        |
                                          UCT_IFACE_FLAG_PUT_BCOPY        |
                                          UCT_IFACE_FLAG_PUT_ZCOPY        |
                                          UCT_IFACE_FLAG_GET_SHORT        |
                                          UCT_IFACE_FLAG_GET_BCOPY        |
                                          UCT_IFACE_FLAG_GET_ZCOPY        |
                                          UCT_IFACE_FLAG_PENDING;
    iface_attr->cap.event_flags         = UCT_GPUMEM_IFACE_EVENT_FLAGS;

    /* UCP's memory-type packing uses short operations of any length */
    iface_attr->cap.put.max_short       = UINT_MAX;
    iface_attr->cap.put.max_bcopy       = iface->config.seg_size;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = SIZE_MAX;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = 1;

    iface_attr->cap.get.max_short       = UINT_MAX;
    iface_attr->cap.get.max_bcopy       = iface->config.seg_size;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = SIZE_MAX;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = 1;

    iface_attr->cap.am.max_short        = 0;
    iface_attr->cap.am.max_bcopy        = 0;
    iface_attr->cap.am.min_zcopy        = 0;
    iface_attr->cap.am.max_zcopy        = 0;
    iface_attr->cap.am.opt_zcopy_align  = 1;
    iface_attr->cap.am.align_mtu        = 1;
    iface_attr->cap.am.max_hdr          = 0;
    iface_attr->cap.am.max_iov          = 1;

    uct_gpumem_iface_perf_attr(&iface->config.perf, iface_attr);
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_copy_iface_estimate_perf(uct_iface_h tl_iface,
                                    uct_perf_attr_t *perf_attr)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    uct_gpumem_iface_perf_estimate(&iface->config.perf, perf_attr);
    return UCS_OK;
}

/* Maps the source, of GPU @a src_gpu, into GPU @a dst_gpu for its engine */
static ucs_status_t uct_gpumem_copy_req_map_peer(uct_gpumem_copy_iface_t *iface,
                                                 int dst_gpu, int src_gpu,
                                                 uct_gpumem_copy_req_t *req)
{
    uct_gpumem_context_t *context = iface->context;
    gpumem_region_t *src_region;
    ucs_status_t status;

    src_region = gpumem_find_region(context->gpus[src_gpu], req->src);
    if (src_region == NULL) {
        ucs_error("gpumemcpy: copy of %zu bytes from 0x%" PRIx64 ", which "
                  "no allocation of GPU %d holds", req->length, req->src,
                  src_gpu);
        return UCS_ERR_INVALID_ADDR;
    }

    /* The memory core logs why, where it refuses */
    status = gpumem_map_peer(context->gpus[dst_gpu], src_region, &req->peer);
    if (status != UCS_OK) {
        return status;
    }

    req->peer_gpu = context->gpus[dst_gpu];
    req->src      = gpumem_region_address(req->peer) +
                    (req->src - gpumem_region_address(src_region));
    return UCS_OK;
}

/* Resolves a copy to the engine that does it: that of the GPU holding its
 * device side; between two GPUs, the destination's, which reads the source
 * through a peer mapping as a GPU reads a peer's memory over its link.
 * Inline: every short copy of UCP's memory-type packing comes this way */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_copy_req_init(uct_gpumem_copy_iface_t *iface, void *dst,
                         const void *src, size_t length,
                         uct_gpumem_copy_req_t *req)
{
    uct_gpumem_context_t *context = iface->context;
    int dst_gpu                   = uct_gpumem_context_find_gpu(context, dst);
    int src_gpu                   = uct_gpumem_context_find_gpu(context, src);

    req->dst      = (uintptr_t)dst;
    req->src      = (uintptr_t)src;
    req->dst_dev  = (dst_gpu >= 0);
    req->src_dev  = (src_gpu >= 0);
    req->length   = length;
    req->peer_gpu = NULL;
    req->peer     = NULL;

    if ((dst_gpu < 0) && (src_gpu < 0)) {
        req->engine = NULL;
        return UCS_OK;
    }

    req->engine = context->gpus[(dst_gpu >= 0) ? dst_gpu : src_gpu];
    if (ucs_likely((dst_gpu < 0) || (src_gpu < 0) || (dst_gpu == src_gpu))) {
        return UCS_OK;
    }

    return uct_gpumem_copy_req_map_peer(iface, dst_gpu, src_gpu, req);
}

static UCS_F_ALWAYS_INLINE void
uct_gpumem_copy_req_cleanup(uct_gpumem_copy_req_t *req)
{
    if (req->peer != NULL) {
        gpumem_free(req->peer_gpu, req->peer);
        req->peer = NULL;
    }
}

/* Gives the copy to its engine: UCS_INPROGRESS if @a copy is to be polled */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_copy_req_start(const uct_gpumem_copy_req_t *req,
                          gpumem_copy_t *copy)
{
    if (req->length == 0) {
        return UCS_OK;
    }

    /* Host memory on both sides: no device address, so the CPU may copy */
    if (req->engine == NULL) {
        memmove((void*)(uintptr_t)req->dst, (const void*)(uintptr_t)req->src,
                req->length);
        return UCS_OK;
    }

    return gpumem_copy(req->engine, req->dst, req->dst_dev, req->src,
                       req->src_dev, req->length, copy);
}

/* One step of a queued copy: start it, or poll it; releases what it held
 * once its bytes have landed */
static void uct_gpumem_copy_op_advance(uct_gpumem_copy_op_t *op)
{
    ucs_status_t status;

    switch (op->state) {
    case UCT_GPUMEM_COPY_OP_WAITING:
        status = uct_gpumem_copy_req_start(&op->req, &op->copy);
        break;
    case UCT_GPUMEM_COPY_OP_RUNNING:
        status = gpumem_copy_poll(&op->copy);
        break;
    default:
        return;
    }

    if (status == UCS_INPROGRESS) {
        op->state = UCT_GPUMEM_COPY_OP_RUNNING;
        return;
    }

    op->state  = UCT_GPUMEM_COPY_OP_DONE;
    op->status = status;
    uct_gpumem_copy_req_cleanup(&op->req);
}

/* Runs every queued copy to its end, in order, leaving the completions to
 * progress: what a fence asks before the next short or bcopy */
static void uct_gpumem_copy_iface_drain(uct_gpumem_copy_iface_t *iface)
{
    uct_gpumem_copy_op_t *op;

    ucs_queue_for_each(op, &iface->queue, queue) {
        while (op->state != UCT_GPUMEM_COPY_OP_DONE) {
            uct_gpumem_copy_op_advance(op);
        }
    }
    iface->fenced = 0;
}

static void uct_gpumem_copy_op_complete(uct_gpumem_copy_op_t *op)
{
    uct_completion_t *comp = op->comp;
    ucs_status_t status    = op->status;

    if (op->ep != NULL) {
        ucs_assert(op->ep->outstanding > 0);
        --op->ep->outstanding;
    }

    ucs_mpool_put_inline(op);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}

ucs_status_t uct_gpumem_copy_iface_copy_sync(uct_gpumem_copy_iface_t *iface,
                                             void *dst, const void *src,
                                             size_t length)
{
    uct_gpumem_copy_req_t req;
    gpumem_copy_t copy;
    ucs_status_t status;

    if (ucs_unlikely(iface->fenced)) {
        uct_gpumem_copy_iface_drain(iface);
    }

    status = uct_gpumem_copy_req_init(iface, dst, src, length, &req);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_copy_req_start(&req, &copy);
    status = gpumem_copy_wait(&copy, status);
    uct_gpumem_copy_req_cleanup(&req);
    return status;
}

ucs_status_t uct_gpumem_copy_iface_post(uct_gpumem_copy_iface_t *iface,
                                        uct_gpumem_copy_ep_t *ep, void *dst,
                                        const void *src, size_t length,
                                        uct_completion_t *comp)
{
    uct_gpumem_copy_op_state_t state = UCT_GPUMEM_COPY_OP_WAITING;
    uct_gpumem_copy_req_t req;
    gpumem_copy_t copy;
    uct_gpumem_copy_op_t *op;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }

    status = uct_gpumem_copy_req_init(iface, dst, src, length, &req);
    if (status != UCS_OK) {
        return status;
    }

    /* Alone on the stream: the engine starts it now, and small copies are
     * done before it returns */
    if (ucs_queue_is_empty(&iface->queue)) {
        status = uct_gpumem_copy_req_start(&req, &copy);
        if (status != UCS_INPROGRESS) {
            uct_gpumem_copy_req_cleanup(&req);
            return status;
        }
        state = UCT_GPUMEM_COPY_OP_RUNNING;
    }

    op = ucs_mpool_get_inline(&iface->op_mp);
    if (op == NULL) {
        /* Nowhere to keep it: finish it here if it started */
        if (state == UCT_GPUMEM_COPY_OP_RUNNING) {
            status = gpumem_copy_wait(&copy, UCS_INPROGRESS);
        } else {
            ucs_error("gpumemcpy: cannot queue a copy of %zu bytes", length);
            status = UCS_ERR_NO_MEMORY;
        }
        uct_gpumem_copy_req_cleanup(&req);
        return status;
    }

    op->ep     = ep;
    op->comp   = comp;
    op->state  = state;
    op->status = UCS_INPROGRESS;
    op->req    = req;
    op->copy   = copy;
    ++ep->outstanding;
    ucs_queue_push(&iface->queue, &op->queue);
    uct_gpumem_iface_event_posted(&iface->event);
    return UCS_INPROGRESS;
}

ucs_status_t uct_gpumem_copy_iface_flush_queue(uct_gpumem_copy_iface_t *iface,
                                               uct_gpumem_copy_ep_t *ep,
                                               uct_completion_t *comp)
{
    uct_gpumem_copy_op_t *op;

    if ((ep != NULL) ? (ep->outstanding == 0) :
                       ucs_queue_is_empty(&iface->queue)) {
        return UCS_OK;
    }

    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    /* The queue runs in order: a marker at its tail completes after all that
     * was posted before it */
    op = ucs_mpool_get_inline(&iface->op_mp);
    if (op == NULL) {
        ucs_error("gpumemcpy: cannot queue a flush");
        return UCS_ERR_NO_MEMORY;
    }

    op->ep         = NULL;
    op->comp       = comp;
    op->state      = UCT_GPUMEM_COPY_OP_DONE;
    op->status     = UCS_OK;
    op->req.length = 0;
    op->req.peer   = NULL;
    ucs_queue_push(&iface->queue, &op->queue);
    uct_gpumem_iface_event_posted(&iface->event);
    return UCS_INPROGRESS;
}

void uct_gpumem_copy_iface_ep_gone(uct_gpumem_copy_iface_t *iface,
                                   uct_gpumem_copy_ep_t *ep)
{
    uct_gpumem_copy_op_t *op;

    ucs_queue_for_each(op, &iface->queue, queue) {
        if (op->ep == ep) {
            op->ep = NULL;
        }
    }
}

static unsigned uct_gpumem_copy_iface_progress(uct_iface_h tl_iface)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);
    unsigned count                 = 0;
    uct_gpumem_copy_op_t *op;

    /* Completions are given in the order of posting; a completion callback
     * may post again, so the head is read anew each time */
    while ((count < iface->config.max_poll) &&
           !ucs_queue_is_empty(&iface->queue)) {
        op = ucs_queue_head_elem_non_empty(&iface->queue, uct_gpumem_copy_op_t,
                                           queue);
        uct_gpumem_copy_op_advance(op);
        if (op->state != UCT_GPUMEM_COPY_OP_DONE) {
            break;
        }

        ucs_queue_pull_non_empty(&iface->queue);
        uct_gpumem_copy_op_complete(op);
        ++count;
    }

    if (ucs_queue_is_empty(&iface->queue)) {
        iface->fenced = 0;
    }
    return count;
}

static ucs_status_t uct_gpumem_copy_iface_flush(uct_iface_h tl_iface,
                                                unsigned UCS_V_UNUSED flags,
                                                uct_completion_t *comp)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);
    ucs_status_t status;

    status = uct_gpumem_copy_iface_flush_queue(iface, NULL, comp);
    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}

/* Zero-copy operations are ordered already; a short or bcopy after a fence
 * waits for the bytes of those before it */
static ucs_status_t uct_gpumem_copy_iface_fence(uct_iface_h tl_iface,
                                                unsigned UCS_V_UNUSED flags)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    iface->fenced = !ucs_queue_is_empty(&iface->queue);
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}

static void UCS_CLASS_DELETE_FUNC_NAME(uct_gpumem_copy_iface_t)(uct_iface_t*);

static uct_iface_ops_t uct_gpumem_copy_iface_ops = {
    .ep_put_short             = uct_gpumem_copy_ep_put_short,
    .ep_put_bcopy             = uct_gpumem_copy_ep_put_bcopy,
    .ep_put_zcopy             = uct_gpumem_copy_ep_put_zcopy,
    .ep_get_short             = uct_gpumem_copy_ep_get_short,
    .ep_get_bcopy             = uct_gpumem_copy_ep_get_bcopy,
    .ep_get_zcopy             = uct_gpumem_copy_ep_get_zcopy,
    .ep_pending_add           = uct_gpumem_ep_pending_add_busy,
    .ep_pending_purge         = uct_gpumem_ep_pending_purge_none,
    .ep_flush                 = uct_gpumem_copy_ep_flush,
    .ep_fence                 = uct_gpumem_copy_ep_fence,
    .ep_check                 = uct_gpumem_ep_check_unsupported,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_copy_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_copy_ep_t),
    .iface_flush              = uct_gpumem_copy_iface_flush,
    .iface_fence              = uct_gpumem_copy_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gpumem_copy_iface_progress,
    .iface_event_fd_get       = uct_gpumem_copy_iface_event_fd_get,
    .iface_event_arm          = uct_gpumem_copy_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_copy_iface_t),
    .iface_query              = uct_gpumem_copy_iface_query,
    .iface_get_device_address = uct_gpumem_iface_get_device_address_none,
    .iface_get_address        = uct_gpumem_copy_iface_get_address,
    .iface_is_reachable       = uct_gpumem_copy_iface_is_reachable
};

static uct_iface_internal_ops_t uct_gpumem_copy_iface_internal_ops = {
    UCT_GPUMEM_IFACE_INTERNAL_OPS(uct_gpumem_copy_iface_estimate_perf)
};

static ucs_mpool_ops_t uct_gpumem_copy_op_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static UCS_CLASS_INIT_FUNC(uct_gpumem_copy_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gpumem_copy_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpumem_copy_iface_config_t);
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_gpumem_copy_iface_ops,
                              &uct_gpumem_copy_iface_internal_ops, md, worker,
                              params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_GPUMEM_COPY_TL_NAME));

    status = uct_gpumem_iface_check_params(params, UCT_GPUMEM_COPY_TL_NAME,
                                           UCT_GPUMEM_COPY_DEV_NAME);
    if (status != UCS_OK) {
        return status;
    }

    if (config->seg_size == 0) {
        ucs_error("gpumemcpy: UCX_GPUMEM_COPY_SEG_SIZE must not be 0");
        return UCS_ERR_INVALID_PARAM;
    }

    self->id               = uct_gpumem_copy_process_id();
    self->context          = ucs_derived_of(md, uct_gpumem_md_t)->context;
    self->fenced           = 0;
    self->config.seg_size  = config->seg_size;
    self->config.max_poll  = ucs_max(config->max_poll, 1);
    self->config.perf.bandwidth = config->bandwidth;
    self->config.perf.latency   = config->latency;
    self->config.perf.overhead  = config->overhead;
    /* The emu's engine is the calling thread: each process has its own */
    self->config.perf.shared    = 0;
    ucs_queue_head_init(&self->queue);

    self->bounce = ucs_malloc(config->seg_size, "gpumem_copy_bounce");
    if (self->bounce == NULL) {
        ucs_error("gpumemcpy: failed to allocate a %zu-byte bounce buffer",
                  config->seg_size);
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_mpool_init(&self->op_mp, 0,
                                   sizeof(uct_gpumem_copy_op_t), 0,
                                   UCS_SYS_CACHE_LINE_SIZE, 128, UINT_MAX,
                                   &uct_gpumem_copy_op_mpool_ops,
                                   "gpumem_copy_ops");
    if (status != UCS_OK) {
        goto err_free_bounce;
    }

    status = uct_gpumem_iface_event_init(&self->event,
                                         UCT_GPUMEM_COPY_TL_NAME);
    if (status != UCS_OK) {
        goto err_mpool;
    }
    return UCS_OK;

err_mpool:
    ucs_mpool_cleanup(&self->op_mp, 1);
err_free_bounce:
    ucs_free(self->bounce);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_copy_iface_t)
{
    uct_gpumem_copy_op_t *op;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* What the engine was given it finishes, so that no byte lands after the
     * close; what it was not given is dropped. No completion is called. */
    if (!ucs_queue_is_empty(&self->queue)) {
        ucs_debug("gpumemcpy: iface %p closes with operations queued",
                  self);
    }
    ucs_queue_for_each_extract(op, &self->queue, queue, 1) {
        if (op->state == UCT_GPUMEM_COPY_OP_RUNNING) {
            (void)gpumem_copy_wait(&op->copy, UCS_INPROGRESS);
        }
        uct_gpumem_copy_req_cleanup(&op->req);
        ucs_mpool_put_inline(op);
    }

    ucs_mpool_cleanup(&self->op_mp, 1);
    ucs_free(self->bounce);
    uct_gpumem_iface_event_cleanup(&self->event);
}

UCS_CLASS_DEFINE(uct_gpumem_copy_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpumem_copy_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpumem_copy_iface_t, uct_iface_t);


/* Registered with the gpumem component when the plugin loads
 * (gpumem_component.c), not by a constructor of its own, so that the ABI
 * guard decides for the transport too and unloading removes it */
uct_tl_t uct_gpumem_copy_tl = {
    .name          = UCT_GPUMEM_COPY_TL_NAME,
    .query_devices = uct_gpumem_copy_query_devices,
    .iface_open    = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_copy_iface_t),
    .config        = {
        .name      = UCT_GPUMEM_COPY_TL_NAME " transport",
        .prefix    = "GPUMEM_COPY_",
        .table     = uct_gpumem_copy_iface_config_table,
        .size      = sizeof(uct_gpumem_copy_iface_config_t)
    }
};
