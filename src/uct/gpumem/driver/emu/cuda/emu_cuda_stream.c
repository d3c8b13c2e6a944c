/**
 * gpumem emulated CUDA: streams, the order of their work, and its progress
 * on the emu's copy engine.
 *
 * A copy the engine does not finish at once goes on each time the stream
 * is asked about (a query, a synchronize, an event's query), one step of
 * the engine a time: the caller sees a copy complete later, as on a GPU.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/debug/memtrack_int.h>


/**
 * A stream's operation: a copy, or an event's record.
 */
typedef struct gpumem_emu_cuda_op {
    ucs_list_link_t      list;
    int                  record;      /* A record, else a copy */
    CUevent              event;       /* The record's; NULL once the
                                         event is destroyed */
    unsigned             generation;  /* The record's */
    int                  gpu;         /* Whose engine copies */
    uint64_t             dst, src;
    int                  dst_dev, src_dev;
    size_t               size;
    int                  started;
    gpumem_driver_copy_t copy;
} gpumem_emu_cuda_op_t;


CUresult gpumem_emu_cuda_stream_new(CUcontext ctx, unsigned flags,
                                    CUstream *stream_p)
{
    CUstream stream;

    stream = ucs_calloc(1, sizeof(*stream), "gpumem_emu_cuda_stream");
    if (stream == NULL) {
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
    ucs_list_del(&stream->list);
    ucs_free(stream);
}

CUresult gpumem_emu_cuda_stream_get(CUstream handle, CUstream *stream_p)
{
    CUcontext ctx;
    CUresult res;

    if ((handle != NULL) && (handle != CU_STREAM_LEGACY) &&
        (handle != CU_STREAM_PER_THREAD)) {
        *stream_p = handle;
        return CUDA_SUCCESS;
    }

    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res == CUDA_SUCCESS) {
        *stream_p = ctx->stream;
    }
    return res;
}

static void gpumem_emu_cuda_op_done(CUstream stream, gpumem_emu_cuda_op_t *op,
                                    ucs_status_t status)
{
    if ((status != UCS_OK) && (stream->error == CUDA_SUCCESS)) {
        stream->error = gpumem_emu_cuda_result(status);
    }
    ucs_list_del(&op->list);
    ucs_free(op);
}

/* Starts or goes on with the first operation; whether it is done */
static int gpumem_emu_cuda_op_step(CUstream stream, gpumem_emu_cuda_op_t *op)
{
    gpumem_driver_ops_t const *ops = gpumem_emu_cuda.emu->ops;
    ucs_status_t status;

    if (op->record) {
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

void gpumem_emu_cuda_stream_progress(CUstream stream)
{
    gpumem_emu_cuda_op_t *op;

    while (!ucs_list_is_empty(&stream->ops)) {
        op = ucs_list_head(&stream->ops, gpumem_emu_cuda_op_t, list);
        if (!gpumem_emu_cuda_op_step(stream, op)) {
            return;
        }
    }
}

CUresult gpumem_emu_cuda_stream_drain(CUstream stream)
{
    CUresult res;

    while (!ucs_list_is_empty(&stream->ops)) {
        gpumem_emu_cuda_stream_progress(stream);
    }
    res           = stream->error;
    stream->error = CUDA_SUCCESS;
    return res;
}

void gpumem_emu_cuda_ctx_drain(CUcontext ctx)
{
    CUstream stream;

    ucs_list_for_each(stream, &ctx->streams, list) {
        gpumem_emu_cuda_stream_drain(stream);
    }
}

static CUresult gpumem_emu_cuda_op_queue(CUstream stream,
                                         const gpumem_emu_cuda_op_t *proto)
{
    gpumem_emu_cuda_op_t *op;

    op = ucs_malloc(sizeof(*op), "gpumem_emu_cuda_op");
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }

    *op = *proto;
    ucs_list_add_tail(&stream->ops, &op->list);
    /* Work of an idle stream starts when it is queued */
    gpumem_emu_cuda_stream_progress(stream);
    return CUDA_SUCCESS;
}

CUresult gpumem_emu_cuda_stream_copy(CUstream stream, int gpu, uint64_t dst,
                                     int dst_dev, uint64_t src, int src_dev,
                                     size_t size)
{
    gpumem_emu_cuda_op_t op = {};

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
    op.record      = 1;
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
    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cuda_stream_drain(stream);
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
    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    gpumem_emu_cuda_stream_progress(stream);
    if (!ucs_list_is_empty(&stream->ops)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_READY);
    }
    res           = stream->error;
    stream->error = CUDA_SUCCESS;
    return gpumem_emu_cuda_return(res);
}
