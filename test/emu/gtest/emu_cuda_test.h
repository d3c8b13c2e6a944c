/**
 * gpumem tests: the emulated CUDA's fixture: the build's libcuda.so.1 over
 * the emu driver, its entry points, and a current context.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_CUDA_TEST_H_
#define GPUMEM_EMU_CUDA_TEST_H_

#include <driver/log_test.h>

#include <cuda.h>


/* The entry points the tests call, by the symbol the library exports */
#define EMU_CUDA_TEST_API(_fn) \
    _fn(cuInit, "cuInit") \
    _fn(cuDriverGetVersion, "cuDriverGetVersion") \
    _fn(cuGetErrorName, "cuGetErrorName") \
    _fn(cuDeviceGetCount, "cuDeviceGetCount") \
    _fn(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId") \
    _fn(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer") \
    _fn(cuDeviceGetUuid, "cuDeviceGetUuid_v2") \
    _fn(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
    _fn(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
    _fn(cuCtxPushCurrent, "cuCtxPushCurrent_v2") \
    _fn(cuCtxPopCurrent, "cuCtxPopCurrent_v2") \
    _fn(cuCtxGetCurrent, "cuCtxGetCurrent") \
    _fn(cuCtxGetId, "cuCtxGetId") \
    _fn(cuCtxGetApiVersion, "cuCtxGetApiVersion") \
    _fn(cuCtxGetFlags, "cuCtxGetFlags") \
    _fn(cuCtxSetFlags, "cuCtxSetFlags") \
    _fn(cuCtxCreate, "cuCtxCreate_v4") \
    _fn(cuCtxDestroy, "cuCtxDestroy_v2") \
    _fn(cuStreamCreate, "cuStreamCreate") \
    _fn(cuStreamDestroy, "cuStreamDestroy_v2") \
    _fn(cuStreamQuery, "cuStreamQuery") \
    _fn(cuStreamSynchronize, "cuStreamSynchronize") \
    _fn(cuLaunchHostFunc, "cuLaunchHostFunc") \
    _fn(cuStreamAddCallback, "cuStreamAddCallback") \
    _fn(cuCtxSynchronize, "cuCtxSynchronize") \
    _fn(cuEventCreate, "cuEventCreate") \
    _fn(cuEventDestroy, "cuEventDestroy_v2") \
    _fn(cuEventRecord, "cuEventRecord") \
    _fn(cuEventQuery, "cuEventQuery") \
    _fn(cuEventSynchronize, "cuEventSynchronize") \
    _fn(cuStreamWaitEvent, "cuStreamWaitEvent") \
    _fn(cuMemsetD8, "cuMemsetD8_v2") \
    _fn(cuMemAlloc, "cuMemAlloc_v2") \
    _fn(cuMemAllocManaged, "cuMemAllocManaged") \
    _fn(cuMemAllocPitch, "cuMemAllocPitch_v2") \
    _fn(cuMemAllocAsync, "cuMemAllocAsync") \
    _fn(cuMemFreeAsync, "cuMemFreeAsync") \
    _fn(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity") \
    _fn(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle") \
    _fn(cuMemGetAllocationPropertiesFromHandle, \
        "cuMemGetAllocationPropertiesFromHandle") \
    _fn(cuMemRangeGetAttribute, "cuMemRangeGetAttribute") \
    _fn(cuMemFree, "cuMemFree_v2") \
    _fn(cuMemcpyAsync, "cuMemcpyAsync") \
    _fn(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") \
    _fn(cuMemcpyHtoD, "cuMemcpyHtoD_v2") \
    _fn(cuMemcpyDtoH, "cuMemcpyDtoH_v2") \
    _fn(cuMemGetAddressRange, "cuMemGetAddressRange_v2") \
    _fn(cuPointerGetAttribute, "cuPointerGetAttribute") \
    _fn(cuPointerGetAttributes, "cuPointerGetAttributes") \
    _fn(cuPointerSetAttribute, "cuPointerSetAttribute") \
    _fn(cuMemHostRegister, "cuMemHostRegister_v2") \
    _fn(cuMemHostUnregister, "cuMemHostUnregister") \
    _fn(cuIpcGetMemHandle, "cuIpcGetMemHandle") \
    _fn(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2") \
    _fn(cuIpcCloseMemHandle, "cuIpcCloseMemHandle") \
    _fn(cuMemCreate, "cuMemCreate") \
    _fn(cuMemRelease, "cuMemRelease") \
    _fn(cuMemAddressReserve, "cuMemAddressReserve") \
    _fn(cuMemAddressFree, "cuMemAddressFree") \
    _fn(cuMemMap, "cuMemMap") \
    _fn(cuMemUnmap, "cuMemUnmap") \
    _fn(cuMemSetAccess, "cuMemSetAccess") \
    _fn(cuMemExportToShareableHandle, "cuMemExportToShareableHandle") \
    _fn(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle") \
    _fn(cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange") \
    _fn(cuGetProcAddress, "cuGetProcAddress_v2")


/**
 * Device 0's primary context, current for the test's thread.
 */
class emu_cuda_test : public log_test {
protected:
    emu_cuda_test() : m_ctx(NULL) {}

    virtual void SetUp();
    virtual void TearDown();

    /* The library's symbol @a name */
    static void *symbol(const char *name);

#define EMU_CUDA_TEST_FIELD(_func, _symbol) static decltype(&_func) p_##_func;
    EMU_CUDA_TEST_API(EMU_CUDA_TEST_FIELD)
#undef EMU_CUDA_TEST_FIELD

    CUcontext m_ctx;
};

#endif
