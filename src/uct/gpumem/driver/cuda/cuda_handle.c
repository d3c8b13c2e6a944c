/**
 * gpumem cuda driver: packing and checking exported memory handles.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_handle.h"

#include <uct/gpumem/util/gpumem_proc.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>


ucs_status_t gpumem_cuda_handle_pack(const gpumem_cuda_handle_t *handle,
                                     void *buf, size_t max, size_t *length_p)
{
    if (max < GPUMEM_CUDA_HANDLE_SIZE) {
        ucs_error("gpumem_cuda: a memory handle takes %zu bytes, %zu given",
                  GPUMEM_CUDA_HANDLE_SIZE, max);
        return UCS_ERR_BUFFER_TOO_SMALL;
    }

    memcpy(buf, handle, GPUMEM_CUDA_HANDLE_SIZE);
    *length_p = GPUMEM_CUDA_HANDLE_SIZE;
    return UCS_OK;
}

/* A VMM handle carries no legacy IPC handle: its bytes are 0 */
static int gpumem_cuda_handle_ipc_zero(const gpumem_cuda_handle_t *handle)
{
    size_t i;

    for (i = 0; i < sizeof(handle->ipc); ++i) {
        if (handle->ipc[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* The fields of a VMM fd handle: an fd, a granularity, and whole small
 * pages, as the memory core allocates */
static int gpumem_cuda_handle_vmm_valid(const gpumem_cuda_handle_t *handle,
                                        const char **why_p)
{
    if (handle->fd < 0) {
        *why_p = "a negative fd";
    } else if ((handle->granularity == 0) ||
               !ucs_is_pow2(handle->granularity)) {
        *why_p = "a granularity that is not a power of 2";
    } else if ((handle->size % GPUMEM_CUDA_HANDLE_PAGE) != 0) {
        *why_p = "a size that is not whole 4 KiB pages";
    } else if (handle->alloc_id == 0) {
        *why_p = "no allocation id";
    } else if (!gpumem_cuda_handle_ipc_zero(handle)) {
        *why_p = "bytes of a legacy IPC handle set in a VMM handle";
    } else {
        return 1;
    }
    return 0;
}

ucs_status_t gpumem_cuda_handle_unpack(const void *buf, size_t length,
                                       gpumem_cuda_handle_t *handle)
{
    gpumem_cuda_handle_t h;
    const char *why;

    if (length != GPUMEM_CUDA_HANDLE_SIZE) {
        ucs_error("gpumem_cuda: refused a %zu-byte memory handle: a handle "
                  "has %zu bytes", length, GPUMEM_CUDA_HANDLE_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&h, buf, sizeof(h));
    if (h.magic != GPUMEM_CUDA_HANDLE_MAGIC) {
        ucs_error("gpumem_cuda: refused a memory handle with magic 0x%x: "
                  "not a cuda driver handle", h.magic);
        return UCS_ERR_INVALID_PARAM;
    }
    if (h.version != GPUMEM_CUDA_HANDLE_VERSION) {
        ucs_error("gpumem_cuda: refused a memory handle of version %u: this "
                  "process reads version %d", h.version,
                  GPUMEM_CUDA_HANDLE_VERSION);
        return UCS_ERR_INVALID_PARAM;
    }
    if (h.uid != gpumem_proc_euid()) {
        ucs_error("gpumem_cuda: refused a memory handle of process %d: it "
                  "belongs to user %u, this process's user is %u", h.pid,
                  h.uid, (unsigned)gpumem_proc_euid());
        return UCS_ERR_REJECTED;
    }

    if (h.reserved != 0) {
        why = "reserved bytes set";
    } else if (h.pid <= 0) {
        why = "no process";
    } else if (h.size == 0) {
        why = "no bytes";
    } else if (h.type == GPUMEM_CUDA_HANDLE_VMM_FD) {
        if (gpumem_cuda_handle_vmm_valid(&h, &why)) {
            why = NULL;
        }
    } else if (h.type == GPUMEM_CUDA_HANDLE_LEGACY_IPC) {
        /* The allocation id is the driver's buffer id */
        why = ((h.fd != -1) || (h.granularity != 0) || (h.broker != 0)) ?
              "fields of a VMM handle set in a legacy IPC handle" :
              (h.alloc_id == 0) ? "no allocation id" : NULL;
    } else {
        why = "an unknown type";
    }

    if (why != NULL) {
        ucs_error("gpumem_cuda: refused a memory handle of process %d (type "
                  "%u, %"PRIu64" bytes): it has %s", h.pid, h.type, h.size,
                  why);
        return UCS_ERR_INVALID_PARAM;
    }

    *handle = h;
    return UCS_OK;
}
