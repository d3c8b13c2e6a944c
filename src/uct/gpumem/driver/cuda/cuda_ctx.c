/**
 * gpumem cuda driver: the GPU's context, pushed over the caller's around
 * the driver's calls and popped after them (cuda_int.h).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"


ucs_status_t gpumem_cuda_ctx_push(gpumem_cuda_gpu_t *gpu, const char *what)
{
    ucs_status_t status;

    GPUMEM_CUDA_CALL(&status, cuCtxPushCurrent, (gpu->ctx),
                     "GPU %u: %s", gpu->index, what);
    return status;
}

void gpumem_cuda_ctx_pop(gpumem_cuda_gpu_t *gpu)
{
    CUcontext ctx = NULL;
    CUresult res;

    res = gpumem_cuda_api.cuCtxPopCurrent(&ctx);
    if (res != CUDA_SUCCESS) {
        gpumem_cuda_log_result(UCS_LOG_LEVEL_WARN, res, "cuCtxPopCurrent",
                               "GPU %u", gpu->index);
        return;
    }

    /* Pushes and pops pair up inside each operation */
    ucs_assertv(ctx == gpu->ctx, "GPU %u: popped context %p, pushed %p",
                gpu->index, (void*)ctx, (void*)gpu->ctx);
}
