/**
 * gpumem tests: UCP on the copy transport: device memory that ucp_mem_map
 * allocates, and tag messages of device buffers, eager and rendezvous,
 * between two workers and from a worker to itself, staged by the copy
 * transport as UCP's memory-type transport.
 *
 * See file LICENSE for terms.
 */

#include "copy_test.h"

#include <common/log_capture.h>
#include <common/watchdog.h>

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>


namespace {

/* Where a buffer of a message is */
enum buffer_kind {
    HOST,
    DEVICE,         /* gpumem_device_malloc */
    DEVICE_MAPPED   /* ucp_mem_map(UCP_MEM_MAP_ALLOCATE, cuda) */
};

const char *buffer_kind_name(buffer_kind kind)
{
    return (kind == HOST) ? "host" : (kind == DEVICE) ? "device" :
                                                        "mapped device";
}

}


/**
 * The parameter is UCX_TLS: our copy transport with each kind of
 * transport that carries UCP's active messages between two workers of one
 * process, and "self" for a worker's messages to itself.
 */
class copy_ucp : public copy_test,
                 public testing::WithParamInterface<std::string> {
protected:
    virtual void TearDown() {
        for (ucp_ep_h ep : m_eps) {
            close_ep(ep);
        }
        for (ucp_worker_h worker : m_workers) {
            ucp_worker_destroy(worker);
        }
        if (m_context != NULL) {
            ucp_cleanup(m_context);
        }
        copy_test::TearDown();
    }

    void init(const std::string &tls, const char *rndv_thresh = NULL) {
        ucp_params_t params;
        ucp_config_t *config;

        ASSERT_EQ(UCS_OK, ucp_config_read(NULL, NULL, &config));
        EXPECT_EQ(UCS_OK, ucp_config_modify(config, "TLS", tls.c_str()));
        if (rndv_thresh != NULL) {
            EXPECT_EQ(UCS_OK, ucp_config_modify(config, "RNDV_THRESH",
                                                rndv_thresh));
        }

        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
        ASSERT_EQ(UCS_OK, ucp_init(&params, config, &m_context));
        ucp_config_release(config);
    }

    ucp_worker_h create_worker() {
        ucp_worker_params_t params;
        ucp_worker_h worker = NULL;

        params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        params.thread_mode = UCS_THREAD_MODE_SINGLE;
        EXPECT_EQ(UCS_OK, ucp_worker_create(m_context, &params, &worker));
        if (worker != NULL) {
            m_workers.push_back(worker);
        }
        return worker;
    }

    ucp_ep_h connect(ucp_worker_h from, ucp_worker_h to) {
        ucp_address_t *address;
        size_t address_length;
        ucp_ep_params_t params;
        ucp_ep_h ep = NULL;

        EXPECT_EQ(UCS_OK, ucp_worker_get_address(to, &address,
                                                 &address_length));
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = address;
        EXPECT_EQ(UCS_OK, ucp_ep_create(from, &params, &ep));
        ucp_worker_release_address(to, address);
        if (ep != NULL) {
            m_eps.push_back(ep);
        }
        return ep;
    }

    /* A sender worker with an endpoint to a receiver worker */
    void connect_two_workers(ucp_ep_h *ep_p, ucp_worker_h *receiver_p) {
        ucp_worker_h sender = create_worker();

        *receiver_p = create_worker();
        ASSERT_TRUE((sender != NULL) && (*receiver_p != NULL));
        *ep_p = connect(sender, *receiver_p);
        ASSERT_TRUE(*ep_p != NULL);
    }

    void progress() {
        for (ucp_worker_h worker : m_workers) {
            ucp_worker_progress(worker);
        }
    }

    /* The status of @a request once complete, progressing every worker */
    ucs_status_t wait(ucs_status_ptr_t request) {
        return gpumem_test::ucp_wait(request, [this]() { progress(); });
    }

    void close_ep(ucp_ep_h ep) {
        ucp_request_param_t param;

        /* Flushed: wait() progresses both sides */
        param.op_attr_mask = 0;
        EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(ep, &param)));
    }

    void *alloc(buffer_kind kind, size_t size, std::string &host,
                ucp_mem_h *memh_p) {
        ucp_mem_map_params_t params;
        ucp_mem_attr_t attr;

        *memh_p = NULL;
        switch (kind) {
        case HOST:
            host.assign(size, '\0');
            return &host[0];
        case DEVICE:
            return device_alloc(size);
        case DEVICE_MAPPED:
            params.field_mask  = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                 UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                 UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                                 UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
            params.address     = NULL;
            params.length      = size;
            params.flags       = UCP_MEM_MAP_ALLOCATE;
            params.memory_type = UCS_MEMORY_TYPE_CUDA;
            EXPECT_EQ(UCS_OK, ucp_mem_map(m_context, &params, memh_p));
            if (*memh_p == NULL) {
                return NULL;
            }
            attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
            EXPECT_EQ(UCS_OK, ucp_mem_query(*memh_p, &attr));
            return attr.address;
        }
        return NULL;
    }

    void release(buffer_kind kind, void *ptr, ucp_mem_h memh) {
        if (kind == DEVICE) {
            device_free(ptr);
        } else if (kind == DEVICE_MAPPED) {
            EXPECT_EQ(UCS_OK, ucp_mem_unmap(m_context, memh));
        }
    }

    /* A message of @a size bytes from @a ep's worker to @a receiver, from a
     * buffer of kind @a src_kind to one of @a dst_kind; the bytes are
     * checked */
    void send_recv(ucp_ep_h ep, ucp_worker_h receiver, buffer_kind src_kind,
                   buffer_kind dst_kind, size_t size);

    /* Device to device, host to device and device to host */
    void send_recv_device_both_ways(ucp_ep_h ep, ucp_worker_h receiver,
                                    size_t size) {
        send_recv(ep, receiver, DEVICE, DEVICE, size);
        send_recv(ep, receiver, HOST, DEVICE, size);
        send_recv(ep, receiver, DEVICE, HOST, size);
    }

    ucp_context_h             m_context = NULL;
    std::vector<ucp_worker_h> m_workers;
    std::vector<ucp_ep_h>     m_eps;
};


void copy_ucp::send_recv(ucp_ep_h ep, ucp_worker_h receiver,
                         buffer_kind src_kind, buffer_kind dst_kind,
                         size_t size)
{
    const ucp_tag_t tag  = 0x6770756d656d;
    const std::string in = pattern(size, (unsigned)size);
    std::string src_host, dst_host, out;
    ucp_request_param_t param;
    ucs_status_ptr_t send, recv;
    ucp_mem_h src_memh, dst_memh;
    void *src, *dst;

    SCOPED_TRACE(std::to_string(size) + " bytes from " +
                 buffer_kind_name(src_kind) + " to " +
                 buffer_kind_name(dst_kind) + " memory");
    src = alloc(src_kind, size, src_host, &src_memh);
    dst = alloc(dst_kind, size, dst_host, &dst_memh);
    ASSERT_TRUE((src != NULL) && (dst != NULL));
    if (src_kind == HOST) {
        memcpy(src, in.data(), size);
    } else {
        to_device(src, in);
    }

    param.op_attr_mask = 0;
    recv = ucp_tag_recv_nbx(receiver, dst, size, tag, (ucp_tag_t)-1, &param);
    send = ucp_tag_send_nbx(ep, src, size, tag, &param);
    EXPECT_EQ(UCS_OK, wait(send));
    EXPECT_EQ(UCS_OK, wait(recv));

    out = (dst_kind == HOST) ? dst_host : from_device(dst, size);
    EXPECT_TRUE(in == out) << "bytes differ";

    release(src_kind, src, src_memh);
    release(dst_kind, dst, dst_memh);
}


/* Before any device memory was seen: UCX's memory type cache, created at
 * its first lookup, learns of the allocation all the same */
TEST_F(copy_ucp, mem_map_allocates_emu_device_memory) {
    const std::string in = pattern(100000, 1);
    std::string unused;
    ucp_mem_attr_t attr;
    void *rkey_buffer;
    size_t rkey_size;
    ucp_mem_h memh;
    void *address;

    init("self,gpumemcpy");
    address = alloc(DEVICE_MAPPED, in.size(), unused, &memh);
    ASSERT_TRUE(address != NULL);

    attr.field_mask = UCP_MEM_ATTR_FIELD_LENGTH | UCP_MEM_ATTR_FIELD_MEM_TYPE;
    ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, attr.mem_type);
    EXPECT_LE(in.size(), attr.length);
    EXPECT_TRUE(is_device(address)) << address;

    to_device(address, in);
    EXPECT_TRUE(in == from_device(address, in.size()));

    /* Its remote key packs: the memory domain packs nothing for it */
    ASSERT_EQ(UCS_OK, ucp_rkey_pack(m_context, memh, &rkey_buffer,
                                    &rkey_size));
    ucp_rkey_buffer_release(rkey_buffer);
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(m_context, memh));
}

/* Eager: UCP packs and unpacks device buffers through the copy transport's
 * short operations on its memory-type endpoint; RNDV_THRESH=inf keeps even
 * the large, many-fragment, message eager */
TEST_P(copy_ucp, tag_eager_moves_device_buffers_between_two_workers) {
    const size_t sizes[] = {8, 1000, 5000, 100000};
    ucp_worker_h receiver;
    ucp_ep_h ep;

    init(GetParam(), "inf");
    connect_two_workers(&ep, &receiver);

    for (size_t size : sizes) {
        send_recv_device_both_ways(ep, receiver, size);
    }
}

/* Rendezvous: the device buffers are staged through host fragments by the
 * copy transport's zero-copy operations (pipeline) or packed per fragment */
TEST_P(copy_ucp, tag_rendezvous_moves_device_buffers_between_two_workers) {
    const size_t sizes[] = {10000, (4 << 20) + 3};
    ucp_worker_h receiver;
    ucp_ep_h ep;

    init(GetParam(), "1k");
    connect_two_workers(&ep, &receiver);

    for (size_t size : sizes) {
        send_recv_device_both_ways(ep, receiver, size);
    }
    send_recv(ep, receiver, DEVICE_MAPPED, DEVICE_MAPPED, 4 << 20);
}

/* With the default thresholds: what UCP chooses by the estimates */
TEST_P(copy_ucp, tag_4MiB_of_mapped_device_memory_with_default_thresholds) {
    ucp_worker_h receiver;
    ucp_ep_h ep;

    init(GetParam());
    connect_two_workers(&ep, &receiver);

    send_recv(ep, receiver, DEVICE_MAPPED, DEVICE_MAPPED, 4 << 20);
    send_recv(ep, receiver, DEVICE, DEVICE, 64);
}

/* To itself, a worker reaches its own copy interface: rendezvous reads the
 * device buffer with the copy transport directly, zero-copy */
TEST_F(copy_ucp, tag_to_self_moves_device_buffers) {
    const size_t sizes[] = {8, 5000, 100000, 4 << 20};
    ucp_worker_h worker;
    ucp_ep_h ep;

    init("self,gpumemcpy");
    worker = create_worker();
    ASSERT_TRUE(worker != NULL);
    ep = connect(worker, worker);
    ASSERT_TRUE(ep != NULL);

    for (size_t size : sizes) {
        send_recv_device_both_ways(ep, worker, size);
    }
}

/* gpumem_device_free gives back only what gpumem_device_malloc gave */
TEST_F(copy_ucp, device_free_refuses_memory_that_ucp_mem_map_gave) {
    auto free_call = (decltype(&gpumem_device_free))
                     gpumem_test::plugin_symbol("gpumem_device_free");
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::string in = pattern(10000, 4), unused;
    ucp_mem_h memh;
    void *address;

    init("self,gpumemcpy");
    address = alloc(DEVICE_MAPPED, in.size(), unused, &memh);
    ASSERT_TRUE(address != NULL);
    ASSERT_TRUE(free_call != NULL);

    EXPECT_EQ(UCS_ERR_INVALID_ADDR, free_call(address));
    log.expect("which no gpumem_device_malloc gave");

    /* Still mapped, still UCP's */
    to_device(address, in);
    EXPECT_TRUE(in == from_device(address, in.size()));
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(m_context, memh));
}

/* The device memory calls in threads of their own while UCP maps and
 * unmaps device memory of the same GPUs: every byte checked */
TEST_F(copy_ucp, device_calls_and_ucp_mem_map_in_other_threads) {
    const unsigned threads = 4, iterations = 100;
    gpumem_test::watchdog watchdog("gpumem.h and ucp_mem_map at once", 120);
    std::atomic<unsigned> failures(0);
    std::atomic<bool> done(false);
    std::vector<std::thread> callers;
    std::string unused;
    ucp_mem_h memh;
    void *address;

    init("self,gpumemcpy");
    for (unsigned t = 0; t < threads; ++t) {
        callers.emplace_back([&, t]() {
            for (unsigned i = 0; i < iterations; ++i) {
                std::string in = pattern(1000 + (i * 37), t * 1000 + i);
                void *dev      = device_alloc(in.size(), (t + i) % 2);

                if (dev == NULL) {
                    ++failures;
                    continue;
                }
                to_device(dev, in);
                failures += (from_device(dev, in.size()) != in);
                device_free(dev);
            }
        });
    }

    /* This thread is the only one in UCP */
    for (unsigned i = 0; !done; ++i) {
        std::string in = pattern(5000 + i, 77 + i);

        address = alloc(DEVICE_MAPPED, in.size(), unused, &memh);
        if (address == NULL) {
            ++failures;
            break;
        }
        to_device(address, in);
        failures += (from_device(address, in.size()) != in);
        EXPECT_EQ(UCS_OK, ucp_mem_unmap(m_context, memh));
        done = (i >= iterations);
    }
    for (std::thread &caller : callers) {
        caller.join();
    }
    EXPECT_EQ(0u, failures.load());
}

INSTANTIATE_TEST_SUITE_P(tls, copy_ucp,
                         testing::Values("tcp,gpumemcpy",
                                         "posix,cma,gpumemcpy"));
