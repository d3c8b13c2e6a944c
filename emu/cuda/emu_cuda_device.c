/**
 * gpumem emulated CUDA: the devices, their names, places and attributes.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <emu/machine/emu.h>

#include <ucs/sys/string.h>
#include <string.h>
#include <unistd.h>


/* The device @a device of an entered call, or CUDA_ERROR_INVALID_DEVICE */
static CUresult gpumem_emu_cuda_device_check(CUdevice device)
{
    return (gpumem_emu_cuda_gpu(device) != NULL) ? CUDA_SUCCESS :
           CUDA_ERROR_INVALID_DEVICE;
}

static const gpumem_topo_reach_t *gpumem_emu_cuda_reach(CUdevice device)
{
    return gpumem_emu_cuda.emu->ops->reach(gpumem_emu_cuda_gpu(device));
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (count == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    *count = gpumem_emu_cuda.num_devices;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (device == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_device_check(ordinal);
    if (res == CUDA_SUCCESS) {
        *device = ordinal;
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice device)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((name == NULL) || (len <= 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_device_check(device);
    if (res == CUDA_SUCCESS) {
        ucs_strncpy_zero(name, "gpumem emulated GPU", len);
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *bus_id, int len, CUdevice device)
{
    const gpumem_pci_addr_t *addr;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((bus_id == NULL) || (len <= 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_device_check(device);
    if (res == CUDA_SUCCESS) {
        /* The form of cudaDeviceGetPCIBusId: upper case hex */
        addr = &gpumem_emu_cuda_reach(device)->addr;
        ucs_snprintf_zero(bus_id, len, "%04X:%02X:%02X.%X", addr->domain,
                          addr->bus, addr->dev, addr->fn);
    }
    return gpumem_emu_cuda_return(res);
}

/* FNV-1a over @a length bytes, from @a hash */
static uint64_t gpumem_emu_cuda_fnv(uint64_t hash, const void *bytes,
                                    size_t length)
{
    const unsigned char *p = bytes;
    size_t i;

    for (i = 0; i < length; ++i) {
        hash = (hash ^ p[i]) * 0x100000001b3ull;
    }
    return hash;
}

/* A device's UUID: of its machine's identity and its PCI address, so that
 * every process of the machine, and no other machine, gives the same */
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice device)
{
    const gpumem_topo_reach_t *reach;
    uint64_t halves[2];
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (uuid == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_device_check(device);
    if (res == CUDA_SUCCESS) {
        reach     = gpumem_emu_cuda_reach(device);
        halves[0] = gpumem_emu_cuda_fnv(0xcbf29ce484222325ull, reach->machine,
                                        strnlen(reach->machine,
                                                sizeof(reach->machine)));
        halves[1] = gpumem_emu_cuda_fnv(halves[0] ^ 0x9e3779b97f4a7c15ull,
                                        &reach->addr, sizeof(reach->addr));
        halves[0] = gpumem_emu_cuda_fnv(halves[0], &reach->addr,
                                        sizeof(reach->addr));
        memcpy(uuid->bytes, halves, sizeof(uuid->bytes));
    }
    return gpumem_emu_cuda_return(res);
}

/* The first version's symbol, which older programs link: the same answer */
CUresult CUDAAPI gpumem_emu_cuda_get_uuid_v1(CUuuid *uuid, CUdevice device)
        __asm__("cuDeviceGetUuid") __attribute__((alias("cuDeviceGetUuid_v2")));

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice device)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (bytes == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_device_check(device);
    if (res == CUDA_SUCCESS) {
        *bytes = gpumem_emu_cuda.emu->ops->vram_size(
                gpumem_emu_cuda_gpu(device));
    }
    return gpumem_emu_cuda_return(res);
}

/* The attributes an emulated GPU has: those of a copy engine with unified
 * addressing and the virtual memory management API; the compute ones of a
 * device that runs no kernel */
static CUresult gpumem_emu_cuda_attribute(CUdevice_attribute attrib,
                                          CUdevice device, int *value)
{
    const gpumem_pci_addr_t *addr = &gpumem_emu_cuda_reach(device)->addr;

    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        *value = addr->domain;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *value = addr->bus;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        *value = addr->dev;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
        *value = 1;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        /* Memory pools are not emulated (their calls are stubs) */
        *value = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        /* The emu exports a dma-buf through the kernel's udmabuf: where
         * there is none, cuMemGetHandleForAddressRange cannot succeed */
        *value = (access(GPUMEM_EMU_UDMABUF_DEV, R_OK | W_OK) == 0);
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        *value = 2;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = 9;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
        *value = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = 1;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attrib,
                                      CUdevice device)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (value == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_device_check(device);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_attribute(attrib, device, value);
    }
    return gpumem_emu_cuda_return(res);
}

/* The machine's topology decides, as the emu's own page tables do when a
 * GPU maps a peer's memory */
CUresult CUDAAPI cuDeviceCanAccessPeer(int *can_access, CUdevice device,
                                       CUdevice peer)
{
    gpumem_topo_verdict_t verdict;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (can_access == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if ((gpumem_emu_cuda_device_check(device) != CUDA_SUCCESS) ||
        (gpumem_emu_cuda_device_check(peer) != CUDA_SUCCESS)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_DEVICE);
    }
    /* A device is no peer of its own */
    *can_access = (device != peer) &&
                  gpumem_topo_reaches(gpumem_emu_cuda_reach(device),
                                      gpumem_emu_cuda_reach(peer), 0,
                                      &verdict);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
