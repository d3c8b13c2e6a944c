/**
 * gpumem application calls: the ranges of copies and sets, against the
 * allocations of the GPUs and the pages of the process.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_api_range.h"

#include <uct/gpumem/util/gpumem_readable.h>

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <inttypes.h>
#include <stdint.h>


ucs_status_t gpumem_api_range_check(uct_gpumem_context_t *context,
                                    const void *ptr, size_t size,
                                    const char *call, const char *role,
                                    int write, int *gpu_p)
{
    uintptr_t addr = (uintptr_t)ptr;
    uint64_t base;
    size_t alloc_size;
    int gpu;

    if (size > UINTPTR_MAX - addr) {
        ucs_error("gpumem: %s: %s %p and %zu bytes run past the end of the "
                  "address space", call, role, ptr, size);
        return UCS_ERR_INVALID_PARAM;
    }

    gpu = uct_gpumem_context_find_gpu(context, ptr);
    if (gpu < 0) {
        if (write ? !gpumem_proc_writable(addr, size) :
                    !gpumem_proc_readable(addr, size)) {
            ucs_error("gpumem: %s: %s %p..+%zu is neither a GPU's memory "
                      "nor memory this process may %s", call, role, ptr, size,
                      write ? "write" : "read");
            return UCS_ERR_INVALID_PARAM;
        }
        *gpu_p = -1;
        return UCS_OK;
    }

    if (gpumem_find_range(context->gpus[gpu], addr, &base, &alloc_size) !=
        UCS_OK) {
        ucs_error("gpumem: %s: %s %p is in GPU %d's addresses, where no "
                  "allocation is", call, role, ptr, gpu);
        return UCS_ERR_INVALID_PARAM;
    }
    if (size > (base + alloc_size - addr)) {
        ucs_error("gpumem: %s: %s %p..+%zu runs past the end of its "
                  "allocation of %zu bytes at 0x%"PRIx64" on GPU %d", call,
                  role, ptr, size, alloc_size, base, gpu);
        return UCS_ERR_INVALID_PARAM;
    }

    *gpu_p = gpu;
    return UCS_OK;
}
