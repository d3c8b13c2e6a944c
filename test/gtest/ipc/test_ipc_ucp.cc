/**
 * gpumem tests: UCP on the IPC transport between two processes: tag
 * messages of device buffers, whose rendezvous reads or writes the peer's
 * device memory zero-copy through gpumemipc where the GPUs reach each other,
 * and is staged another way where they do not; and ucp_put/ucp_get to and
 * from the peer's device memory. Every byte is checked.
 *
 * See file LICENSE for terms.
 */

#include "ipc_ucp_test.h"

#include <common/log_capture.h>
#include <common/scoped_env.h>

#include <gpumem/gpumem.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>


using gpumem_test::channel;
using gpumem_test::log_capture;
using gpumem_test::setup_name;
using gpumem_test::tag;
using gpumem_test::ucp_process;
using gpumem_test::ucp_setup;


/* Rendezvous of device buffers: the receiver reads the sender's memory
 * (or the sender writes the receiver's) with gpumemipc, zero-copy: the
 * transport's counters of the two processes add up to at least the bytes of
 * the rendezvous messages */
TEST_P(ipc_ucp, tag_rendezvous_of_device_buffers_is_zero_copy) {
    const std::vector<size_t> sizes = {8, 1000, 100000, (4 << 20) + 3};
    uint64_t receiver_bytes, sender_bytes;

    exchange(sizes, &receiver_bytes, &sender_bytes);
    EXPECT_LE((uint64_t)(100000 + (4 << 20) + 3),
              receiver_bytes + sender_bytes)
            << "the rendezvous did not go through gpumemipc";
}

INSTANTIATE_TEST_SUITE_P(
        tls, ipc_ucp,
        testing::Values(ucp_setup{"posix,cma,gpumemcpy,gpumemipc", 0, 1},
                        ucp_setup{"tcp,gpumemcpy,gpumemipc", 0, 1},
                        ucp_setup{"posix,cma,gpumemcpy,gpumemipc", 0, 0},
                        /* gpumemipc the only transport of active messages:
                         * the eager messages and the rendezvous' own go
                         * through its receive FIFOs */
                        ucp_setup{"gpumemcpy,gpumemipc", 0, 1}),
        setup_name);


/* With peer error handling (UCP_ERR_HANDLING_MODE_PEER), device buffers
 * still move through gpumemipc zero-copy, and a peer killed after is the
 * endpoint's error, told by UCP's keepalive */
class ipc_killed_peer : public ipc_test {
protected:
    /* Over @a tls, with UCP's keepalive every @a interval: the peer killed
     * after a transfer is told within @a deadline */
    void expect_told(const char *tls, const char *interval,
                     std::chrono::milliseconds deadline) {
        const size_t size = 1 << 20;
        uct_gpumem_ipc_stats_t before;
        ucp_request_param_t param;
        uint64_t sender_bytes;
        ucp_process ucp;
        channel chan;
        void *dst;
        pid_t pid;

        pid = fork_child([&]() {
            uct_gpumem_ipc_stats_t child_before = stats();
            ucp_process sender;
            void *src;

            chan.child_side();
            setenv("UCX_GPUMEM_ALLOC_GPU", "1", 1);
            sender.init(tls, UCP_FEATURE_TAG, interval);
            chan.send(sender.address());
            sender.connect(chan.recv(), true);

            src = device_alloc(size, 1);
            ASSERT_TRUE(src != NULL);
            to_device(src, pattern(size, 7));
            param.op_attr_mask = 0;
            EXPECT_EQ(UCS_OK, sender.wait(ucp_tag_send_nbx(sender.ep, src,
                                                           size, tag,
                                                           &param)));
            EXPECT_EQ("received", chan.recv());
            chan.send(std::to_string(stats().bytes - child_before.bytes));
            chan.recv(); /* Killed while it waits */
        });

        before = stats();
        setenv("UCX_GPUMEM_ALLOC_GPU", "0", 1);
        ucp.init(tls, UCP_FEATURE_TAG, interval);
        unsetenv("UCX_GPUMEM_ALLOC_GPU");
        chan.send(ucp.address());
        ucp.connect(chan.recv(), true);

        dst = device_alloc(size, 0);
        ASSERT_TRUE(dst != NULL);
        param.op_attr_mask = 0;
        EXPECT_EQ(UCS_OK, ucp.wait(ucp_tag_recv_nbx(ucp.worker, dst, size,
                                                    tag, (ucp_tag_t)-1,
                                                    &param)));
        EXPECT_TRUE(pattern(size, 7) == from_device(dst, size))
                << "bytes differ";
        chan.send("received");
        sender_bytes = std::stoull(chan.recv());
        EXPECT_LE((uint64_t)size, (stats().bytes - before.bytes) +
                                  sender_bytes)
                << "the rendezvous did not go through gpumemipc";
        EXPECT_EQ(UCS_OK, ucp.peer_error);

        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        {
            log_capture log; /* UCP says what failed */
            const auto start = std::chrono::steady_clock::now();
            while ((ucp.peer_error == UCS_OK) &&
                   (std::chrono::steady_clock::now() < start + deadline)) {
                ucp_worker_progress(ucp.worker);
            }
        }
        EXPECT_NE(UCS_OK, ucp.peer_error)
                << "the killed peer was not told in " << deadline.count()
                << " ms (keepalive every " << interval << ")";
        device_free(dst);

        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        ucp.wait(ucp_ep_close_nbx(ucp.ep, &param));
        ucp_worker_destroy(ucp.worker);
        ucp_cleanup(ucp.context);
    }
};

/* The keepalive lane is tcp's; gpumemipc's ep_check */
TEST_F(ipc_killed_peer, ucp_with_peer_errors_is_zero_copy_and_tells_a_killed_peer) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    expect_told("tcp,gpumemcpy,gpumemipc", "100ms", std::chrono::seconds(30));
}

/* gpumemipc the only transport of active messages: UCP's keepalive is a
 * message to the peer's FIFO that asks for a check of the peer (which the
 * dead peer's full FIFO made once in 64 messages): a few intervals, not 64 */
TEST_F(ipc_killed_peer, killed_peer_is_told_at_the_next_keepalive_message) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    expect_told("gpumemcpy,gpumemipc", "200ms",
                std::chrono::milliseconds(4000));
}

/* The request's status once complete, sleeping in ucp_worker_wait()
 * whenever the worker arms (UCP's wakeup mode); @a sleeps_p counts the
 * sleeps */
static ucs_status_t wait_sleeping(ucp_worker_h worker, ucs_status_ptr_t request,
                                  unsigned *sleeps_p)
{
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::seconds(60);
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }

    while (((status = ucp_request_check_status(request)) == UCS_INPROGRESS) &&
           (std::chrono::steady_clock::now() < deadline)) {
        if (ucp_worker_progress(worker) != 0) {
            continue;
        }
        if (ucp_worker_arm(worker) == UCS_OK) {
            ++*sleeps_p;
            ucp_worker_wait(worker);
        }
    }
    ucp_request_free(request);
    return status;
}

/* UCP's wakeup mode: a receiver of device memory sleeps until the sender's
 * message comes, and wakes to finish the rendezvous, which gpumemipc moves
 * zero-copy; the sender sleeps while it waits for its reply */
class ipc_wakeup : public ipc_test {
protected:
    void sleep_and_wake(const char *tls);
};

/* The messages come through posix */
TEST_F(ipc_wakeup, ucp_wakeup_mode_sleeps_and_wakes_on_a_device_transfer) {
    sleep_and_wake("posix,cma,gpumemcpy,gpumemipc");
}

/* The messages come through gpumemipc's receive FIFO, whose arrival wakes
 * the sleeper */
TEST_F(ipc_wakeup, ucp_wakeup_mode_wakes_on_a_message_through_gpumemipc) {
    sleep_and_wake("gpumemcpy,gpumemipc");
}

void ipc_wakeup::sleep_and_wake(const char *tls)
{
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    const size_t size   = 1 << 20;
    uct_gpumem_ipc_stats_t before;
    ucp_request_param_t param;
    unsigned sleeps = 0;
    uint64_t sender_bytes;
    ucp_process ucp;
    channel chan;
    void *dst;
    pid_t pid;

    pid = fork_child([&]() {
        uct_gpumem_ipc_stats_t child_before = stats();
        unsigned child_sleeps = 0;
        ucp_process sender;
        void *src;

        chan.child_side();
        setenv("UCX_GPUMEM_ALLOC_GPU", "1", 1);
        sender.init(tls, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP);
        chan.send(sender.address());
        sender.connect(chan.recv());

        src = device_alloc(size, 1);
        ASSERT_TRUE(src != NULL);
        to_device(src, pattern(size, 9));
        EXPECT_EQ("sleeping", chan.recv());
        usleep(200000); /* The receiver is asleep by now */
        param.op_attr_mask = 0;
        EXPECT_EQ(UCS_OK, wait_sleeping(sender.worker,
                                        ucp_tag_send_nbx(sender.ep, src, size,
                                                         tag, &param),
                                        &child_sleeps));
        EXPECT_EQ("received", chan.recv());
        chan.send(std::to_string(stats().bytes - child_before.bytes));
        device_free(src);
        sender.close(chan);
    });

    before = stats();
    setenv("UCX_GPUMEM_ALLOC_GPU", "0", 1);
    ucp.init(tls, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP);
    unsetenv("UCX_GPUMEM_ALLOC_GPU");
    chan.send(ucp.address());
    ucp.connect(chan.recv());

    dst = device_alloc(size, 0);
    ASSERT_TRUE(dst != NULL);
    param.op_attr_mask = 0;
    ucs_status_ptr_t request = ucp_tag_recv_nbx(ucp.worker, dst, size, tag,
                                                (ucp_tag_t)-1, &param);
    chan.send("sleeping");
    EXPECT_EQ(UCS_OK, wait_sleeping(ucp.worker, request, &sleeps));
    EXPECT_LE(1u, sleeps) << "the receiver never slept";
    EXPECT_TRUE(pattern(size, 9) == from_device(dst, size)) << "bytes differ";
    chan.send("received");
    sender_bytes = std::stoull(chan.recv());
    EXPECT_LE((uint64_t)size, (stats().bytes - before.bytes) + sender_bytes)
            << "the rendezvous did not go through gpumemipc";
    device_free(dst);
    ucp.close(chan);
    wait_child(pid);
}


/*
 * Two UCP contexts of one process, each on its own GPU of the machine (the
 * two under one switch, which reach each other), exchange device buffers of
 * many sizes, many times, each way (openucx/ucx issue 11854: peers in one
 * process must not exhaust GPU memory). gpumemipc carries the rendezvous
 * zero-copy, every byte arrives, and the VRAM free on each GPU after the
 * last round is what it was after the first: no mapping of the process's
 * own memory holds on to what it freed.
 */
TEST_F(ipc_test, tag_between_two_contexts_of_one_process_keeps_vram_flat) {
    const char *tls                 = "posix,cma,gpumemcpy,gpumemipc";
    const std::vector<size_t> sizes = {8, 1000, 100000, (1 << 20) + 7,
                                       (3 << 20) + 1, 40000};
    const unsigned rounds           = 25;
    auto set_gpu   = (decltype(&gpumem_device_set))gpumem_test::plugin_symbol(
            "gpumem_device_set");
    auto mem_info  = (decltype(&gpumem_device_mem_get_info))
            gpumem_test::plugin_symbol("gpumem_device_mem_get_info");
    uct_gpumem_ipc_stats_t before = stats();
    std::vector<size_t> free_after_first(2);
    uint64_t rendezvous_bytes     = 0;
    ucp_process procs[2];
    ucp_request_param_t param;

    ASSERT_TRUE((set_gpu != NULL) && (mem_info != NULL));
    /* One rail, the fastest: in one process gpumemcpy reaches the other
     * context too, and UCP would split each rendezvous over both. Protocol
     * v1's selection: v2's (1.16 and later) takes gpumemcpy between two
     * contexts of one process (1.16, 1.18), and in 1.20 crashes in its own
     * query of the rendezvous protocols it selected
     * (ucp_proto_common_lane_priv_str) */
    setenv("UCX_MAX_RNDV_RAILS", "1", 1);
    setenv("UCX_PROTO_ENABLE", "n", 1);
    for (int gpu = 0; gpu < 2; ++gpu) {
        setenv("UCX_GPUMEM_ALLOC_GPU", std::to_string(gpu).c_str(), 1);
        procs[gpu].init(tls);
    }
    unsetenv("UCX_GPUMEM_ALLOC_GPU");
    unsetenv("UCX_MAX_RNDV_RAILS");
    unsetenv("UCX_PROTO_ENABLE");
    procs[0].connect(procs[1].address());
    procs[1].connect(procs[0].address());

    auto progress_both = [&]() {
        ucp_worker_progress(procs[0].worker);
        ucp_worker_progress(procs[1].worker);
    };
    auto vram_free = [&](int gpu) {
        size_t free_bytes = 0, total;

        EXPECT_EQ(0, set_gpu(gpu));
        EXPECT_EQ(0, mem_info(&free_bytes, &total));
        EXPECT_EQ(0, set_gpu(0));
        return free_bytes;
    };

    for (unsigned round = 0; round < rounds; ++round) {
        for (size_t size : sizes) {
            const int from      = (round + size) % 2;
            const int to        = 1 - from;
            const unsigned seed = (unsigned)(round * 31 + size);
            void *src           = device_alloc(size, from);
            void *dst           = device_alloc(size, to);
            ucs_status_ptr_t recv, send;

            SCOPED_TRACE("round " + std::to_string(round) + ", " +
                         std::to_string(size) + " bytes from GPU " +
                         std::to_string(from));
            ASSERT_TRUE((src != NULL) && (dst != NULL));
            to_device(src, pattern(size, seed));
            param.op_attr_mask = 0;
            recv = ucp_tag_recv_nbx(procs[to].worker, dst, size, tag,
                                    (ucp_tag_t)-1, &param);
            send = ucp_tag_send_nbx(procs[from].ep, src, size, tag, &param);
            EXPECT_EQ(UCS_OK, gpumem_test::ucp_wait(send, progress_both));
            EXPECT_EQ(UCS_OK, gpumem_test::ucp_wait(recv, progress_both));
            ASSERT_TRUE(pattern(size, seed) == from_device(dst, size))
                    << "bytes differ";
            device_free(src);
            device_free(dst);
            rendezvous_bytes += (size >= 8192) ? size : 0;
        }

        if (round == 0) {
            free_after_first = {vram_free(0), vram_free(1)};
        }
    }

    EXPECT_LE(rendezvous_bytes, stats().bytes - before.bytes)
            << "the rendezvous did not go through gpumemipc";
    EXPECT_EQ(free_after_first[0], vram_free(0)) << "GPU 0's VRAM in use grew";
    EXPECT_EQ(free_after_first[1], vram_free(1)) << "GPU 1's VRAM in use grew";

    param.op_attr_mask = 0;
    for (ucp_process &proc : procs) {
        EXPECT_EQ(UCS_OK, gpumem_test::ucp_wait(
                                  ucp_ep_close_nbx(proc.ep, &param),
                                  progress_both));
    }
    for (ucp_process &proc : procs) {
        ucp_worker_destroy(proc.worker);
        ucp_cleanup(proc.context);
    }
}


/* GPU 0 and GPU 2 of this machine do not reach each other: gpumemipc says
 * why (once) and the data moves another way, every byte right */
class ipc_ucp_unreachable : public ipc_ucp {
protected:
    /* Another driver's machine is its own: the case skips there */
    virtual void SetUp() {
        if (gpumem_test::driver_is_emu()) {
            m_topo.set("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                       "/hwloc-power8-minsky-4xP100-nvlink.xml");
        }
        ipc_ucp::SetUp();
    }

    virtual void TearDown() {
        m_topo.restore();
        ipc_ucp::TearDown();
    }

private:
    gpumem_test::scoped_env m_topo;
};

TEST_P(ipc_ucp_unreachable, tag_between_gpus_that_do_not_reach_is_staged) {
    const std::vector<size_t> sizes = {8, 100000, (4 << 20) + 3};
    uint64_t receiver_bytes, sender_bytes;
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);

    exchange(sizes, &receiver_bytes, &sender_bytes);
    EXPECT_EQ(0u, receiver_bytes + sender_bytes);
    EXPECT_EQ(1u, log.count({"GPU 0002:01:00.0 does not reach the memory of "
                             "GPU 000a:01:00.0", "another transport"}))
            << log.text();
}

INSTANTIATE_TEST_SUITE_P(
        tls, ipc_ucp_unreachable,
        testing::Values(ucp_setup{"posix,cma,gpumemcpy,gpumemipc", 0, 2}),
        setup_name);


/*
 * ucp_put and ucp_get between device memory of two processes. UCX 1.13
 * emulates RMA with the CPU where no transport takes it (rma_sw.c), which
 * faults on device memory: gpumemipc must be UCP's RMA transport, for every
 * size of put (short, and zero-copy past the threshold) and get, from
 * device and host buffers, at any offset.
 */
class ipc_ucp_rma : public ipc_ucp {
protected:
    /* Of the peer's buffer, at its device addresses */
    static const size_t remote_size = (4 << 20) + 64;

    /* The child maps @a remote_size bytes of device memory on its GPU for
     * UCP and serves checks of them; @a body runs in the parent, with an
     * endpoint, the key and the address of that memory */
    void run(const std::function<void(ucp_process&, ucp_rkey_h, uint64_t,
                                      channel&)> &body);
};

void ipc_ucp_rma::run(const std::function<void(ucp_process&, ucp_rkey_h,
                                               uint64_t, channel&)> &body)
{
    const ucp_setup setup = GetParam();
    ucp_mem_map_params_t map_params;
    ucp_process ucp;
    ucp_rkey_h rkey;
    std::string packed;
    uint64_t remote;
    channel chan;
    pid_t pid;

    pid = fork_child([&]() {
        void *rkey_buffer, *buffer;
        ucp_process target;
        size_t rkey_size;
        ucp_mem_h memh;

        chan.child_side();
        setenv("UCX_GPUMEM_ALLOC_GPU",
               std::to_string(setup.sender_gpu).c_str(), 1);
        target.init(setup.tls, UCP_FEATURE_RMA);
        chan.send(target.address());
        target.connect(chan.recv());

        buffer = device_alloc(remote_size, setup.sender_gpu);
        ASSERT_TRUE(buffer != NULL);
        to_device(buffer, pattern(remote_size, 1));
        map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        map_params.address    = buffer;
        map_params.length     = remote_size;
        ASSERT_EQ(UCS_OK, ucp_mem_map(target.context, &map_params, &memh));
        ASSERT_EQ(UCS_OK, ucp_rkey_pack(target.context, memh, &rkey_buffer,
                                        &rkey_size));
        chan.send(std::string((const char*)rkey_buffer, rkey_size));
        chan.send(std::to_string((uintptr_t)buffer));
        ucp_rkey_buffer_release(rkey_buffer);

        /* "check OFFSET SIZE SEED": whether those bytes of the buffer are
         * the pattern, as the target reads them itself */
        for (;;) {
            std::string request;
            size_t offset, size;
            unsigned seed;

            /* The peer's wireup may need this worker meanwhile */
            while (!chan.pending()) {
                ucp_worker_progress(target.worker);
            }
            request = chan.recv();

            if (sscanf(request.c_str(), "check %zu %zu %u", &offset, &size,
                       &seed) != 3) {
                break;
            }
            chan.send((from_device((char*)buffer + offset, size) ==
                       pattern(size, seed)) ? "same" : "differ");
        }

        EXPECT_EQ(UCS_OK, ucp_mem_unmap(target.context, memh));
        target.close(chan);
        device_free(buffer);
    });

    setenv("UCX_GPUMEM_ALLOC_GPU", std::to_string(setup.receiver_gpu).c_str(),
           1);
    ucp.init(setup.tls, UCP_FEATURE_RMA);
    unsetenv("UCX_GPUMEM_ALLOC_GPU");
    chan.send(ucp.address());
    ucp.connect(chan.recv());
    packed = chan.recv();
    remote = std::stoull(chan.recv());
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ucp.ep, packed.data(), &rkey));

    body(ucp, rkey, remote, chan);

    ucp_rkey_destroy(rkey);
    chan.send("done");
    ucp.close(chan);
    wait_child(pid);
}

/* Sizes on both sides of put_short's limit and the zero-copy threshold,
 * at offsets of no alignment */
static const std::vector<size_t> rma_sizes = {1, 8, 127, 128, 1000, 16383,
                                              16384, 16385, 100000,
                                              (4 << 20) + 3};

TEST_P(ipc_ucp_rma, put_and_get_of_device_memory_move_every_byte) {
    const size_t local_offset  = 5;
    const size_t remote_offset = 3;
    uct_gpumem_ipc_stats_t before = stats();
    uint64_t total                = 0;

    run([&](ucp_process &ucp, ucp_rkey_h rkey, uint64_t remote,
            channel &chan) {
        for (size_t size : rma_sizes) {
            const unsigned seed = (unsigned)size * 7;
            char *src = (char*)device_alloc(size + local_offset,
                                            GetParam().receiver_gpu);
            char *dst = (char*)device_alloc(size + local_offset,
                                            GetParam().receiver_gpu);
            ucp_request_param_t param;

            SCOPED_TRACE(std::to_string(size) + " bytes");
            ASSERT_TRUE((src != NULL) && (dst != NULL));
            to_device(src + local_offset, pattern(size, seed));
            to_device(dst, std::string(size + local_offset, '\0'));

            param.op_attr_mask = 0;
            EXPECT_EQ(UCS_OK, ucp.wait(ucp_put_nbx(ucp.ep, src + local_offset,
                                                   size,
                                                   remote + remote_offset,
                                                   rkey, &param)));
            EXPECT_EQ(UCS_OK, ucp.flush());
            chan.send("check " + std::to_string(remote_offset) + " " +
                      std::to_string(size) + " " + std::to_string(seed));
            EXPECT_EQ("same", chan.recv()) << "put";

            EXPECT_EQ(UCS_OK, ucp.wait(ucp_get_nbx(ucp.ep, dst + local_offset,
                                                   size,
                                                   remote + remote_offset,
                                                   rkey, &param)));
            EXPECT_EQ(UCS_OK, ucp.flush());
            EXPECT_TRUE(pattern(size, seed) ==
                        from_device(dst + local_offset, size)) << "get";
            EXPECT_EQ(std::string(local_offset, '\0'),
                      from_device(dst, local_offset)) << "get wrote before "
                                                         "its buffer";
            total += 2 * size;
            device_free(src);
            device_free(dst);
        }
    });

    EXPECT_EQ(total, stats().bytes - before.bytes)
            << "not every byte went through gpumemipc";
    /* What applications read of it (gpumem.h), from the plugin UCX uses */
    auto ipc_bytes = (decltype(&gpumem_ipc_bytes))gpumem_test::plugin_symbol(
            "gpumem_ipc_bytes");
    unsigned long long api_bytes = 0;
    ASSERT_TRUE(ipc_bytes != NULL);
    EXPECT_EQ(0, ipc_bytes(&api_bytes));
    EXPECT_EQ(stats().bytes, api_bytes);
}

TEST_P(ipc_ucp_rma, put_and_get_between_host_buffers_and_device_memory) {
    uct_gpumem_ipc_stats_t before = stats();
    uint64_t total                = 0;

    run([&](ucp_process &ucp, ucp_rkey_h rkey, uint64_t remote,
            channel &chan) {
        for (size_t size : rma_sizes) {
            const unsigned seed = (unsigned)size * 11;
            std::string src     = pattern(size, seed);
            std::string dst(size, '\0');
            ucp_request_param_t param;

            SCOPED_TRACE(std::to_string(size) + " bytes");
            param.op_attr_mask = 0;
            EXPECT_EQ(UCS_OK, ucp.wait(ucp_put_nbx(ucp.ep, &src[0], size,
                                                   remote, rkey, &param)));
            EXPECT_EQ(UCS_OK, ucp.flush());
            chan.send("check 0 " + std::to_string(size) + " " +
                      std::to_string(seed));
            EXPECT_EQ("same", chan.recv()) << "put";

            EXPECT_EQ(UCS_OK, ucp.wait(ucp_get_nbx(ucp.ep, &dst[0], size,
                                                   remote, rkey, &param)));
            EXPECT_EQ(UCS_OK, ucp.flush());
            EXPECT_TRUE(src == dst) << "get";
            total += 2 * size;
        }
    });

    EXPECT_EQ(total, stats().bytes - before.bytes)
            << "not every byte went through gpumemipc";
}

INSTANTIATE_TEST_SUITE_P(
        tls, ipc_ucp_rma,
        testing::Values(ucp_setup{"posix,gpumemcpy,gpumemipc", 0, 1},
                        ucp_setup{"sm,gpumemcpy,gpumemipc", 0, 1},
                        ucp_setup{"tcp,gpumemcpy,gpumemipc", 0, 0}),
        setup_name);


/* GPU 0 and GPU 2 of this machine do not reach each other: no gpumemipc,
 * and UCX 1.13 emulates RMA with active messages (rma_sw.c). With its
 * default protocols the emulation copies with the CPU on both sides, which
 * faults on device memory; with UCX_PROTO_ENABLE=y the memory type travels
 * with the request and device memory is copied by gpumemcpy. */
class ipc_ucp_rma_unreachable : public ipc_ucp_rma {
protected:
    /* Another driver's machine is its own: the case skips there */
    virtual void SetUp() {
        if (gpumem_test::driver_is_emu()) {
            m_topo.set("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                       "/hwloc-power8-minsky-4xP100-nvlink.xml");
        }
        setenv("UCX_PROTO_ENABLE", "y", 1);
        ipc_ucp_rma::SetUp();
    }

    virtual void TearDown() {
        unsetenv("UCX_PROTO_ENABLE");
        m_topo.restore();
        ipc_ucp_rma::TearDown();
    }

private:
    gpumem_test::scoped_env m_topo;
};

TEST_P(ipc_ucp_rma_unreachable, emulated_put_and_get_with_the_new_protocols) {
    uct_gpumem_ipc_stats_t before = stats();

    run([&](ucp_process &ucp, ucp_rkey_h rkey, uint64_t remote,
            channel &chan) {
        for (size_t size : {(size_t)8, (size_t)100000}) {
            const unsigned seed = (unsigned)size * 13;
            char *src = (char*)device_alloc(size, GetParam().receiver_gpu);
            char *dst = (char*)device_alloc(size, GetParam().receiver_gpu);
            std::string host(size, '\0');
            ucp_request_param_t param;

            SCOPED_TRACE(std::to_string(size) + " bytes");
            ASSERT_TRUE((src != NULL) && (dst != NULL));
            to_device(src, pattern(size, seed));
            param.op_attr_mask = 0;
            EXPECT_EQ(UCS_OK, ucp.wait(ucp_put_nbx(ucp.ep, src, size,
                                                   remote + 3, rkey,
                                                   &param)));
            EXPECT_EQ(UCS_OK, ucp.flush());
            chan.send("check 3 " + std::to_string(size) + " " +
                      std::to_string(seed));
            EXPECT_EQ("same", chan.recv()) << "put";

            EXPECT_EQ(UCS_OK, ucp.wait(ucp_get_nbx(ucp.ep, dst, size,
                                                   remote + 3, rkey,
                                                   &param)));
            EXPECT_EQ(UCS_OK, ucp.wait(ucp_get_nbx(ucp.ep, &host[0], size,
                                                   remote + 3, rkey,
                                                   &param)));
            EXPECT_EQ(UCS_OK, ucp.flush());
            EXPECT_TRUE(pattern(size, seed) == from_device(dst, size))
                    << "get into device memory";
            EXPECT_TRUE(pattern(size, seed) == host) << "get into host";
            device_free(src);
            device_free(dst);
        }
    });

    EXPECT_EQ(before.bytes, stats().bytes) << "gpumemipc moved bytes";
}

INSTANTIATE_TEST_SUITE_P(
        tls, ipc_ucp_rma_unreachable,
        testing::Values(ucp_setup{"posix,gpumemcpy,gpumemipc", 0, 2}),
        setup_name);
