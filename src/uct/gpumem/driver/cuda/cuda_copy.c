/**
 * gpumem cuda driver: the copy engine, one stream per GPU, an event per
 * copy in flight, reused once it completed.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_int.h"

#include <ucs/debug/memtrack_int.h>

/* Idle events kept per GPU: as many as copies were once in flight */
#define GPUMEM_CUDA_EVENTS_MAX 1024


/* An event for a copy: an idle one, else a new one */
static ucs_status_t gpumem_cuda_event_get(gpumem_cuda_gpu_t *gpu,
                                          CUevent *event_p)
{
    ucs_status_t status;

    pthread_mutex_lock(&gpu->events_lock);
    if (gpu->num_events > 0) {
        *event_p = gpu->events[--gpu->num_events];
        pthread_mutex_unlock(&gpu->events_lock);
        return UCS_OK;
    }
    pthread_mutex_unlock(&gpu->events_lock);

    GPUMEM_CUDA_CALL(&status, cuEventCreate,
                     (event_p, CU_EVENT_DISABLE_TIMING),
                     "GPU %u: copy event", gpu->index);
    return status;
}

static void gpumem_cuda_event_put(gpumem_cuda_gpu_t *gpu, CUevent event)
{
    unsigned max_events;
    CUevent *events;

    pthread_mutex_lock(&gpu->events_lock);
    if (gpu->num_events == gpu->max_events) {
        max_events = ucs_max(gpu->max_events * 2, 16);
        events     = (max_events > GPUMEM_CUDA_EVENTS_MAX) ? NULL :
                     ucs_realloc(gpu->events, max_events * sizeof(*events),
                                 "gpumem_cuda_events");
        if (events == NULL) {
            pthread_mutex_unlock(&gpu->events_lock);
            gpumem_cuda_api.cuEventDestroy(event);
            return;
        }
        gpu->events     = events;
        gpu->max_events = max_events;
    }
    gpu->events[gpu->num_events++] = event;
    pthread_mutex_unlock(&gpu->events_lock);
}

void gpumem_cuda_copy_cleanup(gpumem_cuda_gpu_t *gpu)
{
    while (gpu->num_events > 0) {
        gpumem_cuda_api.cuEventDestroy(gpu->events[--gpu->num_events]);
    }
    ucs_free(gpu->events);
    gpu->events     = NULL;
    gpu->max_events = 0;
}


/* Queues the copy on the GPU's stream, its context pushed: on UCS_OK the
 * caller pops it */
static ucs_status_t gpumem_cuda_copy_queue(gpumem_cuda_gpu_t *gpu, uint64_t dst,
                                           uint64_t src, size_t size)
{
    ucs_status_t status;

    if (gpu->released) {
        gpumem_cuda_gpu_log(UCS_LOG_LEVEL_ERROR, gpu, "cannot copy: the GPU "
                            "was released");
        return UCS_ERR_NOT_CONNECTED;
    }

    status = gpumem_cuda_ctx_push(gpu, "copy");
    if (status != UCS_OK) {
        return status;
    }

    /* Unified addressing: the driver tells host from device by address */
    GPUMEM_CUDA_CALL(&status, cuMemcpyAsync,
                     ((CUdeviceptr)dst, (CUdeviceptr)src, size, gpu->stream),
                     "GPU %u: copy %zu bytes 0x%"PRIx64" -> 0x%"PRIx64,
                     gpu->index, size, src, dst);
    if (status != UCS_OK) {
        gpumem_cuda_ctx_pop(gpu);
    }
    return status;
}

ucs_status_t gpumem_cuda_copy(gpumem_driver_gpu_t *handle, uint64_t dst,
                              int UCS_V_UNUSED dst_dev, uint64_t src,
                              int UCS_V_UNUSED src_dev, size_t size,
                              gpumem_driver_copy_t *copy)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    ucs_status_t status;
    CUevent event;

    status = gpumem_cuda_copy_queue(gpu, dst, src, size);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_cuda_event_get(gpu, &event);
    if (status != UCS_OK) {
        /* The copy is queued: wait for it rather than lose it */
        gpumem_cuda_api.cuStreamSynchronize(gpu->stream);
        goto out_ctx_pop;
    }

    GPUMEM_CUDA_CALL(&status, cuEventRecord, (event, gpu->stream),
                     "GPU %u: copy event", gpu->index);
    if (status != UCS_OK) {
        gpumem_cuda_api.cuStreamSynchronize(gpu->stream);
        gpumem_cuda_event_put(gpu, event);
        goto out_ctx_pop;
    }

    copy->gpu  = handle;
    copy->priv = event;
    status     = UCS_INPROGRESS;

out_ctx_pop:
    gpumem_cuda_ctx_pop(gpu);
    return status;
}

ucs_status_t gpumem_cuda_copy_poll(gpumem_driver_copy_t *copy)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(copy->gpu);
    CUevent event          = copy->priv;
    ucs_status_t status;
    CUresult res;

    /* An event is asked without its context, as UCX's own transports poll
     * theirs: every poll of a copy in flight would push and pop it */
    res = gpumem_cuda_api.cuEventQuery(event);
    if (res == CUDA_ERROR_INVALID_CONTEXT) {
        if (gpumem_cuda_ctx_push(gpu, "poll a copy") != UCS_OK) {
            return UCS_ERR_IO_ERROR;
        }
        res = gpumem_cuda_api.cuEventQuery(event);
        gpumem_cuda_ctx_pop(gpu);
    }

    if (res == CUDA_ERROR_NOT_READY) {
        return UCS_INPROGRESS;
    }

    if (res == CUDA_SUCCESS) {
        gpumem_cuda_event_put(gpu, event);
        status = UCS_OK;
    } else {
        /* An event of a failed copy is not reused */
        status = gpumem_cuda_log_result(UCS_LOG_LEVEL_ERROR, res,
                                        "cuEventQuery", "GPU %u: copy",
                                        gpu->index);
        gpumem_cuda_api.cuEventDestroy(event);
    }
    copy->priv = NULL;
    return status;
}

/* As UCX's cuda_copy does its short copies: the stream synchronized, no
 * event to record and query */
ucs_status_t gpumem_cuda_copy_sync(gpumem_driver_gpu_t *handle, uint64_t dst,
                                   int UCS_V_UNUSED dst_dev, uint64_t src,
                                   int UCS_V_UNUSED src_dev, size_t size)
{
    gpumem_cuda_gpu_t *gpu = gpumem_cuda_gpu(handle);
    ucs_status_t status;

    status = gpumem_cuda_copy_queue(gpu, dst, src, size);
    if (status != UCS_OK) {
        return status;
    }

    GPUMEM_CUDA_CALL(&status, cuStreamSynchronize, (gpu->stream),
                     "GPU %u: copy %zu bytes 0x%"PRIx64" -> 0x%"PRIx64,
                     gpu->index, size, src, dst);
    gpumem_cuda_ctx_pop(gpu);
    return status;
}
