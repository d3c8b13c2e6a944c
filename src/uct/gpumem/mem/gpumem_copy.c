/**
 * gpumem memory core: copies by a GPU's copy engine.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_copy.h"
#include "gpumem_mem_int.h"


void gpumem_copy_engine_perf(const gpumem_gpu_t *gpu, gpumem_copy_perf_t *perf)
{
    const gpumem_driver_ops_t *ops = gpu->driver->ops;

    perf->bandwidth = ops->copy_bandwidth;
    perf->latency   = ops->copy_latency;
    perf->shared    = ops->copy_shared;
}

int gpumem_copy_engine_checks_bounds(const gpumem_gpu_t *gpu)
{
    return !(gpu->driver->ops->flags & GPUMEM_DRIVER_FLAG_COPY_UNCHECKED);
}

ucs_status_t gpumem_copy(gpumem_gpu_t *gpu, uint64_t dst, int dst_dev,
                         uint64_t src, int src_dev, size_t size,
                         gpumem_copy_t *copy)
{
    copy->ops = gpu->driver->ops;
    return gpu->driver->ops->copy(gpu->dgpu, dst, dst_dev, src, src_dev, size,
                          &copy->driver);
}

ucs_status_t gpumem_copy_poll(gpumem_copy_t *copy)
{
    return copy->ops->copy_poll(&copy->driver);
}

ucs_status_t gpumem_copy_wait(gpumem_copy_t *copy, ucs_status_t status)
{
    while (status == UCS_INPROGRESS) {
        status = gpumem_copy_poll(copy);
    }
    return status;
}

ucs_status_t gpumem_copy_sync(gpumem_gpu_t *gpu, uint64_t dst, int dst_dev,
                              uint64_t src, int src_dev, size_t size)
{
    const gpumem_driver_ops_t *ops = gpu->driver->ops;
    gpumem_copy_t copy;

    if (ops->copy_sync != NULL) {
        return ops->copy_sync(gpu->dgpu, dst, dst_dev, src, src_dev, size);
    }

    return gpumem_copy_wait(&copy, gpumem_copy(gpu, dst, dst_dev, src,
                                               src_dev, size, &copy));
}
