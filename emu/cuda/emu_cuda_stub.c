/**
 * gpumem emulated CUDA: the entry points the library does not emulate.
 *
 * Each is exported, so that a program or a library that links or looks
 * one up finds it: it returns CUDA_ERROR_NOT_SUPPORTED, whatever its
 * arguments, and logs its name once.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda_stub.h"

#include "emu_cuda.h"
#include "emu_cuda_hook.h"

#include <ucs/debug/log.h>


void gpumem_emu_cuda_not_supported(const char *name, int *logged)
{
    if (!__atomic_exchange_n(logged, 1, __ATOMIC_RELAXED)) {
        ucs_warn("gpumem emulated CUDA: %s is not emulated: it returns "
                 "CUDA_ERROR_NOT_SUPPORTED", name);
    }
}

/* Under the symbol's name (emu_cuda_stub.h), which UCM may patch as it
 * patches the allocation calls of NVIDIA's library, many of which are
 * stubs here */
#define GPUMEM_EMU_CUDA_STUB_DEFINE(_symbol) \
    GPUMEM_EMU_CUDA_HOOK_IMPL CUresult gpumem_emu_cuda_stub_impl_##_symbol(void) \
    { \
        static int logged; \
        gpumem_emu_cuda_not_supported(#_symbol, &logged); \
        return CUDA_ERROR_NOT_SUPPORTED; \
    } \
    GPUMEM_EMU_CUDA_HOOKABLE(_symbol, gpumem_emu_cuda_stub_impl_##_symbol)

GPUMEM_EMU_CUDA_STUBS(GPUMEM_EMU_CUDA_STUB_DEFINE)
