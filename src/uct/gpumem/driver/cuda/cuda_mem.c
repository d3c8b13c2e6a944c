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

#include <uct/gpumem/util/gpumem_proc.h>
#include <ucs/arch/atomic.h>
#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <uct/gpumem/util/gpumem_fd_broker.h>
#include <uct/gpumem/util/gpumem_pidfd.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>


/* Ids of the allocations of this process, never reused */
static uint64_t gpumem_cuda_alloc_ids = 0;


/* A released GPU takes no new memory or mapping */
static ucs_status_t gpumem_cuda_check_live(gpumem_cuda_gpu_t *gpu,
                                           const char *what)
{
    if (gpu->released) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot %s: the GPU "
                            "was released", what);
        return UCS_ERR_NOT_CONNECTED;
    }
    return UCS_OK;
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

    status = gpumem_cuda_ctx_push(gpu, "allocate");
    if (status != UCS_OK) {
        ucs_free(mem);
        return status;
    }

    gpumem_cuda_alloc_prop(gpu, &prop);
    res = gpumem_cuda_api.cuMemCreate(&mem->handle, mem->alloc_size, &prop,
                                      0);
    gpumem_cuda_ctx_pop(gpu);
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

/* The legacy IPC mapping at @a va, or NULL (host_lock held) */
static gpumem_cuda_opened_t *
gpumem_cuda_opened_lookup(gpumem_cuda_driver_t *driver, uint64_t va)
{
    gpumem_cuda_opened_t *opened;

    ucs_list_for_each(opened, &driver->opened, list) {
        if (opened->va == va) {
            return opened;
        }
    }
    return NULL;
}

static void gpumem_cuda_opened_put(gpumem_cuda_gpu_t *gpu,
                                   gpumem_cuda_opened_t *opened)
{
    gpumem_cuda_driver_t *driver = gpu->driver;
    ucs_status_t status;

    pthread_mutex_lock(&driver->host_lock);
    if (--opened->refs > 0) {
        pthread_mutex_unlock(&driver->host_lock);
        return;
    }
    ucs_list_del(&opened->list);
    pthread_mutex_unlock(&driver->host_lock);

    if (gpumem_cuda_ctx_push(gpu, "close a legacy IPC mapping") == UCS_OK) {
        GPUMEM_CUDA_CALL(&status, cuIpcCloseMemHandle, (opened->va),
                         "GPU %u: memory of process %d at 0x%llx",
                         gpu->index, opened->pid,
                         (unsigned long long)opened->va);
        gpumem_cuda_ctx_pop(gpu);
    }
    ucs_free(opened);
}

void gpumem_cuda_mem_free(gpumem_driver_mem_t *super)
{
    gpumem_cuda_mem_t *mem = gpumem_cuda_mem(super);
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(super->gpu);
    ucs_status_t status;

    /* No importer gets the fd from the broker once the memory goes */
    if (mem->broker != 0) {
        gpumem_fd_broker_withdraw(mem->alloc_id);
    }

    if (mem->opened != NULL) {
        gpumem_cuda_opened_put(gpu, mem->opened);
    } else if (gpumem_cuda_ctx_push(gpu, "free") == UCS_OK) {
        if (mem->dmabuf_va != 0) {
            gpumem_cuda_api.cuMemUnmap(mem->dmabuf_va, mem->alloc_size);
            gpumem_cuda_api.cuMemAddressFree(mem->dmabuf_va, mem->alloc_size);
        }
        /* The physical memory goes once no mapping of it is left, in any
         * process */
        GPUMEM_CUDA_CALL(&status, cuMemRelease, (mem->handle),
                         "GPU %u: release of %zu bytes", gpu->index,
                         mem->alloc_size);
        gpumem_cuda_ctx_pop(gpu);
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

    /* The fd stays open as long as the memory: the importer receives it
     * from the broker, or duplicates it from this process */
    if (mem->export_fd < 0) {
        status = gpumem_cuda_ctx_push(gpu, "export");
        if (status != UCS_OK) {
            return status;
        }

        GPUMEM_CUDA_CALL(&status, cuMemExportToShareableHandle,
                         (&fd, mem->handle,
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                         "GPU %u: fd of %zu bytes", gpu->index,
                         mem->alloc_size);
        gpumem_cuda_ctx_pop(gpu);
        if (status != UCS_OK) {
            return status;
        }
        mem->export_fd = fd;
        if (gpumem_fd_broker_offer(mem->alloc_id, mem->super.size, fd,
                                   &mem->broker) != UCS_OK) {
            mem->broker = 0;
        }
    }

    memset(&handle, 0, sizeof(handle));
    handle.magic       = GPUMEM_CUDA_HANDLE_MAGIC;
    handle.version     = GPUMEM_CUDA_HANDLE_VERSION;
    handle.type        = GPUMEM_CUDA_HANDLE_VMM_FD;
    handle.uid         = gpumem_proc_euid();
    handle.pid         = gpumem_proc_pid();
    handle.fd          = mem->export_fd;
    handle.size        = mem->super.size;
    handle.granularity = gpu->driver->granularity;
    handle.alloc_id    = mem->alloc_id;
    handle.broker      = mem->broker;
    return gpumem_cuda_handle_pack(&handle, buf, GPUMEM_DRIVER_EXPORT_MAX,
                                   length_p);
}

/* Why process @a pid's memory cannot be imported: said once per process
 * at warning level (the memory is then moved another way, each time), and
 * at debug level after */
static void gpumem_cuda_fd_refused(gpumem_cuda_gpu_t *gpu, int pid,
                                   const char *broker_why, const char *call,
                                   int err)
{
    ucs_log_level_t level = gpumem_pidfd_denial_is_new(pid) ?
                            UCS_LOG_LEVEL_WARN : UCS_LOG_LEVEL_DEBUG;
    char reason[256];

    gpumem_cuda_gpu_log(level, gpu, "cannot import the memory of process "
                        "%d: %s%s%s: %s: %s", pid, broker_why,
                        (*broker_why != '\0') ? "; " : "", call,
                        strerror(err),
                        gpumem_pidfd_denial(err, reason, sizeof(reason)));
}

/* A duplicate of the fd @a fd of process @a pid, which must be this user's
 * (pidfd_getfd(2) checks that this process may trace it); @a broker_why
 * says why its broker did not answer */
static ucs_status_t gpumem_cuda_fd_take(gpumem_cuda_gpu_t *gpu, int pid,
                                        int fd, const char *broker_why,
                                        int *fd_p)
{
    int pidfd, local, err;

    /* pidfd_open(2) takes a pid of this process's PID namespace, and @a pid
     * is /proc's: where the two differ, no process of this namespace is
     * known to have it */
    pidfd = gpumem_proc_ns_is_procs() ? syscall(SYS_pidfd_open, pid, 0) : -1;
    if (pidfd < 0) {
        err = gpumem_proc_ns_is_procs() ? errno : ESRCH;
        gpumem_cuda_fd_refused(gpu, pid, broker_why, "pidfd_open", err);
        return (err == ESRCH) ? UCS_ERR_NO_ELEM : UCS_ERR_IO_ERROR;
    }

    local = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    err   = errno;
    close(pidfd);
    if (local < 0) {
        gpumem_cuda_fd_refused(gpu, pid, broker_why, "pidfd_getfd", err);
        return ((err == EPERM) || (err == EACCES)) ? UCS_ERR_REJECTED :
               (err == ESRCH) ? UCS_ERR_NO_ELEM : UCS_ERR_IO_ERROR;
    }

    *fd_p = local;
    return UCS_OK;
}

/* The exporter's fd of the allocation @a handle names: from its broker,
 * which checks that the allocation is still the key's; by its number where
 * no broker answers, which the exporter may have given to another since */
static ucs_status_t gpumem_cuda_fd_of(gpumem_cuda_gpu_t *gpu,
                                      const gpumem_cuda_handle_t *handle,
                                      int *fd_p)
{
    char why[256] = "";
    ucs_status_t status;

    if (handle->broker != 0) {
        status = gpumem_fd_broker_take(handle->broker, handle->uid,
                                       handle->alloc_id, handle->size, fd_p,
                                       why, sizeof(why));
        if (status != UCS_ERR_UNREACHABLE) {
            if (status != UCS_OK) {
                gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot import "
                                    "the memory of process %d: %s",
                                    handle->pid, why);
            }
            return status;
        }
        ucs_debug("gpumem_cuda: GPU %u: memory of process %d: %s; taking "
                  "its fd %d by pidfd_getfd", gpu->index, handle->pid, why,
                  handle->fd);
    } else {
        snprintf(why, sizeof(why), "it serves no descriptor broker");
    }

    return gpumem_cuda_fd_take(gpu, handle->pid, handle->fd, why, fd_p);
}

/* Memory another process allocated with cudaMalloc: the driver maps it,
 * once in this process, where it chooses */
static ucs_status_t
gpumem_cuda_legacy_import(gpumem_cuda_gpu_t *gpu,
                          const gpumem_cuda_handle_t *handle,
                          gpumem_driver_mem_t **mem_p)
{
    gpumem_cuda_driver_t *driver = gpu->driver;
    gpumem_cuda_opened_t *opened;
    CUipcMemHandle ipc_handle;
    gpumem_cuda_mem_t *mem;
    ucs_status_t status;

    mem = gpumem_cuda_mem_new(gpu, handle->size, GPUMEM_CUDA_SMALL_PAGE);
    if (mem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    pthread_mutex_lock(&driver->host_lock);
    ucs_list_for_each(opened, &driver->opened, list) {
        if ((opened->pid == handle->pid) &&
            (opened->buffer_id == handle->alloc_id)) {
            goto out_take;
        }
    }

    opened = ucs_calloc(1, sizeof(*opened), "gpumem_cuda_opened");
    if (opened == NULL) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot allocate a "
                            "legacy IPC mapping");
        status = UCS_ERR_NO_MEMORY;
        goto err_unlock;
    }

    status = gpumem_cuda_ctx_push(gpu, "import");
    if (status != UCS_OK) {
        ucs_free(opened);
        goto err_unlock;
    }

    memcpy(&ipc_handle, handle->ipc, sizeof(ipc_handle));
    GPUMEM_CUDA_CALL(&status, cuIpcOpenMemHandle,
                     (&opened->va, ipc_handle,
                      CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                     "GPU %u: legacy IPC handle of process %d (%"PRIu64
                     " bytes)", gpu->index, handle->pid, handle->size);
    gpumem_cuda_ctx_pop(gpu);
    if (status != UCS_OK) {
        ucs_free(opened);
        goto err_unlock;
    }

    opened->pid       = handle->pid;
    opened->buffer_id = handle->alloc_id;
    opened->size      = handle->size;
    ucs_list_add_tail(&driver->opened, &opened->list);

out_take:
    ++opened->refs;
    pthread_mutex_unlock(&driver->host_lock);
    mem->imported       = 1;
    mem->opened         = opened;
    mem->super.fixed_va = opened->va;
    *mem_p              = &mem->super;
    return UCS_OK;

err_unlock:
    pthread_mutex_unlock(&driver->host_lock);
    ucs_free(mem);
    return status;
}

ucs_status_t gpumem_cuda_addr_export(gpumem_driver_t *driver,
                                     const void *addr, void *buf,
                                     size_t *length_p,
                                     gpumem_driver_addr_attr_t *attr)
{
    gpumem_cuda_driver_t *cuda = ucs_derived_of(driver, gpumem_cuda_driver_t);
    gpumem_cuda_handle_t handle;
    CUipcMemHandle ipc_handle;
    gpumem_cuda_gpu_t *gpu;
    ucs_status_t status;

    if (gpumem_cuda_addr_query(driver, addr, attr) != UCS_OK) {
        ucs_error("gpumem_cuda: export of %p: not the device memory of an "
                  "allocation", addr);
        return UCS_ERR_INVALID_ADDR;
    }

    gpu = &cuda->gpus[attr->gpu_index];
    if (attr->managed) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "export of %p: "
                            "managed memory has no IPC handle", addr);
        return UCS_ERR_UNSUPPORTED;
    }

    status = gpumem_cuda_ctx_push(gpu, "export an allocation");
    if (status != UCS_OK) {
        return status;
    }

    /* Memory of cudaMalloc or cuMemAlloc; the driver refuses VMM memory
     * the application mapped itself */
    GPUMEM_CUDA_CALL(&status, cuIpcGetMemHandle,
                     (&ipc_handle, (CUdeviceptr)attr->base),
                     "GPU %u: legacy IPC handle of %zu bytes at 0x%"PRIx64,
                     gpu->index, attr->size, attr->base);
    gpumem_cuda_ctx_pop(gpu);
    if (status != UCS_OK) {
        return status;
    }

    memset(&handle, 0, sizeof(handle));
    handle.magic    = GPUMEM_CUDA_HANDLE_MAGIC;
    handle.version  = GPUMEM_CUDA_HANDLE_VERSION;
    handle.type     = GPUMEM_CUDA_HANDLE_LEGACY_IPC;
    handle.uid      = gpumem_proc_euid();
    handle.pid      = gpumem_proc_pid();
    handle.fd       = -1;
    handle.size     = attr->size;
    handle.alloc_id = attr->buffer_id;
    memcpy(handle.ipc, &ipc_handle, sizeof(handle.ipc));
    return gpumem_cuda_handle_pack(&handle, buf, GPUMEM_DRIVER_EXPORT_MAX,
                                   length_p);
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

    status = gpumem_cuda_check_live(gpu, "import");
    if (status != UCS_OK) {
        return status;
    }

    if (handle.type == GPUMEM_CUDA_HANDLE_LEGACY_IPC) {
        return gpumem_cuda_legacy_import(gpu, &handle, mem_p);
    }

    page_size = ((handle.size % GPUMEM_CUDA_LARGE_PAGE) == 0) ?
                GPUMEM_CUDA_LARGE_PAGE : GPUMEM_CUDA_SMALL_PAGE;
    mem       = gpumem_cuda_mem_new(gpu, handle.size, page_size);
    if (mem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    mem->imported = 1;

    /* The exporter's mapping is its size rounded to its granularity: this
     * process maps the same bytes */
    if (mem->alloc_size != ucs_align_up(handle.size, handle.granularity)) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "memory of process %d: "
                            "its allocation of %"PRIu64" bytes is mapped in "
                            "pages of %"PRIu64", this process's are of %zu",
                            handle.pid, handle.size, handle.granularity,
                            gpu->driver->granularity);
        status = UCS_ERR_INVALID_PARAM;
        goto err_free;
    }

    status = gpumem_cuda_fd_of(gpu, &handle, &fd);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = gpumem_cuda_ctx_push(gpu, "import");
    if (status != UCS_OK) {
        close(fd);
        goto err_free;
    }

    GPUMEM_CUDA_CALL(&status, cuMemImportFromShareableHandle,
                     (&mem->handle, (void*)(uintptr_t)fd,
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                     "GPU %u: memory of process %d (its fd %d)", gpu->index,
                     handle.pid, handle.fd);
    gpumem_cuda_ctx_pop(gpu);
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

    status = gpumem_cuda_ctx_push(gpu, "reserve addresses");
    if (status != UCS_OK) {
        return status;
    }

    res = gpumem_cuda_api.cuMemAddressReserve(
            &va, gpumem_cuda_round(gpu->driver, size),
            ucs_max(ucs_roundup_pow2(align), granularity), 0, 0);
    gpumem_cuda_ctx_pop(gpu);
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

    if (gpumem_cuda_ctx_push(gpu, "release addresses") != UCS_OK) {
        return;
    }
    GPUMEM_CUDA_CALL(&status, cuMemAddressFree,
                     (va, gpumem_cuda_round(gpu->driver, size)),
                     "GPU %u: 0x%"PRIx64"..+%zu", gpu->index, va, size);
    gpumem_cuda_ctx_pop(gpu);
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
        ucs_trace("gpumem_cuda: GPU %u: 0x%"PRIx64" mapped cached",
                  gpu->index, va);
    }

    status = gpumem_cuda_ctx_push(gpu, "map");
    if (status != UCS_OK) {
        return status;
    }

    GPUMEM_CUDA_CALL(&status, cuMemMap, (va, map_size, offset, mem->handle, 0),
                     "GPU %u: map %zu bytes at 0x%"PRIx64, gpu->index,
                     map_size, va);
    if (status != UCS_OK) {
        goto out_ctx_pop;
    }

    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id   = gpu->ordinal;
    access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    GPUMEM_CUDA_CALL(&status, cuMemSetAccess, (va, map_size, &access, 1),
                     "GPU %u: access to %zu bytes at 0x%"PRIx64, gpu->index,
                     map_size, va);
    if (status != UCS_OK) {
        gpumem_cuda_api.cuMemUnmap(va, map_size);
    }

out_ctx_pop:
    gpumem_cuda_ctx_pop(gpu);
    return status;
}

ucs_status_t gpumem_cuda_pt_unmap(gpumem_driver_gpu_t *handle, uint64_t va,
                                  size_t size)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    gpumem_cuda_opened_t *opened;
    ucs_status_t status;

    /* System memory is reached at its own address, and the driver maps
     * legacy IPC memory itself: nothing was mapped */
    if (gpumem_cuda_host_find(gpu->driver, va)) {
        return UCS_OK;
    }

    pthread_mutex_lock(&gpu->driver->host_lock);
    opened = gpumem_cuda_opened_lookup(gpu->driver, va);
    pthread_mutex_unlock(&gpu->driver->host_lock);
    if (opened != NULL) {
        return UCS_OK;
    }

    status = gpumem_cuda_ctx_push(gpu, "unmap");
    if (status != UCS_OK) {
        return status;
    }

    /* cuMemUnmap waits for the GPU's work on the range: when it returns,
     * the GPU reaches the memory no more */
    GPUMEM_CUDA_CALL(&status, cuMemUnmap,
                     (va, gpumem_cuda_round(gpu->driver, size)),
                     "GPU %u: unmap 0x%"PRIx64"..+%zu", gpu->index, va, size);
    gpumem_cuda_ctx_pop(gpu);
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

void gpumem_cuda_bar_unmap(void UCS_V_UNUSED *addr, size_t UCS_V_UNUSED size)
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
    CUdeviceptr va;
    size_t size;
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

    if (mem->opened != NULL) {
        va   = mem->opened->va;
        size = ucs_align_up(mem->opened->size, GPUMEM_CUDA_SMALL_PAGE);
    } else {
        if (mem->dmabuf_va == 0) {
            status = gpumem_cuda_dmabuf_map(mem);
            if (status != UCS_OK) {
                return status;
            }
        }
        va   = mem->dmabuf_va;
        size = mem->alloc_size;
    }

    status = gpumem_cuda_ctx_push(gpu, "export a dma-buf");
    if (status != UCS_OK) {
        return status;
    }

    res = gpumem_cuda_api.cuMemGetHandleForAddressRange(
            &fd, va, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    gpumem_cuda_ctx_pop(gpu);
    if (res != CUDA_SUCCESS) {
        /* The registration domain decides what to do instead, and says
         * so; the driver's refusal is told here */
        return gpumem_cuda_log_result(UCS_LOG_LEVEL_DIAG, res,
                                      "cuMemGetHandleForAddressRange",
                                      "GPU %u: dma-buf of %zu bytes",
                                      gpu->index, size);
    }

    *fd_p     = fd;
    *offset_p = 0;
    return UCS_OK;
}
