/**
 * gpumem cuda driver: what the driver knows of an address of the process:
 * whether it is device memory of its GPUs, and the allocation that holds
 * it, the application's own included.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"

#include <string.h>


/* What the driver says of an address, in one question */
typedef struct gpumem_cuda_addr_attrs {
    CUmemorytype       mem_type;   /* 0 where no memory of the driver's */
    int                ordinal;
    unsigned long long buffer_id;
    CUdeviceptr        base;
    size_t             size;
    int                managed;
} gpumem_cuda_addr_attrs_t;


/* The attributes of the memory at @a addr. Any address of the process is
 * asked, on every short copy and at the process's exit too. The driver
 * answers without a context of the caller's, as UCX's own memory type
 * detection asks it; a driver that wants one gets the first GPU's pushed,
 * and a push it refuses then means "not device memory", no error to log,
 * so that push goes without gpumem_cuda_ctx_push() */
static CUresult gpumem_cuda_addr_attrs(gpumem_cuda_driver_t *cuda,
                                       const void *addr,
                                       gpumem_cuda_addr_attrs_t *attrs)
{
    CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *values[]              = {&attrs->mem_type, &attrs->ordinal,
                                   &attrs->buffer_id, &attrs->base,
                                   &attrs->size, &attrs->managed};
    CUcontext ctx;
    CUresult res;

    memset(attrs, 0, sizeof(*attrs));
    attrs->ordinal = -1;
    if (cuda->num_gpus == 0) {
        return CUDA_ERROR_NO_DEVICE;
    }

    res = gpumem_cuda_api.cuPointerGetAttributes(ucs_static_array_size(names),
                                                 names, values,
                                                 (CUdeviceptr)(uintptr_t)
                                                         addr);
    if (res != CUDA_ERROR_INVALID_CONTEXT) {
        return res;
    }

    res = gpumem_cuda_api.cuCtxPushCurrent(cuda->gpus[0].ctx);
    if (res != CUDA_SUCCESS) {
        return res;
    }

    res = gpumem_cuda_api.cuPointerGetAttributes(ucs_static_array_size(names),
                                                 names, values,
                                                 (CUdeviceptr)(uintptr_t)
                                                         addr);
    gpumem_cuda_api.cuCtxPopCurrent(&ctx);
    return res;
}

/* The driver's GPU of device memory at @a addr; not a CUDA address is no
 * error of cuPointerGetAttributes: the type stays 0 */
static int gpumem_cuda_addr_gpu(gpumem_cuda_driver_t *cuda, const void *addr,
                                gpumem_cuda_addr_attrs_t *attrs,
                                unsigned *gpu_index_p)
{
    unsigned i;

    if ((gpumem_cuda_addr_attrs(cuda, addr, attrs) != CUDA_SUCCESS) ||
        (attrs->mem_type != CU_MEMORYTYPE_DEVICE)) {
        return 0;
    }

    for (i = 0; i < cuda->num_gpus; ++i) {
        if (cuda->gpus[i].ordinal == attrs->ordinal) {
            *gpu_index_p = i;
            return 1;
        }
    }
    return 0;
}

int gpumem_cuda_is_device_addr(gpumem_driver_t *driver, const void *addr,
                               unsigned *gpu_index_p)
{
    gpumem_cuda_addr_attrs_t attrs;

    return gpumem_cuda_addr_gpu(ucs_derived_of(driver, gpumem_cuda_driver_t),
                                addr, &attrs, gpu_index_p);
}

ucs_status_t gpumem_cuda_addr_query(gpumem_driver_t *driver, const void *addr,
                                    gpumem_driver_addr_attr_t *attr)
{
    gpumem_cuda_addr_attrs_t attrs;
    unsigned index;

    if (!gpumem_cuda_addr_gpu(ucs_derived_of(driver, gpumem_cuda_driver_t),
                              addr, &attrs, &index)) {
        return UCS_ERR_NO_ELEM;
    }

    attr->gpu_index = index;
    attr->base      = attrs.base;
    attr->size      = attrs.size;
    attr->buffer_id = attrs.buffer_id;
    attr->managed   = attrs.managed;
    return UCS_OK;
}
