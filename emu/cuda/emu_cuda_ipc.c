/**
 * gpumem emulated CUDA: legacy IPC handles of cuMemAlloc's memory.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <uct/gpumem/util/gpumem_fd_broker.h>
#include <uct/gpumem/util/gpumem_proc.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>


#define GPUMEM_EMU_CUDA_IPC_MAGIC 0x63706965u /* "eipc" */


/**
 * What a CUipcMemHandle holds: where the exporter's handle file is. As CUDA
 * does, the handle names one allocation: its broker hands the file for the
 * allocation's id and size only, so a handle of freed memory, or of another
 * size, opens nothing.
 */
typedef struct gpumem_emu_cuda_ipc {
    uint32_t           magic;
    int32_t            pid;        /* The exporter */
    int32_t            fd;         /* Its handle file, where no broker
                                      answers */
    uint32_t           uid;        /* The exporter's effective user */
    unsigned long long buffer_id;  /* Its allocation */
    uint64_t           size;
    uint64_t           broker;     /* Its descriptor broker, or 0 */
} gpumem_emu_cuda_ipc_t;

_Static_assert(sizeof(gpumem_emu_cuda_ipc_t) <= CU_IPC_HANDLE_SIZE,
               "a legacy IPC handle holds the file's place");


CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    gpumem_emu_cuda_range_t *range;
    gpumem_emu_cuda_ipc_t ipc;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pHandle == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    range = gpumem_emu_cuda_range_find(dptr);
    if ((range == NULL) || (range->kind != GPUMEM_EMU_CUDA_RANGE_ALLOC) ||
        range->stream_ordered) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    if (range->ipc_fd < 0) {
        res = gpumem_emu_cuda_handle_file(range->mem, &range->ipc_fd);
        if (res != CUDA_SUCCESS) {
            return gpumem_emu_cuda_return(res);
        }
        if (gpumem_fd_broker_offer(range->buffer_id, range->size,
                                   range->ipc_fd, &range->ipc_broker) !=
            UCS_OK) {
            range->ipc_broker = 0;
        }
    }

    memset(&ipc, 0, sizeof(ipc));
    ipc.magic     = GPUMEM_EMU_CUDA_IPC_MAGIC;
    ipc.pid       = gpumem_proc_pid();
    ipc.fd        = range->ipc_fd;
    ipc.uid       = geteuid();
    ipc.buffer_id = range->buffer_id;
    ipc.size      = range->size;
    ipc.broker    = range->ipc_broker;
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &ipc, sizeof(ipc));
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* The exporter's handle file of the allocation @a ipc names: from its
 * broker, by its number where no broker answers */
static CUresult gpumem_emu_cuda_ipc_file(const gpumem_emu_cuda_ipc_t *ipc,
                                         int *fd_p)
{
    ucs_status_t status;
    char why[256];

    /* As CUDA's handles, another user's opens nothing */
    if (ipc->uid != geteuid()) {
        ucs_debug("gpumem emulated CUDA: legacy IPC handle of process %d: "
                  "of user %u, this process's is %u", ipc->pid, ipc->uid,
                  (unsigned)geteuid());
        return CUDA_ERROR_INVALID_VALUE;
    }

    if (ipc->broker != 0) {
        status = gpumem_fd_broker_take(ipc->broker, ipc->uid, ipc->buffer_id,
                                       ipc->size, fd_p, why, sizeof(why));
        if (status == UCS_OK) {
            return CUDA_SUCCESS;
        } else if (status != UCS_ERR_UNREACHABLE) {
            ucs_debug("gpumem emulated CUDA: legacy IPC handle of process "
                      "%d: %s", ipc->pid, why);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return gpumem_emu_cuda_fd_take(ipc->pid, ipc->fd, fd_p);
}

static CUresult gpumem_emu_cuda_ipc_open(const gpumem_emu_cuda_ipc_t *ipc,
                                         CUdeviceptr *pdptr)
{
    const gpumem_driver_ops_t *ops = gpumem_emu_cuda.emu->ops;
    gpumem_emu_cuda_range_t *range;
    gpumem_driver_mem_t *mem;
    unsigned gpu_index;
    uint64_t va;
    CUresult res;
    int fd;

    res = gpumem_emu_cuda_ipc_file(ipc, &fd);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = gpumem_emu_cuda_handle_open(fd, &mem);
    close(fd);
    if (res != CUDA_SUCCESS) {
        return res;
    }

    /* The file taken by its number (no broker answered) names memory, not
     * the handle's size: a larger size is forged */
    if (ipc->size > mem->size) {
        ucs_debug("gpumem emulated CUDA: legacy IPC handle of process %d "
                  "claims %"PRIu64" bytes of an allocation of %zu", ipc->pid,
                  ipc->size, mem->size);
        res = CUDA_ERROR_INVALID_VALUE;
        goto err_free;
    }

    for (gpu_index = 0; gpumem_emu_cuda_gpu(gpu_index) != mem->gpu;
         ++gpu_index) {
    }

    res = gpumem_emu_cuda_va_reserve(gpu_index, mem->size, mem->page_size,
                                     &va);
    if (res != CUDA_SUCCESS) {
        goto err_free;
    }

    range = gpumem_emu_cuda_range_new(GPUMEM_EMU_CUDA_RANGE_IPC, va,
                                      ipc->size, gpu_index);
    if (range == NULL) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_release;
    }
    range->map_size = mem->size;
    range->mem      = mem;

    res = gpumem_emu_cuda_range_map(range, mem, 0);
    if (res != CUDA_SUCCESS) {
        gpumem_emu_cuda_range_free(range);
        goto err_release;
    }

    *pdptr = va;
    return CUDA_SUCCESS;

err_release:
    ops->va_release(mem->gpu, va, mem->size);
err_free:
    ops->mem_free(mem);
    return res;
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                    unsigned int Flags)
{
    gpumem_emu_cuda_ipc_t ipc;
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    memcpy(&ipc, handle.reserved, sizeof(ipc));
    if ((pdptr == NULL) || (Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
        (ipc.magic != GPUMEM_EMU_CUDA_IPC_MAGIC)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }
    /* A process opens no handle of its own memory */
    if (ipc.pid == gpumem_proc_pid()) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_CONTEXT);
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_ipc_open(&ipc, pdptr));
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    gpumem_emu_cuda_range_t *range;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    range = gpumem_emu_cuda_range_find(dptr);
    if ((range == NULL) || (range->kind != GPUMEM_EMU_CUDA_RANGE_IPC) ||
        (range->base != dptr)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }

    gpumem_emu_cuda_range_release(range);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}
