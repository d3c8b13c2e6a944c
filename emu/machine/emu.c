/**
 * gpumem emu driver: opening and closing the emulated machine, its GPUs and
 * their facts, release, the tests' views of the shared state, and the ops
 * table, which uses every other file of the driver and is used by none.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_state.h"

#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <ucs/sys/string.h>
#include <limits.h>
#include <signal.h>
#include <string.h>


/* Each GPU's device addresses: room for every GPU's VRAM mapped in it and
 * as much host memory, and no less than a discrete GPU's space would give
 * a small machine */
#define GPUMEM_EMU_VA_MIN_SIZE  (16ul << 30)
#define GPUMEM_EMU_VA_VRAM_MUL  2


int gpumem_emu_state_is_consistent(gpumem_driver_t *driver, unsigned index,
                                   char *why, size_t max)
{
    gpumem_emu_gpu_t *gpu = &ucs_derived_of(driver,
                                            gpumem_emu_driver_t)->gpus[index];
    int consistent;

    pthread_mutex_lock(&gpu->lock);
    gpumem_emu_state_lock(gpu);
    consistent = gpumem_emu_vram_check(gpu, why, max);
    gpumem_emu_state_unlock(gpu);
    pthread_mutex_unlock(&gpu->lock);
    return consistent;
}

uint64_t gpumem_emu_test_set_generation(gpumem_driver_mem_t *dmem,
                                        uint64_t generation)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(dmem);
    gpumem_emu_extent_t *extent;
    uint64_t old;

    pthread_mutex_lock(&gpu->lock);
    gpumem_emu_state_lock(gpu);
    extent             = &gpu->state->extents[gpumem_emu_mem(dmem)->extent];
    old                = extent->generation;
    extent->generation = generation;
    gpumem_emu_state_unlock(gpu);
    pthread_mutex_unlock(&gpu->lock);
    return old;
}

static gpumem_emu_driver_t *gpumem_emu_driver(gpumem_driver_t *driver)
{
    return ucs_derived_of(driver, gpumem_emu_driver_t);
}

static unsigned gpumem_emu_num_gpus(gpumem_driver_t *driver)
{
    return gpumem_emu_driver(driver)->num_gpus;
}

static gpumem_driver_gpu_t *gpumem_emu_gpu_at(gpumem_driver_t *driver,
                                              unsigned index)
{
    gpumem_emu_driver_t *emu = gpumem_emu_driver(driver);

    return (index < emu->num_gpus) ?
           gpumem_emu_gpu_handle(&emu->gpus[index]) : NULL;
}

static const gpumem_topo_reach_t *gpumem_emu_reach(gpumem_driver_gpu_t *gpu)
{
    return &gpumem_emu_gpu(gpu)->reach;
}

static size_t gpumem_emu_vram_size(gpumem_driver_gpu_t *gpu)
{
    return gpumem_emu_gpu(gpu)->vram_size;
}

static size_t gpumem_emu_bar_size(gpumem_driver_gpu_t *gpu)
{
    return gpumem_emu_gpu(gpu)->bar_size;
}

static int gpumem_emu_is_device_addr(gpumem_driver_t *driver,
                                     const void *addr, unsigned *gpu_index_p)
{
    gpumem_emu_driver_t *emu = gpumem_emu_driver(driver);
    gpumem_emu_gpu_t *gpu;
    unsigned i;

    for (i = 0; i < emu->num_gpus; ++i) {
        gpu = &emu->gpus[i];
        if (((uintptr_t)addr >= gpu->va_base) &&
            (((uintptr_t)addr - gpu->va_base) < gpu->va_size)) {
            *gpu_index_p = i;
            return 1;
        }
    }
    return 0;
}

static void gpumem_emu_release(gpumem_driver_gpu_t *handle)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);

    pthread_mutex_lock(&gpu->lock);
    gpu->released = 1;
    /* It reaches no memory: its tables go with its bus mastering */
    gpumem_emu_pt_clear(gpu);
    pthread_mutex_unlock(&gpu->lock);
    gpumem_emu_gpu_debug(gpu, "released: bus mastering off");
}

static void gpumem_emu_keep_taken(gpumem_driver_gpu_t *handle, int taken)
{
    gpumem_emu_state_keep_taken(gpumem_emu_gpu(handle), taken);
}

static void gpumem_emu_inject_fault(gpumem_driver_gpu_t *handle,
                                    gpumem_driver_fault_t fault)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);

    if ((fault <= GPUMEM_DRIVER_FAULT_NONE) ||
        (fault >= ucs_static_array_size(gpu->faults))) {
        gpumem_emu_gpu_error(gpu, "cannot inject unknown fault %d", fault);
        return;
    }

    pthread_mutex_lock(&gpu->lock);
    ++gpu->faults[fault];
    pthread_mutex_unlock(&gpu->lock);
}

/* Undoes what gpu_init did, as far as it went */
static void gpumem_emu_gpu_cleanup(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_va_cleanup(gpu);
    gpumem_emu_vram_cleanup(gpu);
    gpumem_emu_state_detach(gpu);
    pthread_mutex_destroy(&gpu->va_lock);
    pthread_mutex_destroy(&gpu->lock);
}

static ucs_status_t gpumem_emu_gpu_init(gpumem_emu_gpu_t *gpu)
{
    ucs_status_t status;

    pthread_mutex_init(&gpu->lock, NULL);
    pthread_mutex_init(&gpu->va_lock, NULL);
    ucs_list_head_init(&gpu->mems);
    gpu->state_fd = -1;
    gpu->vram_fd  = -1;

    gpu->holds = ucs_calloc(GPUMEM_EMU_EXTENTS_MAX, sizeof(*gpu->holds),
                            "gpumem_emu_holds");
    if (gpu->holds == NULL) {
        gpumem_emu_gpu_error(gpu, "cannot allocate its holds");
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    status = gpumem_emu_state_attach(gpu, &gpumem_emu_vram_recovery);
    if (status != UCS_OK) {
        goto err;
    }
    return UCS_OK;

err:
    gpumem_emu_gpu_cleanup(gpu);
    return status;
}

static void gpumem_emu_driver_free(gpumem_emu_driver_t *driver,
                                   unsigned num_init)
{
    unsigned i;

    for (i = 0; i < num_init; ++i) {
        gpumem_emu_gpu_cleanup(&driver->gpus[i]);
    }
    gpumem_emu_space_cleanup(driver);
    gpumem_emu_host_cleanup(driver);
    pthread_mutex_destroy(&driver->host_lock);
    ucs_free(driver->gpus);
    ucs_free(driver);
}

static void gpumem_emu_close(gpumem_driver_t *driver)
{
    gpumem_emu_driver_t *emu = gpumem_emu_driver(driver);

    gpumem_emu_driver_free(emu, emu->num_gpus);
}

static uint64_t gpumem_emu_machine_hash(const char *machine)
{
    uint64_t hash = 0xcbf29ce484222325ul; /* FNV-1a */

    for (; *machine != '\0'; ++machine) {
        hash = (hash ^ (unsigned char)*machine) * 0x100000001b3ul;
    }
    return hash;
}

/* The emu's engine is a memmove by the calling thread: measured with
 * "ucx_perftest -l -x gpumemcpy -d gpumem -t put_bw" on the machine of the
 * tests, 4 MiB host->device 10.3 GB/s (the rendezvous pipeline's sizes, out
 * of cache), 8 B 67 ns an operation (a lock, a page table walk, a call).
 * Each process has its own. */
static const gpumem_driver_ops_t gpumem_emu_ops = {
    .name           = "emu",
    .copy_bandwidth = 10000.0 * UCS_MBYTE,
    .copy_latency   = 100e-9,
    .copy_shared    = 0,
    .num_gpus       = gpumem_emu_num_gpus,
    .gpu            = gpumem_emu_gpu_at,
    .reach          = gpumem_emu_reach,
    .vram_size      = gpumem_emu_vram_size,
    .vram_free      = gpumem_emu_vram_free,
    .bar_size       = gpumem_emu_bar_size,
    .close          = gpumem_emu_close,
    .mem_alloc      = gpumem_emu_mem_alloc,
    .mem_free       = gpumem_emu_mem_free,
    .mem_export     = gpumem_emu_mem_export,
    .mem_check      = gpumem_emu_import_check,
    .mem_import     = gpumem_emu_mem_import,
    .va_reserve     = gpumem_emu_va_reserve,
    .va_release     = gpumem_emu_va_release,
    .pt_map_vram    = gpumem_emu_pt_map_vram,
    .pt_map_host    = gpumem_emu_pt_map_host,
    .pt_unmap       = gpumem_emu_pt_unmap,
    .pin            = gpumem_emu_pin,
    .unpin          = gpumem_emu_unpin,
    .sys_alloc      = gpumem_emu_sys_alloc,
    .sys_free       = gpumem_emu_sys_free,
    .bar_map        = gpumem_emu_bar_map,
    .bar_unmap      = gpumem_emu_bar_unmap,
    .bar_bus_addr   = gpumem_emu_bar_bus_addr,
    .dmabuf_export  = gpumem_emu_dmabuf_export,
    .copy           = gpumem_emu_copy,
    .copy_poll      = gpumem_emu_copy_poll,
    .is_device_addr = gpumem_emu_is_device_addr,
    .release        = gpumem_emu_release,
    .keep_taken     = gpumem_emu_keep_taken,
    .inject_fault   = gpumem_emu_inject_fault
};

ucs_status_t gpumem_emu_open(const gpumem_emu_config_t *config,
                             gpumem_topo_t *topo, gpumem_driver_t **driver_p)
{
    gpumem_emu_driver_t *driver;
    ucs_status_t status;
    const char *shm_dir;
    size_t va_size;
    unsigned i;

    if (topo->num_gpus == 0) {
        ucs_error("gpumem_emu: the topology has no GPU to emulate");
        return UCS_ERR_NO_DEVICE;
    }

    shm_dir = (config->shm_dir != NULL) ? config->shm_dir :
              GPUMEM_EMU_DEFAULT_SHM_DIR;
    if (shm_dir[0] == '\0') {
        ucs_error("gpumem_emu: the shared memory directory "
                  "(UCX_GPUMEM_EMU_SHM_DIR) is empty: a directory is needed");
        return UCS_ERR_INVALID_PARAM;
    }
    if (strlen(shm_dir) >= PATH_MAX) {
        ucs_error("gpumem_emu: the shared memory directory %s is too long",
                  shm_dir);
        return UCS_ERR_INVALID_PARAM;
    }

    driver = ucs_calloc(1, sizeof(*driver), "gpumem_emu_driver");
    if (driver == NULL) {
        ucs_error("gpumem_emu: cannot allocate the driver");
        return UCS_ERR_NO_MEMORY;
    }

    driver->gpus = ucs_calloc(topo->num_gpus, sizeof(*driver->gpus),
                              "gpumem_emu_gpus");
    if (driver->gpus == NULL) {
        ucs_error("gpumem_emu: cannot allocate %u GPUs", topo->num_gpus);
        ucs_free(driver);
        return UCS_ERR_NO_MEMORY;
    }

    driver->super.ops       = &gpumem_emu_ops;
    driver->num_gpus        = topo->num_gpus;
    driver->copy_inline_max = ucs_min(config->copy_inline_max, UINT_MAX);
    pthread_mutex_init(&driver->host_lock, NULL);
    ucs_strncpy_zero(driver->shm_dir, shm_dir, sizeof(driver->shm_dir));

    status = gpumem_emu_topology_apply(config, topo, driver);
    if (status != UCS_OK) {
        gpumem_emu_driver_free(driver, 0);
        return status;
    }

    /* The topology gives every GPU the machine's identity */
    driver->machine_hash = gpumem_emu_machine_hash(
            driver->gpus[0].reach.machine);
    va_size              = 0;
    for (i = 0; i < driver->num_gpus; ++i) {
        va_size += GPUMEM_EMU_VA_VRAM_MUL * driver->gpus[i].vram_size;
    }
    va_size = ucs_align_up_pow2(ucs_max(va_size, GPUMEM_EMU_VA_MIN_SIZE),
                                GPUMEM_EMU_LARGE_PAGE_SIZE);

    for (i = 0; i < driver->num_gpus; ++i) {
        status = gpumem_emu_gpu_init(&driver->gpus[i]);
        if (status != UCS_OK) {
            gpumem_emu_driver_free(driver, i);
            return status;
        }
    }

    status = gpumem_emu_space_init(driver, va_size);
    if (status != UCS_OK) {
        gpumem_emu_driver_free(driver, driver->num_gpus);
        return status;
    }

    ucs_debug("gpumem_emu: %u GPUs of machine '%s'", driver->num_gpus,
              driver->gpus[0].reach.machine);
    *driver_p = &driver->super;
    return UCS_OK;
}

static ucs_status_t gpumem_emu_driver_open(const void *config,
                                           gpumem_topo_t *topo,
                                           gpumem_driver_t **driver_p)
{
    return gpumem_emu_open(config, topo, driver_p);
}

const gpumem_driver_desc_t gpumem_emu_driver_desc = {
    .build            = GPUMEM_DRIVER_BUILD_INITIALIZER,
    .name             = "emu",
    .emulated         = 1,
    .probe            = NULL,
    .open             = gpumem_emu_driver_open,
    .builtin_topology = gpumem_emu_builtin_topology,
    .config_entry     = &gpumem_emu_config_entry
};
