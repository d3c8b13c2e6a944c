/**
 * gpumem application calls: where the bytes of a copy or a set are, checked
 * before any is moved.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_API_RANGE_H_
#define GPUMEM_API_RANGE_H_

#include <uct/gpumem/gpumem_context.h>

BEGIN_C_DECLS

/**
 * Where the @a size bytes at @a ptr are, which call @a call takes as its
 * @a role ("dst", "src", "ptr"), to be written where @a write: set @a gpu_p
 * to the GPU of the allocation that holds every one of them, or to -1 for
 * host memory whose every page this process may read (and write, where
 * @a write). A range that runs past its allocation, an address of a GPU's
 * space that no allocation holds, or host pages that cannot be read (or
 * written) are UCS_ERR_INVALID_PARAM, logged naming the call and the range:
 * nothing is moved, nothing faults.
 */
ucs_status_t gpumem_api_range_check(uct_gpumem_context_t *context,
                                    const void *ptr, size_t size,
                                    const char *call, const char *role,
                                    int write, int *gpu_p);

END_C_DECLS

#endif
