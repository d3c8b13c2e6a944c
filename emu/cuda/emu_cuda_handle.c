/**
 * gpumem emulated CUDA: a memory handle of the emu driver as a file, which
 * another process of the machine takes by its pid and fd number.
 *
 * The file holds the GPU's PCI address and the emu's export of the memory;
 * it is the one object both of CUDA's handles (a VMM file descriptor, a
 * legacy IPC handle) name.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <uct/gpumem/util/gpumem_proc.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uct/gpumem/util/gpumem_pidfd.h>


#define GPUMEM_EMU_CUDA_HANDLE_MAGIC 0x63756d65u /* "emuc" */


typedef struct gpumem_emu_cuda_handle {
    uint32_t          magic;
    uint32_t          length;      /* Of the emu's export */
    gpumem_pci_addr_t gpu;         /* Whose VRAM */
    uint8_t           export[GPUMEM_DRIVER_EXPORT_MAX];
} gpumem_emu_cuda_handle_t;


CUresult gpumem_emu_cuda_handle_file(gpumem_driver_mem_t *mem, int *fd_p)
{
    const gpumem_driver_ops_t *ops = gpumem_emu_cuda.emu->ops;
    gpumem_emu_cuda_handle_t handle;
    ucs_status_t status;
    size_t length;
    int fd;

    memset(&handle, 0, sizeof(handle));
    status = ops->mem_export(mem, handle.export, &length);
    if (status != UCS_OK) {
        return gpumem_emu_cuda_result(status);
    }
    handle.magic  = GPUMEM_EMU_CUDA_HANDLE_MAGIC;
    handle.length = length;
    handle.gpu    = ops->reach(mem->gpu)->addr;

    fd = memfd_create("gpumem-emu-cuda-handle", MFD_CLOEXEC);
    if (fd < 0) {
        ucs_error("gpumem emulated CUDA: memfd_create: %m");
        return CUDA_ERROR_OPERATING_SYSTEM;
    }
    if (pwrite(fd, &handle, sizeof(handle), 0) != sizeof(handle)) {
        ucs_error("gpumem emulated CUDA: cannot write a memory handle: %m");
        close(fd);
        return CUDA_ERROR_OPERATING_SYSTEM;
    }

    *fd_p = fd;
    return CUDA_SUCCESS;
}

CUresult gpumem_emu_cuda_handle_open(int fd, gpumem_driver_mem_t **mem_p)
{
    gpumem_emu_cuda_handle_t handle;
    ucs_status_t status;
    int device;

    if ((pread(fd, &handle, sizeof(handle), 0) != sizeof(handle)) ||
        (handle.magic != GPUMEM_EMU_CUDA_HANDLE_MAGIC) ||
        (handle.length > sizeof(handle.export))) {
        return CUDA_ERROR_INVALID_VALUE;
    }

    device = gpumem_emu_cuda_device_of(&handle.gpu);
    if (device < 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }

    status = gpumem_emu_cuda.emu->ops->mem_import(gpumem_emu_cuda_gpu(device),
                                                  handle.export,
                                                  handle.length, mem_p);
    return gpumem_emu_cuda_result(status);
}

CUresult gpumem_emu_cuda_fd_take(int pid, int fd, int *fd_p)
{
    int pidfd, local;

    /* pidfd_open(2) takes a pid of this process's PID namespace, and @a pid
     * is /proc's (gpumem_proc.h) */
    if (!gpumem_proc_ns_is_procs()) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pidfd = syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        return (errno == ESRCH) ? CUDA_ERROR_INVALID_VALUE :
                                  CUDA_ERROR_OPERATING_SYSTEM;
    }

    local = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    close(pidfd);
    if (local < 0) {
        ucs_error("gpumem emulated CUDA: memory handle of process %d: "
                  "pidfd_getfd of its fd %d: %m", pid, fd);
        return CUDA_ERROR_OPERATING_SYSTEM;
    }

    *fd_p = local;
    return CUDA_SUCCESS;
}
