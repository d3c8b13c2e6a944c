/**
 * gpumem cuda driver: device memory through the virtual memory management
 * API: physical allocations, address ranges, mappings, handles for other
 * processes and dma-bufs for NICs.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"

#include <ucs/arch/atomic.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 5.6; the numbers are the same on every architecture */
#ifndef SYS_pidfd_open
#  define SYS_pidfd_open  434
#endif
#ifndef SYS_pidfd_getfd
#  define SYS_pidfd_getfd 438
#endif


/* Ids of the allocations of this process, never reused */
static uint64_t gpumem_cuda_alloc_ids = 0;


static ucs_status_t gpumem_cuda_check_live(gpumem_cuda_gpu_t *gpu,
                                           const char *what)
{
    if (gpu->released) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot %s: the GPU "
                            "was released", what);
        return UCS_ERR_NOT_CONNECTED;
    }
    return gpumem_cuda_gpu_enter(gpu, what);
}

/* Where the allocations of @a gpu live and who may take a handle of them */
static void gpumem_cuda_alloc_prop(gpumem_cuda_gpu_t *gpu,
                                   CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id          = gpu->ordinal;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->allocFlags.gpuDirectRDMACapable = gpu->rdma_vmm;
}

static gpumem_cuda_mem_t *gpumem_cuda_mem_new(gpumem_cuda_gpu_t *gpu,
                                              size_t size, size_t page_size)
{
    gpumem_cuda_mem_t *mem;

    mem = ucs_calloc(1, sizeof(*mem), "gpumem_cuda_mem");
    if (mem == NULL) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot allocate a "
                            "memory object");
        return NULL;
    }

    mem->super.gpu       = gpumem_cuda_gpu_handle(gpu);
    mem->super.size      = size;
    mem->super.page_size = page_size;
    mem->super.phys      = 0;    /* The driver does not tell */
    mem->alloc_size      = gpumem_cuda_round(gpu->driver, size);
    mem->export_fd       = -1;
    mem->alloc_id        = ucs_atomic_fadd64(&gpumem_cuda_alloc_ids, 1) + 1;
    return mem;
}

ucs_status_t gpumem_cuda_mem_alloc(gpumem_driver_gpu_t *handle, size_t size,
                                   size_t page_size, int in_bar,
                                   gpumem_driver_mem_t **mem_p)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    CUmemAllocationProp prop;
    gpumem_cuda_mem_t *mem;
    ucs_status_t status;
    CUresult res;

    if (in_bar) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot allocate %zu "
                            "bytes the CPU reaches through the BAR: the CUDA "
                            "driver API maps no BAR for the CPU", size);
        return UCS_ERR_UNSUPPORTED;
    }

    status = gpumem_cuda_check_live(gpu, "allocate");
    if (status != UCS_OK) {
        return status;
    }

    if (gpumem_cuda_fault_take(gpu, GPUMEM_DRIVER_FAULT_NO_ROOM)) {
        return UCS_ERR_NO_MEMORY;
    }
    if (gpumem_cuda_fault_take(gpu, GPUMEM_DRIVER_FAULT_KERNEL_REFUSES)) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "allocation of %zu "
                            "bytes refused (injected fault)", size);
        return UCS_ERR_IO_ERROR;
    }

    mem = gpumem_cuda_mem_new(gpu, size, page_size);
    if (mem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    gpumem_cuda_alloc_prop(gpu, &prop);
    res = gpumem_cuda_api.cuMemCreate(&mem->handle, mem->alloc_size, &prop,
                                      0);
    if (res != CUDA_SUCCESS) {
        /* No room now is the core's to report */
        status = gpumem_cuda_log_result((res == CUDA_ERROR_OUT_OF_MEMORY) ?
                                        UCS_LOG_LEVEL_DEBUG :
                                        UCS_LOG_LEVEL_ERROR, res,
                                        "cuMemCreate", "GPU %u: %zu bytes",
                                        gpu->index, mem->alloc_size);
        ucs_free(mem);
        return status;
    }

    *mem_p = &mem->super;
    return UCS_OK;
}

void gpumem_cuda_mem_free(gpumem_driver_mem_t *super)
{
    gpumem_cuda_mem_t *mem = gpumem_cuda_mem(super);
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(super->gpu);
    ucs_status_t status;

    if (gpumem_cuda_gpu_enter(gpu, "free") == UCS_OK) {
        if (mem->dmabuf_va != 0) {
            gpumem_cuda_api.cuMemUnmap(mem->dmabuf_va, mem->alloc_size);
            gpumem_cuda_api.cuMemAddressFree(mem->dmabuf_va, mem->alloc_size);
        }
        /* The physical memory goes once no mapping of it is left, in any
         * process */
        GPUMEM_CUDA_CALL(&status, cuMemRelease, (mem->handle),
                         "GPU %u: release of %zu bytes", gpu->index,
                         mem->alloc_size);
    }
    if (mem->export_fd >= 0) {
        close(mem->export_fd);
    }
    ucs_free(mem);
}

ucs_status_t gpumem_cuda_mem_export(gpumem_driver_mem_t *super, void *buf,
                                    size_t *length_p)
{
    gpumem_cuda_mem_t *mem = gpumem_cuda_mem(super);
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(super->gpu);
    gpumem_cuda_handle_t handle;
    ucs_status_t status;
    int fd;

    if (mem->imported) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "export of imported "
                            "memory: the exporter's handle is passed on");
        return UCS_ERR_INVALID_PARAM;
    }

    /* The fd stays open as long as the memory: the importer duplicates it
     * from this process */
    if (mem->export_fd < 0) {
        status = gpumem_cuda_gpu_enter(gpu, "export");
        if (status != UCS_OK) {
            return status;
        }

        GPUMEM_CUDA_CALL(&status, cuMemExportToShareableHandle,
                         (&fd, mem->handle,
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                         "GPU %u: fd of %zu bytes", gpu->index,
                         mem->alloc_size);
        if (status != UCS_OK) {
            return status;
        }
        mem->export_fd = fd;
    }

    memset(&handle, 0, sizeof(handle));
    handle.magic       = GPUMEM_CUDA_HANDLE_MAGIC;
    handle.version     = GPUMEM_CUDA_HANDLE_VERSION;
    handle.type        = GPUMEM_CUDA_HANDLE_VMM_FD;
    handle.uid         = geteuid();
    handle.pid         = getpid();
    handle.fd          = mem->export_fd;
    handle.size        = mem->alloc_size;
    handle.granularity = gpu->driver->granularity;
    handle.alloc_id    = mem->alloc_id;
    return gpumem_cuda_handle_pack(&handle, buf, GPUMEM_DRIVER_EXPORT_MAX,
                                   length_p);
}

/* A duplicate of the fd @a fd of process @a pid, which must be this user's
 * (pidfd_getfd(2) checks that this process may trace it) */
static ucs_status_t gpumem_cuda_fd_take(gpumem_cuda_gpu_t *gpu, int pid,
                                        int fd, int *fd_p)
{
    int pidfd, local;

    pidfd = syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "memory handle of "
                            "process %d: pidfd_open: %m", pid);
        return (errno == ESRCH) ? UCS_ERR_NO_ELEM : UCS_ERR_IO_ERROR;
    }

    local = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    if (local < 0) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "memory handle of "
                            "process %d: pidfd_getfd of its fd %d: %m%s", pid,
                            fd, (errno == EPERM) ?
                            " (see /proc/sys/kernel/yama/ptrace_scope)" : "");
        close(pidfd);
        return (errno == EPERM) ? UCS_ERR_REJECTED : UCS_ERR_IO_ERROR;
    }

    close(pidfd);
    *fd_p = local;
    return UCS_OK;
}

ucs_status_t gpumem_cuda_mem_import(gpumem_driver_gpu_t *handle_gpu,
                                    const void *buf, size_t length,
                                    gpumem_driver_mem_t **mem_p)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle_gpu);
    gpumem_cuda_handle_t handle;
    gpumem_cuda_mem_t *mem;
    ucs_status_t status;
    size_t page_size;
    int fd;

    status = gpumem_cuda_handle_unpack(buf, length, &handle);
    if (status != UCS_OK) {
        return status;
    }

    if (handle.type != GPUMEM_CUDA_HANDLE_VMM_FD) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "memory handle of "
                            "process %d: a legacy IPC handle maps at an "
                            "address of the driver's choosing, which the "
                            "memory core cannot place", handle.pid);
        return UCS_ERR_UNSUPPORTED;
    }

    status = gpumem_cuda_check_live(gpu, "import");
    if (status != UCS_OK) {
        return status;
    }

    page_size = ((handle.size % GPUMEM_CUDA_LARGE_PAGE) == 0) ?
                GPUMEM_CUDA_LARGE_PAGE : GPUMEM_CUDA_SMALL_PAGE;
    mem       = gpumem_cuda_mem_new(gpu, handle.size, page_size);
    if (mem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    mem->imported = 1;

    status = gpumem_cuda_fd_take(gpu, handle.pid, handle.fd, &fd);
    if (status != UCS_OK) {
        goto err_free;
    }

    GPUMEM_CUDA_CALL(&status, cuMemImportFromShareableHandle,
                     (&mem->handle, (void*)(uintptr_t)fd,
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                     "GPU %u: memory of process %d (its fd %d)", gpu->index,
                     handle.pid, handle.fd);
    close(fd);
    if (status != UCS_OK) {
        goto err_free;
    }

    *mem_p = &mem->super;
    return UCS_OK;

err_free:
    ucs_free(mem);
    return status;
}

ucs_status_t gpumem_cuda_va_reserve(gpumem_driver_gpu_t *handle, size_t size,
                                    size_t align, uint64_t *va_p)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    size_t granularity     = gpu->driver->granularity;
    CUdeviceptr va;
    ucs_status_t status;
    CUresult res;

    status = gpumem_cuda_check_live(gpu, "reserve addresses");
    if (status != UCS_OK) {
        return status;
    }

    res = gpumem_cuda_api.cuMemAddressReserve(
            &va, gpumem_cuda_round(gpu->driver, size),
            ucs_max(ucs_roundup_pow2(align), granularity), 0, 0);
    if (res != CUDA_SUCCESS) {
        return gpumem_cuda_log_result((res == CUDA_ERROR_OUT_OF_MEMORY) ?
                                      UCS_LOG_LEVEL_DEBUG :
                                      UCS_LOG_LEVEL_ERROR, res,
                                      "cuMemAddressReserve",
                                      "GPU %u: %zu bytes", gpu->index, size);
    }

    *va_p = va;
    return UCS_OK;
}

void gpumem_cuda_va_release(gpumem_driver_gpu_t *handle, uint64_t va,
                            size_t size)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    ucs_status_t status;

    if (gpumem_cuda_gpu_enter(gpu, "release addresses") != UCS_OK) {
        return;
    }
    GPUMEM_CUDA_CALL(&status, cuMemAddressFree,
                     (va, gpumem_cuda_round(gpu->driver, size)),
                     "GPU %u: 0x%"PRIx64"..+%zu", gpu->index, va, size);
}

ucs_status_t gpumem_cuda_pt_map_vram(gpumem_driver_gpu_t *handle, uint64_t va,
                                     gpumem_driver_mem_t *super, size_t offset,
                                     size_t size, unsigned flags)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    gpumem_cuda_mem_t *mem = gpumem_cuda_mem(super);
    size_t map_size        = gpumem_cuda_round(gpu->driver, size);
    CUmemAccessDesc access = {};
    ucs_status_t status;

    status = gpumem_cuda_check_live(gpu, "map");
    if (status != UCS_OK) {
        return status;
    }

    if (((offset % gpu->driver->granularity) != 0) ||
        (offset + map_size > mem->alloc_size)) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot map %zu bytes "
                            "at offset %zu of a %zu-byte allocation: the "
                            "driver maps whole %zu-byte pages", size, offset,
                            mem->alloc_size, gpu->driver->granularity);
        return UCS_ERR_INVALID_PARAM;
    }

    if (flags & GPUMEM_DRIVER_MAP_UNCACHED) {
        /* The driver API has no uncached mapping of device memory */
        ucs_trace("gpumem cuda: GPU %u: 0x%"PRIx64" mapped cached",
                  gpu->index, va);
    }

    GPUMEM_CUDA_CALL(&status, cuMemMap, (va, map_size, offset, mem->handle, 0),
                     "GPU %u: map %zu bytes at 0x%"PRIx64, gpu->index,
                     map_size, va);
    if (status != UCS_OK) {
        return status;
    }

    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id   = gpu->ordinal;
    access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    GPUMEM_CUDA_CALL(&status, cuMemSetAccess, (va, map_size, &access, 1),
                     "GPU %u: access to %zu bytes at 0x%"PRIx64, gpu->index,
                     map_size, va);
    if (status != UCS_OK) {
        gpumem_cuda_api.cuMemUnmap(va, map_size);
        return status;
    }
    return UCS_OK;
}

ucs_status_t gpumem_cuda_pt_unmap(gpumem_driver_gpu_t *handle, uint64_t va,
                                  size_t size)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    ucs_status_t status;

    /* System memory is reached at its own address: nothing was mapped */
    if (gpumem_cuda_host_find(gpu->driver, va)) {
        return UCS_OK;
    }

    status = gpumem_cuda_gpu_enter(gpu, "unmap");
    if (status != UCS_OK) {
        return status;
    }

    /* cuMemUnmap waits for the GPU's work on the range: when it returns,
     * the GPU reaches the memory no more */
    GPUMEM_CUDA_CALL(&status, cuMemUnmap,
                     (va, gpumem_cuda_round(gpu->driver, size)),
                     "GPU %u: unmap 0x%"PRIx64"..+%zu", gpu->index, va, size);
    if (status != UCS_OK) {
        return UCS_ERR_TIMED_OUT;
    }
    if (gpumem_cuda_fault_take(gpu, GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED)) {
        return UCS_ERR_TIMED_OUT;
    }
    return UCS_OK;
}

ucs_status_t gpumem_cuda_bar_map(gpumem_driver_mem_t *mem,
                                 void UCS_V_UNUSED **addr_p)
{
    gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpumem_cuda_gpu(mem->gpu),
                        "no CPU window on %zu bytes of GPU memory: the CUDA "
                        "driver API maps no BAR for the CPU", mem->size);
    return UCS_ERR_UNSUPPORTED;
}

void gpumem_cuda_bar_unmap(gpumem_driver_mem_t UCS_V_UNUSED *mem,
                           void UCS_V_UNUSED *addr)
{
}

/* dma-bufs are of mapped address ranges: the memory gets a mapping of its
 * own, on its owner, kept until it is freed */
static ucs_status_t gpumem_cuda_dmabuf_map(gpumem_cuda_mem_t *mem)
{
    gpumem_driver_gpu_t *gpu = mem->super.gpu;
    uint64_t va;
    ucs_status_t status;

    status = gpumem_cuda_va_reserve(gpu, mem->alloc_size,
                                    gpumem_cuda_gpu(gpu)->driver->granularity,
                                    &va);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_cuda_pt_map_vram(gpu, va, &mem->super, 0,
                                     mem->alloc_size, 0);
    if (status != UCS_OK) {
        gpumem_cuda_va_release(gpu, va, mem->alloc_size);
        return status;
    }

    mem->dmabuf_va = va;
    return UCS_OK;
}

ucs_status_t gpumem_cuda_dmabuf_export(gpumem_driver_mem_t *super, int *fd_p,
                                       size_t *offset_p)
{
    gpumem_cuda_mem_t *mem = gpumem_cuda_mem(super);
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(super->gpu);
    ucs_status_t status;
    CUresult res;
    int fd;

    if (gpumem_cuda_api.cuMemGetHandleForAddressRange == NULL) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_DEBUG, gpu, "no dma-buf: driver "
                            "%d has no cuMemGetHandleForAddressRange",
                            gpumem_cuda_api.driver_version);
        return UCS_ERR_UNSUPPORTED;
    }

    status = gpumem_cuda_check_live(gpu, "export a dma-buf");
    if (status != UCS_OK) {
        return status;
    }

    if (mem->dmabuf_va == 0) {
        status = gpumem_cuda_dmabuf_map(mem);
        if (status != UCS_OK) {
            return status;
        }
    }

    res = gpumem_cuda_api.cuMemGetHandleForAddressRange(
            &fd, mem->dmabuf_va, mem->alloc_size,
            CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (res != CUDA_SUCCESS) {
        /* The registration domain decides what to do instead, and says
         * so; the driver's refusal is told here */
        return gpumem_cuda_log_result(UCS_LOG_LEVEL_DIAG, res,
                                      "cuMemGetHandleForAddressRange",
                                      "GPU %u: dma-buf of %zu bytes",
                                      gpu->index, mem->alloc_size);
    }

    *fd_p     = fd;
    *offset_p = 0;
    return UCS_OK;
}
