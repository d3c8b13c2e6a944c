/**
 * gpumem cuda driver: the GPU's context, made current around the driver's
 * calls and the caller's put back after them (cuda_int.h).
 *
 * Where the caller's current context is the GPU's already (an application
 * that set the device, UCX's progress on its thread), nothing is pushed:
 * one question to the driver instead of a push and a pop on every copy.
 * Each thread keeps, a bit per level, whether each enclosing push pushed.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"


/* Whether each push of the thread's, innermost in bit 0, pushed */
static __thread uint64_t gpumem_cuda_ctx_pushed;


ucs_status_t gpumem_cuda_ctx_push(gpumem_cuda_gpu_t *gpu, const char *what)
{
    CUcontext current = NULL;
    ucs_status_t status;

    if ((gpumem_cuda_api.cuCtxGetCurrent(&current) == CUDA_SUCCESS) &&
        (current == gpu->ctx)) {
        gpumem_cuda_ctx_pushed <<= 1;
        return UCS_OK;
    }

    GPUMEM_CUDA_CALL(&status, cuCtxPushCurrent, (gpu->ctx),
                     "GPU %u: %s", gpu->index, what);
    if (status == UCS_OK) {
        gpumem_cuda_ctx_pushed = (gpumem_cuda_ctx_pushed << 1) | 1;
    }
    return status;
}

void gpumem_cuda_ctx_pop(gpumem_cuda_gpu_t *gpu)
{
    int pushed     = gpumem_cuda_ctx_pushed & 1;
    CUcontext ctx  = NULL;
    CUresult res;

    gpumem_cuda_ctx_pushed >>= 1;
    if (!pushed) {
        return;
    }

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
