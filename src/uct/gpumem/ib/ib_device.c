/**
 * gpumem verbs: device memory for an RDMA device: which way it is
 * registered (the driver's dma-buf, or the GPU's BAR window), and what the
 * registration holds of it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_device.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>


#define UCT_GPUMEM_IB_DEVICE_REASON_MAX  384
#define UCT_GPUMEM_IB_DEVICE_FACT_MAX    160


const char *uct_gpumem_ib_device_reg_names[] = {
    [UCT_GPUMEM_IB_DEVICE_REG_AUTO]   = "auto",
    [UCT_GPUMEM_IB_DEVICE_REG_DMABUF] = "dmabuf",
    [UCT_GPUMEM_IB_DEVICE_REG_BAR]    = "bar",
    [UCT_GPUMEM_IB_DEVICE_REG_LAST]   = NULL
};

const char *uct_gpumem_ib_device_way_name(uct_gpumem_ib_device_way_t way)
{
    switch (way) {
    case UCT_GPUMEM_IB_DEVICE_WAY_DMABUF:
        return "dma-buf";
    case UCT_GPUMEM_IB_DEVICE_WAY_BAR:
        return "BAR window";
    default:
        return "none";
    }
}

/* The driver's window maps the memory whole, so all of it must lie within
 * the BAR; the sum may not be formed, it could wrap */
static int
uct_gpumem_ib_device_in_bar(const uct_gpumem_ib_device_facts_t *facts)
{
    return (facts->vram_offset <= facts->bar_size) &&
           (facts->vram_size <= (facts->bar_size - facts->vram_offset));
}

static const char *
uct_gpumem_ib_device_no_dmabuf(const uct_gpumem_ib_device_facts_t *facts,
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

static const char *
uct_gpumem_ib_device_outside_bar(const uct_gpumem_ib_device_facts_t *facts,
                                 char *buf, size_t max)
{
    snprintf(buf, max, "VRAM [0x%" PRIx64 ", +%zu) lies outside the GPU's "
             "BAR, which reaches only the first %zu bytes of VRAM",
             facts->vram_offset, facts->vram_size, facts->bar_size);
    return buf;
}

uct_gpumem_ib_device_way_t
uct_gpumem_ib_device_choose(uct_gpumem_ib_device_reg_t setting,
                            const uct_gpumem_ib_device_facts_t *facts,
                            char *reason, size_t max)
{
    char no_dmabuf[UCT_GPUMEM_IB_DEVICE_FACT_MAX];
    char outside[UCT_GPUMEM_IB_DEVICE_FACT_MAX];

    /* A dma-buf first: the NIC reaches VRAM through it wherever the memory
     * lies, and nothing of it is mapped in the process */
    if ((setting != UCT_GPUMEM_IB_DEVICE_REG_BAR) &&
        (facts->dmabuf == UCS_OK)) {
        if (setting == UCT_GPUMEM_IB_DEVICE_REG_DMABUF) {
            snprintf(reason, max, "UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf");
        } else {
            snprintf(reason, max, "the %s driver exports a dma-buf of it",
                     facts->driver);
        }
        return UCT_GPUMEM_IB_DEVICE_WAY_DMABUF;
    }

    /* Else the BAR window, whose host pages the NIC reaches as any other,
     * where the memory lies within the BAR */
    if ((setting != UCT_GPUMEM_IB_DEVICE_REG_DMABUF) &&
        uct_gpumem_ib_device_in_bar(facts)) {
        if (setting == UCT_GPUMEM_IB_DEVICE_REG_BAR) {
            snprintf(reason, max, "UCX_GPUMEM_IB_DEVICE_MEM_REG=bar");
        } else {
            snprintf(reason, max, "%s, and the memory lies within the GPU's "
                     "BAR", uct_gpumem_ib_device_no_dmabuf(facts, no_dmabuf,
                                                           sizeof(no_dmabuf)));
        }
        return UCT_GPUMEM_IB_DEVICE_WAY_BAR;
    }

    /* Neither: each way the setting allowed, and why it is closed */
    uct_gpumem_ib_device_no_dmabuf(facts, no_dmabuf, sizeof(no_dmabuf));
    uct_gpumem_ib_device_outside_bar(facts, outside, sizeof(outside));
    switch (setting) {
    case UCT_GPUMEM_IB_DEVICE_REG_DMABUF:
        snprintf(reason, max, "UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf, but %s",
                 no_dmabuf);
        break;
    case UCT_GPUMEM_IB_DEVICE_REG_BAR:
        snprintf(reason, max, "UCX_GPUMEM_IB_DEVICE_MEM_REG=bar, but %s",
                 outside);
        break;
    default:
        snprintf(reason, max, "%s, and %s", no_dmabuf, outside);
        break;
    }
    return UCT_GPUMEM_IB_DEVICE_WAY_NONE;
}

/* The allocation that holds all the bytes */
static ucs_status_t
uct_gpumem_ib_device_find(uct_gpumem_context_t *context, const char *nic,
                          void *address, size_t length,
                          ucs_log_level_t log_level,
                          gpumem_region_t **region_p)
{
    uintptr_t start = (uintptr_t)address;
    gpumem_region_t *region;
    int gpu;

    gpu    = uct_gpumem_context_find_gpu(context, address);
    region = (gpu < 0) ? NULL : gpumem_find_region(context->gpus[gpu], start);
    if ((region == NULL) ||
        (length > (gpumem_region_address(region) + gpumem_region_size(region) -
                   start))) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes of device "
                "memory at %p: no allocation of the process's GPUs holds them "
                "whole", nic, length, address);
        return UCS_ERR_INVALID_ADDR;
    }

    if (gpumem_region_kind(region) == GPUMEM_KIND_HOST) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes at %p: they "
                "are system memory that GPU %d maps, which has no VRAM to "
                "export or to reach through the BAR; register its host "
                "address instead", nic, length, address, gpu);
        return UCS_ERR_UNSUPPORTED;
    }

    *region_p = region;
    return UCS_OK;
}

/* The memory to register, named by @a address either way */
static void
uct_gpumem_ib_device_memory(const uct_gpumem_ib_device_mem_t *mem,
                            void *address, size_t length, size_t vram_offset,
                            size_t dmabuf_offset,
                            gpumem_reg_memory_t *memory_p)
{
    void *host = (mem->window == NULL) ? NULL :
                 UCS_PTR_BYTE_OFFSET(mem->window, vram_offset);

    if (mem->way == UCT_GPUMEM_IB_DEVICE_WAY_BAR) {
        memory_p->type         = GPUMEM_REG_MEMORY_HOST;
        memory_p->host.address = host;
        memory_p->host.length  = length;
        return;
    }

    memory_p->type                = GPUMEM_REG_MEMORY_DMABUF;
    memory_p->dmabuf.fd           = mem->dmabuf_fd;
    memory_p->dmabuf.offset       = dmabuf_offset + vram_offset;
    memory_p->dmabuf.bytes        = length;
    memory_p->dmabuf.iova         = (uintptr_t)address;
    memory_p->dmabuf.host_address = host;
}

ucs_status_t
uct_gpumem_ib_device_mem_open(const uct_gpumem_context_params_t *params,
                              uct_gpumem_ib_device_reg_t setting,
                              const char *nic, void *address, size_t length,
                              ucs_log_level_t log_level,
                              uct_gpumem_ib_device_mem_t **mem_p,
                              gpumem_reg_memory_t *memory_p)
{
    char reason[UCT_GPUMEM_IB_DEVICE_REASON_MAX];
    char gpu_name[GPUMEM_TOPO_PCI_STR_MAX];
    uct_gpumem_ib_device_facts_t facts;
    uct_gpumem_ib_device_mem_t *mem;
    size_t region_offset, vram_offset;
    const gpumem_driver_ops_t *ops;
    size_t dmabuf_offset = 0;
    gpumem_region_t *region;
    ucs_status_t status;

    mem = ucs_calloc(1, sizeof(*mem), "gpumem_ib_device_mem");
    if (mem == NULL) {
        ucs_log(log_level, "gpumem: %s: failed to allocate device memory "
                "state", nic);
        return UCS_ERR_NO_MEMORY;
    }
    mem->dmabuf_fd = -1;

    status = uct_gpumem_context_get(params, &mem->context);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_gpumem_ib_device_find(mem->context, nic, address, length,
                                       log_level, &region);
    if (status != UCS_OK) {
        goto err_put;
    }

    status = gpumem_region_vram(region, &mem->vram, &region_offset);
    if (status != UCS_OK) {
        goto err_put;
    }

    ops         = mem->context->driver->ops;
    vram_offset = region_offset +
                  ((uintptr_t)address - gpumem_region_address(region));
    gpumem_pci_addr_str(&ops->reach(mem->vram->gpu)->addr, gpu_name,
                        sizeof(gpu_name));

    facts.driver      = ops->name;
    facts.dmabuf      = UCS_ERR_UNSUPPORTED;
    facts.vram_offset = mem->vram->phys;
    facts.vram_size   = mem->vram->size;
    facts.bar_size    = ops->bar_size(mem->vram->gpu);
    if (setting != UCT_GPUMEM_IB_DEVICE_REG_BAR) {
        facts.dmabuf = ops->dmabuf_export(mem->vram, &mem->dmabuf_fd,
                                          &dmabuf_offset);
    }

    mem->way = uct_gpumem_ib_device_choose(setting, &facts, reason,
                                           sizeof(reason));
    if (mem->way == UCT_GPUMEM_IB_DEVICE_WAY_NONE) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes of device "
                "memory at %p (GPU %s): %s", nic, length, address, gpu_name,
                reason);
        status = UCS_ERR_UNSUPPORTED;
        goto err_close_dmabuf;
    }

    ucs_debug("gpumem: %s: %zu bytes of device memory at %p (GPU %s) are "
              "registered through the %s: %s", nic, length, address,
              gpu_name, uct_gpumem_ib_device_way_name(mem->way), reason);

    /* The window is the way in for the BAR, and for a dma-buf the host
     * mapping that a device which refuses dma-bufs registers instead */
    if (uct_gpumem_ib_device_in_bar(&facts)) {
        status = ops->bar_map(mem->vram, &mem->window);
        if (status != UCS_OK) {
            goto err_close_dmabuf;
        }
    }

    uct_gpumem_ib_device_memory(mem, address, length, vram_offset,
                                dmabuf_offset, memory_p);
    *mem_p = mem;
    return UCS_OK;

err_close_dmabuf:
    uct_gpumem_ib_device_mem_registered(mem);
err_put:
    uct_gpumem_context_put(mem->context);
err_free:
    ucs_free(mem);
    return status;
}

void uct_gpumem_ib_device_mem_registered(uct_gpumem_ib_device_mem_t *mem)
{
    if (mem->dmabuf_fd >= 0) {
        close(mem->dmabuf_fd);
        mem->dmabuf_fd = -1;
    }
}

void uct_gpumem_ib_device_mem_close(uct_gpumem_ib_device_mem_t *mem)
{
    uct_gpumem_ib_device_mem_registered(mem);
    if (mem->window != NULL) {
        mem->context->driver->ops->bar_unmap(mem->vram, mem->window);
    }
    uct_gpumem_context_put(mem->context);
    ucs_free(mem);
}
