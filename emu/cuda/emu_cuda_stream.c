/**
 * gpumem emulated CUDA: streams, the order of their work, and its progress
 * on the emu's copy engine.
 *
 * A copy the engine does not finish at once goes on a step of the engine
 * at a time: each time the stream is asked about (a query, a synchronize,
 * an event's query), and in the library's progress thread
 * (emu_cuda_progress.c), so that it completes later, as on a GPU, and
 * whether or not its caller asks. A host function waits for the work
 * before it, and the work after it waits for its return; the progress
 * thread calls it, or a call of the library that must wait with the lock
 * held (a free, a destroy).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/debug/memtrack_int.h>
#include <limits.h>
#include <sched.h>


typedef enum {
    GPUMEM_EMU_CUDA_OP_COPY,
    GPUMEM_EMU_CUDA_OP_RECORD,   /* Of an event */
    GPUMEM_EMU_CUDA_OP_HOST      /* A host function */
} gpumem_emu_cuda_op_kind_t;


/* Where a host function is */
typedef enum {
    GPUMEM_EMU_CUDA_HOST_QUEUED,
    GPUMEM_EMU_CUDA_HOST_RUNNING,  /* Called, the lock let go */
    GPUMEM_EMU_CUDA_HOST_RETURNED  /* Set by its caller, without the lock */
} gpumem_emu_cuda_host_state_t;


/* Who may call a host function at the head of a stream, in a step */
typedef enum {
    GPUMEM_EMU_CUDA_HOST_BY_NONE,     /* Nobody: it waits */
    GPUMEM_EMU_CUDA_HOST_BY_LOCKED,   /* The stepping thread, the lock held */
    GPUMEM_EMU_CUDA_HOST_BY_UNLOCKED  /* The stepping thread, the lock let
                                         go (the progress thread) */
} gpumem_emu_cuda_host_caller_t;


/**
 * A stream's operation: a copy, an event's record or a host function.
 */
typedef struct gpumem_emu_cuda_op {
    ucs_list_link_t           list;
    gpumem_emu_cuda_op_kind_t kind;
    unsigned long long        number;      /* In the order of all queued */
    CUevent                   event;       /* The record's; NULL once the
                                              event is destroyed */
    unsigned                  generation;  /* The record's */
    int                       gpu;         /* Whose engine copies */
    uint64_t                  dst, src;
    int                       dst_dev, src_dev;
    size_t                    size;
    int                       started;
    gpumem_driver_copy_t      copy;
    CUhostFn                  host_fn;     /* cuLaunchHostFunc's */
    CUstreamCallback          callback;    /* cuStreamAddCallback's */
    CUstream                  handle;      /* The stream as the callback
                                              was given it */
    void                      *user_data;
    int                       host_state;  /* gpumem_emu_cuda_host_state_t */
} gpumem_emu_cuda_op_t;


CUresult gpumem_emu_cuda_stream_new(CUcontext ctx, unsigned flags,
                                    CUstream *stream_p)
{
    CUstream stream;

    stream = ucs_calloc(1, sizeof(*stream), "gpumem_emu_cuda_stream");
    if (stream == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }

    if (gpumem_emu_cuda_live_add(stream, GPUMEM_EMU_CUDA_LIVE_STREAM) !=
        CUDA_SUCCESS) {
        ucs_free(stream);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }

    stream->ctx   = ctx;
    stream->flags = flags;
    ucs_list_head_init(&stream->ops);
    ucs_list_add_tail(&ctx->streams, &stream->list);
    *stream_p = stream;
    return CUDA_SUCCESS;
}

void gpumem_emu_cuda_stream_free(CUstream stream)
{
    gpumem_emu_cuda_live_remove(stream);
    ucs_list_del(&stream->list);
    ucs_free(stream);
}

CUresult gpumem_emu_cuda_stream_find(CUstream handle, CUstream *stream_p)
{
    CUcontext ctx;
    CUresult res;

    if ((handle != NULL) && (handle != CU_STREAM_LEGACY) &&
        (handle != CU_STREAM_PER_THREAD)) {
        /* Destroyed, or never a stream: not followed */
        if (!gpumem_emu_cuda_live_is(handle, GPUMEM_EMU_CUDA_LIVE_STREAM)) {
            return CUDA_ERROR_INVALID_HANDLE;
        }
        *stream_p = handle;
        return CUDA_SUCCESS;
    }

    res = gpumem_emu_cuda_ctx_find(&ctx);
    if (res == CUDA_SUCCESS) {
        *stream_p = ctx->stream;
    }
    return res;
}

CUresult gpumem_emu_cuda_stream_get(CUstream handle, CUstream *stream_p)
{
    CUstream stream;
    CUresult res;

    res = gpumem_emu_cuda_stream_find(handle, &stream);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (stream->ctx->sticky != CUDA_SUCCESS) {
        return stream->ctx->sticky;
    }
    *stream_p = stream;
    return CUDA_SUCCESS;
}

static void gpumem_emu_cuda_op_done(CUstream stream, gpumem_emu_cuda_op_t *op,
                                    ucs_status_t status)
{
    if ((status != UCS_OK) && (stream->error == CUDA_SUCCESS)) {
        stream->error = gpumem_emu_cuda_result(status);
    }
    if ((status == UCS_ERR_INVALID_ADDR) &&
        (stream->ctx->sticky == CUDA_SUCCESS)) {
        /* An address the engine found unmapped: on a GPU, a fault that
         * leaves the context unusable */
        ucs_debug("gpumem emulated CUDA: context %p: its work faulted, "
                  "every later call in it fails", stream->ctx);
        stream->ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    ucs_list_del(&op->list);
    ucs_free(op);
    --gpumem_emu_cuda.queued;
}

/* Calls the host function of @a op; the lock let go when @a unlocked.
 * Once it has returned, @a op is no longer touched here: whoever steps the
 * stream next takes it off */
static void gpumem_emu_cuda_host_call(CUstream stream,
                                      gpumem_emu_cuda_op_t *op, int unlocked)
{
    CUhostFn host_fn          = op->host_fn;
    CUstreamCallback callback = op->callback;
    CUstream handle           = op->handle;
    void *user_data           = op->user_data;
    CUresult status           = (stream->ctx->sticky != CUDA_SUCCESS) ?
                                stream->ctx->sticky : stream->error;

    op->host_state = GPUMEM_EMU_CUDA_HOST_RUNNING;
    if (unlocked) {
        pthread_mutex_unlock(&gpumem_emu_cuda.lock);
    }

    gpumem_emu_cuda_in_host_fn = 1;
    if (host_fn != NULL) {
        host_fn(user_data);
    } else {
        callback(handle, status, user_data);
    }
    gpumem_emu_cuda_in_host_fn = 0;

    __atomic_store_n(&op->host_state, GPUMEM_EMU_CUDA_HOST_RETURNED,
                     __ATOMIC_RELEASE);
    if (unlocked) {
        pthread_mutex_lock(&gpumem_emu_cuda.lock);
    }
}

/* Goes on with a host function, called by @a caller where it waits to be;
 * whether it is done */
static int
gpumem_emu_cuda_host_step(CUstream stream, gpumem_emu_cuda_op_t *op,
                          gpumem_emu_cuda_host_caller_t caller)
{
    int unlocked = (caller == GPUMEM_EMU_CUDA_HOST_BY_UNLOCKED);
    int state    = __atomic_load_n(&op->host_state, __ATOMIC_ACQUIRE);

    if ((state == GPUMEM_EMU_CUDA_HOST_QUEUED) &&
        (caller != GPUMEM_EMU_CUDA_HOST_BY_NONE)) {
        gpumem_emu_cuda_host_call(stream, op, unlocked);
        if (unlocked) {
            /* Another thread may have taken it off while the lock was let
             * go: the next step does */
            return 0;
        }
        state = GPUMEM_EMU_CUDA_HOST_RETURNED;
    }
    if (state != GPUMEM_EMU_CUDA_HOST_RETURNED) {
        if ((state == GPUMEM_EMU_CUDA_HOST_RUNNING) &&
            (caller == GPUMEM_EMU_CUDA_HOST_BY_LOCKED)) {
            /* The progress thread calls it, the lock let go */
            sched_yield();
        }
        return 0;
    }
    gpumem_emu_cuda_op_done(stream, op, UCS_OK);
    return 1;
}

/* Starts or goes on with the first operation, a host function called as
 * gpumem_emu_cuda_host_step() says; whether it is done */
static int gpumem_emu_cuda_op_step(CUstream stream, gpumem_emu_cuda_op_t *op,
                                   gpumem_emu_cuda_host_caller_t host_caller)
{
    gpumem_driver_ops_t const *ops = gpumem_emu_cuda.emu->ops;
    ucs_status_t status;

    if ((stream->ctx->sticky != CUDA_SUCCESS) && !op->started &&
        ((op->kind == GPUMEM_EMU_CUDA_OP_COPY) ||
         ((op->kind == GPUMEM_EMU_CUDA_OP_HOST) && (op->host_fn != NULL) &&
          (op->host_state == GPUMEM_EMU_CUDA_HOST_QUEUED)))) {
        /* The context's work faulted: what was queued after ends moving
         * nothing, and a host function is not called (a stream callback
         * is, told the error), as CUDA documents */
        gpumem_emu_cuda_op_done(stream, op, UCS_OK);
        return 1;
    }

    if (op->kind == GPUMEM_EMU_CUDA_OP_HOST) {
        return gpumem_emu_cuda_host_step(stream, op, host_caller);
    }

    if (op->kind == GPUMEM_EMU_CUDA_OP_RECORD) {
        if ((op->event != NULL) &&
            (op->event->generation == op->generation)) {
            op->event->pending = 0;
        }
        gpumem_emu_cuda_op_done(stream, op, UCS_OK);
        return 1;
    }

    if (!op->started) {
        op->started = 1;
        status      = ops->copy(gpumem_emu_cuda_gpu(op->gpu), op->dst,
                                op->dst_dev, op->src, op->src_dev, op->size,
                                &op->copy);
    } else {
        status = ops->copy_poll(&op->copy);
    }

    if (status == UCS_INPROGRESS) {
        return 0;
    }
    gpumem_emu_cuda_op_done(stream, op, status);
    return 1;
}

/* Steps the stream's operations while they complete; whether a host
 * function was called with the lock let go */
static int
gpumem_emu_cuda_stream_steps(CUstream stream,
                             gpumem_emu_cuda_host_caller_t host_caller)
{
    gpumem_emu_cuda_op_t *op;
    int called;

    while (!ucs_list_is_empty(&stream->ops)) {
        op     = ucs_list_head(&stream->ops, gpumem_emu_cuda_op_t, list);
        called = (host_caller == GPUMEM_EMU_CUDA_HOST_BY_UNLOCKED) &&
                 (op->kind == GPUMEM_EMU_CUDA_OP_HOST) &&
                 (__atomic_load_n(&op->host_state, __ATOMIC_ACQUIRE) ==
                  GPUMEM_EMU_CUDA_HOST_QUEUED);
        if (!gpumem_emu_cuda_op_step(stream, op, host_caller)) {
            return called;
        }
        if (called) {
            /* The stream may have new work, or another thread its end */
            return 1;
        }
    }
    return 0;
}

/* Host functions are the progress thread's, and the caller's where there
 * is none */
void gpumem_emu_cuda_stream_progress(CUstream stream)
{
    gpumem_emu_cuda_stream_steps(stream, gpumem_emu_cuda.progress ?
                                         GPUMEM_EMU_CUDA_HOST_BY_NONE :
                                         GPUMEM_EMU_CUDA_HOST_BY_LOCKED);
}

int gpumem_emu_cuda_stream_run(CUstream stream)
{
    return gpumem_emu_cuda_stream_steps(stream,
                                        GPUMEM_EMU_CUDA_HOST_BY_UNLOCKED);
}

/* The stream's error, told once */
static CUresult gpumem_emu_cuda_stream_error(CUstream stream)
{
    CUresult res = stream->error;

    stream->error = CUDA_SUCCESS;
    return res;
}

void gpumem_emu_cuda_stream_step(CUstream stream, int yield)
{
    if (!yield) {
        gpumem_emu_cuda_stream_steps(stream, GPUMEM_EMU_CUDA_HOST_BY_LOCKED);
        return;
    }

    gpumem_emu_cuda_stream_progress(stream);
    if (!ucs_list_is_empty(&stream->ops)) {
        gpumem_emu_cuda_yield();
    }
}

/* Whether the stream's work up to operation @a last is done */
static int gpumem_emu_cuda_stream_done(CUstream stream,
                                       unsigned long long last)
{
    return ucs_list_is_empty(&stream->ops) ||
           (ucs_list_head(&stream->ops, gpumem_emu_cuda_op_t, list)->number >
            last);
}

CUresult gpumem_emu_cuda_stream_drain(CUstream stream)
{
    while (!ucs_list_is_empty(&stream->ops)) {
        gpumem_emu_cuda_stream_step(stream, 0);
    }
    return gpumem_emu_cuda_stream_error(stream);
}

/* The work queued before the call, not what other threads queue while the
 * lock is let go */
CUresult gpumem_emu_cuda_stream_wait(CUstream stream)
{
    unsigned long long last = gpumem_emu_cuda.last_op;
    int yield               = gpumem_emu_cuda_can_yield();

    while (!gpumem_emu_cuda_stream_done(stream, last)) {
        gpumem_emu_cuda_stream_step(stream, yield);
    }
    return gpumem_emu_cuda_stream_error(stream);
}

/* Until a pass finds every stream done up to @a last; after a step, which
 * may have let the lock go, the walk starts again */
static void gpumem_emu_cuda_ctx_steps(CUcontext ctx, int yield,
                                      unsigned long long last)
{
    CUstream stream;

again:
    ucs_list_for_each(stream, &ctx->streams, list) {
        if (!gpumem_emu_cuda_stream_done(stream, last)) {
            gpumem_emu_cuda_stream_step(stream, yield);
            goto again;
        }
    }
}

void gpumem_emu_cuda_ctx_drain(CUcontext ctx)
{
    gpumem_emu_cuda_ctx_steps(ctx, 0, ULLONG_MAX);
}

void gpumem_emu_cuda_ctx_wait(CUcontext ctx)
{
    gpumem_emu_cuda_ctx_steps(ctx, gpumem_emu_cuda_can_yield(),
                              gpumem_emu_cuda.last_op);
}

static CUresult gpumem_emu_cuda_op_queue(CUstream stream,
                                         const gpumem_emu_cuda_op_t *proto)
{
    gpumem_emu_cuda_op_t *op;

    op = ucs_malloc(sizeof(*op), "gpumem_emu_cuda_op");
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }

    *op        = *proto;
    op->number = ++gpumem_emu_cuda.last_op;
    ucs_list_add_tail(&stream->ops, &op->list);
    ++gpumem_emu_cuda.queued;
    /* Work of an idle stream starts when it is queued; the progress
     * thread first, which calls host functions, never the thread that
     * queues one */
    gpumem_emu_cuda_progress_wake();
    gpumem_emu_cuda_stream_progress(stream);
    return CUDA_SUCCESS;
}

CUresult gpumem_emu_cuda_stream_copy(CUstream stream, int gpu, uint64_t dst,
                                     int dst_dev, uint64_t src, int src_dev,
                                     size_t size)
{
    gpumem_emu_cuda_op_t op = {};

    op.kind    = GPUMEM_EMU_CUDA_OP_COPY;
    op.gpu     = gpu;
    op.dst     = dst;
    op.dst_dev = dst_dev;
    op.src     = src;
    op.src_dev = src_dev;
    op.size    = size;
    return gpumem_emu_cuda_op_queue(stream, &op);
}

CUresult gpumem_emu_cuda_stream_record(CUstream stream, CUevent event)
{
    gpumem_emu_cuda_op_t op = {};

    event->stream  = stream;
    event->pending = 1;
    op.kind        = GPUMEM_EMU_CUDA_OP_RECORD;
    op.event       = event;
    op.generation  = ++event->generation;
    return gpumem_emu_cuda_op_queue(stream, &op);
}

void gpumem_emu_cuda_stream_forget(CUstream stream, CUevent event)
{
    gpumem_emu_cuda_op_t *op;

    ucs_list_for_each(op, &stream->ops, list) {
        if (op->event == event) {
            op->event = NULL;
        }
    }
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    CUcontext ctx;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((phStream == NULL) || (flags & ~CU_STREAM_NON_BLOCKING)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_stream_new(ctx, flags, phStream);
    }
    return gpumem_emu_cuda_return(res);
}

/* The work queued goes on to its end, as NVIDIA's driver lets it */
CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((hStream == NULL) || (hStream == CU_STREAM_LEGACY) ||
        (hStream == CU_STREAM_PER_THREAD) ||
        !gpumem_emu_cuda_live_is(hStream, GPUMEM_EMU_CUDA_LIVE_STREAM) ||
        (hStream == hStream->ctx->stream)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }

    gpumem_emu_cuda_stream_drain(hStream);
    gpumem_emu_cuda_stream_free(hStream);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    CUstream stream;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    /* The work queued before a fault ends first (moving nothing) */
    res = gpumem_emu_cuda_stream_find(hStream, &stream);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_stream_wait(stream);
        if (stream->ctx->sticky != CUDA_SUCCESS) {
            res = stream->ctx->sticky;
        }
    }
    return gpumem_emu_cuda_return(res);
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    CUstream stream;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = gpumem_emu_cuda_stream_find(hStream, &stream);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    gpumem_emu_cuda_stream_progress(stream);
    if (!ucs_list_is_empty(&stream->ops)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_READY);
    }
    res = gpumem_emu_cuda_stream_error(stream);
    if (stream->ctx->sticky != CUDA_SUCCESS) {
        res = stream->ctx->sticky;
    }
    return gpumem_emu_cuda_return(res);
}

static CUresult gpumem_emu_cuda_stream_host(CUstream hStream, CUhostFn fn,
                                            CUstreamCallback callback,
                                            void *user_data)
{
    gpumem_emu_cuda_op_t op = {};
    CUstream stream;
    CUresult res;

    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res != CUDA_SUCCESS) {
        return res;
    }

    op.kind       = GPUMEM_EMU_CUDA_OP_HOST;
    op.host_fn    = fn;
    op.callback   = callback;
    op.handle     = hStream;
    op.user_data  = user_data;
    op.host_state = GPUMEM_EMU_CUDA_HOST_QUEUED;
    return gpumem_emu_cuda_op_queue(stream, &op);
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn,
                                  void *userData)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fn == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_stream_host(hStream, fn,
                                                              NULL, userData));
}

/* The callback is told the stream's error, if its earlier work had one */
CUresult CUDAAPI cuStreamAddCallback(CUstream hStream,
                                     CUstreamCallback callback,
                                     void *userData, unsigned int flags)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((callback == NULL) || (flags != 0)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_stream_host(hStream, NULL,
                                                              callback,
                                                              userData));
}
