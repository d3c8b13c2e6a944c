/**
 * gpumem IPC transport: the wire form of the remote key, and its checks.
 *
 * A key is read only by processes of the owner's machine, so it is in the
 * machine's byte order. Its size is fixed (UCT packs keys into buffers of
 * the size the memory domain announces): the export handle, whose length
 * depends on the driver, is followed by zeros up to GPUMEM_EXPORT_MAX. Every
 * field is bytes from a peer and checked before use.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_key.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <string.h>


#define UCT_GPUMEM_IPC_KEY_MAGIC  0x63706967u  /* "gipc" */


typedef struct UCS_S_PACKED uct_gpumem_ipc_key_packed {
    uint32_t magic;
    uint8_t  version;
    uint8_t  reserved;           /* Zero */
    uint16_t size;               /* sizeof(uct_gpumem_ipc_key_packed_t) */
    uint32_t uid;
    int32_t  pid;
    uint64_t machine;
    uint16_t gpu_domain;
    uint8_t  gpu_bus;
    uint8_t  gpu_dev;
    uint8_t  gpu_fn;
    uint8_t  reserved2;          /* Zero */
    uint16_t handle_len;
    uint64_t alloc_address;
    uint64_t alloc_size;
    uint64_t address;
    uint64_t length;
    uint8_t  handle[GPUMEM_EXPORT_MAX];  /* handle_len bytes, then zeros */
} uct_gpumem_ipc_key_packed_t;

_Static_assert(sizeof(uct_gpumem_ipc_key_packed_t) <= UINT8_MAX,
               "UCP keeps a key's size in one byte");


size_t uct_gpumem_ipc_key_packed_size(void)
{
    return sizeof(uct_gpumem_ipc_key_packed_t);
}

void uct_gpumem_ipc_key_pack(const uct_gpumem_ipc_key_t *key, void *buffer)
{
    uct_gpumem_ipc_key_packed_t packed;

    ucs_assert(key->handle_len <= sizeof(packed.handle));

    memset(&packed, 0, sizeof(packed));
    packed.magic         = UCT_GPUMEM_IPC_KEY_MAGIC;
    packed.version       = UCT_GPUMEM_IPC_KEY_VERSION;
    packed.size          = sizeof(packed);
    packed.uid           = key->uid;
    packed.pid           = key->pid;
    packed.machine       = key->machine;
    packed.gpu_domain    = key->gpu.domain;
    packed.gpu_bus       = key->gpu.bus;
    packed.gpu_dev       = key->gpu.dev;
    packed.gpu_fn        = key->gpu.fn;
    packed.handle_len    = key->handle_len;
    packed.alloc_address = key->alloc_address;
    packed.alloc_size    = key->alloc_size;
    packed.address       = key->address;
    packed.length        = key->length;
    memcpy(packed.handle, key->handle, key->handle_len);
    memcpy(buffer, &packed, sizeof(packed));
}

static int uct_gpumem_ipc_key_is_zero(const uint8_t *bytes, size_t length)
{
    size_t i;

    for (i = 0; i < length; ++i) {
        if (bytes[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* The registered range inside the allocation, neither wrapping around */
static int uct_gpumem_ipc_key_range_valid(
        const uct_gpumem_ipc_key_packed_t *packed)
{
    return (packed->alloc_size > 0) &&
           (packed->alloc_address <= UINT64_MAX - packed->alloc_size) &&
           (packed->address >= packed->alloc_address) &&
           (packed->length <= packed->alloc_size) &&
           (packed->address - packed->alloc_address <=
            packed->alloc_size - packed->length);
}

ucs_status_t uct_gpumem_ipc_key_unpack(const void *buffer, size_t size,
                                       uct_gpumem_ipc_key_t *key)
{
    uct_gpumem_ipc_key_packed_t packed;

    if (size != sizeof(packed)) {
        ucs_error("gpumem_ipc: refused a remote key of %zu bytes: a key has "
                  "%zu", size, sizeof(packed));
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&packed, buffer, sizeof(packed)); /* buffer may be unaligned */
    if (packed.magic != UCT_GPUMEM_IPC_KEY_MAGIC) {
        ucs_error("gpumem_ipc: refused a remote key with magic 0x%08x: not a "
                  "gpumem_ipc key", packed.magic);
        return UCS_ERR_INVALID_PARAM;
    }

    if (packed.version != UCT_GPUMEM_IPC_KEY_VERSION) {
        ucs_error("gpumem_ipc: refused a remote key of version %u: this "
                  "plugin reads version %u", packed.version,
                  UCT_GPUMEM_IPC_KEY_VERSION);
        return UCS_ERR_INVALID_PARAM;
    }

    /* A shorter key read with the tail of another buffer says so here */
    if (packed.size != sizeof(packed)) {
        ucs_error("gpumem_ipc: refused a truncated remote key: it says %u "
                  "bytes, a key has %zu", packed.size, sizeof(packed));
        return UCS_ERR_INVALID_PARAM;
    }

    if ((packed.pid <= 0) || (packed.handle_len == 0) ||
        (packed.handle_len > sizeof(packed.handle)) ||
        (packed.reserved != 0) || (packed.reserved2 != 0) ||
        !uct_gpumem_ipc_key_is_zero(packed.handle + packed.handle_len,
                                    sizeof(packed.handle) -
                                    packed.handle_len)) {
        ucs_error("gpumem_ipc: refused a malformed remote key of process "
                  "%d: a handle of %u bytes in %zu, or reserved bytes set, "
                  "or no process",
                  packed.pid, packed.handle_len, sizeof(packed.handle));
        return UCS_ERR_INVALID_PARAM;
    }

    if (!uct_gpumem_ipc_key_range_valid(&packed)) {
        ucs_error("gpumem_ipc: refused a remote key of process %d: %lu bytes "
                  "at 0x%lx do not lie in its allocation of %lu bytes at "
                  "0x%lx", packed.pid, (unsigned long)packed.length,
                  (unsigned long)packed.address,
                  (unsigned long)packed.alloc_size,
                  (unsigned long)packed.alloc_address);
        return UCS_ERR_INVALID_PARAM;
    }

    key->uid           = packed.uid;
    key->pid           = packed.pid;
    key->machine       = packed.machine;
    key->gpu.domain    = packed.gpu_domain;
    key->gpu.bus       = packed.gpu_bus;
    key->gpu.dev       = packed.gpu_dev;
    key->gpu.fn        = packed.gpu_fn;
    key->alloc_address = packed.alloc_address;
    key->alloc_size    = packed.alloc_size;
    key->address       = packed.address;
    key->length        = packed.length;
    key->handle_len    = packed.handle_len;
    memcpy(key->handle, packed.handle, packed.handle_len);
    return UCS_OK;
}

ucs_status_t uct_gpumem_ipc_key_check_owner(const uct_gpumem_ipc_key_t *key,
                                            uint32_t uid, uint64_t machine)
{
    /* As UCX's shared memory transports: a peer maps only what its user
     * could reach already */
    if (key->uid != uid) {
        ucs_error("gpumem_ipc: refused a remote key of process %d of user "
                  "%u: this process's user is %u", key->pid, key->uid, uid);
        return UCS_ERR_UNREACHABLE;
    }

    if (key->machine != machine) {
        ucs_error("gpumem_ipc: refused a remote key of process %d: it is of "
                  "another machine (0x%016lx, not 0x%016lx)", key->pid,
                  (unsigned long)key->machine, (unsigned long)machine);
        return UCS_ERR_UNREACHABLE;
    }

    return UCS_OK;
}
