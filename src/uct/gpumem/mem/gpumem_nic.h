/**
 * gpumem memory core: how another PCI function of the machine, a NIC,
 * reaches a region's GPU memory by DMA. The one decision: the driver's
 * dma-buf of the VRAM, or the GPU's BAR, where the memory lies within it;
 * gpumem_bus() takes the BAR by this rule too.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_NIC_H_
#define GPUMEM_NIC_H_

#include "gpumem_mem.h"

#include <ucs/config/types.h>

BEGIN_C_DECLS

/**
 * Which ways the caller allows.
 */
typedef enum {
    GPUMEM_NIC_ALLOW_ANY,     /* A dma-buf where the driver exports one, else
                                 the BAR */
    GPUMEM_NIC_ALLOW_DMABUF,  /* A dma-buf, or nothing */
    GPUMEM_NIC_ALLOW_BAR      /* The BAR, or nothing */
} gpumem_nic_allow_t;


typedef enum {
    GPUMEM_NIC_WAY_NONE,      /* Neither is open */
    GPUMEM_NIC_WAY_DMABUF,    /* The driver's dma-buf of the VRAM; the BAR
                                 window where the NIC refuses dma-bufs */
    GPUMEM_NIC_WAY_BAR        /* The BAR: its window's host pages, or its bus
                                 addresses */
} gpumem_nic_way_t;


typedef struct gpumem_nic_facts {
    const char   *driver;       /* The GPU driver's name, for reasons */
    ucs_status_t dmabuf;        /* The driver's dma-buf export of the
                                   memory: UCS_OK; UCS_ERR_UNSUPPORTED where
                                   it has none; another error where it
                                   failed. Not read where only the BAR is
                                   allowed */
    int          phys_known;    /* The driver tells where the memory lies
                                   in VRAM (else no BAR window is known to
                                   reach it) */
    uint64_t     vram_offset;   /* The memory's first byte in VRAM */
    size_t       vram_size;     /* Its bytes */
    size_t       bar_size;      /* Bytes of VRAM the BAR reaches, from 0 */
} gpumem_nic_facts_t;


/**
 * The way a NIC reaches memory of these facts, and in @a reason why (or why
 * not), naming @a allowed_by (a setting, "UCX_X=bar") where it was not the
 * default that chose.
 */
gpumem_nic_way_t gpumem_nic_choose(gpumem_nic_allow_t allow,
                                   const char *allowed_by,
                                   const gpumem_nic_facts_t *facts,
                                   char *reason, size_t max);

/* "none", "dma-buf", "BAR window" */
const char *gpumem_nic_way_name(gpumem_nic_way_t way);


/**
 * What a NIC is given of device memory, until gpumem_nic_unexport: the
 * VRAM's dma-buf, and the BAR window where the memory lies within the BAR.
 */
typedef struct gpumem_nic_export {
    gpumem_nic_way_t    way;
    int                 dmabuf_fd;     /* The dma-buf, until closed, or -1 */
    uint64_t            dmabuf_offset; /* Of the first byte asked for */
    void                *host;         /* The window on the first byte asked
                                          for, or NULL */
    /* The core's: */
    gpumem_gpu_t        *gpu;
    gpumem_driver_mem_t *vram;         /* Only until the export returns:
                                          UCX's registration cache may
                                          release a registration after the
                                          application freed its memory */
    void                *window;       /* On all of vram */
    size_t              window_size;
} gpumem_nic_export_t;


/**
 * Export @a length bytes at @a address, GPU memory of one allocation of
 * @a gpu, for the NIC @a nic (a name, for logs); the choice is logged at
 * debug level.
 *
 * @return UCS_ERR_INVALID_ADDR where no allocation of the GPU holds the
 *         bytes whole; UCS_ERR_UNSUPPORTED for system memory and where
 *         neither allowed way is open; the driver's error where mapping the
 *         window fails. Each logged at @a log_level with its reason.
 */
ucs_status_t gpumem_nic_export(gpumem_gpu_t *gpu, uint64_t address,
                               size_t length, gpumem_nic_allow_t allow,
                               const char *allowed_by, const char *nic,
                               ucs_log_level_t log_level,
                               gpumem_nic_export_t *export_p);

/* The dma-buf's descriptor goes, once the NIC took the dma-buf (or
 * refused it); the kernel keeps the dma-buf while the NIC holds it */
void gpumem_nic_export_close_fd(gpumem_nic_export_t *nic_export);

/* Gives back what the export holds; only once the NIC no longer reaches
 * the memory */
void gpumem_nic_unexport(gpumem_nic_export_t *nic_export);


/**
 * A dma-buf of the VRAM under @a address, a byte of a region of @a gpu,
 * and the offset of that byte in it; the caller owns the descriptor.
 * UCS_ERR_UNSUPPORTED where the driver exports none, UCS_ERR_NO_ELEM where
 * no region holds the byte.
 */
ucs_status_t gpumem_dmabuf(gpumem_gpu_t *gpu, uint64_t address, int *fd_p,
                           uint64_t *offset_p);

END_C_DECLS

#endif
