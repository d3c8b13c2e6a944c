/**
 * gpumem cuda driver: opening the CUDA devices, their facts, and the ops
 * table.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"

#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <ucs/sys/string.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#ifdef GPUMEM_FAULT_INJECTION
static void gpumem_cuda_inject_fault(gpumem_driver_gpu_t *handle,
                                     gpumem_driver_fault_t fault)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);

    if (fault < ucs_static_array_size(gpu->faults)) {
        ++gpu->faults[fault];
    }
}
#endif

ucs_status_t gpumem_cuda_probe(char *why_buf, size_t max)
{
    char name[32];
    ucs_status_t status;
    CUresult res;
    int count;

    status = gpumem_cuda_api_open(why_buf, max);
    if (status != UCS_OK) {
        return status;
    }

    res = gpumem_cuda_api.cuDeviceGetCount(&count);
    if (res != CUDA_SUCCESS) {
        ucs_snprintf_zero(why_buf, max, "cuDeviceGetCount: %s: %s",
                          gpumem_cuda_error_name(res, name, sizeof(name)),
                          gpumem_cuda_error_string(res));
        return gpumem_cuda_status(res);
    }
    if (count == 0) {
        ucs_snprintf_zero(why_buf, max, "%s (driver %d) sees no device",
                          GPUMEM_CUDA_LIBRARY,
                          gpumem_cuda_api.driver_version);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

static gpumem_cuda_driver_t *gpumem_cuda_driver(gpumem_driver_t *driver)
{
    return ucs_derived_of(driver, gpumem_cuda_driver_t);
}

static unsigned gpumem_cuda_num_gpus(gpumem_driver_t *driver)
{
    return gpumem_cuda_driver(driver)->num_gpus;
}

static gpumem_driver_gpu_t *gpumem_cuda_gpu_at(gpumem_driver_t *driver,
                                               unsigned index)
{
    gpumem_cuda_driver_t *cuda = gpumem_cuda_driver(driver);

    return (index < cuda->num_gpus) ?
           gpumem_cuda_gpu_handle(&cuda->gpus[index]) : NULL;
}

static const gpumem_topo_reach_t *gpumem_cuda_reach(gpumem_driver_gpu_t *gpu)
{
    return &gpumem_cuda_gpu(gpu)->reach;
}

static size_t gpumem_cuda_vram_size(gpumem_driver_gpu_t *gpu)
{
    return gpumem_cuda_gpu(gpu)->vram_size;
}

/* What the driver says is free on the device now, for every process */
static ucs_status_t gpumem_cuda_vram_free(gpumem_driver_gpu_t *handle,
                                          size_t *free_p)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    ucs_status_t status;
    size_t total;

    status = gpumem_cuda_ctx_push(gpu, "free memory");
    if (status != UCS_OK) {
        return status;
    }

    GPUMEM_CUDA_CALL(&status, cuMemGetInfo, (free_p, &total),
                     "free memory of device %d", gpu->ordinal);
    gpumem_cuda_ctx_pop(gpu);
    return status;
}

static size_t gpumem_cuda_bar_size(gpumem_driver_gpu_t *gpu)
{
    return gpumem_cuda_gpu(gpu)->bar_size;
}

/* The PCI function of a device can reach the BAR only through a dma-buf or
 * nvidia-peermem: the driver API gives no bus address */
static uint64_t gpumem_cuda_bar_bus_addr(gpumem_driver_gpu_t UCS_V_UNUSED *gpu)
{
    return 0;
}

static void gpumem_cuda_release(gpumem_driver_gpu_t *handle)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);

    /* The driver API cannot turn bus mastering off: what it can do is let
     * no copy run past the release, and refuse every later mapping */
    if (gpumem_cuda_ctx_push(gpu, "release") == UCS_OK) {
        gpumem_cuda_api.cuStreamSynchronize(gpu->stream);
        gpumem_cuda_ctx_pop(gpu);
    }
    gpu->released = 1;
    gpumem_cuda_gpu_log(UCS_LOG_LEVEL_DEBUG, gpu, "released: no mapping or "
                        "copy after this");
}

static void gpumem_cuda_gpu_cleanup(gpumem_cuda_gpu_t *gpu)
{
    pthread_mutex_destroy(&gpu->events_lock);
    if (gpu->ctx == NULL) {
        return;
    }

    if (gpumem_cuda_ctx_push(gpu, "close") == UCS_OK) {
        gpumem_cuda_copy_cleanup(gpu);
        if (gpu->stream != NULL) {
            gpumem_cuda_api.cuStreamDestroy(gpu->stream);
        }
        gpumem_cuda_ctx_pop(gpu);
    }
    gpumem_cuda_api.cuDevicePrimaryCtxRelease(gpu->device);
}

static void gpumem_cuda_driver_free(gpumem_cuda_driver_t *cuda)
{
    unsigned i;

    for (i = 0; i < cuda->num_gpus; ++i) {
        gpumem_cuda_gpu_cleanup(&cuda->gpus[i]);
    }
    pthread_mutex_destroy(&cuda->host_lock);
    ucs_free(cuda->gpus);
    ucs_free(cuda);
}

static void gpumem_cuda_close(gpumem_driver_t *driver)
{
    gpumem_cuda_driver_free(gpumem_cuda_driver(driver));
}

/* A GPU's DMA engine across PCIe, as UCX's cuda_copy expects of it: about
 * 10 GB/s between host and device, some microseconds from posting to the
 * event of its end; the machine's processes share the engines */
static const gpumem_driver_ops_t gpumem_cuda_ops = {
    .name           = "cuda",
    .flags          = GPUMEM_DRIVER_FLAG_HOST_UVA |
                      GPUMEM_DRIVER_FLAG_NO_PHYS |
                      GPUMEM_DRIVER_FLAG_PROCESS_MAPS |
                      GPUMEM_DRIVER_FLAG_COPY_UNCHECKED |
                      GPUMEM_DRIVER_FLAG_RELEASE_UNMAPS,
    .copy_bandwidth = 10000.0 * UCS_MBYTE,
    .copy_latency   = 8e-6,
    .copy_shared    = 1,
    .num_gpus       = gpumem_cuda_num_gpus,
    .gpu            = gpumem_cuda_gpu_at,
    .reach          = gpumem_cuda_reach,
    .vram_size      = gpumem_cuda_vram_size,
    .vram_free      = gpumem_cuda_vram_free,
    .bar_size       = gpumem_cuda_bar_size,
    .close          = gpumem_cuda_close,
    .mem_alloc      = gpumem_cuda_mem_alloc,
    .mem_free       = gpumem_cuda_mem_free,
    .mem_export     = gpumem_cuda_mem_export,
    .mem_import     = gpumem_cuda_mem_import,
    .va_reserve     = gpumem_cuda_va_reserve,
    .va_release     = gpumem_cuda_va_release,
    .pt_map_vram    = gpumem_cuda_pt_map_vram,
    .pt_map_host    = gpumem_cuda_pt_map_host,
    .pt_unmap       = gpumem_cuda_pt_unmap,
    .pin            = gpumem_cuda_pin,
    .unpin          = gpumem_cuda_unpin,
    .sys_alloc      = gpumem_cuda_sys_alloc,
    .sys_free       = gpumem_cuda_sys_free,
    .bar_map        = gpumem_cuda_bar_map,
    .bar_unmap      = gpumem_cuda_bar_unmap,
    .bar_bus_addr   = gpumem_cuda_bar_bus_addr,
    .dmabuf_export  = gpumem_cuda_dmabuf_export,
    .copy           = gpumem_cuda_copy,
    .copy_poll      = gpumem_cuda_copy_poll,
    .copy_sync      = gpumem_cuda_copy_sync,
    .is_device_addr = gpumem_cuda_is_device_addr,
    .addr_query     = gpumem_cuda_addr_query,
    .addr_export    = gpumem_cuda_addr_export,
    .release        = gpumem_cuda_release,
#ifdef GPUMEM_FAULT_INJECTION
    .inject_fault   = gpumem_cuda_inject_fault
#endif
};

ucs_status_t gpumem_cuda_bus_id_parse(const char *bus_id,
                                      gpumem_pci_addr_t *addr_p)
{
    unsigned domain, bus, dev, fn;
    int end = -1;

    /* The driver writes the domain with 4 or 8 digits, hex in either case */
    if ((sscanf(bus_id, "%8x:%2x:%2x.%1x%n", &domain, &bus, &dev, &fn,
                &end) != 4) ||
        (end < 0) || (bus_id[end] != '\0') || (domain > UINT16_MAX) ||
        (dev > 0x1f) || (fn > 7)) {
        return UCS_ERR_INVALID_PARAM;
    }

    addr_p->domain = domain;
    addr_p->bus    = bus;
    addr_p->dev    = dev;
    addr_p->fn     = fn;
    return UCS_OK;
}

/* The GPU's place: the topology's facts for the device at its PCI bus id,
 * or, where the topology does not list it, its address and machine alone
 * (reaches() then says "unknown" for it) */
static ucs_status_t gpumem_cuda_gpu_place(gpumem_cuda_gpu_t *gpu,
                                          const gpumem_topo_t *topo)
{
    const gpumem_topo_dev_t *dev;
    char bus_id[32];
    ucs_status_t status;

    GPUMEM_CUDA_CALL(&status, cuDeviceGetPCIBusId,
                     (bus_id, sizeof(bus_id), gpu->device),
                     "PCI bus id of device %d", gpu->ordinal);
    if (status != UCS_OK) {
        return status;
    }

    memset(&gpu->reach, 0, sizeof(gpu->reach));
    status = gpumem_cuda_bus_id_parse(bus_id, &gpu->reach.addr);
    if (status != UCS_OK) {
        ucs_error("gpumem_cuda: device %d has PCI bus id '%s', which is not "
                  "a PCI address", gpu->ordinal, bus_id);
        return status;
    }

    dev = gpumem_topo_find(topo, &gpu->reach.addr);
    if ((dev != NULL) && (dev->type == GPUMEM_TOPO_DEV_GPU)) {
        gpu->reach = dev->reach;
        return UCS_OK;
    }

    ucs_diag("gpumem_cuda: device %d at %s is not a GPU of the machine's "
             "topology: its peers are unknown", gpu->ordinal, bus_id);
    if (gethostname(gpu->reach.machine, sizeof(gpu->reach.machine)) != 0) {
        ucs_strncpy_zero(gpu->reach.machine, "localhost",
                         sizeof(gpu->reach.machine));
    }
    gpu->reach.space       = (topo->num_devs > 0) ?
                             topo->devs[0].reach.space : 1;
    gpu->reach.iommu_group = -1;
    gpu->reach.package     = -1;
    gpu->reach.fabric_domain = -1;
    return UCS_OK;
}

static ucs_status_t gpumem_cuda_gpu_init(gpumem_cuda_gpu_t *gpu)
{
    CUmemAllocationProp prop = {};
    char name[48];
    size_t granularity;
    ucs_status_t status;
    int rdma_vmm;

    if (gpumem_cuda_api.cuDeviceGetName(name, sizeof(name), gpu->device) !=
        CUDA_SUCCESS) {
        ucs_strncpy_zero(name, "CUDA device", sizeof(name));
    }
    ucs_snprintf_zero(gpu->name, sizeof(gpu->name), "%s %04x:%02x:%02x.%x",
                      name, gpu->reach.addr.domain, gpu->reach.addr.bus,
                      gpu->reach.addr.dev, gpu->reach.addr.fn);

    GPUMEM_CUDA_CALL(&status, cuDeviceTotalMem, (&gpu->vram_size,
                                                 gpu->device),
                     "memory size of device %d", gpu->ordinal);
    if (status != UCS_OK) {
        return status;
    }
    gpu->bar_size = gpu->reach.bar_size.known ? gpu->reach.bar_size.value :
                    gpu->vram_size;

    /* Allocations a NIC may reach need the flag, which a device that does
     * not support it refuses */
    rdma_vmm = 0;
    gpumem_cuda_api.cuDeviceGetAttribute(
            &rdma_vmm,
            CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
            gpu->device);
    gpu->rdma_vmm = rdma_vmm;

    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = gpu->ordinal;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    GPUMEM_CUDA_CALL(&status, cuMemGetAllocationGranularity,
                     (&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     "allocation granularity of device %d", gpu->ordinal);
    if (status != UCS_OK) {
        return status;
    }
    gpu->driver->granularity = ucs_max(gpu->driver->granularity,
                                       ucs_roundup_pow2(granularity));

    GPUMEM_CUDA_CALL(&status, cuDevicePrimaryCtxRetain,
                     (&gpu->ctx, gpu->device),
                     "primary context of device %d", gpu->ordinal);
    if (status != UCS_OK) {
        gpu->ctx = NULL;
        return status;
    }

    status = gpumem_cuda_ctx_push(gpu, "open");
    if (status != UCS_OK) {
        return status;
    }

    GPUMEM_CUDA_CALL(&status, cuStreamCreate,
                     (&gpu->stream, CU_STREAM_NON_BLOCKING),
                     "copy stream of device %d", gpu->ordinal);
    gpumem_cuda_ctx_pop(gpu);
    if (status != UCS_OK) {
        gpu->stream = NULL;
        return status;
    }

    ucs_debug("gpumem_cuda: GPU %u: %s, device %d, %zu MiB, granularity "
              "%zu KiB, GPUDirect RDMA with VMM: %s", gpu->index, gpu->name,
              gpu->ordinal, gpu->vram_size >> 20, granularity >> 10,
              gpu->rdma_vmm ? "yes" : "no");
    return UCS_OK;
}

/* reaches() from the machine's facts against what the driver says; the
 * facts decide, a disagreement is logged with both answers */
static void gpumem_cuda_check_peers(gpumem_cuda_driver_t *cuda)
{
    gpumem_cuda_gpu_t *r, *o;
    gpumem_topo_verdict_t verdict;
    int topo_says, can_access;
    unsigned i, j;

    for (i = 0; i < cuda->num_gpus; ++i) {
        for (j = 0; j < cuda->num_gpus; ++j) {
            if (i == j) {
                continue;
            }

            r         = &cuda->gpus[i];
            o         = &cuda->gpus[j];
            topo_says = gpumem_topo_reaches(&r->reach, &o->reach, 0,
                                            &verdict);
            if (gpumem_cuda_api.cuDeviceCanAccessPeer(&can_access, r->device,
                                                      o->device) !=
                CUDA_SUCCESS) {
                continue;
            }

            if (!topo_says != !can_access) {
                ucs_diag("gpumem_cuda: does GPU %s reach GPU %s? the "
                         "machine's facts say %s (%s), cuDeviceCanAccessPeer "
                         "says %s", r->name, o->name, topo_says ? "yes" : "no",
                         verdict.reason, can_access ? "yes" : "no");
            }
        }
    }
}

static int gpumem_cuda_gpu_cmp(const void *a, const void *b)
{
    return gpumem_pci_addr_cmp(&((const gpumem_cuda_gpu_t*)a)->reach.addr,
                               &((const gpumem_cuda_gpu_t*)b)->reach.addr);
}

ucs_status_t gpumem_cuda_open(gpumem_topo_t *topo, gpumem_driver_t **driver_p)
{
    gpumem_cuda_driver_t *cuda;
    char why[256];
    ucs_status_t status;
    unsigned i;
    int count;

    status = gpumem_cuda_probe(why, sizeof(why));
    if (status != UCS_OK) {
        ucs_error("gpumem_cuda: no CUDA device: %s", why);
        return status;
    }

    GPUMEM_CUDA_CALL(&status, cuDeviceGetCount, (&count), "device count");
    if (status != UCS_OK) {
        return status;
    }

    cuda = ucs_calloc(1, sizeof(*cuda), "gpumem_cuda_driver");
    if (cuda == NULL) {
        ucs_error("gpumem_cuda: cannot allocate the driver");
        return UCS_ERR_NO_MEMORY;
    }

    cuda->gpus = ucs_calloc(count, sizeof(*cuda->gpus), "gpumem_cuda_gpus");
    if (cuda->gpus == NULL) {
        ucs_error("gpumem_cuda: cannot allocate %d GPUs", count);
        ucs_free(cuda);
        return UCS_ERR_NO_MEMORY;
    }

    cuda->super.ops = &gpumem_cuda_ops;
    cuda->num_gpus  = count;
    pthread_mutex_init(&cuda->host_lock, NULL);
    ucs_list_head_init(&cuda->hosts);
    ucs_list_head_init(&cuda->opened);

    /* Topology order is PCI address order: place every device first */
    for (i = 0; i < cuda->num_gpus; ++i) {
        cuda->gpus[i].driver  = cuda;
        cuda->gpus[i].ordinal = i;
        GPUMEM_CUDA_CALL(&status, cuDeviceGet, (&cuda->gpus[i].device, i),
                         "device %u", i);
        if (status == UCS_OK) {
            status = gpumem_cuda_gpu_place(&cuda->gpus[i], topo);
        }
        if (status != UCS_OK) {
            cuda->num_gpus = 0;
            goto err_free;
        }
    }
    qsort(cuda->gpus, cuda->num_gpus, sizeof(*cuda->gpus),
          gpumem_cuda_gpu_cmp);

    /* calloc's zeros are an unlocked mutex until then, for the cleanup */
    for (i = 0; i < cuda->num_gpus; ++i) {
        cuda->gpus[i].index = i;
        pthread_mutex_init(&cuda->gpus[i].events_lock, NULL);
        status = gpumem_cuda_gpu_init(&cuda->gpus[i]);
        if (status != UCS_OK) {
            goto err_free;
        }
    }

    gpumem_cuda_check_peers(cuda);
    ucs_debug("gpumem_cuda: %u GPUs, driver version %d", cuda->num_gpus,
              gpumem_cuda_api.driver_version);
    *driver_p = &cuda->super;
    return UCS_OK;

err_free:
    gpumem_cuda_driver_free(cuda);
    return status;
}
