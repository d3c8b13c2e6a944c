/**
 * gpumem RDMA transport: packing and checking the addresses peers exchange.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_addr.h"

#include <ucs/debug/log.h>
#include <string.h>


/* Path MTUs as enum ibv_mtu numbers them */
#define UCT_GPUMEM_RC_MTU_MIN  1
#define UCT_GPUMEM_RC_MTU_MAX  5


void uct_gpumem_rc_dev_addr_pack(const uct_gpumem_rc_dev_addr_t *addr,
                                 void *buffer)
{
    uint8_t *p = buffer;

    p[0] = UCT_GPUMEM_RC_ADDR_VERSION;
    p[1] = addr->is_eth ? UCT_GPUMEM_RC_DEV_ADDR_FLAG_ETH : 0;
    p[2] = addr->lid & 0xff;
    p[3] = addr->lid >> 8;
    memcpy(p + 4, addr->gid, sizeof(addr->gid));
}

static int uct_gpumem_rc_gid_is_zero(const uint8_t *gid)
{
    static const uint8_t zero[16] = {0};

    return !memcmp(gid, zero, sizeof(zero));
}

ucs_status_t uct_gpumem_rc_dev_addr_unpack(const void *buffer,
                                           ucs_log_level_t log_level,
                                           uct_gpumem_rc_dev_addr_t *addr_p)
{
    const uint8_t *p = buffer;
    uct_gpumem_rc_dev_addr_t addr;

    if (p[0] != UCT_GPUMEM_RC_ADDR_VERSION) {
        ucs_log(log_level, "gpumem_rc: device address of version %u, this "
                "side reads version %u", p[0], UCT_GPUMEM_RC_ADDR_VERSION);
        return UCS_ERR_UNSUPPORTED;
    }

    if (p[1] & ~UCT_GPUMEM_RC_DEV_ADDR_FLAG_ETH) {
        ucs_log(log_level, "gpumem_rc: device address with unknown flags "
                "0x%x", p[1]);
        return UCS_ERR_INVALID_ADDR;
    }

    addr.is_eth = !!(p[1] & UCT_GPUMEM_RC_DEV_ADDR_FLAG_ETH);
    addr.lid    = p[2] | ((uint16_t)p[3] << 8);
    memcpy(addr.gid, p + 4, sizeof(addr.gid));

    if (addr.is_eth && uct_gpumem_rc_gid_is_zero(addr.gid)) {
        ucs_log(log_level, "gpumem_rc: RoCE device address without a GID");
        return UCS_ERR_INVALID_ADDR;
    }

    if (!addr.is_eth && (addr.lid == 0)) {
        ucs_log(log_level, "gpumem_rc: InfiniBand device address without a "
                "LID");
        return UCS_ERR_INVALID_ADDR;
    }

    *addr_p = addr;
    return UCS_OK;
}

void uct_gpumem_rc_ep_addr_pack(const uct_gpumem_rc_ep_addr_t *addr,
                                void *buffer)
{
    uint8_t *p = buffer;

    p[0] = addr->qp_num & 0xff;
    p[1] = (addr->qp_num >> 8) & 0xff;
    p[2] = (addr->qp_num >> 16) & 0xff;
    p[3] = addr->path_mtu;
}

ucs_status_t uct_gpumem_rc_ep_addr_unpack(const void *buffer,
                                          uct_gpumem_rc_ep_addr_t *addr_p)
{
    const uint8_t *p = buffer;
    uct_gpumem_rc_ep_addr_t addr;

    addr.qp_num   = p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16);
    addr.path_mtu = p[3];

    if (addr.qp_num < 2) {
        ucs_error("gpumem_rc: endpoint address names queue pair %u, which "
                  "is never a reliable-connected one", addr.qp_num);
        return UCS_ERR_INVALID_ADDR;
    }

    if ((addr.path_mtu < UCT_GPUMEM_RC_MTU_MIN) ||
        (addr.path_mtu > UCT_GPUMEM_RC_MTU_MAX)) {
        ucs_error("gpumem_rc: endpoint address with path MTU %u, not one of "
                  "%u..%u (256..4096 bytes)", addr.path_mtu,
                  UCT_GPUMEM_RC_MTU_MIN, UCT_GPUMEM_RC_MTU_MAX);
        return UCS_ERR_INVALID_ADDR;
    }

    *addr_p = addr;
    return UCS_OK;
}
