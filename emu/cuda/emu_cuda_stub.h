/**
 * gpumem emulated CUDA: the list of the entry points it does not emulate.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_CUDA_STUB_H_
#define GPUMEM_EMU_CUDA_STUB_H_

#include <cuda.h>
#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/* By the symbol the library exports, as cuda.h names its versions */
#define GPUMEM_EMU_CUDA_STUBS(_fn) \
    _fn(cuCtxEnablePeerAccess) \
    _fn(cuCtxDisablePeerAccess) \
    _fn(cuDeviceGetByPCIBusId) \
    _fn(cuDeviceGetP2PAttribute) \
    _fn(cuDevicePrimaryCtxReset_v2) \
    _fn(cuDevicePrimaryCtxSetFlags_v2) \
    _fn(cuEventElapsedTime_v2) \
    _fn(cuFlushGPUDirectRDMAWrites) \
    _fn(cuIpcGetEventHandle) \
    _fn(cuIpcOpenEventHandle) \
    _fn(cuLaunchKernel) \
    _fn(cuMemAllocFromPoolAsync) \
    _fn(cuMemPoolCreate) \
    _fn(cuMemPoolDestroy) \
    _fn(cuMemPoolExportPointer) \
    _fn(cuMemPoolExportToShareableHandle) \
    _fn(cuMemPoolImportFromShareableHandle) \
    _fn(cuMemPoolImportPointer) \
    _fn(cuMemPoolSetAccess) \
    _fn(cuMemPrefetchAsync_v2) \
    _fn(cuMemcpy2D_v2) \
    _fn(cuMemcpyPeer) \
    _fn(cuMemcpyPeerAsync) \
    _fn(cuMemsetD32_v2) \
    _fn(cuMemsetD8Async) \
    _fn(cuModuleGetFunction) \
    _fn(cuModuleLoad) \
    _fn(cuModuleLoadData) \
    _fn(cuStreamGetCtx)


/* The exported symbol, an opening that UCM can patch (emu_cuda_hook.h) */
#define GPUMEM_EMU_CUDA_STUB_DECLARE(_symbol) \
    CUresult gpumem_emu_cuda_stub_##_symbol(void) __asm__(#_symbol);

GPUMEM_EMU_CUDA_STUBS(GPUMEM_EMU_CUDA_STUB_DECLARE)

END_C_DECLS

#endif
