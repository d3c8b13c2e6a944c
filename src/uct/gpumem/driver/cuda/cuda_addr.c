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


/* The attributes of the memory at @a addr, asked in the first GPU's
 * context. Any address of the process is asked, at its exit too: a push the
 * driver refuses then means "not device memory", no error to log, so this
 * push goes without gpumem_cuda_ctx_push() */
static CUresult gpumem_cuda_pointer_attrs(gpumem_cuda_driver_t *cuda,
                                          unsigned count,
                                          CUpointer_attribute *attrs,
                                          void **values, const void *addr)
{
    gpumem_cuda_gpu_t *gpu;
    CUresult res;

    if (cuda->num_gpus == 0) {
        return CUDA_ERROR_NO_DEVICE;
    }

    gpu = &cuda->gpus[0];
    res = gpumem_cuda_api.cuCtxPushCurrent(gpu->ctx);
    if (res != CUDA_SUCCESS) {
        return res;
    }

    res = gpumem_cuda_api.cuPointerGetAttributes(count, attrs, values,
                                                 (CUdeviceptr)(uintptr_t)addr);
    gpumem_cuda_ctx_pop(gpu);
    return res;
}

int gpumem_cuda_is_device_addr(gpumem_driver_t *driver, const void *addr,
                               unsigned *gpu_index_p)
{
    gpumem_cuda_driver_t *cuda     = ucs_derived_of(driver, gpumem_cuda_driver_t);
    CUpointer_attribute attrs[]    = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    CUmemorytype mem_type          = (CUmemorytype)0;
    int ordinal                    = -1;
    void *values[]                 = {&mem_type, &ordinal};
    unsigned i;

    /* Not a CUDA address is no error of cuPointerGetAttributes: the type
     * stays 0 */
    if ((gpumem_cuda_pointer_attrs(cuda, ucs_static_array_size(attrs), attrs,
                                   values, addr) != CUDA_SUCCESS) ||
        (mem_type != CU_MEMORYTYPE_DEVICE)) {
        return 0;
    }

    for (i = 0; i < cuda->num_gpus; ++i) {
        if (cuda->gpus[i].ordinal == ordinal) {
            *gpu_index_p = i;
            return 1;
        }
    }
    return 0;
}

ucs_status_t gpumem_cuda_addr_query(gpumem_driver_t *driver, const void *addr,
                                    gpumem_driver_addr_attr_t *attr)
{
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned long long buffer_id = 0;
    CUdeviceptr base             = 0;
    size_t size                  = 0;
    int managed                  = 0;
    void *values[]               = {&buffer_id, &base, &size, &managed};
    unsigned index;
    CUresult res;

    if (!gpumem_cuda_is_device_addr(driver, addr, &index)) {
        return UCS_ERR_NO_ELEM;
    }

    res = gpumem_cuda_pointer_attrs(ucs_derived_of(driver, gpumem_cuda_driver_t),
                                    ucs_static_array_size(attrs), attrs,
                                    values, addr);
    if (res != CUDA_SUCCESS) {
        return gpumem_cuda_log_result(UCS_LOG_LEVEL_DEBUG, res,
                                      "cuPointerGetAttributes",
                                      "attributes of %p", addr);
    }

    attr->gpu_index = index;
    attr->base      = base;
    attr->size      = size;
    attr->buffer_id = buffer_id;
    attr->managed   = managed;
    return UCS_OK;
}
