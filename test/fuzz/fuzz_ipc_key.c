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

#include "fuzz_check.h"

#include <uct/gpumem/ipc/ipc_key.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t repacked[512];
    uct_gpumem_ipc_key_t key;

    fuzz_check(uct_gpumem_ipc_key_packed_size() <= sizeof(repacked));
    if (uct_gpumem_ipc_key_unpack(data, size, &key) != UCS_OK) {
        return 0;
    }

    fuzz_check(size == uct_gpumem_ipc_key_packed_size());
    fuzz_check(key.handle_len <= sizeof(key.handle));
    fuzz_check(key.length <= key.alloc_size);
    fuzz_check(key.address >= key.alloc_address);
    fuzz_check(key.address - key.alloc_address <= key.alloc_size - key.length);
    fuzz_check(key.alloc_address + key.alloc_size >= key.alloc_address);

    uct_gpumem_ipc_key_pack(&key, repacked);
    fuzz_check(!memcmp(repacked, data, size));
    return 0;
}
