/**
 * gpumem emulated CUDA: the virtual memory management API: physical
 * allocations, address reservations, mappings and access, and their
 * handles for other processes and for NICs.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"
#include "emu_cuda_hook.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <unistd.h>


/* Of what the library gave, the allocation a handle names, or NULL */
static gpumem_emu_cuda_vmm_t *
gpumem_emu_cuda_vmm_find(CUmemGenericAllocationHandle handle)
{
    gpumem_emu_cuda_vmm_t *vmm;

    ucs_list_for_each(vmm, &gpumem_emu_cuda.vmms, list) {
        if ((uintptr_t)vmm == handle) {
            return vmm;
        }
    }
    return NULL;
}

static CUresult gpumem_emu_cuda_vmm_new(gpumem_driver_mem_t *mem, int device,
                                        CUmemGenericAllocationHandle *handle)
{
    gpumem_emu_cuda_vmm_t *vmm;

    vmm = ucs_calloc(1, sizeof(*vmm), "gpumem_emu_cuda_vmm");
    if (vmm == NULL) {
        gpumem_emu_cuda.emu->ops->mem_free(mem);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    vmm->mem    = mem;
    vmm->size   = mem->size;
    vmm->device = device;
    vmm->refs    = 1;
    vmm->handles = 1;
    ucs_list_add_tail(&gpumem_emu_cuda.vmms, &vmm->list);
    *handle = (uintptr_t)vmm;
    return CUDA_SUCCESS;
}

/* The memory goes with its handle and its last mapping */
static void gpumem_emu_cuda_vmm_put(gpumem_emu_cuda_vmm_t *vmm)
{
    if (--vmm->refs > 0) {
        return;
    }
    gpumem_emu_cuda.emu->ops->mem_free(vmm->mem);
    ucs_list_del(&vmm->list);
    ucs_free(vmm);
}

/* The device of pinned device memory of @a prop */
static CUresult gpumem_emu_cuda_prop_device(const CUmemAllocationProp *prop,
                                            int *device_p)
{
    if ((prop == NULL) || (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) ||
        (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (gpumem_emu_cuda_gpu(prop->location.id) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    *device_p = prop->location.id;
    return CUDA_SUCCESS;
}

static int gpumem_emu_cuda_vmm_aligned(uint64_t value)
{
    return (value % GPUMEM_EMU_CUDA_GRANULARITY) == 0;
}

/* Of pinned device memory; a property left all zero (no type, no
 * location) is answered too, as NVIDIA's driver answers it (UCX's tests
 * ask so): the granule is every device's */
CUresult CUDAAPI cuMemGetAllocationGranularity(
        size_t *granularity, const CUmemAllocationProp *prop,
        CUmemAllocationGranularity_flags option)
{
    int device;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((granularity == NULL) || (prop == NULL) ||
        ((option != CU_MEM_ALLOC_GRANULARITY_MINIMUM) &&
         (option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = ((prop->type == CU_MEM_ALLOCATION_TYPE_INVALID) &&
           (prop->location.type == CU_MEM_LOCATION_TYPE_INVALID)) ?
          CUDA_SUCCESS : gpumem_emu_cuda_prop_device(prop, &device);
    if (res == CUDA_SUCCESS) {
        *granularity = GPUMEM_EMU_CUDA_GRANULARITY;
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop,
                             unsigned long long flags)
{
    gpumem_driver_mem_t *mem;
    ucs_status_t status;
    int device;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((handle == NULL) || (flags != 0) || (size == 0) ||
        !gpumem_emu_cuda_vmm_aligned(size)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_prop_device(prop, &device);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    status = gpumem_emu_cuda.emu->ops->mem_alloc(
            gpumem_emu_cuda_gpu(device), size, GPUMEM_EMU_CUDA_GRANULARITY, 0,
            &mem);
    if (status != UCS_OK) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_vmm_new(mem, device,
                                                          handle));
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    gpumem_emu_cuda_vmm_t *vmm;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    vmm = gpumem_emu_cuda_vmm_find(handle);
    if ((vmm == NULL) || (vmm->handles == 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    --vmm->handles;
    gpumem_emu_cuda_vmm_put(vmm);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* The handle of the physical memory mapped at @a addr, one more reference
 * to it; CUDA_ERROR_INVALID_VALUE where no cuMemMap put memory there */
GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_retain_handle(CUmemGenericAllocationHandle *handle,
                                  void *addr)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find((uintptr_t)addr);
    if ((handle == NULL) || (range == NULL) ||
        (range->kind != GPUMEM_EMU_CUDA_RANGE_VMM)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    ++range->vmm->handles;
    ++range->vmm->refs;
    *handle = (uintptr_t)range->vmm;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemRetainAllocationHandle,
                             cuMemRetainAllocationHandle,
                             gpumem_emu_cuda_mem_retain_handle)

/* Pinned device memory of its device, shareable by a POSIX fd, as every
 * allocation here is */
CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(
        CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    gpumem_emu_cuda_vmm_t *vmm;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    vmm = gpumem_emu_cuda_vmm_find(handle);
    if ((prop == NULL) || (vmm == NULL) || (vmm->handles == 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    memset(prop, 0, sizeof(*prop));
    prop->type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id          = vmm->device;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* The reservation that holds [ptr, ptr + size), or NULL */
static gpumem_emu_cuda_reservation_t *
gpumem_emu_cuda_reservation_find(uint64_t ptr, size_t size)
{
    gpumem_emu_cuda_reservation_t *resv;

    ucs_list_for_each(resv, &gpumem_emu_cuda.reservations, list) {
        if ((ptr >= resv->base) && (size <= resv->size) &&
            ((ptr - resv->base) <= (resv->size - size))) {
            return resv;
        }
    }
    return NULL;
}

/* Addresses of every device: they are taken in the first device's part
 * of the space, which every GPU's page tables map */
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
                                     size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags)
{
    gpumem_emu_cuda_reservation_t *resv;
    uint64_t va;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((ptr == NULL) || (flags != 0) || (size == 0) ||
        !gpumem_emu_cuda_vmm_aligned(size) ||
        ((alignment != 0) && !ucs_is_pow2(alignment))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    /* The address asked is a hint, which the library does not take */
    (void)addr;
    resv = ucs_calloc(1, sizeof(*resv), "gpumem_emu_cuda_reservation");
    if (resv == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    res = gpumem_emu_cuda_va_reserve(0, size,
                                     ucs_max(alignment,
                                             GPUMEM_EMU_CUDA_GRANULARITY),
                                     &va);
    if (res != CUDA_SUCCESS) {
        ucs_free(resv);
        return gpumem_emu_cuda_return(res);
    }

    resv->base = va;
    resv->size = size;
    resv->gpu  = 0;
    ucs_list_add_tail(&gpumem_emu_cuda.reservations, &resv->list);
    *ptr = va;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* Whether a mapping lies in [ptr, ptr + size) */
static int gpumem_emu_cuda_vmm_mapped_in(uint64_t ptr, size_t size)
{
    gpumem_emu_cuda_range_t *range;

    ucs_list_for_each(range, &gpumem_emu_cuda.ranges, list) {
        if ((range->kind == GPUMEM_EMU_CUDA_RANGE_VMM) &&
            (range->base < ptr + size) && (ptr < range->base + range->size)) {
            return 1;
        }
    }
    return 0;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    gpumem_emu_cuda_reservation_t *resv;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    resv = gpumem_emu_cuda_reservation_find(ptr, size);
    if ((resv == NULL) || (resv->base != ptr) || (resv->size != size) ||
        gpumem_emu_cuda_vmm_mapped_in(ptr, size)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    gpumem_emu_cuda.emu->ops->va_release(gpumem_emu_cuda_gpu(resv->gpu),
                                         resv->base, resv->size);
    ucs_list_del(&resv->list);
    ucs_free(resv);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                        CUmemGenericAllocationHandle handle,
                        unsigned long long flags)
{
    gpumem_emu_cuda_range_t *range;
    gpumem_emu_cuda_vmm_t *vmm;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    vmm = gpumem_emu_cuda_vmm_find(handle);
    if ((vmm == NULL) || (flags != 0) || (size == 0) ||
        !gpumem_emu_cuda_vmm_aligned(ptr | size | offset) ||
        (offset > vmm->size) || (size > vmm->size - offset) ||
        (gpumem_emu_cuda_reservation_find(ptr, size) == NULL)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (gpumem_emu_cuda_vmm_mapped_in(ptr, size)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_ALREADY_MAPPED);
    }

    range = gpumem_emu_cuda_range_new(GPUMEM_EMU_CUDA_RANGE_VMM, ptr, size,
                                      vmm->device);
    if (range == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    range->vmm = vmm;

    res = gpumem_emu_cuda_range_map(range, vmm->mem, offset);
    if (res != CUDA_SUCCESS) {
        gpumem_emu_cuda_range_free(range);
        return gpumem_emu_cuda_return(res);
    }
    ++vmm->refs;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemMap, cuMemMap, gpumem_emu_cuda_mem_map)

/* Whole mappings only, as NVIDIA's driver unmaps; after the work that may
 * use them */
GPUMEM_EMU_CUDA_HOOK_IMPL CUresult gpumem_emu_cuda_mem_unmap(CUdeviceptr ptr,
                                                             size_t size)
{
    gpumem_emu_cuda_range_t *range, *tmp;
    int found = 0;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((size == 0) || !gpumem_emu_cuda_vmm_aligned(ptr | size)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    ucs_list_for_each_safe(range, tmp, &gpumem_emu_cuda.ranges, list) {
        if ((range->kind != GPUMEM_EMU_CUDA_RANGE_VMM) ||
            (range->base >= ptr + size) || (ptr >= range->base + range->size)) {
            continue;
        }
        if ((range->base < ptr) ||
            (range->base + range->size > ptr + size)) {
            return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
        }
        found = 1;
    }
    if (!found) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    ucs_list_for_each_safe(range, tmp, &gpumem_emu_cuda.ranges, list) {
        if ((range->kind == GPUMEM_EMU_CUDA_RANGE_VMM) &&
            (range->base >= ptr) && (range->base < ptr + size)) {
            gpumem_emu_cuda_ctx_drain(&gpumem_emu_cuda.primary[range->device]);
            gpumem_emu_cuda_range_unmap(range);
            gpumem_emu_cuda_vmm_put(range->vmm);
            gpumem_emu_cuda_range_free(range);
        }
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemUnmap, cuMemUnmap, gpumem_emu_cuda_mem_unmap)

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                const CUmemAccessDesc *desc, size_t count)
{
    gpumem_emu_cuda_range_t *range;
    int found = 0;
    size_t i;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((desc == NULL) || (count == 0) || (size == 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    for (i = 0; i < count; ++i) {
        if ((desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) ||
            (gpumem_emu_cuda_gpu(desc[i].location.id) == NULL) ||
            (desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)) {
            return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
        }
    }

    ucs_list_for_each(range, &gpumem_emu_cuda.ranges, list) {
        if ((range->kind == GPUMEM_EMU_CUDA_RANGE_VMM) &&
            (range->base >= ptr) && (range->base + range->size <= ptr + size)) {
            range->access = 1;
            found         = 1;
        }
    }
    return gpumem_emu_cuda_return(found ? CUDA_SUCCESS :
                                          CUDA_ERROR_INVALID_VALUE);
}

CUresult CUDAAPI cuMemExportToShareableHandle(
        void *shareableHandle, CUmemGenericAllocationHandle handle,
        CUmemAllocationHandleType handleType, unsigned long long flags)
{
    gpumem_emu_cuda_vmm_t *vmm;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    vmm = gpumem_emu_cuda_vmm_find(handle);
    if ((shareableHandle == NULL) || (vmm == NULL) || (flags != 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_SUPPORTED);
    }
    return gpumem_emu_cuda_return(
            gpumem_emu_cuda_handle_file(vmm->mem, (int*)shareableHandle));
}

CUresult CUDAAPI cuMemImportFromShareableHandle(
        CUmemGenericAllocationHandle *handle, void *osHandle,
        CUmemAllocationHandleType shHandleType)
{
    gpumem_driver_mem_t *mem;
    int device;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (handle == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_SUPPORTED);
    }

    res = gpumem_emu_cuda_handle_open((int)(uintptr_t)osHandle, &mem);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }
    for (device = 0; gpumem_emu_cuda_gpu(device) != mem->gpu; ++device) {
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_vmm_new(mem, device,
                                                          handle));
}

/* A dma-buf of the memory a device range maps, where the emu exports one
 * (the kernel's udmabuf) */
CUresult CUDAAPI cuMemGetHandleForAddressRange(
        void *handle, CUdeviceptr dptr, size_t size,
        CUmemRangeHandleType handleType, unsigned long long flags)
{
    gpumem_emu_cuda_range_t *range;
    gpumem_driver_mem_t *mem;
    ucs_status_t status;
    size_t offset;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((handle == NULL) || (flags != 0) ||
        (handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    range = gpumem_emu_cuda_range_find(dptr);
    if ((range == NULL) || (range->base != dptr) ||
        (size > range->map_size) ||
        ((range->mem == NULL) && (range->vmm == NULL))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    mem    = (range->mem != NULL) ? range->mem : range->vmm->mem;
    status = gpumem_emu_cuda.emu->ops->dmabuf_export(mem, (int*)handle,
                                                     &offset);
    return gpumem_emu_cuda_return(gpumem_emu_cuda_result(status));
}
