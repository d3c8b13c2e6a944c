/**
 * gpumem emulated CUDA: events, complete when the work before their record
 * is.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/debug/memtrack_int.h>


#define GPUMEM_EMU_CUDA_EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | \
                                     CU_EVENT_DISABLE_TIMING | \
                                     CU_EVENT_INTERPROCESS)


/* Moves the event's stream on to the event's record, as an application's
 * synchronize waits (gpumem_emu_cuda_stream_wait()) */
static void gpumem_emu_cuda_event_wait(CUevent event)
{
    unsigned generation = event->generation;
    int yield           = gpumem_emu_cuda_can_yield();

    /* The record of the call's time, not one made while the lock is let go */
    while (event->pending && (event->generation == generation)) {
        gpumem_emu_cuda_stream_step(event->stream, yield);
    }
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    CUcontext ctx;
    CUevent event;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((phEvent == NULL) || (flags & ~GPUMEM_EMU_CUDA_EVENT_FLAGS)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_ctx_get(&ctx);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }

    event = ucs_calloc(1, sizeof(*event), "gpumem_emu_cuda_event");
    if (event == NULL) {
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    if (gpumem_emu_cuda_live_add(event, GPUMEM_EMU_CUDA_LIVE_EVENT) !=
        CUDA_SUCCESS) {
        ucs_free(event);
        return gpumem_emu_cuda_return(CUDA_ERROR_OUT_OF_MEMORY);
    }
    event->ctx   = ctx;
    event->flags = flags;
    *phEvent     = event;
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_live_is(hEvent, GPUMEM_EMU_CUDA_LIVE_EVENT)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }
    if (hEvent->pending) {
        gpumem_emu_cuda_stream_forget(hEvent->stream, hEvent);
    }
    gpumem_emu_cuda_live_remove(hEvent);
    ucs_free(hEvent);
    return gpumem_emu_cuda_return(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    CUstream stream;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_live_is(hEvent, GPUMEM_EMU_CUDA_LIVE_EVENT)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }
    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res != CUDA_SUCCESS) {
        return gpumem_emu_cuda_return(res);
    }
    /* An event records work of its own context only */
    if (stream->ctx != hEvent->ctx) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }
    if (hEvent->pending) {
        gpumem_emu_cuda_stream_forget(hEvent->stream, hEvent);
    }
    return gpumem_emu_cuda_return(gpumem_emu_cuda_stream_record(stream,
                                                                hEvent));
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_live_is(hEvent, GPUMEM_EMU_CUDA_LIVE_EVENT)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }
    if (hEvent->pending) {
        gpumem_emu_cuda_stream_progress(hEvent->stream);
    }
    if (hEvent->pending) {
        return gpumem_emu_cuda_return(CUDA_ERROR_NOT_READY);
    }
    /* Work of a context that faulted did not complete */
    return gpumem_emu_cuda_return(gpumem_emu_cuda_ctx_sticky(hEvent->ctx));
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_live_is(hEvent, GPUMEM_EMU_CUDA_LIVE_EVENT)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }
    gpumem_emu_cuda_event_wait(hEvent);
    return gpumem_emu_cuda_return(gpumem_emu_cuda_ctx_sticky(hEvent->ctx));
}

/* The stream waits: its later work starts after the event's, which here
 * is the event's work done before the call returns */
CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                   unsigned int flags)
{
    CUstream stream;
    CUresult res = gpumem_emu_cuda_enter();

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!gpumem_emu_cuda_live_is(hEvent, GPUMEM_EMU_CUDA_LIVE_EVENT)) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_HANDLE);
    }
    if (flags != 0) {
        return gpumem_emu_cuda_return(CUDA_ERROR_INVALID_VALUE);
    }
    res = gpumem_emu_cuda_stream_get(hStream, &stream);
    if (res == CUDA_SUCCESS) {
        gpumem_emu_cuda_event_wait(hEvent);
        res = gpumem_emu_cuda_ctx_sticky(hEvent->ctx);
    }
    return gpumem_emu_cuda_return(res);
}
