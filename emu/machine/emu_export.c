/**
 * gpumem emu driver: the handle that lets another process map VRAM.
 *
 * The handle names an extent of one GPU's shared state by slot and by the
 * generation its allocation got, in one instance of the state. It is bytes
 * from a peer: every field is checked, a handle of memory freed since (or
 * of an earlier VRAM) is stale (UCS_ERR_NO_ELEM), and one that disagrees
 * with the extent it names, or cannot be ours, is refused
 * (UCS_ERR_INVALID_PARAM). The importer becomes a holder of the extent.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_state.h"
#include <uct/gpumem/util/gpumem_proc.h>

#include <ucs/debug/memtrack_int.h>
#include <string.h>
#include <unistd.h>


#define GPUMEM_EMU_HANDLE_MAGIC    0x756d6567u /* "gemu" */
#define GPUMEM_EMU_HANDLE_VERSION  1


/**
 * An exported extent of VRAM. Read on the same machine only, so in the
 * machine's byte order; laid out without padding.
 */
typedef struct gpumem_emu_handle {
    uint32_t magic;
    uint16_t version;
    uint16_t length;       /* sizeof(gpumem_emu_handle_t) */
    uint32_t uid;          /* The owner's user */
    int32_t  pid;          /* The exporting process, for logs */
    uint64_t machine;      /* Hash of the machine's identity */
    uint16_t pci_domain;   /* The GPU */
    uint8_t  pci_bus;
    uint8_t  pci_dev;
    uint8_t  pci_fn;
    uint8_t  reserved[3];  /* Zero */
    uint32_t extent;       /* Slot in the shared state */
    uint32_t reserved2;    /* Zero */
    uint64_t instance;     /* Of the shared state */
    uint64_t generation;   /* Of the extent's allocation */
    uint64_t offset;       /* The extent, as allocated */
    uint64_t size;
    uint64_t page_size;
} gpumem_emu_handle_t;


ucs_status_t gpumem_emu_mem_export(gpumem_driver_mem_t *dmem, void *buf,
                                   size_t *length_p)
{
    gpumem_emu_mem_t *mem = gpumem_emu_mem(dmem);
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(dmem);
    gpumem_emu_handle_t handle;

    UCS_STATIC_ASSERT(sizeof(handle) == 80); /* No padding */
    UCS_STATIC_ASSERT(sizeof(handle) <= GPUMEM_DRIVER_EXPORT_MAX);

    memset(&handle, 0, sizeof(handle));
    handle.magic      = GPUMEM_EMU_HANDLE_MAGIC;
    handle.version    = GPUMEM_EMU_HANDLE_VERSION;
    handle.length     = sizeof(handle);
    handle.uid        = geteuid();
    handle.pid        = gpumem_proc_pid();
    handle.machine    = gpu->driver->machine_hash;
    handle.pci_domain = gpu->reach.addr.domain;
    handle.pci_bus    = gpu->reach.addr.bus;
    handle.pci_dev    = gpu->reach.addr.dev;
    handle.pci_fn     = gpu->reach.addr.fn;
    handle.extent     = mem->extent;
    handle.instance   = gpu->state->instance;
    handle.generation = mem->generation;
    handle.offset     = dmem->phys;
    handle.size       = dmem->size;
    handle.page_size  = dmem->page_size;

    memcpy(buf, &handle, sizeof(handle));
    *length_p = sizeof(handle);
    return UCS_OK;
}

static int gpumem_emu_handle_reserved_zero(const gpumem_emu_handle_t *handle)
{
    return (handle->reserved[0] == 0) && (handle->reserved[1] == 0) &&
           (handle->reserved[2] == 0) && (handle->reserved2 == 0);
}

/* Checks what a handle says without the shared state: its form, and that
 * it can be memory of this GPU of this machine and user */
static ucs_status_t gpumem_emu_handle_check(gpumem_emu_gpu_t *gpu,
                                            const gpumem_emu_handle_t *handle)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_pci_addr_t pci;

    if ((handle->magic != GPUMEM_EMU_HANDLE_MAGIC) ||
        (handle->length != sizeof(*handle)) ||
        !gpumem_emu_handle_reserved_zero(handle)) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle: not an emu "
                             "handle");
        return UCS_ERR_INVALID_PARAM;
    }

    if (handle->version != GPUMEM_EMU_HANDLE_VERSION) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle of version %u: "
                             "this driver reads version %u",
                             handle->version, GPUMEM_EMU_HANDLE_VERSION);
        return UCS_ERR_INVALID_PARAM;
    }

    if (handle->uid != geteuid()) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle of user %u: this "
                             "process's user is %u", handle->uid,
                             (unsigned)geteuid());
        return UCS_ERR_INVALID_PARAM;
    }

    if (handle->machine != gpu->driver->machine_hash) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle of process %d: it "
                             "is of another machine (0x%016lx, not 0x%016lx)",
                             handle->pid, (unsigned long)handle->machine,
                             (unsigned long)gpu->driver->machine_hash);
        return UCS_ERR_INVALID_PARAM;
    }

    pci.domain = handle->pci_domain;
    pci.bus    = handle->pci_bus;
    pci.dev    = handle->pci_dev;
    pci.fn     = handle->pci_fn;
    if (!gpumem_pci_addr_equal(&pci, &gpu->reach.addr)) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle of process %d: it "
                             "is memory of GPU %s", handle->pid,
                             gpumem_pci_addr_str(&pci, addr, sizeof(addr)));
        return UCS_ERR_INVALID_PARAM;
    }

    if ((handle->extent >= GPUMEM_EMU_EXTENTS_MAX) ||
        ((handle->page_size != GPUMEM_EMU_PAGE_SIZE) &&
         (handle->page_size != GPUMEM_EMU_LARGE_PAGE_SIZE)) ||
        (handle->size == 0) || ((handle->size % handle->page_size) != 0) ||
        ((handle->offset % handle->page_size) != 0) ||
        (handle->offset > gpu->vram_size) ||
        (handle->size > (gpu->vram_size - handle->offset))) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle of process %d: "
                             "extent %u of %lu bytes at 0x%lx in pages of "
                             "%lu is not one of its %zu bytes of VRAM",
                             handle->pid, handle->extent,
                             (unsigned long)handle->size,
                             (unsigned long)handle->offset,
                             (unsigned long)handle->page_size,
                             gpu->vram_size);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

/* Checks a handle against the extent it names (state lock held) */
static ucs_status_t
gpumem_emu_handle_check_extent(gpumem_emu_gpu_t *gpu,
                               const gpumem_emu_handle_t *handle)
{
    const gpumem_emu_state_t *state   = gpu->state;
    const gpumem_emu_extent_t *extent = &state->extents[handle->extent];

    if (handle->instance != state->instance) {
        gpumem_emu_gpu_error(gpu, "refused a stale memory handle of process "
                             "%d: its VRAM was created anew since",
                             handle->pid);
        return UCS_ERR_NO_ELEM;
    }

    if ((handle->generation == 0) ||
        (handle->generation >= state->next_generation)) {
        gpumem_emu_gpu_error(gpu, "refused a forged memory handle of process "
                             "%d: generation %lu was never allocated",
                             handle->pid, (unsigned long)handle->generation);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((extent->size == 0) || (extent->generation != handle->generation)) {
        gpumem_emu_gpu_error(gpu, "refused a stale memory handle of process "
                             "%d: extent %u of generation %lu was freed",
                             handle->pid, handle->extent,
                             (unsigned long)handle->generation);
        return UCS_ERR_NO_ELEM;
    }

    if ((extent->offset != handle->offset) ||
        (extent->size != handle->size) ||
        (extent->page_size != handle->page_size)) {
        gpumem_emu_gpu_error(gpu, "refused a forged memory handle of process "
                             "%d: extent %u is %lu bytes at 0x%lx, not %lu "
                             "at 0x%lx", handle->pid, handle->extent,
                             (unsigned long)extent->size,
                             (unsigned long)extent->offset,
                             (unsigned long)handle->size,
                             (unsigned long)handle->offset);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

ucs_status_t gpumem_emu_import_check(gpumem_driver_mem_t *dmem)
{
    gpumem_emu_mem_t *mem = gpumem_emu_mem(dmem);
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(dmem);
    const gpumem_emu_extent_t *extent;
    int live;

    /* This process holds the extent: no other changes it, and a read of
     * its words needs no lock */
    pthread_mutex_lock(&gpu->lock);
    extent = &gpu->state->extents[mem->extent];
    live   = (extent->size != 0) && (extent->generation == mem->generation) &&
             (gpu->proc_slot != GPUMEM_EMU_NO_SLOT) &&
             gpumem_emu_extent_held_by(extent, gpu->proc_slot);
    pthread_mutex_unlock(&gpu->lock);
    if (!live) {
        gpumem_emu_gpu_error(gpu, "imported extent %u of generation %lu is "
                             "no longer the memory its handle named, held by "
                             "this process", mem->extent,
                             (unsigned long)mem->generation);
        return UCS_ERR_NO_ELEM;
    }
    return UCS_OK;
}

ucs_status_t gpumem_emu_mem_import(gpumem_driver_gpu_t *dgpu, const void *buf,
                                   size_t length,
                                   gpumem_driver_mem_t **mem_p)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(dgpu);
    gpumem_emu_handle_t handle;
    gpumem_emu_mem_t *mem;
    ucs_status_t status;

    if ((buf == NULL) || (length != sizeof(handle))) {
        gpumem_emu_gpu_error(gpu, "refused a memory handle of %zu bytes: an "
                             "emu handle has %zu", length, sizeof(handle));
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&handle, buf, sizeof(handle)); /* buf may be unaligned */
    status = gpumem_emu_handle_check(gpu, &handle);
    if (status != UCS_OK) {
        return status;
    }

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, "import memory");
    if (status != UCS_OK) {
        goto out;
    }

    gpumem_emu_state_lock(gpu);
    status = gpumem_emu_handle_check_extent(gpu, &handle);
    if (status == UCS_OK) {
        gpumem_emu_vram_hold(gpu, handle.extent);
        gpumem_emu_test_point(GPUMEM_EMU_POINT_IMPORT_HELD);
    }
    gpumem_emu_state_unlock(gpu);
    if (status != UCS_OK) {
        goto out;
    }

    mem = gpumem_emu_vram_mem_new(gpu, handle.extent, 1);
    if (mem == NULL) {
        gpumem_emu_vram_unhold(gpu, handle.extent);
        gpumem_emu_gpu_error(gpu, "cannot allocate an imported memory");
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    gpumem_emu_gpu_debug(gpu, "imported extent %u (%lu bytes at 0x%lx) of "
                         "process %d", handle.extent,
                         (unsigned long)handle.size,
                         (unsigned long)handle.offset, handle.pid);
    *mem_p = &mem->super;
out:
    pthread_mutex_unlock(&gpu->lock);
    return status;
}
