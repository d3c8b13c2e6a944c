/**
 * gpumem utilities: encoding and checking the descriptor broker's
 * messages.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_fd_wire.h"

#include <string.h>


/* The largest errno a kernel gives; anything above is not an errno */
#define GPUMEM_FD_WIRE_ERRNO_MAX 4095


void gpumem_fd_request_init(gpumem_fd_request_t *request, uint64_t id,
                            uint64_t size)
{
    memset(request, 0, sizeof(*request));
    request->magic   = GPUMEM_FD_WIRE_MAGIC;
    request->version = GPUMEM_FD_WIRE_VERSION;
    request->id      = id;
    request->size    = size;
}

void gpumem_fd_reply_init(gpumem_fd_reply_t *reply, uint64_t id, int error)
{
    memset(reply, 0, sizeof(*reply));
    reply->magic   = GPUMEM_FD_WIRE_MAGIC;
    reply->version = GPUMEM_FD_WIRE_VERSION;
    reply->error   = error;
    reply->id      = id;
}

/* The header both messages open with: this version's, nothing reserved */
static const char *gpumem_fd_wire_header_check(uint32_t magic,
                                               uint16_t version,
                                               uint16_t reserved)
{
    if (magic != GPUMEM_FD_WIRE_MAGIC) {
        return "not a descriptor broker message (magic)";
    } else if (version != GPUMEM_FD_WIRE_VERSION) {
        return "another version of the descriptor broker";
    } else if (reserved != 0) {
        return "reserved bytes set";
    }
    return NULL;
}

ucs_status_t gpumem_fd_request_unpack(const void *buf, size_t length,
                                      gpumem_fd_request_t *request,
                                      const char **why_p)
{
    gpumem_fd_request_t r;
    const char *why;

    if (length != sizeof(r)) {
        *why_p = "not the length of a request";
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&r, buf, sizeof(r));
    why = gpumem_fd_wire_header_check(r.magic, r.version, r.reserved);
    if ((why == NULL) && (r.id == 0)) {
        why = "no allocation id";
    } else if ((why == NULL) && (r.size == 0)) {
        why = "no size";
    }
    if (why != NULL) {
        *why_p = why;
        return UCS_ERR_INVALID_PARAM;
    }

    *request = r;
    return UCS_OK;
}

ucs_status_t gpumem_fd_reply_unpack(const void *buf, size_t length,
                                    uint64_t id, gpumem_fd_reply_t *reply,
                                    const char **why_p)
{
    gpumem_fd_reply_t r;
    const char *why;

    if (length != sizeof(r)) {
        *why_p = "not the length of an answer";
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&r, buf, sizeof(r));
    why = gpumem_fd_wire_header_check(r.magic, r.version, r.reserved);
    if ((why == NULL) && (r.reserved2 != 0)) {
        why = "reserved bytes set";
    } else if ((why == NULL) && (r.id != id) &&
               !((r.id == 0) && (r.error != 0))) {
        why = "the answer to another request";
    } else if ((why == NULL) &&
               ((r.error < 0) || (r.error > GPUMEM_FD_WIRE_ERRNO_MAX))) {
        why = "an error that is not an errno";
    }
    if (why != NULL) {
        *why_p = why;
        return UCS_ERR_INVALID_PARAM;
    }

    *reply = r;
    return UCS_OK;
}
