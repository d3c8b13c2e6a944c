/**
 * gpumem utilities: the messages of the descriptor broker, with which a
 * process asks another of the machine for the descriptor of one of its
 * allocations, and the answer. Both come from another process: every field
 * is checked on decode.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_FD_WIRE_H_
#define GPUMEM_FD_WIRE_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

#define GPUMEM_FD_WIRE_MAGIC    0x44464d47u /* "GMFD" */
#define GPUMEM_FD_WIRE_VERSION  1


/**
 * A request: the descriptor of allocation @a id, of @a size bytes. The wire
 * form is the fields in order, in the machine's byte order (it never
 * leaves the machine).
 */
typedef struct gpumem_fd_request {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;      /* 0 */
    uint64_t id;            /* The exporter's allocation, never 0 */
    uint64_t size;          /* Bytes the asker's key claims, never 0 */
} UCS_S_PACKED gpumem_fd_request_t;


/**
 * An answer: @a error 0 with the descriptor attached (SCM_RIGHTS), or the
 * errno of the refusal: ENOENT (no such allocation: freed), EINVAL (not of
 * that size, or a malformed request), EACCES (another user asked).
 */
typedef struct gpumem_fd_reply {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;      /* 0 */
    int32_t  error;
    uint32_t reserved2;     /* 0 */
    uint64_t id;            /* The request's, or 0 in a refusal sent
                               before the request was read */
} UCS_S_PACKED gpumem_fd_reply_t;


/* Fills a request or an answer of this version */
void gpumem_fd_request_init(gpumem_fd_request_t *request, uint64_t id,
                            uint64_t size);
void gpumem_fd_reply_init(gpumem_fd_reply_t *reply, uint64_t id, int error);


/**
 * Decodes the @a length bytes a peer sent at @a buf as a request: exactly
 * one request of this version, nothing reserved set, an id and a size.
 * UCS_ERR_INVALID_PARAM otherwise, with the reason at @a why_p.
 */
ucs_status_t gpumem_fd_request_unpack(const void *buf, size_t length,
                                      gpumem_fd_request_t *request,
                                      const char **why_p);

/**
 * Decodes an answer to the request for allocation @a id: exactly one
 * answer of this version, of that id (or of id 0 with an error), its error
 * 0 or a positive errno.
 * UCS_ERR_INVALID_PARAM otherwise, with the reason at @a why_p.
 */
ucs_status_t gpumem_fd_reply_unpack(const void *buf, size_t length,
                                    uint64_t id, gpumem_fd_reply_t *reply,
                                    const char **why_p);

END_C_DECLS

#endif
