/**
 * gpumem fuzz target: the gpumemipc remote key decoder, which reads bytes a
 * peer packed. Whatever it accepts must be a key that packs back to the
 * same bytes, whose registered range lies inside its allocation without
 * wrapping, and whose export handle fits.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gpumem/ipc/ipc_key.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


static void check(int condition)
{
    if (!condition) {
        abort(); /* An accepted key that does not hold */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t repacked[512];
    uct_gpumem_ipc_key_t key;

    check(uct_gpumem_ipc_key_packed_size() <= sizeof(repacked));
    if (uct_gpumem_ipc_key_unpack(data, size, &key) != UCS_OK) {
        return 0;
    }

    check(size == uct_gpumem_ipc_key_packed_size());
    check(key.handle_len <= sizeof(key.handle));
    check(key.length <= key.alloc_size);
    check(key.address >= key.alloc_address);
    check(key.address - key.alloc_address <= key.alloc_size - key.length);
    check(key.alloc_address + key.alloc_size >= key.alloc_address);

    uct_gpumem_ipc_key_pack(&key, repacked);
    check(!memcmp(repacked, data, size));
    return 0;
}
