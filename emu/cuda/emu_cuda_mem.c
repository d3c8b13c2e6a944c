/**
 * gpumem emulated CUDA: cuMemAlloc's device memory, and what the driver
 * tells of an address.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"
#include "emu_cuda_hook.h"

#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <ucs/sys/math.h>
#include <string.h>


GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
    const gpumem_driver_ops_t *ops;
    gpumem_emu_cuda_range_t *range;
    gpumem_driver_mem_t *mem;
    size_t page, alloc_size;
    ucs_status_t status;
    CUcontext ctx;
    uint64_t va;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((dptr == NULL) || (bytesize == 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    ops        = gpumem_emu_cuda.emu->ops;
    page       = (bytesize >= GPUMEM_EMU_CUDA_GRANULARITY) ?
                 GPUMEM_EMU_CUDA_GRANULARITY : GPUMEM_EMU_CUDA_SMALL_PAGE;
    alloc_size = ucs_align_up_pow2(bytesize, page);
    status     = ops->mem_alloc(gpumem_emu_cuda_gpu(ctx->device), alloc_size,
                                page, 0, &mem);
    if (status != UCS_OK) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }

    res = gpumem_emu_cuda_va_reserve(ctx->device, alloc_size, page, &va);
    if (res != CUDA_SUCCESS) {
        goto err_free;
    }

    range = gpumem_emu_cuda_range_new(GPUMEM_EMU_CUDA_RANGE_ALLOC, va,
                                      bytesize, ctx->device);
    if (range == NULL) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_release;
    }
    range->map_size = alloc_size;
    range->mem      = mem;

    res = gpumem_emu_cuda_range_map(range, mem, 0);
    if (res != CUDA_SUCCESS) {
        gpumem_emu_cuda_range_free(range);
        goto err_release;
    }

    *dptr = va;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);

err_release:
    ops->va_release(mem->gpu, va, alloc_size);
err_free:
    ops->mem_free(mem);
    return gpumem_emu_cuda_return(res);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemAlloc, cuMemAlloc_v2,
                             gpumem_emu_cuda_mem_alloc)

/* Rows of @a width bytes, each a multiple of the pitch alignment, as the
 * runtime's cudaMallocPitch lays them out */
GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pPitch,
                                size_t WidthInBytes, size_t Height,
                                unsigned int ElementSizeBytes)
{
    size_t row;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((dptr == NULL) || (pPitch == NULL) || (WidthInBytes == 0) ||
        (Height == 0) || ((ElementSizeBytes != 4) && (ElementSizeBytes != 8) &&
                          (ElementSizeBytes != 16))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    row = ucs_align_up_pow2(WidthInBytes, GPUMEM_EMU_CUDA_PITCH_ALIGN);
    if ((row < WidthInBytes) || (row > SIZE_MAX / Height)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    /* Not by the exported entry point, which UCM may have patched: one
     * allocation, one event */
    res = gpumem_emu_cuda_mem_alloc(dptr, row * Height);
    if (res == CUDA_SUCCESS) {
        *pPitch = row;
    }
    return gpumem_emu_cuda_return(res);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemAllocPitch, cuMemAllocPitch_v2,
                             gpumem_emu_cuda_mem_alloc_pitch)

/* Of cuMemAlloc, cuMemAllocPitch and cuMemAllocManaged alike */
GPUMEM_EMU_CUDA_HOOK_IMPL CUresult gpumem_emu_cuda_mem_free(CUdeviceptr dptr)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find(dptr);
    if ((range == NULL) || (range->base != dptr)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (range->kind == GPUMEM_EMU_CUDA_RANGE_ALLOC) {
        gpumem_emu_cuda_range_release(range);
    } else if (range->kind == GPUMEM_EMU_CUDA_RANGE_MANAGED) {
        gpumem_emu_cuda_managed_release(range);
    } else {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemFree, cuMemFree_v2, gpumem_emu_cuda_mem_free)

/* Stream-ordered memory, without memory pools: allocated at once, which
 * is before any later work of the stream, and freed once the stream's
 * work queued before the free is done. No legacy IPC handle shares it, as
 * none shares NVIDIA's pool memory; cuMemFree frees it too */
GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_alloc_async(CUdeviceptr *dptr, size_t bytesize,
                                CUstream hStream)
{
    CUstream stream;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_mem_alloc(dptr, bytesize);
    }
    if (res == CUDA_SUCCESS) {
        gpumem_emu_cuda_range_find(*dptr)->stream_ordered = 1;
    }
    return gpumem_emu_cuda_return(res);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemAllocAsync, cuMemAllocAsync,
                             gpumem_emu_cuda_mem_alloc_async)

GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_free_async(CUdeviceptr dptr, CUstream hStream)
{
    CUstream stream;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_stream_drain(stream);
    }
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_mem_free(dptr);
    }
    return gpumem_emu_cuda_return(res);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemFreeAsync, cuMemFreeAsync,
                             gpumem_emu_cuda_mem_free_async)

/* Device memory to the driver: managed memory too, which the CPU reaches
 * as well */
static int gpumem_emu_cuda_range_is_device(const gpumem_emu_cuda_range_t *range)
{
    return (range->kind != GPUMEM_EMU_CUDA_RANGE_HOST) &&
           (range->kind != GPUMEM_EMU_CUDA_RANGE_PINNED);
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize,
                                      CUdeviceptr dptr)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find(dptr);
    if ((range == NULL) || !gpumem_emu_cuda_range_is_device(range)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_FOUND);
    }
    if (pbase != NULL) {
        *pbase = range->base;
    }
    if (psize != NULL) {
        *psize = range->size;
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total)
{
    const gpumem_driver_ops_t *ops;
    gpumem_driver_gpu_t *gpu;
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((free == NULL) || (total == NULL)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }
    ops    = gpumem_emu_cuda.emu->ops;
    gpu    = gpumem_emu_cuda_gpu(ctx->device);
    *total = ops->vram_size(gpu);
    if ((ops->vram_free == NULL) || (ops->vram_free(gpu, free) != UCS_OK)) {
        *free = *total;
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* One attribute of the memory at an address (NULL: not the library's),
 * as NVIDIA's driver gives it */
static CUresult gpumem_emu_cuda_attr(const gpumem_emu_cuda_range_t *range,
                                     CUpointer_attribute attr, uint64_t ptr,
                                     void *data)
{
    int device  = (range != NULL) && gpumem_emu_cuda_range_is_device(range);
    int managed = (range != NULL) &&
                  (range->kind == GPUMEM_EMU_CUDA_RANGE_MANAGED);

    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(CUmemorytype*)data = (range == NULL) ? (CUmemorytype)0 :
                               device ? CU_MEMORYTYPE_DEVICE :
                                        CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int*)data = (range == NULL) ? -2 : range->device;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext*)data = (range == NULL) ? NULL : range->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long*)data = (range == NULL) ? 0 : range->buffer_id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr*)data = (range == NULL) ? 0 : range->base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t*)data = (range == NULL) ? 0 : range->size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr*)data = (range == NULL) ? 0 : ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void**)data = ((range == NULL) || (device && !managed)) ? NULL :
                        (void*)(uintptr_t)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int*)data = managed;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int*)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int*)data = (range != NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int*)data = (range != NULL) &&
                      (range->kind == GPUMEM_EMU_CUDA_RANGE_ALLOC) &&
                      !range->stream_ordered;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long*)data =
                ((range != NULL) && (range->kind == GPUMEM_EMU_CUDA_RANGE_VMM)) ?
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(void**)data = NULL;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Not memory of the library is no error here: the attributes are their
 * empty values */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
    gpumem_emu_cuda_range_t *range;
    unsigned i;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((numAttributes == 0) || (attributes == NULL) || (data == NULL)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    range = gpumem_emu_cuda_range_find(ptr);
    for (i = 0; i < numAttributes; ++i) {
        if (data[i] == NULL) {
            return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
        }
        res = gpumem_emu_cuda_attr(range, attributes[i], ptr, data[i]);
        if (res != CUDA_SUCCESS) {
            return gpumem_emu_cuda_return(res);
        }
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* Of one attribute, an address that is no memory of the library is */
CUresult CUDAAPI cuPointerGetAttribute(void *data,
                                       CUpointer_attribute attribute,
                                       CUdeviceptr ptr)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (data == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    range = gpumem_emu_cuda_range_find(ptr);
    if (range == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_attr(range, attribute, ptr,
                                                       data));
}

/* Of the attributes a caller may set, SYNC_MEMOPS on device and managed
 * memory: the emu's copies are synchronous with the memory operations
 * already */
CUresult CUDAAPI cuPointerSetAttribute(const void *value,
                                       CUpointer_attribute attribute,
                                       CUdeviceptr ptr)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (value == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    range = gpumem_emu_cuda_range_find(ptr);
    if ((range == NULL) || ((range->kind != GPUMEM_EMU_CUDA_RANGE_ALLOC) &&
                            (range->kind != GPUMEM_EMU_CUDA_RANGE_IPC) &&
                            (range->kind != GPUMEM_EMU_CUDA_RANGE_MANAGED))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
