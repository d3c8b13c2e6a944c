/**
 * gpumem: device memory calls for applications (gpumem.h), on the process's
 * GPUs that the plugin's memory domain also uses.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <gpumem/gpumem.h>

#include <uct/gpumem/gpumem_md.h>
#include <uct/gpumem/ipc/ipc_cache.h>
#include <ucm/gpumem/ucm_gpumem.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>


static ucs_memory_type_t gpumem_api_mem_type = UCS_MEMORY_TYPE_CUDA;
static __thread int gpumem_api_device      = 0;


/*
 * A reference on the process's GPUs, opened with the UCX_GPUMEM_* settings
 * if no memory domain has them open: each call holds one while it runs, and
 * each allocation one until its free, so that the GPUs close once nothing
 * of theirs is in use.
 */
static ucs_status_t gpumem_api_context_get(uct_gpumem_context_t **context_p)
{
    uct_gpumem_context_params_t params;
    uct_gpumem_md_config_t *config;
    uct_md_config_t *md_config;
    ucs_status_t status;

    status = uct_md_config_read(&uct_gpumem_component, NULL, NULL,
                                &md_config);
    if (status != UCS_OK) {
        return status;
    }

    config = ucs_derived_of(md_config, uct_gpumem_md_config_t);
    uct_gpumem_md_context_params(config, &params);
    gpumem_api_mem_type = config->mem_type;
    status              = uct_gpumem_context_get(&params, context_p);
    uct_config_release(md_config);
    return status;
}

gpumem_result_t gpumem_device_count(int *count)
{
    uct_gpumem_context_t *context;
    ucs_status_t status;

    status = gpumem_api_context_get(&context);
    if (status == UCS_OK) {
        *count = context->num_gpus;
        uct_gpumem_context_put(context);
    }
    return status;
}

gpumem_result_t gpumem_device_set(int device)
{
    uct_gpumem_context_t *context;
    ucs_status_t status;

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    if ((device < 0) || ((unsigned)device >= context->num_gpus)) {
        ucs_error("gpumem: no GPU %d: the machine has %u", device,
                  context->num_gpus);
        status = UCS_ERR_INVALID_PARAM;
    } else {
        gpumem_api_device = device;
    }
    uct_gpumem_context_put(context);
    return status;
}

gpumem_result_t gpumem_device_get(int *device)
{
    *device = gpumem_api_device;
    return UCS_OK;
}

gpumem_result_t gpumem_device_malloc(void **ptr, size_t size)
{
    uct_gpumem_context_t *context;
    gpumem_region_t *region;
    ucs_status_t status;

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    if ((unsigned)gpumem_api_device >= context->num_gpus) {
        ucs_error("gpumem: the thread's GPU %d is not one of the %u GPUs",
                  gpumem_api_device, context->num_gpus);
        uct_gpumem_context_put(context);
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_alloc(context->gpus[gpumem_api_device], GPUMEM_KIND_GPU,
                          size, 0, &region);
    if (status != UCS_OK) {
        uct_gpumem_context_put(context);
        return status;
    }

    /* The allocation keeps the reference until its free */
    *ptr = (void*)gpumem_region_address(region);
    ucm_gpumem_dispatch_alloc(*ptr, gpumem_region_size(region),
                              gpumem_api_mem_type,
                              context->sys_devs[gpumem_api_device]);
    return UCS_OK;
}

/* The allocation that begins at @a ptr (or holds it) on its GPU */
static ucs_status_t gpumem_api_find(uct_gpumem_context_t *context,
                                    const void *ptr, int *gpu_p,
                                    gpumem_region_t **region_p)
{
    int gpu = uct_gpumem_context_find_gpu(context, ptr);

    if (gpu < 0) {
        return UCS_ERR_INVALID_ADDR;
    }

    *region_p = gpumem_find_region(context->gpus[gpu], (uintptr_t)ptr);
    *gpu_p    = gpu;
    return (*region_p != NULL) ? UCS_OK : UCS_ERR_INVALID_ADDR;
}

gpumem_result_t gpumem_device_free(void *ptr)
{
    uct_gpumem_context_t *context;
    gpumem_region_t *region;
    ucs_status_t status;
    int gpu;

    if (ptr == NULL) {
        return UCS_OK;
    }

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_api_find(context, ptr, &gpu, &region);
    if ((status != UCS_OK) || (gpumem_region_address(region) !=
                               (uintptr_t)ptr)) {
        ucs_error("gpumem: free of %p, which no gpumem_device_malloc gave",
                  ptr);
        uct_gpumem_context_put(context);
        return UCS_ERR_INVALID_ADDR;
    }

    ucm_gpumem_dispatch_free(ptr, gpumem_region_size(region),
                             gpumem_api_mem_type);
    status = gpumem_free(context->gpus[gpu], region);
    if (status == UCS_OK) {
        /* The allocation's reference */
        uct_gpumem_context_put(context);
    }
    uct_gpumem_context_put(context);
    return status;
}

static ucs_status_t gpumem_api_copy(uct_gpumem_context_t *context, int gpu,
                                    uint64_t dst, int dst_dev, uint64_t src,
                                    int src_dev, size_t size)
{
    gpumem_driver_t *driver = context->driver;
    gpumem_driver_copy_t copy;
    ucs_status_t status;

    status = driver->ops->copy(driver->ops->gpu(driver, gpu), dst, dst_dev,
                               src, src_dev, size, &copy);
    while (status == UCS_INPROGRESS) {
        status = driver->ops->copy_poll(&copy);
    }
    return status;
}

gpumem_result_t gpumem_device_memcpy(void *dst, const void *src, size_t size)
{
    gpumem_region_t *src_region, *peer;
    uct_gpumem_context_t *context;
    int dst_gpu, src_gpu;
    ucs_status_t status;
    uint64_t peer_src;

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    dst_gpu = uct_gpumem_context_find_gpu(context, dst);
    src_gpu = uct_gpumem_context_find_gpu(context, src);
    if ((dst_gpu < 0) && (src_gpu < 0)) {
        memcpy(dst, src, size);
    } else if ((dst_gpu < 0) || (src_gpu < 0) || (dst_gpu == src_gpu)) {
        status = gpumem_api_copy(context, (dst_gpu >= 0) ? dst_gpu : src_gpu,
                                 (uintptr_t)dst, dst_gpu >= 0, (uintptr_t)src,
                                 src_gpu >= 0, size);
    } else if (gpumem_api_find(context, src, &src_gpu, &src_region) !=
               UCS_OK) {
        ucs_error("gpumem: memcpy from %p, which no allocation holds", src);
        status = UCS_ERR_INVALID_ADDR;
    } else {
        /* Between two GPUs: the destination's engine, through a peer
         * mapping of the source */
        status = gpumem_map_peer(context->gpus[dst_gpu], src_region, &peer);
        if (status == UCS_OK) {
            peer_src = gpumem_region_address(peer) +
                       ((uintptr_t)src - gpumem_region_address(src_region));
            status   = gpumem_api_copy(context, dst_gpu, (uintptr_t)dst, 1,
                                       peer_src, 1, size);
            gpumem_free(context->gpus[dst_gpu], peer);
        }
    }

    uct_gpumem_context_put(context);
    return status;
}

gpumem_result_t gpumem_device_memset(void *ptr, int value, size_t size)
{
    char chunk[4096];
    size_t offset, length;
    ucs_status_t status;

    memset(chunk, value, sizeof(chunk));
    for (offset = 0; offset < size; offset += length) {
        length = ucs_min(sizeof(chunk), size - offset);
        status = gpumem_device_memcpy(UCS_PTR_BYTE_OFFSET(ptr, offset), chunk,
                                      length);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

gpumem_result_t gpumem_device_query(const void *ptr,
                                    gpumem_pointer_attr_t *attr)
{
    uct_gpumem_context_t *context;
    gpumem_region_t *region;
    ucs_status_t status;
    int gpu;

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    memset(attr, 0, sizeof(*attr));
    attr->device = -1;
    if (gpumem_api_find(context, ptr, &gpu, &region) == UCS_OK) {
        attr->is_device = 1;
        attr->device    = gpu;
        attr->base      = (void*)gpumem_region_address(region);
        attr->size      = gpumem_region_size(region);
    }
    uct_gpumem_context_put(context);
    return UCS_OK;
}

gpumem_result_t gpumem_device_can_access_peer(int *can_access, int device,
                                              int peer_device, char *reason,
                                              size_t max_reason)
{
    uct_gpumem_context_t *context;
    gpumem_topo_verdict_t verdict;
    ucs_status_t status;
    int reaches;

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    if ((device < 0) || (peer_device < 0) ||
        ((unsigned)device >= context->num_gpus) ||
        ((unsigned)peer_device >= context->num_gpus)) {
        ucs_error("gpumem: GPUs %d and %d are not both of the %u GPUs",
                  device, peer_device, context->num_gpus);
        uct_gpumem_context_put(context);
        return UCS_ERR_INVALID_PARAM;
    }

    if (device == peer_device) {
        reaches = 1;
        ucs_strncpy_zero(verdict.reason, "the same GPU",
                         sizeof(verdict.reason));
    } else {
        reaches = gpumem_topo_reaches(gpumem_gpu_reach(context->gpus[device]),
                                      gpumem_gpu_reach(
                                              context->gpus[peer_device]),
                                      0, &verdict);
    }
    uct_gpumem_context_put(context);

    if ((reason != NULL) && (max_reason > 0)) {
        ucs_strncpy_zero(reason, verdict.reason, max_reason);
    }
    *can_access = reaches;
    return UCS_OK;
}

gpumem_result_t gpumem_ipc_bytes(unsigned long long *bytes)
{
    uct_gpumem_ipc_stats_t stats;

    uct_gpumem_ipc_stats(&stats);
    *bytes = stats.bytes;
    return UCS_OK;
}

const char *gpumem_result_string(gpumem_result_t result)
{
    return ucs_status_string((ucs_status_t)result);
}
