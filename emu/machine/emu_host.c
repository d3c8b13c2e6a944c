/**
 * gpumem emu driver: host memory the GPUs reach: pins and system memory.
 *
 * pin() locks the pages with mlock(), so the kernel's refusal (beyond
 * RLIMIT_MEMLOCK) is the error a real driver's pinning meets. The kernel
 * does not count locks, so each pin is recorded, and an unpin unlocks only
 * pages that no other pin holds. sys_alloc() gives anonymous memory, not
 * locked: the emulated GPU reaches it through its page tables and no device
 * writes it behind the kernel, so locking it would only spend the process's
 * RLIMIT_MEMLOCK; it counts as pinned for the GPU it was allocated for.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_int.h"

#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <ucs/sys/sys.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <errno.h>
#include <string.h>


static void gpumem_emu_host_pages(uintptr_t addr, size_t size,
                                  uintptr_t *start_p, uintptr_t *end_p)
{
    size_t page_size = ucs_get_page_size();

    *start_p = ucs_align_down_pow2(addr, page_size);
    *end_p   = ucs_align_up_pow2(addr + size, page_size);
}

/* Makes room for one more record (host lock held) */
static ucs_status_t gpumem_emu_host_grow(gpumem_emu_driver_t *driver)
{
    gpumem_emu_host_t *host;
    unsigned max;

    if (driver->num_host < driver->max_host) {
        return UCS_OK;
    }

    max  = ucs_max(driver->max_host * 2, 32);
    host = ucs_realloc(driver->host, max * sizeof(*host), "gpumem_emu_host");
    if (host == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    driver->host     = host;
    driver->max_host = max;
    return UCS_OK;
}

static void gpumem_emu_host_add(gpumem_emu_gpu_t *gpu, int is_sys,
                                uintptr_t addr, size_t size)
{
    gpumem_emu_driver_t *driver = gpu->driver;
    gpumem_emu_host_t *host     = &driver->host[driver->num_host++];

    host->gpu    = gpu->index;
    host->is_sys = is_sys;
    host->addr   = addr;
    host->size   = size;
}

/* Takes out the record of exactly that memory (host lock held) */
static int gpumem_emu_host_remove(gpumem_emu_gpu_t *gpu, int is_sys,
                                  uintptr_t addr, size_t size)
{
    gpumem_emu_driver_t *driver = gpu->driver;
    gpumem_emu_host_t *host;
    unsigned i;

    for (i = 0; i < driver->num_host; ++i) {
        host = &driver->host[i];
        if ((host->gpu == gpu->index) && (host->is_sys == is_sys) &&
            (host->addr == addr) && (host->size == size)) {
            driver->host[i] = driver->host[--driver->num_host];
            return 1;
        }
    }
    return 0;
}

int gpumem_emu_host_is_pinned(gpumem_emu_gpu_t *gpu, uintptr_t addr,
                              size_t size)
{
    gpumem_emu_driver_t *driver = gpu->driver;
    uintptr_t cursor, end, start, host_end;
    const gpumem_emu_host_t *host;
    unsigned i;
    int found;

    cursor = addr;
    end    = addr + size;
    found  = 1;
    pthread_mutex_lock(&driver->host_lock);
    /* Walks the range, each step over a record that covers the cursor */
    while (found && (cursor < end)) {
        found = 0;
        for (i = 0; i < driver->num_host; ++i) {
            host = &driver->host[i];
            gpumem_emu_host_pages(host->addr, host->size, &start, &host_end);
            if ((host->gpu == gpu->index) && (start <= cursor) &&
                (cursor < host_end)) {
                cursor = host_end;
                found  = 1;
            }
        }
    }
    pthread_mutex_unlock(&driver->host_lock);
    return cursor >= end;
}

/* Whether an injected fault answers the allocation or pin (GPU lock held) */
static ucs_status_t gpumem_emu_host_fault(gpumem_emu_gpu_t *gpu,
                                          const char *what, size_t size,
                                          int no_room)
{
    if (no_room && gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_NO_ROOM)) {
        gpumem_emu_gpu_debug(gpu, "no room to %s %zu bytes (injected)", what,
                             size);
        return UCS_ERR_NO_MEMORY;
    }
    if (gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_KERNEL_REFUSES)) {
        gpumem_emu_gpu_error(gpu, "the kernel refuses to %s %zu bytes "
                             "(injected fault)", what, size);
        return UCS_ERR_REJECTED;
    }
    return UCS_OK;
}

static ucs_status_t gpumem_emu_host_begin(gpumem_emu_gpu_t *gpu,
                                          const char *what, size_t size,
                                          int no_room)
{
    ucs_status_t status;

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, what);
    if (status == UCS_OK) {
        status = gpumem_emu_host_fault(gpu, what, size, no_room);
    }
    pthread_mutex_unlock(&gpu->lock);
    return status;
}

/* The kernel's refusal of mlock(), named as the user can act on it */
static ucs_status_t gpumem_emu_pin_error(gpumem_emu_gpu_t *gpu, void *addr,
                                         size_t size, int err)
{
    struct rlimit limit;

    if ((err == EINVAL) || (getrlimit(RLIMIT_MEMLOCK, &limit) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot pin %p+%zu: mlock: %s", addr, size,
                             strerror(err));
        return UCS_ERR_INVALID_PARAM;
    }

    if (((err == ENOMEM) || (err == EAGAIN)) &&
        (limit.rlim_cur == RLIM_INFINITY)) {
        gpumem_emu_gpu_error(gpu, "cannot pin %p+%zu: mlock: %s (part of the "
                             "range is not mapped, or the machine is out of "
                             "memory)", addr, size, strerror(err));
        return UCS_ERR_INVALID_ADDR;
    }

    gpumem_emu_gpu_error(gpu, "cannot pin %p+%zu: mlock: %s: pinned memory "
                         "counts against RLIMIT_MEMLOCK, %llu bytes for this "
                         "process (ulimit -l)", addr, size, strerror(err),
                         (unsigned long long)limit.rlim_cur);
    return UCS_ERR_EXCEEDS_LIMIT;
}

ucs_status_t gpumem_emu_pin(gpumem_driver_gpu_t *handle, void *addr,
                            size_t size)
{
    gpumem_emu_gpu_t *gpu       = gpumem_emu_gpu(handle);
    gpumem_emu_driver_t *driver = gpu->driver;
    uintptr_t start, end;
    ucs_status_t status;

    if ((addr == NULL) || (size == 0)) {
        gpumem_emu_gpu_error(gpu, "cannot pin %p+%zu: no memory", addr, size);
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_emu_host_begin(gpu, "pin", size, 0);
    if (status != UCS_OK) {
        return status;
    }

    gpumem_emu_host_pages((uintptr_t)addr, size, &start, &end);
    pthread_mutex_lock(&driver->host_lock);
    status = gpumem_emu_host_grow(driver);
    if (status != UCS_OK) {
        gpumem_emu_gpu_error(gpu, "cannot record a pin of %p+%zu", addr,
                             size);
    } else if (mlock((void*)start, end - start) != 0) {
        status = gpumem_emu_pin_error(gpu, addr, size, errno);
    } else {
        gpumem_emu_host_add(gpu, 0, (uintptr_t)addr, size);
    }
    pthread_mutex_unlock(&driver->host_lock);
    return status;
}

void gpumem_emu_unpin(gpumem_driver_gpu_t *handle, void *addr, size_t size)
{
    gpumem_emu_gpu_t *gpu       = gpumem_emu_gpu(handle);
    gpumem_emu_driver_t *driver = gpu->driver;
    uintptr_t start, end, host_start, host_end;
    const gpumem_emu_host_t *host;
    unsigned i;

    pthread_mutex_lock(&driver->host_lock);
    if (!gpumem_emu_host_remove(gpu, 0, (uintptr_t)addr, size)) {
        gpumem_emu_gpu_error(gpu, "cannot unpin %p+%zu: not pinned", addr,
                             size);
        goto out;
    }

    /* Unlocks the pages, then locks again those that other pins hold: the
     * locked total only falls, so the kernel cannot refuse */
    gpumem_emu_host_pages((uintptr_t)addr, size, &start, &end);
    munlock((void*)start, end - start);
    for (i = 0; i < driver->num_host; ++i) {
        host = &driver->host[i];
        gpumem_emu_host_pages(host->addr, host->size, &host_start, &host_end);
        if (!host->is_sys && (host_start < end) && (start < host_end)) {
            host_start = ucs_max(host_start, start);
            host_end   = ucs_min(host_end, end);
            mlock((void*)host_start, host_end - host_start);
        }
    }
out:
    pthread_mutex_unlock(&driver->host_lock);
}

ucs_status_t gpumem_emu_sys_alloc(gpumem_driver_gpu_t *handle, size_t size,
                                  void **addr_p)
{
    gpumem_emu_gpu_t *gpu       = gpumem_emu_gpu(handle);
    gpumem_emu_driver_t *driver = gpu->driver;
    ucs_status_t status;
    void *addr;

    if (size == 0) {
        gpumem_emu_gpu_error(gpu, "cannot allocate 0 bytes of system memory");
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_emu_host_begin(gpu, "allocate system memory", size, 1);
    if (status != UCS_OK) {
        return status;
    }

    pthread_mutex_lock(&driver->host_lock);
    status = gpumem_emu_host_grow(driver);
    if (status != UCS_OK) {
        goto out;
    }

    addr = mmap(NULL, ucs_align_up_pow2(size, ucs_get_page_size()),
                PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (addr == MAP_FAILED) {
        /* ENOMEM is no room now; the caller reports it */
        status = UCS_ERR_NO_MEMORY;
        if (errno != ENOMEM) {
            gpumem_emu_gpu_error(gpu, "cannot allocate %zu bytes of system "
                                 "memory: %s", size, strerror(errno));
            status = UCS_ERR_IO_ERROR;
        }
        goto out;
    }

    gpumem_emu_host_add(gpu, 1, (uintptr_t)addr, size);
    *addr_p = addr;
out:
    pthread_mutex_unlock(&driver->host_lock);
    return status;
}

void gpumem_emu_sys_free(gpumem_driver_gpu_t *handle, void *addr, size_t size)
{
    gpumem_emu_gpu_t *gpu       = gpumem_emu_gpu(handle);
    gpumem_emu_driver_t *driver = gpu->driver;
    int found;

    pthread_mutex_lock(&driver->host_lock);
    found = gpumem_emu_host_remove(gpu, 1, (uintptr_t)addr, size);
    pthread_mutex_unlock(&driver->host_lock);

    if (!found) {
        gpumem_emu_gpu_error(gpu, "cannot free system memory %p+%zu: not "
                             "allocated by it", addr, size);
        return;
    }
    munmap(addr, ucs_align_up_pow2(size, ucs_get_page_size()));
}

void gpumem_emu_host_cleanup(gpumem_emu_driver_t *driver)
{
    gpumem_emu_host_t *host;
    uintptr_t start, end;
    unsigned i;

    /* What the caller did not give back goes with the driver */
    for (i = 0; i < driver->num_host; ++i) {
        host = &driver->host[i];
        gpumem_emu_host_pages(host->addr, host->size, &start, &end);
        if (host->is_sys) {
            munmap((void*)host->addr, end - start);
        } else {
            munlock((void*)start, end - start);
        }
    }
    ucs_free(driver->host);
    driver->host     = NULL;
    driver->num_host = 0;
}
