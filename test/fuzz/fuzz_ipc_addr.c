/**
 * gpumem fuzz target: the gpumemipc interface address decoder, which reads
 * the address a peer process sent through UCP's wire-up. Whatever it
 * accepts must name a process that can be, of a user that can be, a
 * descriptor that can be, and pack back to the same bytes.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/ipc/ipc_addr.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t repacked[UCT_GPUMEM_IPC_IFACE_ADDR_SIZE];
    uct_gpumem_ipc_peer_t peer;

    if (size != UCT_GPUMEM_IPC_IFACE_ADDR_SIZE) {
        return 0; /* UCP hands the decoder whole addresses */
    }

    if (uct_gpumem_ipc_iface_addr_unpack(data, UCS_LOG_LEVEL_ERROR,
                                         &peer) != UCS_OK) {
        return 0;
    }

    fuzz_check((peer.pid > 0) && (peer.pid <= UCT_GPUMEM_IPC_PID_MAX));
    fuzz_check(peer.uid != (uid_t)-1);
    fuzz_check(peer.fifo_fd >= 0);
    fuzz_check((peer.gpu.dev < 32) && (peer.gpu.fn < 8));
    uct_gpumem_ipc_iface_addr_pack(&peer, repacked);
    fuzz_check(!memcmp(repacked, data, sizeof(repacked)));
    return 0;
}
