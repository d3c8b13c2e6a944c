/**
 * gpumem emulated CUDA runtime: devices, the current device of a thread,
 * versions and errors.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cudart.h"

#include <pthread.h>
#include <stdlib.h>


/* The thread's device and last error, as the runtime keeps them */
static __thread int gpumem_emu_cudart_device;
static __thread cudaError_t gpumem_emu_cudart_last = cudaSuccess;

static pthread_once_t gpumem_emu_cudart_once = PTHREAD_ONCE_INIT;
static CUresult gpumem_emu_cudart_init_result;


static void gpumem_emu_cudart_init(void)
{
    gpumem_emu_cudart_init_result = cuInit(0);
}

cudaError_t gpumem_emu_cudart_error(CUresult res)
{
    /* The runtime numbers each code the driver returns here as the driver
     * does (CUDA_ERROR_NOT_INITIALIZED is cudaErrorInitializationError,
     * CUDA_ERROR_INVALID_CONTEXT cudaErrorDeviceUninitialized,
     * CUDA_ERROR_INVALID_HANDLE cudaErrorInvalidResourceHandle, and so on
     * for invalid value, out of memory, devices, not ready, not supported) */
    if (res != CUDA_SUCCESS) {
        gpumem_emu_cudart_last = (cudaError_t)res;
    }
    return (cudaError_t)res;
}

/* The primary contexts the runtime holds, each retained by its first call
 * on the device, until cudaDeviceReset() or exit */
static pthread_mutex_t gpumem_emu_cudart_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext *gpumem_emu_cudart_primaries;
static int gpumem_emu_cudart_num_devices;


/* The primary context of @a device, retained if the runtime holds none */
static CUresult gpumem_emu_cudart_primary(int device, CUcontext *ctx_p)
{
    CUresult res = CUDA_SUCCESS;
    CUdevice dev;

    pthread_mutex_lock(&gpumem_emu_cudart_lock);
    if (gpumem_emu_cudart_primaries == NULL) {
        res = cuDeviceGetCount(&gpumem_emu_cudart_num_devices);
        if ((res == CUDA_SUCCESS) && (gpumem_emu_cudart_num_devices > 0)) {
            gpumem_emu_cudart_primaries =
                    calloc(gpumem_emu_cudart_num_devices,
                           sizeof(*gpumem_emu_cudart_primaries));
            res = (gpumem_emu_cudart_primaries == NULL) ?
                  CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
        }
    }
    if (res == CUDA_SUCCESS) {
        if ((device < 0) || (device >= gpumem_emu_cudart_num_devices)) {
            res = CUDA_ERROR_INVALID_DEVICE;
        } else if (gpumem_emu_cudart_primaries[device] == NULL) {
            res = cuDeviceGet(&dev, device);
            if (res == CUDA_SUCCESS) {
                res = cuDevicePrimaryCtxRetain(
                        &gpumem_emu_cudart_primaries[device], dev);
            }
        }
    }
    if (res == CUDA_SUCCESS) {
        *ctx_p = gpumem_emu_cudart_primaries[device];
    }
    pthread_mutex_unlock(&gpumem_emu_cudart_lock);
    return res;
}

cudaError_t gpumem_emu_cudart_enter(void)
{
    CUcontext ctx;
    CUresult res;

    pthread_once(&gpumem_emu_cudart_once, gpumem_emu_cudart_init);
    if (gpumem_emu_cudart_init_result != CUDA_SUCCESS) {
        return gpumem_emu_cudart_error(gpumem_emu_cudart_init_result);
    }

    /* A context the thread made current through the driver API is the
     * one the runtime works in */
    res = cuCtxGetCurrent(&ctx);
    if ((res == CUDA_SUCCESS) && (ctx != NULL)) {
        return cudaSuccess;
    }

    res = gpumem_emu_cudart_primary(gpumem_emu_cudart_device, &ctx);
    if (res == CUDA_SUCCESS) {
        res = cuCtxSetCurrent(ctx);
    }
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
    CUresult res;

    if (count == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    pthread_once(&gpumem_emu_cudart_once, gpumem_emu_cudart_init);
    res = gpumem_emu_cudart_init_result;
    if (res == CUDA_SUCCESS) {
        res = cuDeviceGetCount(count);
    }
    if ((res == CUDA_SUCCESS) && (*count == 0)) {
        res = CUDA_ERROR_NO_DEVICE;
    }
    if (res != CUDA_SUCCESS) {
        *count = 0;
    }
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaSetDevice(int device)
{
    CUcontext ctx;
    CUresult res;

    pthread_once(&gpumem_emu_cudart_once, gpumem_emu_cudart_init);
    res = gpumem_emu_cudart_init_result;
    if (res == CUDA_SUCCESS) {
        res = gpumem_emu_cudart_primary(device, &ctx);
    }
    if (res == CUDA_SUCCESS) {
        res = cuCtxSetCurrent(ctx);
    }
    if (res == CUDA_SUCCESS) {
        gpumem_emu_cudart_device = device;
    }
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaGetDevice(int *device)
{
    CUcontext ctx;
    CUdevice dev;

    if (device == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    if ((cuCtxGetCurrent(&ctx) == CUDA_SUCCESS) && (ctx != NULL) &&
        (cuCtxGetDevice(&dev) == CUDA_SUCCESS)) {
        *device = dev;
    } else {
        *device = gpumem_emu_cudart_device;
    }
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
    return GPUMEM_EMU_CUDART_CALL(cuCtxSynchronize());
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int *value,
                                             enum cudaDeviceAttr attr,
                                             int device)
{
    CUdevice dev;
    CUresult res;

    pthread_once(&gpumem_emu_cudart_once, gpumem_emu_cudart_init);
    res = gpumem_emu_cudart_init_result;
    if (res == CUDA_SUCCESS) {
        res = cuDeviceGet(&dev, device);
    }
    if (res == CUDA_SUCCESS) {
        /* The runtime's attributes are numbered as the driver's */
        res = cuDeviceGetAttribute(value, (CUdevice_attribute)attr, dev);
    }
    return gpumem_emu_cudart_error(res);
}

/* The runtime lets go of the current device's primary context: its next
 * call on the device retains it again. The context, and what was allocated
 * in it, are the driver's to destroy when no one holds it (a program that
 * retained it through the driver API keeps it). */
cudaError_t CUDARTAPI cudaDeviceReset(void)
{
    int device = gpumem_emu_cudart_device;
    CUcontext current;
    CUresult res = CUDA_SUCCESS;
    CUdevice dev;

    pthread_mutex_lock(&gpumem_emu_cudart_lock);
    if ((gpumem_emu_cudart_primaries != NULL) &&
        (device < gpumem_emu_cudart_num_devices) &&
        (gpumem_emu_cudart_primaries[device] != NULL)) {
        if ((cuCtxGetCurrent(&current) == CUDA_SUCCESS) &&
            (current == gpumem_emu_cudart_primaries[device])) {
            cuCtxSetCurrent(NULL);
        }
        res = cuDeviceGet(&dev, device);
        if (res == CUDA_SUCCESS) {
            res = cuDevicePrimaryCtxRelease(dev);
        }
        gpumem_emu_cudart_primaries[device] = NULL;
    }
    pthread_mutex_unlock(&gpumem_emu_cudart_lock);
    return gpumem_emu_cudart_error(res);
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int *version)
{
    if (version == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    return gpumem_emu_cudart_error(cuDriverGetVersion(version));
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *version)
{
    if (version == NULL) {
        return gpumem_emu_cudart_error(CUDA_ERROR_INVALID_VALUE);
    }
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetLastError(void)
{
    cudaError_t err = gpumem_emu_cudart_last;

    gpumem_emu_cudart_last = cudaSuccess;
    return err;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void)
{
    return gpumem_emu_cudart_last;
}

/* The names and descriptions of the codes the library returns */
#define GPUMEM_EMU_CUDART_ERRORS(_e) \
    _e(cudaSuccess, "no error") \
    _e(cudaErrorInvalidValue, "invalid argument") \
    _e(cudaErrorMemoryAllocation, "out of memory") \
    _e(cudaErrorInitializationError, "initialization error") \
    _e(cudaErrorNoDevice, "no CUDA-capable device is detected") \
    _e(cudaErrorInvalidDevice, "invalid device ordinal") \
    _e(cudaErrorDeviceUninitialized, "invalid device context") \
    _e(cudaErrorInvalidResourceHandle, "invalid resource handle") \
    _e(cudaErrorNotReady, "device not ready") \
    _e(cudaErrorIllegalAddress, \
       "an illegal memory access was encountered") \
    _e(cudaErrorHostMemoryAlreadyRegistered, \
       "part or all of the requested memory range is already mapped") \
    _e(cudaErrorHostMemoryNotRegistered, \
       "pointer does not correspond to a registered memory region") \
    _e(cudaErrorPeerAccessUnsupported, \
       "peer access is not supported between these two devices") \
    _e(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed") \
    _e(cudaErrorNotSupported, "operation not supported") \
    _e(cudaErrorUnknown, "unknown error")

#define GPUMEM_EMU_CUDART_ERROR_NAME(_code, _text) \
    case _code: return #_code;
#define GPUMEM_EMU_CUDART_ERROR_TEXT(_code, _text) \
    case _code: return _text;

const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
    switch (error) {
    GPUMEM_EMU_CUDART_ERRORS(GPUMEM_EMU_CUDART_ERROR_NAME)
    default:
        return "cudaErrorUnknown";
    }
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    GPUMEM_EMU_CUDART_ERRORS(GPUMEM_EMU_CUDART_ERROR_TEXT)
    default:
        return "unrecognized error code";
    }
}
