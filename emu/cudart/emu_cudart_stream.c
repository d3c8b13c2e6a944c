/**
 * gpumem emulated CUDA runtime: streams and events, which are the
 * driver's.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cudart.h"


/* The runtime's stream and event flags are the driver's */
cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *stream,
                                                unsigned flags)
{
    return GPUMEM_EMU_CUDART_CALL(cuStreamCreate(stream, flags));
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream)
{
    return GPUMEM_EMU_CUDART_CALL(cuStreamDestroy(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
    return GPUMEM_EMU_CUDART_CALL(cuStreamSynchronize(stream));
}

cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream)
{
    return GPUMEM_EMU_CUDART_CALL(cuStreamQuery(stream));
}

cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream,
                                          cudaEvent_t event, unsigned flags)
{
    return GPUMEM_EMU_CUDART_CALL(cuStreamWaitEvent(stream, event, flags));
}

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event,
                                               unsigned flags)
{
    return GPUMEM_EMU_CUDART_CALL(cuEventCreate(event, flags));
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event)
{
    return GPUMEM_EMU_CUDART_CALL(cuEventDestroy(event));
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return GPUMEM_EMU_CUDART_CALL(cuEventRecord(event, stream));
}

cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event)
{
    return GPUMEM_EMU_CUDART_CALL(cuEventQuery(event));
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event)
{
    return GPUMEM_EMU_CUDART_CALL(cuEventSynchronize(event));
}
