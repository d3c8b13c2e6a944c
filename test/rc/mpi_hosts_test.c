/**
 * gpumem MPI test across machines: every pair of ranks moves device buffers
 * both ways, blocking and non-blocking, 1 B to 16 MiB with every byte
 * checked, and the plugin's byte counters say which transport carried each
 * pair's data: gpumemipc between ranks of one host, gpumem_rc between
 * hosts, and never the other. "osc" adds MPI one-sided put and get on a
 * window of device memory; "stream" sends between the hosts until an
 * error (for a peer machine that dies); "pingpong" makes blocking round
 * trips of max bytes between the hosts (GPUMEM_PINGPONG_ITERS of them), a
 * stress of rendezvous across machines.
 *
 *   mpirun --host A:2,B:2 ... test/rc/mpi_hosts_test [p2p|osc|stream|pingpong]
 *       [max]
 *
 * Each rank takes its host's GPU of its local rank (UCX_GPUMEM_ALLOC_GPU,
 * set here before MPI_Init unless given). Exits non-zero on any error.
 *
 * See file LICENSE for terms.
 */

#include "fault_report.h"
#include "munmap_watch.h"

#include <gpumem/gpumem.h>
#include <mpi.h>

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Messages of this size and more go by rendezvous, zero-copy, on any
 * transport UCX 1.13 picks: their bytes must show in the counters */
#define RNDV_SURE_SIZE  (1ul << 20)
#define TAG             7

typedef struct {
    unsigned long long ipc;
    unsigned long long rc;
} counters_t;

static int rank, num_ranks;
static char (*hosts)[MPI_MAX_PROCESSOR_NAME];

/* What the rank is doing: said, with the stack, when a step makes no
 * progress for STALL_SECONDS (each step takes a few seconds at most) and
 * when the job is stopped (the launcher's SIGTERM, as a time limit sends
 * it), so that a hang names its step. After STALL_LIMIT such periods the
 * rank exits with STALL_STATUS, which ends the job. */
#define STALL_SECONDS  60
#define STALL_LIMIT    3
#define STALL_STATUS   86

static char where[160] = "starting";
static volatile unsigned stalled;
static pthread_t main_thread;

#define WHERE(...) \
    do { \
        snprintf(where, sizeof(where), __VA_ARGS__); \
        stalled = 0; \
        alarm(STALL_SECONDS); \
    } while (0)

static void say_where(int signo)
{
    char line[256];
    int len;

    /* The stack to show is the main thread's, where the MPI call waits */
    if ((signo == SIGALRM) && !pthread_equal(pthread_self(), main_thread)) {
        pthread_kill(main_thread, SIGALRM);
        return;
    }

    if (signo == SIGALRM) {
        len = snprintf(line, sizeof(line), "mpi_hosts_test: rank %d: no "
                       "progress for %u s while %s\n", rank,
                       ++stalled * STALL_SECONDS, where);
        alarm(STALL_SECONDS);
    } else {
        len = snprintf(line, sizeof(line), "mpi_hosts_test: rank %d stopped "
                       "by signal %d while %s\n", rank, signo, where);
    }
    if (write(2, line, (size_t)len) < 0) {
        /* Nothing more to say */
    }
    if (((signo == SIGALRM) && (stalled == 1)) || (signo == SIGSEGV) ||
        (signo == SIGBUS)) {
        void *frames[32];

        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    }
    if ((signo == SIGSEGV) || (signo == SIGBUS)) {
        /* The fault ends the rank by its own signal, as it would have */
        signal(signo, SIG_DFL);
        raise(signo);
    } else if (signo != SIGALRM) {
        _exit(128 + signo);
    } else if (stalled >= STALL_LIMIT) {
        len = snprintf(line, sizeof(line), "mpi_hosts_test: rank %d: "
                       "stalled, ending the job\n", rank);
        if (write(2, line, (size_t)len) < 0) {
            /* Nothing more to say */
        }
        _exit(STALL_STATUS);
    }
}

/* A fault: the step, what the fault says of itself, the stack */
static void say_fault(int signo, siginfo_t *info, void *ucontext)
{
    char who[48];

    snprintf(who, sizeof(who), "mpi_hosts_test: rank %d", rank);
    fault_report(who, signo, info, ucontext);
    say_where(signo);
}

static void on_fault(int signo)
{
    struct sigaction action;

    memset(&action, 0, sizeof(action));
    action.sa_sigaction = say_fault;
    action.sa_flags     = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(signo, &action, NULL);
}

static void fail(const char *what)
{
    fprintf(stderr, "mpi_hosts_test: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void counters(counters_t *c)
{
    if ((gpumem_ipc_bytes(&c->ipc) != 0) || (gpumem_rc_bytes(&c->rc) != 0)) {
        fail("cannot read the plugin's byte counters");
    }
}

/* The pattern of @a seed: a word at a time (the CPU is emulated in the
 * test VMs, so bytes one by one cost), every byte differing from its
 * neighbours' */
static void fill(unsigned char *bytes, size_t size, unsigned seed)
{
    uint64_t word, base = (uint64_t)seed * 0x9e3779b97f4a7c15ul;
    size_t i;

    for (i = 0; i + sizeof(word) <= size; i += sizeof(word)) {
        word = (base + i) * 0xff51afd7ed558ccdul;
        memcpy(bytes + i, &word, sizeof(word));
    }
    word = (base + i) * 0xff51afd7ed558ccdul;
    memcpy(bytes + i, &word, size - i);
}

/* Room for the expected bytes of check() */
static unsigned char *expected;

/* The number of bytes of @a device (copied to @a host) that are not the
 * pattern of @a seed */
static size_t check(void *device, unsigned char *host, size_t size,
                    unsigned seed)
{
    size_t i, wrong = 0;

    if (gpumem_device_memcpy(host, device, size) != 0) {
        fail("copying from the device failed");
    }
    fill(expected, size, seed);
    if (memcmp(host, expected, size) == 0) {
        return 0;
    }
    for (i = 0; i < size; ++i) {
        wrong += (host[i] != expected[i]);
    }
    return wrong;
}

static void to_device(void *device, unsigned char *host, size_t size,
                      unsigned seed)
{
    fill(host, size, seed);
    if (gpumem_device_memcpy(device, host, size) != 0) {
        fail("copying to the device failed");
    }
}

static unsigned seed_of(int from, int to, size_t size, int nonblocking)
{
    return (unsigned)(from * 0x1000193 + to * 0x3d + size * 7 + nonblocking);
}

/* A receive of @a size bytes from @a peer ended whole: not cancelled (UCX
 * completes a receive whose transport flushed it as cancelled, and MPI
 * returns success for it), and with every byte; else the job fails,
 * saying which */
static void expect_received(const MPI_Status *status, size_t size, int peer)
{
    char what[160];
    int cancelled, count;

    MPI_Test_cancelled(status, &cancelled);
    MPI_Get_count(status, MPI_BYTE, &count);
    if (!cancelled && ((size_t)count == size)) {
        return;
    }
    snprintf(what, sizeof(what), "the receive of %zu bytes from rank %d "
             "ended %s (%d bytes)", size, peer,
             cancelled ? "cancelled" : "short", count);
    fail(what);
}

/* Ranks @a a and @a b exchange every size both ways; returns the bytes
 * that arrived wrong and adds to @a rndv_bytes those of messages sure to
 * go by rendezvous */
static size_t exchange(int a, int b, size_t max, void *send, void *recv,
                       unsigned char *host, unsigned long long *rndv_bytes)
{
    int peer = (rank == a) ? b : a;
    MPI_Status statuses[2];
    MPI_Request reqs[2];
    size_t size, wrong = 0;

    for (size = 1; size <= max; size *= 4) {
        /* Blocking: a sends first, b answers */
        WHERE("exchanging %zu bytes blocking with rank %d", size, peer);
        to_device(send, host, size, seed_of(rank, peer, size, 0));
        if (rank == a) {
            MPI_Send(send, (int)size, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
            MPI_Recv(recv, (int)size, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                     &statuses[0]);
        } else {
            MPI_Recv(recv, (int)size, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                     &statuses[0]);
            expect_received(&statuses[0], size, peer);
            MPI_Send(send, (int)size, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
        }
        expect_received(&statuses[0], size, peer);
        wrong += check(recv, host, size, seed_of(peer, rank, size, 0));

        /* Non-blocking: both ways at once */
        WHERE("exchanging %zu bytes non-blocking with rank %d", size, peer);
        to_device(send, host, size, seed_of(rank, peer, size, 1));
        MPI_Irecv(recv, (int)size, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD,
                  &reqs[0]);
        MPI_Isend(send, (int)size, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD,
                  &reqs[1]);
        MPI_Waitall(2, reqs, statuses);
        expect_received(&statuses[0], size, peer);
        wrong += check(recv, host, size, seed_of(peer, rank, size, 1));

        if (size >= RNDV_SURE_SIZE) {
            *rndv_bytes += 2 * size;   /* what this rank received */
        }
        if (size == max) {
            break;
        }
        if (size * 4 > max) {
            size = max / 4;   /* max itself comes last */
        }
    }
    return wrong;
}

/* Every pair in turn; rank 0 asserts each pair's transport */
static int test_p2p(size_t max, void *send, void *recv, unsigned char *host)
{
    counters_t before, after, delta[2], *all;
    unsigned long long rndv, all_rndv;
    int a, b, failed = 0, same;
    double start;
    size_t wrong;

    all = malloc(sizeof(*all) * num_ranks);
    if (all == NULL) {
        fail("out of memory");
    }
    for (a = 0; a < num_ranks; ++a) {
        for (b = a + 1; b < num_ranks; ++b) {
            WHERE("in the barrier before pair %d-%d", a, b);
            MPI_Barrier(MPI_COMM_WORLD);
            start = MPI_Wtime();
            counters(&before);
            wrong = 0;
            rndv  = 0;
            if ((rank == a) || (rank == b)) {
                wrong = exchange(a, b, max, send, recv, host, &rndv);
            }
            WHERE("gathering the counters of pair %d-%d", a, b);
            counters(&after);
            delta[0].ipc = after.ipc - before.ipc;
            delta[0].rc  = after.rc - before.rc;
            MPI_Gather(&delta[0], 2, MPI_UNSIGNED_LONG_LONG, all, 2,
                       MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
            MPI_Reduce(&rndv, &all_rndv, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                       0, MPI_COMM_WORLD);
            if (wrong != 0) {
                fprintf(stderr, "rank %d: %zu bytes from rank %d arrived "
                        "wrong\n", rank, wrong, (rank == a) ? b : a);
                failed = 1;
            }
            if (rank != 0) {
                continue;
            }

            same        = !strcmp(hosts[a], hosts[b]);
            delta[1].ipc = all[a].ipc + all[b].ipc;
            delta[1].rc  = all[a].rc + all[b].rc;
            printf("pair %d(%s)-%d(%s): gpumemipc %llu bytes, gpumem_rc "
                   "%llu bytes (rendezvous messages %llu bytes, %.1f s): ",
                   a, hosts[a], b, hosts[b], delta[1].ipc, delta[1].rc,
                   all_rndv, MPI_Wtime() - start);
            if (same && (delta[1].ipc >= all_rndv) && (delta[1].rc == 0)) {
                printf("gpumemipc, as on one host\n");
            } else if (!same && (delta[1].rc >= all_rndv) &&
                       (delta[1].ipc == 0)) {
                printf("gpumem_rc, as between hosts\n");
            } else {
                printf("WRONG: %s wanted\n",
                       same ? "gpumemipc alone" : "gpumem_rc alone");
                failed = 1;
            }
            fflush(stdout);
        }
    }
    free(all);
    return failed;
}

/* MPI one-sided: each rank puts to and gets from the next rank's window of
 * device memory, every byte checked */
static int test_osc(size_t max, void *win_mem, void *buf, unsigned char *host)
{
    int next = (rank + 1) % num_ranks, prev = (rank + num_ranks - 1) %
                                              num_ranks;
    size_t size, wrong = 0;
    int failed;
    MPI_Win win;

    MPI_Win_create(win_mem, (MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win);
    for (size = 1; size <= max; size *= 16) {
        /* Put: my pattern into the next rank's window */
        to_device(buf, host, size, seed_of(rank, next, size, 2));
        MPI_Win_fence(0, win);
        MPI_Put(buf, (int)size, MPI_BYTE, next, 0, (int)size, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        wrong += check(win_mem, host, size, seed_of(prev, rank, size, 2));

        /* Get: the next rank's window, which it filled */
        to_device(win_mem, host, size, seed_of(rank, 0, size, 3));
        MPI_Win_fence(0, win);
        MPI_Get(buf, (int)size, MPI_BYTE, next, 0, (int)size, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        wrong += check(buf, host, size, seed_of(next, 0, size, 3));
    }
    MPI_Win_free(&win);

    if (wrong != 0) {
        fprintf(stderr, "rank %d: %zu bytes of one-sided operations arrived "
                "wrong\n", rank, wrong);
    }
    failed = (wrong != 0);
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if ((rank == 0) && !failed) {
        printf("one-sided put and get on device windows: every byte "
               "checked\n");
    }
    return failed;
}

/* Ranks of the first host send to those of the others, and back, until
 * an error ends the job; the first host's ranks say when data flows */
static int test_stream(size_t max, void *send, void *recv,
                       unsigned char *host)
{
    int half = num_ranks / 2;
    int peer = (rank < half) ? rank + half : rank - half;
    MPI_Request reqs[2];
    unsigned long i;
    int ret;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    to_device(send, host, max, seed_of(rank, peer, max, 4));
    for (i = 0;; ++i) {
        if (MPI_Irecv(recv, (int)max, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                      &reqs[0]) != MPI_SUCCESS) {
            break;
        }
        if (MPI_Isend(send, (int)max, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                      &reqs[1]) != MPI_SUCCESS) {
            break;
        }
        ret = MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        if (ret != MPI_SUCCESS) {
            break;
        }
        if ((i == 2) && (rank < half)) {
            printf("rank %d (%s): streaming to rank %d\n", rank, hosts[rank],
                   peer);
            fflush(stdout);
        }
    }
    fprintf(stderr, "rank %d: MPI error after %lu exchanges with rank %d\n",
            rank, i, peer);
    return 1;
}

/* Ranks of the first host and those of the others in pairs, blocking, the
 * first host's rank sending first, GPUMEM_PINGPONG_ITERS round trips (1000
 * by default) of @a max bytes; every byte checked at the first and last */
static int test_pingpong(size_t max, void *send, void *recv,
                         unsigned char *host)
{
    const char *iters_env = getenv("GPUMEM_PINGPONG_ITERS");
    unsigned long iters   = (iters_env != NULL) ? strtoul(iters_env, NULL, 0) :
                                                  1000;
    int half = num_ranks / 2;
    int peer = (rank < half) ? rank + half : rank - half;
    size_t wrong = 0;
    unsigned long i;
    MPI_Status status;
    double start;

    to_device(send, host, max, seed_of(rank, peer, max, 5));
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (i = 0; i < iters; ++i) {
        WHERE("round trip %lu of %zu bytes blocking with rank %d", i, max,
              peer);
        if (rank < half) {
            MPI_Send(send, (int)max, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
            MPI_Recv(recv, (int)max, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                     &status);
        } else {
            MPI_Recv(recv, (int)max, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                     &status);
            expect_received(&status, max, peer);
            MPI_Send(send, (int)max, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
        }
        expect_received(&status, max, peer);
        if ((i == 0) || (i + 1 == iters)) {
            wrong += check(recv, host, max, seed_of(peer, rank, max, 5));
        }
    }
    printf("rank %d: %lu round trips of %zu bytes with rank %d in %.1f s, "
           "%zu bytes wrong\n", rank, iters, max, peer, MPI_Wtime() - start,
           wrong);
    fflush(stdout);
    return wrong != 0;
}

static size_t parse_size(const char *str)
{
    char *end;
    size_t size = strtoul(str, &end, 0);

    switch (*end) {
    case 'k': case 'K': return size << 10;
    case 'm': case 'M': return size << 20;
    default:            return size;
    }
}

int main(int argc, char **argv)
{
    const char *mode   = (argc > 1) ? argv[1] : "p2p";
    size_t max         = (argc > 2) ? parse_size(argv[2]) : (16ul << 20);
    const char *local  = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int local_rank     = (local != NULL) ? atoi(local) : 0;
    char name[MPI_MAX_PROCESSOR_NAME], gpu[16];
    int len, count, failed;
    unsigned char *host;
    void *send, *recv;

    /* UCX reads its settings in MPI_Init: the GPU of the local rank */
    snprintf(gpu, sizeof(gpu), "%d", local_rank);
    setenv("UCX_GPUMEM_ALLOC_GPU", gpu, 0);

    main_thread = pthread_self();
    {
        /* backtrace() loads what it needs at its first call: not in the
         * signal handler */
        void *frame;

        backtrace(&frame, 1);
    }
    signal(SIGTERM, say_where);
    signal(SIGALRM, say_where);
    MPI_Init(&argc, &argv);
    /* A fault says the step and the stack too: after MPI_Init, whose
     * libraries install their own handlers, some of which are gone again
     * by the time the rank exits */
    on_fault(SIGSEGV);
    on_fault(SIGBUS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    {
        char who[48];

        snprintf(who, sizeof(who), "mpi_hosts_test: rank %d", rank);
        if (!munmap_watch_start(who)) {
            fprintf(stderr, "%s: no munmap watch (no UCX memory events)\n",
                    who);
        }
    }
    MPI_Comm_size(MPI_COMM_WORLD, &num_ranks);

    memset(name, 0, sizeof(name));
    MPI_Get_processor_name(name, &len);
    hosts = calloc(num_ranks, sizeof(*hosts));
    if (hosts == NULL) {
        fail("out of memory");
    }
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);

    if ((gpumem_device_count(&count) != 0) || (count == 0)) {
        fail("no GPU");
    }
    if (local_rank >= count) {
        fail("more ranks on this host than GPUs");
    }
    gpumem_device_set(local_rank);
    printf("rank %d on %s, GPU %d of %d\n", rank, name, local_rank, count);
    fflush(stdout);

    host     = malloc(max);
    expected = malloc(max);
    if ((host == NULL) || (expected == NULL) || (gpumem_device_malloc(&send, max) != 0) ||
        (gpumem_device_malloc(&recv, max) != 0)) {
        fail("out of memory");
    }

    if (!strcmp(mode, "p2p")) {
        failed = test_p2p(max, send, recv, host);
    } else if (!strcmp(mode, "osc")) {
        failed = test_osc(max, send, recv, host);
    } else if (!strcmp(mode, "stream")) {
        failed = test_stream(max, send, recv, host);
    } else if (!strcmp(mode, "pingpong")) {
        failed = test_pingpong(max, send, recv, host);
    } else {
        fail("modes: p2p, osc, stream, pingpong");
        failed = 1;
    }

    WHERE("ending %s", mode);
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_hosts_test %s: %s\n", mode,
               failed ? "FAILED" : "passed, every byte checked");
    }
    WHERE("freeing the device buffers after %s", mode);
    gpumem_device_free(recv);
    gpumem_device_free(send);
    free(expected);
    free(host);
    free(hosts);
    WHERE("in MPI_Finalize after %s", mode);
    MPI_Finalize();
    WHERE("exiting after %s", mode);
    return failed;
}
