/**
 * gpumem utilities: the descriptor broker's two sides, the exporter's
 * listening socket served by a thread of its own and the importer's
 * request.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_fd_broker.h"
#include "gpumem_fd_wire.h"
#include "gpumem_proc.h"

#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>


/* How long the exporter waits for a connected process's request, in its
 * thread, and an importer for the answer: both are one local
 * message */
#define GPUMEM_FD_BROKER_REQUEST_WAIT_MS  100
#define GPUMEM_FD_BROKER_ANSWER_WAIT_SEC  2

/* Names tried before giving up when another socket holds one */
#define GPUMEM_FD_BROKER_BIND_TRIES       8

/* Connections served before the thread looks for a stop again */
#define GPUMEM_FD_BROKER_ACCEPT_MAX       64

/* The most descriptors an answer is read with: a broker sends one, any
 * more are closed */
#define GPUMEM_FD_BROKER_MAX_FDS          4


typedef struct gpumem_fd_broker_offer {
    uint64_t size;
    int      fd;
} gpumem_fd_broker_offer_t;

KHASH_MAP_INIT_INT64(gpumem_fd_broker_offers, gpumem_fd_broker_offer_t);


static struct {
    pthread_mutex_t                   lock;
    khash_t(gpumem_fd_broker_offers)  offers;   /* By allocation id */
    int                               listen_fd;
    int                               stop_fds[2]; /* A pipe: the thread
                                                      ends when it closes */
    pthread_t                         thread;
    int                               stopped;  /* At the process's exit */
    pid_t                             pid;      /* The process listening */
    uint64_t                          name;
} gpumem_fd_broker = {
    .lock      = PTHREAD_MUTEX_INITIALIZER,
    .listen_fd = -1,
    .stop_fds  = {-1, -1}
};


static pthread_once_t gpumem_fd_broker_atfork_once = PTHREAD_ONCE_INIT;


/* The socket address of broker @a name of user @a uid; returns its length */
static socklen_t gpumem_fd_broker_addr(uint64_t name, uid_t uid,
                                       struct sockaddr_un *addr)
{
    int length;

    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    /* sun_path[0] is 0: the abstract namespace, which leaves no file */
    length = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1,
                      "gpumem-fd-%u-%016"PRIx64, (unsigned)uid, name);
    return offsetof(struct sockaddr_un, sun_path) + 1 + length;
}

/* Sends the answer to a request for allocation @a id, with @a fd attached
 * when @a error is 0 */
static void gpumem_fd_broker_answer(int conn, uint64_t id, int error, int fd)
{
    union {
        struct cmsghdr hdr;
        char           buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr msg = {};
    gpumem_fd_reply_t reply;
    struct cmsghdr *cmsg;
    struct iovec iov;

    gpumem_fd_reply_init(&reply, id, error);
    iov.iov_base   = &reply;
    iov.iov_len    = sizeof(reply);
    msg.msg_iov    = &iov;
    msg.msg_iovlen = 1;
    if (error == 0) {
        memset(&control, 0, sizeof(control));
        msg.msg_control    = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        cmsg               = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level   = SOL_SOCKET;
        cmsg->cmsg_type    = SCM_RIGHTS;
        cmsg->cmsg_len     = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    }

    if (sendmsg(conn, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(reply)) {
        ucs_debug("gpumem: descriptor broker: cannot answer the request for "
                  "allocation %"PRIu64": %m", id);
    }
}

/* One connected process: its user checked, its request read, answered */
static void gpumem_fd_broker_serve(int conn)
{
    uint8_t buf[sizeof(gpumem_fd_request_t) + 1];
    struct pollfd pfd = {.fd = conn, .events = POLLIN};
    socklen_t cred_len = sizeof(struct ucred);
    gpumem_fd_broker_offer_t *offer;
    gpumem_fd_request_t request;
    struct ucred cred;
    const char *why;
    khiter_t iter;
    ssize_t length;

    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
        ucs_debug("gpumem: descriptor broker: SO_PEERCRED: %m");
        return;
    }
    /* Another user is refused at once, its request unread and unlogged:
     * it may not make the thread wait, nor fill the log */
    if (cred.uid != gpumem_proc_euid()) {
        ucs_debug("gpumem: descriptor broker: refused process %d of user %u",
                  (int)cred.pid, (unsigned)cred.uid);
        gpumem_fd_broker_answer(conn, 0, EACCES, -1);
        return;
    }

    /* A request longer than one is truncated to one byte more, and refused */
    if (poll(&pfd, 1, GPUMEM_FD_BROKER_REQUEST_WAIT_MS) != 1) {
        ucs_debug("gpumem: descriptor broker: process %d asked nothing",
                  (int)cred.pid);
        return;
    }
    length = recv(conn, buf, sizeof(buf), MSG_DONTWAIT);
    if (length < 0) {
        ucs_debug("gpumem: descriptor broker: reading process %d's request: "
                  "%m", (int)cred.pid);
        return;
    }
    if (gpumem_fd_request_unpack(buf, length, &request, &why) != UCS_OK) {
        ucs_diag("gpumem: descriptor broker: refused process %d's %zd-byte "
                 "request: %s", (int)cred.pid, length, why);
        gpumem_fd_broker_answer(conn, 0, EINVAL, -1);
        return;
    }

    /* The answer goes under the lock: a withdrawn descriptor may be
     * closed as soon as the lock is free */
    pthread_mutex_lock(&gpumem_fd_broker.lock);
    iter = kh_get(gpumem_fd_broker_offers, &gpumem_fd_broker.offers,
                  request.id);
    if (iter == kh_end(&gpumem_fd_broker.offers)) {
        ucs_debug("gpumem: descriptor broker: process %d asked for "
                  "allocation %"PRIu64", which this process does not have",
                  (int)cred.pid, request.id);
        gpumem_fd_broker_answer(conn, request.id, ENOENT, -1);
    } else {
        offer = &kh_val(&gpumem_fd_broker.offers, iter);
        if (offer->size != request.size) {
            ucs_diag("gpumem: descriptor broker: process %d asked for "
                     "allocation %"PRIu64" as %"PRIu64" bytes, it has %"PRIu64,
                     (int)cred.pid, request.id, request.size, offer->size);
            gpumem_fd_broker_answer(conn, request.id, EINVAL, -1);
        } else {
            gpumem_fd_broker_answer(conn, request.id, 0, offer->fd);
        }
    }
    pthread_mutex_unlock(&gpumem_fd_broker.lock);
}

/* The connections waiting, a bounded number at a time so that a stop is
 * seen; where the process has no descriptor left for one, a pause instead
 * of a loop that spins on it */
static void gpumem_fd_broker_accept(int listen_fd)
{
    unsigned count;
    int conn;

    for (count = 0; count < GPUMEM_FD_BROKER_ACCEPT_MAX; ++count) {
        conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn >= 0) {
            gpumem_fd_broker_serve(conn);
            close(conn);
        } else if ((errno == EMFILE) || (errno == ENFILE) ||
                   (errno == ENOBUFS) || (errno == ENOMEM)) {
            ucs_debug("gpumem: descriptor broker: accept: %m: pausing");
            poll(NULL, 0, GPUMEM_FD_BROKER_REQUEST_WAIT_MS);
            return;
        } else {
            return;
        }
    }
}

/* The broker's own thread, not UCS's async thread: the children of a fork
 * find UCS's async state as UCX left it, and an application that never
 * makes a UCP worker is served as well. It takes no signal of the
 * application's. */
static void *gpumem_fd_broker_thread(void *arg UCS_V_UNUSED)
{
    struct pollfd pfds[2];

    pfds[0].fd     = gpumem_fd_broker.listen_fd;
    pfds[0].events = POLLIN;
    pfds[1].fd     = gpumem_fd_broker.stop_fds[0];
    pfds[1].events = POLLIN;
    for (;;) {
        if (poll(pfds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            ucs_diag("gpumem: descriptor broker: poll: %m: it stops");
            break;
        }
        if (pfds[1].revents != 0) {
            break;
        }
        if (pfds[0].revents & POLLIN) {
            gpumem_fd_broker_accept(pfds[0].fd);
        }
    }
    return NULL;
}

/* The thread is not in the child of a fork: the child closes its copy of
 * the socket (the name stays the parent's), takes no offer, and finds the
 * lock free whatever the parent's threads held */
static void gpumem_fd_broker_atfork_child(void)
{
    if (gpumem_fd_broker.listen_fd >= 0) {
        close(gpumem_fd_broker.listen_fd);
        close(gpumem_fd_broker.stop_fds[0]);
        close(gpumem_fd_broker.stop_fds[1]);
    }
    gpumem_fd_broker.listen_fd   = -1;
    gpumem_fd_broker.stop_fds[0] = gpumem_fd_broker.stop_fds[1] = -1;
    gpumem_fd_broker.stopped     = 1;
    pthread_mutex_init(&gpumem_fd_broker.lock, NULL);
}

static void gpumem_fd_broker_atfork_register(void)
{
    /* Unregistered by the C library when the plugin is unloaded */
    (void)pthread_atfork(NULL, NULL, gpumem_fd_broker_atfork_child);
}

/* A random name, which only the keys this process sends tell */
static uint64_t gpumem_fd_broker_new_name(void)
{
    uint64_t name = 0;

    while (name == 0) {
        if (getrandom(&name, sizeof(name), 0) != sizeof(name)) {
            name = ucs_generate_uuid((uintptr_t)&name);
        }
    }
    return name;
}

/* Binds a socket to a new name and starts the thread that serves it
 * (lock held) */
static ucs_status_t gpumem_fd_broker_listen(void)
{
    sigset_t all, old_mask;
    struct sockaddr_un addr;
    socklen_t addr_len;
    uint64_t name;
    unsigned tries;
    int fd, ret;

    pthread_once(&gpumem_fd_broker_atfork_once,
                 gpumem_fd_broker_atfork_register);

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_debug("gpumem: descriptor broker: socket: %m");
        return UCS_ERR_UNSUPPORTED;
    }

    for (tries = 0; ; ++tries) {
        name     = gpumem_fd_broker_new_name();
        addr_len = gpumem_fd_broker_addr(name, gpumem_proc_euid(), &addr);
        if (bind(fd, (struct sockaddr*)&addr, addr_len) == 0) {
            break;
        }
        if ((errno != EADDRINUSE) ||
            (tries + 1 == GPUMEM_FD_BROKER_BIND_TRIES)) {
            ucs_debug("gpumem: descriptor broker: bind: %m");
            goto err_close;
        }
    }

    if (listen(fd, SOMAXCONN) != 0) {
        ucs_debug("gpumem: descriptor broker: listen: %m");
        goto err_close;
    }

    if (pipe2(gpumem_fd_broker.stop_fds, O_CLOEXEC) != 0) {
        ucs_debug("gpumem: descriptor broker: pipe: %m");
        goto err_close;
    }

    gpumem_fd_broker.listen_fd = fd;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_mask);
    ret = pthread_create(&gpumem_fd_broker.thread, NULL,
                         gpumem_fd_broker_thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    if (ret != 0) {
        ucs_debug("gpumem: descriptor broker: pthread_create: %s",
                  strerror(ret));
        goto err_close_pipe;
    }

    gpumem_fd_broker.pid  = getpid();
    gpumem_fd_broker.name = name;
    ucs_debug("gpumem: descriptor broker %016"PRIx64" serves process %d",
              name, (int)gpumem_fd_broker.pid);
    return UCS_OK;

err_close_pipe:
    close(gpumem_fd_broker.stop_fds[0]);
    close(gpumem_fd_broker.stop_fds[1]);
    gpumem_fd_broker.stop_fds[0] = gpumem_fd_broker.stop_fds[1] = -1;
    gpumem_fd_broker.listen_fd   = -1;
err_close:
    close(fd);
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t gpumem_fd_broker_offer(uint64_t id, uint64_t size, int fd,
                                    uint64_t *name_p)
{
    ucs_status_t status = UCS_OK;
    khiter_t iter;
    int ret;

    pthread_mutex_lock(&gpumem_fd_broker.lock);
    if (gpumem_fd_broker.stopped) {
        /* At exit, or in the child of a fork (the atfork handler) */
        ucs_debug("gpumem: descriptor broker: stopped in this process");
        status = UCS_ERR_UNSUPPORTED;
    } else if (gpumem_fd_broker.listen_fd < 0) {
        status = gpumem_fd_broker_listen();
    }
    if (status != UCS_OK) {
        goto out;
    }

    iter = kh_put(gpumem_fd_broker_offers, &gpumem_fd_broker.offers, id,
                  &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        ucs_debug("gpumem: descriptor broker: no memory for allocation "
                  "%"PRIu64, id);
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    kh_val(&gpumem_fd_broker.offers, iter).size = size;
    kh_val(&gpumem_fd_broker.offers, iter).fd   = fd;
    *name_p                                     = gpumem_fd_broker.name;
out:
    pthread_mutex_unlock(&gpumem_fd_broker.lock);
    return status;
}

void gpumem_fd_broker_withdraw(uint64_t id)
{
    khiter_t iter;

    pthread_mutex_lock(&gpumem_fd_broker.lock);
    iter = kh_get(gpumem_fd_broker_offers, &gpumem_fd_broker.offers, id);
    if (iter != kh_end(&gpumem_fd_broker.offers)) {
        kh_del(gpumem_fd_broker_offers, &gpumem_fd_broker.offers, iter);
    }
    pthread_mutex_unlock(&gpumem_fd_broker.lock);
}

/* Closes the descriptors an answer brought */
static void gpumem_fd_broker_close_all(const int *fds, unsigned count)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        close(fds[i]);
    }
}

/* Reads the answer on @a sock: the descriptors it brought go to @a fds */
static ucs_status_t gpumem_fd_broker_receive(int sock, uint64_t id,
                                             gpumem_fd_reply_t *reply,
                                             int *fds, unsigned *count_p,
                                             char *why, size_t max)
{
    union {
        struct cmsghdr hdr;
        char buf[CMSG_SPACE(sizeof(int) * GPUMEM_FD_BROKER_MAX_FDS)];
    } control;
    uint8_t buf[sizeof(*reply) + 1];
    struct msghdr msg = {};
    struct cmsghdr *cmsg;
    const char *invalid;
    unsigned count = 0;
    struct iovec iov;
    ssize_t length;
    size_t num, i;

    iov.iov_base       = buf;
    iov.iov_len        = sizeof(buf);
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    length             = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if ((length < 0) && (errno == ECONNRESET)) {
        /* The broker closed with the request unread (a refusal it sent
         * before reading): the kernel says so once, then gives what came */
        length = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    }
    if (length <= 0) {
        snprintf(why, max, "no answer from its descriptor broker: %s",
                 (length == 0) ? "it closed the connection" :
                 (errno == EAGAIN) ? "it did not answer in time" :
                 strerror(errno));
        *count_p = 0;
        return UCS_ERR_IO_ERROR;
    }

    for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
         cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if ((cmsg->cmsg_level != SOL_SOCKET) ||
            (cmsg->cmsg_type != SCM_RIGHTS)) {
            continue;
        }
        num = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (i = 0; (i < num) && (count < GPUMEM_FD_BROKER_MAX_FDS); ++i) {
            memcpy(&fds[count++], CMSG_DATA(cmsg) + i * sizeof(int),
                   sizeof(int));
        }
    }
    *count_p = count;

    if (gpumem_fd_reply_unpack(buf, length, id, reply, &invalid) != UCS_OK) {
        snprintf(why, max, "a malformed answer: %s", invalid);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((reply->error == 0) &&
        ((count != 1) || (msg.msg_flags & MSG_CTRUNC))) {
        snprintf(why, max, "an answer with %u descriptors%s", count,
                 (msg.msg_flags & MSG_CTRUNC) ? " and more" : "");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* The status of the exporter's refusal @a error */
static ucs_status_t gpumem_fd_broker_refusal(int error, uint64_t id,
                                             uint64_t size, char *why,
                                             size_t max)
{
    switch (error) {
    case ENOENT:
        snprintf(why, max, "it has no allocation %"PRIu64" (freed: the key "
                 "is stale)", id);
        return UCS_ERR_NO_ELEM;
    case EINVAL:
        snprintf(why, max, "its allocation %"PRIu64" is not of %"PRIu64
                 " bytes", id, size);
        return UCS_ERR_INVALID_PARAM;
    case EACCES:
        snprintf(why, max, "it refused this process's user");
        return UCS_ERR_REJECTED;
    default:
        snprintf(why, max, "it refused: %s", strerror(error));
        return UCS_ERR_IO_ERROR;
    }
}

ucs_status_t gpumem_fd_broker_take(uint64_t name, uid_t uid, uint64_t id,
                                   uint64_t size, int *fd_p, char *why,
                                   size_t max)
{
    struct timeval timeout = {.tv_sec = GPUMEM_FD_BROKER_ANSWER_WAIT_SEC};
    socklen_t cred_len     = sizeof(struct ucred);
    int fds[GPUMEM_FD_BROKER_MAX_FDS];
    gpumem_fd_request_t request;
    struct sockaddr_un addr;
    gpumem_fd_reply_t reply;
    ucs_status_t status;
    struct ucred cred;
    socklen_t addr_len;
    unsigned count = 0;
    int sock, err, send_err;

    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        snprintf(why, max, "socket: %s", strerror(errno));
        return UCS_ERR_UNREACHABLE;
    }

    /* Also bounds connect(), which waits while the backlog is full */
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));

    /* No socket of that name: the only case the caller may take the fd
     * another way, since the broker cannot have refused it */
    addr_len = gpumem_fd_broker_addr(name, uid, &addr);
    if (connect(sock, (struct sockaddr*)&addr, addr_len) != 0) {
        err = errno;
        snprintf(why, max, "its descriptor broker %016"PRIx64" %s (%s)", name,
                 ((err == ECONNREFUSED) || (err == ENOENT)) ?
                 "does not answer: the process is gone, or in another "
                 "network namespace" : "cannot be reached", strerror(err));
        status = ((err == ECONNREFUSED) || (err == ENOENT)) ?
                 UCS_ERR_UNREACHABLE : UCS_ERR_IO_ERROR;
        goto out;
    }

    /* Abstract names are anyone's: a socket of another user is not the
     * exporter's */
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
        snprintf(why, max, "SO_PEERCRED: %s", strerror(errno));
        status = UCS_ERR_IO_ERROR;
        goto out;
    }
    if (cred.uid != uid) {
        snprintf(why, max, "the socket of its descriptor broker is user "
                 "%u's, not user %u's", (unsigned)cred.uid, (unsigned)uid);
        status = UCS_ERR_REJECTED;
        goto out;
    }

    /* A refusal may have come, and the connection closed, before the
     * request went: it is read all the same */
    gpumem_fd_request_init(&request, id, size);
    send_err = (send(sock, &request, sizeof(request), MSG_NOSIGNAL) ==
                sizeof(request)) ? 0 : errno;

    status = gpumem_fd_broker_receive(sock, id, &reply, fds, &count, why,
                                      max);
    if ((status != UCS_OK) && (send_err != 0)) {
        snprintf(why, max, "cannot ask its descriptor broker: %s",
                 strerror(send_err));
    }
    if (status != UCS_OK) {
        goto out_close_fds;
    }
    if (reply.error != 0) {
        status = gpumem_fd_broker_refusal(reply.error, id, size, why, max);
        goto out_close_fds;
    }

    *fd_p = fds[0];
    goto out;

out_close_fds:
    gpumem_fd_broker_close_all(fds, count);
out:
    close(sock);
    return status;
}

/* The thread must not run the code of a library that is gone: it ends
 * and is joined, in the process that started it only. The offers stay
 * (other destructors may withdraw theirs after), and no new one is taken */
static void UCS_F_DTOR gpumem_fd_broker_cleanup(void)
{
    int running;

    pthread_mutex_lock(&gpumem_fd_broker.lock);
    gpumem_fd_broker.stopped = 1;
    running = (gpumem_fd_broker.listen_fd >= 0) &&
              (gpumem_fd_broker.pid == getpid());
    pthread_mutex_unlock(&gpumem_fd_broker.lock);

    if (running) {
        close(gpumem_fd_broker.stop_fds[1]);
        pthread_join(gpumem_fd_broker.thread, NULL);
        close(gpumem_fd_broker.stop_fds[0]);
        close(gpumem_fd_broker.listen_fd);
    }
}
