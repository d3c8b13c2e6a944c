/**
 * gpumem emulated CUDA: the memory at the process's addresses, and its
 * mappings on the GPUs.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <uct/gpumem/util/gpumem_fd_broker.h>
#include <ucs/debug/memtrack_int.h>
#include <unistd.h>


gpumem_emu_cuda_range_t *gpumem_emu_cuda_range_find(uint64_t addr)
{
    gpumem_emu_cuda_range_t *range;

    ucs_list_for_each(range, &gpumem_emu_cuda.ranges, list) {
        if ((addr >= range->base) && ((addr - range->base) < range->size)) {
            return range;
        }
    }
    return NULL;
}

gpumem_emu_cuda_range_t *gpumem_emu_cuda_range_new(
        gpumem_emu_cuda_range_kind_t kind, uint64_t base, size_t size,
        int device)
{
    gpumem_emu_cuda_range_t *range;

    range = ucs_calloc(1, sizeof(*range), "gpumem_emu_cuda_range");
    if (range == NULL) {
        return NULL;
    }

    range->kind      = kind;
    range->base      = base;
    range->size      = size;
    range->map_size  = size;
    range->device    = device;
    range->ctx       = gpumem_emu_cuda_ctx_current();
    range->buffer_id = ++gpumem_emu_cuda.next_buffer_id;
    range->ipc_fd    = -1;
    ucs_list_add_tail(&gpumem_emu_cuda.ranges, &range->list);
    return range;
}

CUresult gpumem_emu_cuda_sys_range_new(gpumem_emu_cuda_range_kind_t kind,
                                       int gpu, int device, size_t size,
                                       void **addr_p)
{
    const gpumem_driver_ops_t *ops = gpumem_emu_cuda.emu->ops;
    ucs_status_t status;
    void *addr;

    status = ops->sys_alloc(gpumem_emu_cuda_gpu(gpu), size, &addr);
    if (status != UCS_OK) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (gpumem_emu_cuda_range_new(kind, (uintptr_t)addr, size, device) ==
        NULL) {
        ops->sys_free(gpumem_emu_cuda_gpu(gpu), addr, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *addr_p = addr;
    return CUDA_SUCCESS;
}

void gpumem_emu_cuda_range_free(gpumem_emu_cuda_range_t *range)
{
    if (range->ipc_broker != 0) {
        gpumem_fd_broker_withdraw(range->buffer_id);
    }
    if (range->ipc_fd >= 0) {
        close(range->ipc_fd);
    }
    ucs_list_del(&range->list);
    ucs_free(range);
}

CUresult gpumem_emu_cuda_range_map(gpumem_emu_cuda_range_t *range,
                                   gpumem_driver_mem_t *mem, size_t offset)
{
    const gpumem_driver_ops_t *ops = gpumem_emu_cuda.emu->ops;
    gpumem_driver_gpu_t *owner     = mem->gpu;
    gpumem_topo_verdict_t verdict;
    ucs_status_t status;
    int device;

    status = ops->pt_map_vram(owner, range->base, mem, offset,
                              range->map_size, 0);
    if (status != UCS_OK) {
        return gpumem_emu_cuda_result(status);
    }
    range->mapped = UCS_BIT(range->device);

    /* Unified addressing: a peer that reaches the memory sees it at the
     * same address */
    for (device = 0; device < gpumem_emu_cuda.num_devices; ++device) {
        if ((device == range->device) ||
            !gpumem_topo_reaches(ops->reach(gpumem_emu_cuda_gpu(device)),
                                 ops->reach(owner), 0, &verdict)) {
            continue;
        }
        if (ops->pt_map_vram(gpumem_emu_cuda_gpu(device), range->base, mem,
                             offset, range->map_size, 0) == UCS_OK) {
            range->mapped |= UCS_BIT(device);
        }
    }
    return CUDA_SUCCESS;
}

void gpumem_emu_cuda_range_unmap(gpumem_emu_cuda_range_t *range)
{
    const gpumem_driver_ops_t *ops = gpumem_emu_cuda.emu->ops;
    int device;

    for (device = 0; device < gpumem_emu_cuda.num_devices; ++device) {
        if (range->mapped & UCS_BIT(device)) {
            ops->pt_unmap(gpumem_emu_cuda_gpu(device), range->base,
                          range->map_size);
        }
    }
    range->mapped = 0;
}

void gpumem_emu_cuda_range_release(gpumem_emu_cuda_range_t *range)
{
    const gpumem_driver_ops_t *ops = gpumem_emu_cuda.emu->ops;

    gpumem_emu_cuda_ctx_drain(&gpumem_emu_cuda.primary[range->device]);
    gpumem_emu_cuda_range_unmap(range);
    ops->va_release(range->mem->gpu, range->base, range->map_size);
    ops->mem_free(range->mem);
    gpumem_emu_cuda_range_free(range);
}

CUresult gpumem_emu_cuda_va_reserve(int device, size_t size, size_t align,
                                    uint64_t *va_p)
{
    ucs_status_t status;

    status = gpumem_emu_cuda.emu->ops->va_reserve(gpumem_emu_cuda_gpu(device),
                                                  size, align, va_p);
    return gpumem_emu_cuda_result(status);
}
