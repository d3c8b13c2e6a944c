/**
 * gpumem emulated CUDA: cuMemcpy and its kinds, on the emu's copy engine.
 *
 * Unified addressing: the library tells device memory from host memory by
 * address. The copy runs on the engine of a GPU whose page tables map
 * every device side of it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <uct/gpumem/util/gpumem_readable.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <inttypes.h>
#include <string.h>


/**
 * One side of a copy.
 */
typedef struct gpumem_emu_cuda_side {
    int      dev;       /* Device memory */
    uint64_t mapped;    /* The GPUs that map it (dev) */
    int      owner;     /* Whose VRAM (dev) */
} gpumem_emu_cuda_side_t;


/* What @a size bytes at @a addr, the destination where @a is_dst, are:
 * device memory inside one range, or host memory (managed memory too, which
 * is the CPU's until a GPU touches it); an address in the GPUs' space that
 * no allocation holds is refused, as NVIDIA's driver refuses it */
static CUresult gpumem_emu_cuda_side(uint64_t addr, size_t size, int is_dst,
                                     gpumem_emu_cuda_side_t *side)
{
    gpumem_emu_cuda_range_t *range = gpumem_emu_cuda_range_find(addr);
    unsigned gpu_index;

    side->dev = 0;
    if ((range != NULL) && (range->kind != GPUMEM_EMU_CUDA_RANGE_HOST) &&
        (range->kind != GPUMEM_EMU_CUDA_RANGE_PINNED) &&
        (range->kind != GPUMEM_EMU_CUDA_RANGE_MANAGED)) {
        if ((size > range->size) || ((addr - range->base) >
                                     (range->size - size))) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if ((range->kind == GPUMEM_EMU_CUDA_RANGE_VMM) && !range->access) {
            /* Mapped, but no device was given access */
            return CUDA_ERROR_INVALID_VALUE;
        }
        side->dev    = 1;
        side->mapped = range->mapped;
        side->owner  = range->device;
        return CUDA_SUCCESS;
    }

    if ((range == NULL) &&
        gpumem_emu_cuda.emu->ops->is_device_addr(gpumem_emu_cuda.emu,
                                                 (void*)(uintptr_t)addr,
                                                 &gpu_index)) {
        return CUDA_ERROR_INVALID_VALUE;
    }

    /* Host memory is the caller's to give, as in CUDA; the engine here
     * copies it with the CPU, so a page it cannot read (NULL, unmapped,
     * reserved for a GPU), or as the destination write (read-only), is said
     * at the call instead of faulting */
    if (is_dst ? !gpumem_proc_writable(addr, size) :
                 !gpumem_proc_readable(addr, size)) {
        ucs_debug("gpumem emulated CUDA: copy of %zu bytes at 0x%"PRIx64
                  ": host memory this process cannot %s", size, addr,
                  is_dst ? "write" : "read");
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* The GPU whose engine moves the copy: the owner of a device side that
 * maps the other */
static CUresult gpumem_emu_cuda_engine(const gpumem_emu_cuda_side_t *dst,
                                       const gpumem_emu_cuda_side_t *src,
                                       int device, int *gpu_p)
{
    if (dst->dev && (!src->dev || (src->mapped & UCS_BIT(dst->owner)))) {
        *gpu_p = dst->owner;
    } else if (src->dev && (!dst->dev || (dst->mapped & UCS_BIT(src->owner)))) {
        *gpu_p = src->owner;
    } else if (!dst->dev && !src->dev) {
        *gpu_p = device;
    } else {
        /* Two GPUs, neither reaching the other */
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult gpumem_emu_cuda_memcpy(CUdeviceptr dst, CUdeviceptr src,
                                       size_t size, CUstream handle, int sync)
{
    gpumem_emu_cuda_side_t dst_side, src_side;
    CUstream stream;
    CUresult res;
    int gpu;

    res = gpumem_emu_cuda_enter();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = gpumem_emu_cuda_stream_get(handle, &stream);
    if ((res != CUDA_SUCCESS) || (size == 0)) {
        return gpumem_emu_cuda_return(res);
    }

    res = gpumem_emu_cuda_side(src, size, 0, &src_side);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_side(dst, size, 1, &dst_side);
    }
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_engine(&dst_side, &src_side,
                                     stream->ctx->device, &gpu);
    }
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_stream_copy(stream, gpu, dst, dst_side.dev, src,
                                          src_side.dev, size);
    }
    if ((res == CUDA_SUCCESS) && sync) {
        res = gpumem_emu_cuda_stream_wait(stream);
    }
    return gpumem_emu_cuda_return(res);
}

/* Bytes cuMemsetD8 writes from the host at a time */
#define GPUMEM_EMU_CUDA_SET_CHUNK (256ul << 10)

/* From the host, a chunk at a time, by the engine: the bytes are there at
 * the return, as NVIDIA's synchronous memset has them */
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    size_t chunk = ucs_min(N, GPUMEM_EMU_CUDA_SET_CHUNK);
    size_t done, length;
    void *bytes;
    CUresult res = gpumem_emu_cuda_enter();

    if ((res != CUDA_SUCCESS) || (N == 0)) {
        return gpumem_emu_cuda_return(res);
    }
    bytes = ucs_malloc(chunk, "gpumem_emu_cuda_memset");
    if (bytes == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    memset(bytes, uc, chunk);
    for (done = 0; (done < N) && (res == CUDA_SUCCESS); done += length) {
        length = ucs_min(N - done, chunk);
        res    = gpumem_emu_cuda_memcpy(dstDevice + done, (uintptr_t)bytes,
                                        length, NULL, 1);
    }
    ucs_free(bytes);
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                               size_t ByteCount, CUstream hStream)
{
    return gpumem_emu_cuda_memcpy(dst, src, ByteCount, hStream, 0);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return gpumem_emu_cuda_memcpy(dst, src, ByteCount, NULL, 1);
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
                              size_t ByteCount)
{
    return gpumem_emu_cuda_memcpy(dstDevice, (uintptr_t)srcHost, ByteCount,
                                  NULL, 1);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
    return gpumem_emu_cuda_memcpy((uintptr_t)dstHost, srcDevice, ByteCount,
                                  NULL, 1);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
    return gpumem_emu_cuda_memcpy(dstDevice, srcDevice, ByteCount, NULL, 1);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream)
{
    return gpumem_emu_cuda_memcpy(dstDevice, srcDevice, ByteCount, hStream,
                                  0);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                                   size_t ByteCount, CUstream hStream)
{
    return gpumem_emu_cuda_memcpy(dstDevice, (uintptr_t)srcHost, ByteCount,
                                  hStream, 0);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream)
{
    return gpumem_emu_cuda_memcpy((uintptr_t)dstHost, srcDevice, ByteCount,
                                  hStream, 0);
}
