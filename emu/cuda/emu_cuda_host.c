/**
 * gpumem emulated CUDA: system memory the GPUs reach, allocated by the
 * library or pinned by it, at its own address (unified addressing).
 *
 * A pin or an allocation is portable whatever its flags: one pin, by the
 * emu's first GPU, serves every GPU of the process.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"
#include "emu_cuda_hook.h"


#define GPUMEM_EMU_CUDA_HOSTALLOC_FLAGS (CU_MEMHOSTALLOC_PORTABLE | \
                                         CU_MEMHOSTALLOC_DEVICEMAP | \
                                         CU_MEMHOSTALLOC_WRITECOMBINED)
#define GPUMEM_EMU_CUDA_REGISTER_FLAGS  (CU_MEMHOSTREGISTER_PORTABLE | \
                                         CU_MEMHOSTREGISTER_DEVICEMAP | \
                                         CU_MEMHOSTREGISTER_IOMEMORY | \
                                         CU_MEMHOSTREGISTER_READ_ONLY)


/* Whether [addr, addr + size) meets a range the library knows */
static int gpumem_emu_cuda_host_overlaps(uint64_t addr, size_t size)
{
    gpumem_emu_cuda_range_t *range;

    ucs_list_for_each(range, &gpumem_emu_cuda.ranges, list) {
        if ((addr < range->base + range->size) &&
            (range->base < addr + size)) {
            return 1;
        }
    }
    return 0;
}

static CUresult gpumem_emu_cuda_host_alloc(void **pp, size_t bytesize,
                                           unsigned flags)
{
    CUcontext ctx;
    void *addr;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((pp == NULL) || (bytesize == 0) ||
        (flags & ~GPUMEM_EMU_CUDA_HOSTALLOC_FLAGS)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    res = gpumem_emu_cuda_sys_range_new(GPUMEM_EMU_CUDA_RANGE_HOST, 0,
                                        ctx->device, bytesize, &addr);
    if (res == CUDA_SUCCESS) {
        *pp = addr;
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize,
                                unsigned int Flags)
{
    return gpumem_emu_cuda_host_alloc(pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
    return gpumem_emu_cuda_host_alloc(pp, bytesize, 0);
}

GPUMEM_EMU_CUDA_HOOK_IMPL CUresult gpumem_emu_cuda_mem_free_host(void *p)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find((uintptr_t)p);
    if ((range == NULL) || (range->kind != GPUMEM_EMU_CUDA_RANGE_HOST) ||
        (range->base != (uintptr_t)p)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    gpumem_emu_cuda_ctx_drain(&gpumem_emu_cuda.primary[range->device]);
    gpumem_emu_cuda.emu->ops->sys_free(gpumem_emu_cuda_gpu(0), p,
                                       range->size);
    gpumem_emu_cuda_range_free(range);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
GPUMEM_EMU_CUDA_HOOKABLE_API(cuMemFreeHost, cuMemFreeHost,
                             gpumem_emu_cuda_mem_free_host)

CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize,
                                   unsigned int Flags)
{
    gpumem_emu_cuda_range_t *range;
    ucs_status_t status;
    CUcontext ctx;
    CUresult res;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((p == NULL) || (bytesize == 0) ||
        (Flags & ~GPUMEM_EMU_CUDA_REGISTER_FLAGS)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }
    if (gpumem_emu_cuda_host_overlaps((uintptr_t)p, bytesize)) {
        return gpumem_emu_cuda_return(
                CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    }

    status = gpumem_emu_cuda.emu->ops->pin(gpumem_emu_cuda_gpu(0), p,
                                           bytesize);
    if (status != UCS_OK) {
        return gpumem_emu_cuda_return((status == UCS_ERR_EXCEEDS_LIMIT) ?
                                      CUDA_ERROR_OUT_OF_MEMORY :
                                      CUDA_ERROR_INVALID_VALUE);
    }

    range = gpumem_emu_cuda_range_new(GPUMEM_EMU_CUDA_RANGE_PINNED,
                                      (uintptr_t)p, bytesize, ctx->device);
    if (range == NULL) {
        gpumem_emu_cuda.emu->ops->unpin(gpumem_emu_cuda_gpu(0), p, bytesize);
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find((uintptr_t)p);
    if ((range == NULL) || (range->kind != GPUMEM_EMU_CUDA_RANGE_PINNED) ||
        (range->base != (uintptr_t)p)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    }

    gpumem_emu_cuda_ctx_drain(&gpumem_emu_cuda.primary[range->device]);
    gpumem_emu_cuda.emu->ops->unpin(gpumem_emu_cuda_gpu(0), p, range->size);
    gpumem_emu_cuda_range_free(range);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* The GPUs reach the memory at its own address */
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p,
                                           unsigned int Flags)
{
    gpumem_emu_cuda_range_t *range;
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((pdptr == NULL) || (Flags != 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }
    range = gpumem_emu_cuda_range_find((uintptr_t)p);
    if ((range == NULL) || ((range->kind != GPUMEM_EMU_CUDA_RANGE_HOST) &&
                            (range->kind != GPUMEM_EMU_CUDA_RANGE_PINNED))) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    *pdptr = (uintptr_t)p;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
