/**
 * gpumem IPC transport: the interface address peers of the machine
 * exchange: the process, its user, the interface among the process's
 * (uct_gpumem_ipc_open_t), its GPU, whose path to the peer's GPU the
 * topology judges, and the descriptor of its receive FIFO (ipc_fifo.h).
 * Read on the same machine only, in its own byte order.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_ADDR_H_
#define UCT_GPUMEM_IPC_ADDR_H_

#include <uct/gpumem/topo/topo.h>

#include <ucs/type/status.h>
#include <ucs/config/types.h>
#include <ucs/sys/compiler_def.h>
#include <sys/types.h>
#include <stdint.h>

BEGIN_C_DECLS

/* pid (4 bytes), uid (4), interface id (4), the GPU's PCI domain (2), bus
 * (1), device and function (1, as PCI packs them), the receive FIFO's
 * descriptor in the process (4) */
#define UCT_GPUMEM_IPC_IFACE_ADDR_SIZE 24

/* The kernel's largest pid: below pid_max, which is at most PID_MAX_LIMIT
 * (4 Mi on 64-bit) */
#define UCT_GPUMEM_IPC_PID_MAX         (4 * 1024 * 1024 - 1)


/**
 * An interface as its address names it.
 */
typedef struct uct_gpumem_ipc_peer {
    pid_t             pid;
    uid_t             uid;
    uint32_t          iface_id;
    gpumem_pci_addr_t gpu;       /* dev below 32, fn below 8 */
    int               fifo_fd;   /* Its receive FIFO, in its process */
    uint32_t          proc_dev;  /* The /proc its pid is of (gpumem_proc.h) */
} uct_gpumem_ipc_peer_t;


/* Write UCT_GPUMEM_IPC_IFACE_ADDR_SIZE bytes, at any alignment */
void uct_gpumem_ipc_iface_addr_pack(const uct_gpumem_ipc_peer_t *peer,
                                    void *buffer);


/**
 * Read an interface address a peer sent (UCT_GPUMEM_IPC_IFACE_ADDR_SIZE
 * bytes, at any alignment).
 *
 * @param [in]  buffer     The bytes.
 * @param [in]  log_level  Level of the line saying what is wrong.
 * @param [out] peer_p     Set only on success.
 *
 * @return UCS_ERR_INVALID_ADDR for a pid no process has (0, negative, above
 *         UCT_GPUMEM_IPC_PID_MAX), user -1 (no user's) or a negative
 *         descriptor.
 */
ucs_status_t uct_gpumem_ipc_iface_addr_unpack(const void *buffer,
                                              ucs_log_level_t log_level,
                                              uct_gpumem_ipc_peer_t *peer_p);

END_C_DECLS

#endif
