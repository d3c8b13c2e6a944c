/**
 * gpumem emulated CUDA: cuGetProcAddress, the entry points by name.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"
#include "emu_cuda_stub.h"

#include <string.h>


/* Each entry point by its base name (cuda.h's macro expands the function
 * to the newest version of its ABI, which the library has) */
#define GPUMEM_EMU_CUDA_ENTRIES(_e) \
    _e(cuInit) _e(cuDriverGetVersion) _e(cuGetErrorName) \
    _e(cuGetErrorString) _e(cuDeviceGetCount) _e(cuDeviceGet) \
    _e(cuDeviceGetName) _e(cuDeviceGetPCIBusId) _e(cuDeviceGetAttribute) \
    _e(cuDeviceTotalMem) _e(cuDeviceGetUuid) _e(cuDeviceCanAccessPeer) \
    _e(cuDevicePrimaryCtxRetain) _e(cuDevicePrimaryCtxRelease) \
    _e(cuDevicePrimaryCtxGetState) _e(cuCtxPushCurrent) \
    _e(cuCtxPopCurrent) _e(cuCtxGetCurrent) _e(cuCtxSetCurrent) \
    _e(cuCtxGetDevice) _e(cuCtxGetApiVersion) _e(cuCtxGetId) _e(cuCtxGetFlags) _e(cuCtxSetFlags) \
    _e(cuCtxSynchronize) _e(cuCtxCreate) _e(cuCtxDestroy) _e(cuStreamCreate) \
    _e(cuStreamDestroy) _e(cuStreamSynchronize) _e(cuStreamQuery) \
    _e(cuStreamWaitEvent) _e(cuLaunchHostFunc) _e(cuStreamAddCallback) \
    _e(cuEventCreate) _e(cuEventDestroy) \
    _e(cuEventRecord) _e(cuEventQuery) _e(cuEventSynchronize) \
    _e(cuMemcpy) _e(cuMemcpyAsync) _e(cuMemcpyHtoD) _e(cuMemcpyDtoH) \
    _e(cuMemcpyDtoD) _e(cuMemsetD8) _e(cuMemcpyDtoDAsync) _e(cuMemcpyHtoDAsync) _e(cuMemcpyDtoHAsync) \
    _e(cuMemAlloc) _e(cuMemAllocPitch) _e(cuMemAllocManaged) _e(cuMemFree) \
    _e(cuMemAllocAsync) _e(cuMemFreeAsync) \
    _e(cuMemGetAddressRange) \
    _e(cuMemGetInfo) _e(cuPointerGetAttribute) _e(cuPointerGetAttributes) _e(cuPointerSetAttribute) \
    _e(cuMemHostAlloc) _e(cuMemAllocHost) _e(cuMemFreeHost) \
    _e(cuMemHostRegister) _e(cuMemHostUnregister) \
    _e(cuMemHostGetDevicePointer) _e(cuIpcGetMemHandle) \
    _e(cuIpcOpenMemHandle) _e(cuIpcCloseMemHandle) \
    _e(cuMemGetAllocationGranularity) _e(cuMemCreate) _e(cuMemRelease) \
    _e(cuMemAddressReserve) _e(cuMemAddressFree) _e(cuMemMap) \
    _e(cuMemUnmap) _e(cuMemSetAccess) _e(cuMemRetainAllocationHandle) \
    _e(cuMemGetAllocationPropertiesFromHandle) _e(cuMemRangeGetAttribute) _e(cuMemExportToShareableHandle) \
    _e(cuMemImportFromShareableHandle) _e(cuMemGetHandleForAddressRange) \
    _e(cuGetProcAddress)


typedef struct gpumem_emu_cuda_entry {
    const char *name;
    void       *fn;
} gpumem_emu_cuda_entry_t;


#define GPUMEM_EMU_CUDA_ENTRY(_name)  {#_name, (void*)_name},
#define GPUMEM_EMU_CUDA_STUB_ENTRY(_symbol) \
    {#_symbol, (void*)gpumem_emu_cuda_stub_##_symbol},

static const gpumem_emu_cuda_entry_t gpumem_emu_cuda_entries[] = {
    GPUMEM_EMU_CUDA_ENTRIES(GPUMEM_EMU_CUDA_ENTRY)
    GPUMEM_EMU_CUDA_STUBS(GPUMEM_EMU_CUDA_STUB_ENTRY)
    {NULL, NULL}
};


/* The length of @a name without a version suffix ("_v2") */
static size_t gpumem_emu_cuda_base_length(const char *name)
{
    const char *suffix = strrchr(name, '_');

    if ((suffix != NULL) && (suffix[1] == 'v') && (suffix[2] >= '0') &&
        (suffix[2] <= '9')) {
        return suffix - name;
    }
    return strlen(name);
}

/* By the name asked or, as the driver's table is of base names, by the
 * base of a versioned one ("cuMemAlloc_v2" finds cuMemAlloc) */
static void *gpumem_emu_cuda_lookup(const char *symbol)
{
    const gpumem_emu_cuda_entry_t *entry;
    size_t length;

    for (entry = gpumem_emu_cuda_entries; entry->name != NULL; ++entry) {
        if (!strcmp(entry->name, symbol)) {
            return entry->fn;
        }
    }

    length = gpumem_emu_cuda_base_length(symbol);
    for (entry = gpumem_emu_cuda_entries; entry->name != NULL; ++entry) {
        if ((gpumem_emu_cuda_base_length(entry->name) == length) &&
            !strncmp(entry->name, symbol, length)) {
            return entry->fn;
        }
    }
    return NULL;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
                                  int cudaVersion, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *symbolStatus)
{
    void *fn;

    if ((symbol == NULL) || (pfn == NULL) || (cudaVersion <= 0) ||
        (flags & ~(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))) {
        return CUDA_ERROR_INVALID_VALUE;
    }

    fn = gpumem_emu_cuda_lookup(symbol);
    if (fn == NULL) {
        *pfn = NULL;
        if (symbolStatus != NULL) {
            *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        }
        return CUDA_ERROR_NOT_FOUND;
    }

    *pfn = fn;
    if (symbolStatus != NULL) {
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    }
    return CUDA_SUCCESS;
}

/* The first version of the call, of CUDA 11.3, without the status */
CUresult gpumem_emu_cuda_get_proc_address_v1(const char *symbol, void **pfn,
                                             int cudaVersion,
                                             cuuint64_t flags)
    __asm__("cuGetProcAddress");
CUresult gpumem_emu_cuda_get_proc_address_v1(const char *symbol, void **pfn,
                                             int cudaVersion,
                                             cuuint64_t flags)
{
    return cuGetProcAddress(symbol, pfn, cudaVersion, flags, NULL);
}
