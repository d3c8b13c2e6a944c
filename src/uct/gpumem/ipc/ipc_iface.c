/**
 * gpumem IPC transport: the interface: its device, addresses, reachability
 * and estimates, and the copies it runs on the GPUs' copy engines.
 *
 * One device serves the process, whose GPU (UCX_GPUMEM_ALLOC_GPU, as
 * CUDA's current device) is the one its address names: a peer is reached
 * when it is of this machine and user and the topology says that this GPU
 * maps the memory of the peer's. Each copy runs on the engine of the GPU
 * that holds its local buffer.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_iface.h"
#include <uct/gpumem/util/gpumem_proc.h>
#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/util/gpumem_config.h>
#include "ipc_ep.h"

#include <uct/api/v2/uct_v2.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <ucs/type/class.h>
#include <string.h>
#include <unistd.h>


/* Keys of the refusals logged once that are not of a pair of GPUs */
#define UCT_GPUMEM_IPC_LOG_OTHER_MACHINE  UCS_BIT(63)
#define UCT_GPUMEM_IPC_LOG_OTHER_USER     UCS_BIT(62)
#define UCT_GPUMEM_IPC_LOG_OTHER_PROC     UCS_BIT(61)

/* An active message: a slot of the peer's receive FIFO written and its
 * sequence published, read in order; as posix's FIFO (UCX's mm: 80 ns) */
#define UCT_GPUMEM_IPC_AM_LATENCY  80e-9


static ucs_config_field_t uct_gpumem_ipc_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_ipc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_gpumem_iface_config_table)},

    {"BW", "auto",
     "Bandwidth UCP expects of a copy to or from a peer's GPU memory. auto:\n"
     "by the topology, from the process's GPU to the nearest GPU it reaches:\n"
     "40 GB/s over a fabric (NVLink, NVSwitch, XGMI), 12 GB/s through a PCIe\n"
     "switch, 10 GB/s through one host bridge, 6 GB/s across host bridges,\n"
     "3 GB/s across sockets, 200 GB/s within the same GPU.",
     ucs_offsetof(uct_gpumem_ipc_iface_config_t, bandwidth),
     UCT_GPUMEM_CONFIG_TYPE_BW},

    {"LATENCY", "auto",
     "Time UCP expects a copy of a few bytes to take. auto: by the topology,\n"
     "as BW: 1.5us over a fabric, 2us through a PCIe switch, 2.5us through a\n"
     "host bridge, 3us across host bridges, 4us across sockets, 1us within\n"
     "the same GPU. UCP versions that ask each operation's latency read it\n"
     "for the copies; the interface's one latency is its active messages'\n"
     "(of the order of posix's), which the protocols of UCX 1.13 read for\n"
     "rendezvous transfers too, as they leave out the copies of eager device\n"
     "messages.",
     ucs_offsetof(uct_gpumem_ipc_iface_config_t, latency),
     UCT_GPUMEM_CONFIG_TYPE_LATENCY},

    {"OVERHEAD", "200ns",
     "CPU time UCP expects posting a copy to take: finding the peer's\n"
     "mapping and starting the engine.",
     ucs_offsetof(uct_gpumem_ipc_iface_config_t, overhead),
     UCT_GPUMEM_CONFIG_TYPE_TIME},

    {"FIFO_SIZE", "64",
     "Slots of the interface's receive FIFO of active messages: how many\n"
     "messages its peers may send before its progress takes them; a power of\n"
     "2 from 2 to 65536. Each slot holds one message of up to 8 KiB.",
     ucs_offsetof(uct_gpumem_ipc_iface_config_t, fifo_size),
     UCS_CONFIG_TYPE_UINT},

    {NULL}
};


static ucs_status_t
uct_gpumem_ipc_query_devices(uct_md_h uct_md,
                             uct_tl_device_resource_t **tl_devices_p,
                             unsigned *num_tl_devices_p)
{
    uct_gpumem_ipc_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ipc_md_t);

    /* No GPU, no peer memory to map: UCP then closes the memory domain */
    if (md->context->num_gpus == 0) {
        *tl_devices_p     = NULL;
        *num_tl_devices_p = 0;
        return UCS_OK;
    }

    /* Shared memory between the processes of a machine, as cuda_ipc's */
    return uct_single_device_resource(uct_md, UCT_GPUMEM_IPC_DEV_NAME,
                                      UCT_DEVICE_TYPE_SHM,
                                      md->context->sys_devs[md->gpu],
                                      tl_devices_p, num_tl_devices_p);
}

static ucs_status_t
uct_gpumem_ipc_iface_get_device_address(uct_iface_h tl_iface,
                                        uct_device_addr_t *dev_addr)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_device_addr_t machine;

    /* UCP packs addresses at any alignment */
    machine = uct_gpumem_ipc_cache_machine(iface->md->cache);
    memcpy(dev_addr, &machine, sizeof(machine));
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_ipc_iface_get_address(uct_iface_h tl_iface,
                                 uct_iface_addr_t *iface_addr)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gpumem_ipc_iface_t);
    uct_gpumem_ipc_peer_t self;

    self.pid      = gpumem_proc_pid();
    self.uid      = gpumem_proc_euid();
    self.iface_id = iface->open.id;
    self.gpu      = gpumem_gpu_reach(
            iface->super.context->gpus[iface->md->gpu])->addr;
    self.fifo_fd  = iface->fifo.fd;
    self.proc_dev = gpumem_proc_dev();
    uct_gpumem_ipc_iface_addr_pack(&self, iface_addr);
    return UCS_OK;
}

int uct_gpumem_ipc_iface_reaches(uct_gpumem_ipc_iface_t *iface,
                                 const uct_device_addr_t *dev_addr,
                                 const uct_iface_addr_t *iface_addr,
                                 uct_gpumem_ipc_peer_t *peer_p)
{
    uint64_t machine = uct_gpumem_ipc_cache_machine(iface->md->cache);
    uct_gpumem_ipc_peer_t peer;
    uint64_t peer_machine;

    if ((dev_addr == NULL) || (iface_addr == NULL)) {
        return 0;
    }

    memcpy(&peer_machine, dev_addr, sizeof(peer_machine));
    if (peer_machine != machine) {
        if (uct_gpumem_ipc_log_once(UCT_GPUMEM_IPC_LOG_OTHER_MACHINE |
                                    (peer_machine >> 2))) {
            ucs_diag("gpumem_ipc: a peer on another machine (0x%016lx, this "
                     "is 0x%016lx) does not map this machine's GPU memory; "
                     "another transport moves the data",
                     (unsigned long)peer_machine, (unsigned long)machine);
        }
        return 0;
    }

    if (uct_gpumem_ipc_iface_addr_unpack(iface_addr, UCS_LOG_LEVEL_ERROR,
                                         &peer) != UCS_OK) {
        return 0;
    }

    if (peer.uid != gpumem_proc_euid()) {
        if (uct_gpumem_ipc_log_once(UCT_GPUMEM_IPC_LOG_OTHER_USER |
                                    peer.uid)) {
            ucs_diag("gpumem_ipc: process %d of user %u does not map GPU "
                     "memory of user %u; another transport moves the data",
                     (int)peer.pid, (unsigned)peer.uid, (unsigned)gpumem_proc_euid());
        }
        return 0;
    }

    if (peer.proc_dev != gpumem_proc_dev()) {
        if (uct_gpumem_ipc_log_once(UCT_GPUMEM_IPC_LOG_OTHER_PROC |
                                    (peer.proc_dev >> 3))) {
            ucs_diag("gpumem_ipc: process %d is of another /proc (device "
                     "0x%x, this process's is 0x%x: a PID namespace with a "
                     "/proc of its own), where its pid names no process; "
                     "another transport moves the data", (int)peer.pid,
                     (unsigned)peer.proc_dev, (unsigned)gpumem_proc_dev());
        }
        return 0;
    }

    if (!uct_gpumem_ipc_gpu_reaches(iface->super.context, iface->md->gpu,
                                    &peer.gpu, NULL)) {
        return 0;
    }

    if (peer_p != NULL) {
        *peer_p = peer;
    }
    return 1;
}

/* An interface of this process on this interface's own GPU */
static int uct_gpumem_ipc_iface_is_self(uct_gpumem_ipc_iface_t *iface,
                                        const uct_gpumem_ipc_peer_t *peer)
{
    const gpumem_pci_addr_t *gpu = &gpumem_gpu_reach(
            iface->super.context->gpus[iface->md->gpu])->addr;

    return (peer->pid == gpumem_proc_pid()) && gpumem_pci_addr_equal(&peer->gpu, gpu);
}

/*
 * As UCP sees it, the process on the same GPU is not reached: that memory is
 * the copy transport's, which UCP's memory-type and self endpoints use and
 * which registers the host memory they stage through (taking it here would
 * map the process's own memory for every rendezvous, as openucx/ucx issue
 * 11854 saw of cuda_ipc). Another UCP context of the process on another GPU
 * is a peer as another process is. An endpoint to the process itself still
 * works, between two of its GPUs.
 */
static int uct_gpumem_ipc_iface_is_reachable(const uct_iface_h tl_iface,
                                             const uct_device_addr_t *dev_addr,
                                             const uct_iface_addr_t *iface_addr)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gpumem_ipc_iface_t);

    uct_gpumem_ipc_peer_t peer;

    return uct_gpumem_ipc_iface_reaches(iface, dev_addr, iface_addr, &peer) &&
           !uct_gpumem_ipc_iface_is_self(iface, &peer);
}

static ucs_status_t uct_gpumem_ipc_iface_query(uct_iface_h tl_iface,
                                               uct_iface_attr_t *iface_attr)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gpumem_ipc_iface_t);

    uct_gpumem_iface_query_common(&iface->super, iface_attr);

    iface_attr->iface_addr_len          = UCT_GPUMEM_IPC_IFACE_ADDR_SIZE;
    iface_attr->device_addr_len         = sizeof(uct_gpumem_ipc_device_addr_t);
    /* PENDING: an active message waits there for a slot of the peer's
     * FIFO; nothing else runs out of resources */
    /* ERRHANDLE_PEER_FAILURE, EP_CHECK: ep_check tells a dead peer (UCP's
     * keepalive), as cuda_ipc's does, and a closed interface of this
     * process; a message sent to a closed interface tells it too */
    iface_attr->cap.flags               = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                          UCT_IFACE_FLAG_AM_SHORT         |
                                          UCT_IFACE_FLAG_AM_BCOPY         |
                                          UCT_IFACE_FLAG_CB_SYNC          |
                                          UCT_IFACE_FLAG_PUT_SHORT        |
                                          UCT_IFACE_FLAG_PUT_BCOPY        |
                                          UCT_IFACE_FLAG_PUT_ZCOPY        |
                                          UCT_IFACE_FLAG_GET_BCOPY        |
                                          UCT_IFACE_FLAG_GET_ZCOPY        |
                                          UCT_IFACE_FLAG_PENDING          |
                                          UCT_IFACE_FLAG_EP_CHECK         |
                                          UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;

    iface_attr->cap.event_flags        |= UCT_IFACE_FLAG_EVENT_RECV_SIG;

    iface_attr->cap.am.max_short        = UCT_GPUMEM_IPC_AM_MAX_SHORT;
    iface_attr->cap.am.max_bcopy        = UCT_GPUMEM_IPC_AM_MAX_BCOPY;

    iface_attr->cap.put.max_short       = UCT_GPUMEM_IPC_PUT_MAX_SHORT;
    iface_attr->cap.put.max_bcopy       = UCT_GPUMEM_IPC_MAX_BCOPY;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = SIZE_MAX;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = 1;

    iface_attr->cap.get.max_short       = 0;
    iface_attr->cap.get.max_bcopy       = UCT_GPUMEM_IPC_MAX_BCOPY;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = SIZE_MAX;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = 1;
    return UCS_OK;
}

/* The GPU whose engine moves a copy */
static gpumem_gpu_t *uct_gpumem_ipc_iface_gpu(uct_gpumem_ipc_iface_t *iface,
                                             unsigned gpu)
{
    return iface->super.context->gpus[gpu];
}

ucs_status_t uct_gpumem_ipc_iface_post(uct_gpumem_ipc_iface_t *iface,
                                       uct_gpumem_ep_t *ep, unsigned gpu,
                                       uint64_t dst, int dst_dev,
                                       uint64_t src, int src_dev,
                                       size_t length,
                                       uct_gpumem_ipc_cache_entry_t *entry,
                                       uct_completion_t *comp)
{
    gpumem_copy_t copy;
    uct_gpumem_ipc_op_t *op;
    ucs_status_t status;

    /* The copies run side by side: one posted after a fence starts once the
     * bytes of those before it landed */
    uct_gpumem_iface_fence_wait(&iface->super, 1);

    /* Small copies are done before it returns */
    status = gpumem_copy(uct_gpumem_ipc_iface_gpu(iface, gpu), dst, dst_dev,
                         src, src_dev, length, &copy);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    op = (uct_gpumem_ipc_op_t*)uct_gpumem_iface_op_get(&iface->super);
    if (op == NULL) {
        /* Nowhere to keep it: it is finished here */
        return gpumem_copy_wait(&copy, status);
    }

    uct_gpumem_ipc_cache_hold(iface->md->cache, entry);
    op->entry      = entry;
    op->super.copy = copy;
    uct_gpumem_iface_op_push(&iface->super, ep, &op->super, 1, comp);
    return UCS_INPROGRESS;
}

ucs_status_t uct_gpumem_ipc_iface_copy(uct_gpumem_ipc_iface_t *iface,
                                       unsigned gpu, uint64_t dst, int dst_dev,
                                       uint64_t src, int src_dev,
                                       size_t length)
{
    uct_gpumem_iface_fence_wait(&iface->super, 0);
    return gpumem_copy_sync(uct_gpumem_ipc_iface_gpu(iface, gpu), dst,
                            dst_dev, src, src_dev, length);
}

static void uct_gpumem_ipc_op_release(uct_gpumem_iface_t *iface,
                                      uct_gpumem_iface_op_t *op)
{
    uct_gpumem_ipc_cache_put(ucs_derived_of(iface,
                                            uct_gpumem_ipc_iface_t)->md->cache,
                             ucs_derived_of(op, uct_gpumem_ipc_op_t)->entry);
}

/* Every copy is given to its engine when it is posted: none to start */
static const uct_gpumem_iface_op_ops_t uct_gpumem_ipc_op_ops = {
    .start   = NULL,
    .release = uct_gpumem_ipc_op_release
};

static unsigned uct_gpumem_ipc_iface_progress(uct_iface_h tl_iface)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gpumem_ipc_iface_t);

    return uct_gpumem_iface_progress(tl_iface) +
           uct_gpumem_ipc_iface_am_progress(iface);
}

/* The base's events, and the arrivals of the receive FIFO; requests that
 * wait for a peer's slot are progress's work */
static ucs_status_t uct_gpumem_ipc_iface_event_arm(uct_iface_h tl_iface,
                                                   unsigned events)
{
    uct_gpumem_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gpumem_ipc_iface_t);
    ucs_status_t status;

    status = uct_gpumem_iface_event_arm(tl_iface, events);
    if (status != UCS_OK) {
        return status;
    }

    if ((events & UCT_EVENT_SEND_COMP) &&
        !ucs_list_is_empty(&iface->pending_eps)) {
        status = UCS_ERR_BUSY;
    } else {
        status = uct_gpumem_ipc_fifo_arm(&iface->fifo, events);
    }

    if (status != UCS_OK) {
        iface->super.event.armed = 0;
    }
    return status;
}

static void UCS_CLASS_DELETE_FUNC_NAME(uct_gpumem_ipc_iface_t)(uct_iface_t*);

static uct_iface_ops_t uct_gpumem_ipc_iface_ops = {
    .ep_am_short              = uct_gpumem_ipc_ep_am_short,
    .ep_am_short_iov          = uct_base_ep_am_short_iov,
    .ep_am_bcopy              = uct_gpumem_ipc_ep_am_bcopy,
    .ep_put_short             = uct_gpumem_ipc_ep_put_short,
    .ep_put_bcopy             = uct_gpumem_ipc_ep_put_bcopy,
    .ep_put_zcopy             = uct_gpumem_ipc_ep_put_zcopy,
    .ep_get_bcopy             = uct_gpumem_ipc_ep_get_bcopy,
    .ep_get_zcopy             = uct_gpumem_ipc_ep_get_zcopy,
    .ep_check                 = uct_gpumem_ipc_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_ipc_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_ipc_ep_t),
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gpumem_ipc_iface_t),
    .iface_query              = uct_gpumem_ipc_iface_query,
    .iface_get_device_address = uct_gpumem_ipc_iface_get_device_address,
    .iface_get_address        = uct_gpumem_ipc_iface_get_address,
    .iface_is_reachable       = uct_gpumem_ipc_iface_is_reachable,
    /* The base's, but for active messages and their pending requests */
    .ep_pending_add           = uct_gpumem_ipc_ep_pending_add,
    .ep_pending_purge         = uct_gpumem_ipc_ep_pending_purge,
    .ep_flush                 = uct_gpumem_ipc_ep_flush,
    .ep_fence                 = uct_gpumem_ep_fence,
    .iface_flush              = uct_gpumem_iface_flush,
    .iface_fence              = uct_gpumem_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gpumem_ipc_iface_progress,
    .iface_event_fd_get       = uct_gpumem_iface_event_fd_get,
    .iface_event_arm          = uct_gpumem_ipc_iface_event_arm
};

/* The estimates: the settings, or the topology's for the process's GPU */
static void
uct_gpumem_ipc_iface_set_estimates(uct_gpumem_ipc_iface_t *self,
                                   const uct_gpumem_ipc_iface_config_t *config)
{
    const uct_gpumem_iface_perf_t *perf = &self->super.config.perf;

    /* The path's links carry every process's copies */
    uct_gpumem_ipc_best_path(self->super.context,
                             self->md->gpu, &self->path);
    uct_gpumem_iface_set_perf(&self->super, config->bandwidth, config->latency,
                              config->overhead, self->path.bandwidth,
                              self->path.latency, 1);
    self->super.config.perf.am_latency = UCT_GPUMEM_IPC_AM_LATENCY;
    ucs_debug("gpumemipc: iface %p of GPU %u: %s path, %.0f MB/s, %.2f us",
              self, self->md->gpu, self->path.name,
              perf->bandwidth / UCS_MBYTE, perf->latency * UCS_USEC_PER_SEC);
}


/* The base's, but for connection: an endpoint knows the interface it was
 * made to (UCX 1.16 and later ask) */
static uct_iface_internal_ops_t uct_gpumem_ipc_iface_internal_ops = {
    UCT_GPUMEM_IFACE_INTERNAL_OPS_EP_INVALIDATE(
            uct_gpumem_iface_estimate_perf, uct_gpumem_ipc_ep_is_connected,
            uct_gpumem_ipc_ep_invalidate)
};

static UCS_CLASS_INIT_FUNC(uct_gpumem_ipc_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gpumem_ipc_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gpumem_ipc_iface_config_t);
    uct_gpumem_ipc_md_t *ipc_md = ucs_derived_of(md, uct_gpumem_ipc_md_t);
    uct_gpumem_iface_desc_t desc = {
        .tl_name      = UCT_GPUMEM_IPC_TL_NAME,
        .dev_name     = UCT_GPUMEM_IPC_DEV_NAME,
        .context      = ipc_md->context,
        .op_ops       = &uct_gpumem_ipc_op_ops,
        .op_size      = sizeof(uct_gpumem_ipc_op_t),
        .bounce_size  = UCT_GPUMEM_IPC_MAX_BCOPY,
        .in_order     = 0,
        .internal_ops = &uct_gpumem_ipc_iface_internal_ops
    };
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_gpumem_iface_t, &uct_gpumem_ipc_iface_ops,
                              md, worker, params, tl_config, &desc);

    self->md = ipc_md;
    ucs_list_head_init(&self->pending_eps);
    uct_gpumem_ipc_open_add(&self->open);
    status   = uct_gpumem_ipc_fifo_create(self->open.id, config->fifo_size,
                                          &self->super.event.addr,
                                          self->super.event.addr_len,
                                          &self->fifo);
    if (status != UCS_OK) {
        uct_gpumem_ipc_open_remove(&self->open);
        return status;
    }

    uct_gpumem_ipc_iface_set_estimates(self, config);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gpumem_ipc_iface_t)
{
    uct_gpumem_ipc_open_remove(&self->open);
    /* Before the base stops its progress: nothing reads the FIFO after */
    uct_base_iface_progress_disable(&self->super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_gpumem_ipc_fifo_destroy(&self->fifo);
}

UCS_CLASS_DEFINE(uct_gpumem_ipc_iface_t, uct_gpumem_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gpumem_ipc_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gpumem_ipc_iface_t, uct_iface_t);


/* Registered with the gpumem_ipc component when the plugin loads
 * (gpumem_component.c), after the ABI guard agrees */
uct_tl_t uct_gpumem_ipc_tl = {
    .name          = UCT_GPUMEM_IPC_TL_NAME,
    .query_devices = uct_gpumem_ipc_query_devices,
    .iface_open    = UCS_CLASS_NEW_FUNC_NAME(uct_gpumem_ipc_iface_t),
    .config        = {
        .name      = UCT_GPUMEM_IPC_TL_NAME " transport",
        .prefix    = "GPUMEM_IPC_",
        .table     = uct_gpumem_ipc_iface_config_table,
        .size      = sizeof(uct_gpumem_ipc_iface_config_t)
    }
};
