/**
 * gpumem cuda driver: CUresult to ucs_status_t, with the driver's own
 * names in the log.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_api.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <stdarg.h>
#include <stdio.h>


ucs_status_t gpumem_cuda_status(CUresult result)
{
    switch (result) {
    case CUDA_SUCCESS:
        return UCS_OK;
    case CUDA_ERROR_NOT_READY:
        /* An event or stream whose work is still running */
        return UCS_INPROGRESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_TOO_MANY_PEERS:
        /* No room now: freeing memory or mappings makes room */
        return UCS_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
        return UCS_ERR_INVALID_PARAM;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_STUB_LIBRARY:
        return UCS_ERR_NO_DEVICE;
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_OPERATING_SYSTEM:
        return UCS_ERR_UNSUPPORTED;
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
        return UCS_ERR_UNREACHABLE;
    case CUDA_ERROR_ALREADY_MAPPED:
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
        return UCS_ERR_ALREADY_EXISTS;
    case CUDA_ERROR_NOT_MAPPED:
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
    case CUDA_ERROR_NOT_FOUND:
        return UCS_ERR_NO_ELEM;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
        return UCS_ERR_INVALID_ADDR;
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_TIMEOUT:
        return UCS_ERR_TIMED_OUT;
    case CUDA_ERROR_SYSTEM_NOT_READY:
        /* The fabric manager has not yet set the machine up */
        return UCS_ERR_BUSY;
    default:
        /* Faults of the device (ECC, illegal instructions, a lost GPU) and
         * codes newer than cuda.h: nothing the caller can fix by asking
         * again differently */
        return UCS_ERR_IO_ERROR;
    }
}

ucs_status_t gpumem_cuda_log_result(ucs_log_level_t level, CUresult result,
                                    const char *call, const char *fmt, ...)
{
    ucs_status_t status = gpumem_cuda_status(result);
    char what[256];
    char name[32];
    va_list ap;

    if (ucs_log_is_enabled(level)) {
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        ucs_log(level, "gpumem_cuda: %s: %s failed: %s: %s (%s)", what, call,
                gpumem_cuda_error_name(result, name, sizeof(name)),
                gpumem_cuda_error_string(result),
                ucs_status_string(status));
    }
    return status;
}
