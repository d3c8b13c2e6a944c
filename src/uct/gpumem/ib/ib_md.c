/**
 * gpumem verbs: the "gpumem_ib" component, one memory domain per RDMA
 * device: open, query, register host and device memory, deregister, pack
 * and unpack remote keys.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_md.h"
#include <uct/gpumem/compat/gpumem_compat.h>
#include "ib_access.h"
#include "ib_rcache.h"

#include <uct/gpumem/gpumem_context.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <limits.h>
#include <string.h>


/* Registration cost, as UCX's own ib memory domain estimates it by default
 * (UCX_IB_MEM_REG_OVERHEAD, UCX_IB_MEM_REG_GROWTH) */
#define UCT_GPUMEM_IB_REG_OVERHEAD  16e-6
#define UCT_GPUMEM_IB_REG_GROWTH    0.06e-9


/* In the order of gpumem_reg_order_t */
static const char *uct_gpumem_ib_order_names[] = {
    [GPUMEM_REG_ORDER_IN_ORDER] = "in_order",
    [GPUMEM_REG_ORDER_ANY]      = "any_order",
    [GPUMEM_REG_ORDER_LAST]     = NULL
};

static ucs_config_field_t uct_gpumem_ib_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_ib_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"MAX_ACCESS", "remote",
     "The most that peers may do to memory registered with an RDMA device:\n"
     " local        - neither read nor write it\n"
     " remote_write - write it\n"
     " remote       - read and write it\n"
     "Each registration grants the least access that covers its UCT flags\n"
     "(no remote flag: local; UCT_MD_MEM_ACCESS_REMOTE_PUT alone:\n"
     "remote_write; REMOTE_GET or REMOTE_ATOMIC: remote), and never more\n"
     "than this. Atomics are never granted.",
     ucs_offsetof(uct_gpumem_ib_md_config_t, max_access),
     UCS_CONFIG_TYPE_ENUM(uct_gpumem_ib_access_names)},

    {"ORDER", "in_order",
     "The order in which the device's writes land in registered memory\n"
     "(peers' writes, the bytes of this process's reads and receives):\n"
     " in_order  - the writes of one queue pair land in the order they\n"
     "             were posted\n"
     " any_order - in any order (PCIe relaxed ordering, where the device and\n"
     "             kernel support it): faster on some machines, but one\n"
     "             write's bytes say nothing of an earlier write's",
     ucs_offsetof(uct_gpumem_ib_md_config_t, order),
     UCS_CONFIG_TYPE_ENUM(uct_gpumem_ib_order_names)},

    {"DEVICE_MEM_REG", "auto",
     "How device memory of the process's gpumem GPUs is registered:\n"
     " auto   - through the GPU driver's dma-buf of its memory where the\n"
     "          driver exports one, else through the GPU's BAR window\n"
     " dmabuf - through a dma-buf only\n"
     " bar    - through the BAR window only\n"
     "A device that refuses dma-bufs (soft-RoCE does) gets the BAR window\n"
     "instead where the memory lies inside the BAR. Memory outside a BAR\n"
     "smaller than the GPU's memory has only the dma-buf. The way taken is\n"
     "logged at debug level; a registration with no way open is an error\n"
     "that names why.",
     ucs_offsetof(uct_gpumem_ib_md_config_t, device_mem_reg),
     UCS_CONFIG_TYPE_ENUM(uct_gpumem_ib_device_reg_names)},

    {"RCACHE", "try",
     "Keep registrations made through uct_md_mem_reg() in a registration\n"
     "cache (UCS's rcache), so that memory registered again is not\n"
     "registered with the device again:\n"
     " yes - always; opening the memory domain fails without the cache\n"
     " try - where the cache can be made\n"
     " no  - register and deregister at each call\n"
     "A cached registration grants exactly the access its caller asked for,\n"
     "and ends when its memory is unmapped or, for device memory, freed: the\n"
     "device stops reaching freed device memory before the memory goes,\n"
     "cached or not. dma-bufs registered with uct_gpumem_ib_mem_reg_memory()\n"
     "are never cached. The RCACHE_ settings below are the cache's. Its\n"
     "regions are aligned to the smaller of a host page and a GPU page, so\n"
     "that a region lies in the mapping and the allocation of its memory, or\n"
     "to less where RCACHE_ADDR_ALIGN says (UCX 1.17 and earlier have it).",
     ucs_offsetof(uct_gpumem_ib_md_config_t, enable_rcache),
     UCS_CONFIG_TYPE_TERNARY},

    {"", UCT_GPUMEM_RCACHE_CONFIG_ALIGN("4096") "RCACHE_MAX_UNRELEASED=512M",
     NULL,
     ucs_offsetof(uct_gpumem_ib_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(UCT_GPUMEM_RCACHE_CONFIG_TABLE)},

    {NULL}
};

ucs_status_t uct_gpumem_ib_md_name(const char *dev_name, char *md_name,
                                   size_t max)
{
    size_t len = strlen(dev_name);

    if ((strlen(UCT_GPUMEM_IB_MD_PREFIX) + len) < max) {
        snprintf(md_name, max, "%s%s", UCT_GPUMEM_IB_MD_PREFIX, dev_name);
        return UCS_OK;
    }

    if (len < max) {
        ucs_strncpy_zero(md_name, dev_name, max);
        return UCS_OK;
    }

    return UCS_ERR_EXCEEDS_LIMIT;
}

const char *uct_gpumem_ib_md_dev_name(const char *md_name)
{
    size_t prefix_len = strlen(UCT_GPUMEM_IB_MD_PREFIX);

    if (!strncmp(md_name, UCT_GPUMEM_IB_MD_PREFIX, prefix_len)) {
        return md_name + prefix_len;
    }

    return md_name;
}

static ucs_status_t
uct_gpumem_ib_query_md_resources(uct_component_t UCS_V_UNUSED *component,
                                 uct_md_resource_desc_t **resources_p,
                                 unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    struct ibv_device **devices;
    const char *dev_name;
    int i, num_devices;
    unsigned count;

    devices = ibv_get_device_list(&num_devices);
    if ((devices == NULL) || (num_devices == 0)) {
        ucs_debug("gpumem: no RDMA device (ibv_get_device_list: %s)",
                  (devices == NULL) ? strerror(errno) : "none");
        if (devices != NULL) {
            ibv_free_device_list(devices);
        }
        *resources_p     = NULL;
        *num_resources_p = 0;
        return UCS_OK;
    }

    resources = ucs_calloc(num_devices, sizeof(*resources),
                           "gpumem_ib_md_resources");
    if (resources == NULL) {
        ucs_error("gpumem: failed to allocate %d memory domain resources",
                  num_devices);
        ibv_free_device_list(devices);
        return UCS_ERR_NO_MEMORY;
    }

    count = 0;
    for (i = 0; i < num_devices; ++i) {
        dev_name = ibv_get_device_name(devices[i]);
        if (uct_gpumem_ib_md_name(dev_name, resources[count].md_name,
                                  sizeof(resources[count].md_name)) !=
            UCS_OK) {
            ucs_diag("gpumem: RDMA device '%s' is left out: its name is "
                     "longer than a UCT memory domain name (%zu bytes)",
                     dev_name, sizeof(resources[count].md_name) - 1);
            continue;
        }
        ++count;
    }

    ibv_free_device_list(devices);
    *resources_p     = resources;
    *num_resources_p = count;
    return UCS_OK;
}

static ucs_status_t uct_gpumem_ib_md_query_attr(uct_md_h uct_md,
                                                uct_gpumem_md_attr_t *md_attr)
{
    uct_gpumem_ib_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ib_md_t);

    md_attr->flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                                UCT_MD_FLAG_NEED_RKEY;
    md_attr->max_alloc        = 0;
    md_attr->max_reg          = md->max_mr_size;
    md_attr->reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    /* A device that cannot reach the GPU's memory is not offered for it */
    if ((md->gpus != NULL) && md->place.dma_reaches) {
        md_attr->reg_mem_types |= UCS_BIT(md->device_mem_type);
    }
    md_attr->detect_mem_types = 0;
    md_attr->alloc_mem_types  = 0;
    md_attr->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->rkey_packed_size = GPUMEM_REG_WIRE_SIZE;
    md_attr->reg_cost         = (md->rcache[0] != NULL) ?
                                ucs_linear_func_make(md->rcache_overhead, 0) :
                                ucs_linear_func_make(
                                            UCT_GPUMEM_IB_REG_OVERHEAD,
                                            UCT_GPUMEM_IB_REG_GROWTH);
    return UCS_OK;
}

UCT_GPUMEM_MD_QUERY_DEFINE(uct_gpumem_ib_md_query,
                           uct_gpumem_ib_md_query_attr)

uct_gpumem_ib_memh_t *uct_gpumem_ib_memh_alloc(const uct_gpumem_ib_md_t *md,
                                               ucs_log_level_t log_level)
{
    uct_gpumem_ib_memh_t *memh;

    memh = ucs_malloc(sizeof(*memh), "gpumem_ib_memh");
    if (memh == NULL) {
        ucs_log(log_level, "gpumem: %s: failed to allocate a memory handle",
                md->domain.name);
        return NULL;
    }

    memh->rcache = NULL;
    memh->region = NULL;
    return memh;
}

/* Device memory, registered the way UCX_GPUMEM_IB_DEVICE_MEM_REG and the
 * driver allow, and named by its device address */
static ucs_status_t
uct_gpumem_ib_md_register_device(uct_gpumem_ib_md_t *md,
                                 uct_gpumem_ib_reg_params_t *params,
                                 void *address, size_t length,
                                 gpumem_reg_view_t *view)
{
    ucs_status_t status;

    status = uct_gpumem_ib_device_mem_open(&md->gpus_settings,
                                           md->device_mem_reg,
                                           md->domain.name, address, length,
                                           params->super.log_level,
                                           &params->device,
                                           &params->super.memory);
    if (status != UCS_OK) {
        return status;
    }

    /* Made, the registration holds the device memory (ib_mr.c) */
    params->host_iova = (uintptr_t)address;
    status            = gpumem_reg_register(&md->domain, &params->super,
                                            view);
    uct_gpumem_ib_device_mem_registered(params->device);
    if (status != UCS_OK) {
        uct_gpumem_ib_device_mem_close(params->device);
    }
    return status;
}

ucs_status_t uct_gpumem_ib_md_register_range(uct_gpumem_ib_md_t *md,
                                             uct_gpumem_ib_reg_params_t *params,
                                             void *address, size_t length,
                                             gpumem_reg_view_t *view)
{
    if ((md->gpus != NULL) &&
        (uct_gpumem_context_find_gpu(md->gpus, address) >= 0)) {
        return uct_gpumem_ib_md_register_device(md, params, address, length,
                                                view);
    }

    params->super.memory.type         = GPUMEM_REG_MEMORY_HOST;
    params->super.memory.host.address = address;
    params->super.memory.host.length  = length;
    params->host_iova                 = (uintptr_t)address;
    params->device                    = NULL;
    return gpumem_reg_register(&md->domain, &params->super, view);
}

static ucs_status_t uct_gpumem_ib_mem_reg_flags(uct_md_h uct_md,
                                                void *address, size_t length,
                                                unsigned flags,
                                                uct_mem_h *memh_p)
{
    uct_gpumem_ib_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ib_md_t);
    uct_gpumem_ib_reg_params_t params;
    uct_gpumem_ib_memh_t *memh;
    ucs_status_t status;

    params.super.access    = uct_gpumem_ib_access_from_uct_flags(
                                     flags, md->max_access);
    params.super.order     = md->order;
    params.super.log_level = uct_md_reg_log_lvl(flags);

    if ((md->rcache[params.super.access] != NULL) &&
        uct_gpumem_ib_rcache_takes(address, length)) {
        return uct_gpumem_ib_rcache_get(md, &params, address, length, memh_p);
    }

    memh = uct_gpumem_ib_memh_alloc(md, params.super.log_level);
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_ib_md_register_range(md, &params, address, length,
                                             &memh->view);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }

    *memh_p = memh;
    return UCS_OK;
}

UCT_GPUMEM_MD_MEM_REG_DEFINE(uct_gpumem_ib_mem_reg, uct_gpumem_ib_mem_reg_flags)

ucs_status_t uct_gpumem_ib_mem_reg_memory(uct_md_h uct_md,
                                          const gpumem_reg_params_t *params,
                                          uct_mem_h *memh_p)
{
    uct_gpumem_ib_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ib_md_t);
    uct_gpumem_ib_reg_params_t capped;
    uct_gpumem_ib_memh_t *memh;
    ucs_status_t status;

    capped.super     = *params;
    capped.host_iova = (params->memory.type == GPUMEM_REG_MEMORY_HOST) ?
                       (uintptr_t)params->memory.host.address : 0;
    capped.device    = NULL;
    if (((unsigned)capped.super.access < GPUMEM_REG_ACCESS_LAST) &&
        (capped.super.access > md->max_access)) {
        ucs_debug("gpumem: %s: %s access asked, %s granted (MAX_ACCESS)",
                  md->domain.name, gpumem_reg_access_name(capped.super.access),
                  gpumem_reg_access_name(md->max_access));
        capped.super.access = md->max_access;
    }

    memh = uct_gpumem_ib_memh_alloc(md, capped.super.log_level);
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = gpumem_reg_register(&md->domain, &capped.super, &memh->view);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }

    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_ib_mem_dereg(uct_md_h UCS_V_UNUSED uct_md,
                        const uct_md_mem_dereg_params_t *params)
{
    uct_gpumem_ib_memh_t *memh;
    ucs_status_t status;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    memh = params->memh;
    if (memh->rcache != NULL) {
        uct_gpumem_ib_rcache_put(memh);
        return UCS_OK;
    }

    /* Whatever the status, the handle is gone: after a failure the domain
     * keeps the registration until it closes */
    status = gpumem_reg_view_release(&memh->view);
    ucs_free(memh);
    return status;
}

static ucs_status_t
uct_gpumem_ib_mkey_pack_view(uct_md_h UCS_V_UNUSED uct_md, uct_mem_h uct_memh,
                             void UCS_V_UNUSED *address,
                             size_t UCS_V_UNUSED length,
                             const uct_md_mkey_pack_params_t UCS_V_UNUSED
                                     *params,
                             void *rkey_buffer)
{
    uct_gpumem_ib_memh_t *memh = uct_memh;
    gpumem_reg_remote_view_t remote_view;
    ucs_status_t status;

    status = gpumem_reg_view_export(&memh->view, &remote_view);
    if (status != UCS_OK) {
        return status;
    }

    gpumem_reg_wire_pack(&remote_view, rkey_buffer);
    return UCS_OK;
}

UCT_GPUMEM_MD_MKEY_PACK_DEFINE(uct_gpumem_ib_mkey_pack,
                               uct_gpumem_ib_mkey_pack_view)

/* UCT 1.13 passes no length: the buffer is the peer's rkey_packed_size
 * bytes, which is the wire form's size in every version of this component
 * that reads this version */
static ucs_status_t
uct_gpumem_ib_rkey_unpack_view(uct_component_t UCS_V_UNUSED *component,
                               const void *rkey_buffer,
                               uct_rkey_t *rkey_p, void **handle_p)
{
    gpumem_reg_remote_view_t *remote_view;
    ucs_status_t status;

    remote_view = ucs_malloc(sizeof(*remote_view), "gpumem_ib_rkey");
    if (remote_view == NULL) {
        ucs_error("gpumem: failed to allocate a remote key");
        return UCS_ERR_NO_MEMORY;
    }

    status = gpumem_reg_wire_unpack(rkey_buffer, GPUMEM_REG_WIRE_SIZE,
                                    remote_view);
    if (status != UCS_OK) {
        ucs_free(remote_view);
        return status;
    }

    *rkey_p   = (uintptr_t)remote_view;
    *handle_p = NULL;
    return UCS_OK;
}

UCT_GPUMEM_RKEY_UNPACK_DEFINE(uct_gpumem_ib_rkey_unpack,
                              uct_gpumem_ib_rkey_unpack_view)

static ucs_status_t
uct_gpumem_ib_rkey_release(uct_component_t UCS_V_UNUSED *component,
                           uct_rkey_t rkey, void UCS_V_UNUSED *handle)
{
    ucs_free((void*)rkey);
    return UCS_OK;
}

/* The process's GPUs, whose device memory the domain registers, as the
 * plugin's settings (UCX_GPUMEM_*) select them: every user of them shares
 * one driver. Without them the domain registers host memory. */

/* The topology's index of the driver's GPU @a gpu, by its PCI address: the
 * driver has the GPUs the process may use (CUDA_VISIBLE_DEVICES), the
 * topology every GPU of the machine; UINT_MAX, which no GPU of the
 * topology has, where it has none there */
static unsigned uct_gpumem_ib_md_topo_gpu(const uct_gpumem_context_t *gpus,
                                          unsigned gpu)
{
    const gpumem_topo_dev_t *dev;

    if ((gpus->topo == NULL) || (gpu >= gpus->num_gpus)) {
        return UINT_MAX;
    }
    dev = gpumem_topo_find(gpus->topo, &gpumem_gpu_reach(gpus->gpus[gpu])->addr);
    if ((dev == NULL) || (dev->type != GPUMEM_TOPO_DEV_GPU)) {
        return UINT_MAX;
    }
    return (unsigned)(dev - gpus->topo->devs);
}

static void uct_gpumem_ib_md_open_gpus(uct_gpumem_ib_md_t *md)
{
    const uct_gpumem_settings_t *settings = &md->gpus_settings;
    ucs_status_t status;

    status = uct_gpumem_settings_read(&md->gpus_settings);
    if (status != UCS_OK) {
        ucs_diag("gpumem: %s: registers host memory only: the GPUs' settings "
                 "(UCX_GPUMEM_*) cannot be read: %s", md->domain.name,
                 ucs_status_string(status));
        return;
    }

    md->has_settings    = 1;
    md->device_mem_type = settings->mem_type;

    status = uct_gpumem_context_get(settings, &md->gpus);
    if (status != UCS_OK) {
        ucs_diag("gpumem: %s: registers host memory only: the process's GPUs "
                 "did not open: %s", md->domain.name,
                 ucs_status_string(status));
        md->gpus = NULL;
        return;
    }

    uct_gpumem_ib_place_find(md->gpus->topo,
                             uct_gpumem_ib_md_topo_gpu(md->gpus,
                                                       settings->alloc_gpu),
                             md->domain.name,
                             (settings->topo_xml[0] == '\0') ?
                             GPUMEM_TOPO_BIND_ACTIVE : 0, &md->place);
    if (!md->place.dma_reaches) {
        ucs_diag("gpumem: %s does not reach the memory of GPU %u by DMA, and "
                 "is not offered for it: %s", md->domain.name,
                 settings->alloc_gpu, md->place.reason);
    } else if (md->place.known) {
        ucs_debug("gpumem: %s is NIC %u of GPU %u (%s, %u PCI links); the "
                  "GPU is bound to %s", md->domain.name, md->place.rank,
                  settings->alloc_gpu,
                  gpumem_topo_relation_name(md->place.relation),
                  md->place.hops,
                  md->place.bind_known ? md->place.bound_nic : "none");
    } else {
        ucs_debug("gpumem: %s: no place for GPU %u: %s", md->domain.name,
                  settings->alloc_gpu, md->place.reason);
    }
}

static void uct_gpumem_ib_md_close_gpus(uct_gpumem_ib_md_t *md)
{
    if (md->gpus != NULL) {
        uct_gpumem_context_put(md->gpus);
    }
    if (md->has_settings) {
        uct_gpumem_settings_release(&md->gpus_settings);
    }
}

static void uct_gpumem_ib_md_close(uct_md_h uct_md)
{
    uct_gpumem_ib_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ib_md_t);
    int ret;

    uct_gpumem_ib_rcache_cleanup(md);
    uct_gpumem_ib_mr_unwatch_frees(md);
    gpumem_reg_domain_cleanup(&md->domain);

    ret = ibv_dealloc_pd(md->pd);
    if (ret != 0) {
        ucs_warn("gpumem: %s: ibv_dealloc_pd() failed: %s; closing the "
                 "device releases it", md->domain.name, strerror(ret));
    }

    ibv_close_device(md->context);

    /* The device no longer reaches any memory: what the registrations that
     * failed to deregister held (windows on device memory) goes now */
    uct_gpumem_ib_mr_cleanup(md);
    uct_gpumem_ib_md_close_gpus(md);
    pthread_mutex_destroy(&md->lock);
    ucs_free(md);
}

static uct_md_ops_t uct_gpumem_ib_md_ops = {
    .close                  = uct_gpumem_ib_md_close,
    .query                  = uct_gpumem_ib_md_query,
    .mem_alloc              = uct_gpumem_md_mem_alloc_unsupported,
    .mem_free               = uct_gpumem_md_mem_free_unsupported,
    .mem_advise             = uct_gpumem_md_mem_advise_unsupported,
    .mem_reg                = uct_gpumem_ib_mem_reg,
    .mem_dereg              = uct_gpumem_ib_mem_dereg,
    .mem_query              = uct_gpumem_md_mem_query_unsupported,
    .mkey_pack              = uct_gpumem_ib_mkey_pack,
    .detect_memory_type     = uct_gpumem_md_detect_memory_type_unsupported,
    UCT_GPUMEM_MD_OPS_COMPAT
};

static struct ibv_device *
uct_gpumem_ib_find_device(struct ibv_device **devices, int num_devices,
                          const char *dev_name)
{
    int i;

    for (i = 0; i < num_devices; ++i) {
        if (!strcmp(ibv_get_device_name(devices[i]), dev_name)) {
            return devices[i];
        }
    }

    return NULL;
}

static ucs_status_t uct_gpumem_ib_md_open_device(uct_gpumem_ib_md_t *md,
                                                 const char *dev_name)
{
    struct ibv_device_attr attr;
    struct ibv_device **devices;
    struct ibv_device *device;
    ucs_status_t status;
    int num_devices, ret;

    devices = ibv_get_device_list(&num_devices);
    if (devices == NULL) {
        ucs_error("gpumem: cannot list RDMA devices: %s", strerror(errno));
        return UCS_ERR_NO_DEVICE;
    }

    device = uct_gpumem_ib_find_device(devices, num_devices, dev_name);
    if (device == NULL) {
        ucs_error("gpumem: no RDMA device '%s'", dev_name);
        status = UCS_ERR_NO_DEVICE;
        goto err_free_list;
    }

    md->context = ibv_open_device(device);
    if (md->context == NULL) {
        ucs_error("gpumem: %s: ibv_open_device() failed: %s", dev_name,
                  strerror(errno));
        status = UCS_ERR_IO_ERROR;
        goto err_free_list;
    }

    ret = ibv_query_device(md->context, &attr);
    if (ret != 0) {
        ucs_error("gpumem: %s: ibv_query_device() failed: %s", dev_name,
                  strerror(ret));
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    md->pd = ibv_alloc_pd(md->context);
    if (md->pd == NULL) {
        ucs_error("gpumem: %s: ibv_alloc_pd() failed: %s", dev_name,
                  strerror(errno));
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    md->max_mr_size = attr.max_mr_size;
    ibv_free_device_list(devices);
    return UCS_OK;

err_close:
    ibv_close_device(md->context);
err_free_list:
    ibv_free_device_list(devices);
    return status;
}

static ucs_status_t
uct_gpumem_ib_md_open(uct_component_t *component, const char *md_name,
                      const uct_md_config_t *uct_md_config, uct_md_h *md_p)
{
    const uct_gpumem_ib_md_config_t *md_config =
            ucs_derived_of(uct_md_config, uct_gpumem_ib_md_config_t);
    const char *dev_name = uct_gpumem_ib_md_dev_name(md_name);
    uct_gpumem_ib_md_t *md;
    ucs_status_t status;

    md = ucs_calloc(1, sizeof(*md), "uct_gpumem_ib_md_t");
    if (md == NULL) {
        ucs_error("gpumem: failed to allocate memory domain %s", md_name);
        return UCS_ERR_NO_MEMORY;
    }

    pthread_mutex_init(&md->lock, NULL);
    ucs_list_head_init(&md->mrs);
    ucs_list_head_init(&md->device_mrs);

    status = uct_gpumem_ib_md_open_device(md, dev_name);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = gpumem_reg_domain_init(&md->domain, dev_name,
                                    &uct_gpumem_ib_reg_ops, md);
    if (status != UCS_OK) {
        goto err_close_device;
    }

    md->max_access           = (gpumem_reg_access_t)md_config->max_access;
    md->order                = (gpumem_reg_order_t)md_config->order;
    md->device_mem_reg       = (uct_gpumem_ib_device_reg_t)
                               md_config->device_mem_reg;
    md->dmabuf_fallback_said = 0;
    md->super.ops            = &uct_gpumem_ib_md_ops;
    md->super.component      = component;
    uct_gpumem_ib_md_open_gpus(md);
    if (md->gpus != NULL) {
        uct_gpumem_ib_mr_watch_frees(md);
    }

    status = uct_gpumem_ib_rcache_init(md, md_config->enable_rcache,
                                       &md_config->rcache);
    if (status != UCS_OK) {
        goto err_close_gpus;
    }

    *md_p = &md->super;
    return UCS_OK;

err_close_gpus:
    uct_gpumem_ib_mr_unwatch_frees(md);
    uct_gpumem_ib_md_close_gpus(md);
    gpumem_reg_domain_cleanup(&md->domain);
err_close_device:
    ibv_dealloc_pd(md->pd);
    ibv_close_device(md->context);
err_free:
    pthread_mutex_destroy(&md->lock);
    ucs_free(md);
    return status;
}

uct_component_t uct_gpumem_ib_component = {
    .name               = "gpumem_ib",
    .query_md_resources = uct_gpumem_ib_query_md_resources,
    .md_open            = uct_gpumem_ib_md_open,
    .cm_open            = uct_gpumem_component_cm_open_unsupported,
    .rkey_unpack        = uct_gpumem_ib_rkey_unpack,
    .rkey_ptr           = uct_gpumem_component_rkey_ptr_unsupported,
    .rkey_release       = uct_gpumem_ib_rkey_release,
    .md_config          = {
        .name           = "gpumem RDMA registration memory domain",
        .prefix         = "GPUMEM_IB_",
        .table          = uct_gpumem_ib_md_config_table,
        .size           = sizeof(uct_gpumem_ib_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_gpumem_ib_component),
    .flags              = 0,
    .md_vfs_init        = uct_gpumem_component_md_vfs_init_none,
    UCT_GPUMEM_COMPONENT_COMPAT
};
