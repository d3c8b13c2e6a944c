/**
 * gpumem registration: slices of a view, and the descriptors this process
 * and its peers name a view's bytes by.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "reg.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <inttypes.h>


/* [offset, offset + length) lies in [0, size), without computing a sum that
 * may wrap */
static int gpumem_reg_range_fits(uint64_t offset, uint64_t length,
                                 uint64_t size)
{
    return (offset <= size) && (length <= (size - offset));
}

ucs_status_t gpumem_reg_view_slice(const gpumem_reg_view_t *view,
                                   size_t offset, size_t length,
                                   gpumem_reg_view_t *slice_p)
{
    if (!gpumem_reg_range_fits(offset, length, view->length)) {
        ucs_error("gpumem: slice [%zu, %zu+%zu) is out of bounds for a "
                  "%zu-byte registration of [0x%" PRIx64 ", 0x%" PRIx64 ") "
                  "on %s", offset, offset, length, view->length,
                  view->address, view->address + view->length,
                  view->region->domain->name);
        return UCS_ERR_INVALID_PARAM;
    }

    gpumem_reg_view_copy(view, slice_p);
    slice_p->address     += offset;
    slice_p->length       = length;
    if (slice_p->host_address != NULL) {
        slice_p->host_address = UCS_PTR_BYTE_OFFSET(slice_p->host_address,
                                                    offset);
    }
    return UCS_OK;
}

ucs_status_t gpumem_reg_view_local(const gpumem_reg_view_t *view, size_t at,
                                   size_t length, gpumem_reg_local_t *local_p)
{
    if (!gpumem_reg_range_fits(at, length, view->length)) {
        ucs_error("gpumem: bytes [%zu, %zu+%zu) are not in the %zu-byte "
                  "registration of [0x%" PRIx64 ", 0x%" PRIx64 ") on %s", at,
                  at, length, view->length, view->address,
                  view->address + view->length, view->region->domain->name);
        return UCS_ERR_INVALID_PARAM;
    }

    local_p->address = view->address + at;
    local_p->length  = length;
    local_p->lkey    = view->region->mr.lkey;
    return UCS_OK;
}

/* The seed: a peer names a region only if the region lets peers in */
static ucs_status_t gpumem_reg_view_check_remote(const gpumem_reg_view_t *view)
{
    if (view->region->access == GPUMEM_REG_ACCESS_LOCAL) {
        ucs_error("gpumem: the registration of [0x%" PRIx64 ", 0x%" PRIx64
                  ") on %s is local: peers may neither read nor write it",
                  view->address, view->address + view->length,
                  view->region->domain->name);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

ucs_status_t gpumem_reg_view_remote(const gpumem_reg_view_t *view, size_t at,
                                    gpumem_reg_remote_t *remote_p)
{
    ucs_status_t status;

    if (at >= view->length) {
        ucs_error("gpumem: offset %zu is not in the %zu-byte registration of "
                  "[0x%" PRIx64 ", 0x%" PRIx64 ") on %s", at, view->length,
                  view->address, view->address + view->length,
                  view->region->domain->name);
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_reg_view_check_remote(view);
    if (status != UCS_OK) {
        return status;
    }

    remote_p->address = view->address + at;
    remote_p->rkey    = view->region->mr.rkey;
    return UCS_OK;
}

ucs_status_t gpumem_reg_view_export(const gpumem_reg_view_t *view,
                                    gpumem_reg_remote_view_t *remote_view_p)
{
    ucs_status_t status;

    status = gpumem_reg_view_check_remote(view);
    if (status != UCS_OK) {
        return status;
    }

    /* No lkey: it means something only to this process's protection
     * domain; no pointer: the owner's views keep the registration alive */
    remote_view_p->rkey    = view->region->mr.rkey;
    remote_view_p->address = view->address;
    remote_view_p->length  = view->length;
    ucs_strncpy_zero(remote_view_p->device_name, view->region->domain->name,
                     sizeof(remote_view_p->device_name));
    return UCS_OK;
}

ucs_status_t
gpumem_reg_remote_view_slice(const gpumem_reg_remote_view_t *remote_view,
                             uint64_t offset, uint64_t length,
                             gpumem_reg_remote_view_t *slice_p)
{
    if (!gpumem_reg_range_fits(offset, length, remote_view->length)) {
        ucs_error("gpumem: slice [%" PRIu64 ", %" PRIu64 "+%" PRIu64 ") is "
                  "out of bounds for a %" PRIu64 "-byte peer registration of "
                  "[0x%" PRIx64 ", 0x%" PRIx64 ") on %s", offset, offset,
                  length, remote_view->length, remote_view->address,
                  remote_view->address + remote_view->length,
                  remote_view->device_name);
        return UCS_ERR_INVALID_PARAM;
    }

    *slice_p          = *remote_view;
    slice_p->address += offset;
    slice_p->length   = length;
    return UCS_OK;
}
