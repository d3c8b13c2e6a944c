/**
 * gpumem cuda driver: system memory for the GPUs, pinned or allocated.
 *
 * With unified addressing the GPUs reach pinned system memory at its own
 * address, so a host "mapping" maps nothing (GPUMEM_DRIVER_FLAG_HOST_UVA):
 * pinning is what makes the pages reachable, once for every GPU.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"

#include <ucs/debug/memtrack_int.h>


/* The pinned range that holds [addr, addr + size); host_lock held */
static gpumem_cuda_host_t *
gpumem_cuda_host_lookup(gpumem_cuda_driver_t *driver, uintptr_t addr,
                        size_t size)
{
    gpumem_cuda_host_t *host;

    ucs_list_for_each(host, &driver->hosts, list) {
        if ((addr >= (uintptr_t)host->addr) &&
            ((addr - (uintptr_t)host->addr) <= host->size) &&
            (size <= (host->size - (addr - (uintptr_t)host->addr)))) {
            return host;
        }
    }
    return NULL;
}

int gpumem_cuda_host_find(gpumem_cuda_driver_t *driver, uint64_t va)
{
    int found;

    pthread_mutex_lock(&driver->host_lock);
    found = (gpumem_cuda_host_lookup(driver, va, 1) != NULL);
    pthread_mutex_unlock(&driver->host_lock);
    return found;
}

static ucs_status_t gpumem_cuda_host_add(gpumem_cuda_driver_t *driver,
                                         void *addr, size_t size,
                                         int allocated)
{
    gpumem_cuda_host_t *host;

    host = ucs_malloc(sizeof(*host), "gpumem_cuda_host");
    if (host == NULL) {
        ucs_error("gpumem_cuda: cannot allocate a pinned range");
        return UCS_ERR_NO_MEMORY;
    }

    host->addr      = addr;
    host->size      = size;
    host->refs      = 1;
    host->allocated = allocated;
    ucs_list_add_tail(&driver->hosts, &host->list);
    return UCS_OK;
}

ucs_status_t gpumem_cuda_pin(gpumem_driver_gpu_t *handle, void *addr,
                             size_t size)
{
    gpumem_cuda_gpu_t *gpu       = gpumem_cuda_gpu(handle);
    gpumem_cuda_driver_t *driver = gpu->driver;
    gpumem_cuda_host_t *host;
    ucs_status_t status;

    if (gpu->released) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot pin: the GPU "
                            "was released");
        return UCS_ERR_NOT_CONNECTED;
    }

    if (gpumem_cuda_fault_take(gpu, GPUMEM_DRIVER_FAULT_KERNEL_REFUSES)) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "pin of %zu bytes at "
                            "%p refused (injected fault)", size, addr);
        return UCS_ERR_IO_ERROR;
    }

    pthread_mutex_lock(&driver->host_lock);
    host = gpumem_cuda_host_lookup(driver, (uintptr_t)addr, size);
    if (host != NULL) {
        ++host->refs;
        status = UCS_OK;
        goto out_unlock;
    }

    status = gpumem_cuda_ctx_push(gpu, "pin");
    if (status != UCS_OK) {
        goto out_unlock;
    }

    /* Portable: one pin serves every GPU of the process */
    GPUMEM_CUDA_CALL(&status, cuMemHostRegister,
                     (addr, size, CU_MEMHOSTREGISTER_PORTABLE |
                                  CU_MEMHOSTREGISTER_DEVICEMAP),
                     "GPU %u: pin %zu bytes at %p", gpu->index, size, addr);
    if (status != UCS_OK) {
        goto out_ctx_pop;
    }

    status = gpumem_cuda_host_add(driver, addr, size, 0);
    if (status != UCS_OK) {
        gpumem_cuda_api.cuMemHostUnregister(addr);
    }

out_ctx_pop:
    gpumem_cuda_ctx_pop(gpu);
out_unlock:
    pthread_mutex_unlock(&driver->host_lock);
    return status;
}

void gpumem_cuda_unpin(gpumem_driver_gpu_t *handle, void *addr, size_t size)
{
    gpumem_cuda_gpu_t *gpu       = gpumem_cuda_gpu(handle);
    gpumem_cuda_driver_t *driver = gpu->driver;
    gpumem_cuda_host_t *host;
    ucs_status_t status;

    pthread_mutex_lock(&driver->host_lock);
    host = gpumem_cuda_host_lookup(driver, (uintptr_t)addr, size);
    if (host == NULL) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "unpin of %zu bytes "
                            "at %p, which are not pinned", size, addr);
    } else if ((--host->refs == 0) && !host->allocated) {
        ucs_list_del(&host->list);
        if (gpumem_cuda_ctx_push(gpu, "unpin") == UCS_OK) {
            GPUMEM_CUDA_CALL(&status, cuMemHostUnregister, (host->addr),
                             "GPU %u: unpin %zu bytes at %p", gpu->index,
                             host->size, host->addr);
            gpumem_cuda_ctx_pop(gpu);
        }
        ucs_free(host);
    }
    pthread_mutex_unlock(&driver->host_lock);
}

ucs_status_t gpumem_cuda_sys_alloc(gpumem_driver_gpu_t *handle, size_t size,
                                   void **addr_p)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    ucs_status_t status;
    CUresult res;
    void *addr;

    if (gpumem_cuda_fault_take(gpu, GPUMEM_DRIVER_FAULT_NO_ROOM)) {
        return UCS_ERR_NO_MEMORY;
    }

    status = gpumem_cuda_ctx_push(gpu, "allocate system memory");
    if (status != UCS_OK) {
        return status;
    }

    res = gpumem_cuda_api.cuMemHostAlloc(&addr, size,
                                         CU_MEMHOSTALLOC_PORTABLE |
                                         CU_MEMHOSTALLOC_DEVICEMAP);
    if (res != CUDA_SUCCESS) {
        status = gpumem_cuda_log_result((res == CUDA_ERROR_OUT_OF_MEMORY) ?
                                        UCS_LOG_LEVEL_DEBUG :
                                        UCS_LOG_LEVEL_ERROR, res,
                                        "cuMemHostAlloc", "GPU %u: %zu bytes",
                                        gpu->index, size);
        goto out_ctx_pop;
    }

    pthread_mutex_lock(&gpu->driver->host_lock);
    status = gpumem_cuda_host_add(gpu->driver, addr, size, 1);
    pthread_mutex_unlock(&gpu->driver->host_lock);
    if (status != UCS_OK) {
        gpumem_cuda_api.cuMemFreeHost(addr);
        goto out_ctx_pop;
    }

    *addr_p = addr;

out_ctx_pop:
    gpumem_cuda_ctx_pop(gpu);
    return status;
}

void gpumem_cuda_sys_free(gpumem_driver_gpu_t *handle, void *addr,
                          size_t size)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    gpumem_cuda_host_t *host;
    ucs_status_t status;

    pthread_mutex_lock(&gpu->driver->host_lock);
    host = gpumem_cuda_host_lookup(gpu->driver, (uintptr_t)addr, size);
    if (host != NULL) {
        ucs_list_del(&host->list);
        ucs_free(host);
    }
    pthread_mutex_unlock(&gpu->driver->host_lock);

    if (gpumem_cuda_ctx_push(gpu, "free system memory") == UCS_OK) {
        GPUMEM_CUDA_CALL(&status, cuMemFreeHost, (addr),
                         "GPU %u: %zu bytes at %p", gpu->index, size, addr);
        gpumem_cuda_ctx_pop(gpu);
    }
}

ucs_status_t gpumem_cuda_pt_map_host(gpumem_driver_gpu_t *handle, uint64_t va,
                                     void *host, size_t size,
                                     unsigned UCS_V_UNUSED flags)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    CUdeviceptr dptr;
    ucs_status_t status;

    if (gpu->released) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot map system "
                            "memory: the GPU was released");
        return UCS_ERR_NOT_CONNECTED;
    }

    status = gpumem_cuda_ctx_push(gpu, "map system memory");
    if (status != UCS_OK) {
        return status;
    }

    GPUMEM_CUDA_CALL(&status, cuMemHostGetDevicePointer, (&dptr, host, 0),
                     "GPU %u: device address of %zu bytes at %p", gpu->index,
                     size, host);
    gpumem_cuda_ctx_pop(gpu);
    if (status != UCS_OK) {
        return status;
    }

    if ((dptr != (CUdeviceptr)(uintptr_t)host) || (va != dptr)) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "the GPU reaches %p at "
                            "0x%llx, not at its own address: unified "
                            "addressing is off", host,
                            (unsigned long long)dptr);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}
