/**
 * gpumem fuzz target: the gpumemipc receive FIFO's readers of what a peer
 * wrote into shared memory: the control block a sender maps (its layout,
 * slots, process and socket), and a slot's header the receiver reads.
 * Whatever they accept must be usable as it is: slots that fit the
 * mapping, a process that can be, a socket address that fits, an active
 * message id a handler can have and a length within the slot.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/ipc/ipc_fifo.h>
#include <uct/api/uct.h>

#include <stdint.h>
#include <string.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uct_gpumem_ipc_fifo_ctl_t ctl;
    uct_gpumem_ipc_fifo_elem_t elem;
    uint32_t mapped, length;
    uint8_t am_id, flags;

    /* The mapping's size, the control block, the slot's header */
    if (size != sizeof(mapped) + sizeof(ctl) + sizeof(elem)) {
        return 0;
    }

    memcpy(&mapped, data, sizeof(mapped));
    memcpy(&ctl, data + sizeof(mapped), sizeof(ctl));
    memcpy(&elem, data + sizeof(mapped) + sizeof(ctl), sizeof(elem));

    if (uct_gpumem_ipc_fifo_ctl_check(&ctl, mapped, UCS_LOG_LEVEL_ERROR) ==
        UCS_OK) {
        fuzz_check(ctl.magic == UCT_GPUMEM_IPC_FIFO_MAGIC);
        fuzz_check((ctl.num_slots >= UCT_GPUMEM_IPC_FIFO_MIN_SLOTS) &&
                   (ctl.num_slots <= UCT_GPUMEM_IPC_FIFO_MAX_SLOTS) &&
                   ((ctl.num_slots & (ctl.num_slots - 1)) == 0));
        fuzz_check(ctl.elem_size == UCT_GPUMEM_IPC_FIFO_ELEM_SIZE);
        fuzz_check(uct_gpumem_ipc_fifo_size(ctl.num_slots) <= mapped);
        fuzz_check(ctl.pid > 0);
        fuzz_check((ctl.signal_addr_len > sizeof(sa_family_t)) &&
                   (ctl.signal_addr_len <= sizeof(ctl.signal_addr)) &&
                   (ctl.signal_addr.sun_family == AF_UNIX));
    }

    if (uct_gpumem_ipc_fifo_elem_read(&elem, UCS_LOG_LEVEL_ERROR, &am_id,
                                      &length, &flags) == UCS_OK) {
        fuzz_check(am_id < UCT_AM_ID_MAX);
        fuzz_check(length <= UCT_GPUMEM_IPC_FIFO_MAX_DATA);
        fuzz_check((am_id == elem.am_id) && (length == elem.length) &&
                   (flags == elem.flags));
    }
    return 0;
}
