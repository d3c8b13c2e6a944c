/**
 * gpumem emulator: the emulated machine, software GPUs that implement the
 * plugin's driver interface at the level seed 003 speaks of (page tables,
 * VRAM, BAR, bus, a copy engine). The plugin takes it as its emu driver,
 * by name only (UCX_GPUMEM_DRIVER=emu), through the row this library
 * exports (gpumem_emu_driver_desc); the emulated CUDA libraries are made of it.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_H_
#define GPUMEM_EMU_H_

#include <uct/gpumem/driver/gpumem_drivers.h>
#include <ucs/config/parser.h>

BEGIN_C_DECLS

/**
 * The emulated machine's settings (UCX_GPUMEM_EMU_* variables).
 */
typedef struct gpumem_emu_config {
    size_t     vram_size;   /* Per GPU, where the topology gives none;
                               0: GPUMEM_EMU_DEFAULT_VRAM_SIZE */
    size_t     bar_size;    /* Per GPU, where the topology gives none; 0: as
                               large as VRAM */
    const char *shm_dir;    /* Where the GPUs' shared allocator state lives
                               (VRAM itself is a memfd); NULL: the default */
    size_t     copy_inline_max; /* Copies up to this size complete inline */
} gpumem_emu_config_t;

/* The emu driver's row of the plugin's table of drivers, which the plugin
 * loads from this library (GPUMEM_EMU_DRIVER_SYMBOL) */
extern const gpumem_driver_desc_t gpumem_emu_driver_desc;

/* The settings' table (UCX_GPUMEM_EMU_*), for UCS's global list */
extern ucs_config_global_list_entry_t gpumem_emu_config_entry;


/* Defaults of the settings, for the configuration table. VRAM is sparse:
 * an untouched byte costs nothing, so the size costs only address space. */
#define GPUMEM_EMU_DEFAULT_VRAM_SIZE       (1ul << 30)
#define GPUMEM_EMU_DEFAULT_SHM_DIR         "/dev/shm"
#define GPUMEM_EMU_DEFAULT_COPY_INLINE_MAX 8192

/* The kernel's device through which the emu exports VRAM as a dma-buf */
#define GPUMEM_EMU_UDMABUF_DEV             "/dev/udmabuf"


/**
 * Open the emu machine: one emulated GPU for each GPU of @a topo (at its PCI
 * address, with its memory size where the topology has one). VRAM is shared
 * with every process of the machine that opens the same topology as the
 * same user. Sets the emulated GPUs' facts in @a topo (BAR and memory
 * sizes; no IOMMU and no ACS redirect where the topology knows none) so
 * that reaches() sees the emulated machine.
 */
ucs_status_t gpumem_emu_open(const gpumem_emu_config_t *config,
                             gpumem_topo_t *topo, gpumem_driver_t **driver_p);

/* The built-in machine: two GPUs under one PCIe switch, one NIC beside them
 * (an hwloc XML document) */
extern const char gpumem_emu_builtin_topology[];

/**
 * Load the topology the plugin's settings name, read from the environment
 * (UCX_GPUMEM_TOPO_XML, else the built-in machine; UCX_GPUMEM_SYSFS_ROOT;
 * UCX_GPUMEM_TOPO_FACTS): the machine the emulated CUDA libraries, which
 * have no UCX configuration of their own, emulate as the plugin's emu
 * driver does.
 */
ucs_status_t gpumem_emu_topology_from_env(gpumem_topo_t **topo_p);

/**
 * For tests: the process kills itself (SIGKILL) when it reaches the step
 * @a point of a change of the shared state: "alloc-placed", "alloc-listed",
 * "alloc-held", "free-unlisted", "free-punched", "import-held"; NULL or ""
 * never. UCS_ERR_INVALID_PARAM for another name.
 */
ucs_status_t gpumem_emu_test_die_at(const char *point);

/**
 * For tests: whether the shared state of GPU @a index of an emu driver is
 * consistent (every extent listed once in order, held by a process that is
 * attached, within the VRAM); what is wrong in @a why.
 */
int gpumem_emu_state_is_consistent(gpumem_driver_t *driver, unsigned index,
                                   char *why, size_t max);

/**
 * For tests: sets the generation of the shared extent behind @a mem, as if
 * another allocation had taken it, and returns the one it had.
 */
uint64_t gpumem_emu_test_set_generation(gpumem_driver_mem_t *mem,
                                        uint64_t generation);

END_C_DECLS

#endif
