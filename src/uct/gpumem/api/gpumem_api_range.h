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
 * @a role ("dst", "src", "ptr"): set @a gpu_p to the GPU of the allocation
 * that holds every one of them, or to -1 for host memory whose every page
 * this process may read. A range that runs past its allocation, an address of
 * a GPU's space that no allocation holds, or host pages that cannot be read
 * are UCS_ERR_INVALID_PARAM, logged naming the call and the range: nothing
 * is moved, nothing faults. Whether host pages may be written is not
 * asked: the process's maps, which tell, change under other threads while
 * they are read, and a page that may only be read stays the caller's bug.
 */
ucs_status_t gpumem_api_range_check(uct_gpumem_context_t *context,
                                    const void *ptr, size_t size,
                                    const char *call, const char *role,
                                    int *gpu_p);

END_C_DECLS

#endif
