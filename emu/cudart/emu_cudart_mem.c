/**
 * gpumem emulated CUDA runtime: device and host memory, copies, pointer
 * attributes.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cudart.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>



/* Device memory, or managed memory (its flags, cudaMemAttachGlobal and
 * cudaMemAttachHost, are the driver's); none for 0 bytes of device memory,
 * as the runtime gives, and cudaErrorInvalidValue for 0 of managed */
static cudaError_t gpumem_emu_cudart_malloc(void **dev_ptr, size_t size,
                                            int managed, unsigned flags)
{
    CUdeviceptr ptr;
    CUresult res;

    if (dev_ptr == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    GPUMEM_EMU_CUDART_ENTER();
    if ((size == 0) && !managed) {
        *dev_ptr = NULL;
        return cudaSuccess;
    }
    res = managed ? cuMemAllocManaged(&ptr, size, flags) :
                    cuMemAlloc(&ptr, size);
    if (res == CUDA_SUCCESS) {
        *dev_ptr = (void*)(uintptr_t)ptr;
    }
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaMalloc(void **dev_ptr, size_t size)
{
    return gpumem_emu_cudart_malloc(dev_ptr, size, 0, 0);
}

/* The driver's pitched allocation, as NVIDIA's runtime makes it (UCM's
 * hooks see the driver's call with the width and the height): rows of
 * any width, the widest elements the driver takes */
cudaError_t CUDARTAPI cudaMallocPitch(void **dev_ptr, size_t *pitch,
                                      size_t width, size_t height)
{
    CUdeviceptr ptr;
    CUresult res;

    if ((dev_ptr == NULL) || (pitch == NULL)) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    GPUMEM_EMU_CUDART_ENTER();
    if ((width == 0) || (height == 0)) {
        *dev_ptr = NULL;
        *pitch   = 0;
        return cudaSuccess;
    }
    res = cuMemAllocPitch(&ptr, pitch, width, height, 16);
    if (res == CUDA_SUCCESS) {
        *dev_ptr = (void*)(uintptr_t)ptr;
    }
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaMallocManaged(void **dev_ptr, size_t size,
                                        unsigned flags)
{
    return gpumem_emu_cudart_malloc(dev_ptr, size, 1, flags);
}

cudaError_t CUDARTAPI cudaFree(void *dev_ptr)
{
    /* cudaFree(NULL) is how programs make the context */
    GPUMEM_EMU_CUDART_ENTER();
    if (dev_ptr == NULL) {
        return cudaSuccess;
    }
    return gpumem_emu_cudart_error(cuMemFree((CUdeviceptr)(uintptr_t)dev_ptr));
}

/* Stream-ordered memory, by the driver's calls (the stream is the
 * driver's) */
cudaError_t CUDARTAPI cudaMallocAsync(void **dev_ptr, size_t size,
                                      cudaStream_t stream)
{
    CUdeviceptr ptr;
    CUresult res;

    if (dev_ptr == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    GPUMEM_EMU_CUDART_ENTER();
    res = cuMemAllocAsync(&ptr, size, (CUstream)stream);
    if (res == CUDA_SUCCESS) {
        *dev_ptr = (void*)(uintptr_t)ptr;
    }
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaFreeAsync(void *dev_ptr, cudaStream_t stream)
{
    GPUMEM_EMU_CUDART_ENTER();
    return gpumem_emu_cudart_error(
            cuMemFreeAsync((CUdeviceptr)(uintptr_t)dev_ptr, (CUstream)stream));
}

cudaError_t CUDARTAPI cudaHostAlloc(void **host_ptr, size_t size,
                                    unsigned flags)
{
    if (host_ptr == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    GPUMEM_EMU_CUDART_ENTER();
    /* cudaHostAlloc's flags are cuMemHostAlloc's */
    return gpumem_emu_cudart_error(cuMemHostAlloc(host_ptr, size, flags));
}

cudaError_t CUDARTAPI cudaMallocHost(void **host_ptr, size_t size)
{
    return cudaHostAlloc(host_ptr, size, cudaHostAllocDefault);
}

cudaError_t CUDARTAPI cudaFreeHost(void *host_ptr)
{
    GPUMEM_EMU_CUDART_ENTER();
    return gpumem_emu_cudart_error(cuMemFreeHost(host_ptr));
}

cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size, unsigned flags)
{
    GPUMEM_EMU_CUDART_ENTER();
    /* The flags are cuMemHostRegister's */
    return gpumem_emu_cudart_error(cuMemHostRegister(ptr, size, flags));
}

cudaError_t CUDARTAPI cudaHostUnregister(void *ptr)
{
    GPUMEM_EMU_CUDART_ENTER();
    return gpumem_emu_cudart_error(cuMemHostUnregister(ptr));
}

/* Every kind moves by unified addressing: the driver tells the sides
 * apart, as the runtime does with cudaMemcpyDefault */
cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind)
{
    (void)kind;
    GPUMEM_EMU_CUDART_ENTER();
    if (count == 0) {
        return cudaSuccess;
    }
    return gpumem_emu_cudart_error(cuMemcpy((CUdeviceptr)(uintptr_t)dst,
                                            (CUdeviceptr)(uintptr_t)src,
                                            count));
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src,
                                      size_t count, enum cudaMemcpyKind kind,
                                      cudaStream_t stream)
{
    (void)kind;
    GPUMEM_EMU_CUDART_ENTER();
    if (count == 0) {
        return cudaSuccess;
    }
    return gpumem_emu_cudart_error(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst,
                                                 (CUdeviceptr)(uintptr_t)src,
                                                 count, stream));
}

/* The bytes are written from a host buffer of the value, a chunk at a
 * time, synchronously */
cudaError_t CUDARTAPI cudaMemset(void *dev_ptr, int value, size_t count)
{
    GPUMEM_EMU_CUDART_ENTER();
    if (count == 0) {
        return cudaSuccess;
    }
    return gpumem_emu_cudart_error(cuMemsetD8((CUdeviceptr)(uintptr_t)dev_ptr,
                                              (unsigned char)value, count));
}

cudaError_t CUDARTAPI cudaMemsetAsync(void *dev_ptr, int value, size_t count,
                                      cudaStream_t stream)
{
    cudaError_t err;

    /* In the stream's order: after what it has, done at the return */
    GPUMEM_EMU_CUDART_ENTER();
    err = gpumem_emu_cudart_error(cuStreamSynchronize(stream));
    return (err != cudaSuccess) ? err : cudaMemset(dev_ptr, value, count);
}

cudaError_t CUDARTAPI
cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
    CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    CUmemorytype type = (CUmemorytype)0;
    int ordinal       = -2;
    CUdeviceptr dev   = 0;
    void *host        = NULL;
    int managed       = 0;
    void *values[]    = {&type, &ordinal, &dev, &host, &managed};
    CUresult res;

    if (attr == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    GPUMEM_EMU_CUDART_ENTER();
    res = cuPointerGetAttributes(5, names, values,
                                 (CUdeviceptr)(uintptr_t)ptr);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cudart_error(res);
    }

    /* Memory the driver does not know is unregistered host memory, a
     * success since CUDA 11 */
    memset(attr, 0, sizeof(*attr));
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
        attr->type = managed ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
        break;
    case CU_MEMORYTYPE_HOST:
        attr->type = cudaMemoryTypeHost;
        break;
    default:
        attr->type = cudaMemoryTypeUnregistered;
        break;
    }
    attr->device        = (attr->type == cudaMemoryTypeUnregistered) ? -2 :
                          ordinal;
    attr->devicePointer = (void*)(uintptr_t)dev;
    attr->hostPointer   = host;
    return cudaSuccess;
}
