/**
 * gpumem emulated CUDA runtime: libcudart over the CUDA driver API.
 *
 * NVIDIA's runtime reaches the driver through tables of its own that no
 * emulation can give, so a program built against the toolkit's runtime
 * (UCX's cuda transports and their tests) takes this library instead, by
 * the same soname, beside the emulated libcuda.so.1. Each runtime call is
 * made of the driver API's public calls, as the runtime's documentation
 * describes it: the current device of each thread, its primary context
 * made current on first use, the same streams and events, the driver's
 * errors under the runtime's codes.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_CUDART_H_
#define GPUMEM_EMU_CUDART_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

/* The runtime's code for a driver result, kept as the thread's last error
 * where it is one */
cudaError_t gpumem_emu_cudart_error(CUresult res);

/* The current device's primary context made current where the thread has
 * no context: what every call that works on a device does first */
cudaError_t gpumem_emu_cudart_enter(void);


/* A runtime call that works on a device begins with its context: returns
 * from the calling function where there is none */
#define GPUMEM_EMU_CUDART_ENTER() \
    do { \
        cudaError_t _err = gpumem_emu_cudart_enter(); \
        if (_err != cudaSuccess) { \
            return _err; \
        } \
    } while (0)

/* A driver call @a _call in the current device's context, as the runtime's
 * code */
#define GPUMEM_EMU_CUDART_CALL(_call) \
    ({ \
        cudaError_t _err = gpumem_emu_cudart_enter(); \
        (_err != cudaSuccess) ? _err : gpumem_emu_cudart_error(_call); \
    })

#endif
