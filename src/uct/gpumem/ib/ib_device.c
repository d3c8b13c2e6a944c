/**
 * gpumem verbs: device memory for an RDMA device: the memory core's export
 * of it (the driver's dma-buf, or the GPU's BAR window), as what to
 * register, and what the registration holds of it.
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


const char *uct_gpumem_ib_device_reg_names[] = {
    [UCT_GPUMEM_IB_DEVICE_REG_AUTO]   = "auto",
    [UCT_GPUMEM_IB_DEVICE_REG_DMABUF] = "dmabuf",
    [UCT_GPUMEM_IB_DEVICE_REG_BAR]    = "bar",
    [UCT_GPUMEM_IB_DEVICE_REG_LAST]   = NULL
};

/* "UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf": the setting, for reasons */
static const char *
uct_gpumem_ib_device_setting_str(uct_gpumem_ib_device_reg_t setting,
                                 char *buf, size_t max)
{
    snprintf(buf, max, "UCX_GPUMEM_IB_DEVICE_MEM_REG=%s",
             uct_gpumem_ib_device_reg_names[setting]);
    return buf;
}

/* The memory to register, named by @a address either way */
static void
uct_gpumem_ib_device_memory(const gpumem_nic_export_t *nic_export,
                            void *address, size_t length,
                            gpumem_reg_memory_t *memory_p)
{
    if (nic_export->way == GPUMEM_NIC_WAY_BAR) {
        memory_p->type         = GPUMEM_REG_MEMORY_HOST;
        memory_p->host.address = nic_export->host;
        memory_p->host.length  = length;
        return;
    }

    memory_p->type                = GPUMEM_REG_MEMORY_DMABUF;
    memory_p->dmabuf.fd           = nic_export->dmabuf_fd;
    memory_p->dmabuf.offset       = nic_export->dmabuf_offset;
    memory_p->dmabuf.bytes        = length;
    memory_p->dmabuf.iova         = (uintptr_t)address;
    memory_p->dmabuf.host_address = nic_export->host;
}

ucs_status_t
uct_gpumem_ib_device_mem_open(const uct_gpumem_settings_t *settings,
                              uct_gpumem_ib_device_reg_t setting,
                              const char *nic, void *address, size_t length,
                              ucs_log_level_t log_level,
                              uct_gpumem_ib_device_mem_t **mem_p,
                              gpumem_reg_memory_t *memory_p)
{
    char setting_str[64];
    uct_gpumem_ib_device_mem_t *mem;
    ucs_status_t status;
    int gpu;

    mem = ucs_calloc(1, sizeof(*mem), "gpumem_ib_device_mem");
    if (mem == NULL) {
        ucs_log(log_level, "gpumem: %s: failed to allocate device memory "
                "state", nic);
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_context_get(settings, &mem->context);
    if (status != UCS_OK) {
        goto err_free;
    }

    gpu = uct_gpumem_context_find_gpu(mem->context, address);
    if (gpu < 0) {
        ucs_log(log_level, "gpumem: %s: cannot register %zu bytes of device "
                "memory at %p: no allocation of the process's GPUs holds them "
                "whole", nic, length, address);
        status = UCS_ERR_INVALID_ADDR;
        goto err_put;
    }

    status = gpumem_nic_export(mem->context->gpus[gpu], (uintptr_t)address,
                               length, (gpumem_nic_allow_t)setting,
                               uct_gpumem_ib_device_setting_str(
                                       setting, setting_str,
                                       sizeof(setting_str)),
                               nic, log_level, &mem->nic_export);
    if (status != UCS_OK) {
        goto err_put;
    }

    uct_gpumem_ib_device_memory(&mem->nic_export, address, length, memory_p);
    *mem_p = mem;
    return UCS_OK;

err_put:
    uct_gpumem_context_put(mem->context);
err_free:
    ucs_free(mem);
    return status;
}

void uct_gpumem_ib_device_mem_registered(uct_gpumem_ib_device_mem_t *mem)
{
    gpumem_nic_export_close_fd(&mem->nic_export);
}

void uct_gpumem_ib_device_mem_close(uct_gpumem_ib_device_mem_t *mem)
{
    gpumem_nic_unexport(&mem->nic_export);
    uct_gpumem_context_put(mem->context);
    ucs_free(mem);
}
