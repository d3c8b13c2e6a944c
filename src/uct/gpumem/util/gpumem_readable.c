/**
 * gpumem utilities: whether the CPU may read, or write, a range of this
 * process's memory, asked of the kernel rather than found by a fault.
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

/* Whether the CPU may read every page of @a size bytes at @a addr, and
 * where @a write also write it: a byte of each page is read with
 * process_vm_readv(2), into a buffer of its own, or onto itself where it is
 * to be written, which the kernel does as a write of this process's
 * (EFAULT where the page is read-only). The byte keeps its value, unless
 * another thread writes it meanwhile: a kernel without
 * MADV_POPULATE_WRITE only */
static int gpumem_proc_access_range(uintptr_t addr, size_t size, int write)
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
        length         = write ?
                         process_vm_readv(getpid(), remote, count, remote,
                                          count, 0) :
                         process_vm_readv(getpid(), &local, 1, remote, count,
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

/* Whether this kernel has MADV_POPULATE_WRITE (5.14): asked once, of a
 * page of this process's own (threads that ask at once get one answer) */
static int gpumem_proc_can_populate_write(void)
{
    static int answer = -1;
    size_t page_size  = ucs_get_page_size();
    int value         = __atomic_load_n(&answer, __ATOMIC_RELAXED);
    void *page;

    if (value < 0) {
        page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) {
            return 0; /* Asked again next time */
        }
        value = (madvise(page, page_size, MADV_POPULATE_WRITE) == 0);
        munmap(page, page_size);
        __atomic_store_n(&answer, value, __ATOMIC_RELAXED);
    }
    return value;
}

/* Whether the CPU may write every page of @a size bytes at @a addr,
 * asked without a store: the kernel faults each page in writable as a
 * write would, or refuses (EINVAL for a page that may not be written or is
 * no memory's, ENOMEM where none is mapped, EFAULT where a write would
 * fault) */
static int gpumem_proc_writable_range(uintptr_t addr, size_t size)
{
    size_t page_size = ucs_get_page_size();
    uintptr_t start  = ucs_align_down(addr, page_size);
    uintptr_t end    = ucs_align_up(addr + size, page_size);

    if (!gpumem_proc_can_populate_write()) {
        return gpumem_proc_access_range(addr, size, 1);
    }
    return (end > start) &&
           (madvise((void*)start, end - start, MADV_POPULATE_WRITE) == 0);
}

static int gpumem_proc_access(uintptr_t addr, size_t size, int write)
{
    if (size > UINTPTR_MAX - addr) {
        return 0;
    }
    return write ? gpumem_proc_writable_range(addr, size) :
                   gpumem_proc_access_range(addr, size, 0);
}

int gpumem_proc_readable(uintptr_t addr, size_t size)
{
    return gpumem_proc_access(addr, size, 0);
}

int gpumem_proc_writable(uintptr_t addr, size_t size)
{
    return gpumem_proc_access(addr, size, 1);
}
