/**
 * gpumem emu driver: device addresses and the GPUs' page tables.
 *
 * Each GPU's device addresses are one range of the process reserved with no
 * access rights, so that a CPU load or store to device memory faults as on
 * a discrete GPU, and an address tells its GPU by range. Reservations are
 * placed first fit inside it. The page tables map device addresses to VRAM
 * (the GPU's own or a peer's) or to pinned host pages: a directory of 2 MiB
 * entries, each one large page or a table of 4 KiB pages. Only the copy
 * engine reads them.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_int.h"

#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <sys/mman.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>


ucs_status_t gpumem_emu_space_init(gpumem_emu_driver_t *driver,
                                   size_t va_size)
{
    size_t space_size, map_size, min_size;
    gpumem_emu_gpu_t *gpu;
    unsigned i;
    void *map;

    /* Where address space is bounded (valgrind), take what there is, but
     * room for each GPU's own VRAM twice at least */
    min_size = GPUMEM_EMU_DIR_SIZE;
    for (i = 0; i < driver->num_gpus; ++i) {
        min_size = ucs_max(min_size, 2 * driver->gpus[i].vram_size);
    }
    va_size = ucs_align_up_pow2(va_size, GPUMEM_EMU_DIR_SIZE);
    for (;;) {
        space_size = va_size * driver->num_gpus;
        map_size   = space_size + GPUMEM_EMU_LARGE_PAGE_SIZE;
        map        = mmap(NULL, map_size, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (map != MAP_FAILED) {
            break;
        }
        if ((va_size / 2) < min_size) {
            ucs_error("gpumem_emu: cannot reserve %zu bytes of device "
                      "addresses for %u GPUs: %s", space_size,
                      driver->num_gpus, strerror(errno));
            return UCS_ERR_NO_MEMORY;
        }
        va_size /= 2;
    }

    driver->space_map      = map;
    driver->space_map_size = map_size;
    driver->space_base     = ucs_align_up_pow2((uintptr_t)map,
                                               GPUMEM_EMU_LARGE_PAGE_SIZE);
    driver->space_size     = space_size;

    for (i = 0; i < driver->num_gpus; ++i) {
        gpu           = &driver->gpus[i];
        gpu->num_dirs = space_size / GPUMEM_EMU_DIR_SIZE;
        gpu->dirs     = ucs_calloc(gpu->num_dirs, sizeof(*gpu->dirs),
                                   "gpumem_emu_dirs");
        if (gpu->dirs == NULL) {
            gpumem_emu_gpu_error(gpu, "cannot allocate the page directory of "
                                 "%zu bytes of device addresses", space_size);
            return UCS_ERR_NO_MEMORY;
        }
        gpu->va_base = driver->space_base + (i * va_size);
        gpu->va_size = va_size;
        gpumem_emu_gpu_debug(gpu, "device addresses 0x%lx..0x%lx of the "
                             "machine's 0x%lx..0x%lx",
                             (unsigned long)gpu->va_base,
                             (unsigned long)(gpu->va_base + va_size),
                             (unsigned long)driver->space_base,
                             (unsigned long)(driver->space_base +
                                             space_size));
    }
    return UCS_OK;
}

void gpumem_emu_space_cleanup(gpumem_emu_driver_t *driver)
{
    if (driver->space_map != NULL) {
        munmap(driver->space_map, driver->space_map_size);
        driver->space_map = NULL;
    }
}

void gpumem_emu_pt_clear(gpumem_emu_gpu_t *gpu)
{
    size_t dir, i;

    for (dir = 0; (gpu->dirs != NULL) && (dir < gpu->num_dirs); ++dir) {
        if (gpu->dirs[dir] == NULL) {
            continue;
        }
        for (i = 0; i < GPUMEM_EMU_PDES_PER_DIR; ++i) {
            ucs_free(gpu->dirs[dir][i].ptes);
        }
        ucs_free(gpu->dirs[dir]);
        gpu->dirs[dir] = NULL;
    }
}

void gpumem_emu_va_cleanup(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_pt_clear(gpu);
    ucs_free(gpu->dirs);
    ucs_free(gpu->ranges);
    gpu->dirs   = NULL;
    gpu->ranges = NULL;
}

/* Whether the bytes lie in the machine's space, which the tables cover */
static int gpumem_emu_va_in_span(const gpumem_emu_gpu_t *gpu, uint64_t va,
                                 size_t size)
{
    const gpumem_emu_driver_t *driver = gpu->driver;

    return (gpu->dirs != NULL) && (va >= driver->space_base) &&
           (size <= driver->space_size) &&
           ((va - driver->space_base) <= (driver->space_size - size));
}

/* The directory entry of va (in the span), or NULL where no directory is
 * and @a create is 0 or cannot make one */
static gpumem_emu_pde_t *gpumem_emu_pde(gpumem_emu_gpu_t *gpu, uint64_t va,
                                        int create)
{
    uint64_t offset        = va - gpu->driver->space_base;
    gpumem_emu_pde_t **dir = &gpu->dirs[offset / GPUMEM_EMU_DIR_SIZE];

    if ((*dir == NULL) && create) {
        *dir = ucs_calloc(GPUMEM_EMU_PDES_PER_DIR, sizeof(**dir),
                          "gpumem_emu_pdes");
    }
    if (*dir == NULL) {
        return NULL;
    }
    return &(*dir)[(offset % GPUMEM_EMU_DIR_SIZE) /
                   GPUMEM_EMU_LARGE_PAGE_SIZE];
}

static unsigned gpumem_emu_pte_index(uint64_t va)
{
    return (va % GPUMEM_EMU_LARGE_PAGE_SIZE) / GPUMEM_EMU_PAGE_SIZE;
}

/* The entry that maps va, and the size of its page; NULL if none */
static const gpumem_emu_pte_t *
gpumem_emu_pt_lookup(gpumem_emu_gpu_t *gpu, uint64_t va, size_t *page_size_p)
{
    const gpumem_emu_pde_t *pde;
    const gpumem_emu_pte_t *pte;

    if (!gpumem_emu_va_in_span(gpu, va, 1)) {
        return NULL;
    }

    pde = gpumem_emu_pde(gpu, va, 0);
    if (pde == NULL) {
        return NULL;
    }
    if (pde->large.kind != GPUMEM_EMU_PT_NONE) {
        *page_size_p = GPUMEM_EMU_LARGE_PAGE_SIZE;
        return &pde->large;
    }

    if (pde->ptes == NULL) {
        return NULL;
    }
    pte          = &pde->ptes[gpumem_emu_pte_index(va)];
    *page_size_p = GPUMEM_EMU_PAGE_SIZE;
    return (pte->kind != GPUMEM_EMU_PT_NONE) ? pte : NULL;
}

ucs_status_t gpumem_emu_pt_translate(gpumem_emu_gpu_t *gpu, uint64_t va,
                                     void **ptr_p, size_t *contig_p)
{
    const gpumem_emu_pte_t *pte;
    size_t page_size, offset;

    pte = gpumem_emu_pt_lookup(gpu, va, &page_size);
    if (pte == NULL) {
        return UCS_ERR_INVALID_ADDR;
    }

    offset    = va & (page_size - 1);
    *contig_p = page_size - offset;
    if (pte->kind == GPUMEM_EMU_PT_HOST) {
        *ptr_p = (void*)(uintptr_t)(pte->addr + offset);
    } else {
        *ptr_p = UCS_PTR_BYTE_OFFSET(gpu->driver->gpus[pte->gpu].window,
                                     pte->addr + offset);
    }
    return UCS_OK;
}

/* Whether nothing is mapped in [va, va + size) (4 KiB aligned) */
static int gpumem_emu_pt_is_free(gpumem_emu_gpu_t *gpu, uint64_t va,
                                 size_t size)
{
    size_t page_size;
    uint64_t end;

    for (end = va + size; va < end; va += GPUMEM_EMU_PAGE_SIZE) {
        if (gpumem_emu_pt_lookup(gpu, va, &page_size) != NULL) {
            return 0;
        }
    }
    return 1;
}

/* Breaks a large page into small ones, so that part of it can go */
static ucs_status_t gpumem_emu_pde_split(gpumem_emu_pde_t *pde)
{
    unsigned i;

    pde->ptes = ucs_calloc(GPUMEM_EMU_PTES_PER_PDE, sizeof(*pde->ptes),
                           "gpumem_emu_ptes");
    if (pde->ptes == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < GPUMEM_EMU_PTES_PER_PDE; ++i) {
        pde->ptes[i]       = pde->large;
        pde->ptes[i].addr += i * GPUMEM_EMU_PAGE_SIZE;
    }
    pde->count      = GPUMEM_EMU_PTES_PER_PDE;
    pde->large.kind = GPUMEM_EMU_PT_NONE;
    return UCS_OK;
}

/* Clears the entries of [va, va + size) (4 KiB aligned) */
static ucs_status_t gpumem_emu_pt_clear_range(gpumem_emu_gpu_t *gpu,
                                              uint64_t va, size_t size)
{
    uint64_t end = va + size;
    uint64_t pde_start, pde_end;
    gpumem_emu_pde_t *pde;
    ucs_status_t status;

    while (va < end) {
        pde       = gpumem_emu_pde(gpu, va, 0);
        pde_start = ucs_align_down_pow2(va, GPUMEM_EMU_LARGE_PAGE_SIZE);
        pde_end   = pde_start + GPUMEM_EMU_LARGE_PAGE_SIZE;

        if (pde == NULL) {
            /* A whole directory without entries: past it */
            va = gpu->driver->space_base +
                 ucs_align_up_pow2(va - gpu->driver->space_base + 1,
                                   GPUMEM_EMU_DIR_SIZE);
            continue;
        }

        if (pde->large.kind != GPUMEM_EMU_PT_NONE) {
            if ((va == pde_start) && (end >= pde_end)) {
                pde->large.kind = GPUMEM_EMU_PT_NONE;
                va              = pde_end;
                continue;
            }
            status = gpumem_emu_pde_split(pde);
            if (status != UCS_OK) {
                gpumem_emu_gpu_error(gpu, "cannot split the large page at "
                                     "0x%lx to unmap part of it",
                                     (unsigned long)pde_start);
                return status;
            }
        }

        for (; (va < end) && (va < pde_end); va += GPUMEM_EMU_PAGE_SIZE) {
            if ((pde->ptes != NULL) &&
                (pde->ptes[gpumem_emu_pte_index(va)].kind !=
                 GPUMEM_EMU_PT_NONE)) {
                pde->ptes[gpumem_emu_pte_index(va)].kind = GPUMEM_EMU_PT_NONE;
                --pde->count;
            }
        }
        if ((pde->ptes != NULL) && (pde->count == 0)) {
            ucs_free(pde->ptes);
            pde->ptes = NULL;
        }
        va = pde_end;
    }
    return UCS_OK;
}

/*
 * Writes entries for [va, va + size), pages of page_size from the first
 * page's entry on, all or nothing. The range is free and aligned.
 */
static ucs_status_t gpumem_emu_pt_write(gpumem_emu_gpu_t *gpu, uint64_t va,
                                        size_t size, size_t page_size,
                                        gpumem_emu_pte_t pte)
{
    gpumem_emu_pde_t *pde;
    size_t done;

    for (done = 0; done < size; done += page_size, pte.addr += page_size) {
        pde = gpumem_emu_pde(gpu, va + done, 1);
        if (pde == NULL) {
            goto err_no_memory;
        }
        if (page_size == GPUMEM_EMU_LARGE_PAGE_SIZE) {
            ucs_assert(pde->ptes == NULL);
            pde->large = pte;
            continue;
        }

        if (pde->ptes == NULL) {
            pde->ptes = ucs_calloc(GPUMEM_EMU_PTES_PER_PDE,
                                   sizeof(*pde->ptes), "gpumem_emu_ptes");
            if (pde->ptes == NULL) {
                goto err_no_memory;
            }
        }
        pde->ptes[gpumem_emu_pte_index(va + done)] = pte;
        ++pde->count;
    }
    return UCS_OK;

err_no_memory:
    gpumem_emu_pt_clear_range(gpu, va, done);
    gpumem_emu_gpu_error(gpu, "cannot allocate a page table");
    return UCS_ERR_NO_MEMORY;
}

/* Under the GPU's va_lock */
static int gpumem_emu_va_range_find(const gpumem_emu_gpu_t *gpu, uint64_t va,
                                    size_t size)
{
    const gpumem_emu_va_range_t *range;
    unsigned i;

    for (i = 0; i < gpu->num_ranges; ++i) {
        range = &gpu->ranges[i];
        if ((va >= range->start) && (size <= range->size) &&
            ((va - range->start) <= (range->size - size))) {
            return i;
        }
    }
    return -1;
}

/* Whether one GPU of the machine reserved all of [va, va + size): a GPU
 * maps at the addresses any of them reserved */
static int gpumem_emu_va_is_reserved(gpumem_emu_driver_t *driver, uint64_t va,
                                     size_t size)
{
    gpumem_emu_gpu_t *owner;
    unsigned index;
    int found;

    if ((va < driver->space_base) ||
        (va - driver->space_base >= driver->space_size)) {
        return 0;
    }

    index = (va - driver->space_base) / driver->gpus[0].va_size;
    owner = &driver->gpus[index];
    pthread_mutex_lock(&owner->va_lock);
    found = gpumem_emu_va_range_find(owner, va, size) >= 0;
    pthread_mutex_unlock(&owner->va_lock);
    return found;
}

/* Checks a mapping's addresses: aligned to its pages, reserved, free */
static ucs_status_t gpumem_emu_pt_check(gpumem_emu_gpu_t *gpu, uint64_t va,
                                        size_t size, size_t page_size,
                                        const char *what)
{
    if ((size == 0) || ((va % page_size) != 0) || ((size % page_size) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot map %s of %zu bytes at 0x%lx: not "
                             "in whole pages of %zu bytes", what, size,
                             (unsigned long)va, page_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!gpumem_emu_va_is_reserved(gpu->driver, va, size)) {
        gpumem_emu_gpu_error(gpu, "cannot map %s at 0x%lx+%zu: the addresses "
                             "are not reserved", what, (unsigned long)va,
                             size);
        return UCS_ERR_INVALID_ADDR;
    }

    if (!gpumem_emu_pt_is_free(gpu, va, size)) {
        gpumem_emu_gpu_error(gpu, "cannot map %s at 0x%lx+%zu: it maps other "
                             "memory there", what, (unsigned long)va, size);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

/* Maps [va, va + size) to pages from @a pte's on, on a live GPU */
static ucs_status_t gpumem_emu_pt_map(gpumem_emu_gpu_t *gpu, uint64_t va,
                                      size_t size, size_t page_size,
                                      gpumem_emu_pte_t pte, const char *what)
{
    ucs_status_t status;
    char action[32];

    snprintf(action, sizeof(action), "map %s", what);
    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, action);
    if (status == UCS_OK) {
        status = gpumem_emu_pt_check(gpu, va, size, page_size, what);
    }
    if ((status == UCS_OK) &&
        gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_NO_TABLE_ROOM)) {
        gpumem_emu_gpu_debug(gpu, "no room for the page tables to %s "
                             "(injected)", action);
        status = UCS_ERR_NO_MEMORY;
    }
    if (status == UCS_OK) {
        status = gpumem_emu_pt_write(gpu, va, size, page_size, pte);
    }
    pthread_mutex_unlock(&gpu->lock);
    return status;
}

ucs_status_t gpumem_emu_va_reserve(gpumem_driver_gpu_t *handle, size_t size,
                                   size_t align, uint64_t *va_p)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);
    uint64_t start, end   = gpu->va_base + gpu->va_size;
    gpumem_emu_va_range_t *ranges;
    uint64_t range_end;
    ucs_status_t status;
    unsigned i, max;

    align = ucs_max(align, GPUMEM_EMU_PAGE_SIZE);
    if ((size == 0) || ((size % GPUMEM_EMU_PAGE_SIZE) != 0) ||
        !ucs_is_pow2(align)) {
        gpumem_emu_gpu_error(gpu, "cannot reserve %zu bytes of device "
                             "addresses aligned to %zu: not whole 4 KiB "
                             "pages and a power of two", size, align);
        return UCS_ERR_INVALID_PARAM;
    }

    pthread_mutex_lock(&gpu->lock);
    if (gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_NO_ADDRESSES)) {
        gpumem_emu_gpu_debug(gpu, "no room for %zu bytes of device addresses "
                             "(injected)", size);
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    pthread_mutex_lock(&gpu->va_lock);
    if (gpu->num_ranges == gpu->max_ranges) {
        max    = ucs_max(gpu->max_ranges * 2, 64);
        ranges = ucs_realloc(gpu->ranges, max * sizeof(*ranges),
                             "gpumem_emu_va_ranges");
        if (ranges == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto out_va;
        }
        gpu->ranges     = ranges;
        gpu->max_ranges = max;
    }

    start = ucs_align_up_pow2(gpu->va_base, align);
    for (i = 0; i < gpu->num_ranges; ++i) {
        range_end = gpu->ranges[i].start + gpu->ranges[i].size;
        if (range_end <= start) {
            continue;
        }
        if ((start <= end) && (size <= (end - start)) &&
            ((start + size) <= gpu->ranges[i].start)) {
            break;
        }
        start = ucs_align_up_pow2(range_end, align);
    }
    if ((start > end) || (size > (end - start))) {
        status = UCS_ERR_NO_MEMORY; /* No room in the GPU's space */
        goto out_va;
    }

    memmove(&gpu->ranges[i + 1], &gpu->ranges[i],
            (gpu->num_ranges - i) * sizeof(*gpu->ranges));
    gpu->ranges[i].start = start;
    gpu->ranges[i].size  = size;
    ++gpu->num_ranges;
    *va_p  = start;
    status = UCS_OK;
out_va:
    pthread_mutex_unlock(&gpu->va_lock);
out:
    pthread_mutex_unlock(&gpu->lock);
    return status;
}

void gpumem_emu_va_release(gpumem_driver_gpu_t *handle, uint64_t va,
                           size_t size)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);
    unsigned i;

    pthread_mutex_lock(&gpu->lock);
    pthread_mutex_lock(&gpu->va_lock);
    for (i = 0; i < gpu->num_ranges; ++i) {
        if ((gpu->ranges[i].start == va) && (gpu->ranges[i].size == size)) {
            break;
        }
    }

    if (i == gpu->num_ranges) {
        gpumem_emu_gpu_error(gpu, "cannot release device addresses "
                             "0x%lx+%zu: not a reservation",
                             (unsigned long)va, size);
    } else {
        /* A mapping left there would reach memory through new addresses */
        if (!gpumem_emu_pt_is_free(gpu, va, size)) {
            gpumem_emu_gpu_debug(gpu, "released addresses 0x%lx+%zu still "
                                 "mapped: unmapping", (unsigned long)va,
                                 size);
            gpumem_emu_pt_clear_range(gpu, va, size);
        }
        memmove(&gpu->ranges[i], &gpu->ranges[i + 1],
                (gpu->num_ranges - i - 1) * sizeof(*gpu->ranges));
        --gpu->num_ranges;
    }
    pthread_mutex_unlock(&gpu->va_lock);
    pthread_mutex_unlock(&gpu->lock);
}

/* Whether the GPU maps the VRAM of owner: its own, or a peer it reaches */
static ucs_status_t gpumem_emu_pt_check_peer(gpumem_emu_gpu_t *gpu,
                                             gpumem_emu_gpu_t *owner)
{
    gpumem_topo_verdict_t verdict;

    if (owner->driver != gpu->driver) {
        gpumem_emu_gpu_error(gpu, "cannot map VRAM of GPU %s of another "
                             "driver", owner->name);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((owner != gpu) &&
        !gpumem_topo_reaches(&gpu->reach, &owner->reach, 0, &verdict)) {
        gpumem_emu_gpu_error(gpu, "cannot map VRAM of GPU %s: %s",
                             owner->name, verdict.reason);
        return UCS_ERR_UNREACHABLE;
    }
    return UCS_OK;
}

ucs_status_t gpumem_emu_pt_map_vram(gpumem_driver_gpu_t *handle, uint64_t va,
                                    gpumem_driver_mem_t *mem, size_t offset,
                                    size_t size, unsigned flags)
{
    gpumem_emu_gpu_t *gpu   = gpumem_emu_gpu(handle);
    gpumem_emu_gpu_t *owner = gpumem_emu_mem_gpu(mem);
    gpumem_emu_pte_t pte;
    ucs_status_t status;

    status = gpumem_emu_pt_check_peer(gpu, owner);
    if (status != UCS_OK) {
        return status;
    }

    if ((offset > mem->size) || (size > (mem->size - offset)) ||
        ((offset % mem->page_size) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot map %zu bytes at offset %zu of %zu "
                             "bytes of VRAM in pages of %zu", size, offset,
                             mem->size, mem->page_size);
        return UCS_ERR_INVALID_PARAM;
    }

    pte.addr  = mem->phys + offset;
    pte.kind  = GPUMEM_EMU_PT_VRAM;
    pte.flags = flags;
    pte.gpu   = owner->index;
    return gpumem_emu_pt_map(gpu, va, size, mem->page_size, pte, "VRAM");
}

ucs_status_t gpumem_emu_pt_map_host(gpumem_driver_gpu_t *handle, uint64_t va,
                                    void *host, size_t size, unsigned flags)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);
    gpumem_emu_pte_t pte;

    if (((uintptr_t)host % GPUMEM_EMU_PAGE_SIZE) != 0) {
        gpumem_emu_gpu_error(gpu, "cannot map host memory at %p: not at a "
                             "4 KiB page", host);
        return UCS_ERR_INVALID_PARAM;
    }

    /* The GPU would reach pages the kernel may move or swap */
    if ((size > 0) && !gpumem_emu_host_is_pinned(gpu, (uintptr_t)host, size)) {
        gpumem_emu_gpu_error(gpu, "cannot map host memory %p+%zu: it is not "
                             "pinned for this GPU", host, size);
        return UCS_ERR_INVALID_PARAM;
    }

    pte.addr  = (uintptr_t)host;
    pte.kind  = GPUMEM_EMU_PT_HOST;
    pte.flags = flags;
    pte.gpu   = 0;
    return gpumem_emu_pt_map(gpu, va, size, GPUMEM_EMU_PAGE_SIZE, pte,
                             "host memory");
}

ucs_status_t gpumem_emu_pt_unmap(gpumem_driver_gpu_t *handle, uint64_t va,
                                 size_t size)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);
    ucs_status_t status;

    if (((va % GPUMEM_EMU_PAGE_SIZE) != 0) ||
        ((size % GPUMEM_EMU_PAGE_SIZE) != 0) ||
        !gpumem_emu_va_in_span(gpu, va, size)) {
        gpumem_emu_gpu_error(gpu, "cannot unmap 0x%lx+%zu: not whole pages "
                             "of its device addresses", (unsigned long)va,
                             size);
        return UCS_ERR_INVALID_PARAM;
    }

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_pt_clear_range(gpu, va, size);
    if ((status == UCS_OK) &&
        gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED)) {
        gpumem_emu_gpu_error(gpu, "unmapped 0x%lx+%zu, but the GPU did not "
                             "confirm the flush of its TLB (injected fault): "
                             "it may still reach the memory",
                             (unsigned long)va, size);
        status = UCS_ERR_TIMED_OUT;
    }
    pthread_mutex_unlock(&gpu->lock);
    return status;
}
