/**
 * gpumem memory core: regions of a GPU's memory, who holds what, and when
 * it is given back (seed 003), on any driver.
 *
 * Locking: every call may come from any thread. A call on a GPU's memory
 * holds that GPU's lock, so that calls on one GPU run one at a time, as the
 * seed has its owner make them; calls on two GPUs' memory run at once. What
 * one GPU's call reads or changes of another's (the live regions, the peer
 * counts of memory, the owner's lists of memory, whether it was released)
 * is under one process-wide lock, taken inside a GPU's lock and never
 * across a driver call that may wait; no call holds two GPUs' locks, so two
 * GPUs' calls never wait for each other in a cycle.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_mem_int.h"
#include "gpumem_nic.h"
#include "gpumem_phys.h"

#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <sys/mman.h>
#include <errno.h>
#include <string.h>


/* The live regions: address to id */
KHASH_MAP_INIT_INT64(gpumem_region_set, uint64_t)

static pthread_mutex_t gpumem_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static khash_t(gpumem_region_set) gpumem_live_regions;
static uint64_t gpumem_next_region_id = 1;
/* GPUs destroyed whose memory peers or a bus client still hold */
static UCS_LIST_HEAD(gpumem_outliving_gpus);


static void gpumem_mem_global_lock(void)
{
    pthread_mutex_lock(&gpumem_mem_lock);
}

static void gpumem_mem_global_unlock(void)
{
    pthread_mutex_unlock(&gpumem_mem_lock);
}

/* Drops a reference on the GPU object: the last frees it */
static void gpumem_gpu_put(gpumem_gpu_t *gpu)
{
    unsigned refcount;

    gpumem_mem_global_lock();
    refcount = --gpu->refcount;
    if ((refcount == 0) && !ucs_list_is_empty(&gpu->outliving)) {
        ucs_list_del(&gpu->outliving);
    }
    gpumem_mem_global_unlock();

    if (refcount == 0) {
        gpumem_mem_index_cleanup(gpu);
        pthread_mutex_destroy(&gpu->taken_lock);
        pthread_mutex_destroy(&gpu->lock);
        ucs_free(gpu);
    }
}

const char *gpumem_gpu_name(const gpumem_gpu_t *gpu, char *buf)
{
    return gpumem_pci_addr_str(&gpumem_gpu_reach(gpu)->addr, buf,
                               GPUMEM_TOPO_PCI_STR_MAX);
}

/* Whether the region of @a id at @a region was given and not freed; under
 * the global lock */
static int gpumem_region_id_is_live(const gpumem_region_t *region,
                                    uint64_t id)
{
    khiter_t iter = kh_get(gpumem_region_set, &gpumem_live_regions,
                           (uint64_t)(uintptr_t)region);

    return (iter != kh_end(&gpumem_live_regions)) &&
           (kh_val(&gpumem_live_regions, iter) == id);
}

/* Under the global lock */
static int gpumem_region_is_live(const gpumem_region_t *region)
{
    return kh_get(gpumem_region_set, &gpumem_live_regions,
                  (uint64_t)(uintptr_t)region) !=
           kh_end(&gpumem_live_regions);
}

/* Locks the GPU of @a region for @a call, holding a reference on the object
 * so that it outlives the call; NULL, logged, with nothing locked, if the
 * region is not live */
static gpumem_gpu_t *gpumem_region_lock_gpu(gpumem_region_t *region,
                                            const char *call)
{
    gpumem_gpu_t *gpu = NULL;

    gpumem_mem_global_lock();
    if (gpumem_region_is_live(region)) {
        gpu = region->gpu;
        ++gpu->refcount;
    }
    gpumem_mem_global_unlock();

    if (gpu == NULL) {
        ucs_error("gpumem: %s of region %p, which was freed or never given",
                  call, region);
        return NULL;
    }

    gpumem_gpu_lock(gpu);
    return gpu;
}

static void gpumem_region_unlock_gpu(gpumem_gpu_t *gpu)
{
    gpumem_gpu_unlock(gpu);
    gpumem_gpu_put(gpu);
}

/* A new region over @a mapping; @a source (of @a source_id) is the region
 * alloc, map_host or import gave that it maps, or NULL for one of those */
static ucs_status_t gpumem_region_create(gpumem_mapping_t *mapping,
                                         uint64_t address, size_t size,
                                         void *host, int from_alloc,
                                         const gpumem_region_t *source,
                                         uint64_t source_id,
                                         gpumem_region_t **region_p)
{
    gpumem_region_t *region;
    khiter_t iter;
    int ret;

    region = ucs_calloc(1, sizeof(*region), "gpumem_region");
    if (region == NULL) {
        ucs_error("gpumem: failed to allocate a region");
        return UCS_ERR_NO_MEMORY;
    }

    region->gpu        = mapping->gpu;
    region->kind       = mapping->memory->kind;
    region->mapping    = mapping;
    region->address    = address;
    region->size       = size;
    region->asked      = size;
    region->host       = host;
    region->from_alloc = from_alloc;

    gpumem_mem_global_lock();
    region->id        = gpumem_next_region_id++;
    region->source    = (source != NULL) ? source : region;
    region->source_id = (source != NULL) ? source_id : region->id;
    iter              = kh_put(gpumem_region_set, &gpumem_live_regions,
                               (uint64_t)(uintptr_t)region, &ret);
    if (ret >= 0) {
        kh_val(&gpumem_live_regions, iter) = region->id;
    }
    gpumem_mem_global_unlock();
    if (ret < 0) {
        ucs_free(region);
        ucs_error("gpumem: failed to record a region");
        return UCS_ERR_NO_MEMORY;
    }

    ++mapping->refcount;
    ucs_list_add_tail(&mapping->gpu->regions, &region->list);
    ucs_list_add_tail(&mapping->regions, &region->in_mapping);
    *region_p = region;
    return UCS_OK;
}

/* Under the global lock */
static void gpumem_region_forget(gpumem_region_t *region)
{
    khiter_t iter = kh_get(gpumem_region_set, &gpumem_live_regions,
                           (uint64_t)(uintptr_t)region);

    kh_del(gpumem_region_set, &gpumem_live_regions, iter);
    ucs_list_del(&region->list);
    if (region->mapping != NULL) {
        ucs_list_del(&region->in_mapping);
    }
}

/* Tells the driver whether the GPU stays taken, as it is now: the release's
 * call and the last peer's, from two threads, are ordered, so that the
 * driver hears the last state */
static void gpumem_gpu_tell_taken(gpumem_gpu_t *gpu)
{
    int taken;

    if (gpu->driver->ops->keep_taken == NULL) {
        return;
    }

    pthread_mutex_lock(&gpu->taken_lock);
    gpumem_mem_global_lock();
    taken = gpu->released && gpu->reserved;
    gpumem_mem_global_unlock();
    if (taken != gpu->taken_told) {
        gpu->driver->ops->keep_taken(gpu->dgpu, taken);
        gpu->taken_told = taken;
    }
    pthread_mutex_unlock(&gpu->taken_lock);
}

/* A released GPU stays taken while other GPUs map its memory; the last of
 * it, unless a bus client was given some, lets another open take it */
static void gpumem_gpu_untake(gpumem_gpu_t *gpu)
{
    int untake;

    gpumem_mem_global_lock();
    untake = gpu->released && gpu->reserved && !gpu->bus_given &&
             ucs_list_is_empty(&gpu->memories) &&
             ucs_list_is_empty(&gpu->deferred);
    if (untake) {
        gpu->reserved = 0;
    }
    gpumem_mem_global_unlock();

    if (untake) {
        ucs_debug("gpumem: GPU %u: the last of its memory that other GPUs "
                  "mapped after its release went back: another open may "
                  "take it", gpu->index);
        gpumem_gpu_tell_taken(gpu);
    }
}

/* Gives the memory's backing back to the driver, and the owner's addresses
 * that were kept with it */
static void gpumem_memory_destroy(gpumem_memory_t *memory)
{
    gpumem_gpu_t *owner             = memory->owner;
    gpumem_mapping_t *owner_mapping = memory->owner_mapping;

    if (owner_mapping != NULL) {
        if (owner_mapping->va_owned) {
            owner->driver->ops->va_release(owner->dgpu, owner_mapping->va,
                                   owner_mapping->va_size);
        }
        ucs_free(owner_mapping);
    }

    switch (memory->type) {
    case GPUMEM_MEMORY_VRAM:
        if (memory->host != NULL) {
            owner->driver->ops->bar_unmap(memory->host, memory->vram->size);
        }
        owner->driver->ops->mem_free(memory->vram);
        break;
    case GPUMEM_MEMORY_SYSTEM:
        owner->driver->ops->sys_free(owner->dgpu, memory->host, memory->size);
        break;
    case GPUMEM_MEMORY_PINNED:
        /* Pins are the process's, not the GPU's tables: they go back at
         * the release's give-back as at a free */
        owner->driver->ops->unpin(owner->dgpu, memory->host, memory->size);
        break;
    }
    ucs_free(memory);
    gpumem_gpu_untake(owner);
    gpumem_gpu_put(owner);
}

/* A memory object that never held anything goes */
static void gpumem_memory_discard(gpumem_memory_t *memory)
{
    gpumem_gpu_t *owner = memory->owner;

    ucs_free(memory);
    gpumem_gpu_put(owner);
}

/* Whether memory whose owner's regions are gone may go back now: no peer
 * maps it and no peer may still write it; under the global lock */
static int gpumem_memory_is_idle(const gpumem_memory_t *memory)
{
    return memory->owner_done && (memory->peers == 0) && !memory->tainted &&
           !memory->reserved;
}

/* Memory of other GPUs this GPU's calls put back for their owners: each
 * owner gives it back at its next call */
static void gpumem_gpu_give_back_deferred(gpumem_gpu_t *gpu)
{
    UCS_LIST_HEAD(idle);
    gpumem_memory_t *memory, *tmp;

    gpumem_mem_global_lock();
    ucs_list_splice_tail(&idle, &gpu->deferred);
    ucs_list_head_init(&gpu->deferred);
    gpumem_mem_global_unlock();

    ucs_list_for_each_safe(memory, tmp, &idle, list) {
        ucs_list_del(&memory->list);
        gpumem_memory_destroy(memory);
    }
}

static ucs_status_t gpumem_gpu_check_live(const gpumem_gpu_t *gpu,
                                          const char *call)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX];

    if (gpu->released) {
        ucs_error("gpumem: %s on GPU %s after its release", call,
                  gpumem_gpu_name(gpu, name));
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t gpumem_gpu_create(gpumem_driver_t *driver, unsigned index,
                               gpumem_gpu_t **gpu_p)
{
    gpumem_gpu_t *gpu;

    if (index >= driver->ops->num_gpus(driver)) {
        ucs_error("gpumem: the %s driver has no GPU %u", driver->ops->name,
                  index);
        return UCS_ERR_INVALID_PARAM;
    }

    gpu = ucs_calloc(1, sizeof(*gpu), "gpumem_gpu");
    if (gpu == NULL) {
        ucs_error("gpumem: failed to allocate GPU %u", index);
        return UCS_ERR_NO_MEMORY;
    }

    if (gpumem_mem_index_init(gpu) != UCS_OK) {
        ucs_error("gpumem: failed to create the address index of GPU %u",
                  index);
        ucs_free(gpu);
        return UCS_ERR_NO_MEMORY;
    }

    pthread_mutex_init(&gpu->lock, NULL);
    pthread_mutex_init(&gpu->taken_lock, NULL);
    ucs_list_head_init(&gpu->outliving);
    gpu->refcount = 1;
    gpu->driver   = driver;
    gpu->dgpu     = driver->ops->gpu(driver, index);
    gpu->index    = index;
    ucs_list_head_init(&gpu->regions);
    ucs_list_head_init(&gpu->kept);
    ucs_list_head_init(&gpu->memories);
    ucs_list_head_init(&gpu->deferred);
    *gpu_p = gpu;
    return UCS_OK;
}

const gpumem_topo_reach_t *gpumem_gpu_reach(const gpumem_gpu_t *gpu)
{
    return gpu->driver->ops->reach(gpu->dgpu);
}

size_t gpumem_gpu_vram_size(const gpumem_gpu_t *gpu)
{
    return gpu->driver->ops->vram_size(gpu->dgpu);
}

ucs_status_t gpumem_gpu_vram_free(gpumem_gpu_t *gpu, size_t *free_p)
{
    if (gpu->driver->ops->vram_free == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    return gpu->driver->ops->vram_free(gpu->dgpu, free_p);
}

const char *gpumem_gpu_vram_free_str(gpumem_gpu_t *gpu, char *buf,
                                     size_t max)
{
    char free_str[16], total_str[16];
    size_t vram_free;

    if (gpumem_gpu_vram_free(gpu, &vram_free) != UCS_OK) {
        ucs_snprintf_zero(buf, max, "the %s driver does not tell how much "
                          "VRAM is free", gpu->driver->ops->name);
        return buf;
    }

    ucs_memunits_to_str(vram_free, free_str, sizeof(free_str));
    ucs_memunits_to_str(gpu->driver->ops->vram_size(gpu->dgpu), total_str,
                        sizeof(total_str));
    ucs_snprintf_zero(buf, max, "%s of %s of VRAM free", free_str,
                      total_str);
    return buf;
}

static ucs_status_t gpumem_memory_create(gpumem_gpu_t *gpu,
                                         gpumem_memory_type_t type,
                                         gpumem_kind_t kind, size_t size,
                                         gpumem_memory_t **memory_p)
{
    gpumem_memory_t *memory;

    memory = ucs_calloc(1, sizeof(*memory), "gpumem_memory");
    if (memory == NULL) {
        ucs_error("gpumem: failed to allocate a memory descriptor");
        return UCS_ERR_NO_MEMORY;
    }

    memory->owner = gpu;
    memory->reach = gpumem_gpu_reach(gpu);
    memory->type  = type;
    memory->kind  = kind;
    memory->size  = size;

    /* The object outlives its destroy while memory of its is out */
    gpumem_mem_global_lock();
    ++gpu->refcount;
    gpumem_mem_global_unlock();
    *memory_p = memory;
    return UCS_OK;
}

static void gpumem_memory_own(gpumem_memory_t *memory)
{
    gpumem_mem_global_lock();
    ucs_list_add_tail(&memory->owner->memories, &memory->list);
    gpumem_mem_global_unlock();
}

/* Maps @a memory into @a gpu's tables at new addresses */
static ucs_status_t gpumem_mapping_create(gpumem_gpu_t *gpu,
                                          gpumem_memory_t *memory,
                                          unsigned map_flags,
                                          gpumem_mapping_t **mapping_p)
{
    size_t align = (memory->vram != NULL) ? memory->vram->page_size :
                                            GPUMEM_PAGE_SIZE;
    const gpumem_driver_ops_t *ops = gpu->driver->ops;
    gpumem_mapping_t *mapping;
    ucs_status_t status;

    mapping = ucs_calloc(1, sizeof(*mapping), "gpumem_mapping");
    if (mapping == NULL) {
        ucs_error("gpumem: failed to allocate a mapping");
        return UCS_ERR_NO_MEMORY;
    }

    ucs_list_head_init(&mapping->regions);
    mapping->gpu      = gpu;
    mapping->memory   = memory;
    mapping->va_size  = memory->size;
    mapping->va_owned = (memory->type == GPUMEM_MEMORY_VRAM) ?
                        (memory->vram->fixed_va == 0) :
                        !(ops->flags & GPUMEM_DRIVER_FLAG_HOST_UVA);
    if ((memory->type == GPUMEM_MEMORY_VRAM) && !mapping->va_owned) {
        /* The driver mapped it already, where it chose, for every GPU */
        mapping->va = memory->vram->fixed_va;
        gpumem_mem_index_add(mapping);
        *mapping_p = mapping;
        return UCS_OK;
    } else if (mapping->va_owned && (memory->owner_va != 0) &&
               !(gpu->driver->ops->flags & GPUMEM_DRIVER_FLAG_PROCESS_MAPS)) {
        /* One address space per machine: another GPU maps the memory at the
         * addresses it has for its owner, which the owner holds */
        ucs_assert(memory->owner != gpu);
        mapping->va       = memory->owner_va;
        mapping->va_owned = 0;
    } else if (mapping->va_owned) {
        status = ops->va_reserve(gpu->dgpu, mapping->va_size, align,
                                 &mapping->va);
        if (status != UCS_OK) {
            goto err_free;
        }
        if (memory->owner == gpu) {
            memory->owner_va = mapping->va;
        }
    } else {
        /* The GPU reaches system memory at its host address */
        mapping->va      = (uintptr_t)memory->host;
        mapping->host_va = 1;
    }

    if (memory->type == GPUMEM_MEMORY_VRAM) {
        status = ops->pt_map_vram(gpu->dgpu, mapping->va, memory->vram, 0,
                                  memory->size, map_flags);
    } else {
        /* System memory: snooped and uncached, whatever was asked */
        status = ops->pt_map_host(gpu->dgpu, mapping->va, memory->host,
                                  memory->size,
                                  map_flags | GPUMEM_DRIVER_MAP_UNCACHED);
    }
    if (status != UCS_OK) {
        goto err_va;
    }

    gpumem_mem_index_add(mapping);
    *mapping_p = mapping;
    return UCS_OK;

err_va:
    if (mapping->va_owned) {
        gpu->driver->ops->va_release(gpu->dgpu, mapping->va, mapping->va_size);
        if (memory->owner == gpu) {
            memory->owner_va = 0;
        }
    }
err_free:
    ucs_free(mapping);
    return status;
}

static void gpumem_mapping_destroy(gpumem_mapping_t *mapping)
{
    gpumem_gpu_t *gpu = mapping->gpu;

    if (mapping->va_owned) {
        gpu->driver->ops->va_release(gpu->dgpu, mapping->va, mapping->va_size);
    }
    if (mapping->listed) {
        gpumem_mem_index_del(mapping);
    } else {
        ucs_list_del(&mapping->list);
    }
    ucs_free(mapping);
}

/* The first mapping of memory the GPU just took, and the first region over
 * it at @a offset; on failure everything goes back, the memory included */
static ucs_status_t gpumem_memory_map_first(gpumem_gpu_t *gpu,
                                            gpumem_memory_t *memory,
                                            unsigned map_flags, size_t offset,
                                            size_t size, void *host,
                                            int from_alloc,
                                            gpumem_region_t **region_p)
{
    gpumem_mapping_t *mapping;
    ucs_status_t status;

    status = gpumem_mapping_create(gpu, memory, map_flags, &mapping);
    if (status != UCS_OK) {
        goto err_destroy_memory;
    }

    status = gpumem_region_create(mapping, mapping->va + offset, size, host,
                                  from_alloc, NULL, 0, region_p);
    if (status != UCS_OK) {
        goto err_unmap;
    }

    gpumem_memory_own(memory);
    return UCS_OK;

err_unmap:
    gpu->driver->ops->pt_unmap(gpu->dgpu, mapping->va, mapping->va_size);
    gpumem_mapping_destroy(mapping);
err_destroy_memory:
    gpumem_memory_destroy(memory);
    return status;
}

/* The drivers leave "no room now" to the core to say */
static void gpumem_alloc_no_room(gpumem_gpu_t *gpu, gpumem_kind_t kind,
                                 size_t size)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX], free_str[64];

    ucs_debug("gpumem: no room now for %zu bytes of %s memory on GPU %s: %s",
              size, (kind == GPUMEM_KIND_BAR) ? "BAR" : "GPU",
              gpumem_gpu_name(gpu, name),
              gpumem_gpu_vram_free_str(gpu, free_str, sizeof(free_str)));
}

static ucs_status_t
gpumem_alloc_locked(gpumem_gpu_t *gpu, gpumem_kind_t kind, size_t size,
                    unsigned flags, gpumem_region_t **region_p)
{
    unsigned map_flags = (flags & GPUMEM_ALLOC_UNCACHED) ?
                         GPUMEM_DRIVER_MAP_UNCACHED : 0;
    size_t page_size, rounded;
    gpumem_memory_t *memory;
    ucs_status_t status;
    char name[GPUMEM_TOPO_PCI_STR_MAX];

    status = gpumem_gpu_check_live(gpu, "alloc");
    if (status != UCS_OK) {
        return status;
    }

    if ((size == 0) || (size > (SIZE_MAX / 2))) {
        ucs_error("gpumem: alloc of %zu bytes on GPU %s: the size must be "
                  "positive and representable", size,
                  gpumem_gpu_name(gpu, name));
        return UCS_ERR_INVALID_PARAM;
    }

    gpumem_gpu_give_back_deferred(gpu);

    if (kind == GPUMEM_KIND_HOST) {
        page_size = ucs_get_page_size();
    } else if (size >= GPUMEM_LARGE_PAGE_FROM) {
        page_size = GPUMEM_LARGE_PAGE_SIZE;
    } else {
        page_size = GPUMEM_PAGE_SIZE;
    }
    rounded = ucs_align_up(size, page_size);

    status = gpumem_memory_create(gpu,
                                  (kind == GPUMEM_KIND_HOST) ?
                                  GPUMEM_MEMORY_SYSTEM : GPUMEM_MEMORY_VRAM,
                                  kind, rounded, &memory);
    if (status != UCS_OK) {
        return status;
    }

    if (kind == GPUMEM_KIND_HOST) {
        status = gpu->driver->ops->sys_alloc(gpu->dgpu, rounded, &memory->host);
    } else {
        status = gpu->driver->ops->mem_alloc(gpu->dgpu, rounded, page_size,
                                     kind == GPUMEM_KIND_BAR, &memory->vram);
        if (status == UCS_ERR_NO_MEMORY) {
            gpumem_alloc_no_room(gpu, kind, rounded);
        }
    }
    if (status != UCS_OK) {
        goto err_free_memory;
    }

    if (kind == GPUMEM_KIND_BAR) {
        status = gpu->driver->ops->bar_map(memory->vram, &memory->host);
        if (status != UCS_OK) {
            goto err_destroy_memory;
        }
    }

    status = gpumem_memory_map_first(gpu, memory, map_flags, 0, rounded,
                                     memory->host, 1, region_p);
    if (status == UCS_OK) {
        (*region_p)->asked = size;
    }
    return status;

err_destroy_memory:
    gpumem_memory_destroy(memory);
    return status;
err_free_memory:
    gpumem_memory_discard(memory);
    return status;
}

ucs_status_t gpumem_alloc(gpumem_gpu_t *gpu, gpumem_kind_t kind, size_t size,
                          unsigned flags, gpumem_region_t **region_p)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_alloc_locked(gpu, kind, size, flags, region_p);
    gpumem_gpu_unlock(gpu);
    return status;
}

static ucs_status_t
gpumem_map_host_locked(gpumem_gpu_t *gpu, void *addr, size_t size,
                       gpumem_region_t **region_p)
{
    size_t page_size = ucs_get_page_size();
    gpumem_memory_t *memory;
    ucs_status_t status;
    uintptr_t start, end;
    char name[GPUMEM_TOPO_PCI_STR_MAX];

    status = gpumem_gpu_check_live(gpu, "map_host");
    if (status != UCS_OK) {
        return status;
    }

    if ((size == 0) || (addr == NULL) ||
        ((uintptr_t)addr > (UINTPTR_MAX - size - page_size))) {
        ucs_error("gpumem: map_host of %zu bytes at %p on GPU %s: the "
                  "range must be non-empty and valid", size, addr,
                  gpumem_gpu_name(gpu, name));
        return UCS_ERR_INVALID_PARAM;
    }

    gpumem_gpu_give_back_deferred(gpu);

    start  = ucs_align_down((uintptr_t)addr, page_size);
    end    = ucs_align_up((uintptr_t)addr + size, page_size);
    status = gpumem_memory_create(gpu, GPUMEM_MEMORY_PINNED,
                                  GPUMEM_KIND_HOST, end - start, &memory);
    if (status != UCS_OK) {
        return status;
    }

    memory->host = (void*)start;
    status       = gpu->driver->ops->pin(gpu->dgpu, memory->host, memory->size);
    if (status != UCS_OK) {
        gpumem_memory_discard(memory);
        return status;
    }

    return gpumem_memory_map_first(gpu, memory, 0, (uintptr_t)addr - start,
                                   size, addr, 0, region_p);
}

ucs_status_t gpumem_map_host(gpumem_gpu_t *gpu, void *addr, size_t size,
                             gpumem_region_t **region_p)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_map_host_locked(gpu, addr, size, region_p);
    gpumem_gpu_unlock(gpu);
    return status;
}


/* This GPU's mapping of @a memory, or NULL */
static gpumem_mapping_t *gpumem_gpu_find_mapping(gpumem_gpu_t *gpu,
                                                 gpumem_memory_t *memory)
{
    gpumem_mapping_t *mapping;

    ucs_list_for_each(mapping, &gpu->mappings, list) {
        if (mapping->memory == memory) {
            return mapping;
        }
    }
    return NULL;
}

/* The addresses of @a memory in the machine's one space: where the driver
 * mapped it, where its owner reserved them, or its host address */
static uint64_t gpumem_memory_va(const gpumem_memory_t *memory)
{
    if ((memory->vram != NULL) && (memory->vram->fixed_va != 0)) {
        return memory->vram->fixed_va;
    } else if (memory->owner_va != 0) {
        return memory->owner_va;
    }
    return (uintptr_t)memory->host;
}

/* Whether @a gpu may map @a memory of another GPU: one machine and one
 * address space, and for GPU memory, reaches() */
static ucs_status_t gpumem_map_peer_check(gpumem_gpu_t *gpu,
                                          const gpumem_memory_t *memory)
{
    const gpumem_topo_reach_t *r = gpumem_gpu_reach(gpu);
    const gpumem_topo_reach_t *o = memory->reach;
    char r_name[GPUMEM_TOPO_PCI_STR_MAX], o_name[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_topo_verdict_t verdict;

    gpumem_pci_addr_str(&r->addr, r_name, sizeof(r_name));
    gpumem_pci_addr_str(&o->addr, o_name, sizeof(o_name));

    if (memory->type == GPUMEM_MEMORY_VRAM) {
        if ((r != o) && !gpumem_topo_reaches(r, o, 0, &verdict)) {
            ucs_error("gpumem: GPU %s does not reach the memory of GPU %s: "
                      "%s", r_name, o_name, verdict.reason);
            return UCS_ERR_UNREACHABLE;
        }
        return UCS_OK;
    }

    if (strncmp(r->machine, o->machine, sizeof(r->machine)) != 0) {
        ucs_error("gpumem: GPU %s (on '%s') cannot map system memory of "
                  "GPU %s's machine '%s'", r_name, r->machine, o_name,
                  o->machine);
        return UCS_ERR_UNREACHABLE;
    }
    if (r->space != o->space) {
        ucs_error("gpumem: page tables of GPU %s and GPU %s take addresses "
                  "from different spaces", r_name, o_name);
        return UCS_ERR_UNREACHABLE;
    }
    return UCS_OK;
}

/* Maps another GPU's memory into @a gpu's tables; for system memory, pins
 * its pages for this GPU first */
static ucs_status_t gpumem_map_peer_new(gpumem_gpu_t *gpu,
                                        gpumem_memory_t *memory,
                                        gpumem_mapping_t **mapping_p)
{
    ucs_status_t status;

    if (memory->type != GPUMEM_MEMORY_VRAM) {
        status = gpu->driver->ops->pin(gpu->dgpu, memory->host, memory->size);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = gpumem_mapping_create(gpu, memory, 0, mapping_p);
    if ((status != UCS_OK) && (memory->type != GPUMEM_MEMORY_VRAM)) {
        gpu->driver->ops->unpin(gpu->dgpu, memory->host, memory->size);
    }
    return status;
}

/* A peer's hold on @a memory ends; under the global lock. Memory whose
 * owner freed it goes back at the owner's next call, or now if the owner
 * was released. Returns memory to destroy now, or NULL. */
static gpumem_memory_t *gpumem_memory_drop_peer(gpumem_memory_t *memory)
{
    --memory->peers;
    if (!gpumem_memory_is_idle(memory)) {
        return NULL;
    }

    ucs_list_del(&memory->list);
    if (memory->owner->released || (memory->handle_len > 0)) {
        /* Imported memory is the exporter's: this process's hold ends */
        return memory;
    }
    ucs_list_add_tail(&memory->owner->deferred, &memory->list);
    return NULL;
}

static ucs_status_t
gpumem_map_peer_locked(gpumem_gpu_t *gpu, gpumem_region_t *region,
                       gpumem_region_t **region_p)
{
    char owner_name[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_region_t *source, *mapped;
    gpumem_mapping_t *mapping;
    gpumem_memory_t *memory, *idle;
    ucs_status_t status;
    size_t offset, size, asked;
    uint64_t source_id;
    void *host;

    status = gpumem_gpu_check_live(gpu, "map_peer");
    if (status != UCS_OK) {
        return status;
    }

    gpumem_gpu_give_back_deferred(gpu);

    /* Read and count the other GPU's region under the lock */
    gpumem_mem_global_lock();
    if (!gpumem_region_is_live(region)) {
        gpumem_mem_global_unlock();
        ucs_error("gpumem: map_peer of region %p, which was freed or never "
                  "given", region);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!gpumem_region_id_is_live(region->source, region->source_id)) {
        gpumem_mem_global_unlock();
        ucs_error("gpumem: map_peer of region %p, a mapping of region %p, "
                  "which its owner freed", region, region->source);
        return UCS_ERR_INVALID_PARAM;
    }

    /* A region map_peer gave maps the region its owner gave: where the GPU
     * that mapped it was released, that region's memory is still the
     * owner's to map */
    mapped = (region->mapping == NULL) ? region->source : region;
    if ((mapped->mapping == NULL) ||
        mapped->mapping->memory->owner->released) {
        /* Named under the lock: the owner may free its region meanwhile */
        gpumem_gpu_name((mapped->mapping == NULL) ? mapped->gpu :
                        mapped->mapping->memory->owner, owner_name);
        gpumem_mem_global_unlock();
        ucs_error("gpumem: map_peer of memory of GPU %s, whose function was "
                  "released: another open may have reset it", owner_name);
        return UCS_ERR_NOT_CONNECTED;
    }

    /* A region map_peer gave maps the owner's memory: the same memory */
    memory    = mapped->mapping->memory;
    offset    = mapped->address - mapped->mapping->va;
    size      = mapped->size;
    asked     = mapped->asked;
    host      = mapped->host;
    source    = mapped->source;
    source_id = mapped->source_id;

    mapping = gpumem_gpu_find_mapping(gpu, memory);
    if ((mapping == NULL) &&
        (gpumem_mem_index_overlap(gpu, gpumem_memory_va(memory),
                                  memory->size) != NULL)) {
        gpumem_mem_global_unlock();
        ucs_error("gpumem: map_peer of region %p on GPU %s: the GPU maps "
                  "other memory at its addresses 0x%lx+%zu", region,
                  gpumem_gpu_name(gpu, owner_name),
                  (unsigned long)gpumem_memory_va(memory), memory->size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (mapping == NULL) {
        ++memory->peers; /* Held from before the tables point there */
    }
    gpumem_mem_global_unlock();

    if (mapping == NULL) {
        status = gpumem_map_peer_check(gpu, memory);
        if (status == UCS_OK) {
            status = gpumem_map_peer_new(gpu, memory, &mapping);
        }
        if (status != UCS_OK) {
            gpumem_mem_global_lock();
            idle = gpumem_memory_drop_peer(memory);
            gpumem_mem_global_unlock();
            if (idle != NULL) {
                gpumem_memory_destroy(idle);
            }
            return status;
        }
    }

    status = gpumem_region_create(mapping, mapping->va + offset, size, host,
                                  0, source, source_id, region_p);
    if (status == UCS_OK) {
        (*region_p)->asked = asked;
    }
    if ((status != UCS_OK) && (mapping->refcount == 0)) {
        gpu->driver->ops->pt_unmap(gpu->dgpu, mapping->va, mapping->va_size);
        gpumem_mapping_destroy(mapping);
        gpumem_mem_global_lock();
        idle = gpumem_memory_drop_peer(memory);
        gpumem_mem_global_unlock();
        if (idle != NULL) {
            gpumem_memory_destroy(idle);
        }
    }
    return status;
}

ucs_status_t gpumem_map_peer(gpumem_gpu_t *gpu, gpumem_region_t *region,
                             gpumem_region_t **region_p)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_map_peer_locked(gpu, region, region_p);
    gpumem_gpu_unlock(gpu);
    return status;
}


/* The owner's last region over its own memory is gone; under the global
 * lock. Returns the memory to destroy now, or NULL if a peer keeps it. */
static gpumem_memory_t *gpumem_memory_owner_done(gpumem_memory_t *memory)
{
    memory->owner_done = 1;
    if (!gpumem_memory_is_idle(memory)) {
        return NULL;
    }
    ucs_list_del(&memory->list);
    return memory;
}

/* The last region over @a mapping was freed: unmap it and give back what
 * the GPU holds for it */
static void gpumem_mapping_unmap_last(gpumem_mapping_t *mapping)
{
    gpumem_gpu_t *gpu       = mapping->gpu;
    gpumem_memory_t *memory = mapping->memory;
    int is_owner            = (memory->owner == gpu);
    int peer_pin            = !is_owner &&
                              (memory->type != GPUMEM_MEMORY_VRAM);
    gpumem_memory_t *idle   = NULL;
    ucs_status_t status;
    int reserved;

    gpumem_mem_global_lock();
    reserved = memory->reserved;
    gpumem_mem_global_unlock();

    if (reserved && is_owner) {
        /* Reserved for a bus client: nothing goes back, and no later
         * allocation takes the memory (a client reaches it at its physical
         * addresses: another GPU's mapping of it goes as any other) */
        gpumem_mem_index_del(mapping);
        ucs_list_add_tail(&gpu->kept, &mapping->list);
        return;
    }

    status = gpu->driver->ops->pt_unmap(gpu->dgpu, mapping->va,
                                        mapping->va_size);
    if (status != UCS_OK) {
        /* The GPU may still reach the memory: keep it and its addresses
         * until the give-back after the release */
        ucs_debug("gpumem: flush of %zu bytes at 0x%lx not confirmed: kept "
                  "until the GPU's release", mapping->va_size,
                  (unsigned long)mapping->va);
        gpumem_mem_index_del(mapping);
        ucs_list_add_tail(&gpu->kept, &mapping->list);
        if (memory->owner != gpu) {
            /* None of it goes back before the owner's release; after it,
             * the memory goes with this GPU's hold, at its own release */
            gpumem_mem_global_lock();
            if (!memory->owner->released) {
                memory->tainted = 1;
            }
            gpumem_mem_global_unlock();
        }
        return;
    }

    /* A peer's pin of system memory goes before its hold on the memory,
     * after which the owner may give the memory back at once */
    if (peer_pin) {
        gpu->driver->ops->unpin(gpu->dgpu, memory->host, memory->size);
    }

    gpumem_mem_global_lock();
    if (is_owner) {
        idle = gpumem_memory_owner_done(memory);
        if (idle == NULL) {
            /* Peers map it: its addresses stay with it, taken from the
             * GPU's mappings, until it goes back */
            memory->owner_mapping = mapping;
        }
    } else {
        idle = gpumem_memory_drop_peer(memory);
    }
    gpumem_mem_global_unlock();

    /* A peer's memory may be gone now, given back by its owner */
    if (is_owner && (idle == NULL)) {
        gpumem_mem_index_del(mapping);
        return;
    }

    gpumem_mapping_destroy(mapping);
    if (idle != NULL) {
        gpumem_memory_destroy(idle);
    }
}

static ucs_status_t
gpumem_free_locked(gpumem_gpu_t *gpu, gpumem_region_t *region)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_mapping_t *mapping;

    gpumem_mem_global_lock();
    if (!gpumem_region_is_live(region) || (region->gpu != gpu)) {
        gpumem_mem_global_unlock();
        ucs_error("gpumem: free of region %p, which is not a region of GPU "
                  "%s or was freed", region, gpumem_gpu_name(gpu, name));
        return UCS_ERR_INVALID_PARAM;
    }
    gpumem_region_forget(region);
    gpumem_mem_global_unlock();

    mapping = region->mapping;
    ucs_free(region);

    if (mapping == NULL) {
        /* Released: the give-back gave back everything, nothing to write */
        return UCS_OK;
    }

    gpumem_gpu_give_back_deferred(gpu);
    if (--mapping->refcount == 0) {
        gpumem_mapping_unmap_last(mapping);
    }
    return UCS_OK;
}

ucs_status_t gpumem_free(gpumem_gpu_t *gpu, gpumem_region_t *region)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_free_locked(gpu, region);
    gpumem_gpu_unlock(gpu);
    return status;
}


/* At release, a mapping of this GPU's tables ends without a table write
 * where the function masters the bus no more, else unmapped first if
 * @a mapped (not one whose unmap was tried already, or kept for a bus
 * client) */
static void gpumem_mapping_drop_at_release(gpumem_gpu_t *gpu,
                                           gpumem_mapping_t *mapping,
                                           int mapped)
{
    const gpumem_driver_ops_t *ops = gpu->driver->ops;
    gpumem_memory_t *memory        = mapping->memory;
    gpumem_memory_t *idle          = NULL;
    int keep_va                    = 0;

    if (mapped && (ops->flags & GPUMEM_DRIVER_FLAG_RELEASE_UNMAPS) &&
        (ops->pt_unmap(gpu->dgpu, mapping->va, mapping->va_size) !=
         UCS_OK)) {
        ucs_debug("gpumem: unmap of %zu bytes at 0x%lx at the release not "
                  "confirmed", mapping->va_size, (unsigned long)mapping->va);
    }

    /* This GPU's pin of another GPU's system memory, as its free would,
     * before its hold on the memory goes */
    if ((memory->owner != gpu) && (memory->type != GPUMEM_MEMORY_VRAM)) {
        gpu->driver->ops->unpin(gpu->dgpu, memory->host, memory->size);
    }

    gpumem_mem_global_lock();
    if (memory->owner == gpu) {
        memory->owner_done = 1;
        keep_va            = mapping->va_owned && (memory->peers > 0) &&
                             (memory->owner_mapping == NULL);
        if (keep_va) {
            /* Other GPUs map it at these addresses: their holds keep them
             * until the memory goes */
            memory->owner_mapping = mapping;
        }
    } else {
        idle = gpumem_memory_drop_peer(memory);
    }
    gpumem_mem_global_unlock();

    if (keep_va) {
        if (mapping->listed) {
            gpumem_mem_index_del(mapping);
        } else {
            ucs_list_del(&mapping->list);
        }
        return;
    }

    gpumem_mapping_destroy(mapping);
    if (idle != NULL) {
        gpumem_memory_destroy(idle);
    }
}

static void
gpumem_gpu_release_locked(gpumem_gpu_t *gpu)
{
    gpumem_region_t *region;
    gpumem_mapping_t *mapping, *mapping_tmp;
    gpumem_memory_t *memory, *memory_tmp;
    UCS_LIST_HEAD(idle);

    if (gpu->released) {
        return;
    }

    /* Bus mastering off first: nothing is given back while the GPU may
     * still reach it */
    gpu->driver->ops->release(gpu->dgpu);

    /* Regions out stay valid handles, over nothing: their free gives back
     * nothing more */
    gpumem_mem_global_lock();
    gpu->released = 1;
    ucs_list_for_each(region, &gpu->regions, list) {
        if (region->mapping != NULL) {
            ucs_list_del(&region->in_mapping);
            region->mapping = NULL;
        }
    }
    gpumem_mem_global_unlock();

    ucs_list_for_each_safe(mapping, mapping_tmp, &gpu->mappings, list) {
        gpumem_mapping_drop_at_release(gpu, mapping, 1);
    }
    ucs_list_for_each_safe(mapping, mapping_tmp, &gpu->kept, list) {
        gpumem_mapping_drop_at_release(gpu, mapping, 0);
    }

    /* Its own memory goes back, but what another GPU maps (or may still
     * write) or a bus client was given */
    gpumem_mem_global_lock();
    ucs_list_splice_tail(&idle, &gpu->deferred);
    ucs_list_head_init(&gpu->deferred);
    ucs_list_for_each_safe(memory, memory_tmp, &gpu->memories, list) {
        memory->tainted = 0;
        if (gpumem_memory_is_idle(memory)) {
            ucs_list_del(&memory->list);
            ucs_list_add_tail(&idle, &memory->list);
        } else if (memory->peers > 0) {
            /* Peers keep it: the function stays taken until they go */
            gpu->reserved = 1;
        }
    }
    gpumem_mem_global_unlock();

    /* No other open, of another process too, takes the GPU while its
     * memory is still reached */
    gpumem_gpu_tell_taken(gpu);

    ucs_list_for_each_safe(memory, memory_tmp, &idle, list) {
        ucs_list_del(&memory->list);
        gpumem_memory_destroy(memory);
    }
}

void gpumem_gpu_release(gpumem_gpu_t *gpu)
{
    gpumem_gpu_lock(gpu);
    gpumem_gpu_release_locked(gpu);
    gpumem_gpu_unlock(gpu);
}

int gpumem_gpu_is_reserved(gpumem_gpu_t *gpu)
{
    int reserved;

    gpumem_mem_global_lock();
    reserved = gpu->bus_given;
    gpumem_mem_global_unlock();
    return reserved;
}

void gpumem_gpu_destroy(gpumem_gpu_t *gpu)
{
    gpumem_region_t *region, *region_tmp;
    gpumem_memory_t *memory, *tmp;
    UCS_LIST_HEAD(idle);
    int in_use = 0;

    gpumem_gpu_lock(gpu);
    gpumem_gpu_release_locked(gpu);

    /* What no other GPU maps goes back now; what one maps goes at its last
     * free, and the object with the last of it */
    gpumem_mem_global_lock();
    ucs_list_for_each_safe(region, region_tmp, &gpu->regions, list) {
        gpumem_region_forget(region);
        ucs_free(region);
    }
    ucs_list_for_each_safe(memory, tmp, &gpu->memories, list) {
        if ((memory->peers == 0) && !memory->reserved) {
            ucs_list_del(&memory->list);
            ucs_list_add_tail(&idle, &memory->list);
        } else {
            in_use = 1;
        }
    }
    if (in_use) {
        ucs_list_add_tail(&gpumem_outliving_gpus, &gpu->outliving);
    }
    gpumem_mem_global_unlock();
    gpumem_gpu_unlock(gpu);

    if (in_use) {
        ucs_debug("gpumem: GPU %u destroyed while another GPU maps its "
                  "memory or a bus client was given it: that memory goes at "
                  "the other GPU's last free, or at the process's exit",
                  gpu->index);
    }

    ucs_list_for_each_safe(memory, tmp, &idle, list) {
        ucs_list_del(&memory->list);
        gpumem_memory_destroy(memory);
    }
    gpumem_gpu_put(gpu);
}

/* The function at bus address @a client_addr of the machine @a topo
 * describes, or NULL, logged, naming it */
static const gpumem_topo_reach_t *
gpumem_bus_client(gpumem_gpu_t *gpu, const gpumem_topo_t *topo,
                  const char *client_addr)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_dev_t *dev;
    gpumem_pci_addr_t addr;

    gpumem_gpu_name(gpu, name);
    if (gpumem_pci_addr_parse(client_addr, &addr) != UCS_OK) {
        ucs_error("gpumem: bus addresses of GPU %s's memory for '%s': it is "
                  "not a bus address (domain:bus:device.function)", name,
                  client_addr);
        return NULL;
    }

    dev = gpumem_topo_find(topo, &addr);
    if (dev == NULL) {
        ucs_error("gpumem: bus addresses of GPU %s's memory for %s: it names "
                  "no function of machine '%s' (its GPUs and NICs)", name,
                  client_addr, gpumem_gpu_reach(gpu)->machine);
        return NULL;
    }
    return &dev->reach;
}

/* Until the process exits, the memory and the GPU are the client's */
static void gpumem_bus_reserve(gpumem_gpu_t *gpu, gpumem_memory_t *memory)
{
    gpumem_mem_global_lock();
    memory->reserved = 1;
    gpu->reserved    = 1;
    gpu->bus_given   = 1;
    gpumem_mem_global_unlock();
}

/* System memory lies at its physical addresses, which the kernel tells a
 * process that has CAP_SYS_ADMIN. The owner pins its pages through the
 * driver first, as map_host does, so that no peer's unpin undoes the pin,
 * and locks them, so that they are in memory whether or not the driver's
 * pin faults them in (a count on the cuda driver's own pinned memory). Both
 * last to the process's exit, as the reservation; asking again pins
 * nothing more. */
static ucs_status_t
gpumem_bus_system(gpumem_gpu_t *gpu, gpumem_memory_t *memory,
                  const gpumem_topo_reach_t *client, const char *client_name,
                  gpumem_bus_range_t **ranges_p, unsigned *count_p)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX], why[GPUMEM_TOPO_REASON_MAX];
    size_t page_size = ucs_get_page_size();
    gpumem_topo_verdict_t verdict;
    ucs_status_t status;
    int pinned;

    gpumem_gpu_name(gpu, name);
    if (!gpumem_topo_dma_reaches_system(client, gpumem_gpu_reach(gpu), 0,
                                        &verdict)) {
        ucs_error("gpumem: %s does not reach system memory of GPU %s at its "
                  "physical addresses: %s", client_name, name,
                  verdict.reason);
        return UCS_ERR_UNREACHABLE;
    }

    status = gpumem_phys_visible(why, sizeof(why));
    if (status != UCS_OK) {
        ucs_error("gpumem: bus addresses of system memory of GPU %s for %s: "
                  "%s", name, client_name, why);
        return status;
    }

    if ((((uintptr_t)memory->host | memory->size) & (page_size - 1)) != 0) {
        ucs_error("gpumem: bus addresses of system memory of GPU %s for %s: "
                  "the %s driver gave %p+%zu, not whole pages", name,
                  client_name, gpu->driver->ops->name, memory->host,
                  memory->size);
        return UCS_ERR_UNSUPPORTED;
    }

    gpumem_mem_global_lock();
    pinned = memory->reserved;
    gpumem_mem_global_unlock();
    if (!pinned) {
        status = gpu->driver->ops->pin(gpu->dgpu, memory->host, memory->size);
        if (status != UCS_OK) {
            ucs_error("gpumem: bus addresses of system memory of GPU %s for "
                      "%s: its pages cannot be pinned: %s", name, client_name,
                      ucs_status_string(status));
            return status;
        }
    }

    if (mlock(memory->host, memory->size) != 0) {
        ucs_snprintf_zero(why, sizeof(why), "mlock(%p, %zu): %s",
                          memory->host, memory->size, strerror(errno));
        status = UCS_ERR_EXCEEDS_LIMIT;
    } else {
        status = gpumem_phys_ranges(memory->host, memory->size, ranges_p,
                                    count_p, why, sizeof(why));
    }
    if (status != UCS_OK) {
        ucs_error("gpumem: bus addresses of system memory of GPU %s for %s: "
                  "%s", name, client_name, why);
        if (!pinned) {
            gpu->driver->ops->unpin(gpu->dgpu, memory->host, memory->size);
        }
        return status;
    }

    gpumem_bus_reserve(gpu, memory);
    return UCS_OK;
}

static ucs_status_t
gpumem_bus_locked(gpumem_gpu_t *gpu, gpumem_region_t *region,
                  const gpumem_topo_t *topo, const char *client_addr,
                  gpumem_bus_range_t **ranges_p, unsigned *count_p)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX], client_name[GPUMEM_TOPO_PCI_STR_MAX];
    char reason[GPUMEM_TOPO_REASON_MAX];
    const gpumem_topo_reach_t *client;
    gpumem_topo_verdict_t verdict;
    gpumem_nic_facts_t facts;
    gpumem_bus_range_t *range;
    gpumem_memory_t *memory;
    int live;

    gpumem_mem_global_lock();
    live = gpumem_region_is_live(region) && (region->gpu == gpu) &&
           region->from_alloc && (region->mapping != NULL);
    gpumem_mem_global_unlock();
    if (!live || gpu->released) {
        ucs_error("gpumem: bus of region %p: not a live region that alloc "
                  "gave GPU %s, or the GPU was released", region,
                  gpumem_gpu_name(gpu, name));
        return UCS_ERR_INVALID_PARAM;
    }

    client = gpumem_bus_client(gpu, topo, client_addr);
    if (client == NULL) {
        return UCS_ERR_NO_DEVICE;
    }

    gpumem_gpu_name(gpu, name);
    gpumem_pci_addr_str(&client->addr, client_name, sizeof(client_name));
    memory = region->mapping->memory;

    if (memory->type != GPUMEM_MEMORY_VRAM) {
        return gpumem_bus_system(gpu, memory, client, client_name, ranges_p,
                                 count_p);
    }

    if (gpu->driver->ops->flags & GPUMEM_DRIVER_FLAG_NO_PHYS) {
        ucs_error("gpumem: bus addresses of GPU %s's memory for %s: the %s "
                  "driver does not tell where its memory lies (a NIC "
                  "reaches it by dma-buf)", name, client_name,
                  gpu->driver->ops->name);
        return UCS_ERR_UNSUPPORTED;
    }

    if (!gpumem_topo_dma_reaches(client, gpumem_gpu_reach(gpu), 0,
                                 &verdict)) {
        ucs_error("gpumem: %s does not reach the memory of GPU %s by DMA: "
                  "%s", client_name, name, verdict.reason);
        return UCS_ERR_UNREACHABLE;
    }

    /* The BAR, by the rule a NIC's registration takes it */
    facts.driver      = gpu->driver->ops->name;
    facts.dmabuf      = UCS_ERR_UNSUPPORTED;
    facts.phys_known  = 1; /* NO_PHYS was refused above */
    facts.vram_offset = memory->vram->phys;
    facts.vram_size   = memory->size;
    facts.bar_size    = gpu->driver->ops->bar_size(gpu->dgpu);
    if (gpumem_nic_choose(GPUMEM_NIC_ALLOW_BAR, "bus addresses", &facts,
                          reason, sizeof(reason)) == GPUMEM_NIC_WAY_NONE) {
        ucs_error("gpumem: %s does not reach the memory of GPU %s by DMA: "
                  "%s", client_name, name, reason);
        return UCS_ERR_UNREACHABLE;
    }

    range = ucs_malloc(sizeof(*range), "gpumem_bus_range");
    if (range == NULL) {
        ucs_error("gpumem: failed to allocate a bus range");
        return UCS_ERR_NO_MEMORY;
    }

    range->address = gpu->driver->ops->bar_bus_addr(gpu->dgpu) +
                     memory->vram->phys;
    range->length  = memory->size;

    gpumem_bus_reserve(gpu, memory);
    *ranges_p        = range;
    *count_p         = 1;
    return UCS_OK;
}

ucs_status_t gpumem_bus(gpumem_gpu_t *gpu, gpumem_region_t *region,
                        const gpumem_topo_t *topo, const char *client,
                        gpumem_bus_range_t **ranges_p, unsigned *count_p)
{
    ucs_status_t status;

    if ((topo == NULL) || (client == NULL) || (ranges_p == NULL) ||
        (count_p == NULL)) {
        ucs_error("gpumem: bus with a NULL topology, client or output "
                  "pointer");
        return UCS_ERR_INVALID_PARAM;
    }

    gpumem_gpu_lock(gpu);
    status = gpumem_bus_locked(gpu, region, topo, client, ranges_p, count_p);
    gpumem_gpu_unlock(gpu);
    return status;
}


/*
 * The wire form of an export: a header naming the owner GPU, then the
 * driver's handle. All integers little-endian, as on every machine that
 * shares memory with this one.
 */
#define GPUMEM_EXPORT_MAGIC    0x6770756dU  /* "gpum" */
#define GPUMEM_EXPORT_VERSION  1

typedef struct UCS_S_PACKED gpumem_export_header {
    uint32_t magic;
    uint8_t  version;
    uint8_t  fn;
    uint8_t  dev;
    uint8_t  bus;
    uint16_t domain;
    uint16_t driver_len;    /* Bytes of the driver's handle that follow */
    uint32_t reserved;
} gpumem_export_header_t;

_Static_assert(sizeof(gpumem_export_header_t) <=
               GPUMEM_EXPORT_MAX - GPUMEM_DRIVER_EXPORT_MAX,
               "an export header fits before the driver's handle");

static void gpumem_export_header_fill(gpumem_export_header_t *header,
                                      const gpumem_topo_reach_t *owner,
                                      size_t driver_len)
{
    header->magic      = GPUMEM_EXPORT_MAGIC;
    header->version    = GPUMEM_EXPORT_VERSION;
    header->domain     = owner->addr.domain;
    header->bus        = owner->addr.bus;
    header->dev        = owner->addr.dev;
    header->fn         = owner->addr.fn;
    header->driver_len = driver_len;
    header->reserved   = 0;
}

static ucs_status_t
gpumem_export_locked(gpumem_region_t *region, void *buf, size_t *length_p)
{
    gpumem_export_header_t *header = buf;
    gpumem_memory_t *memory;
    const gpumem_topo_reach_t *owner;
    size_t driver_len;
    ucs_status_t status;

    gpumem_mem_global_lock();
    if (!gpumem_region_is_live(region) || (region->mapping == NULL)) {
        gpumem_mem_global_unlock();
        ucs_error("gpumem: export of region %p, which was freed or whose "
                  "GPU was released", region);
        return UCS_ERR_INVALID_PARAM;
    }
    memory = region->mapping->memory;
    gpumem_mem_global_unlock();

    if (memory->type != GPUMEM_MEMORY_VRAM) {
        ucs_error("gpumem: export of system memory: only GPU memory is "
                  "shared by handle");
        return UCS_ERR_UNSUPPORTED;
    }

    if (memory->handle_len > 0) {
        /* Imported: pass on the exporter's own handle */
        memcpy(buf, memory->handle, memory->handle_len);
        *length_p = memory->handle_len;
        return UCS_OK;
    }

    status = memory->owner->driver->ops->mem_export(memory->vram, header + 1,
                                            &driver_len);
    if (status != UCS_OK) {
        return status;
    }

    owner = gpumem_gpu_reach(memory->owner);
    gpumem_export_header_fill(header, owner, driver_len);
    *length_p = sizeof(*header) + driver_len;
    return UCS_OK;
}

ucs_status_t gpumem_export(gpumem_region_t *region, void *buf,
                           size_t *length_p)
{
    ucs_status_t status;
    gpumem_gpu_t *gpu;

    gpu = gpumem_region_lock_gpu(region, "export");
    if (gpu == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_export_locked(region, buf, length_p);
    gpumem_region_unlock_gpu(gpu);
    return status;
}

static ucs_status_t
gpumem_export_addr_locked(gpumem_gpu_t *gpu, const void *address, void *buf,
                          size_t *length_p, uint64_t *base_p, size_t *size_p)
{
    gpumem_export_header_t *header = buf;
    gpumem_driver_addr_attr_t attr;
    size_t driver_len;
    ucs_status_t status;

    if (gpu->driver->ops->addr_export == NULL) {
        ucs_debug("gpumem: the %s driver has no handles of the "
                  "application's own device memory", gpu->driver->ops->name);
        return UCS_ERR_UNSUPPORTED;
    }

    status = gpu->driver->ops->addr_export(gpu->driver, address, header + 1,
                                   &driver_len, &attr);
    if (status != UCS_OK) {
        return status;
    }

    if (attr.gpu_index != gpu->index) {
        ucs_error("gpumem: export of %p as memory of GPU %u: it is GPU "
                  "%u's", address, gpu->index, attr.gpu_index);
        return UCS_ERR_INVALID_PARAM;
    }

    gpumem_export_header_fill(header, gpumem_gpu_reach(gpu), driver_len);
    *length_p = sizeof(*header) + driver_len;
    *base_p   = attr.base;
    *size_p   = attr.size;
    return UCS_OK;
}

ucs_status_t gpumem_export_addr(gpumem_gpu_t *gpu, const void *address,
                                void *buf, size_t *length_p,
                                uint64_t *base_p, size_t *size_p)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_export_addr_locked(gpu, address, buf, length_p, base_p,
                                       size_p);
    gpumem_gpu_unlock(gpu);
    return status;
}


/* The GPU of this process's driver that a handle's header names */
static ucs_status_t gpumem_import_owner(gpumem_gpu_t *gpu, const void *buf,
                                        size_t length,
                                        gpumem_driver_gpu_t **owner_p)
{
    const gpumem_export_header_t *header = buf;
    gpumem_driver_t *driver              = gpu->driver;
    gpumem_pci_addr_t addr;
    char name[GPUMEM_TOPO_PCI_STR_MAX];
    unsigned i;

    if ((length < sizeof(*header)) || (length > GPUMEM_EXPORT_MAX)) {
        ucs_error("gpumem: import of a %zu-byte handle: a handle has %zu to "
                  "%d bytes", length, sizeof(*header), GPUMEM_EXPORT_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((header->magic != GPUMEM_EXPORT_MAGIC) ||
        (header->version != GPUMEM_EXPORT_VERSION) ||
        (header->reserved != 0)) {
        ucs_error("gpumem: import of a handle with magic 0x%x version %u: "
                  "not a gpumem handle of version %d", header->magic,
                  header->version, GPUMEM_EXPORT_VERSION);
        return UCS_ERR_INVALID_PARAM;
    }
    if (header->driver_len != length - sizeof(*header)) {
        ucs_error("gpumem: import of a handle whose driver part claims %u "
                  "bytes of the %zu that follow its header",
                  header->driver_len, length - sizeof(*header));
        return UCS_ERR_INVALID_PARAM;
    }

    addr.domain = header->domain;
    addr.bus    = header->bus;
    addr.dev    = header->dev;
    addr.fn     = header->fn;
    for (i = 0; i < driver->ops->num_gpus(driver); ++i) {
        if (gpumem_pci_addr_equal(
                    &driver->ops->reach(driver->ops->gpu(driver, i))->addr,
                    &addr)) {
            *owner_p = driver->ops->gpu(driver, i);
            return UCS_OK;
        }
    }

    ucs_error("gpumem: import of memory of GPU %s, which the %s driver of "
              "this process does not have",
              gpumem_pci_addr_str(&addr, name, sizeof(name)),
              driver->ops->name);
    return UCS_ERR_NO_DEVICE;
}

/* This process's memory object for an imported handle: an existing one, or
 * NULL; under the global lock */
static gpumem_memory_t *gpumem_import_find(gpumem_gpu_t *gpu, const void *buf,
                                           size_t length)
{
    gpumem_mapping_t *mapping;

    ucs_list_for_each(mapping, &gpu->mappings, list) {
        if ((mapping->memory->handle_len == length) &&
            !memcmp(mapping->memory->handle, buf, length)) {
            return mapping->memory;
        }
    }
    return NULL;
}

static ucs_status_t
gpumem_import_locked(gpumem_gpu_t *gpu, const void *buf, size_t length,
                     gpumem_region_t **region_p)
{
    const gpumem_export_header_t *header = buf;
    gpumem_driver_gpu_t *owner_dgpu;
    gpumem_driver_mem_t *vram;
    gpumem_mapping_t *mapping;
    gpumem_memory_t *memory;
    ucs_status_t status;

    status = gpumem_gpu_check_live(gpu, "import");
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_import_owner(gpu, buf, length, &owner_dgpu);
    if (status != UCS_OK) {
        return status;
    }

    gpumem_gpu_give_back_deferred(gpu);

    /* The same memory imported again: a new region over its mapping */
    gpumem_mem_global_lock();
    memory  = gpumem_import_find(gpu, buf, length);
    mapping = (memory != NULL) ? gpumem_gpu_find_mapping(gpu, memory) : NULL;
    gpumem_mem_global_unlock();
    if (mapping != NULL) {
        /* Still the memory the handle named */
        if (gpu->driver->ops->mem_check != NULL) {
            status = gpu->driver->ops->mem_check(memory->vram);
            if (status != UCS_OK) {
                return status;
            }
        }
        return gpumem_region_create(mapping, mapping->va, memory->size, NULL,
                                    0, NULL, 0, region_p);
    }

    status = gpu->driver->ops->mem_import(owner_dgpu, header + 1,
                                          header->driver_len, &vram);
    if (status != UCS_OK) {
        return status;
    }

    /* This GPU holds the imported memory: its last region's free ends the
     * hold (the driver's free of an import) */
    status = gpumem_memory_create(gpu, GPUMEM_MEMORY_VRAM, GPUMEM_KIND_GPU,
                                  vram->size, &memory);
    if (status != UCS_OK) {
        goto err_free_vram;
    }

    memory->vram       = vram;
    memory->reach      = gpu->driver->ops->reach(owner_dgpu);
    memory->handle_len = length;
    memcpy(memory->handle, buf, length);

    status = gpumem_map_peer_check(gpu, memory);
    if (status != UCS_OK) {
        goto err_free_memory;
    }

    status = gpumem_mapping_create(gpu, memory, 0, &mapping);
    if (status != UCS_OK) {
        goto err_free_memory;
    }

    status = gpumem_region_create(mapping, mapping->va, memory->size, NULL, 0,
                                  NULL, 0, region_p);
    if (status != UCS_OK) {
        gpu->driver->ops->pt_unmap(gpu->dgpu, mapping->va, mapping->va_size);
        gpumem_mapping_destroy(mapping);
        goto err_free_memory;
    }

    gpumem_memory_own(memory);
    return UCS_OK;

err_free_memory:
    gpumem_memory_discard(memory);
err_free_vram:
    gpu->driver->ops->mem_free(vram);
    return status;
}

ucs_status_t gpumem_import(gpumem_gpu_t *gpu, const void *buf, size_t length,
                           gpumem_region_t **region_p)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_import_locked(gpu, buf, length, region_p);
    gpumem_gpu_unlock(gpu);
    return status;
}

ucs_status_t gpumem_region_check(gpumem_region_t *region)
{
    gpumem_memory_t *memory = NULL;
    ucs_status_t status     = UCS_OK;
    gpumem_gpu_t *gpu;

    gpu = gpumem_region_lock_gpu(region, "check");
    if (gpu == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* A free in another thread may have come before the GPU's lock */
    gpumem_mem_global_lock();
    if (!gpumem_region_is_live(region)) {
        gpumem_mem_global_unlock();
        gpumem_region_unlock_gpu(gpu);
        ucs_error("gpumem: check of region %p, which was freed", region);
        return UCS_ERR_INVALID_PARAM;
    }
    gpumem_mem_global_unlock();

    if (region->mapping != NULL) {
        memory = region->mapping->memory;
    }
    if ((memory != NULL) && (memory->handle_len > 0) &&
        (memory->owner->driver->ops->mem_check != NULL)) {
        status = memory->owner->driver->ops->mem_check(memory->vram);
    }
    gpumem_region_unlock_gpu(gpu);
    return status;
}

/* The GPU's regions and mappings change only under its lock */
gpumem_region_t *gpumem_find_region(gpumem_gpu_t *gpu, uint64_t address)
{
    gpumem_region_t *region;

    gpumem_gpu_lock(gpu);
    region = gpumem_mem_index_find_region(gpu, address);
    gpumem_gpu_unlock(gpu);
    return region;
}

/* The bytes asked for where they hold @a address, else all the region's: a
 * range that holds the address either way */
static size_t gpumem_region_range_size(const gpumem_region_t *region,
                                       uint64_t address)
{
    return ((address - region->address) < region->asked) ? region->asked :
                                                           region->size;
}

ucs_status_t gpumem_find_range(gpumem_gpu_t *gpu, uint64_t address,
                               uint64_t *base_p, size_t *size_p)
{
    gpumem_region_t *region;
    ucs_status_t status = UCS_ERR_NO_ELEM;

    gpumem_gpu_lock(gpu);
    region = gpumem_mem_index_find_region(gpu, address);
    if (region != NULL) {
        *base_p = region->address;
        *size_p = gpumem_region_range_size(region, address);
        status  = UCS_OK;
    }
    gpumem_gpu_unlock(gpu);
    return status;
}

/* The region of @a gpu that holds @a address, as gpumem_find_allocation()
 * gives it */
static int gpumem_find_own_allocation(gpumem_gpu_t *gpu, uint64_t address,
                                      uint64_t *base_p, size_t *size_p,
                                      size_t *asked_p)
{
    gpumem_region_t *region;

    gpumem_gpu_lock(gpu);
    region = gpumem_mem_index_find_region(gpu, address);
    if (region != NULL) {
        *base_p = region->address;
        *size_p = region->size;
        if (asked_p != NULL) {
            *asked_p = gpumem_region_range_size(region, address);
        }
    }
    gpumem_gpu_unlock(gpu);
    return region != NULL;
}

ucs_status_t gpumem_find_allocation(gpumem_gpu_t *gpu, uint64_t address,
                                    uint64_t *base_p, size_t *size_p,
                                    size_t *asked_p, int *own_p)
{
    const gpumem_driver_ops_t *ops = gpu->driver->ops;
    gpumem_driver_addr_attr_t attr;

    if (gpumem_find_own_allocation(gpu, address, base_p, size_p, asked_p)) {
        *own_p = 1;
        return UCS_OK;
    }

    if ((ops->addr_query == NULL) ||
        (ops->addr_query(gpu->driver, (const void*)(uintptr_t)address,
                         &attr) != UCS_OK) ||
        (attr.gpu_index != gpu->index)) {
        return UCS_ERR_NO_ELEM;
    }

    *base_p = attr.base;
    *size_p = attr.size;
    *own_p  = 0;
    if (asked_p != NULL) {
        *asked_p = attr.size;
    }
    return UCS_OK;
}

int gpumem_device_addr_allocation(gpumem_driver_t *driver,
                                  gpumem_gpu_t *const *gpus, uint64_t address,
                                  uint64_t *base_p, size_t *asked_p,
                                  int *found_p)
{
    const gpumem_driver_ops_t *ops = driver->ops;
    gpumem_driver_addr_attr_t attr;
    size_t size;
    int index, own;

    if (ops->addr_query == NULL) {
        index    = gpumem_device_addr_gpu(driver, (const void*)(uintptr_t)
                                                          address);
        *found_p = (index >= 0) &&
                   (gpumem_find_allocation(gpus[index], address, base_p,
                                           &size, asked_p, &own) == UCS_OK);
        return index;
    }

    /* The driver's answer says both whose and which allocation */
    if (ops->addr_query(driver, (const void*)(uintptr_t)address, &attr) !=
        UCS_OK) {
        return -1;
    }

    *found_p = 1;
    if (!gpumem_find_own_allocation(gpus[attr.gpu_index], address, base_p,
                                    &size, asked_p)) {
        *base_p  = attr.base;
        *asked_p = attr.size;
    }
    return attr.gpu_index;
}

int gpumem_device_addr_gpu(gpumem_driver_t *driver, const void *address)
{
    unsigned index;

    if (!driver->ops->is_device_addr(driver, address, &index)) {
        return -1;
    }
    return index;
}

uint64_t gpumem_region_address(const gpumem_region_t *region)
{
    return region->address;
}

size_t gpumem_region_size(const gpumem_region_t *region)
{
    return region->size;
}

gpumem_kind_t gpumem_region_kind(const gpumem_region_t *region)
{
    return region->kind;
}

void *gpumem_region_host(const gpumem_region_t *region)
{
    return region->host;
}

gpumem_gpu_t *gpumem_region_gpu(const gpumem_region_t *region)
{
    return region->gpu;
}

static ucs_status_t
gpumem_region_vram_locked(gpumem_region_t *region, gpumem_driver_mem_t **vram_p,
                          size_t *offset_p)
{
    gpumem_mapping_t *mapping;

    gpumem_mem_global_lock();
    mapping = gpumem_region_is_live(region) ? region->mapping : NULL;
    gpumem_mem_global_unlock();
    if (mapping == NULL) {
        ucs_error("gpumem: VRAM of region %p, which was freed or whose GPU "
                  "was released", region);
        return UCS_ERR_INVALID_PARAM;
    }

    if (mapping->memory->type != GPUMEM_MEMORY_VRAM) {
        ucs_error("gpumem: VRAM of region %p, which is system memory",
                  region);
        return UCS_ERR_UNSUPPORTED;
    }

    /* A region lies within its mapping, which maps the memory from its
     * first byte */
    *vram_p   = mapping->memory->vram;
    *offset_p = region->address - mapping->va;
    return UCS_OK;
}

ucs_status_t gpumem_region_vram(gpumem_region_t *region,
                                gpumem_driver_mem_t **vram_p,
                                size_t *offset_p)
{
    ucs_status_t status;
    gpumem_gpu_t *gpu;

    gpu = gpumem_region_lock_gpu(region, "VRAM");
    if (gpu == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_region_vram_locked(region, vram_p, offset_p);
    gpumem_region_unlock_gpu(gpu);
    return status;
}

static void
gpumem_gpu_stats_locked(gpumem_gpu_t *gpu, gpumem_gpu_stats_t *stats)
{
    gpumem_mapping_t *mapping;
    gpumem_memory_t *memory;
    gpumem_region_t *region;

    memset(stats, 0, sizeof(*stats));
    gpumem_mem_global_lock();
    ucs_list_for_each(region, &gpu->regions, list) {
        ++stats->regions;
    }
    ucs_list_for_each(mapping, &gpu->mappings, list) {
        ++stats->mappings;
    }
    ucs_list_for_each(mapping, &gpu->kept, list) {
        ++stats->kept;
    }
    ucs_list_for_each(memory, &gpu->memories, list) {
        ++stats->memories;
        if (memory->type == GPUMEM_MEMORY_VRAM) {
            stats->vram_bytes += memory->size;
        }
    }
    ucs_list_for_each(memory, &gpu->deferred, list) {
        ++stats->memories;
        if (memory->type == GPUMEM_MEMORY_VRAM) {
            stats->vram_bytes += memory->size;
        }
    }
    gpumem_mem_global_unlock();
}

void gpumem_gpu_stats(gpumem_gpu_t *gpu, gpumem_gpu_stats_t *stats)
{
    gpumem_gpu_lock(gpu);
    gpumem_gpu_stats_locked(gpu, stats);
    gpumem_gpu_unlock(gpu);
}

