/**
 * gpumem RDMA transport: the addresses peers exchange to connect queue
 * pairs: the port's (device address) and the queue pair's (ep address).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_RC_ADDR_H_
#define UCT_GPUMEM_RC_ADDR_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/config/types.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

#define UCT_GPUMEM_RC_ADDR_VERSION      1

/* Device address: version, flags, LID (little-endian), GID */
#define UCT_GPUMEM_RC_DEV_ADDR_SIZE     (1 + 1 + 2 + 16)

/* Endpoint address: queue pair number (3 bytes, little-endian), path MTU */
#define UCT_GPUMEM_RC_EP_ADDR_SIZE      (3 + 1)

/* Device address flags */
#define UCT_GPUMEM_RC_DEV_ADDR_FLAG_ETH 0x1   /* RoCE: addressed by GID */


/**
 * A port as peers address it.
 */
typedef struct uct_gpumem_rc_dev_addr {
    int      is_eth;      /* Link layer Ethernet (RoCE), else InfiniBand */
    uint16_t lid;         /* InfiniBand only */
    uint8_t  gid[16];
} uct_gpumem_rc_dev_addr_t;


/**
 * A queue pair as its peer connects to it.
 */
typedef struct uct_gpumem_rc_ep_addr {
    uint32_t qp_num;      /* 24 bits */
    uint8_t  path_mtu;    /* enum ibv_mtu: 1 (256) to 5 (4096) */
} uct_gpumem_rc_ep_addr_t;


/* Write UCT_GPUMEM_RC_DEV_ADDR_SIZE bytes, at any alignment */
void uct_gpumem_rc_dev_addr_pack(const uct_gpumem_rc_dev_addr_t *addr,
                                 void *buffer);


/**
 * Read a device address a peer sent (UCT_GPUMEM_RC_DEV_ADDR_SIZE bytes).
 *
 * @param [in]  buffer     The bytes.
 * @param [in]  log_level  Level of the line saying what is wrong.
 * @param [out] addr_p     Set only on success.
 *
 * @return UCS_ERR_UNSUPPORTED for another version, UCS_ERR_INVALID_ADDR for
 *         unknown flags, an InfiniBand address without a LID or a RoCE
 *         address without a GID.
 */
ucs_status_t uct_gpumem_rc_dev_addr_unpack(const void *buffer,
                                           ucs_log_level_t log_level,
                                           uct_gpumem_rc_dev_addr_t *addr_p);


/* Write UCT_GPUMEM_RC_EP_ADDR_SIZE bytes, at any alignment */
void uct_gpumem_rc_ep_addr_pack(const uct_gpumem_rc_ep_addr_t *addr,
                                void *buffer);


/**
 * Read an endpoint address a peer sent (UCT_GPUMEM_RC_EP_ADDR_SIZE bytes).
 *
 * @return UCS_ERR_INVALID_ADDR, logged, for queue pair 0 or 1 (the
 *         management queue pairs, never an RC one) or a path MTU out of
 *         range.
 */
ucs_status_t uct_gpumem_rc_ep_addr_unpack(const void *buffer,
                                          uct_gpumem_rc_ep_addr_t *addr_p);

END_C_DECLS

#endif
