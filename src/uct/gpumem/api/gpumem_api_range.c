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

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>


/* Pages asked about in one system call: the answers are on the stack */
#define GPUMEM_API_RANGE_PAGES 256


/* Whether every page of @a size bytes at @a addr is mapped in this process
 * (mincore(2) says ENOMEM where one is not), readable or not */
static int gpumem_api_range_host_mapped(uintptr_t addr, size_t size)
{
    unsigned char residency[GPUMEM_API_RANGE_PAGES];
    size_t page_size = ucs_get_page_size();
    uintptr_t start  = ucs_align_down(addr, page_size);
    uintptr_t end    = ucs_align_up(addr + size, page_size);
    size_t chunk;

    for (; start < end; start += chunk) {
        chunk = ucs_min(end - start, GPUMEM_API_RANGE_PAGES * page_size);
        if (mincore((void*)start, chunk, residency) != 0) {
            return 0;
        }
    }
    return 1;
}

/* Whether the CPU may read every page of @a size bytes at @a addr: a byte
 * of each is read with process_vm_readv(2), which says EFAULT where the
 * copy itself would fault (an address range reserved for a GPU is mapped,
 * but not readable). Where a seccomp profile denies the call, whether
 * every page is mapped. */
static int gpumem_api_range_host_readable(uintptr_t addr, size_t size)
{
    struct iovec remote[GPUMEM_API_RANGE_PAGES];
    char bytes[GPUMEM_API_RANGE_PAGES];
    size_t page_size = ucs_get_page_size();
    uintptr_t end    = addr + size;
    struct iovec local;
    unsigned count;
    ssize_t length;

    while (addr < end) {
        for (count = 0; (addr < end) && (count < GPUMEM_API_RANGE_PAGES);
             ++count) {
            remote[count].iov_base = (void*)addr;
            remote[count].iov_len  = 1;
            addr                   = ucs_align_down(addr, page_size) +
                                     page_size;
        }

        local.iov_base = bytes;
        local.iov_len  = count;
        length         = process_vm_readv(getpid(), &local, 1, remote, count,
                                          0);
        if ((length < 0) && (errno != EFAULT)) {
            return gpumem_api_range_host_mapped(
                    (uintptr_t)remote[0].iov_base,
                    end - (uintptr_t)remote[0].iov_base);
        } else if (length != count) {
            return 0;
        }
    }
    return 1;
}

ucs_status_t gpumem_api_range_check(uct_gpumem_context_t *context,
                                    const void *ptr, size_t size,
                                    const char *call, const char *role,
                                    int *gpu_p)
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
        if (!gpumem_api_range_host_readable(addr, size)) {
            ucs_error("gpumem: %s: %s %p..+%zu is neither a GPU's memory "
                      "nor memory this process may read", call, role, ptr, size);
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
