/**
 * gpumem memory core: how a NIC reaches a region's GPU memory (the driver's
 * dma-buf, or the BAR), chosen by one rule.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_nic.h"
#include "gpumem_mem_int.h"

#include <ucs/debug/log.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>


#define GPUMEM_NIC_REASON_MAX  384
#define GPUMEM_NIC_FACT_MAX    160


const char *gpumem_nic_way_name(gpumem_nic_way_t way)
{
    switch (way) {
    case GPUMEM_NIC_WAY_DMABUF:
        return "dma-buf";
    case GPUMEM_NIC_WAY_BAR:
        return "BAR window";
    default:
        return "none";
    }
}

/* The BAR reaches the memory whole; the sum may not be formed, it could
 * wrap */
static int gpumem_nic_in_bar(const gpumem_nic_facts_t *facts)
{
    return facts->phys_known && (facts->vram_offset <= facts->bar_size) &&
           (facts->vram_size <= (facts->bar_size - facts->vram_offset));
}

static const char *gpumem_nic_no_dmabuf(const gpumem_nic_facts_t *facts,
                                        char *buf, size_t max)
{
    if (facts->dmabuf == UCS_ERR_UNSUPPORTED) {
        snprintf(buf, max, "the %s driver exports no dma-buf here",
                 facts->driver);
    } else {
        snprintf(buf, max, "the %s driver's dma-buf export failed (%s)",
                 facts->driver, ucs_status_string(facts->dmabuf));
    }
    return buf;
}

static const char *gpumem_nic_outside_bar(const gpumem_nic_facts_t *facts,
                                          char *buf, size_t max)
{
    if (!facts->phys_known) {
        snprintf(buf, max, "the %s driver does not tell where the memory "
                 "lies in VRAM, so no BAR window is known to reach it",
                 facts->driver);
        return buf;
    }
    snprintf(buf, max, "VRAM [0x%" PRIx64 ", +%zu) lies outside the GPU's "
             "BAR, which reaches only the first %zu bytes of VRAM",
             facts->vram_offset, facts->vram_size, facts->bar_size);
    return buf;
}

gpumem_nic_way_t gpumem_nic_choose(gpumem_nic_allow_t allow,
                                   const char *allowed_by,
                                   const gpumem_nic_facts_t *facts,
                                   char *reason, size_t max)
{
    char no_dmabuf[GPUMEM_NIC_FACT_MAX];
    char outside[GPUMEM_NIC_FACT_MAX];

    /* A dma-buf first: the NIC reaches VRAM through it wherever the memory
     * lies, and nothing of it is mapped in the process */
    if ((allow != GPUMEM_NIC_ALLOW_BAR) && (facts->dmabuf == UCS_OK)) {
        if (allow == GPUMEM_NIC_ALLOW_DMABUF) {
            snprintf(reason, max, "%s", allowed_by);
        } else {
            snprintf(reason, max, "the %s driver exports a dma-buf of it",
                     facts->driver);
        }
        return GPUMEM_NIC_WAY_DMABUF;
    }

    /* Else the BAR, where the memory lies within it */
    if ((allow != GPUMEM_NIC_ALLOW_DMABUF) && gpumem_nic_in_bar(facts)) {
        if (allow == GPUMEM_NIC_ALLOW_BAR) {
            snprintf(reason, max, "%s", allowed_by);
        } else {
            snprintf(reason, max, "%s, and the memory lies within the GPU's "
                     "BAR", gpumem_nic_no_dmabuf(facts, no_dmabuf,
                                                 sizeof(no_dmabuf)));
        }
        return GPUMEM_NIC_WAY_BAR;
    }

    /* Neither: each way allowed, and why it is closed */
    gpumem_nic_no_dmabuf(facts, no_dmabuf, sizeof(no_dmabuf));
    gpumem_nic_outside_bar(facts, outside, sizeof(outside));
    switch (allow) {
    case GPUMEM_NIC_ALLOW_DMABUF:
        snprintf(reason, max, "%s, but %s", allowed_by, no_dmabuf);
        break;
    case GPUMEM_NIC_ALLOW_BAR:
        snprintf(reason, max, "%s, but %s", allowed_by, outside);
        break;
    default:
        snprintf(reason, max, "%s, and %s", no_dmabuf, outside);
        break;
    }
    return GPUMEM_NIC_WAY_NONE;
}

/* The region of the GPU that holds all the bytes, of GPU memory; under the
 * GPU's lock */
static ucs_status_t gpumem_nic_find(gpumem_gpu_t *gpu, uint64_t address,
                                    size_t length, const char *nic,
                                    ucs_log_level_t log_level,
                                    gpumem_region_t **region_p)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_region_t *region;

    region = gpumem_mem_index_find_region(gpu, address);
    if ((region == NULL) ||
        (length > (region->address + region->size - address))) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes of device "
                "memory at 0x%" PRIx64 ": no allocation of GPU %s holds "
                "them whole", nic, length, address,
                gpumem_gpu_name(gpu, name));
        return UCS_ERR_INVALID_ADDR;
    }

    if (region->mapping->memory->type != GPUMEM_MEMORY_VRAM) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes at 0x%"
                PRIx64 ": they are system memory that GPU %s maps, which "
                "has no VRAM to export or to reach through the BAR; register "
                "its host address instead", nic, length, address,
                gpumem_gpu_name(gpu, name));
        return UCS_ERR_UNSUPPORTED;
    }

    *region_p = region;
    return UCS_OK;
}

static ucs_status_t
gpumem_nic_export_locked(gpumem_gpu_t *gpu, uint64_t address, size_t length,
                         gpumem_nic_allow_t allow, const char *allowed_by,
                         const char *nic, ucs_log_level_t log_level,
                         gpumem_nic_export_t *nic_export)
{
    const gpumem_driver_ops_t *ops = gpu->driver->ops;
    char reason[GPUMEM_NIC_REASON_MAX];
    char name[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_nic_facts_t facts;
    gpumem_region_t *region;
    size_t vram_offset;
    uint64_t dmabuf_offset = 0;
    ucs_status_t status;

    nic_export->way       = GPUMEM_NIC_WAY_NONE;
    nic_export->dmabuf_fd = -1;
    nic_export->host      = NULL;
    nic_export->window    = NULL;
    nic_export->gpu       = gpu;

    status = gpumem_nic_find(gpu, address, length, nic, log_level, &region);
    if (status != UCS_OK) {
        return status;
    }

    /* A region lies within its mapping, which maps the memory from its
     * first byte */
    nic_export->vram = region->mapping->memory->vram;
    vram_offset  = address - region->mapping->va;
    gpumem_gpu_name(gpu, name);

    facts.driver      = ops->name;
    facts.dmabuf      = UCS_ERR_UNSUPPORTED;
    facts.phys_known  = !(ops->flags & GPUMEM_DRIVER_FLAG_NO_PHYS);
    facts.vram_offset = nic_export->vram->phys;
    facts.vram_size   = nic_export->vram->size;
    facts.bar_size    = ops->bar_size(nic_export->vram->gpu);
    if ((allow != GPUMEM_NIC_ALLOW_BAR) && (ops->dmabuf_export != NULL)) {
        size_t offset = 0;
        facts.dmabuf  = ops->dmabuf_export(nic_export->vram,
                                           &nic_export->dmabuf_fd, &offset);
        dmabuf_offset = offset;
    }

    nic_export->way = gpumem_nic_choose(allow, allowed_by, &facts, reason,
                                        sizeof(reason));
    if (nic_export->way == GPUMEM_NIC_WAY_NONE) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes of device "
                "memory at 0x%" PRIx64 " (GPU %s): %s", nic, length, address,
                name, reason);
        gpumem_nic_export_close_fd(nic_export);
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_debug("gpumem: %s: %zu bytes of device memory at 0x%" PRIx64 " (GPU "
              "%s) are registered through the %s: %s", nic, length, address,
              name, gpumem_nic_way_name(nic_export->way), reason);

    /* The window is the way in for the BAR, and for a dma-buf the host
     * mapping that a NIC which refuses dma-bufs registers instead */
    if (gpumem_nic_in_bar(&facts)) {
        status = ops->bar_map(nic_export->vram, &nic_export->window);
        if (status != UCS_OK) {
            ucs_log(log_level, "gpumem: %s: cannot map the BAR window on GPU "
                    "%s's memory: %s", nic, name, ucs_status_string(status));
            gpumem_nic_export_close_fd(nic_export);
            nic_export->window = NULL;
            return status;
        }
        nic_export->window_size = nic_export->vram->size;
        nic_export->host        = UCS_PTR_BYTE_OFFSET(nic_export->window,
                                                      vram_offset);
    }

    nic_export->dmabuf_offset = dmabuf_offset + vram_offset;
    return UCS_OK;
}

ucs_status_t gpumem_nic_export(gpumem_gpu_t *gpu, uint64_t address,
                               size_t length, gpumem_nic_allow_t allow,
                               const char *allowed_by, const char *nic,
                               ucs_log_level_t log_level,
                               gpumem_nic_export_t *export_p)
{
    ucs_status_t status;

    gpumem_gpu_lock(gpu);
    status = gpumem_nic_export_locked(gpu, address, length, allow,
                                      allowed_by, nic, log_level, export_p);
    gpumem_gpu_unlock(gpu);
    return status;
}

void gpumem_nic_export_close_fd(gpumem_nic_export_t *nic_export)
{
    if (nic_export->dmabuf_fd >= 0) {
        close(nic_export->dmabuf_fd);
        nic_export->dmabuf_fd = -1;
    }
}

void gpumem_nic_unexport(gpumem_nic_export_t *nic_export)
{
    gpumem_nic_export_close_fd(nic_export);
    /* The memory may be gone (its driver object freed): the window's own
     * size is what goes */
    if (nic_export->window != NULL) {
        nic_export->gpu->driver->ops->bar_unmap(nic_export->window,
                                                nic_export->window_size);
        nic_export->window = NULL;
    }
}

ucs_status_t gpumem_dmabuf(gpumem_gpu_t *gpu, uint64_t address, int *fd_p,
                           uint64_t *offset_p)
{
    ucs_status_t status = UCS_ERR_UNSUPPORTED;
    gpumem_region_t *region;
    size_t offset;

    gpumem_gpu_lock(gpu);
    region = gpumem_mem_index_find_region(gpu, address);
    if (region == NULL) {
        status = UCS_ERR_NO_ELEM;
    } else if ((region->mapping->memory->type == GPUMEM_MEMORY_VRAM) &&
               (gpu->driver->ops->dmabuf_export != NULL)) {
        status    = gpu->driver->ops->dmabuf_export(
                region->mapping->memory->vram, fd_p, &offset);
        *offset_p = offset + (address - region->mapping->va);
    }
    gpumem_gpu_unlock(gpu);
    return status;
}
