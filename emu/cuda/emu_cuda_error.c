/**
 * gpumem emulated CUDA: the names and descriptions of results.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/sys/compiler_def.h>


/* The results the library gives, and the common others, as NVIDIA's
 * driver describes them */
#define GPUMEM_EMU_CUDA_ERRORS(_e) \
    _e(CUDA_SUCCESS, "no error") \
    _e(CUDA_ERROR_INVALID_VALUE, "invalid argument") \
    _e(CUDA_ERROR_OUT_OF_MEMORY, "out of memory") \
    _e(CUDA_ERROR_NOT_INITIALIZED, "initialization error") \
    _e(CUDA_ERROR_DEINITIALIZED, "driver shutting down") \
    _e(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected") \
    _e(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal") \
    _e(CUDA_ERROR_INVALID_CONTEXT, "invalid device context") \
    _e(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current") \
    _e(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed") \
    _e(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped") \
    _e(CUDA_ERROR_NOT_MAPPED, "resource not mapped") \
    _e(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, \
       "peer access is not supported between these two devices") \
    _e(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle") \
    _e(CUDA_ERROR_NOT_FOUND, "named symbol not found") \
    _e(CUDA_ERROR_NOT_READY, "device not ready") \
    _e(CUDA_ERROR_ILLEGAL_ADDRESS, \
       "an illegal memory access was encountered") \
    _e(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, \
       "part or all of the requested memory range is already mapped") \
    _e(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, \
       "pointer does not correspond to a registered memory region") \
    _e(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not " \
       "supported on this OS") \
    _e(CUDA_ERROR_NOT_PERMITTED, "operation not permitted") \
    _e(CUDA_ERROR_NOT_SUPPORTED, "operation not supported") \
    _e(CUDA_ERROR_UNKNOWN, "unknown error")


static const char *gpumem_emu_cuda_error(CUresult error, int name)
{
#define GPUMEM_EMU_CUDA_ERROR_CASE(_code, _string) \
    case _code: \
        return name ? #_code : _string;

    switch (error) {
    GPUMEM_EMU_CUDA_ERRORS(GPUMEM_EMU_CUDA_ERROR_CASE)
    default:
        return NULL;
    }
#undef GPUMEM_EMU_CUDA_ERROR_CASE
}

/* Both answer before cuInit, as NVIDIA's do */
CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    if (pStr == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = gpumem_emu_cuda_error(error, 1);
    return (*pStr != NULL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    if (pStr == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = gpumem_emu_cuda_error(error, 0);
    return (*pStr != NULL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
