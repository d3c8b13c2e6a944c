/**
 * gpumem emu driver: VRAM as the bus shows it: the CPU's window through the
 * memory BAR, the BAR's bus address, and dma-bufs for another PCI function.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_int.h"

#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>


/* Emulated BARs lie above any real machine's memory, 256 GiB apart by PCI
 * function, so that each GPU's bus addresses are its own */
#define GPUMEM_EMU_BUS_BASE      (1ul << 62)
#define GPUMEM_EMU_BUS_STRIDE_SHIFT 38


static ucs_status_t gpumem_emu_bar_check(gpumem_driver_mem_t *mem,
                                         const char *what)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(mem);
    ucs_status_t status;

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, what);
    pthread_mutex_unlock(&gpu->lock);
    return status;
}

ucs_status_t gpumem_emu_bar_map(gpumem_driver_mem_t *mem, void **addr_p)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(mem);
    ucs_status_t status;
    void *addr;

    status = gpumem_emu_bar_check(mem, "map its BAR");
    if (status != UCS_OK) {
        return status;
    }

    if ((mem->phys > gpu->bar_size) ||
        (mem->size > (gpu->bar_size - mem->phys))) {
        gpumem_emu_gpu_error(gpu, "cannot map VRAM 0x%lx+%zu through its "
                             "BAR: the BAR reaches only %zu bytes",
                             (unsigned long)mem->phys, mem->size,
                             gpu->bar_size);
        return UCS_ERR_INVALID_PARAM;
    }

    addr = mmap(NULL, mem->size, PROT_READ | PROT_WRITE, MAP_SHARED,
                gpu->vram_fd, mem->phys);
    if (addr == MAP_FAILED) {
        gpumem_emu_gpu_error(gpu, "cannot map VRAM 0x%lx+%zu through its "
                             "BAR: %s", (unsigned long)mem->phys, mem->size,
                             strerror(errno));
        return (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
    }

    *addr_p = addr;
    return UCS_OK;
}

void gpumem_emu_bar_unmap(void *addr, size_t size)
{
    munmap(addr, size);
}

uint64_t gpumem_emu_bar_bus_addr(gpumem_driver_gpu_t *handle)
{
    const gpumem_pci_addr_t *pci = &gpumem_emu_gpu(handle)->reach.addr;
    uint64_t function;

    function = ((uint64_t)(pci->domain & 0xff) << 16) |
               ((uint64_t)pci->bus << 8) | ((uint64_t)pci->dev << 3) |
               pci->fn;
    return GPUMEM_EMU_BUS_BASE | (function << GPUMEM_EMU_BUS_STRIDE_SHIFT);
}

ucs_status_t gpumem_emu_dmabuf_export(gpumem_driver_mem_t *mem, int *fd_p,
                                      size_t *offset_p)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(mem);
    struct udmabuf_create create;
    ucs_status_t status;
    int dev_fd, fd;

    status = gpumem_emu_bar_check(mem, "export a dma-buf");
    if (status != UCS_OK) {
        return status;
    }

    dev_fd = open(GPUMEM_EMU_UDMABUF_DEV, O_RDWR | O_CLOEXEC);
    if (dev_fd < 0) {
        /* A capability of the kernel, not an error of the program */
        ucs_diag("gpumem_emu: GPU %s: cannot export a dma-buf of VRAM "
                 "0x%lx+%zu: %s", gpu->name, (unsigned long)mem->phys,
                 mem->size, (errno == ENOENT) ?
                 "no " GPUMEM_EMU_UDMABUF_DEV " on this kernel "
                 "(CONFIG_UDMABUF, modprobe udmabuf)" : strerror(errno));
        return UCS_ERR_UNSUPPORTED;
    }

    memset(&create, 0, sizeof(create));
    create.memfd  = gpu->vram_fd;
    create.flags  = UDMABUF_FLAGS_CLOEXEC;
    create.offset = mem->phys;
    create.size   = mem->size;
    fd            = ioctl(dev_fd, UDMABUF_CREATE, &create);
    if (fd < 0) {
        gpumem_emu_gpu_error(gpu, "cannot export a dma-buf of VRAM 0x%lx+%zu: "
                             "UDMABUF_CREATE: %s (the udmabuf module's "
                             "size_limit_mb bounds a dma-buf)",
                             (unsigned long)mem->phys, mem->size,
                             strerror(errno));
        close(dev_fd);
        return UCS_ERR_IO_ERROR;
    }

    close(dev_fd);
    *fd_p     = fd;
    *offset_p = 0;
    return UCS_OK;
}
