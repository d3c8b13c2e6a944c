/**
 * gpumem drivers: what the memory core asks of a GPU driver.
 *
 * The memory core (seed 003) is driver-neutral: it keeps regions, counts
 * shared mappings and decides what is held and given back; a driver gives
 * it physical memory, virtual addresses, page tables and a copy engine. The
 * emu driver is a software GPU; the cuda driver a real one.
 *
 * Physical memory is named by extents of one target: the GPU's own memory
 * (VRAM offsets), or system memory (opaque to the core). Device addresses
 * are the GPU's virtual addresses, which the process's CPU cannot access.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_DRIVER_H_
#define GPUMEM_DRIVER_H_

#include <uct/gpumem/topo/topo.h>
#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

#define GPUMEM_DRIVER_EXPORT_MAX  128  /* Bytes of an exported memory handle */

typedef struct gpumem_driver     gpumem_driver_t;
typedef struct gpumem_driver_gpu gpumem_driver_gpu_t;


/**
 * GPU memory allocated by a driver: VRAM of one GPU, physically placed.
 * Opaque to the core but for these fields; the driver may embed it.
 */
typedef struct gpumem_driver_mem {
    gpumem_driver_gpu_t *gpu;      /* Owner GPU (of this process's driver) */
    size_t              size;      /* Bytes, a multiple of page_size */
    size_t              page_size; /* 4 KiB, or 2 MiB */
    uint64_t            phys;      /* First VRAM offset: the emu and CUDA
                                      place an allocation contiguously */
    uint64_t            fixed_va;  /* 0, or where the driver itself mapped
                                      the memory for every GPU of the
                                      process (an import of memory the
                                      application allocated): the core
                                      reserves and maps nothing for it */
} gpumem_driver_mem_t;


/**
 * Page table mapping flags.
 */
enum {
    GPUMEM_DRIVER_MAP_UNCACHED = UCS_BIT(0)  /* The GPU bypasses its caches */
};


/**
 * What a driver is (gpumem_driver_ops_t::flags).
 */
enum {
    /* The GPUs reach pinned system memory at its host address (CUDA's
     * unified addressing): the core reserves no device addresses for it,
     * and pt_map_host is called with @a va equal to the host address */
    GPUMEM_DRIVER_FLAG_HOST_UVA = UCS_BIT(0),

    /* The driver does not tell where GPU memory lies in VRAM (phys is 0):
     * there are no bus addresses of it, a NIC reaches it by dma-buf */
    GPUMEM_DRIVER_FLAG_NO_PHYS  = UCS_BIT(1),

    /* A mapping of VRAM is the process's, not one GPU's (CUDA's cuMemMap
     * at an address maps it for every device, and cuMemUnmap ends it for
     * all): another GPU maps the memory at addresses of its own, so that
     * each GPU's unmap ends only its own mapping */
    GPUMEM_DRIVER_FLAG_PROCESS_MAPS = UCS_BIT(2),

    /* The driver maps an allocation in pages larger than it (CUDA's 2 MiB
     * granularity), and a copy that faults ends the context, every later
     * call failing (CUDA's sticky errors): the engine catches no copy past
     * an allocation's end, so the transports check each one first */
    GPUMEM_DRIVER_FLAG_COPY_UNCHECKED = UCS_BIT(3),

    /* The release cannot turn the GPU's bus mastering off (CUDA's driver
     * API), so its page tables stay as they were: the core unmaps every
     * mapping of the GPU at its release, before their memory and addresses
     * go back */
    GPUMEM_DRIVER_FLAG_RELEASE_UNMAPS = UCS_BIT(4)
};


/**
 * Device memory at an address, as the driver knows it: memory the core
 * allocated, or memory the application allocated with the driver's own
 * calls.
 */
typedef struct gpumem_driver_addr_attr {
    unsigned gpu_index;  /* Index of the GPU in the driver */
    uint64_t base;       /* First byte of the allocation */
    size_t   size;       /* Bytes of the allocation */
    uint64_t buffer_id;  /* Unique over the process's life: an address
                            reused by a new allocation has a new id */
    int      managed;    /* Migrates between host and device */
} gpumem_driver_addr_attr_t;


/**
 * Faults a test can inject into a driver: the emu, and the cuda driver of
 * a test build.
 */
typedef enum {
    GPUMEM_DRIVER_FAULT_NONE = 0,
    GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED, /* Next unmap's flush unconfirmed */
    GPUMEM_DRIVER_FAULT_NO_ROOM,           /* Next allocation finds no room */
    GPUMEM_DRIVER_FAULT_KERNEL_REFUSES,    /* Next allocation/pin refused */
    GPUMEM_DRIVER_FAULT_NO_ADDRESSES,      /* Next address reservation finds
                                              no room in the space */
    GPUMEM_DRIVER_FAULT_NO_TABLE_ROOM      /* Next table write finds no room
                                              for a page table */
} gpumem_driver_fault_t;


/**
 * A copy in flight on a GPU's copy engine; the caller polls it.
 */
typedef struct gpumem_driver_copy {
    gpumem_driver_gpu_t *gpu;
    void                *priv;     /* Driver's state of the copy */
} gpumem_driver_copy_t;


/**
 * The operations of a driver. Every status but UCS_OK is logged by the
 * driver with what was asked and why it failed, except UCS_ERR_NO_MEMORY
 * ("no room now"), which the core reports.
 */
typedef struct gpumem_driver_ops {
    const char   *name;
    unsigned     flags;        /* GPUMEM_DRIVER_FLAG_* */

    /* What the copy engine moves, for the estimates UCP selects by: bytes
     * a second at the sizes UCP's pipeline copies, the seconds a copy of a
     * few bytes takes, and whether the machine's processes share it */
    double       copy_bandwidth;
    double       copy_latency;
    int          copy_shared;

    /* The GPUs of the machine the driver drives, in topology order */
    unsigned     (*num_gpus)(gpumem_driver_t *driver);
    gpumem_driver_gpu_t *(*gpu)(gpumem_driver_t *driver, unsigned index);
    const gpumem_topo_reach_t *(*reach)(gpumem_driver_gpu_t *gpu);
    size_t       (*vram_size)(gpumem_driver_gpu_t *gpu);
    size_t       (*bar_size)(gpumem_driver_gpu_t *gpu);
    /* VRAM no allocation of any process holds now; NULL where the driver
     * cannot tell, an error where it could not this time */
    ucs_status_t (*vram_free)(gpumem_driver_gpu_t *gpu, size_t *free_p);

    void         (*close)(gpumem_driver_t *driver);

    /* VRAM: UCS_ERR_NO_MEMORY when no room now (or, with @a in_bar, no
     * free block inside the BAR window fits) */
    ucs_status_t (*mem_alloc)(gpumem_driver_gpu_t *gpu, size_t size,
                              size_t page_size, int in_bar,
                              gpumem_driver_mem_t **mem_p);
    void         (*mem_free)(gpumem_driver_mem_t *mem);

    /* A handle another process of the machine imports to map the memory;
     * the memory stays while any process holds it */
    ucs_status_t (*mem_export)(gpumem_driver_mem_t *mem, void *buf,
                               size_t *length_p);
    /* Optional: whether memory mem_import gave is still the memory its
     * handle named, which this process holds; UCS_ERR_NO_ELEM, logged,
     * where it is not */
    ucs_status_t (*mem_check)(gpumem_driver_mem_t *mem);
    ucs_status_t (*mem_import)(gpumem_driver_gpu_t *gpu, const void *buf,
                               size_t length, gpumem_driver_mem_t **mem_p);

    /* Device virtual addresses, inaccessible to the CPU */
    ucs_status_t (*va_reserve)(gpumem_driver_gpu_t *gpu, size_t size,
                               size_t align, uint64_t *va_p);
    void         (*va_release)(gpumem_driver_gpu_t *gpu, uint64_t va,
                               size_t size);

    /* Page tables of @a gpu: map VRAM of @a mem (its own or a peer's, at
     * @a offset) or host pages at @a host (pinned first) */
    ucs_status_t (*pt_map_vram)(gpumem_driver_gpu_t *gpu, uint64_t va,
                                gpumem_driver_mem_t *mem, size_t offset,
                                size_t size, unsigned flags);
    ucs_status_t (*pt_map_host)(gpumem_driver_gpu_t *gpu, uint64_t va,
                                void *host, size_t size, unsigned flags);
    /* UCS_OK when the GPU confirmed the flush, UCS_ERR_TIMED_OUT when it
     * did not (the GPU may still reach the memory) */
    ucs_status_t (*pt_unmap)(gpumem_driver_gpu_t *gpu, uint64_t va,
                             size_t size);

    /* Pin host pages for DMA (map_host), and unpin */
    ucs_status_t (*pin)(gpumem_driver_gpu_t *gpu, void *addr, size_t size);
    void         (*unpin)(gpumem_driver_gpu_t *gpu, void *addr, size_t size);

    /* System memory for Host regions: DMA-able, the CPU reaches it */
    ucs_status_t (*sys_alloc)(gpumem_driver_gpu_t *gpu, size_t size,
                              void **addr_p);
    void         (*sys_free)(gpumem_driver_gpu_t *gpu, void *addr,
                             size_t size);

    /* The CPU's window on VRAM through the memory BAR: @a mem must lie in
     * the BAR (in_bar); NULL with a log if it cannot be mapped */
    ucs_status_t (*bar_map)(gpumem_driver_mem_t *mem, void **addr_p);
    /* The window of @a size bytes (its memory's) at @a addr goes; the
     * memory itself may be freed already */
    void         (*bar_unmap)(void *addr, size_t size);

    /* Bus address of the memory BAR (where another PCI function reaches
     * VRAM offset 0), and a dma-buf of VRAM for a NIC where the kernel
     * offers one (UCS_ERR_UNSUPPORTED otherwise) */
    uint64_t     (*bar_bus_addr)(gpumem_driver_gpu_t *gpu);
    ucs_status_t (*dmabuf_export)(gpumem_driver_mem_t *mem, int *fd_p,
                                  size_t *offset_p);

    /* Copy engine: @a dst and @a src are device addresses of @a gpu or host
     * addresses (is_dev tells which). UCS_OK when done inline, UCS_INPROGRESS
     * with @a copy to poll otherwise. */
    ucs_status_t (*copy)(gpumem_driver_gpu_t *gpu, uint64_t dst, int dst_dev,
                         uint64_t src, int src_dev, size_t size,
                         gpumem_driver_copy_t *copy);
    ucs_status_t (*copy_poll)(gpumem_driver_copy_t *copy);
    /* Optional: a copy done when it returns, as copy and copy_poll until
     * done would do it, at less cost where the driver waits better than a
     * poll does (the short copies of UCP's memory-type packing) */
    ucs_status_t (*copy_sync)(gpumem_driver_gpu_t *gpu, uint64_t dst,
                              int dst_dev, uint64_t src, int src_dev,
                              size_t size);

    /* Whether an address is device memory of this driver, and whose */
    int          (*is_device_addr)(gpumem_driver_t *driver, const void *addr,
                                   unsigned *gpu_index_p);

    /* Optional (NULL where the core's regions are all the device memory
     * there is, as on the emu): the allocation that holds @a addr, the
     * application's own included. UCS_ERR_NO_ELEM if none. */
    ucs_status_t (*addr_query)(gpumem_driver_t *driver, const void *addr,
                               gpumem_driver_addr_attr_t *attr);

    /* Optional: a handle of memory the application allocated (the
     * allocation that holds @a addr, described in @a attr), which
     * mem_import maps at an address of its own (fixed_va) */
    ucs_status_t (*addr_export)(gpumem_driver_t *driver, const void *addr,
                                void *buf, size_t *length_p,
                                gpumem_driver_addr_attr_t *attr);

    /* Turns the GPU's bus mastering off: it reaches no memory after */
    void         (*release)(gpumem_driver_gpu_t *gpu);

    /* Optional: while @a taken, no other open of the GPU, by another
     * process too, succeeds: this one released it while its memory is
     * still reached (another GPU maps it, a bus client may write it). The
     * process's exit ends it */
    void         (*keep_taken)(gpumem_driver_gpu_t *gpu, int taken);

    /* Tests only, optional: the next matching operation fails as asked.
     * NULL where the driver's fault injection is not compiled in (the cuda
     * driver's is only with --enable-fault-injection) */
    void         (*inject_fault)(gpumem_driver_gpu_t *gpu,
                                 gpumem_driver_fault_t fault);
} gpumem_driver_ops_t;


/**
 * A driver instance: its ops and its private state.
 */
struct gpumem_driver {
    const gpumem_driver_ops_t *ops;
};

END_C_DECLS

#endif
