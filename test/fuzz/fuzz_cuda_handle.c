/**
 * gpumem fuzz target: the cuda driver's memory handle decoder, which reads
 * the handle another process of the machine exported. Whatever it accepts
 * must be this user's, name a process, and pack back to the same bytes; a
 * VMM handle must hold whole pages of a power-of-2 granularity.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/driver/cuda/cuda_handle.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t repacked[GPUMEM_CUDA_HANDLE_SIZE];
    gpumem_cuda_handle_t handle;
    size_t length;

    if (gpumem_cuda_handle_unpack(data, size, &handle) != UCS_OK) {
        return 0;
    }

    fuzz_check(size == GPUMEM_CUDA_HANDLE_SIZE);
    fuzz_check(handle.uid == geteuid());
    fuzz_check((handle.pid > 0) && (handle.size > 0) && (handle.alloc_id != 0));
    if (handle.type == GPUMEM_CUDA_HANDLE_VMM_FD) {
        fuzz_check(handle.fd >= 0);
        fuzz_check((handle.granularity != 0) &&
                   !(handle.granularity & (handle.granularity - 1)));
        fuzz_check((handle.size % GPUMEM_CUDA_HANDLE_PAGE) == 0);
    } else {
        fuzz_check(handle.type == GPUMEM_CUDA_HANDLE_LEGACY_IPC);
        fuzz_check((handle.fd == -1) && (handle.granularity == 0) &&
                   (handle.broker == 0));
    }

    fuzz_check(gpumem_cuda_handle_pack(&handle, repacked, sizeof(repacked),
                                       &length) == UCS_OK);
    fuzz_check((length == size) && !memcmp(repacked, data, size));
    return 0;
}
