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
#include <uct/gpumem/util/gpumem_proc.h>
#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/util/gpumem_config.h>
#include "copy_ep.h"

#include <uct/api/v2/uct_v2.h>
#include <ucs/arch/atomic.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <ucs/type/class.h>
#include <ucs/sys/sys.h>
#include <errno.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>
#include <limits.h>
#include <string.h>


static ucs_config_field_t uct_gpumem_copy_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_copy_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_gpumem_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Largest put/get bcopy: the size of the host buffer the bytes pass\n"
     "through on their way to or from the copy engine.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, seg_size),
     UCT_GPUMEM_CONFIG_TYPE_SIZE},

    {"BW", "auto",
     "Bandwidth UCP expects of a copy. auto: the driver's figure for its\n"
     "copy engine: 10000 MB/s for the emu (a memmove by the calling thread,\n"
     "at the sizes the rendezvous pipeline copies, out of cache), as for a\n"
     "GPU's DMA engine across PCIe.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, bandwidth),
     UCT_GPUMEM_CONFIG_TYPE_BW},

    {"LATENCY", "auto",
     "Time UCP expects a copy of a few bytes to take. auto: the driver's\n"
     "figure: 100ns for the emu (a lock, a page table walk, a call), 8us\n"
     "for a GPU's DMA engine (from posting to the event of its end).",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, latency),
     UCT_GPUMEM_CONFIG_TYPE_LATENCY},

    {"OVERHEAD", "50ns",
     "CPU time UCP expects posting a copy to take, the rest of the latency\n"
     "being the engine's.",
     ucs_offsetof(uct_gpumem_copy_iface_config_t, overhead),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {NULL}
};


/* Bytes given to the engines by every copy interface of the process: which
 * transport carried a transfer, for tests and diagnostics */
static uint64_t uct_gpumem_copy_bytes_moved = 0;


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
    pid_t pid = gpumem_proc_pid();

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

static ucs_status_t uct_gpumem_copy_iface_query(uct_iface_h tl_iface,
                                                uct_iface_attr_t *iface_attr)
{
    uct_gpumem_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_gpumem_copy_iface_t);

    uct_gpumem_iface_query_common(&iface->super, iface_attr);

    iface_attr->iface_addr_len          = sizeof(uct_gpumem_copy_iface_addr_t);
    iface_attr->device_addr_len         = 0;
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

    /* UCP's memory-type packing uses short operations of any length */
    iface_attr->cap.put.max_short       = UINT_MAX;
    iface_attr->cap.put.max_bcopy       = iface->super.config.bounce_size;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = SIZE_MAX;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = 1;

    iface_attr->cap.get.max_short       = UINT_MAX;
    iface_attr->cap.get.max_bcopy       = iface->super.config.bounce_size;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = SIZE_MAX;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = 1;
    return UCS_OK;
}

/* Maps the source, of GPU @a src_gpu, into GPU @a dst_gpu for its engine */
static ucs_status_t uct_gpumem_copy_req_map_peer(uct_gpumem_copy_iface_t *iface,
                                                 int dst_gpu, int src_gpu,
                                                 uct_gpumem_copy_req_t *req)
{
    uct_gpumem_context_t *context = iface->super.context;
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

/* The GPU whose device memory holds a side of a copy, or -1; where the
 * engine does not check, the device side must lie inside one allocation
 * (one question to the driver for both) */
static UCS_F_ALWAYS_INLINE int
uct_gpumem_copy_req_locate(uct_gpumem_copy_iface_t *iface, const void *buffer,
                           size_t length, const char *side,
                           ucs_status_t *status_p)
{
    uct_gpumem_context_t *context = iface->super.context;
    uint64_t address              = (uintptr_t)buffer;
    uint64_t base;
    size_t asked;
    int gpu, found;

    if (ucs_likely(!iface->check_bounds)) {
        return uct_gpumem_context_find_gpu(context, buffer);
    }

    gpu = gpumem_device_addr_allocation(context->driver, context->gpus,
                                        address, &base, &asked, &found);
    if (gpu < 0) {
        return gpu;
    }

    if (!found) {
        ucs_error("gpumemcpy: copy of %zu bytes %s 0x%" PRIx64 ", which no "
                  "allocation of GPU %d holds", length, side, address, gpu);
        *status_p = UCS_ERR_INVALID_ADDR;
    } else if (length > asked - (address - base)) {
        ucs_error("gpumemcpy: copy of %zu bytes %s 0x%" PRIx64 ": past the "
                  "end of its allocation of %zu bytes at 0x%" PRIx64, length,
                  side, address, asked, base);
        *status_p = UCS_ERR_INVALID_ADDR;
    }
    return gpu;
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
    uct_gpumem_context_t *context = iface->super.context;
    ucs_status_t status           = UCS_OK;
    int dst_gpu, src_gpu;

    dst_gpu = uct_gpumem_copy_req_locate(iface, dst, length, "to", &status);
    src_gpu = uct_gpumem_copy_req_locate(iface, src, length, "from", &status);
    if (status != UCS_OK) {
        return status;
    }

    req->dst      = (uintptr_t)dst;
    req->src      = (uintptr_t)src;
    req->dst_dev  = (dst_gpu >= 0);
    req->src_dev  = (src_gpu >= 0);
    req->length   = length;
    req->peer_gpu = NULL;
    req->peer     = NULL;
    req->driver   = context->driver->ops->name;

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

/*
 * A copy between two addresses of no GPU of this driver: host memory, which
 * the CPU copies, unless one is memory the process cannot touch, such as
 * device memory of another driver (UCX_GPUMEM_DRIVER=emu, and a buffer of
 * the CUDA the application runs on), which UCX may take for this
 * transport's by its type. The kernel copies, so that such an address is an
 * error, not a signal; where it may not (seccomp), the CPU does.
 */
static UCS_F_NOINLINE ucs_status_t
uct_gpumem_copy_host(const uct_gpumem_copy_req_t *req)
{
    struct iovec local  = {(void*)(uintptr_t)req->dst, req->length};
    struct iovec remote = {(void*)(uintptr_t)req->src, req->length};
    ssize_t copied;

    if ((req->dst + req->length > req->src) &&
        (req->src + req->length > req->dst)) {
        /* Overlapping: the kernel's copy does not promise memmove's order */
        memmove(local.iov_base, remote.iov_base, req->length);
        return UCS_OK;
    }

    copied = process_vm_readv(gpumem_proc_ns_pid(), &local, 1, &remote, 1,
                              0);
    if (copied == (ssize_t)req->length) {
        return UCS_OK;
    }
    if ((copied < 0) && ((errno == ENOSYS) || (errno == EPERM))) {
        memcpy(local.iov_base, remote.iov_base, req->length);
        return UCS_OK;
    }

    ucs_error("gpumemcpy: cannot copy %zu bytes from %p to %p: neither is "
              "device memory of the %s driver's GPUs, and %s (device memory "
              "of another driver, or unmapped)", req->length, remote.iov_base,
              local.iov_base, req->driver,
              (copied < 0) ? "the process cannot reach them as host memory" :
                             "the process reaches only part of them");
    return UCS_ERR_INVALID_ADDR;
}

/* Gives the copy to its engine: UCS_INPROGRESS if @a copy is to be polled;
 * with no @a copy, done before it returns */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gpumem_copy_req_start(const uct_gpumem_copy_req_t *req,
                          gpumem_copy_t *copy)
{
    if (req->length == 0) {
        return UCS_OK;
    }

    ucs_atomic_add64(&uct_gpumem_copy_bytes_moved, req->length);

    /* No device address of this driver's GPUs on either side */
    if (req->engine == NULL) {
        return uct_gpumem_copy_host(req);
    }

    if (copy == NULL) {
        return gpumem_copy_sync(req->engine, req->dst, req->dst_dev, req->src,
                                req->src_dev, req->length);
    }

    return gpumem_copy(req->engine, req->dst, req->dst_dev, req->src,
                       req->src_dev, req->length, copy);
}

/* The turn of a copy queued behind others */
static ucs_status_t
uct_gpumem_copy_op_start(uct_gpumem_iface_t UCS_V_UNUSED *iface,
                         uct_gpumem_iface_op_t *op)
{
    uct_gpumem_copy_op_t *copy_op = ucs_derived_of(op, uct_gpumem_copy_op_t);

    return uct_gpumem_copy_req_start(&copy_op->req, &op->copy);
}

static void uct_gpumem_copy_op_release(uct_gpumem_iface_t UCS_V_UNUSED *iface,
                                       uct_gpumem_iface_op_t *op)
{
    uct_gpumem_copy_req_cleanup(&ucs_derived_of(op,
                                                uct_gpumem_copy_op_t)->req);
}

static const uct_gpumem_iface_op_ops_t uct_gpumem_copy_op_ops = {
    .start   = uct_gpumem_copy_op_start,
    .release = uct_gpumem_copy_op_release
};

ucs_status_t uct_gpumem_copy_iface_copy_sync(uct_gpumem_copy_iface_t *iface,
                                             void *dst, const void *src,
                                             size_t length)
{
    uct_gpumem_copy_req_t req;
    ucs_status_t status;

    uct_gpumem_iface_fence_wait(&iface->super, 0);

    status = uct_gpumem_copy_req_init(iface, dst, src, length, &req);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gpumem_copy_req_start(&req, NULL);
    uct_gpumem_copy_req_cleanup(&req);
    return status;
}

ucs_status_t uct_gpumem_copy_iface_post(uct_gpumem_copy_iface_t *iface,
                                        uct_gpumem_ep_t *ep, void *dst,
                                        const void *src, size_t length,
                                        uct_completion_t *comp)
{
    int started = 0;
    uct_gpumem_copy_req_t req;
    uct_gpumem_copy_op_t *op;
    gpumem_copy_t copy;
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
    if (ucs_queue_is_empty(&iface->super.ops)) {
        status = uct_gpumem_copy_req_start(&req, &copy);
        if (status != UCS_INPROGRESS) {
            uct_gpumem_copy_req_cleanup(&req);
            return status;
        }
        started = 1;
    }

    op = (uct_gpumem_copy_op_t*)uct_gpumem_iface_op_get(&iface->super);
    if (op == NULL) {
        /* Nowhere to keep it: finish it here if it started */
        if (started) {
            status = gpumem_copy_wait(&copy, UCS_INPROGRESS);
        } else {
            ucs_error("gpumemcpy: cannot queue a copy of %zu bytes", length);
            status = UCS_ERR_NO_MEMORY;
        }
        uct_gpumem_copy_req_cleanup(&req);
        return status;
    }

    op->req        = req;
    op->super.copy = copy;
    uct_gpumem_iface_op_push(&iface->super, ep, &op->super, started, comp);
    return UCS_INPROGRESS;
}

static void UCS_CLASS_DELETE_FUNC_NAME(uct_gpumem_copy_iface_t)(uct_iface_t*);

static uct_iface_ops_t uct_gpumem_copy_iface_ops = {
    .ep_put_short             = uct_gpumem_copy_ep_put_short,
    .ep_put_bcopy             = uct_gpumem_copy_ep_put_bcopy,
    .ep_put_zcopy             = uct_gpumem_copy_ep_put_zcopy,
    .ep_get_short             = uct_gpumem_copy_ep_get_short,
    .ep_get_bcopy             = uct_gpumem_copy_ep_get_bcopy,
    .ep_get_zcopy             = uct_gpumem_copy_ep_get_zcopy,
    .ep_check                 = uct_gpumem_ep_check_unsupported,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_copy_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_copy_ep_t),
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_copy_iface_t),
    .iface_query              = uct_gpumem_copy_iface_query,
    .iface_get_device_address = uct_gpumem_iface_get_device_address_none,
    .iface_get_address        = uct_gpumem_copy_iface_get_address,
    .iface_is_reachable       = uct_gpumem_copy_iface_is_reachable,
    UCT_GPUMEM_IFACE_BASE_OPS
};

/* The estimates: the settings, or the driver's figures for its engine */
static void
uct_gpumem_copy_iface_set_estimates(uct_gpumem_copy_iface_t *self,
                                    const uct_gpumem_copy_iface_config_t *config)
{
    gpumem_copy_perf_t engine;

    /* One engine serves as all: the GPUs of a process have one driver */
    gpumem_copy_engine_perf(self->super.context->gpus[0], &engine);
    uct_gpumem_iface_set_perf(&self->super, config->bandwidth, config->latency,
                              config->overhead, engine.bandwidth,
                              engine.latency, engine.shared);
}

static UCS_CLASS_INIT_FUNC(uct_gpumem_copy_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gpumem_copy_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpumem_copy_iface_config_t);
    uct_gpumem_iface_desc_t desc = {
        .tl_name     = UCT_GPUMEM_COPY_TL_NAME,
        .dev_name    = UCT_GPUMEM_COPY_DEV_NAME,
        .context     = ucs_derived_of(md, uct_gpumem_md_t)->context,
        .op_ops      = &uct_gpumem_copy_op_ops,
        .op_size     = sizeof(uct_gpumem_copy_op_t),
        .bounce_size = config->seg_size,
        .in_order    = 1
    };

    if (config->seg_size == 0) {
        ucs_error("gpumemcpy: UCX_GPUMEM_COPY_SEG_SIZE must not be 0");
        return UCS_ERR_INVALID_PARAM;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_gpumem_iface_t, &uct_gpumem_copy_iface_ops,
                              md, worker, params, tl_config, &desc);

    if (self->super.context->num_gpus == 0) {
        ucs_error("gpumemcpy: no GPU to copy with");
        return UCS_ERR_NO_DEVICE;
    }

    self->id           = uct_gpumem_copy_process_id();
    /* One engine serves as all, as for the estimates */
    self->check_bounds = !gpumem_copy_engine_checks_bounds(
                                 self->super.context->gpus[0]);
    uct_gpumem_copy_iface_set_estimates(self, config);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_copy_iface_t)
{
}

UCS_CLASS_DEFINE(uct_gpumem_copy_iface_t, uct_gpumem_iface_t);
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

uint64_t uct_gpumem_copy_bytes(void)
{
    return uct_gpumem_copy_bytes_moved;
}
