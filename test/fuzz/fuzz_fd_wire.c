/**
 * gpumem fuzz target: the descriptor broker's decoders, which read the
 * request of any process of the machine that connects and the answer of
 * whatever socket holds a broker's name. Whatever they accept is of this
 * version with nothing reserved set: a request names an allocation and a
 * size, an answer the request's allocation and an errno or 0 (or id 0
 * and an errno: a refusal sent before the request was read).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/util/gpumem_fd_wire.h>

#include <stdint.h>
#include <string.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpumem_fd_request_t request;
    gpumem_fd_reply_t reply;
    const char *why;
    uint64_t id;

    if (gpumem_fd_request_unpack(data, size, &request, &why) == UCS_OK) {
        fuzz_check(size == sizeof(request));
        fuzz_check((request.magic == GPUMEM_FD_WIRE_MAGIC) &&
                   (request.version == GPUMEM_FD_WIRE_VERSION) &&
                   (request.reserved == 0));
        fuzz_check((request.id != 0) && (request.size != 0));
        fuzz_check(!memcmp(&request, data, size));
    } else {
        fuzz_check((why != NULL) && (why[0] != '\0'));
    }

    /* The id asked for is the one the bytes carry, and one more, which only
     * a refusal of id 0 (sent before the request was read) answers */
    if (size >= sizeof(reply)) {
        memcpy(&id, data + offsetof(gpumem_fd_reply_t, id), sizeof(id));
        if (gpumem_fd_reply_unpack(data, size, id + 1, &reply, &why) ==
            UCS_OK) {
            fuzz_check((reply.id == 0) && (reply.error > 0));
        }
    } else {
        id = 0;
    }
    if (gpumem_fd_reply_unpack(data, size, id, &reply, &why) == UCS_OK) {
        fuzz_check(size == sizeof(reply));
        fuzz_check((reply.magic == GPUMEM_FD_WIRE_MAGIC) &&
                   (reply.version == GPUMEM_FD_WIRE_VERSION) &&
                   (reply.reserved == 0) && (reply.reserved2 == 0));
        fuzz_check(((reply.id == id) && (reply.error >= 0)) ||
                   ((reply.id == 0) && (reply.error > 0)));
        fuzz_check(!memcmp(&reply, data, size));
    } else {
        fuzz_check((why != NULL) && (why[0] != '\0'));
    }
    return 0;
}
