/**
 * gpumem utilities: whether the CPU may read, or write, a range of this
 * process's memory, asked of the kernel rather than found by a fault.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_READABLE_H_
#define GPUMEM_READABLE_H_

#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/**
 * Whether the CPU may read every byte of the @a size bytes at @a addr: a
 * byte of each page is read with process_vm_readv(2), which answers EFAULT
 * where a read would fault (an unmapped page, addresses reserved for a GPU
 * and mapped with no access); where a seccomp profile denies that call,
 * whether every page is mapped (mincore(2)). One system call a megabyte.
 */
int gpumem_proc_readable(uintptr_t addr, size_t size);


/**
 * Whether the CPU may also write every byte of the @a size bytes at @a addr,
 * which are about to be copied over: asked without a store, with
 * madvise(MADV_POPULATE_WRITE), which faults each page in as a write would
 * (a page that may only be read, or is not mapped, is refused). On a kernel
 * older than 5.14, a byte of each page is read onto itself with
 * process_vm_readv(2), and where that call is denied too, whether every
 * page is mapped.
 */
int gpumem_proc_writable(uintptr_t addr, size_t size);

END_C_DECLS

#endif
