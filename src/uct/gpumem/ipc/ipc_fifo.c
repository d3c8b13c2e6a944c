/**
 * gpumem IPC transport: the receive FIFO of active messages, shared with
 * the senders.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_fifo.h"

#include <uct/gpumem/util/gpumem_proc.h>

#include <uct/api/uct.h>
#include <ucs/arch/atomic.h>
#include <ucs/arch/bitops.h>
#include <ucs/debug/log.h>
#include <ucs/sys/compiler.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/* Where the slots start: a page of their own */
#define UCT_GPUMEM_IPC_FIFO_PAGE          4096ul
#define UCT_GPUMEM_IPC_FIFO_ELEMS_OFFSET \
    ((sizeof(uct_gpumem_ipc_fifo_ctl_t) + UCT_GPUMEM_IPC_FIFO_PAGE - 1) & \
     ~(UCT_GPUMEM_IPC_FIFO_PAGE - 1))

/* The seals that keep the memory's size, so that no access past a peer's
 * truncation faults */
#define UCT_GPUMEM_IPC_FIFO_SEALS \
    (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)


size_t uct_gpumem_ipc_fifo_size(unsigned num_slots)
{
    return UCT_GPUMEM_IPC_FIFO_ELEMS_OFFSET +
           ((size_t)num_slots * UCT_GPUMEM_IPC_FIFO_ELEM_SIZE);
}

static int uct_gpumem_ipc_fifo_slots_valid(uint64_t num_slots)
{
    return (num_slots >= UCT_GPUMEM_IPC_FIFO_MIN_SLOTS) &&
           (num_slots <= UCT_GPUMEM_IPC_FIFO_MAX_SLOTS) &&
           ucs_is_pow2(num_slots);
}

static UCS_F_ALWAYS_INLINE uct_gpumem_ipc_fifo_elem_t *
uct_gpumem_ipc_fifo_slot(uint8_t *elems, unsigned num_slots, uint64_t index)
{
    return (uct_gpumem_ipc_fifo_elem_t*)
           (elems + ((index & (num_slots - 1)) *
                     UCT_GPUMEM_IPC_FIFO_ELEM_SIZE));
}

ucs_status_t uct_gpumem_ipc_fifo_create(uint32_t iface_id, unsigned num_slots,
                                        const struct sockaddr_un *signal_addr,
                                        socklen_t signal_addr_len,
                                        uct_gpumem_ipc_fifo_t *fifo)
{
    size_t size = uct_gpumem_ipc_fifo_size(num_slots);
    uct_gpumem_ipc_fifo_ctl_t *ctl;
    ucs_status_t status;
    void *address;
    int fd;

    UCS_STATIC_ASSERT(sizeof(uct_gpumem_ipc_fifo_elem_t) ==
                      UCT_GPUMEM_IPC_FIFO_HDR_SIZE);

    if (!uct_gpumem_ipc_fifo_slots_valid(num_slots)) {
        ucs_error("gpumemipc: a FIFO of %u slots: a power of 2 from %u to %u "
                  "is needed", num_slots, UCT_GPUMEM_IPC_FIFO_MIN_SLOTS,
                  UCT_GPUMEM_IPC_FIFO_MAX_SLOTS);
        return UCS_ERR_INVALID_PARAM;
    }

    ucs_assert(signal_addr_len <= sizeof(*signal_addr));

    fd = memfd_create("gpumem-ipc-fifo", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        ucs_error("gpumemipc: memfd_create of the receive FIFO: %m");
        return UCS_ERR_IO_ERROR;
    }

    if ((ftruncate(fd, size) < 0) ||
        (fcntl(fd, F_ADD_SEALS, UCT_GPUMEM_IPC_FIFO_SEALS) < 0)) {
        ucs_error("gpumemipc: sizing the receive FIFO to %zu bytes: %m",
                  size);
        status = UCS_ERR_NO_MEMORY;
        goto err_close;
    }

    address = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (address == MAP_FAILED) {
        ucs_error("gpumemipc: mapping the receive FIFO of %zu bytes: %m",
                  size);
        status = UCS_ERR_NO_MEMORY;
        goto err_close;
    }

    /* A new memfd reads as zeros: every slot's sequence says unpublished */
    ctl                  = address;
    ctl->magic           = UCT_GPUMEM_IPC_FIFO_MAGIC;
    ctl->num_slots       = num_slots;
    ctl->elem_size       = UCT_GPUMEM_IPC_FIFO_ELEM_SIZE;
    ctl->pid             = gpumem_proc_pid();
    ctl->iface_id        = iface_id;
    ctl->signal_addr_len = signal_addr_len;
    memcpy(&ctl->signal_addr, signal_addr, signal_addr_len);

    fifo->fd         = fd;
    fifo->size       = size;
    fifo->ctl        = ctl;
    fifo->elems      = (uint8_t*)address + UCT_GPUMEM_IPC_FIFO_ELEMS_OFFSET;
    fifo->read_index  = 0;
    fifo->num_slots   = num_slots;
    fifo->watch_index = UINT64_MAX;
    fifo->watch_time  = 0;
    fifo->watch_polls = 0;
    return UCS_OK;

err_close:
    close(fd);
    return status;
}

void uct_gpumem_ipc_fifo_destroy(uct_gpumem_ipc_fifo_t *fifo)
{
    /* Its senders map it still: they see the close at their next send */
    fifo->ctl->closed = 1;
    ucs_memory_cpu_store_fence();
    munmap(fifo->ctl, fifo->size);
    close(fifo->fd);
}

ucs_status_t uct_gpumem_ipc_fifo_ctl_check(const uct_gpumem_ipc_fifo_ctl_t *ctl,
                                           size_t size,
                                           ucs_log_level_t log_level)
{
    if (size < sizeof(*ctl)) {
        ucs_log(log_level, "gpumemipc: a receive FIFO of %zu bytes holds no "
                "control block (%zu bytes)", size, sizeof(*ctl));
        return UCS_ERR_INVALID_ADDR;
    }

    if (ctl->magic != UCT_GPUMEM_IPC_FIFO_MAGIC) {
        ucs_log(log_level, "gpumemipc: a receive FIFO of another layout "
                "(magic 0x%016llx, this build's 0x%016llx)",
                (unsigned long long)ctl->magic,
                (unsigned long long)UCT_GPUMEM_IPC_FIFO_MAGIC);
        return UCS_ERR_INVALID_ADDR;
    }

    if (!uct_gpumem_ipc_fifo_slots_valid(ctl->num_slots) ||
        (ctl->elem_size != UCT_GPUMEM_IPC_FIFO_ELEM_SIZE)) {
        ucs_log(log_level, "gpumemipc: a receive FIFO of %u slots of %u "
                "bytes (this build: a power of 2 from %u to %u, of %u bytes)",
                ctl->num_slots, ctl->elem_size, UCT_GPUMEM_IPC_FIFO_MIN_SLOTS,
                UCT_GPUMEM_IPC_FIFO_MAX_SLOTS, UCT_GPUMEM_IPC_FIFO_ELEM_SIZE);
        return UCS_ERR_INVALID_ADDR;
    }

    if (size < uct_gpumem_ipc_fifo_size(ctl->num_slots)) {
        ucs_log(log_level, "gpumemipc: a receive FIFO of %u slots in %zu "
                "bytes, which hold %zu", ctl->num_slots, size,
                uct_gpumem_ipc_fifo_size(ctl->num_slots));
        return UCS_ERR_INVALID_ADDR;
    }

    if (ctl->pid <= 0) {
        ucs_log(log_level, "gpumemipc: a receive FIFO of process %d, which "
                "no process can be", (int)ctl->pid);
        return UCS_ERR_INVALID_ADDR;
    }

    if ((ctl->signal_addr_len <= sizeof(sa_family_t)) ||
        (ctl->signal_addr_len > sizeof(ctl->signal_addr)) ||
        (ctl->signal_addr.sun_family != AF_UNIX)) {
        ucs_log(log_level, "gpumemipc: the receive FIFO of process %d gives "
                "no local socket to signal (family %u, %u bytes)",
                (int)ctl->pid, (unsigned)ctl->signal_addr.sun_family,
                ctl->signal_addr_len);
        return UCS_ERR_INVALID_ADDR;
    }

    return UCS_OK;
}

/* Opens the memfd of process @a pid: a regular file whose size is sealed */
static ucs_status_t uct_gpumem_ipc_fifo_open(pid_t pid, int fd, int *fd_p,
                                             size_t *size_p)
{
    char path[64];
    struct stat st;
    ucs_status_t status;
    int seals, local;

    /* Whatever the descriptor is, opening it neither waits nor takes a
     * terminal */
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    local = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (local < 0) {
        ucs_error("gpumemipc: the receive FIFO of process %d: open(%s): %m",
                  (int)pid, path);
        return ((errno == ENOENT) || (errno == EACCES) || (errno == EPERM)) ?
               UCS_ERR_UNREACHABLE : UCS_ERR_IO_ERROR;
    }

    if (fstat(local, &st) < 0) {
        ucs_error("gpumemipc: fstat(%s): %m", path);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    if (!S_ISREG(st.st_mode)) {
        ucs_error("gpumemipc: %s of process %d is no receive FIFO (mode 0%o)",
                  path, (int)pid, (unsigned)st.st_mode);
        status = UCS_ERR_INVALID_ADDR;
        goto err_close;
    }

    /* The seals first: the size read after them is the size for good */
    seals = fcntl(local, F_GET_SEALS);
    if ((seals < 0) || ((seals & F_SEAL_SHRINK) == 0)) {
        ucs_error("gpumemipc: %s of process %d may shrink under its mapping "
                  "(seals 0x%x)", path, (int)pid, seals);
        status = UCS_ERR_INVALID_ADDR;
        goto err_close;
    }

    if ((fstat(local, &st) < 0) ||
        (st.st_size > (off_t)uct_gpumem_ipc_fifo_size(
                UCT_GPUMEM_IPC_FIFO_MAX_SLOTS))) {
        ucs_error("gpumemipc: %s of process %d is no receive FIFO (%lld "
                  "bytes)", path, (int)pid, (long long)st.st_size);
        status = UCS_ERR_INVALID_ADDR;
        goto err_close;
    }

    *fd_p   = local;
    *size_p = st.st_size;
    return UCS_OK;

err_close:
    close(local);
    return status;
}

ucs_status_t uct_gpumem_ipc_fifo_attach(pid_t pid, uint32_t iface_id, int fd,
                                        uct_gpumem_ipc_fifo_peer_t *peer)
{
    uct_gpumem_ipc_fifo_ctl_t ctl;
    ucs_status_t status;
    size_t size;
    void *address;
    int local;

    status = uct_gpumem_ipc_fifo_open(pid, fd, &local, &size);
    if (status != UCS_OK) {
        return status;
    }

    address = (size < sizeof(ctl)) ? MAP_FAILED :
              mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, local, 0);
    close(local);
    if (address == MAP_FAILED) {
        ucs_error("gpumemipc: mapping the receive FIFO of process %d (%zu "
                  "bytes): %m", (int)pid, size);
        return UCS_ERR_INVALID_ADDR;
    }

    /* The peer may write its control block still: what it says is read
     * once, and that copy is checked and used */
    memcpy(&ctl, address, sizeof(ctl));
    ucs_memory_cpu_load_fence();
    status = uct_gpumem_ipc_fifo_ctl_check(&ctl, size, UCS_LOG_LEVEL_ERROR);
    if (status != UCS_OK) {
        goto err_unmap;
    }

    if ((ctl.pid != pid) || (ctl.iface_id != iface_id)) {
        ucs_error("gpumemipc: the receive FIFO of interface %u of process %d "
                  "is interface %u's of process %d", iface_id, (int)pid,
                  ctl.iface_id, (int)ctl.pid);
        status = UCS_ERR_INVALID_ADDR;
        goto err_unmap;
    }

    peer->size            = size;
    peer->ctl             = address;
    peer->elems           = (uint8_t*)address +
                            UCT_GPUMEM_IPC_FIFO_ELEMS_OFFSET;
    peer->num_slots       = ctl.num_slots;
    peer->cached_tail     = peer->ctl->tail;
    peer->own_pid         = (uint32_t)gpumem_proc_pid();
    peer->signal_addr_len = ctl.signal_addr_len;
    memcpy(&peer->signal_addr, &ctl.signal_addr, ctl.signal_addr_len);
    return UCS_OK;

err_unmap:
    munmap(address, size);
    return status;
}

void uct_gpumem_ipc_fifo_detach(uct_gpumem_ipc_fifo_peer_t *peer)
{
    munmap(peer->ctl, peer->size);
}

/* Whether slot @a head is free: the receiver released the slot it had
 * a round before */
static int uct_gpumem_ipc_fifo_head_free(uct_gpumem_ipc_fifo_peer_t *peer,
                                         uint64_t head)
{
    if ((head - peer->cached_tail) < peer->num_slots) {
        return 1;
    }

    ucs_memory_cpu_load_fence();
    peer->cached_tail = peer->ctl->tail;
    return (head - peer->cached_tail) < peer->num_slots;
}

int uct_gpumem_ipc_fifo_has_room(uct_gpumem_ipc_fifo_peer_t *peer)
{
    return uct_gpumem_ipc_fifo_head_free(peer, peer->ctl->head);
}

ucs_status_t uct_gpumem_ipc_fifo_claim(uct_gpumem_ipc_fifo_peer_t *peer,
                                       uint64_t *index_p,
                                       uct_gpumem_ipc_fifo_elem_t **elem_p)
{
    uint64_t head;

    /* The head that was found free is the one claimed: another sender that
     * claimed it first makes the swap fail */
    do {
        head = peer->ctl->head;
        if (!uct_gpumem_ipc_fifo_head_free(peer, head)) {
            return UCS_ERR_NO_RESOURCE;
        }
    } while (ucs_atomic_cswap64(ucs_unaligned_ptr(&peer->ctl->head), head,
                                head + 1) != head);

    /* Whose it is until published: the receiver skips it if that process
     * dies first */
    *index_p       = head;
    *elem_p        = uct_gpumem_ipc_fifo_slot(peer->elems, peer->num_slots,
                                              head);
    (*elem_p)->seq = UCT_GPUMEM_IPC_FIFO_CLAIMED | peer->own_pid;
    return UCS_OK;
}

int uct_gpumem_ipc_fifo_publish(uct_gpumem_ipc_fifo_peer_t *peer,
                                uint64_t index,
                                uct_gpumem_ipc_fifo_elem_t *elem,
                                uint8_t am_id, uint32_t length,
                                uint8_t flags)
{
    uint32_t armed;

    elem->length = length;
    elem->am_id  = am_id;
    elem->flags  = flags;
    ucs_memory_cpu_store_fence();
    elem->seq    = index + 1;

    /* The sequence is seen before the armed flag is read, as the receiver
     * arms before it looks for a message: one of the two sees the other */
    ucs_memory_cpu_fence();
    armed = peer->ctl->armed;
    if (!((armed & UCT_EVENT_RECV) ||
          ((armed & UCT_EVENT_RECV_SIG) &&
           (flags & UCT_GPUMEM_IPC_FIFO_FLAG_SIGNALED)))) {
        return 0;
    }

    /* One sender signals the sleeper */
    return ucs_atomic_cswap32(ucs_unaligned_ptr(&peer->ctl->armed), armed,
                              0) == armed;
}

ucs_status_t
uct_gpumem_ipc_fifo_elem_read(const uct_gpumem_ipc_fifo_elem_t *elem,
                              ucs_log_level_t log_level, uint8_t *am_id_p,
                              uint32_t *length_p, uint8_t *flags_p)
{
    /* The peer may write the slot still: each field is read once */
    uint32_t length = *(const volatile uint32_t*)&elem->length;
    uint8_t am_id   = *(const volatile uint8_t*)&elem->am_id;
    uint8_t flags   = *(const volatile uint8_t*)&elem->flags;

    if (am_id >= UCT_AM_ID_MAX) {
        ucs_log(log_level, "gpumemipc: a message of active message id %u "
                "(below %d is one)", am_id, (int)UCT_AM_ID_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if (length > UCT_GPUMEM_IPC_FIFO_MAX_DATA) {
        ucs_log(log_level, "gpumemipc: a message of %u bytes, in a slot of "
                "%u", length, UCT_GPUMEM_IPC_FIFO_MAX_DATA);
        return UCS_ERR_INVALID_PARAM;
    }

    *am_id_p  = am_id;
    *length_p = length;
    *flags_p  = flags;
    return UCS_OK;
}

/* The slot the receiver is to read next, published or not */
static uct_gpumem_ipc_fifo_elem_t *
uct_gpumem_ipc_fifo_read_slot(uct_gpumem_ipc_fifo_t *fifo)
{
    return uct_gpumem_ipc_fifo_slot(fifo->elems, fifo->num_slots,
                                    fifo->read_index);
}

uct_gpumem_ipc_fifo_elem_t *
uct_gpumem_ipc_fifo_next(uct_gpumem_ipc_fifo_t *fifo)
{
    uct_gpumem_ipc_fifo_elem_t *elem = uct_gpumem_ipc_fifo_read_slot(fifo);

    if (elem->seq != (fifo->read_index + 1)) {
        return NULL;
    }

    /* The message is read after its sequence */
    ucs_memory_cpu_load_fence();
    return elem;
}

void uct_gpumem_ipc_fifo_release(uct_gpumem_ipc_fifo_t *fifo)
{
    ++fifo->read_index;
    /* The message was read before the slot goes back */
    ucs_memory_cpu_fence();
    fifo->ctl->tail = fifo->read_index;
}

int uct_gpumem_ipc_fifo_skip_dead(uct_gpumem_ipc_fifo_t *fifo)
{
    uct_gpumem_ipc_fifo_elem_t *elem;
    ucs_time_t now;
    uint64_t seq;
    pid_t pid;

    if (ucs_likely(++fifo->watch_polls < UCT_GPUMEM_IPC_FIFO_WATCH_POLLS)) {
        return 0;
    }

    fifo->watch_polls = 0;
    now               = ucs_get_time();
    if ((now - fifo->watch_time) <
        ucs_time_from_msec(UCT_GPUMEM_IPC_FIFO_WATCH_MSEC)) {
        return 0;
    }

    /* The same slot, claimed, unread since the last look */
    fifo->watch_time = now;
    if ((fifo->watch_index != fifo->read_index) ||
        (fifo->ctl->head == fifo->read_index)) {
        fifo->watch_index = fifo->read_index;
        return 0;
    }

    elem = uct_gpumem_ipc_fifo_read_slot(fifo);
    seq  = elem->seq;
    if (!(seq & UCT_GPUMEM_IPC_FIFO_CLAIMED)) {
        return 0; /* Its sender has not said who it is yet */
    }

    pid = (pid_t)(uint32_t)seq;
    if (!gpumem_proc_is_gone(pid) || (elem->seq != seq)) {
        return 0; /* Alive, or published meanwhile */
    }

    ucs_warn("gpumemipc: process %d died before it wrote the message of "
             "slot %" PRIu64 " of this interface's FIFO: the slot is given "
             "back unread", (int)pid, fifo->read_index);
    elem->seq = 0;
    uct_gpumem_ipc_fifo_release(fifo);
    return 1;
}

ucs_status_t uct_gpumem_ipc_fifo_arm(uct_gpumem_ipc_fifo_t *fifo,
                                     unsigned events)
{
    fifo->ctl->armed = events & (UCT_EVENT_RECV | UCT_EVENT_RECV_SIG);
    if (fifo->ctl->armed == 0) {
        return UCS_OK;
    }

    /* A message there, or one being written: its sender may have died
     * before it writes it, which only progress finds */
    ucs_memory_cpu_fence();
    if ((uct_gpumem_ipc_fifo_next(fifo) != NULL) ||
        (uct_gpumem_ipc_fifo_read_slot(fifo)->seq &
         UCT_GPUMEM_IPC_FIFO_CLAIMED)) {
        fifo->ctl->armed = 0;
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}
