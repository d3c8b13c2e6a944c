/**
 * gpumem IPC transport: the receive FIFO of an interface's active messages,
 * in memory shared with the processes that send to it. Each interface has
 * one, in a memfd its peers map through /proc/<pid>/fd (as UCX's posix
 * transport maps its segments); senders claim a slot by advancing the
 * head, write it and publish it by its sequence, and the receiver gives
 * the published slots to their handlers in order and moves the tail on.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_FIFO_H_
#define UCT_GPUMEM_IPC_FIFO_H_

#include <ucs/arch/cpu.h>
#include <ucs/type/status.h>
#include <ucs/config/types.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/time/time_def.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <stdint.h>

BEGIN_C_DECLS

/* What the control block says of its layout: a peer of another build reads
 * no slot of it */
#define UCT_GPUMEM_IPC_FIFO_MAGIC      0x6770756d69706332ull /* "gpumipc2" */

/* Bytes of a slot: its header and the message */
#define UCT_GPUMEM_IPC_FIFO_ELEM_SIZE  (8 * 1024)
#define UCT_GPUMEM_IPC_FIFO_HDR_SIZE   16
#define UCT_GPUMEM_IPC_FIFO_MAX_DATA   (UCT_GPUMEM_IPC_FIFO_ELEM_SIZE - \
                                        UCT_GPUMEM_IPC_FIFO_HDR_SIZE)

/* Slots of a FIFO: a power of 2, within these */
#define UCT_GPUMEM_IPC_FIFO_MIN_SLOTS  2
#define UCT_GPUMEM_IPC_FIFO_MAX_SLOTS  (64 * 1024)

/* A slot's sequence while the sender whose pid it holds fills it: never a
 * slot number + 1 */
#define UCT_GPUMEM_IPC_FIFO_CLAIMED        UCS_BIT(63)

/* Time the slot to read next stays claimed and unwritten before the
 * receiver asks whether its sender lives */
#define UCT_GPUMEM_IPC_FIFO_WATCH_MSEC     100

/* Empty polls between two looks at the clock: a polling loop's progress
 * reads no clock */
#define UCT_GPUMEM_IPC_FIFO_WATCH_POLLS    1024

/* A message sent with UCT_SEND_FLAG_SIGNALED */
#define UCT_GPUMEM_IPC_FIFO_FLAG_SIGNALED  UCS_BIT(0)


/**
 * The control block at the start of the shared memory: the senders' line,
 * the receiver's line, and what the receiver wrote once, before any peer
 * mapped it.
 */
typedef struct uct_gpumem_ipc_fifo_ctl {
    volatile uint64_t  head;        /* Next slot to claim: senders' */
    uint8_t            pad1[UCS_SYS_CACHE_LINE_SIZE - 8];
    volatile uint64_t  tail;        /* First slot not released */
    volatile uint32_t  armed;       /* UCT_EVENT_RECV, UCT_EVENT_RECV_SIG:
                                       what the receiver sleeps for */
    volatile uint32_t  closed;      /* The receiver's interface closed */
    uint8_t            pad2[UCS_SYS_CACHE_LINE_SIZE - 16];
    uint64_t           magic;
    uint32_t           num_slots;
    uint32_t           elem_size;
    int32_t            pid;         /* The receiver's */
    uint32_t           iface_id;    /* Its interface in the process */
    uint32_t           signal_addr_len;
    struct sockaddr_un signal_addr; /* Its event socket */
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) uct_gpumem_ipc_fifo_ctl_t;


/**
 * A slot's header; the message follows.
 */
typedef struct uct_gpumem_ipc_fifo_elem {
    volatile uint64_t seq;       /* Its slot number + 1 once published;
                                    while its sender fills it,
                                    UCT_GPUMEM_IPC_FIFO_CLAIMED | the
                                    sender's pid */
    uint32_t          length;    /* Of the message */
    uint8_t           am_id;
    uint8_t           flags;     /* UCT_GPUMEM_IPC_FIFO_FLAG_* */
    uint16_t          reserved;
} uct_gpumem_ipc_fifo_elem_t;


/**
 * The receiver's side: the FIFO it created.
 */
typedef struct uct_gpumem_ipc_fifo {
    int                       fd;          /* Its memfd, which peers open */
    size_t                    size;        /* Bytes mapped */
    uct_gpumem_ipc_fifo_ctl_t *ctl;
    uint8_t                   *elems;
    uint64_t                  read_index;  /* Next slot to read */
    unsigned                  num_slots;
    uint64_t                  watch_index; /* The slot to read next when
                                              last looked at */
    ucs_time_t                watch_time;  /* When */
    unsigned                  watch_polls; /* Empty polls since the clock
                                              was read */
} uct_gpumem_ipc_fifo_t;


/**
 * A sender's side: a peer's FIFO mapped.
 */
typedef struct uct_gpumem_ipc_fifo_peer {
    size_t                    size;
    uct_gpumem_ipc_fifo_ctl_t *ctl;
    uint8_t                   *elems;
    uint64_t                  cached_tail;
    unsigned                  num_slots;
    uint32_t                  own_pid;     /* This process's, for a claim */
    struct sockaddr_un        signal_addr;     /* The receiver's event
                                                  socket, read at attach */
    socklen_t                 signal_addr_len;
} uct_gpumem_ipc_fifo_peer_t;


/* Bytes of a FIFO of @a num_slots slots */
size_t uct_gpumem_ipc_fifo_size(unsigned num_slots);


/**
 * Creates the FIFO of interface @a iface_id of the process: @a num_slots
 * slots (a power of 2 within the limits), its event socket's address given
 * to the senders.
 */
ucs_status_t uct_gpumem_ipc_fifo_create(uint32_t iface_id, unsigned num_slots,
                                        const struct sockaddr_un *signal_addr,
                                        socklen_t signal_addr_len,
                                        uct_gpumem_ipc_fifo_t *fifo);

/* Says the interface closed to those who map it, and unmaps it */
void uct_gpumem_ipc_fifo_destroy(uct_gpumem_ipc_fifo_t *fifo);


/**
 * Whether a control block a peer wrote can be used: its magic, a slot count
 * that is a power of 2 within the limits, slots of this build's size, all
 * of them within @a size bytes, a process that can be, and a socket address
 * that fits. UCS_ERR_INVALID_ADDR with a line at @a log_level naming what
 * is wrong.
 */
ucs_status_t uct_gpumem_ipc_fifo_ctl_check(const uct_gpumem_ipc_fifo_ctl_t *ctl,
                                           size_t size,
                                           ucs_log_level_t log_level);

/**
 * Maps the FIFO of interface @a iface_id of process @a pid, whose memfd is
 * its descriptor @a fd: what its control block says is read once, and used
 * only if it holds and names that interface.
 */
ucs_status_t uct_gpumem_ipc_fifo_attach(pid_t pid, uint32_t iface_id, int fd,
                                        uct_gpumem_ipc_fifo_peer_t *peer);

void uct_gpumem_ipc_fifo_detach(uct_gpumem_ipc_fifo_peer_t *peer);


/**
 * A slot a sender claimed, to fill; UCS_ERR_NO_RESOURCE when the FIFO is
 * full.
 */
ucs_status_t uct_gpumem_ipc_fifo_claim(uct_gpumem_ipc_fifo_peer_t *peer,
                                       uint64_t *index_p,
                                       uct_gpumem_ipc_fifo_elem_t **elem_p);

/* Whether a slot can be claimed now */
int uct_gpumem_ipc_fifo_has_room(uct_gpumem_ipc_fifo_peer_t *peer);

/**
 * Publishes the claimed slot @a index, whose message is written: the
 * receiver may read it from now on. Returns whether the receiver sleeps
 * for it (and is to be signalled).
 */
int uct_gpumem_ipc_fifo_publish(uct_gpumem_ipc_fifo_peer_t *peer,
                                uint64_t index,
                                uct_gpumem_ipc_fifo_elem_t *elem,
                                uint8_t am_id, uint32_t length,
                                uint8_t flags);


/**
 * Reads a slot's header a peer wrote: UCS_OK with the message's id and
 * length when they can be given to a handler (an id below UCT_AM_ID_MAX, a
 * length that fits the slot); else UCS_ERR_INVALID_PARAM with a line at
 * @a log_level.
 */
ucs_status_t
uct_gpumem_ipc_fifo_elem_read(const uct_gpumem_ipc_fifo_elem_t *elem,
                              ucs_log_level_t log_level, uint8_t *am_id_p,
                              uint32_t *length_p, uint8_t *flags_p);

/* The next published slot the receiver is to read, or NULL */
uct_gpumem_ipc_fifo_elem_t *
uct_gpumem_ipc_fifo_next(uct_gpumem_ipc_fifo_t *fifo);

/* Gives the slot read back to the senders */
void uct_gpumem_ipc_fifo_release(uct_gpumem_ipc_fifo_t *fifo);

/**
 * When the slot to read next has stayed claimed and unwritten for a while
 * and the sender that claimed it is dead (killed between its claim and its
 * publication), gives the slot back unread, with a warning, and returns 1;
 * else 0. Call when uct_gpumem_ipc_fifo_next() finds nothing. (A sender
 * that dies between the claim and the writing of its pid, a few
 * instructions, still stalls the FIFO.)
 */
int uct_gpumem_ipc_fifo_skip_dead(uct_gpumem_ipc_fifo_t *fifo);

/**
 * Arms the FIFO for @a events (UCT_EVENT_RECV, UCT_EVENT_RECV_SIG):
 * UCS_ERR_BUSY, disarmed, when a message is there to read already.
 */
ucs_status_t uct_gpumem_ipc_fifo_arm(uct_gpumem_ipc_fifo_t *fifo,
                                     unsigned events);

/* The data of a slot */
static inline void *
uct_gpumem_ipc_fifo_elem_data(uct_gpumem_ipc_fifo_elem_t *elem)
{
    return (uint8_t*)elem + UCT_GPUMEM_IPC_FIFO_HDR_SIZE;
}

END_C_DECLS

#endif
