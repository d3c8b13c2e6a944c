/**
 * gpumem UCM: memory-type events for the application's own CUDA
 * allocations, by patching the calls to the CUDA allocation and free
 * functions in the process's relocation tables.
 *
 * An application that allocates with cudaMalloc or cuMemAlloc and frees
 * and allocates again may get the same address back for new memory; the
 * free event lets UCX's memory type and registration caches drop the old
 * range first. The driver API's own calls inside libcudart do not go
 * through the relocation tables, so each allocation raises one event.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucm_gpumem.h"

#include <cuda.h>
#include <ucm/event/event.h>
#include <ucm/util/log.h>
#include <ucm/util/reloc.h>
#include <ucs/sys/compiler_def.h>
#include <dlfcn.h>
#include <pthread.h>

/* The runtime API's types, without its header: its calls return an int */
typedef int ucm_gpumem_cudart_error_t;


typedef struct ucm_gpumem_cuda_func {
    ucm_reloc_patch_t patch;
    void              **orig_p;  /* The function the replacement calls */
} ucm_gpumem_cuda_func_t;


static CUresult (*ucm_gpumem_orig_cuMemAlloc)(CUdeviceptr*, size_t);
static CUresult (*ucm_gpumem_orig_cuMemAllocManaged)(CUdeviceptr*, size_t,
                                                     unsigned);
static CUresult (*ucm_gpumem_orig_cuMemAllocPitch)(CUdeviceptr*, size_t*,
                                                   size_t, size_t, unsigned);
static CUresult (*ucm_gpumem_orig_cuMemFree)(CUdeviceptr);
static ucm_gpumem_cudart_error_t (*ucm_gpumem_orig_cudaMalloc)(void**,
                                                               size_t);
static ucm_gpumem_cudart_error_t
(*ucm_gpumem_orig_cudaMallocManaged)(void**, size_t, unsigned);
static ucm_gpumem_cudart_error_t (*ucm_gpumem_orig_cudaFree)(void*);


static void ucm_gpumem_cuda_alloc(const void *ptr, size_t size, int managed)
{
    ucm_gpumem_dispatch_alloc((void*)ptr, size,
                              managed ? UCS_MEMORY_TYPE_CUDA_MANAGED :
                                        UCS_MEMORY_TYPE_CUDA,
                              UCS_SYS_DEVICE_ID_UNKNOWN);
}

static CUresult ucm_gpumem_cuMemAlloc(CUdeviceptr *dptr_p, size_t size)
{
    CUresult res;

    ucm_event_enter();
    res = ucm_gpumem_orig_cuMemAlloc(dptr_p, size);
    if (res == CUDA_SUCCESS) {
        ucm_gpumem_cuda_alloc((void*)*dptr_p, size, 0);
    }
    ucm_event_leave();
    return res;
}

static CUresult ucm_gpumem_cuMemAllocManaged(CUdeviceptr *dptr_p, size_t size,
                                             unsigned flags)
{
    CUresult res;

    ucm_event_enter();
    res = ucm_gpumem_orig_cuMemAllocManaged(dptr_p, size, flags);
    if (res == CUDA_SUCCESS) {
        ucm_gpumem_cuda_alloc((void*)*dptr_p, size, 1);
    }
    ucm_event_leave();
    return res;
}

static CUresult ucm_gpumem_cuMemAllocPitch(CUdeviceptr *dptr_p,
                                           size_t *pitch_p, size_t width,
                                           size_t height, unsigned elem_size)
{
    CUresult res;

    ucm_event_enter();
    res = ucm_gpumem_orig_cuMemAllocPitch(dptr_p, pitch_p, width, height,
                                          elem_size);
    if (res == CUDA_SUCCESS) {
        ucm_gpumem_cuda_alloc((void*)*dptr_p, *pitch_p * height, 0);
    }
    ucm_event_leave();
    return res;
}

static CUresult ucm_gpumem_cuMemFree(CUdeviceptr dptr)
{
    CUresult res;

    ucm_event_enter();
    ucm_gpumem_dispatch_free_known((void*)dptr);
    res = ucm_gpumem_orig_cuMemFree(dptr);
    ucm_event_leave();
    return res;
}

static ucm_gpumem_cudart_error_t ucm_gpumem_cudaMalloc(void **ptr_p,
                                                       size_t size)
{
    ucm_gpumem_cudart_error_t ret;

    ucm_event_enter();
    ret = ucm_gpumem_orig_cudaMalloc(ptr_p, size);
    if (ret == 0) {
        ucm_gpumem_cuda_alloc(*ptr_p, size, 0);
    }
    ucm_event_leave();
    return ret;
}

static ucm_gpumem_cudart_error_t
ucm_gpumem_cudaMallocManaged(void **ptr_p, size_t size, unsigned flags)
{
    ucm_gpumem_cudart_error_t ret;

    ucm_event_enter();
    ret = ucm_gpumem_orig_cudaMallocManaged(ptr_p, size, flags);
    if (ret == 0) {
        ucm_gpumem_cuda_alloc(*ptr_p, size, 1);
    }
    ucm_event_leave();
    return ret;
}

static ucm_gpumem_cudart_error_t ucm_gpumem_cudaFree(void *ptr)
{
    ucm_gpumem_cudart_error_t ret;

    ucm_event_enter();
    ucm_gpumem_dispatch_free_known(ptr);
    ret = ucm_gpumem_orig_cudaFree(ptr);
    ucm_event_leave();
    return ret;
}

#define UCM_GPUMEM_CUDA_FUNC(_symbol, _name) \
    { {(_symbol), (void*)ucm_gpumem_##_name, NULL, {NULL, NULL}, NULL}, \
      (void**)&ucm_gpumem_orig_##_name }

/* The versioned symbols are those cuda.h makes an application call */
static ucm_gpumem_cuda_func_t ucm_gpumem_cuda_funcs[] = {
    UCM_GPUMEM_CUDA_FUNC("cuMemAlloc_v2",      cuMemAlloc),
    UCM_GPUMEM_CUDA_FUNC("cuMemAllocManaged",  cuMemAllocManaged),
    UCM_GPUMEM_CUDA_FUNC("cuMemAllocPitch_v2", cuMemAllocPitch),
    UCM_GPUMEM_CUDA_FUNC("cuMemFree_v2",       cuMemFree),
    UCM_GPUMEM_CUDA_FUNC("cudaMalloc",         cudaMalloc),
    UCM_GPUMEM_CUDA_FUNC("cudaMallocManaged",  cudaMallocManaged),
    UCM_GPUMEM_CUDA_FUNC("cudaFree",           cudaFree)
};

static pthread_mutex_t ucm_gpumem_cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static int ucm_gpumem_cuda_installed        = 0;


ucs_status_t ucm_gpumem_cuda_install(void)
{
    ucm_gpumem_cuda_func_t *func;
    ucs_status_t status = UCS_OK;
    void *orig;
    unsigned i;

    pthread_mutex_lock(&ucm_gpumem_cuda_lock);
    if (ucm_gpumem_cuda_installed) {
        goto out;
    }

    for (i = 0; i < ucs_static_array_size(ucm_gpumem_cuda_funcs); ++i) {
        func = &ucm_gpumem_cuda_funcs[i];

        /* A patch of a call without its original would break it: a
         * function that is not loaded yet is left alone (an application
         * that loads libcudart later is not seen) */
        orig = dlsym(RTLD_DEFAULT, func->patch.symbol);
        if (orig == NULL) {
            ucm_debug("gpumem: %s is not loaded: its calls raise no events",
                      func->patch.symbol);
            continue;
        }

        *func->orig_p = orig;
        status        = ucm_reloc_modify(&func->patch);
        if (status != UCS_OK) {
            ucm_warn("gpumem: cannot patch the calls to %s: %s",
                     func->patch.symbol, ucs_status_string(status));
            goto out;
        }
        ucm_debug("gpumem: calls to %s raise memory-type events",
                  func->patch.symbol);
    }

    ucm_gpumem_cuda_installed = 1;
out:
    pthread_mutex_unlock(&ucm_gpumem_cuda_lock);
    return status;
}
