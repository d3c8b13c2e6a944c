/**
 * gpumem demo: two processes exchange GPU buffers through UCX.
 *
 * The parent and its child (fork) each open a UCP worker, swap worker
 * addresses over a pipe, and then ping-pong device buffers of growing size
 * with tag send/receive: the sender fills its device buffer with a pattern
 * (gpumem_device_memcpy), the receiver gets it straight into device memory
 * and checks every byte. The parent's buffers are on the first GPU, the
 * child's on the last. UCX moves the bytes with the plugin's transports;
 * on a machine without a GPU, run it on emulated GPUs (gpumem-emu).
 *
 * It says which transports carried the data and why: the verdict of the
 * topology on the two GPUs (gpumem_device_can_access_peer), UCP's lanes to
 * the peer, and the bytes gpumemipc moved zero-copy (gpumem_ipc_bytes).
 *
 *   gpumem_demo [max size, default 4m] [iterations per size, default 10]
 *
 * See file LICENSE for terms.
 */

#include <gpumem/gpumem.h>
#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEMO_TAG 0x6770756dul


typedef struct demo_peer {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           rank;
} demo_peer_t;


static double demo_now(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return tv.tv_sec + (tv.tv_usec * 1e-6);
}

static int demo_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        fprintf(stderr, "gpumem_demo: %s: %s\n", what,
                ucs_status_string(status));
        return -1;
    }
    return 0;
}

static ucs_status_t demo_wait(demo_peer_t *peer, void *request)
{
    ucs_status_t status;

    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(peer->worker);
    }
    ucp_request_free(request);
    return status;
}

/* UCP asks the plugin what memory the buffers are (UCX_GPUMEM_MEM_TYPE
 * says which type UCX sees): a type given here would have to be that one */
static ucs_status_t demo_send(demo_peer_t *peer, void *buffer, size_t size)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    return demo_wait(peer, ucp_tag_send_nbx(peer->ep, buffer, size, DEMO_TAG,
                                            &param));
}

static ucs_status_t demo_recv(demo_peer_t *peer, void *buffer, size_t size)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    return demo_wait(peer, ucp_tag_recv_nbx(peer->worker, buffer, size,
                                            DEMO_TAG, (ucp_tag_t)-1, &param));
}

/* A pattern that differs per size, iteration and sender */
static void demo_fill(unsigned char *bytes, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        bytes[i] = (unsigned char)((i * 131) ^ (seed * 7919) ^ (i >> 9));
    }
}

static int demo_open(demo_peer_t *peer, int read_fd, int write_fd)
{
    ucp_params_t params           = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_TAG
    };
    ucp_worker_params_t wparams   = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    ucp_ep_params_t eparams;
    ucp_address_t *address;
    size_t length, peer_length;
    void *peer_address;

    if (demo_check(ucp_init(&params, NULL, &peer->context), "ucp_init") ||
        demo_check(ucp_worker_create(peer->context, &wparams, &peer->worker),
                   "ucp_worker_create") ||
        demo_check(ucp_worker_get_address(peer->worker, &address, &length),
                   "ucp_worker_get_address")) {
        return -1;
    }

    /* Swap worker addresses over the pipes */
    if ((write(write_fd, &length, sizeof(length)) != sizeof(length)) ||
        (write(write_fd, address, length) != (ssize_t)length) ||
        (read(read_fd, &peer_length, sizeof(peer_length)) !=
         sizeof(peer_length))) {
        perror("gpumem_demo: address exchange");
        return -1;
    }
    ucp_worker_release_address(peer->worker, address);
    peer_address = malloc(peer_length);
    if ((peer_address == NULL) ||
        (read(read_fd, peer_address, peer_length) != (ssize_t)peer_length)) {
        perror("gpumem_demo: address exchange");
        return -1;
    }

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer_address;
    if (demo_check(ucp_ep_create(peer->worker, &eparams, &peer->ep),
                   "ucp_ep_create")) {
        return -1;
    }
    free(peer_address);
    return 0;
}

/* UCP's lanes to the peer, from ucp_ep_print_info: "posix (am am_bw#0)" */
static void demo_print_lanes(demo_peer_t *peer)
{
    char *text = NULL, *line, *roles, *save;
    char tl[64];
    size_t size;
    FILE *stream;
    int lane, rsc;

    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        return;
    }
    ucp_ep_print_info(peer->ep, stream);
    fclose(stream);

    printf("gpumem_demo: UCP's lanes to the peer:");
    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        line = strstr(line, "lane[");
        if ((line == NULL) ||
            (sscanf(line, "lane[%d]: %d:%63[^/]", &lane, &rsc, tl) != 3)) {
            continue;
        }
        roles = strstr(line, "sysdev[");
        roles = (roles != NULL) ? strchr(roles, ']') : NULL;
        roles = (roles != NULL) ? roles + 2 : "";
        /* UCX 1.22 and later print the lane's segment size first */
        if (!strncmp(roles, "seg ", 4) && (strchr(roles + 4, ' ') != NULL)) {
            roles = strchr(roles + 4, ' ') + 1;
        }
        printf(" %s (%s)", tl, roles);
    }
    printf("\n");
    free(text);
}

static void demo_close(demo_peer_t *peer)
{
    ucp_request_param_t param = {0};

    demo_wait(peer, ucp_ep_close_nbx(peer->ep, &param));
    ucp_worker_destroy(peer->worker);
    ucp_cleanup(peer->context);
}

/* Rank 0 sends and checks the echo, rank 1 checks and echoes back */
static int demo_run(demo_peer_t *peer, size_t max_size, int iters,
                    double *bandwidth_p, size_t *largest_p, size_t *bytes_p,
                    int *messages_p)
{
    unsigned char *host, *expect;
    size_t size;
    void *device;
    double start, elapsed;
    int i, errors = 0;

    host   = malloc(max_size);
    expect = malloc(max_size);
    if ((host == NULL) || (expect == NULL) ||
        demo_check(gpumem_device_malloc(&device, max_size),
                   "gpumem_device_malloc")) {
        return -1;
    }

    for (size = 1; size <= max_size; size *= 4) {
        start = demo_now();
        for (i = 0; i < iters; ++i) {
            demo_fill(expect, size, (unsigned)(size + i));
            if (peer->rank == 0) {
                gpumem_device_memcpy(device, expect, size);
                if (demo_check(demo_send(peer, device, size), "send") ||
                    demo_check(demo_recv(peer, device, size), "recv")) {
                    return -1;
                }
            } else {
                if (demo_check(demo_recv(peer, device, size), "recv")) {
                    return -1;
                }
            }

            /* Every byte that arrived in device memory is checked */
            gpumem_device_memcpy(host, device, size);
            if (memcmp(host, expect, size) != 0) {
                fprintf(stderr, "gpumem_demo: rank %d: %zu bytes arrived "
                        "wrong\n", peer->rank, size);
                ++errors;
            }

            if ((peer->rank == 1) &&
                demo_check(demo_send(peer, device, size), "send")) {
                return -1;
            }
        }
        elapsed       = demo_now() - start;
        *bandwidth_p  = (2.0 * size * iters) / elapsed / 1e6;
        *largest_p    = size;
        *bytes_p     += 2 * size * iters;
        *messages_p  += 2 * iters;
        if (peer->rank == 0) {
            printf("%10zu bytes: %4d round trips, %9.1f us each, "
                   "%8.1f MB/s, every byte checked\n", size, iters,
                   elapsed * 1e6 / iters, *bandwidth_p);
        }
    }

    gpumem_device_free(device);
    free(expect);
    free(host);
    return errors ? -1 : 0;
}

/* A size with an optional k, m or g suffix */
static size_t parse_size(const char *str)
{
    char *end;
    size_t size = strtoul(str, &end, 0);

    switch (*end) {
    case 'k': case 'K': return size << 10;
    case 'm': case 'M': return size << 20;
    case 'g': case 'G': return size << 30;
    default:            return size;
    }
}

/* What the topology says of the parent's GPU and the child's, each way */
static void demo_print_reach(int gpu, int peer_gpu)
{
    char reason[512];
    int can_access, from, to;

    for (from = gpu, to = peer_gpu; ; from = peer_gpu, to = gpu) {
        if (gpumem_device_can_access_peer(&can_access, from, to, reason,
                                          sizeof(reason)) == 0) {
            printf("gpumem_demo: GPU %d %s GPU %d's memory: %s\n", from,
                   can_access ? "maps" : "does not map", to, reason);
        }
        if ((from == peer_gpu) || (gpu == peer_gpu)) {
            break;
        }
    }
}

/* Which transports carried the bytes, and why */
static void demo_print_carriers(int gpu, int peer_gpu, size_t bytes,
                                unsigned long long ipc_bytes)
{
    int can_access = 0;

    gpumem_device_can_access_peer(&can_access, gpu, peer_gpu, NULL, 0);
    if (ipc_bytes > 0) {
        printf("gpumem_demo: gpumemipc moved %llu of the %zu bytes zero-copy "
               "between the GPUs (rendezvous); the small messages went "
               "eagerly, staged by gpumemcpy\n", ipc_bytes, bytes);
    } else if (!can_access) {
        printf("gpumem_demo: gpumemipc moved nothing: GPU %d does not map "
               "GPU %d's memory, so gpumemcpy staged every buffer through "
               "host memory (staged: GPUs do not reach each other)\n", gpu,
               peer_gpu);
    } else {
        printf("gpumem_demo: gpumemipc moved nothing (not in UCX_TLS, or "
               "the peer's memory could not be mapped: the log says why): "
               "gpumemcpy staged every buffer through host memory\n");
    }
}

int main(int argc, char **argv)
{
    size_t max_size = (argc > 1) ? parse_size(argv[1]) : (4ul << 20);
    int iters       = (argc > 2) ? atoi(argv[2]) : 10;
    int to_child[2], to_parent[2], status, ret, count, messages = 0;
    unsigned long long ipc_bytes = 0, child_ipc_bytes = 0;
    double bandwidth = 0;
    size_t bytes     = 0;
    gpumem_pointer_attr_t attr;
    int gpu = 0, peer_gpu;
    size_t largest   = 0;
    demo_peer_t peer;
    char gpu_str[16];
    void *probe;
    pid_t pid;

    /* The child's buffers are on the last GPU: the other one, if any */
    peer_gpu = (gpumem_device_count(&count) == 0) ? (count - 1) : 0;

    if ((pipe(to_child) != 0) || (pipe(to_parent) != 0)) {
        perror("gpumem_demo: pipe");
        return 1;
    }

    pid = fork();
    if (pid < 0) {
        perror("gpumem_demo: fork");
        return 1;
    }

    peer.rank = (pid == 0);
    if (peer.rank == 0) {
        if ((gpumem_device_malloc(&probe, 1) == 0) &&
            (gpumem_device_query(probe, &attr) == 0)) {
            gpu = attr.device;
            printf("gpumem_demo: process %d sends GPU %d's buffers to process "
                   "%d on GPU %d, through UCX %s\n", getpid(), gpu, pid,
                   peer_gpu, ucp_get_version_string());
            gpumem_device_free(probe);
        }
        demo_print_reach(gpu, peer_gpu);
    } else {
        gpumem_device_set(peer_gpu);
        /* And the GPU of the child's transports */
        snprintf(gpu_str, sizeof(gpu_str), "%d", peer_gpu);
        setenv("UCX_GPUMEM_ALLOC_GPU", gpu_str, 1);
    }

    ret = demo_open(&peer, peer.rank ? to_child[0] : to_parent[0],
                    peer.rank ? to_parent[1] : to_child[1]);
    if (ret == 0) {
        if (peer.rank == 0) {
            demo_print_lanes(&peer);
        }
        ret = demo_run(&peer, max_size, iters, &bandwidth, &largest, &bytes,
                       &messages);
        demo_close(&peer);
    }
    gpumem_ipc_bytes(&ipc_bytes);

    if (peer.rank == 1) {
        /* The parent counts the child's zero-copy bytes too */
        if (write(to_parent[1], &ipc_bytes, sizeof(ipc_bytes)) !=
            sizeof(ipc_bytes)) {
            ret = -1;
        }
        _exit(ret ? 1 : 0);
    }

    if (read(to_parent[0], &child_ipc_bytes, sizeof(child_ipc_bytes)) !=
        sizeof(child_ipc_bytes)) {
        child_ipc_bytes = 0;
    }
    if ((waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "gpumem_demo: the receiving process failed\n");
        ret = -1;
    }

    if (ret == 0) {
        demo_print_carriers(gpu, peer_gpu, bytes,
                            ipc_bytes + child_ipc_bytes);
        printf("gpumem_demo: bandwidth %.1f MB/s with %zu-byte buffers\n",
               bandwidth, largest);
        printf("gpumem_demo: verified: every byte of %d messages\n",
               messages);
    }
    printf("gpumem_demo: %s\n", ret ? "FAILED" : "passed");
    return ret ? 1 : 0;
}
