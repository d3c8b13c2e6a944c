/**
 * gpumem cuda driver: the CUDA driver API, opened at run time.
 *
 * The plugin links no CUDA library: libcuda.so.1 is opened on first use and
 * each entry point is looked up by its versioned symbol name, so that the
 * plugin loads and runs (on the emu driver) where no NVIDIA driver is
 * installed. cuda.h gives the types and prototypes only.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_CUDA_API_H_
#define GPUMEM_CUDA_API_H_

#include <cuda.h>
#include <ucs/config/types.h>
#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/* The library the driver API lives in */
#define GPUMEM_CUDA_LIBRARY  "libcuda.so.1"


/*
 * The entry points: _fn(field, symbol, required). The field is the name
 * cuda.h declares (a macro for versioned calls, expanded alike wherever it
 * is used); the symbol is the versioned name the library exports, so that
 * the ABI called is the one cuda.h describes. An entry point that is not
 * required is NULL in a library too old to have it.
 */
#define GPUMEM_CUDA_API_FOREACH(_fn) \
    _fn(cuInit,                        "cuInit",                        1) \
    _fn(cuDriverGetVersion,            "cuDriverGetVersion",            1) \
    _fn(cuGetErrorName,                "cuGetErrorName",                1) \
    _fn(cuGetErrorString,              "cuGetErrorString",              1) \
    _fn(cuDeviceGetCount,              "cuDeviceGetCount",              1) \
    _fn(cuDeviceGet,                   "cuDeviceGet",                   1) \
    _fn(cuDeviceGetName,               "cuDeviceGetName",               1) \
    _fn(cuDeviceGetPCIBusId,           "cuDeviceGetPCIBusId",           1) \
    _fn(cuDeviceGetAttribute,          "cuDeviceGetAttribute",          1) \
    _fn(cuDeviceTotalMem,              "cuDeviceTotalMem_v2",           1) \
    _fn(cuDeviceCanAccessPeer,         "cuDeviceCanAccessPeer",         1) \
    _fn(cuDevicePrimaryCtxRetain,      "cuDevicePrimaryCtxRetain",      1) \
    _fn(cuDevicePrimaryCtxRelease,     "cuDevicePrimaryCtxRelease_v2",  1) \
    _fn(cuCtxPushCurrent,              "cuCtxPushCurrent_v2",           1) \
    _fn(cuCtxPopCurrent,               "cuCtxPopCurrent_v2",            1) \
    _fn(cuCtxGetCurrent,               "cuCtxGetCurrent",               1) \
    _fn(cuStreamCreate,                "cuStreamCreate",                1) \
    _fn(cuStreamDestroy,               "cuStreamDestroy_v2",            1) \
    _fn(cuStreamSynchronize,           "cuStreamSynchronize",           1) \
    _fn(cuEventCreate,                 "cuEventCreate",                 1) \
    _fn(cuEventDestroy,                "cuEventDestroy_v2",             1) \
    _fn(cuEventRecord,                 "cuEventRecord",                 1) \
    _fn(cuEventQuery,                  "cuEventQuery",                  1) \
    _fn(cuMemcpyAsync,                 "cuMemcpyAsync",                 1) \
    _fn(cuMemAlloc,                    "cuMemAlloc_v2",                 1) \
    _fn(cuMemFree,                     "cuMemFree_v2",                  1) \
    _fn(cuMemCreate,                   "cuMemCreate",                   1) \
    _fn(cuMemRelease,                  "cuMemRelease",                  1) \
    _fn(cuMemAddressReserve,           "cuMemAddressReserve",           1) \
    _fn(cuMemAddressFree,              "cuMemAddressFree",              1) \
    _fn(cuMemMap,                      "cuMemMap",                      1) \
    _fn(cuMemUnmap,                    "cuMemUnmap",                    1) \
    _fn(cuMemSetAccess,                "cuMemSetAccess",                1) \
    _fn(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", 1) \
    _fn(cuMemGetInfo,                  "cuMemGetInfo_v2",               1) \
    _fn(cuMemExportToShareableHandle,  "cuMemExportToShareableHandle",  1) \
    _fn(cuMemImportFromShareableHandle,"cuMemImportFromShareableHandle",1) \
    _fn(cuMemHostAlloc,                "cuMemHostAlloc",                1) \
    _fn(cuMemFreeHost,                 "cuMemFreeHost",                 1) \
    _fn(cuMemHostRegister,             "cuMemHostRegister_v2",          1) \
    _fn(cuMemHostUnregister,           "cuMemHostUnregister",           1) \
    _fn(cuMemHostGetDevicePointer,     "cuMemHostGetDevicePointer_v2",  1) \
    _fn(cuMemGetAddressRange,          "cuMemGetAddressRange_v2",       1) \
    _fn(cuPointerGetAttributes,        "cuPointerGetAttributes",        1) \
    _fn(cuIpcGetMemHandle,             "cuIpcGetMemHandle",             1) \
    _fn(cuIpcOpenMemHandle,            "cuIpcOpenMemHandle_v2",         1) \
    _fn(cuIpcCloseMemHandle,           "cuIpcCloseMemHandle",           1) \
    _fn(cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", 0)


#define GPUMEM_CUDA_API_FIELD(_field, _symbol, _required) \
    __typeof__(_field) *_field;

/**
 * The driver API's entry points, filled by gpumem_cuda_api_open().
 */
typedef struct gpumem_cuda_api {
    GPUMEM_CUDA_API_FOREACH(GPUMEM_CUDA_API_FIELD)
    int     driver_version;   /* As cuDriverGetVersion gives it */
} gpumem_cuda_api_t;


/* The process's table; valid after gpumem_cuda_api_open() returned UCS_OK */
extern gpumem_cuda_api_t gpumem_cuda_api;


/**
 * Open libcuda.so.1, look up every entry point and call cuInit, once per
 * process. On failure, @a why_buf says why in one phrase ("no
 * libcuda.so.1: ...", "cuInit: CUDA_ERROR_NO_DEVICE: ..."), and the same
 * failure is returned at every later call; nothing is logged here, the
 * caller decides whether it is an error.
 */
ucs_status_t gpumem_cuda_api_open(char *why_buf, size_t max);


/**
 * The status for a CUresult of the driver API. A pure function of its
 * argument: the library need not be open.
 */
ucs_status_t gpumem_cuda_status(CUresult result);


/**
 * The driver's name and description of @a result ("CUDA_ERROR_OUT_OF_MEMORY",
 * "out of memory"); numeric where the library is not open or does not know
 * the code.
 */
const char *gpumem_cuda_error_name(CUresult result, char *buf, size_t max);
const char *gpumem_cuda_error_string(CUresult result);


/**
 * Log a failed call at @a level with the driver's error name and string,
 * and return its status. @a fmt says what was asked.
 */
ucs_status_t gpumem_cuda_log_result(ucs_log_level_t level, CUresult result,
                                    const char *call, const char *fmt, ...)
    UCS_F_PRINTF(4, 5);


/* Calls @a _call on the table and logs a failure as an error */
#define GPUMEM_CUDA_CALL(_status_p, _func, _args, _fmt, ...) \
    ({ \
        CUresult _res = gpumem_cuda_api._func _args; \
        *(_status_p)  = (_res == CUDA_SUCCESS) ? UCS_OK : \
                        gpumem_cuda_log_result(UCS_LOG_LEVEL_ERROR, _res, \
                                               #_func, _fmt, \
                                               ## __VA_ARGS__); \
        _res; \
    })

END_C_DECLS

#endif
