/**
 * gpumem emulated CUDA: managed memory (cuMemAllocManaged).
 *
 * Managed memory is at one address for the CPU and every GPU. Here it is
 * system memory the GPUs reach (the emu's sys_alloc, as cuMemHostAlloc's),
 * which the driver tells of as NVIDIA's does: device memory of the
 * allocating context's device (CU_MEMORYTYPE_DEVICE), managed
 * (CU_POINTER_ATTRIBUTE_IS_MANAGED), with a host pointer; cuMemFree frees
 * it, no IPC handle is given for it. Its pages stay where the CPU has
 * them: no migration is emulated.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"
#include "emu_cuda_hook.h"


GPUMEM_EMU_CUDA_HOOK_IMPL CUresult
gpumem_emu_cuda_mem_alloc_managed(CUdeviceptr *dptr, size_t bytesize,
                                  unsigned int flags)
{
    CUcontext ctx;
    void *addr;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((dptr == NULL) || (bytesize == 0) ||
        ((flags != CU_MEM_ATTACH_GLOBAL) && (flags != CU_MEM_ATTACH_HOST))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    res = gpumem_emu_cuda_sys_range_new(GPUMEM_EMU_CUDA_RANGE_MANAGED,
                                        ctx->device, ctx->device, bytesize,
                                        &addr);
    if (res == CUDA_SUCCESS) {
        *dptr = (uintptr_t)addr;
    }
    return gpumem_emu_cuda_return(res);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemAllocManaged, cuMemAllocManaged,
                             gpumem_emu_cuda_mem_alloc_managed)

/* What the driver tells of a range of managed memory: no preferred or
 * prefetch location and no advice (none is emulated: the pages stay the
 * CPU's), as NVIDIA's tells of memory no one advised */
CUresult CUDAAPI cuMemRangeGetAttribute(void *data, size_t dataSize,
                                        CUmem_range_attribute attribute,
                                        CUdeviceptr devPtr, size_t count)
{
    gpumem_emu_cuda_range_t *range;
    size_t i;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find(devPtr);
    if ((data == NULL) || (range == NULL) ||
        (range->kind != GPUMEM_EMU_CUDA_RANGE_MANAGED) || (count == 0) ||
        (count > range->size - (devPtr - range->base)) ||
        (dataSize < sizeof(int)) || (dataSize % sizeof(int))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
        *(int*)data = 0;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
        *(int*)data = CU_DEVICE_INVALID;
        break;
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
        for (i = 0; i < dataSize / sizeof(int); ++i) {
            ((int*)data)[i] = CU_DEVICE_INVALID;
        }
        break;
    default:
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

void gpumem_emu_cuda_managed_release(gpumem_emu_cuda_range_t *range)
{
    gpumem_driver_gpu_t *gpu = gpumem_emu_cuda_gpu(range->device);

    gpumem_emu_cuda_ctx_drain(&gpumem_emu_cuda.primary[range->device]);
    gpumem_emu_cuda.emu->ops->sys_free(gpu, (void*)(uintptr_t)range->base,
                                       range->size);
    gpumem_emu_cuda_range_free(range);
}
