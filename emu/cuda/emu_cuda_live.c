/**
 * gpumem emulated CUDA: the streams and events that are alive, so that a
 * destroyed, foreign or garbage handle is an error and not a fault.
 *
 * Real CUDA leaves a handle used after its destroy undefined; the emulator
 * can tell, and says so (CUDA_ERROR_INVALID_HANDLE), as the better of
 * NVIDIA's drivers do for a handle destroyed twice.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/datastruct/khash.h>


KHASH_MAP_INIT_INT64(gpumem_emu_cuda_live, int);

/* Under the library's lock */
static khash_t(gpumem_emu_cuda_live) gpumem_emu_cuda_live_handles;


CUresult gpumem_emu_cuda_live_add(const void *handle,
                                  gpumem_emu_cuda_live_kind_t kind)
{
    khiter_t iter;
    int ret;

    iter = kh_put(gpumem_emu_cuda_live, &gpumem_emu_cuda_live_handles,
                  (uintptr_t)handle, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    kh_val(&gpumem_emu_cuda_live_handles, iter) = kind;
    return CUDA_SUCCESS;
}

void gpumem_emu_cuda_live_remove(const void *handle)
{
    khiter_t iter = kh_get(gpumem_emu_cuda_live,
                           &gpumem_emu_cuda_live_handles, (uintptr_t)handle);

    if (iter != kh_end(&gpumem_emu_cuda_live_handles)) {
        kh_del(gpumem_emu_cuda_live, &gpumem_emu_cuda_live_handles, iter);
    }
}

int gpumem_emu_cuda_live_is(const void *handle,
                            gpumem_emu_cuda_live_kind_t kind)
{
    khiter_t iter = kh_get(gpumem_emu_cuda_live,
                           &gpumem_emu_cuda_live_handles, (uintptr_t)handle);

    if ((iter != kh_end(&gpumem_emu_cuda_live_handles)) &&
        (kh_val(&gpumem_emu_cuda_live_handles, iter) == (int)kind)) {
        return 1;
    }
    ucs_debug("gpumem emulated CUDA: %p is no live %s", handle,
              (kind == GPUMEM_EMU_CUDA_LIVE_STREAM) ? "stream" : "event");
    return 0;
}
