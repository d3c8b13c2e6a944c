/**
 * gpumem memory core: which of a GPU's mappings holds an address.
 *
 * A GPU's mappings at device addresses never overlap: each is indexed by
 * its address range in a UCS page table (ucs_pgtable), so that the look-up
 * on every copy and registration is a walk down a radix tree, not along a
 * list. Mappings at host addresses (system memory where the GPU reaches it
 * at its host address) may overlap, since each map_host maps anew: those,
 * and any the table cannot take, are found by a walk along the list.
 *
 * Under the lock of the mappings' GPU.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_mem_int.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


static ucs_pgt_dir_t *
gpumem_mem_index_dir_alloc(const ucs_pgtable_t UCS_V_UNUSED *pgtable)
{
    return ucs_malloc(sizeof(ucs_pgt_dir_t), "gpumem_mem_index_dir");
}

static void
gpumem_mem_index_dir_release(const ucs_pgtable_t UCS_V_UNUSED *pgtable,
                             ucs_pgt_dir_t *dir)
{
    ucs_free(dir);
}

ucs_status_t gpumem_mem_index_init(gpumem_gpu_t *gpu)
{
    ucs_list_head_init(&gpu->mappings);
    gpu->unindexed = 0;
    return ucs_pgtable_init(&gpu->va_index, gpumem_mem_index_dir_alloc,
                            gpumem_mem_index_dir_release);
}

void gpumem_mem_index_cleanup(gpumem_gpu_t *gpu)
{
    ucs_pgtable_cleanup(&gpu->va_index);
}

static int gpumem_mem_index_fits(const gpumem_mapping_t *mapping)
{
    return !mapping->host_va &&
           ((mapping->va % UCS_PGT_ADDR_ALIGN) == 0) &&
           ((mapping->va_size % UCS_PGT_ADDR_ALIGN) == 0) &&
           (mapping->va_size > 0) &&
           (mapping->va <= (UCS_PGT_ADDR_MAX - mapping->va_size));
}

void gpumem_mem_index_add(gpumem_mapping_t *mapping)
{
    gpumem_gpu_t *gpu = mapping->gpu;

    ucs_list_add_tail(&gpu->mappings, &mapping->list);
    mapping->listed           = 1;
    mapping->pgt_region.start = mapping->va;
    mapping->pgt_region.end   = mapping->va + mapping->va_size;
    mapping->indexed          = gpumem_mem_index_fits(mapping) &&
                                (ucs_pgtable_insert(&gpu->va_index,
                                                    &mapping->pgt_region) ==
                                 UCS_OK);
    if (!mapping->indexed) {
        ++gpu->unindexed;
    }
}

void gpumem_mem_index_del(gpumem_mapping_t *mapping)
{
    gpumem_gpu_t *gpu = mapping->gpu;

    ucs_assert(mapping->listed);
    ucs_list_del(&mapping->list);
    if (mapping->indexed) {
        ucs_pgtable_remove(&gpu->va_index, &mapping->pgt_region);
    } else {
        --gpu->unindexed;
    }
    mapping->indexed = 0;
    mapping->listed  = 0;
}

static int gpumem_mapping_holds(const gpumem_mapping_t *mapping,
                                uint64_t address, size_t size)
{
    return (address >= mapping->va) &&
           (address - mapping->va < mapping->va_size) &&
           (size <= mapping->va_size - (address - mapping->va));
}

gpumem_mapping_t *gpumem_mem_index_find(gpumem_gpu_t *gpu, uint64_t address)
{
    gpumem_mapping_t *mapping;
    ucs_pgt_region_t *found;

    found = ucs_pgtable_lookup(&gpu->va_index, address);
    if (found != NULL) {
        return ucs_container_of(found, gpumem_mapping_t, pgt_region);
    }

    if (gpu->unindexed == 0) {
        return NULL;
    }
    ucs_list_for_each(mapping, &gpu->mappings, list) {
        if (!mapping->indexed && gpumem_mapping_holds(mapping, address, 1)) {
            return mapping;
        }
    }
    return NULL;
}

/* The first given of the regions over @a mapping that holds the address */
static gpumem_region_t *
gpumem_mem_index_mapping_region(gpumem_mapping_t *mapping, uint64_t address)
{
    gpumem_region_t *region;

    ucs_list_for_each(region, &mapping->regions, in_mapping) {
        if ((address >= region->address) &&
            (address - region->address < region->size)) {
            return region;
        }
    }
    return NULL;
}

gpumem_region_t *gpumem_mem_index_find_region(gpumem_gpu_t *gpu,
                                              uint64_t address)
{
    gpumem_mapping_t *mapping;
    gpumem_region_t *region;
    ucs_pgt_region_t *found;

    found = ucs_pgtable_lookup(&gpu->va_index, address);
    if (found != NULL) {
        mapping = ucs_container_of(found, gpumem_mapping_t, pgt_region);
        return gpumem_mem_index_mapping_region(mapping, address);
    }

    /* Mappings at host addresses may overlap (two map_host of one page):
     * the first region of any that holds the address */
    if (gpu->unindexed == 0) {
        return NULL;
    }
    ucs_list_for_each(mapping, &gpu->mappings, list) {
        if (!mapping->indexed && gpumem_mapping_holds(mapping, address, 1)) {
            region = gpumem_mem_index_mapping_region(mapping, address);
            if (region != NULL) {
                return region;
            }
        }
    }
    return NULL;
}

/* Another mapping of the GPU's tables at some of the addresses */
static void
gpumem_mem_index_overlap_cb(const ucs_pgtable_t UCS_V_UNUSED *pgtable,
                            ucs_pgt_region_t *pgt_region, void *arg)
{
    gpumem_mapping_t **found_p = arg;

    if (*found_p == NULL) {
        *found_p = ucs_container_of(pgt_region, gpumem_mapping_t,
                                    pgt_region);
    }
}

gpumem_mapping_t *gpumem_mem_index_overlap(gpumem_gpu_t *gpu, uint64_t va,
                                           size_t size)
{
    gpumem_mapping_t *found = NULL;
    gpumem_mapping_t *mapping;

    if (size == 0) {
        return NULL;
    }
    ucs_pgtable_search_range(&gpu->va_index, va, va + size - 1,
                             gpumem_mem_index_overlap_cb, &found);
    if ((found != NULL) || (gpu->unindexed == 0)) {
        return found;
    }
    ucs_list_for_each(mapping, &gpu->mappings, list) {
        if (!mapping->indexed && (va < mapping->va + mapping->va_size) &&
            (mapping->va < va + size)) {
            return mapping;
        }
    }
    return NULL;
}
