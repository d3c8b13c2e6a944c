/**
 * UCX's own CUDA tests against the CUDA 13 headers: what they call under
 * the names of the CUDA they were written for (contrib/ucx-gtest.sh
 * --cuda includes this before each file).
 *
 * CUDA 13's cuda.h names cuCtxCreate_v4 (with creation parameters)
 * cuCtxCreate; the tests of UCX 1.13 to 1.20 call cuCtxCreate(&ctx, flags,
 * dev), which is cuCtxCreate_v2, still in every libcuda.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_UCX_GTEST_CUDA_COMPAT_H_
#define GPUMEM_UCX_GTEST_CUDA_COMPAT_H_

#include <cuda.h>

#if CUDA_VERSION >= 13000
#  undef cuCtxCreate
#  define cuCtxCreate cuCtxCreate_v2
extern "C" CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx,
                                           unsigned int flags, CUdevice dev);
#endif

#endif
