/**
 * gpumem fuzz target: the gpumem_rc address decoders, which read the device
 * and endpoint addresses a peer sent through UCP's wire-up. Whatever they
 * accept must pack back to the same bytes and name a queue pair that can
 * be connected.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/rc/rc_addr.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


/* The input: a device address, then an endpoint address */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t repacked[UCT_GPUMEM_RC_DEV_ADDR_SIZE];
    static const uint8_t zero_gid[16];
    uct_gpumem_rc_dev_addr_t dev_addr;
    uct_gpumem_rc_ep_addr_t ep_addr;

    if (size != (UCT_GPUMEM_RC_DEV_ADDR_SIZE + UCT_GPUMEM_RC_EP_ADDR_SIZE)) {
        return 0; /* UCP hands the decoders whole addresses */
    }

    if (uct_gpumem_rc_dev_addr_unpack(data, UCS_LOG_LEVEL_ERROR,
                                      &dev_addr) == UCS_OK) {
        fuzz_check(dev_addr.is_eth ?
                   (memcmp(dev_addr.gid, zero_gid, sizeof(zero_gid)) != 0) :
                   (dev_addr.lid != 0));
        uct_gpumem_rc_dev_addr_pack(&dev_addr, repacked);
        fuzz_check(!memcmp(repacked, data, UCT_GPUMEM_RC_DEV_ADDR_SIZE));
    }

    data += UCT_GPUMEM_RC_DEV_ADDR_SIZE;
    if (uct_gpumem_rc_ep_addr_unpack(data, &ep_addr) == UCS_OK) {
        fuzz_check((ep_addr.qp_num >= 2) && (ep_addr.qp_num < (1u << 24)));
        fuzz_check((ep_addr.path_mtu >= 1) && (ep_addr.path_mtu <= 5));
        uct_gpumem_rc_ep_addr_pack(&ep_addr, repacked);
        fuzz_check(!memcmp(repacked, data, UCT_GPUMEM_RC_EP_ADDR_SIZE));
    }
    return 0;
}
