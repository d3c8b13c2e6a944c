/**
 * gpumem emu driver: the copy engine.
 *
 * It moves bytes between device addresses of its GPU and host addresses,
 * translating device addresses through the GPU's page tables to the
 * driver's windows on VRAM (its own and its peers') or to pinned host
 * pages: never through the device address range, which the CPU cannot
 * access. A copy is checked whole before a byte moves; then small ones
 * complete at once, and others move a chunk at each poll, as a real engine
 * works while its caller goes on. A mapping that goes away while a copy
 * runs faults it, as on a real GPU.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_int.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <string.h>


#define GPUMEM_EMU_COPY_CHUNK  (256ul << 10)  /* Bytes one poll moves */


/**
 * A copy in flight.
 */
typedef struct gpumem_emu_copy_state {
    uint64_t dst;
    uint64_t src;
    int      dst_dev;
    int      src_dev;
    size_t   size;
    size_t   done;
} gpumem_emu_copy_state_t;


static void gpumem_emu_copy_fault(gpumem_emu_gpu_t *gpu,
                                  const gpumem_emu_copy_state_t *copy,
                                  const char *side, uint64_t addr)
{
    gpumem_emu_gpu_error(gpu, "copy of %zu bytes from 0x%lx to 0x%lx: %s "
                         "device address 0x%lx is not mapped", copy->size,
                         (unsigned long)copy->src, (unsigned long)copy->dst,
                         side, (unsigned long)addr);
}

/* Where the next bytes of one side are, and how many of the next @a max lie
 * together there; a fault, logged, where a device address is not mapped */
static ucs_status_t gpumem_emu_copy_locate(gpumem_emu_gpu_t *gpu,
                                           const gpumem_emu_copy_state_t *copy,
                                           int is_dst, size_t max,
                                           void **ptr_p, size_t *length_p)
{
    uint64_t addr = (is_dst ? copy->dst : copy->src) + copy->done;
    size_t contig;

    if (!(is_dst ? copy->dst_dev : copy->src_dev)) {
        *ptr_p    = (void*)(uintptr_t)addr;
        *length_p = max;
        return UCS_OK;
    }

    if (gpumem_emu_pt_translate(gpu, addr, ptr_p, &contig) != UCS_OK) {
        gpumem_emu_copy_fault(gpu, copy, is_dst ? "destination" : "source",
                              addr);
        return UCS_ERR_INVALID_ADDR;
    }
    *length_p = ucs_min(contig, max);
    return UCS_OK;
}

/* Moves up to max more bytes (GPU lock held) */
static ucs_status_t gpumem_emu_copy_move(gpumem_emu_gpu_t *gpu,
                                         gpumem_emu_copy_state_t *copy,
                                         size_t max)
{
    size_t end = copy->done + ucs_min(max, copy->size - copy->done);
    size_t dst_length, src_length, length;
    ucs_status_t status;
    void *dst, *src;

    while (copy->done < end) {
        status = gpumem_emu_copy_locate(gpu, copy, 1, end - copy->done, &dst,
                                        &dst_length);
        if (status == UCS_OK) {
            status = gpumem_emu_copy_locate(gpu, copy, 0, end - copy->done,
                                            &src, &src_length);
        }
        if (status != UCS_OK) {
            return status;
        }

        /* One VRAM window may be both sides */
        length = ucs_min(dst_length, src_length);
        memmove(dst, src, length);
        copy->done += length;
    }
    return UCS_OK;
}

/* Checks that every page of a side is mapped (GPU lock held) */
static ucs_status_t gpumem_emu_copy_check(gpumem_emu_gpu_t *gpu,
                                          const gpumem_emu_copy_state_t *copy,
                                          uint64_t addr, int is_dev,
                                          const char *side)
{
    size_t offset, contig;
    void *ptr;

    if (copy->size > (UINT64_MAX - addr)) {
        gpumem_emu_gpu_error(gpu, "copy of %zu bytes from 0x%lx to 0x%lx: "
                             "the %s wraps around", copy->size,
                             (unsigned long)copy->src,
                             (unsigned long)copy->dst, side);
        return UCS_ERR_INVALID_PARAM;
    }

    for (offset = 0; is_dev && (offset < copy->size); offset += contig) {
        if (gpumem_emu_pt_translate(gpu, addr + offset, &ptr, &contig) !=
            UCS_OK) {
            gpumem_emu_copy_fault(gpu, copy, side, addr + offset);
            return UCS_ERR_INVALID_ADDR;
        }
    }
    return UCS_OK;
}

/* Where one side of a copy of @a size bytes lies whole in one page (or is
 * host memory), the pointer to it; 0 where it spans pages or is not mapped,
 * which the full check then says (GPU lock held) */
static int gpumem_emu_copy_one_page(gpumem_emu_gpu_t *gpu, uint64_t addr,
                                    int is_dev, size_t size, void **ptr_p)
{
    size_t contig;

    if (!is_dev) {
        *ptr_p = (void*)(uintptr_t)addr;
        return 1;
    }

    return (gpumem_emu_pt_translate(gpu, addr, ptr_p, &contig) == UCS_OK) &&
           (contig >= size);
}

/* A small copy whose every side lies in one page: translated once a side,
 * without walking the pages twice; 0 if it is not one (GPU lock held) */
static int gpumem_emu_copy_direct(gpumem_emu_gpu_t *gpu,
                                  const gpumem_emu_copy_state_t *copy)
{
    void *dst, *src;

    if ((copy->size > UINT64_MAX - copy->dst) ||
        (copy->size > UINT64_MAX - copy->src) ||
        !gpumem_emu_copy_one_page(gpu, copy->dst, copy->dst_dev, copy->size,
                                  &dst) ||
        !gpumem_emu_copy_one_page(gpu, copy->src, copy->src_dev, copy->size,
                                  &src)) {
        return 0;
    }

    memmove(dst, src, copy->size);
    return 1;
}

ucs_status_t gpumem_emu_copy(gpumem_driver_gpu_t *handle, uint64_t dst,
                             int dst_dev, uint64_t src, int src_dev,
                             size_t size, gpumem_driver_copy_t *copy)
{
    gpumem_emu_gpu_t *gpu          = gpumem_emu_gpu(handle);
    gpumem_emu_copy_state_t *state;
    gpumem_emu_copy_state_t local;
    ucs_status_t status;

    copy->gpu  = handle;
    copy->priv = NULL;

    local.dst     = dst;
    local.src     = src;
    local.dst_dev = dst_dev;
    local.src_dev = src_dev;
    local.size    = size;
    local.done    = 0;

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, "copy");
    if ((status == UCS_OK) && (size <= gpu->driver->copy_inline_max) &&
        gpumem_emu_copy_direct(gpu, &local)) {
        goto out;
    }

    if (status == UCS_OK) {
        status = gpumem_emu_copy_check(gpu, &local, dst, dst_dev,
                                       "destination");
    }
    if (status == UCS_OK) {
        status = gpumem_emu_copy_check(gpu, &local, src, src_dev, "source");
    }
    if (status != UCS_OK) {
        goto out;
    }

    if (size <= gpu->driver->copy_inline_max) {
        status = gpumem_emu_copy_move(gpu, &local, size);
        goto out;
    }

    state = ucs_malloc(sizeof(*state), "gpumem_emu_copy");
    if (state == NULL) {
        gpumem_emu_gpu_error(gpu, "cannot queue a copy of %zu bytes", size);
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    *state     = local;
    copy->priv = state;
    status     = UCS_INPROGRESS;
out:
    pthread_mutex_unlock(&gpu->lock);
    return status;
}

ucs_status_t gpumem_emu_copy_poll(gpumem_driver_copy_t *copy)
{
    gpumem_emu_copy_state_t *state = copy->priv;
    gpumem_emu_gpu_t *gpu          = gpumem_emu_gpu(copy->gpu);
    ucs_status_t status;

    if (state == NULL) {
        return UCS_OK;
    }

    pthread_mutex_lock(&gpu->lock);
    status = gpumem_emu_check_live(gpu, "go on with a copy");
    if (status == UCS_OK) {
        status = gpumem_emu_copy_move(gpu, state, GPUMEM_EMU_COPY_CHUNK);
    }
    if ((status == UCS_OK) && (state->done < state->size)) {
        status = UCS_INPROGRESS;
    }
    pthread_mutex_unlock(&gpu->lock);

    if (status != UCS_INPROGRESS) {
        ucs_free(state);
        copy->priv = NULL;
    }
    return status;
}
