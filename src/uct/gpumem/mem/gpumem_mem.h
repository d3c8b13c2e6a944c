/**
 * gpumem memory core: the memory a GPU addresses (seed 003), on any driver.
 *
 * A GPU's memory (gpumem_gpu_t) gives out regions: of its own memory (GPU),
 * of its own memory that the process reaches through the memory BAR (BAR),
 * of system memory (HOST), of pages the process already has (map_host) and
 * of other GPUs' memory (map_peer). Each is given back by gpumem_free, or by
 * the GPU's release. The error model is UCX's: "no room now" is
 * UCS_ERR_NO_MEMORY, a refusal is another status with a logged reason
 * naming what is missing, and an invalid argument is UCS_ERR_INVALID_PARAM
 * with nothing taken.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_MEM_H_
#define GPUMEM_MEM_H_

#include <uct/gpumem/driver/gpumem_driver.h>

BEGIN_C_DECLS

typedef struct gpumem_gpu    gpumem_gpu_t;
typedef struct gpumem_region gpumem_region_t;


/**
 * Where new memory is and who reaches it.
 */
typedef enum {
    GPUMEM_KIND_GPU,   /* The GPU's memory, which the process does not reach */
    GPUMEM_KIND_BAR,   /* The GPU's memory, one block the process reaches
                          through the memory BAR */
    GPUMEM_KIND_HOST   /* System memory, which the GPU reaches uncached */
} gpumem_kind_t;


/**
 * Flags of gpumem_alloc().
 */
enum {
    GPUMEM_ALLOC_UNCACHED = UCS_BIT(0)  /* The GPU bypasses its caches */
};


#define GPUMEM_PAGE_SIZE        4096ul
#define GPUMEM_LARGE_PAGE_SIZE  (2ul << 20)
#define GPUMEM_LARGE_PAGE_FROM  (8ul << 20)  /* Allocations from this size on
                                                map with large pages */


/**
 * A bus address range another PCI function reaches memory at by DMA.
 */
typedef struct gpumem_bus_range {
    uint64_t address;
    size_t   length;
} gpumem_bus_range_t;


/**
 * The memory of the GPU @a index of @a driver.
 */
ucs_status_t gpumem_gpu_create(gpumem_driver_t *driver, unsigned index,
                               gpumem_gpu_t **gpu_p);

/**
 * Release the GPU's function (bus mastering off), then give back all it
 * holds, regions that are out included; its mappings of other GPUs' memory
 * end as their frees would. Memory another GPU maps stays for that GPU.
 * Releasing again does nothing more. Alloc, map_host and map_peer are
 * UCS_ERR_INVALID_PARAM afterwards.
 */
void gpumem_gpu_release(gpumem_gpu_t *gpu);

/* Release (if not yet) and free the object, once no other GPU maps its
 * memory; until then the object lives on for its peers. Memory a bus client
 * was given stays, with the object, until the process exits */
void gpumem_gpu_destroy(gpumem_gpu_t *gpu);

/* Whether a bus client was given memory of the GPU (gpumem_bus): its
 * driver must stay open until the process exits */
int gpumem_gpu_is_reserved(gpumem_gpu_t *gpu);

const gpumem_topo_reach_t *gpumem_gpu_reach(const gpumem_gpu_t *gpu);

/* Bytes of VRAM the GPU has */
size_t gpumem_gpu_vram_size(const gpumem_gpu_t *gpu);

/* Bytes of VRAM the GPU has free now, every process's allocations and
 * mappings taken; UCS_ERR_UNSUPPORTED where the driver does not tell */
ucs_status_t gpumem_gpu_vram_free(gpumem_gpu_t *gpu, size_t *free_p);

/* How much VRAM the GPU has free now, in words ("1.5G of 16G of VRAM
 * free"), for a log line */
const char *gpumem_gpu_vram_free_str(gpumem_gpu_t *gpu, char *buf,
                                     size_t max);


/**
 * @a size new bytes of @a kind. System memory is rounded up to the
 * machine's page; GPU memory to 4 KiB, or to 2 MiB from 8 MiB on.
 */
ucs_status_t gpumem_alloc(gpumem_gpu_t *gpu, gpumem_kind_t kind, size_t size,
                          unsigned flags, gpumem_region_t **region_p);

/**
 * Map for the GPU the pages that hold @a size bytes at @a addr: pins them
 * and maps them anew at each call.
 */
ucs_status_t gpumem_map_host(gpumem_gpu_t *gpu, void *addr, size_t size,
                             gpumem_region_t **region_p);

/**
 * Map @a region, of any GPU (this one included), for this GPU. Where this
 * GPU maps that memory already, the result is a new region over the same
 * mapping, which writes no table and pins nothing. If @a region came from
 * map_peer, the region it maps is mapped.
 */
ucs_status_t gpumem_map_peer(gpumem_gpu_t *gpu, gpumem_region_t *region,
                             gpumem_region_t **region_p);

/**
 * Give back what alloc, map_host or map_peer gave. UCS_ERR_INVALID_PARAM if
 * the region is not this GPU's or was freed.
 */
ucs_status_t gpumem_free(gpumem_gpu_t *gpu, gpumem_region_t *region);

/**
 * Where the PCI function at bus address @a client ("0000:3b:00.0"), a
 * function of the machine @a topo describes, reaches the region's memory by
 * DMA: GPU memory at its BAR's bus address plus its physical address,
 * system memory at its physical addresses (its pages pinned through the
 * driver, as map_host pins, to the process's exit). From then on,
 * until the process exits, the memory and the GPU are reserved for it: a
 * free gives nothing back, a release keeps the function taken. @a ranges_p
 * is allocated (ucs_free it).
 *
 * @return UCS_ERR_NO_DEVICE where @a client is not a bus address or names
 *         no function of the machine; UCS_ERR_UNREACHABLE where it does not
 *         reach the memory; UCS_ERR_UNSUPPORTED where the driver does not
 *         know where GPU memory lies, or the kernel hides physical addresses
 *         from the process (no CAP_SYS_ADMIN), or the driver's system
 *         memory is not whole pages; the driver's pin refusal, or
 *         UCS_ERR_EXCEEDS_LIMIT where mlock() refuses, where system memory's
 *         pages cannot be pinned; UCS_ERR_NO_ELEM where a page is
 *         still not in memory, UCS_ERR_IO_ERROR where the kernel's page map
 *         cannot be read; UCS_ERR_INVALID_PARAM for a region alloc did not
 *         give the GPU, or a released GPU. Each logged.
 */
ucs_status_t gpumem_bus(gpumem_gpu_t *gpu, gpumem_region_t *region,
                        const gpumem_topo_t *topo, const char *client,
                        gpumem_bus_range_t **ranges_p, unsigned *count_p);

#define GPUMEM_EXPORT_MAX  (GPUMEM_DRIVER_EXPORT_MAX + 16)


/**
 * A handle by which another process of the machine maps the GPU memory of
 * @a region (gpumem_import), and which keeps the memory while that process
 * holds it. @a buf holds GPUMEM_EXPORT_MAX bytes. UCS_ERR_UNSUPPORTED for
 * system memory.
 */
ucs_status_t gpumem_export(gpumem_region_t *region, void *buf,
                           size_t *length_p);

/**
 * A handle of device memory the application allocated with the driver's own
 * calls (cudaMalloc), which gpumem_import maps in another process: the
 * allocation that holds @a address, on @a gpu, whose first byte and size
 * are set in @a base_p and @a size_p. UCS_ERR_UNSUPPORTED where the driver
 * has no such handles (the emu, whose device memory is all the core's).
 */
ucs_status_t gpumem_export_addr(gpumem_gpu_t *gpu, const void *address,
                                void *buf, size_t *length_p,
                                uint64_t *base_p, size_t *size_p);

/**
 * map_peer across processes: map for @a gpu the memory another process
 * exported. The handle is bytes from a peer: every field is checked, and a
 * bad one is UCS_ERR_INVALID_PARAM (or the driver's refusal) with a log
 * line. Importing the same memory again maps nothing new: the result is a
 * new region over the same mapping.
 */
ucs_status_t gpumem_import(gpumem_gpu_t *gpu, const void *buf, size_t length,
                           gpumem_region_t **region_p);

/**
 * Whether a live region's memory is still what it was given as: for memory
 * imported from another process, the memory its handle named, which this
 * process holds (the driver's check, where it has one). UCS_ERR_NO_ELEM,
 * logged, where it is not; UCS_ERR_INVALID_PARAM for a freed region.
 */
ucs_status_t gpumem_region_check(gpumem_region_t *region);

/**
 * The region of @a gpu whose addresses hold @a address, or NULL; the first
 * given where several do (peer regions over one mapping share addresses).
 */
gpumem_region_t *gpumem_find_region(gpumem_gpu_t *gpu, uint64_t address);

/**
 * The first byte and size of the region of @a gpu whose addresses hold
 * @a address, read in one call, so that a free in another thread cannot
 * come between; UCS_ERR_NO_ELEM if none does. The size of an allocation is
 * the bytes alloc was asked for (as cuMemGetAddressRange gives), not them
 * rounded up to pages.
 */
ucs_status_t gpumem_find_range(gpumem_gpu_t *gpu, uint64_t address,
                               uint64_t *base_p, size_t *size_p);

/**
 * The allocation that holds @a address, its first byte and size (the bytes
 * it has: an allocation's rounded up to pages) and, where @a asked_p is not
 * NULL, the bytes it was asked for: a region of @a gpu (*own_p is 1), else
 * memory the application allocated on the driver with its own calls
 * (cudaMalloc; *own_p is 0). UCS_ERR_NO_ELEM if neither holds it.
 */
ucs_status_t gpumem_find_allocation(gpumem_gpu_t *gpu, uint64_t address,
                                    uint64_t *base_p, size_t *size_p,
                                    size_t *asked_p, int *own_p);

/**
 * The index of the GPU of @a driver whose device addresses hold
 * @a address, or -1 where it is no device address of the driver.
 */
int gpumem_device_addr_gpu(gpumem_driver_t *driver, const void *address);

/**
 * As gpumem_device_addr_gpu(), then gpumem_find_allocation() on that GPU
 * (of @a gpus, the driver's), asking the driver once where it can: the
 * GPU's index, or -1; *found_p says whether an allocation holds the
 * device address, and then where it starts and the bytes asked of it.
 */
int gpumem_device_addr_allocation(gpumem_driver_t *driver,
                                  gpumem_gpu_t *const *gpus, uint64_t address,
                                  uint64_t *base_p, size_t *asked_p,
                                  int *found_p);

/* Allocations of device memory begin on a boundary of this many bytes
 * (cudaMalloc's, the core's and the emu's pages): none begins in the rest
 * of the block where another ends */
#define GPUMEM_ALLOC_BLOCK  256

/* Whether the @a length bytes at @a start lie in the allocation of @a size
 * bytes at @a base, to the end of its last block: UCP's registration cache
 * rounds a range out to its alignment (an 8-byte cudaMalloc is registered
 * as 16 bytes) */
static inline int gpumem_alloc_holds(uint64_t base, size_t size,
                                     uint64_t start, size_t length)
{
    uint64_t end = (base + size + GPUMEM_ALLOC_BLOCK - 1) &
                   ~(uint64_t)(GPUMEM_ALLOC_BLOCK - 1);

    return (start >= base) && (start < end) && (length <= end - start);
}

/* The GPU address of the region's first byte */
uint64_t gpumem_region_address(const gpumem_region_t *region);
size_t gpumem_region_size(const gpumem_region_t *region);
gpumem_kind_t gpumem_region_kind(const gpumem_region_t *region);
/* The process's window on the region's bytes, or NULL */
void *gpumem_region_host(const gpumem_region_t *region);
gpumem_gpu_t *gpumem_region_gpu(const gpumem_region_t *region);

/**
 * The VRAM behind a region of GPU memory (kinds GPU and BAR, and peer
 * regions over them), and the offset in it of the region's first byte: what
 * a client that reaches VRAM through the driver (its dma-buf export, its BAR
 * window) names the memory by. The VRAM is the memory's: it goes back with
 * the memory, so whoever reaches it must stop before the last free.
 *
 * @return UCS_ERR_UNSUPPORTED, logged, for system memory (kind HOST), which
 *         has no VRAM; UCS_ERR_INVALID_PARAM, logged, for a region that was
 *         freed or whose GPU was released.
 */
ucs_status_t gpumem_region_vram(gpumem_region_t *region,
                                gpumem_driver_mem_t **vram_p,
                                size_t *offset_p);


/**
 * What the GPU holds now, for tests and diagnostics.
 */
typedef struct gpumem_gpu_stats {
    unsigned regions;        /* Regions out */
    unsigned mappings;       /* Distinct mappings its tables hold */
    unsigned memories;       /* Memory objects it owns, freed ones included
                                while a peer maps them */
    unsigned kept;           /* Memory kept for an unconfirmed flush or a
                                bus reservation */
    size_t   vram_bytes;     /* VRAM it holds */
} gpumem_gpu_stats_t;

void gpumem_gpu_stats(gpumem_gpu_t *gpu, gpumem_gpu_stats_t *stats);

END_C_DECLS

#endif
