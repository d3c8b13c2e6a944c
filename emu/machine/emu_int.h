/**
 * gpumem emu driver: the emulated machine's objects, shared by its files.
 *
 * One driver drives every GPU of the machine. Each GPU has its VRAM (a
 * memfd that every process of the machine maps, with an allocator state
 * file beside it: emu_state.c, emu_vram.c), its device address range and
 * page tables (emu_va.c) and its copy engine (emu_copy.c). Host memory the
 * GPUs reach is the driver's (emu_host.c).
 *
 * Locks: each GPU's mutex guards the GPU's process-local state, and is taken
 * before the flock of the GPU's shared state; no call holds two GPUs'
 * mutexes. The host lock guards the host registry and is taken alone.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_INT_H_
#define GPUMEM_EMU_INT_H_

#include "emu.h"

#include <ucs/datastruct/list.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <limits.h>
#include <pthread.h>


#define GPUMEM_EMU_PAGE_SIZE       4096ul        /* Small GPU page */
#define GPUMEM_EMU_LARGE_PAGE_SIZE (2ul << 20)   /* Large GPU page */
#define GPUMEM_EMU_PTES_PER_PDE    (GPUMEM_EMU_LARGE_PAGE_SIZE / \
                                    GPUMEM_EMU_PAGE_SIZE)
#define GPUMEM_EMU_FAULT_KINDS     (GPUMEM_DRIVER_FAULT_NO_TABLE_ROOM + 1)
#define GPUMEM_EMU_DIR_SIZE        (1ul << 30)   /* Addresses of a directory */
#define GPUMEM_EMU_PDES_PER_DIR    (GPUMEM_EMU_DIR_SIZE / \
                                    GPUMEM_EMU_LARGE_PAGE_SIZE)


/* Logs with the GPU named, as every message of a GPU's operation does */
#define gpumem_emu_gpu_log(_level, _gpu, _fmt, ...) \
    ucs_log(_level, "gpumem_emu: GPU %s: " _fmt, (_gpu)->name, ## __VA_ARGS__)
#define gpumem_emu_gpu_error(_gpu, _fmt, ...) \
    gpumem_emu_gpu_log(UCS_LOG_LEVEL_ERROR, _gpu, _fmt, ## __VA_ARGS__)
#define gpumem_emu_gpu_debug(_gpu, _fmt, ...) \
    gpumem_emu_gpu_log(UCS_LOG_LEVEL_DEBUG, _gpu, _fmt, ## __VA_ARGS__)


typedef struct gpumem_emu_driver gpumem_emu_driver_t;
typedef struct gpumem_emu_state  gpumem_emu_state_t;


/**
 * What a page table entry points at.
 */
typedef enum {
    GPUMEM_EMU_PT_NONE = 0, /* Not mapped: an access faults */
    GPUMEM_EMU_PT_HOST,     /* A pinned host page, by host address */
    GPUMEM_EMU_PT_VRAM      /* VRAM of a GPU (its own or a peer's), by
                               offset */
} gpumem_emu_pt_kind_t;


/**
 * One page table entry: a 4 KiB page, or a 2 MiB one in a directory entry.
 */
typedef struct gpumem_emu_pte {
    uint64_t addr;   /* VRAM offset or host address of the page */
    uint8_t  kind;   /* gpumem_emu_pt_kind_t */
    uint8_t  flags;  /* GPUMEM_DRIVER_MAP_* */
    uint16_t gpu;    /* GPUMEM_EMU_PT_VRAM: index of the VRAM's GPU */
} gpumem_emu_pte_t;


/**
 * A page directory entry: 2 MiB of device addresses, mapped by one large
 * page or by a table of small ones. Directories of 1 GiB of addresses
 * exist where something was mapped, so that a large space costs little.
 */
typedef struct gpumem_emu_pde {
    gpumem_emu_pte_t large;  /* kind NONE unless a large page */
    gpumem_emu_pte_t *ptes;  /* GPUMEM_EMU_PTES_PER_PDE entries, or NULL */
    unsigned         count;  /* Small pages mapped in ptes */
} gpumem_emu_pde_t;


/**
 * A reserved range of device addresses.
 */
typedef struct gpumem_emu_va_range {
    uint64_t start;
    uint64_t size;
} gpumem_emu_va_range_t;


/**
 * An emulated GPU, as this process drives it.
 */
struct gpumem_emu_gpu;

/*
 * What locking the shared state recovers through the allocator that keeps
 * the state (emu_vram.c): the changes a writer that died holding the lock
 * left half-done, and what a dead process held. The state's file and lock
 * (emu_state.c) call them, and the allocator takes the lock: given at
 * attach, so that neither file calls the other back.
 */
typedef struct gpumem_emu_recovery {
    /* Rebuilds the order of extents from the extents themselves and gives
     * back what no process holds, after @a writer died changing them */
    void (*repair)(struct gpumem_emu_gpu *gpu, int writer);
    /* Gives back what process slot @a proc_slot held */
    void (*drop_proc)(struct gpumem_emu_gpu *gpu, unsigned proc_slot);
} gpumem_emu_recovery_t;


typedef struct gpumem_emu_gpu {
    gpumem_emu_driver_t   *driver;
    unsigned              index;
    char                  name[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_topo_reach_t   reach;
    size_t                vram_size;
    size_t                bar_size;

    pthread_mutex_t       lock;
    int                   released;     /* Bus mastering is off */
    const gpumem_emu_recovery_t *recovery; /* Of the shared state, through
                                              its allocator */
    /* Injected faults that the next matching operations meet, by kind */
    unsigned              faults[GPUMEM_EMU_FAULT_KINDS];

    /* Shared VRAM: emu_state.c */
    char                  state_path[PATH_MAX];
    int                   state_fd;
    gpumem_emu_state_t    *state;       /* Mapped allocator state */
    unsigned              proc_slot;    /* This process's slot in it */
    int                   vram_fd;      /* The VRAM memfd */
    void                  *window;      /* The driver's window on VRAM */
    ucs_list_link_t       attached;     /* In the list of GPUs this
                                           process attached */

    /* This process's holds of VRAM extents: emu_vram.c */
    uint32_t              *holds;       /* Count per extent slot */
    ucs_list_link_t       mems;         /* Live gpumem_emu_mem_t */

    /* Device addresses and page tables: emu_va.c. The GPU reserves in its
     * own part of the machine's space, and its tables map any address of
     * the space */
    pthread_mutex_t       va_lock;      /* Its reservations: taken alone or
                                           inside a GPU's lock, never around
                                           another lock */
    uint64_t              va_base;      /* Its part of the space, 2 MiB
                                           aligned */
    size_t                va_size;
    gpumem_emu_va_range_t *ranges;      /* Reserved, by address */
    unsigned              num_ranges;
    unsigned              max_ranges;
    gpumem_emu_pde_t      **dirs;       /* Per GiB of the space: its 2 MiB
                                           entries, or NULL if none mapped */
    size_t                num_dirs;
} gpumem_emu_gpu_t;


/**
 * Host memory the driver knows: pinned by pin() or given by sys_alloc().
 */
typedef struct gpumem_emu_host {
    unsigned gpu;    /* For which GPU */
    int      is_sys; /* Given by sys_alloc (pinned by nature) */
    uintptr_t addr;
    size_t   size;
} gpumem_emu_host_t;


/**
 * The emulated machine.
 */
struct gpumem_emu_driver {
    gpumem_driver_t    super;
    char               shm_dir[PATH_MAX];
    unsigned           copy_inline_max;
    uint64_t           machine_hash;  /* Of reach.machine: names the files */
    unsigned           num_gpus;
    gpumem_emu_gpu_t   *gpus;

    /* The machine's device addresses, one space for all its GPUs, as
     * unified addressing has it: emu_va.c */
    void               *space_map;    /* The PROT_NONE reservation */
    size_t             space_map_size;
    uint64_t           space_base;    /* 2 MiB aligned, inside space_map */
    size_t             space_size;

    pthread_mutex_t    host_lock;
    gpumem_emu_host_t  *host;         /* Pins and system memory */
    unsigned           num_host;
    unsigned           max_host;
};


/**
 * VRAM of a GPU as this process holds it: allocated here or imported.
 */
typedef struct gpumem_emu_mem {
    gpumem_driver_mem_t super;
    ucs_list_link_t     list;        /* In the owner GPU's mems */
    uint32_t            extent;      /* Slot in the shared state */
    uint64_t            generation;  /* The extent's, when taken */
    int                 imported;
} gpumem_emu_mem_t;


static UCS_F_ALWAYS_INLINE gpumem_emu_gpu_t *
gpumem_emu_gpu(gpumem_driver_gpu_t *gpu)
{
    return (gpumem_emu_gpu_t*)gpu;
}

static UCS_F_ALWAYS_INLINE gpumem_driver_gpu_t *
gpumem_emu_gpu_handle(gpumem_emu_gpu_t *gpu)
{
    return (gpumem_driver_gpu_t*)gpu;
}

static UCS_F_ALWAYS_INLINE gpumem_emu_mem_t *
gpumem_emu_mem(gpumem_driver_mem_t *mem)
{
    return ucs_container_of(mem, gpumem_emu_mem_t, super);
}

static UCS_F_ALWAYS_INLINE gpumem_emu_gpu_t *
gpumem_emu_mem_gpu(gpumem_driver_mem_t *mem)
{
    return gpumem_emu_gpu(mem->gpu);
}


/* emu_guard.c: an injected fault of that kind, consumed (GPU lock held) */
int gpumem_emu_fault_take(gpumem_emu_gpu_t *gpu, gpumem_driver_fault_t fault);

/* emu_guard.c: UCS_ERR_NOT_CONNECTED, logged, once the GPU is released
 * (GPU lock held) */
ucs_status_t gpumem_emu_check_live(gpumem_emu_gpu_t *gpu, const char *what);


/* emu_topology.c: the emulated GPUs' facts, written into the topology */
ucs_status_t gpumem_emu_topology_apply(const gpumem_emu_config_t *config,
                                       gpumem_topo_t *topo,
                                       gpumem_emu_driver_t *driver);


/* emu_state.c: the shared VRAM and allocator state of a GPU */
ucs_status_t gpumem_emu_state_attach(gpumem_emu_gpu_t *gpu,
                                     const gpumem_emu_recovery_t *recovery);
/* While @a taken, no other process attaches to the GPU */
void gpumem_emu_state_keep_taken(gpumem_emu_gpu_t *gpu, int taken);
void gpumem_emu_state_detach(gpumem_emu_gpu_t *gpu);
void gpumem_emu_state_lock(gpumem_emu_gpu_t *gpu);
void gpumem_emu_state_unlock(gpumem_emu_gpu_t *gpu);
void gpumem_emu_state_sweep(gpumem_emu_gpu_t *gpu, int thorough);


/*
 * Steps of the changes of the shared state at which a test may have the
 * process die (gpumem_emu_test_die_at), to prove each crash-consistent.
 */
typedef enum {
    GPUMEM_EMU_POINT_NONE = 0,
    GPUMEM_EMU_POINT_ALLOC_PLACED,  /* An extent written, not yet listed */
    GPUMEM_EMU_POINT_ALLOC_LISTED,  /* Listed, not yet held */
    GPUMEM_EMU_POINT_ALLOC_HELD,    /* Held, not yet given to the caller */
    GPUMEM_EMU_POINT_FREE_UNLISTED, /* Unlisted, its memory not yet back */
    GPUMEM_EMU_POINT_FREE_PUNCHED,  /* Its memory back, its slot not clear */
    GPUMEM_EMU_POINT_IMPORT_HELD,   /* An import held, not yet mapped */
    GPUMEM_EMU_POINT_LAST
} gpumem_emu_point_t;

extern gpumem_emu_point_t gpumem_emu_die_point;

void gpumem_emu_die(gpumem_emu_point_t point);

static UCS_F_ALWAYS_INLINE void gpumem_emu_test_point(gpumem_emu_point_t point)
{
    if (ucs_unlikely(gpumem_emu_die_point == point)) {
        gpumem_emu_die(point);
    }
}

/* emu_vram.c: VRAM allocation; holds (GPU lock held) */
void gpumem_emu_vram_hold(gpumem_emu_gpu_t *gpu, uint32_t extent);
void gpumem_emu_vram_unhold(gpumem_emu_gpu_t *gpu, uint32_t extent);
/* The recovery of the shared state through the allocator (state lock held) */
extern const gpumem_emu_recovery_t gpumem_emu_vram_recovery;
gpumem_emu_mem_t *gpumem_emu_vram_mem_new(gpumem_emu_gpu_t *gpu,
                                          uint32_t extent, int imported);
void gpumem_emu_vram_cleanup(gpumem_emu_gpu_t *gpu);
ucs_status_t gpumem_emu_mem_alloc(gpumem_driver_gpu_t *gpu, size_t size,
                                  size_t page_size, int in_bar,
                                  gpumem_driver_mem_t **mem_p);
void gpumem_emu_mem_free(gpumem_driver_mem_t *mem);
ucs_status_t gpumem_emu_vram_free(gpumem_driver_gpu_t *gpu, size_t *free_p);
/* Whether the state is consistent; what is not, in @a why (state lock
 * held) */
int gpumem_emu_vram_check(gpumem_emu_gpu_t *gpu, char *why, size_t max);


/* emu_export.c: handles another process imports */
ucs_status_t gpumem_emu_mem_export(gpumem_driver_mem_t *mem, void *buf,
                                   size_t *length_p);
ucs_status_t gpumem_emu_import_check(gpumem_driver_mem_t *mem);
ucs_status_t gpumem_emu_mem_import(gpumem_driver_gpu_t *gpu, const void *buf,
                                   size_t length,
                                   gpumem_driver_mem_t **mem_p);


/* emu_va.c: device addresses and page tables */
/* The machine's space, @a va_size bytes of it per GPU (less where the
 * process cannot reserve that much), and each GPU's part of it */
ucs_status_t gpumem_emu_space_init(gpumem_emu_driver_t *driver,
                                   size_t va_size);
void gpumem_emu_space_cleanup(gpumem_emu_driver_t *driver);
void gpumem_emu_va_cleanup(gpumem_emu_gpu_t *gpu);
void gpumem_emu_pt_clear(gpumem_emu_gpu_t *gpu);
ucs_status_t gpumem_emu_pt_translate(gpumem_emu_gpu_t *gpu, uint64_t va,
                                     void **ptr_p, size_t *contig_p);
ucs_status_t gpumem_emu_va_reserve(gpumem_driver_gpu_t *gpu, size_t size,
                                   size_t align, uint64_t *va_p);
void gpumem_emu_va_release(gpumem_driver_gpu_t *gpu, uint64_t va,
                           size_t size);
ucs_status_t gpumem_emu_pt_map_vram(gpumem_driver_gpu_t *gpu, uint64_t va,
                                    gpumem_driver_mem_t *mem, size_t offset,
                                    size_t size, unsigned flags);
ucs_status_t gpumem_emu_pt_map_host(gpumem_driver_gpu_t *gpu, uint64_t va,
                                    void *host, size_t size, unsigned flags);
ucs_status_t gpumem_emu_pt_unmap(gpumem_driver_gpu_t *gpu, uint64_t va,
                                 size_t size);


/* emu_host.c: pins and system memory */
int gpumem_emu_host_is_pinned(gpumem_emu_gpu_t *gpu, uintptr_t addr,
                              size_t size);
void gpumem_emu_host_cleanup(gpumem_emu_driver_t *driver);
ucs_status_t gpumem_emu_pin(gpumem_driver_gpu_t *gpu, void *addr,
                            size_t size);
void gpumem_emu_unpin(gpumem_driver_gpu_t *gpu, void *addr, size_t size);
ucs_status_t gpumem_emu_sys_alloc(gpumem_driver_gpu_t *gpu, size_t size,
                                  void **addr_p);
void gpumem_emu_sys_free(gpumem_driver_gpu_t *gpu, void *addr, size_t size);


/* emu_bar.c: the BAR window, bus addresses, dma-buf */
ucs_status_t gpumem_emu_bar_map(gpumem_driver_mem_t *mem, void **addr_p);
void gpumem_emu_bar_unmap(void *addr, size_t size);
uint64_t gpumem_emu_bar_bus_addr(gpumem_driver_gpu_t *gpu);
ucs_status_t gpumem_emu_dmabuf_export(gpumem_driver_mem_t *mem, int *fd_p,
                                      size_t *offset_p);


/* emu_copy.c: the copy engine */
ucs_status_t gpumem_emu_copy(gpumem_driver_gpu_t *gpu, uint64_t dst,
                             int dst_dev, uint64_t src, int src_dev,
                             size_t size, gpumem_driver_copy_t *copy);
ucs_status_t gpumem_emu_copy_poll(gpumem_driver_copy_t *copy);

#endif
