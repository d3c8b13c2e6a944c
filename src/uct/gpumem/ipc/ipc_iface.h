/**
 * gpumem IPC transport: the interface, whose copy engines move bytes
 * between this process's device memory and peers' device memory mapped
 * through their keys.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_IFACE_H_
#define UCT_GPUMEM_IPC_IFACE_H_

#include "ipc_addr.h"
#include "ipc_fifo.h"
#include "ipc_md.h"
#include "ipc_open.h"
#include "ipc_reach.h"

#include <uct/gpumem/base/gpumem_iface.h>


/* UCX 1.13 holds 9 characters of a transport name (UCT_TL_NAME_MAX) */
#define UCT_GPUMEM_IPC_TL_NAME   "gpumemipc"
#define UCT_GPUMEM_IPC_DEV_NAME  "gpumem"

/* Short puts and bcopy are for UCP's RMA: UCX 1.13 takes a transport for
 * ucp_put/ucp_get only if it has them, and gives a put below its zero-copy
 * threshold (16 KiB unless UCX_ZCOPY_THRESH says otherwise) to put_short up
 * to this size. So a put from device memory never reaches put_bcopy, whose
 * packing UCP does with the CPU. */
#define UCT_GPUMEM_IPC_PUT_MAX_SHORT  (16 * UCS_KBYTE)
#define UCT_GPUMEM_IPC_MAX_BCOPY      (16 * UCS_KBYTE)
/* Host memory a copy between a GPU and memory it does not reach goes
 * through, at most at a time */
#define UCT_GPUMEM_IPC_STAGE_CHUNK    (1 * UCS_MBYTE)

/* Active messages: a short one's header and payload, and a bcopy one's
 * packed bytes, fill one slot of the peer's receive FIFO */
#define UCT_GPUMEM_IPC_AM_MAX_SHORT   256
#define UCT_GPUMEM_IPC_AM_MAX_BCOPY   UCT_GPUMEM_IPC_FIFO_MAX_DATA


/* The device address: the machine's identity (uct_gpumem_ipc_machine_id) */
typedef uint64_t uct_gpumem_ipc_device_addr_t;


typedef struct uct_gpumem_ipc_iface_config {
    uct_gpumem_iface_config_t super;
    double                    bandwidth;  /* UCS_CONFIG_DBL_AUTO: by the
                                             topology */
    ucs_time_t                latency;    /* UCS_TIME_AUTO: by the topology */
    double                    overhead;
    unsigned                  fifo_size;  /* Slots of the receive FIFO */
} uct_gpumem_ipc_iface_config_t;


/**
 * A zero-copy operation the engine runs.
 */
typedef struct uct_gpumem_ipc_op {
    uct_gpumem_iface_op_t        super;
    uct_gpumem_ipc_cache_entry_t *entry;  /* Held while the engine may touch
                                             its mapping */
} uct_gpumem_ipc_op_t;


/**
 * The interface. Its copies run at once, side by side, as on the streams
 * of the GPUs' copy engines, and complete in any order; a flush completes
 * once every copy posted before it on the interface has.
 */
typedef struct uct_gpumem_ipc_iface {
    uct_gpumem_iface_t    super;
    uct_gpumem_ipc_md_t   *md;
    uct_gpumem_ipc_path_t path;      /* What the estimates come from */
    uct_gpumem_ipc_open_t open;      /* Among the process's open ones */
    uct_gpumem_ipc_fifo_t fifo;      /* Where peers' active messages come */
    ucs_list_link_t       pending_eps; /* uct_gpumem_ipc_ep_t whose requests
                                          wait for a slot */
} uct_gpumem_ipc_iface_t;


extern uct_tl_t uct_gpumem_ipc_tl;


/**
 * Copy @a length bytes with the engine of the process's GPU @a gpu (device
 * addresses of that GPU, or host addresses). UCS_OK when the bytes landed
 * at once; UCS_INPROGRESS when @a comp will be called (@a ep counts the
 * copy, and @a entry is held, until then).
 */
ucs_status_t uct_gpumem_ipc_iface_post(uct_gpumem_ipc_iface_t *iface,
                                       uct_gpumem_ep_t *ep, unsigned gpu,
                                       uint64_t dst, int dst_dev,
                                       uint64_t src, int src_dev,
                                       size_t length,
                                       uct_gpumem_ipc_cache_entry_t *entry,
                                       uct_completion_t *comp);

/* Copies at once, back when the bytes landed: short and bcopy */
ucs_status_t uct_gpumem_ipc_iface_copy(uct_gpumem_ipc_iface_t *iface,
                                       unsigned gpu, uint64_t dst, int dst_dev,
                                       uint64_t src, int src_dev,
                                       size_t length);

/* Gives the messages that came to their handlers, and the endpoints'
 * waiting requests their turn where a slot is free (ipc_am.c) */
unsigned uct_gpumem_ipc_iface_am_progress(uct_gpumem_ipc_iface_t *iface);

/**
 * Whether a peer's interface at @a dev_addr and @a iface_addr is reached:
 * the same machine and user, and this process's GPU reaches the peer's
 * (the peer may be this process). The reason of a refusal is logged once;
 * an address that does not hold, each time, as an error. @a peer_p, when
 * not NULL, gets the interface address read.
 */
int uct_gpumem_ipc_iface_reaches(uct_gpumem_ipc_iface_t *iface,
                                 const uct_device_addr_t *dev_addr,
                                 const uct_iface_addr_t *iface_addr,
                                 uct_gpumem_ipc_peer_t *peer_p);

#endif
