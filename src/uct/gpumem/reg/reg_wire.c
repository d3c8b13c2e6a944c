/**
 * gpumem registration: the wire form of a peer's view, and its checks.
 *
 * Layout, little-endian, GPUMEM_REG_WIRE_SIZE bytes:
 *
 *   offset  size  field
 *        0     1  version (GPUMEM_REG_WIRE_VERSION)
 *        1     4  rkey
 *        5     8  address
 *       13     8  size in bytes
 *       21    64  device name, NUL-terminated, zeros after the NUL
 *
 * Nothing else: no lkey, no pointer. The form is canonical, so a decoded
 * view packs back to the very bytes it came from.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "reg.h"

#include <ucs/debug/log.h>
#include <inttypes.h>
#include <string.h>


enum {
    GPUMEM_REG_WIRE_OFFSET_VERSION = 0,
    GPUMEM_REG_WIRE_OFFSET_RKEY    = 1,
    GPUMEM_REG_WIRE_OFFSET_ADDRESS = 5,
    GPUMEM_REG_WIRE_OFFSET_LENGTH  = 13,
    GPUMEM_REG_WIRE_OFFSET_NAME    = 21
};

static void gpumem_reg_wire_put(uint8_t *p, uint64_t value, unsigned bytes)
{
    unsigned i;

    for (i = 0; i < bytes; ++i) {
        p[i] = (uint8_t)(value >> (8 * i));
    }
}

static uint64_t gpumem_reg_wire_get(const uint8_t *p, unsigned bytes)
{
    uint64_t value = 0;
    unsigned i;

    for (i = 0; i < bytes; ++i) {
        value |= (uint64_t)p[i] << (8 * i);
    }
    return value;
}

void gpumem_reg_wire_pack(const gpumem_reg_remote_view_t *remote_view,
                          void *buffer)
{
    uint8_t *p = buffer;
    size_t name_len;

    UCS_STATIC_ASSERT(GPUMEM_REG_WIRE_OFFSET_NAME +
                      GPUMEM_REG_DEVICE_NAME_MAX == GPUMEM_REG_WIRE_SIZE);

    name_len = strnlen(remote_view->device_name,
                       GPUMEM_REG_DEVICE_NAME_MAX - 1);

    p[GPUMEM_REG_WIRE_OFFSET_VERSION] = GPUMEM_REG_WIRE_VERSION;
    gpumem_reg_wire_put(p + GPUMEM_REG_WIRE_OFFSET_RKEY, remote_view->rkey, 4);
    gpumem_reg_wire_put(p + GPUMEM_REG_WIRE_OFFSET_ADDRESS,
                        remote_view->address, 8);
    gpumem_reg_wire_put(p + GPUMEM_REG_WIRE_OFFSET_LENGTH, remote_view->length,
                        8);
    memset(p + GPUMEM_REG_WIRE_OFFSET_NAME, 0, GPUMEM_REG_DEVICE_NAME_MAX);
    memcpy(p + GPUMEM_REG_WIRE_OFFSET_NAME, remote_view->device_name,
           name_len);
}

/* A device name as the kernel makes them: printable ASCII, no blank */
static int gpumem_reg_wire_name_char_valid(uint8_t c)
{
    return (c > ' ') && (c < 0x7f);
}

static ucs_status_t gpumem_reg_wire_check_name(const uint8_t *name)
{
    const uint8_t *end;
    size_t i, len;

    end = memchr(name, '\0', GPUMEM_REG_DEVICE_NAME_MAX);
    if (end == NULL) {
        ucs_error("gpumem: packed remote key: the device name is not "
                  "terminated within its %d bytes",
                  GPUMEM_REG_DEVICE_NAME_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    len = end - name;
    if (len == 0) {
        ucs_error("gpumem: packed remote key: the device name is empty");
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < len; ++i) {
        if (!gpumem_reg_wire_name_char_valid(name[i])) {
            ucs_error("gpumem: packed remote key: byte %zu of the device name "
                      "is 0x%02x, not a printable character", i, name[i]);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    for (i = len + 1; i < GPUMEM_REG_DEVICE_NAME_MAX; ++i) {
        if (name[i] != 0) {
            ucs_error("gpumem: packed remote key: byte %zu after the device "
                      "name '%.*s' is 0x%02x, not zero", i, (int)len, name,
                      name[i]);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    return UCS_OK;
}

ucs_status_t gpumem_reg_wire_unpack(const void *buffer, size_t length,
                                    gpumem_reg_remote_view_t *remote_view_p)
{
    const uint8_t *p = buffer;
    uint64_t address, size;
    ucs_status_t status;

    if (length == 0) {
        ucs_error("gpumem: packed remote key is empty, expected %d bytes",
                  GPUMEM_REG_WIRE_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    /* The version first: another version may have another length */
    if (p[GPUMEM_REG_WIRE_OFFSET_VERSION] != GPUMEM_REG_WIRE_VERSION) {
        ucs_error("gpumem: packed remote key has version %u, this build reads "
                  "version %d", p[GPUMEM_REG_WIRE_OFFSET_VERSION],
                  GPUMEM_REG_WIRE_VERSION);
        return UCS_ERR_UNSUPPORTED;
    }

    if (length != GPUMEM_REG_WIRE_SIZE) {
        ucs_error("gpumem: packed remote key has %zu bytes, version %d has "
                  "%d", length, GPUMEM_REG_WIRE_VERSION, GPUMEM_REG_WIRE_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_reg_wire_check_name(p + GPUMEM_REG_WIRE_OFFSET_NAME);
    if (status != UCS_OK) {
        return status;
    }

    address = gpumem_reg_wire_get(p + GPUMEM_REG_WIRE_OFFSET_ADDRESS, 8);
    size    = gpumem_reg_wire_get(p + GPUMEM_REG_WIRE_OFFSET_LENGTH, 8);
    if (address > (UINT64_MAX - size)) {
        ucs_error("gpumem: packed remote key names %" PRIu64 " bytes at 0x%"
                  PRIx64 ", which wrap past the end of the address space",
                  size, address);
        return UCS_ERR_INVALID_PARAM;
    }

    remote_view_p->rkey    = (uint32_t)gpumem_reg_wire_get(
                                     p + GPUMEM_REG_WIRE_OFFSET_RKEY, 4);
    remote_view_p->address = address;
    remote_view_p->length  = size;
    memcpy(remote_view_p->device_name, p + GPUMEM_REG_WIRE_OFFSET_NAME,
           GPUMEM_REG_DEVICE_NAME_MAX);
    return UCS_OK;
}
