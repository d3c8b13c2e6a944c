/**
 * gpumem emu driver: allocating VRAM shared by the machine's processes.
 *
 * Extents are placed first fit, aligned to their page size, in the shared
 * state (emu_state.h), so the capacity of a GPU is shared by every process
 * of the machine. An extent stays while any process holds it: its
 * allocator, and each importer. Each process counts its own holds and
 * holds an extent in the shared state once. The last holder's release
 * punches the extent out of the memfd, so that its memory goes back.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_state.h"

#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>


/*
 * The lowest offset in [lo, hi) where size bytes aligned to align fit
 * between the extents in use, and the position there in the offset order.
 */
static int gpumem_emu_vram_find(const gpumem_emu_state_t *state, size_t size,
                                size_t align, uint64_t lo, uint64_t hi,
                                uint64_t *offset_p, unsigned *pos_p)
{
    uint64_t offset = ucs_align_up_pow2(lo, align);
    const gpumem_emu_extent_t *extent;
    unsigned pos;

    for (pos = 0; pos < state->num_extents; ++pos) {
        extent = &state->extents[state->order[pos]];
        if ((extent->offset + extent->size) <= offset) {
            continue;
        }
        if ((offset <= hi) && (size <= (hi - offset)) &&
            (extent->offset >= (offset + size))) {
            break;
        }
        offset = ucs_align_up_pow2(extent->offset + extent->size, align);
    }

    if ((offset > hi) || (size > (hi - offset))) {
        return 0;
    }
    *offset_p = offset;
    *pos_p    = pos;
    return 1;
}

static int gpumem_emu_vram_free_slot(const gpumem_emu_state_t *state,
                                     uint32_t *slot_p)
{
    uint32_t slot;

    for (slot = 0; slot < GPUMEM_EMU_EXTENTS_MAX; ++slot) {
        if (state->extents[slot].size == 0) {
            *slot_p = slot;
            return 1;
        }
    }
    return 0;
}

/*
 * Places a new extent (state lock held). BAR memory goes inside the BAR;
 * other memory above it where it fits, keeping the BAR for what needs it.
 */
static ucs_status_t gpumem_emu_vram_place(gpumem_emu_gpu_t *gpu, size_t size,
                                          size_t page_size, int in_bar,
                                          uint32_t *slot_p)
{
    gpumem_emu_state_t *state = gpu->state;
    gpumem_emu_extent_t *extent;
    uint64_t offset;
    unsigned pos;
    uint32_t slot;

    if (!gpumem_emu_vram_free_slot(state, &slot)) {
        /* Not room: the VRAM may have plenty; the table is the limit */
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    if (!((!in_bar && gpumem_emu_vram_find(state, size, page_size,
                                           gpu->bar_size, gpu->vram_size,
                                           &offset, &pos)) ||
          gpumem_emu_vram_find(state, size, page_size, 0,
                               in_bar ? gpu->bar_size : gpu->vram_size,
                               &offset, &pos))) {
        return UCS_ERR_NO_MEMORY;
    }

    /* The extent first, its size last: a repair sees a slot whole or free */
    extent             = &state->extents[slot];
    extent->offset     = offset;
    extent->page_size  = page_size;
    extent->generation = state->next_generation++;
    memset(extent->holders, 0, sizeof(extent->holders));
    extent->size       = size;
    gpumem_emu_test_point(GPUMEM_EMU_POINT_ALLOC_PLACED);

    memmove(&state->order[pos + 1], &state->order[pos],
            (state->num_extents - pos) * sizeof(state->order[0]));
    state->order[pos] = slot;
    ++state->num_extents;
    gpumem_emu_test_point(GPUMEM_EMU_POINT_ALLOC_LISTED);
    *slot_p = slot;
    return UCS_OK;
}

/* Frees an extent no process holds any more (state lock held) */
static void gpumem_emu_vram_remove(gpumem_emu_gpu_t *gpu, uint32_t slot)
{
    gpumem_emu_state_t *state   = gpu->state;
    gpumem_emu_extent_t *extent = &state->extents[slot];
    unsigned pos;

    for (pos = 0; (pos < state->num_extents) && (state->order[pos] != slot);
         ++pos) {
    }
    if (pos < state->num_extents) {
        memmove(&state->order[pos], &state->order[pos + 1],
                (state->num_extents - pos - 1) * sizeof(state->order[0]));
        --state->num_extents;
    }
    gpumem_emu_test_point(GPUMEM_EMU_POINT_FREE_UNLISTED);

    /* The memory goes back; a later allocation reads zeros there */
    if ((gpu->vram_fd >= 0) &&
        (fallocate(gpu->vram_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                   extent->offset, extent->size) != 0)) {
        ucs_warn("gpumem_emu: GPU %s: cannot give back VRAM at 0x%lx+%lu: %s",
                 gpu->name, (unsigned long)extent->offset,
                 (unsigned long)extent->size, strerror(errno));
    }

    gpumem_emu_test_point(GPUMEM_EMU_POINT_FREE_PUNCHED);
    gpumem_emu_gpu_debug(gpu, "freed VRAM extent %u at 0x%lx+%lu", slot,
                         (unsigned long)extent->offset,
                         (unsigned long)extent->size);
    memset(extent, 0, sizeof(*extent));
}

/* An extent's place, for the repair's sort */
typedef struct gpumem_emu_vram_place_ref {
    uint64_t offset;
    uint32_t slot;
} gpumem_emu_vram_place_ref_t;

static int gpumem_emu_vram_place_compare(const void *a, const void *b)
{
    const gpumem_emu_vram_place_ref_t *x = a, *y = b;

    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Whether an extent's fields describe pages of the VRAM */
static int gpumem_emu_vram_extent_is_sane(const gpumem_emu_gpu_t *gpu,
                                          const gpumem_emu_extent_t *extent)
{
    return ((extent->page_size == GPUMEM_EMU_PAGE_SIZE) ||
            (extent->page_size == GPUMEM_EMU_LARGE_PAGE_SIZE)) &&
           ((extent->size % extent->page_size) == 0) &&
           ((extent->offset % extent->page_size) == 0) &&
           (extent->offset <= gpu->vram_size) &&
           (extent->size <= gpu->vram_size - extent->offset);
}

static void gpumem_emu_vram_repair(gpumem_emu_gpu_t *gpu, int writer)
{
    gpumem_emu_state_t *state = gpu->state;
    gpumem_emu_vram_place_ref_t *refs;
    unsigned i, count = 0, dropped = 0;
    uint64_t end = 0;
    uint32_t slot;

    /* The extents are the truth: what a slot holds was written before its
     * size, which a free clears last; the order is derived from them */
    refs = ucs_malloc(GPUMEM_EMU_EXTENTS_MAX * sizeof(*refs),
                      "gpumem_emu_repair");
    if (refs == NULL) {
        ucs_error("gpumem_emu: GPU %s: cannot allocate the repair of the "
                  "state process %d left half-changed", gpu->name, writer);
        return;
    }

    for (slot = 0; slot < GPUMEM_EMU_EXTENTS_MAX; ++slot) {
        if (state->extents[slot].size == 0) {
            continue;
        }
        if (!gpumem_emu_vram_extent_is_sane(gpu, &state->extents[slot])) {
            memset(&state->extents[slot], 0, sizeof(state->extents[slot]));
            ++dropped;
            continue;
        }
        refs[count].offset = state->extents[slot].offset;
        refs[count].slot   = slot;
        ++count;
    }
    qsort(refs, count, sizeof(*refs), gpumem_emu_vram_place_compare);

    state->num_extents = 0;
    for (i = 0; i < count; ++i) {
        slot = refs[i].slot;
        if (refs[i].offset < end) {
            /* Overlaps the one before: never allocated so; not memory */
            memset(&state->extents[slot], 0, sizeof(state->extents[slot]));
            ++dropped;
            continue;
        }
        end                                 = refs[i].offset +
                                              state->extents[slot].size;
        state->order[state->num_extents++] = slot;
    }
    ucs_free(refs);

    /* What no process holds was being placed or freed: it goes */
    for (i = state->num_extents; i > 0; --i) {
        slot = state->order[i - 1];
        if (!gpumem_emu_extent_is_held(&state->extents[slot])) {
            gpumem_emu_vram_remove(gpu, slot);
            ++dropped;
        }
    }

    ucs_diag("gpumem_emu: GPU %s: process %d died changing the shared state: "
             "repaired, %u extents kept, %u dropped", gpu->name, writer,
             state->num_extents, dropped);
}

int gpumem_emu_vram_check(gpumem_emu_gpu_t *gpu, char *why, size_t max)
{
    const gpumem_emu_state_t *state = gpu->state;
    const gpumem_emu_extent_t *extent;
    unsigned pos, used = 0, holder;
    uint64_t end = 0;
    uint32_t slot;

    for (slot = 0; slot < GPUMEM_EMU_EXTENTS_MAX; ++slot) {
        used += (state->extents[slot].size != 0);
    }
    if (used != state->num_extents) {
        snprintf(why, max, "%u extents in use, %u in the order", used,
                 state->num_extents);
        return 0;
    }

    for (pos = 0; pos < state->num_extents; ++pos) {
        slot   = state->order[pos];
        extent = &state->extents[slot];
        if ((slot >= GPUMEM_EMU_EXTENTS_MAX) || (extent->size == 0) ||
            !gpumem_emu_vram_extent_is_sane(gpu, extent) ||
            (extent->offset < end)) {
            snprintf(why, max, "extent %u at position %u is free, out of "
                     "order or out of the VRAM", slot, pos);
            return 0;
        }
        end = extent->offset + extent->size;

        if (!gpumem_emu_extent_is_held(extent)) {
            snprintf(why, max, "extent %u is held by no process", slot);
            return 0;
        }
        for (holder = 0; holder < GPUMEM_EMU_PROCS_MAX; ++holder) {
            if (gpumem_emu_extent_held_by(extent, holder) &&
                (state->procs[holder].pid == 0)) {
                snprintf(why, max, "extent %u is held by process slot %u, "
                         "which no process has", slot, holder);
                return 0;
            }
        }
    }
    return 1;
}

/* A process lets go of an extent; the last one frees it (state lock held) */
static void gpumem_emu_vram_release(gpumem_emu_gpu_t *gpu, uint32_t slot,
                                    unsigned proc_slot)
{
    gpumem_emu_extent_t *extent = &gpu->state->extents[slot];

    extent->holders[proc_slot / 64] &= ~(1ul << (proc_slot % 64));
    if (!gpumem_emu_extent_is_held(extent)) {
        gpumem_emu_vram_remove(gpu, slot);
    }
}

static void gpumem_emu_vram_drop_proc(gpumem_emu_gpu_t *gpu,
                                      unsigned proc_slot)
{
    gpumem_emu_state_t *state = gpu->state;
    unsigned pos;
    uint32_t slot;

    if (proc_slot >= GPUMEM_EMU_PROCS_MAX) {
        return;
    }

    /* Backwards, since a release takes the extent out of the order */
    for (pos = state->num_extents; pos > 0; --pos) {
        slot = state->order[pos - 1];
        if (gpumem_emu_extent_held_by(&state->extents[slot], proc_slot)) {
            gpumem_emu_vram_release(gpu, slot, proc_slot);
        }
    }
    memset(&state->procs[proc_slot], 0, sizeof(state->procs[proc_slot]));
}

const gpumem_emu_recovery_t gpumem_emu_vram_recovery = {
    .repair    = gpumem_emu_vram_repair,
    .drop_proc = gpumem_emu_vram_drop_proc
};

void gpumem_emu_vram_hold(gpumem_emu_gpu_t *gpu, uint32_t slot)
{
    gpumem_emu_extent_t *extent = &gpu->state->extents[slot];

    if (gpu->holds[slot]++ == 0) {
        extent->holders[gpu->proc_slot / 64] |= 1ul << (gpu->proc_slot % 64);
    }
}

void gpumem_emu_vram_unhold(gpumem_emu_gpu_t *gpu, uint32_t slot)
{
    ucs_assert(gpu->holds[slot] > 0);
    if (--gpu->holds[slot] > 0) {
        return;
    }

    gpumem_emu_state_lock(gpu);
    gpumem_emu_vram_release(gpu, slot, gpu->proc_slot);
    gpumem_emu_state_unlock(gpu);
}

gpumem_emu_mem_t *gpumem_emu_vram_mem_new(gpumem_emu_gpu_t *gpu,
                                          uint32_t slot, int imported)
{
    const gpumem_emu_extent_t *extent = &gpu->state->extents[slot];
    gpumem_emu_mem_t *mem;

    mem = ucs_calloc(1, sizeof(*mem), "gpumem_emu_mem");
    if (mem == NULL) {
        return NULL;
    }

    mem->super.gpu       = gpumem_emu_gpu_handle(gpu);
    mem->super.size      = extent->size;
    mem->super.page_size = extent->page_size;
    mem->super.phys      = extent->offset;
    mem->extent          = slot;
    mem->generation      = extent->generation;
    mem->imported        = imported;
    ucs_list_add_tail(&gpu->mems, &mem->list);
    return mem;
}

void gpumem_emu_vram_cleanup(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_mem_t *mem, *tmp;
    unsigned count = 0;

    /* What the caller did not free: detaching lets go of its extents */
    ucs_list_for_each_safe(mem, tmp, &gpu->mems, list) {
        ucs_list_del(&mem->list);
        ucs_free(mem);
        ++count;
    }
    if (count > 0) {
        gpumem_emu_gpu_debug(gpu, "%u allocations were not freed", count);
    }
    ucs_free(gpu->holds);
    gpu->holds = NULL;
}

ucs_status_t gpumem_emu_vram_free(gpumem_driver_gpu_t *handle, size_t *free_p)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);
    size_t used           = 0;
    unsigned pos;

    gpumem_emu_state_lock(gpu);
    for (pos = 0; pos < gpu->state->num_extents; ++pos) {
        used += gpu->state->extents[gpu->state->order[pos]].size;
    }
    gpumem_emu_state_unlock(gpu);
    *free_p = gpu->vram_size - ucs_min(used, gpu->vram_size);
    return UCS_OK;
}

static ucs_status_t gpumem_emu_mem_check(gpumem_emu_gpu_t *gpu, size_t size,
                                         size_t page_size)
{
    if (((page_size != GPUMEM_EMU_PAGE_SIZE) &&
         (page_size != GPUMEM_EMU_LARGE_PAGE_SIZE)) ||
        (size == 0) || ((size % page_size) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot allocate %zu bytes of VRAM in "
                             "pages of %zu bytes: the size must be a "
                             "positive multiple of 4 KiB or 2 MiB pages",
                             size, page_size);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* Whether an injected fault answers the allocation (GPU lock held) */
static ucs_status_t gpumem_emu_mem_fault(gpumem_emu_gpu_t *gpu, size_t size)
{
    if (gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_NO_ROOM)) {
        gpumem_emu_gpu_debug(gpu, "no room for %zu bytes of VRAM (injected)",
                             size);
        return UCS_ERR_NO_MEMORY;
    }
    if (gpumem_emu_fault_take(gpu, GPUMEM_DRIVER_FAULT_KERNEL_REFUSES)) {
        gpumem_emu_gpu_error(gpu, "the kernel refuses %zu bytes of VRAM "
                             "(injected fault)", size);
        return UCS_ERR_REJECTED;
    }
    return UCS_OK;
}

ucs_status_t gpumem_emu_mem_alloc(gpumem_driver_gpu_t *handle, size_t size,
                                  size_t page_size, int in_bar,
                                  gpumem_driver_mem_t **mem_p)
{
    gpumem_emu_gpu_t *gpu = gpumem_emu_gpu(handle);
    gpumem_emu_mem_t *mem;
    ucs_status_t status;
    uint32_t slot;

    status = gpumem_emu_mem_check(gpu, size, page_size);
    if (status != UCS_OK) {
        return status;
    }

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, "allocate VRAM");
    if (status == UCS_OK) {
        status = gpumem_emu_mem_fault(gpu, size);
    }
    if (status != UCS_OK) {
        goto out;
    }

    gpumem_emu_state_lock(gpu);
    status = gpumem_emu_vram_place(gpu, size, page_size, in_bar, &slot);
    if ((status == UCS_ERR_NO_MEMORY) || (status == UCS_ERR_EXCEEDS_LIMIT)) {
        /* A dead process, a zombie, may hold room the quick check missed */
        gpumem_emu_state_sweep(gpu, 1);
        status = gpumem_emu_vram_place(gpu, size, page_size, in_bar, &slot);
    }
    if (status == UCS_OK) {
        gpumem_emu_vram_hold(gpu, slot);
        gpumem_emu_test_point(GPUMEM_EMU_POINT_ALLOC_HELD);
    }
    gpumem_emu_state_unlock(gpu);
    if (status == UCS_ERR_EXCEEDS_LIMIT) {
        /* The VRAM may have plenty: the table is what is full */
        gpumem_emu_gpu_error(gpu, "cannot allocate %zu bytes of VRAM: the "
                             "table of the machine's allocations on this GPU "
                             "is full (%d, of every process)", size,
                             GPUMEM_EMU_EXTENTS_MAX);
    }
    if (status != UCS_OK) {
        goto out;
    }

    mem = gpumem_emu_vram_mem_new(gpu, slot, 0);
    if (mem == NULL) {
        gpumem_emu_vram_unhold(gpu, slot);
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    gpumem_emu_gpu_debug(gpu, "allocated %zu bytes of VRAM at 0x%lx, pages "
                         "of %zu, extent %u", size,
                         (unsigned long)mem->super.phys, page_size, slot);
    *mem_p = &mem->super;
out:
    pthread_mutex_unlock(&gpu->lock);
    return status;
}

void gpumem_emu_mem_free(gpumem_driver_mem_t *dmem)
{
    gpumem_emu_mem_t *mem = gpumem_emu_mem(dmem);
    gpumem_emu_gpu_t *gpu = gpumem_emu_mem_gpu(dmem);

    pthread_mutex_lock(&gpu->lock);
    ucs_assert(gpu->state->extents[mem->extent].generation ==
               mem->generation);
    ucs_list_del(&mem->list);
    gpumem_emu_vram_unhold(gpu, mem->extent);
    pthread_mutex_unlock(&gpu->lock);
    ucs_free(mem);
}
