/**
 * gpumem IPC transport: packing and checking the interface address.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_addr.h"

#include <ucs/debug/log.h>
#include <string.h>


/* The bytes, as laid out on the machine */
typedef struct UCS_S_PACKED uct_gpumem_ipc_iface_addr {
    int32_t  pid;
    uint32_t uid;
    uint32_t iface_id;
    uint16_t gpu_domain;
    uint8_t  gpu_bus;
    uint8_t  gpu_devfn;
    int32_t  fifo_fd;
    uint32_t proc_dev;
} uct_gpumem_ipc_iface_addr_t;


void uct_gpumem_ipc_iface_addr_pack(const uct_gpumem_ipc_peer_t *peer,
                                    void *buffer)
{
    uct_gpumem_ipc_iface_addr_t addr;

    UCS_STATIC_ASSERT(sizeof(addr) == UCT_GPUMEM_IPC_IFACE_ADDR_SIZE);
    addr.pid        = peer->pid;
    addr.uid        = peer->uid;
    addr.iface_id   = peer->iface_id;
    addr.gpu_domain = peer->gpu.domain;
    addr.gpu_bus    = peer->gpu.bus;
    addr.gpu_devfn  = (uint8_t)(((peer->gpu.dev & 0x1f) << 3) |
                                (peer->gpu.fn & 7));
    addr.fifo_fd    = peer->fifo_fd;
    addr.proc_dev   = peer->proc_dev;
    memcpy(buffer, &addr, sizeof(addr));
}

ucs_status_t uct_gpumem_ipc_iface_addr_unpack(const void *buffer,
                                              ucs_log_level_t log_level,
                                              uct_gpumem_ipc_peer_t *peer_p)
{
    uct_gpumem_ipc_iface_addr_t addr;

    memcpy(&addr, buffer, sizeof(addr));
    if ((addr.pid <= 0) || (addr.pid > UCT_GPUMEM_IPC_PID_MAX)) {
        ucs_log(log_level, "gpumem_ipc: interface address of process %d, "
                "which no process can be (1 to %d)", (int)addr.pid,
                UCT_GPUMEM_IPC_PID_MAX);
        return UCS_ERR_INVALID_ADDR;
    }

    if (addr.uid == (uint32_t)-1) {
        ucs_log(log_level, "gpumem_ipc: interface address of process %d of "
                "user -1, which is no user's", (int)addr.pid);
        return UCS_ERR_INVALID_ADDR;
    }

    if (addr.fifo_fd < 0) {
        ucs_log(log_level, "gpumem_ipc: interface address of process %d "
                "with receive FIFO descriptor %d, which no file can be",
                (int)addr.pid, (int)addr.fifo_fd);
        return UCS_ERR_INVALID_ADDR;
    }

    peer_p->pid        = addr.pid;
    peer_p->uid        = addr.uid;
    peer_p->iface_id   = addr.iface_id;
    peer_p->gpu.domain = addr.gpu_domain;
    peer_p->gpu.bus    = addr.gpu_bus;
    peer_p->gpu.dev    = addr.gpu_devfn >> 3;
    peer_p->gpu.fn     = addr.gpu_devfn & 7;
    peer_p->fifo_fd    = addr.fifo_fd;
    peer_p->proc_dev   = addr.proc_dev;
    return UCS_OK;
}
