/**
 * gpumem tests: two processes move device buffers through UCP over an RDMA
 * transport (gpumem_rc when UCX_TLS allows it), every byte checked: tagged
 * messages both ways, RMA put and get into the peer's device memory, and a
 * put through a key whose memory the peer has unmapped and freed, which
 * must fail with a remote access error reported to the endpoint's error
 * handler: from host memory (access), or from device memory (access-device:
 * a put of max size, which UCP must send zero-copy for the NIC to be
 * refused).
 *
 *   rc_ucp_test tag|rma|access|access-device [max size, default 4m]
 *
 * The parent is rank 0 (initiator), its child rank 1; control messages
 * (keys, checks, verdicts) go over pipes, data only over UCP. Rank 0
 * prints its endpoint's lanes (ucp_ep_print_info). Exit status 0: passed.
 *
 * See file LICENSE for terms.
 */

#include <gpumem/gpumem.h>
#include <ucp/api/ucp.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_TAG 0x72637470ul


typedef struct test_peer {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    int           rank;
    int           read_fd;
    int           write_fd;
    ucs_status_t  ep_failure;    /* What the error handler was told */
} test_peer_t;


/* A control message of rank 0 */
typedef struct test_cmd {
    int      op;                 /* TEST_CMD_* */
    uint64_t offset;
    uint64_t size;
    unsigned seed;
} test_cmd_t;

enum {
    TEST_CMD_CHECK,              /* Check [offset, +size) holds seed */
    TEST_CMD_FILL,               /* Fill [offset, +size) with seed */
    TEST_CMD_UNMAP,              /* Unmap the region */
    TEST_CMD_DONE
};


static int test_fail(const char *what, ucs_status_t status)
{
    fprintf(stderr, "rc_ucp_test: %s: %s\n", what,
            ucs_status_string(status));
    return -1;
}

static int test_io(ssize_t ret, size_t expected, const char *what)
{
    if (ret != (ssize_t)expected) {
        perror(what);
        return -1;
    }
    return 0;
}

static void test_fill(unsigned char *bytes, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        bytes[i] = (unsigned char)((i * 167) ^ (seed * 4099) ^ (i >> 11));
    }
}

/* Read from the pipe while progressing the worker: the peer's operations
 * (wire-up included) need this side's progress */
static ssize_t test_read(test_peer_t *peer, void *buffer, size_t length)
{
    struct pollfd pfd = {.fd = peer->read_fd, .events = POLLIN};

    while (poll(&pfd, 1, 0) == 0) {
        ucp_worker_progress(peer->worker);
    }
    return read(peer->read_fd, buffer, length);
}

static ucs_status_t test_wait(test_peer_t *peer, void *request)
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

static void test_ep_error(void *arg, ucp_ep_h ep __attribute__((unused)),
                          ucs_status_t status)
{
    test_peer_t *peer = arg;

    printf("rank %d: endpoint failure reported: %s\n", peer->rank,
           ucs_status_string(status));
    peer->ep_failure = status;
}

static int test_open(test_peer_t *peer, int peer_errors)
{
    ucp_params_t params         = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    ucp_ep_params_t eparams     = {0};
    ucp_address_t *address;
    size_t length, peer_length;
    void *peer_address;
    ucs_status_t status;

    status = ucp_init(&params, NULL, &peer->context);
    if (status != UCS_OK) {
        return test_fail("ucp_init", status);
    }
    status = ucp_worker_create(peer->context, &wparams, &peer->worker);
    if (status != UCS_OK) {
        return test_fail("ucp_worker_create", status);
    }
    status = ucp_worker_get_address(peer->worker, &address, &length);
    if (status != UCS_OK) {
        return test_fail("ucp_worker_get_address", status);
    }

    if (test_io(write(peer->write_fd, &length, sizeof(length)),
                sizeof(length), "address exchange") ||
        test_io(write(peer->write_fd, address, length), length,
                "address exchange") ||
        test_io(read(peer->read_fd, &peer_length, sizeof(peer_length)),
                sizeof(peer_length), "address exchange")) {
        return -1;
    }
    ucp_worker_release_address(peer->worker, address);
    peer_address = malloc(peer_length);
    if ((peer_address == NULL) ||
        test_io(read(peer->read_fd, peer_address, peer_length), peer_length,
                "address exchange")) {
        return -1;
    }

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer_address;
    if (peer_errors) {
        eparams.field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
        eparams.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        eparams.err_handler.cb  = test_ep_error;
        eparams.err_handler.arg = peer;
    }
    status = ucp_ep_create(peer->worker, &eparams, &peer->ep);
    free(peer_address);
    if (status != UCS_OK) {
        return test_fail("ucp_ep_create", status);
    }
    return 0;
}

static void test_close(test_peer_t *peer)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = (peer->ep_failure != UCS_OK) ? UCP_EP_CLOSE_FLAG_FORCE
                                                     : 0
    };

    (void)test_wait(peer, ucp_ep_close_nbx(peer->ep, &param));
    ucp_worker_destroy(peer->worker);
    ucp_cleanup(peer->context);
}

static ucs_status_t test_tag(test_peer_t *peer, int send, void *buffer,
                             size_t size)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE,
        .memory_type  = UCS_MEMORY_TYPE_CUDA
    };

    return test_wait(peer,
                     send ? ucp_tag_send_nbx(peer->ep, buffer, size, TEST_TAG,
                                             &param) :
                            ucp_tag_recv_nbx(peer->worker, buffer, size,
                                             TEST_TAG, (ucp_tag_t)-1,
                                             &param));
}

/* Whether the device bytes hold the pattern of seed */
static int test_check(const void *device, size_t size, unsigned seed,
                      const char *what, int rank)
{
    unsigned char *host   = malloc(size);
    unsigned char *expect = malloc(size);
    int ok;

    test_fill(expect, size, seed);
    gpumem_device_memcpy(host, device, size);
    ok = !memcmp(host, expect, size);
    if (!ok) {
        fprintf(stderr, "rc_ucp_test: rank %d: %s of %zu bytes arrived "
                "wrong\n", rank, what, size);
    }
    free(expect);
    free(host);
    return ok;
}

static void test_device_fill(void *device, size_t size, unsigned seed)
{
    unsigned char *host = malloc(size);

    test_fill(host, size, seed);
    gpumem_device_memcpy(device, host, size);
    free(host);
}

static void test_print_lanes(test_peer_t *peer)
{
    printf("rank 0: lanes of the endpoint to rank 1:\n");
    fflush(stdout);
    ucp_ep_print_info(peer->ep, stdout);
    fflush(stdout);
}

/* Tagged messages of device buffers, each size both ways */
static int test_run_tag(test_peer_t *peer, void *device, size_t max_size)
{
    size_t size;
    int errors = 0;

    for (size = 1; size <= max_size; size *= 8) {
        if (peer->rank == 0) {
            test_device_fill(device, size, (unsigned)size);
            if (test_tag(peer, 1, device, size) != UCS_OK) {
                return test_fail("tag send", UCS_ERR_IO_ERROR);
            }
        }
        if (test_tag(peer, 0, device, size) != UCS_OK) {
            return test_fail("tag recv", UCS_ERR_IO_ERROR);
        }
        errors += !test_check(device, size, (unsigned)size, "tag message",
                              peer->rank);
        if ((peer->rank == 1) && (test_tag(peer, 1, device, size) != UCS_OK)) {
            return test_fail("tag send", UCS_ERR_IO_ERROR);
        }
        if (peer->rank == 0) {
            if (size == 1) {
                test_print_lanes(peer);
            }
            printf("tag %10zu bytes: there and back, every byte checked\n",
                   size);
        }
    }
    return errors ? -1 : 0;
}

/* Rank 1: maps its device buffer, sends the key, and serves rank 0's
 * commands; the unmap command frees the buffer too (*device_p is then
 * NULL): a registration cache may keep the registration of memory that is
 * only unmapped, by design, but never of memory that is freed */
static int test_serve(test_peer_t *peer, void **device_p, size_t max_size)
{
    void *device = *device_p;
    ucp_mem_map_params_t mparams = {
        .field_mask  = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                       UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                       UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE,
        .address     = device,
        .length      = max_size,
        .memory_type = UCS_MEMORY_TYPE_CUDA
    };
    ucp_mem_h memh = NULL;
    void *rkey_buffer;
    size_t rkey_size;
    uint64_t address = (uintptr_t)device;
    ucs_status_t status;
    test_cmd_t cmd;
    int verdict;

    status = ucp_mem_map(peer->context, &mparams, &memh);
    if (status != UCS_OK) {
        return test_fail("ucp_mem_map", status);
    }
    status = ucp_rkey_pack(peer->context, memh, &rkey_buffer, &rkey_size);
    if (status != UCS_OK) {
        return test_fail("ucp_rkey_pack", status);
    }
    if (test_io(write(peer->write_fd, &address, sizeof(address)),
                sizeof(address), "key") ||
        test_io(write(peer->write_fd, &rkey_size, sizeof(rkey_size)),
                sizeof(rkey_size), "key") ||
        test_io(write(peer->write_fd, rkey_buffer, rkey_size), rkey_size,
                "key")) {
        return -1;
    }
    ucp_rkey_buffer_release(rkey_buffer);

    for (;;) {
        if (test_io(test_read(peer, &cmd, sizeof(cmd)), sizeof(cmd),
                    "command")) {
            return -1;
        }
        verdict = 1;
        switch (cmd.op) {
        case TEST_CMD_CHECK:
            verdict = test_check((char*)device + cmd.offset, cmd.size,
                                 cmd.seed, "put", peer->rank);
            break;
        case TEST_CMD_FILL:
            test_device_fill((char*)device + cmd.offset, cmd.size, cmd.seed);
            break;
        case TEST_CMD_UNMAP:
            status    = ucp_mem_unmap(peer->context, memh);
            memh      = NULL;
            verdict   = (status == UCS_OK) &&
                        (gpumem_device_free(device) == 0);
            device    = NULL;
            *device_p = NULL;
            break;
        default:
            if (memh != NULL) {
                ucp_mem_unmap(peer->context, memh);
            }
            return 0;
        }
        if (test_io(write(peer->write_fd, &verdict, sizeof(verdict)),
                    sizeof(verdict), "verdict")) {
            return -1;
        }
    }
}

static int test_command(test_peer_t *peer, int op, uint64_t offset,
                        uint64_t size, unsigned seed)
{
    test_cmd_t cmd = {.op = op, .offset = offset, .size = size, .seed = seed};
    int verdict    = 0;

    if (test_io(write(peer->write_fd, &cmd, sizeof(cmd)), sizeof(cmd),
                "command") ||
        ((op != TEST_CMD_DONE) &&
         test_io(test_read(peer, &verdict, sizeof(verdict)),
                 sizeof(verdict), "verdict"))) {
        return 0;
    }
    return (op == TEST_CMD_DONE) || verdict;
}

static ucs_status_t test_rma(test_peer_t *peer, int put, void *device,
                             size_t size, uint64_t remote_addr,
                             ucp_rkey_h rkey)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE,
        .memory_type  = UCS_MEMORY_TYPE_CUDA
    };
    ucp_request_param_t flush = {0};
    ucs_status_t status;

    status = test_wait(peer,
                       put ? ucp_put_nbx(peer->ep, device, size, remote_addr,
                                         rkey, &param) :
                             ucp_get_nbx(peer->ep, device, size, remote_addr,
                                         rkey, &param));
    if (status != UCS_OK) {
        return status;
    }
    return test_wait(peer, ucp_ep_flush_nbx(peer->ep, &flush));
}

static ucs_status_t test_rma_host(test_peer_t *peer, size_t size,
                                  uint64_t remote_addr, ucp_rkey_h rkey)
{
    ucp_request_param_t param = {0};
    void *host                = calloc(1, size);
    ucs_status_t status;

    status = test_wait(peer, ucp_put_nbx(peer->ep, host, size, remote_addr,
                                         rkey, &param));
    if (status == UCS_OK) {
        status = test_wait(peer, ucp_ep_flush_nbx(peer->ep, &param));
    }
    free(host);
    return status;
}

/* Rank 0: put into and get from rank 1's device buffer at odd offsets; or
 * put through the key of unmapped memory, from host memory or, with
 * access_device, from device memory */
static int test_run_rma(test_peer_t *peer, void *device, size_t max_size,
                        int access, int access_device)
{
    uint64_t remote, offset;
    size_t rkey_size, size;
    void *rkey_buffer;
    ucp_rkey_h rkey;
    ucs_status_t status;
    int errors = 0;

    if (test_io(read(peer->read_fd, &remote, sizeof(remote)), sizeof(remote),
                "key") ||
        test_io(read(peer->read_fd, &rkey_size, sizeof(rkey_size)),
                sizeof(rkey_size), "key") ||
        ((rkey_buffer = malloc(rkey_size)) == NULL) ||
        test_io(read(peer->read_fd, rkey_buffer, rkey_size), rkey_size,
                "key")) {
        return -1;
    }
    status = ucp_ep_rkey_unpack(peer->ep, rkey_buffer, &rkey);
    free(rkey_buffer);
    if (status != UCS_OK) {
        return test_fail("ucp_ep_rkey_unpack", status);
    }

    /* Wire-up, with a message rank 1 does not wait for */
    test_device_fill(device, 8, 1);
    status = (access && !access_device) ?
             test_rma_host(peer, 8, remote, rkey) :
             test_rma(peer, 1, device, 8, remote, rkey);
    if (status != UCS_OK) {
        return test_fail("first put", status);
    }
    test_print_lanes(peer);

    if (access) {
        /* From host memory, which every protocol reads; or from device
         * memory, large enough to go zero-copy: UCX 1.13's new protocols put
         * small device buffers by software emulation, which the peer's CPU
         * writes without a key to refuse */
        errors += !test_command(peer, TEST_CMD_UNMAP, 0, 0, 0);
        printf("rank 1 unmapped and freed its memory\n");
        status  = access_device ?
                  test_rma(peer, 1, device, max_size, remote, rkey) :
                  test_rma_host(peer, 4096, remote, rkey);
        printf("put of %zu bytes of %s memory into freed memory: %s\n",
               access_device ? max_size : 4096,
               access_device ? "device" : "host", ucs_status_string(status));
        /* A put that succeeded has no failure to wait for */
        while ((status != UCS_OK) && (peer->ep_failure == UCS_OK)) {
            ucp_worker_progress(peer->worker);
        }
        if (status != UCS_ERR_INVALID_ADDR) {
            fprintf(stderr, "rc_ucp_test: put into freed memory: %s, "
                    "expected %s\n", ucs_status_string(status),
                    ucs_status_string(UCS_ERR_INVALID_ADDR));
            ++errors;
        }
        if (peer->ep_failure != UCS_ERR_INVALID_ADDR) {
            fprintf(stderr, "rc_ucp_test: the error handler was told %s\n",
                    ucs_status_string(peer->ep_failure));
            ++errors;
        }
        ucp_rkey_destroy(rkey);
        test_command(peer, TEST_CMD_DONE, 0, 0, 0);
        return errors ? -1 : 0;
    }

    for (size = 1; size <= max_size / 2; size *= 8) {
        offset = (size * 3 + 5) % (max_size / 2);

        test_device_fill(device, size, (unsigned)size + 7);
        status = test_rma(peer, 1, device, size, remote + offset, rkey);
        if (status != UCS_OK) {
            return test_fail("put", status);
        }
        errors += !test_command(peer, TEST_CMD_CHECK, offset, size,
                                (unsigned)size + 7);

        errors += !test_command(peer, TEST_CMD_FILL, offset, size,
                                (unsigned)size + 11);
        status  = test_rma(peer, 0, device, size, remote + offset, rkey);
        if (status != UCS_OK) {
            return test_fail("get", status);
        }
        errors += !test_check(device, size, (unsigned)size + 11, "get",
                              peer->rank);
        printf("rma %10zu bytes at +%-7" PRIu64 ": put and get, every byte "
               "checked\n", size, offset);
    }

    ucp_rkey_destroy(rkey);
    test_command(peer, TEST_CMD_DONE, 0, 0, 0);
    return errors ? -1 : 0;
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
    const char *mode = (argc > 1) ? argv[1] : "tag";
    size_t max_size  = (argc > 2) ? parse_size(argv[2]) : (4ul << 20);
    int to_child[2], to_parent[2], status, ret;
    int access_dev   = !strcmp(mode, "access-device");
    int access       = !strcmp(mode, "access") || access_dev;
    test_peer_t peer = {0};
    void *device;
    pid_t child;

    if (strcmp(mode, "tag") && strcmp(mode, "rma") && !access) {
        fprintf(stderr, "usage: rc_ucp_test tag|rma|access|access-device "
                "[max size]\n");
        return 2;
    }
    if ((pipe(to_child) != 0) || (pipe(to_parent) != 0)) {
        perror("pipe");
        return 1;
    }

    /* Lines as they come, so that a run killed by a timeout shows how far
     * it went */
    setvbuf(stdout, NULL, _IOLBF, 0);
    child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    peer.rank       = (child == 0);
    peer.read_fd    = peer.rank ? to_child[0] : to_parent[0];
    peer.write_fd   = peer.rank ? to_parent[1] : to_child[1];
    peer.ep_failure = UCS_OK;

    if (gpumem_device_malloc(&device, max_size) != 0) {
        fprintf(stderr, "rc_ucp_test: rank %d: no device memory\n",
                peer.rank);
        return 1;
    }

    ret = test_open(&peer, access);
    if (ret == 0) {
        if (!strcmp(mode, "tag")) {
            ret = test_run_tag(&peer, device, max_size);
        } else if (peer.rank == 1) {
            ret = test_serve(&peer, &device, max_size);
        } else {
            ret = test_run_rma(&peer, device, max_size, access, access_dev);
        }
        test_close(&peer);
    }
    gpumem_device_free(device);

    if (peer.rank == 1) {
        return ret ? 1 : 0;
    }
    if ((waitpid(child, &status, 0) != child) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "rc_ucp_test: rank 1 failed\n");
        ret = -1;
    }
    printf("rc_ucp_test %s: %s\n", mode, ret ? "FAILED" : "passed");
    return ret ? 1 : 0;
}
