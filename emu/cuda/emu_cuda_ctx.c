/**
 * gpumem emulated CUDA: primary contexts, and each thread's stack of
 * current ones.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/debug/memtrack_int.h>
#include <unistd.h>


/* The thread's pushed contexts, the current one last. A fork's child
 * starts with none: its contexts are those it makes */
static __thread CUcontext gpumem_emu_cuda_stack[GPUMEM_EMU_CUDA_CTX_DEPTH];
static __thread unsigned  gpumem_emu_cuda_depth;
static __thread pid_t     gpumem_emu_cuda_stack_pid;


static void gpumem_emu_cuda_stack_check(void)
{
    if (gpumem_emu_cuda_stack_pid != getpid()) {
        gpumem_emu_cuda_depth     = 0;
        gpumem_emu_cuda_stack_pid = getpid();
    }
}

CUcontext gpumem_emu_cuda_ctx_current(void)
{
    gpumem_emu_cuda_stack_check();
    return (gpumem_emu_cuda_depth == 0) ? NULL :
           gpumem_emu_cuda_stack[gpumem_emu_cuda_depth - 1];
}

static int gpumem_emu_cuda_ctx_valid(CUcontext ctx);

CUresult gpumem_emu_cuda_ctx_find(CUcontext *ctx_p)
{
    CUcontext ctx = gpumem_emu_cuda_ctx_current();

    if (ctx == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    /* Another thread destroyed it: this thread's stack still names it */
    if (!gpumem_emu_cuda_ctx_valid(ctx)) {
        ucs_debug("gpumem emulated CUDA: the current context %p was "
                  "destroyed", ctx);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *ctx_p = ctx;
    return CUDA_SUCCESS;
}

CUresult gpumem_emu_cuda_ctx_get(CUcontext *ctx_p)
{
    CUcontext ctx;
    CUresult res;

    res = gpumem_emu_cuda_ctx_find(&ctx);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (ctx->sticky != CUDA_SUCCESS) {
        return ctx->sticky;
    }
    *ctx_p = ctx;
    return CUDA_SUCCESS;
}

CUresult gpumem_emu_cuda_ctx_sticky(CUcontext ctx)
{
    return gpumem_emu_cuda_ctx_valid(ctx) ? ctx->sticky : CUDA_SUCCESS;
}

static int gpumem_emu_cuda_ctx_is_primary(CUcontext ctx)
{
    return (ctx >= gpumem_emu_cuda.primary) &&
           (ctx < gpumem_emu_cuda.primary + gpumem_emu_cuda.num_devices);
}

/* Whether @a ctx is a live context of the library */
static int gpumem_emu_cuda_ctx_valid(CUcontext ctx)
{
    CUcontext created;

    if (gpumem_emu_cuda_ctx_is_primary(ctx)) {
        return 1;
    }
    ucs_list_for_each(created, &gpumem_emu_cuda.contexts, list) {
        if (created == ctx) {
            return 1;
        }
    }
    return 0;
}

/* A context of the application's own, current for the thread */
static CUresult gpumem_emu_cuda_ctx_create(CUcontext *pctx, CUdevice device)
{
    CUcontext ctx;
    CUresult res;

    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (gpumem_emu_cuda_gpu(device) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    gpumem_emu_cuda_stack_check();
    if (gpumem_emu_cuda_depth == GPUMEM_EMU_CUDA_CTX_DEPTH) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }

    ctx = ucs_calloc(1, sizeof(*ctx), "gpumem_emu_cuda_ctx");
    if (ctx == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx->device = device;
    ctx->id     = ++gpumem_emu_cuda.next_ctx_id;
    ucs_list_head_init(&ctx->streams);
    res = gpumem_emu_cuda_stream_new(ctx, 0, &ctx->stream);
    if (res != CUDA_SUCCESS) {
        ucs_free(ctx);
        return res;
    }

    ucs_list_add_tail(&gpumem_emu_cuda.contexts, &ctx->list);
    gpumem_emu_cuda_stack[gpumem_emu_cuda_depth++] = ctx;
    *pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx,
                             CUctxCreateParams *ctxCreateParams,
                             unsigned int flags, CUdevice dev)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    /* Parameters that ask for nothing (no execution affinity, no shared
     * SMs), and the flags cuCtxSetFlags takes */
    if (((ctxCreateParams != NULL) &&
         ((ctxCreateParams->numExecAffinityParams != 0) ||
          (ctxCreateParams->cigParams != NULL))) ||
        (flags & ~GPUMEM_EMU_CUDA_CTX_FLAGS)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_SUPPORTED);
    }
    res = gpumem_emu_cuda_ctx_create(pctx, dev);
    if (res == CUDA_SUCCESS) {
        (*pctx)->flags = flags;
    }
    return gpumem_emu_cuda_return(res);
}

/* The version of CUDA 3.2 to 12, without parameters */
CUresult gpumem_emu_cuda_ctx_create_v2(CUcontext *pctx, unsigned int flags,
                                       CUdevice dev)
    __asm__("cuCtxCreate_v2");
CUresult gpumem_emu_cuda_ctx_create_v2(CUcontext *pctx, unsigned int flags,
                                       CUdevice dev)
{
    return cuCtxCreate(pctx, NULL, flags, dev);
}

/* Its work ends first; the calling thread's stack loses it (another
 * thread's keeps a stale context, which its next call refuses) */
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    CUstream stream, tmp;
    unsigned i, j;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_ctx_valid(ctx) ||
        gpumem_emu_cuda_ctx_is_primary(ctx)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_CONTEXT);
    }

    gpumem_emu_cuda_ctx_drain(ctx);
    ucs_list_for_each_safe(stream, tmp, &ctx->streams, list) {
        gpumem_emu_cuda_stream_free(stream);
    }
    ucs_list_del(&ctx->list);
    ucs_free(ctx);

    gpumem_emu_cuda_stack_check();
    for (i = j = 0; i < gpumem_emu_cuda_depth; ++i) {
        if (gpumem_emu_cuda_stack[i] != ctx) {
            gpumem_emu_cuda_stack[j++] = gpumem_emu_cuda_stack[i];
        }
    }
    gpumem_emu_cuda_depth = j;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice device)
{
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pctx == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (gpumem_emu_cuda_gpu(device) == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_DEVICE);
    }

    ctx = &gpumem_emu_cuda.primary[device];
    if (ctx->stream == NULL) {
        res = gpumem_emu_cuda_stream_new(ctx, 0, &ctx->stream);
        if (res != CUDA_SUCCESS) {
            return gpumem_emu_cuda_return(res);
        }
    }
    if (ctx->id == 0) {
        ctx->id = ++gpumem_emu_cuda.next_ctx_id;
    }
    ++ctx->refs;
    *pctx = ctx;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device)
{
    CUstream stream;
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (gpumem_emu_cuda_gpu(device) == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_DEVICE);
    }

    ctx = &gpumem_emu_cuda.primary[device];
    if (ctx->refs == 0) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_CONTEXT);
    }
    if (--ctx->refs == 0) {
        /* The context's work ends with it, and its errors: the next
         * retain makes a new one */
        gpumem_emu_cuda_ctx_drain(ctx);
        ctx->sticky = CUDA_SUCCESS;
        ucs_list_for_each(stream, &ctx->streams, list) {
            stream->error = CUDA_SUCCESS;
        }
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice device,
                                            unsigned int *flags, int *active)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((flags == NULL) || (active == NULL)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    if (gpumem_emu_cuda_gpu(device) == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_DEVICE);
    }
    *flags  = 0;
    *active = (gpumem_emu_cuda.primary[device].refs > 0);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_ctx_valid(ctx)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_CONTEXT);
    }

    gpumem_emu_cuda_stack_check();
    if (gpumem_emu_cuda_depth == GPUMEM_EMU_CUDA_CTX_DEPTH) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    gpumem_emu_cuda_stack[gpumem_emu_cuda_depth++] = ctx;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }

    gpumem_emu_cuda_stack_check();
    if (gpumem_emu_cuda_depth == 0) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_CONTEXT);
    }
    --gpumem_emu_cuda_depth;
    if (pctx != NULL) {
        *pctx = gpumem_emu_cuda_stack[gpumem_emu_cuda_depth];
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pctx == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    *pctx = gpumem_emu_cuda_ctx_current();
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

/* Replaces the top of the stack; NULL pops it */
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((ctx != NULL) && !gpumem_emu_cuda_ctx_valid(ctx)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_CONTEXT);
    }

    gpumem_emu_cuda_stack_check();
    if (ctx == NULL) {
        if (gpumem_emu_cuda_depth > 0) {
            --gpumem_emu_cuda_depth;
        }
    } else if (gpumem_emu_cuda_depth == 0) {
        gpumem_emu_cuda_stack[gpumem_emu_cuda_depth++] = ctx;
    } else {
        gpumem_emu_cuda_stack[gpumem_emu_cuda_depth - 1] = ctx;
    }
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (device == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res == CUDA_SUCCESS) {
        *device = ctx->device;
    }
    return gpumem_emu_cuda_return(res);
}

/* The context a call names: @a *ctx_p, a live one, or the thread's current
 * one where it is NULL (the library locked) */
static CUresult gpumem_emu_cuda_ctx_named(CUcontext *ctx_p)
{
    if (*ctx_p == NULL) {
        return gpumem_emu_cuda_ctx_get(ctx_p);
    }
    return gpumem_emu_cuda_ctx_valid(*ctx_p) ? CUDA_SUCCESS :
                                               CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (ctxId == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_named(&ctx);
    if (res == CUDA_SUCCESS) {
        *ctxId = ctx->id;
    }
    return gpumem_emu_cuda_return(res);
}

/* Every context here is of the driver API's second version, 3020 as NVIDIA's driver numbers it */
CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (version == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_named(&ctx);
    if (res == CUDA_SUCCESS) {
        *version = 3020;
    }
    return gpumem_emu_cuda_return(res);
}

/* The current context's scheduling and memory-operation flags: kept and
 * told back, the emu's engine needing none of them */
CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (flags & ~GPUMEM_EMU_CUDA_CTX_FLAGS) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res == CUDA_SUCCESS) {
        ctx->flags = flags;
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (flags == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res == CUDA_SUCCESS) {
        *flags = ctx->flags;
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    /* The work queued before a fault ends first (moving nothing) */
    res = gpumem_emu_cuda_ctx_find(&ctx);
    if (res == CUDA_SUCCESS) {
        gpumem_emu_cuda_ctx_wait(ctx);
        res = ctx->sticky;
    }
    return gpumem_emu_cuda_return(res);
}
