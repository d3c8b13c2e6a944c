/**
 * gpumem utilities: whether the CPU may read a range of this process's
 * memory, asked of the kernel rather than found by a fault.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_readable.h"
#include "gpumem_compat_ucs.h"

#include <ucs/sys/sys.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>


/* Pages asked about in one system call: the answers are on the stack */
#define GPUMEM_READABLE_PAGES 256


/* Whether every page of @a size bytes at @a addr is mapped in this process
 * (mincore(2) says ENOMEM where one is not), readable or not */
static int gpumem_proc_mapped(uintptr_t addr, size_t size)
{
    unsigned char residency[GPUMEM_READABLE_PAGES];
    size_t page_size = ucs_get_page_size();
    uintptr_t start  = ucs_align_down(addr, page_size);
    uintptr_t end    = ucs_align_up(addr + size, page_size);
    size_t chunk;

    for (; start < end; start += chunk) {
        chunk = ucs_min(end - start, GPUMEM_READABLE_PAGES * page_size);
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
static int gpumem_proc_readable_range(uintptr_t addr, size_t size)
{
    struct iovec remote[GPUMEM_READABLE_PAGES];
    char bytes[GPUMEM_READABLE_PAGES];
    size_t page_size = ucs_get_page_size();
    uintptr_t end    = addr + size;
    struct iovec local;
    unsigned count;
    ssize_t length;

    while (addr < end) {
        for (count = 0; (addr < end) && (count < GPUMEM_READABLE_PAGES);
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
            return gpumem_proc_mapped(
                    (uintptr_t)remote[0].iov_base,
                    end - (uintptr_t)remote[0].iov_base);
        } else if (length != count) {
            return 0;
        }
    }
    return 1;
}

int gpumem_proc_readable(uintptr_t addr, size_t size)
{
    if (size > UINTPTR_MAX - addr) {
        return 0;
    }
    return gpumem_proc_readable_range(addr, size);
}
