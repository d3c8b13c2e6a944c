/**
 * gpumem tests: the copy transport through the public UCT API: its resource,
 * interface and endpoint, bytes between host and device memory by every
 * operation, asynchronous completion, ordering, flush and fence.
 *
 * See file LICENSE for terms.
 */

#include "copy_test.h"

#include <common/log_capture.h>

extern "C" {
#include <uct/api/v2/uct_v2.h>
#include <ucs/async/async_fwd.h>
#include <ucs/sys/math.h>
}

#include <climits>
#include <poll.h>
#include <sys/mman.h>
#include <cstring>
#include <vector>


#define COPY_TL   "gpumemcpy"
#define COPY_DEV  "gpumem"


namespace {

/* A completion that counts its calls and records where it came in order */
struct counted_comp {
    uct_completion_t uct;
    int              id;
    int              calls;
    ucs_status_t     status;
    std::vector<int> *order;

    explicit counted_comp(int id_ = 0, std::vector<int> *order_ = NULL) :
        id(id_), calls(0), status(UCS_INPROGRESS), order(order_) {
        uct.func   = done;
        uct.count  = 1;
        uct.status = UCS_OK;
    }

    static void done(uct_completion_t *self) {
        counted_comp *comp = ucs_container_of(self, counted_comp, uct);

        ++comp->calls;
        comp->status = self->status;
        if (comp->order != NULL) {
            comp->order->push_back(comp->id);
        }
    }
};

/* A completion that destroys an endpoint when it is called */
struct destroying_comp : counted_comp {
    uct_ep_h ep;

    explicit destroying_comp(uct_ep_h ep_) : ep(ep_) {
        uct.func = destroy;
    }

    static void destroy(uct_completion_t *self) {
        destroying_comp *comp = ucs_container_of(self, destroying_comp, uct);

        counted_comp::done(self);
        uct_ep_destroy(comp->ep);
        comp->ep = NULL;
    }
};

struct bcopy_arg {
    const char *src;
    char       *dst;
    size_t     length;
};

size_t pack_bytes(void *dest, void *arg)
{
    bcopy_arg *bcopy = (bcopy_arg*)arg;

    memcpy(dest, bcopy->src, bcopy->length);
    return bcopy->length;
}

void unpack_bytes(void *arg, const void *data, size_t length)
{
    bcopy_arg *bcopy = (bcopy_arg*)arg;

    memcpy(bcopy->dst, data, length);
}

enum copy_op {
    PUT_SHORT, GET_SHORT, PUT_BCOPY, GET_BCOPY, PUT_ZCOPY, GET_ZCOPY
};

const char *copy_op_name(copy_op op)
{
    static const char *names[] = {"put_short", "get_short", "put_bcopy",
                                  "get_bcopy", "put_zcopy", "get_zcopy"};
    return names[op];
}

}


class copy_uct : public copy_test {
protected:
    virtual void SetUp() {
        copy_test::SetUp();
        if (HasFatalFailure()) {
            return;
        }

        m_component = gpumem_test::find_component("gpumem");
        ASSERT_TRUE(m_component != NULL);
        ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL,
                                             &m_md_config));
        ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", m_md_config,
                                      &m_md));
        ASSERT_EQ(UCS_OK, ucs_async_context_create(
                                  UCS_ASYNC_MODE_THREAD_SPINLOCK, &m_async));
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker));
    }

    virtual void TearDown() {
        if (m_ep != NULL) {
            uct_ep_destroy(m_ep);
        }
        for (uct_iface_h iface : m_ifaces) {
            uct_iface_close(iface);
        }
        if (m_worker != NULL) {
            uct_worker_destroy(m_worker);
        }
        if (m_async != NULL) {
            ucs_async_context_destroy(m_async);
        }
        if (m_md != NULL) {
            uct_md_close(m_md);
        }
        if (m_md_config != NULL) {
            uct_config_release(m_md_config);
        }
        copy_test::TearDown();
    }

    unsigned count_tl_resources() {
        uct_tl_resource_desc_t *resources;
        unsigned i, count, found = 0;

        EXPECT_EQ(UCS_OK, uct_md_query_tl_resources(m_md, &resources,
                                                    &count));
        for (i = 0; i < count; ++i) {
            found += !strcmp(resources[i].tl_name, COPY_TL);
        }
        uct_release_tl_resource_list(resources);
        return found;
    }

    ucs_status_t try_open_iface(const char *dev_name, uct_iface_h *iface_p) {
        ucs_status_t status;

        status = gpumem_test::open_device_iface(m_md, m_worker, COPY_TL,
                                                dev_name, iface_p);
        if (status == UCS_OK) {
            m_ifaces.push_back(*iface_p);
            uct_iface_progress_enable(*iface_p, UCT_PROGRESS_SEND |
                                                UCT_PROGRESS_RECV);
        }
        return status;
    }

    uct_iface_h open_iface() {
        uct_iface_h iface = NULL;

        EXPECT_EQ(UCS_OK, try_open_iface(COPY_DEV, &iface));
        return iface;
    }

    std::vector<char> address_of(uct_iface_h iface) {
        uct_iface_attr_t attr;

        EXPECT_EQ(UCS_OK, uct_iface_query(iface, &attr));
        std::vector<char> address(attr.iface_addr_len);
        EXPECT_EQ(UCS_OK, uct_iface_get_address(
                                  iface, (uct_iface_addr_t*)address.data()));
        return address;
    }

    ucs_status_t try_connect(uct_iface_h iface, uct_iface_h to,
                             uct_ep_h *ep_p) {
        std::vector<char> address = address_of(to);
        uct_ep_params_t params;

        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = iface;
        params.dev_addr   = NULL;
        params.iface_addr = (const uct_iface_addr_t*)address.data();
        return uct_ep_create(&params, ep_p);
    }

    /* The test's interface and its endpoint to itself */
    void connect() {
        m_iface = open_iface();
        ASSERT_TRUE(m_iface != NULL);
        ASSERT_EQ(UCS_OK, try_connect(m_iface, m_iface, &m_ep));
    }

    ucs_status_t zcopy(bool put, void *local, size_t length, void *remote,
                       counted_comp *comp, uct_ep_h ep = NULL) {
        uct_iov_t iov;

        iov.buffer = local;
        iov.length = length;
        iov.memh   = UCT_MEM_HANDLE_NULL;
        iov.stride = 0;
        iov.count  = 1;
        ep         = (ep == NULL) ? m_ep : ep;
        return put ? uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)remote,
                                      UCT_INVALID_RKEY, &comp->uct) :
                     uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)remote,
                                      UCT_INVALID_RKEY, &comp->uct);
    }

    /* Progress until @a comp is called, or give up after a long while */
    void wait(const counted_comp &comp) {
        for (unsigned i = 0; (comp.calls == 0) && (i < 10000000); ++i) {
            uct_worker_progress(m_worker);
        }
        ASSERT_EQ(1, comp.calls) << "completion " << comp.id << " not called";
    }

    /* Posts @a op with @a status; UCS_INPROGRESS means "wait for it" */
    void finish(ucs_status_t status, counted_comp &comp) {
        if (status == UCS_INPROGRESS) {
            wait(comp);
            status = comp.status;
        }
        EXPECT_EQ(UCS_OK, status);
    }

    /* One operation between a local and a remote buffer, each in host or
     * device memory, @a offset bytes into them; the bytes are checked */
    void transfer(copy_op op, bool local_dev, bool remote_dev, size_t size,
                  size_t offset);

    uct_component_h          m_component = NULL;
    uct_md_config_t          *m_md_config = NULL;
    uct_md_h                 m_md         = NULL;
    ucs_async_context_t      *m_async     = NULL;
    uct_worker_h             m_worker     = NULL;
    std::vector<uct_iface_h> m_ifaces;
    uct_iface_h              m_iface      = NULL;
    uct_ep_h                 m_ep         = NULL;
};


void copy_uct::transfer(copy_op op, bool local_dev, bool remote_dev,
                        size_t size, size_t offset)
{
    const bool put        = (op == PUT_SHORT) || (op == PUT_BCOPY) ||
                            (op == PUT_ZCOPY);
    const std::string in  = pattern(size, (unsigned)(size + op));
    std::string local_host(size + offset, '\0');
    std::string remote_host(size + offset, '\0');
    char *local_base      = local_dev ?
                            (char*)device_alloc(size + offset) :
                            &local_host[0];
    char *remote_base     = remote_dev ?
                            (char*)device_alloc(size + offset) :
                            &remote_host[0];
    char *local           = local_base + offset;
    char *remote          = remote_base + offset;
    char *src             = put ? local : remote;
    char *dst             = put ? remote : local;
    bool src_dev          = put ? local_dev : remote_dev;
    bool dst_dev          = put ? remote_dev : local_dev;
    counted_comp comp;
    bcopy_arg bcopy;
    ssize_t packed;
    std::string out;

    SCOPED_TRACE(std::string(copy_op_name(op)) + " of " +
                 std::to_string(size) + " bytes at offset " +
                 std::to_string(offset) + ", local " +
                 (local_dev ? "device" : "host") + ", remote " +
                 (remote_dev ? "device" : "host"));
    ASSERT_TRUE((local_base != NULL) && (remote_base != NULL));

    if (src_dev) {
        to_device(src, in);
    } else {
        memcpy(src, in.data(), size);
    }

    bcopy.src    = in.data();
    bcopy.dst    = local;
    bcopy.length = size;
    switch (op) {
    case PUT_SHORT:
        EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, local, size,
                                           (uintptr_t)remote,
                                           UCT_INVALID_RKEY));
        break;
    case GET_SHORT:
        EXPECT_EQ(UCS_OK, uct_ep_get_short(m_ep, local, size,
                                           (uintptr_t)remote,
                                           UCT_INVALID_RKEY));
        break;
    case PUT_BCOPY:
        packed = uct_ep_put_bcopy(m_ep, pack_bytes, &bcopy,
                                  (uintptr_t)remote, UCT_INVALID_RKEY);
        EXPECT_EQ((ssize_t)size, packed);
        break;
    case GET_BCOPY:
        EXPECT_EQ(UCS_OK, uct_ep_get_bcopy(m_ep, unpack_bytes, &bcopy, size,
                                           (uintptr_t)remote,
                                           UCT_INVALID_RKEY, &comp.uct));
        break;
    case PUT_ZCOPY:
    case GET_ZCOPY:
        finish(zcopy(put, local, size, remote, &comp), comp);
        break;
    }

    out = dst_dev ? from_device(dst, size) : std::string(dst, size);
    EXPECT_TRUE(in == out) << "bytes differ";

    if (local_dev) {
        device_free(local_base);
    }
    if (remote_dev) {
        device_free(remote_base);
    }
}


TEST_F(copy_uct, tl_resource_is_one_accelerator_device) {
    uct_tl_resource_desc_t *resources;
    unsigned i, count, found = 0;

    ASSERT_EQ(UCS_OK, uct_md_query_tl_resources(m_md, &resources, &count));
    for (i = 0; i < count; ++i) {
        if (!strcmp(resources[i].tl_name, COPY_TL)) {
            ++found;
            EXPECT_STREQ(COPY_DEV, resources[i].dev_name);
            EXPECT_EQ(UCT_DEVICE_TYPE_ACC, resources[i].dev_type);
            /* One device for all GPUs: it sits on none of them */
            EXPECT_EQ(UCS_SYS_DEVICE_ID_UNKNOWN, resources[i].sys_device);
        }
    }
    uct_release_tl_resource_list(resources);
    EXPECT_EQ(1u, found);
}

/* The transport comes and goes with the component, once each time: in the
 * component's transports and on UCX's configuration list (ucx_info -c) */
TEST_F(copy_uct, registration_follows_the_component) {
    void *reg   = gpumem_test::plugin_symbol(
            "uct_gpumem_components_register");
    void *unreg = gpumem_test::plugin_symbol(
            "uct_gpumem_components_unregister");

    ASSERT_TRUE((reg != NULL) && (unreg != NULL));
    for (int i = 0; i < 2; ++i) {
        ((void (*)(void))unreg)();
        EXPECT_EQ(0u, count_tl_resources());
        EXPECT_EQ(0u, gpumem_test::count_config_tables("GPUMEM_COPY_"));
        EXPECT_EQ(UCS_OK, ((ucs_status_t (*)(void))reg)());
        EXPECT_EQ(1u, count_tl_resources());
        EXPECT_EQ(1u, gpumem_test::count_config_tables("GPUMEM_COPY_"));
    }
}

TEST_F(copy_uct, iface_query_advertises_put_get_short_bcopy_zcopy_to_iface) {
    const uint64_t flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                           UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                           UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_SHORT |
                           UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                           UCT_IFACE_FLAG_PENDING;
    uct_iface_attr_t attr;
    uct_iface_h iface;

    iface = open_iface();
    ASSERT_TRUE(iface != NULL);
    ASSERT_EQ(UCS_OK, uct_iface_query(iface, &attr));
    EXPECT_EQ(flags, attr.cap.flags);
    EXPECT_EQ((uint64_t)(UCT_IFACE_FLAG_EVENT_SEND_COMP |
                         UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD),
              attr.cap.event_flags);
    EXPECT_EQ(8u, attr.iface_addr_len);
    EXPECT_EQ(0u, attr.device_addr_len);
    EXPECT_EQ(0u, attr.ep_addr_len);
    /* UCP's memory-type packing uses short operations of any length */
    EXPECT_EQ((size_t)UINT_MAX, attr.cap.put.max_short);
    EXPECT_EQ((size_t)UINT_MAX, attr.cap.get.max_short);
    EXPECT_EQ(8192u, attr.cap.put.max_bcopy);
    EXPECT_EQ(8192u, attr.cap.get.max_bcopy);
    EXPECT_EQ(SIZE_MAX, attr.cap.put.max_zcopy);
    EXPECT_EQ(SIZE_MAX, attr.cap.get.max_zcopy);
    EXPECT_EQ(1u, attr.cap.put.max_iov);
    EXPECT_EQ(0u, attr.cap.am.max_short);
    EXPECT_EQ(0u, attr.cap.am.max_bcopy);
    /* The default UCX_GPUMEM_COPY_OVERHEAD, and the emu driver's figures
     * for its engine (UCX_GPUMEM_COPY_BW and _LATENCY auto) */
    EXPECT_NEAR(50e-9, attr.overhead, 1e-12);
    EXPECT_DOUBLE_EQ(0.0, attr.latency.m);
    if (gpumem_test::driver_is_emu()) {
        EXPECT_DOUBLE_EQ(10000.0 * UCS_MBYTE, attr.bandwidth.dedicated);
        EXPECT_DOUBLE_EQ(0.0, attr.bandwidth.shared);
        EXPECT_NEAR(100e-9, attr.latency.c, 1e-12);
    }
}

/* A setting wins over the driver's figures */
TEST_F(copy_uct, estimates_are_the_settings_where_given) {
    uct_iface_attr_t attr;
    uct_iface_h iface;

    setenv("UCX_GPUMEM_COPY_BW", "2500MBs", 1);
    setenv("UCX_GPUMEM_COPY_LATENCY", "3us", 1);
    iface = open_iface();
    unsetenv("UCX_GPUMEM_COPY_BW");
    unsetenv("UCX_GPUMEM_COPY_LATENCY");
    ASSERT_TRUE(iface != NULL);

    ASSERT_EQ(UCS_OK, uct_iface_query(iface, &attr));
    /* Dedicated or shared, as the driver's engine is */
    EXPECT_DOUBLE_EQ(2500.0 * UCS_MBYTE,
                     attr.bandwidth.dedicated + attr.bandwidth.shared);
    EXPECT_NEAR(3e-6, attr.latency.c, 1e-9);
}

TEST_F(copy_uct, estimate_perf_matches_query) {
    uct_perf_attr_t perf;
    uct_iface_attr_t attr;
    uct_iface_h iface;

    iface = open_iface();
    ASSERT_TRUE(iface != NULL);
    ASSERT_EQ(UCS_OK, uct_iface_query(iface, &attr));
    perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                      UCT_PERF_ATTR_FIELD_BANDWIDTH |
                      UCT_PERF_ATTR_FIELD_LATENCY |
                      UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD |
                      UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS;
    perf.operation  = UCT_EP_OP_GET_ZCOPY;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(iface, &perf));
    EXPECT_DOUBLE_EQ(attr.bandwidth.dedicated, perf.bandwidth.dedicated);
    EXPECT_DOUBLE_EQ(attr.latency.c, perf.latency.c);
    EXPECT_DOUBLE_EQ(attr.overhead, perf.send_pre_overhead);
    EXPECT_EQ(SIZE_MAX, perf.max_inflight_eps);
}

TEST_F(copy_uct, iface_opens_only_on_its_device) {
    gpumem_test::log_capture log;
    uct_iface_h iface;

    EXPECT_EQ(UCS_ERR_NO_DEVICE, try_open_iface("cuda", &iface));
    EXPECT_EQ(1u, log.count({"opens on device", COPY_DEV}));
}

/* Remote addresses are the process's own: every interface of the process
 * reaches every other (UCX's p2p tests connect two), an address of another
 * process none */
TEST_F(copy_uct, ifaces_of_one_process_reach_each_other_only) {
    uct_iface_h first  = open_iface();
    uct_iface_h second = open_iface();
    std::vector<char> first_addr, second_addr, other_addr;
    uct_ep_params_t params = {};
    uct_ep_h ep;

    ASSERT_TRUE((first != NULL) && (second != NULL));
    first_addr  = address_of(first);
    second_addr = address_of(second);
    EXPECT_TRUE(uct_iface_is_reachable(
            first, NULL, (const uct_iface_addr_t*)first_addr.data()));
    EXPECT_TRUE(uct_iface_is_reachable(
            first, NULL, (const uct_iface_addr_t*)second_addr.data()));
    ASSERT_EQ(UCS_OK, try_connect(first, second, &ep));
    uct_ep_destroy(ep);

    /* Another process's interface */
    other_addr     = first_addr;
    other_addr[0] ^= 1;
    EXPECT_FALSE(uct_iface_is_reachable(
            first, NULL, (const uct_iface_addr_t*)other_addr.data()));

    gpumem_test::log_capture log;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = first;
    params.iface_addr = (const uct_iface_addr_t*)other_addr.data();
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));
    log.expect("reaches only the interfaces of its own process");
}

TEST_F(copy_uct, short_moves_bytes_between_host_and_device) {
    const size_t sizes[] = {1, 8, 1000, 8192, 8193, 100000, (1 << 20) + 5};

    connect();
    for (size_t size : sizes) {
        for (copy_op op : {PUT_SHORT, GET_SHORT}) {
            transfer(op, false, true, size, 3);
            transfer(op, true, false, size, 3);
            transfer(op, true, true, size, 3);
        }
    }
}

/* bcopy packs and unpacks on the CPU: the local side is host memory */
TEST_F(copy_uct, bcopy_moves_bytes_between_host_and_device) {
    const size_t sizes[] = {1, 8, 1000, 8192};

    connect();
    for (size_t size : sizes) {
        for (copy_op op : {PUT_BCOPY, GET_BCOPY}) {
            transfer(op, false, true, size, 5);
            transfer(op, false, false, size, 5);
        }
    }
}

TEST_F(copy_uct, bcopy_larger_than_its_segment_is_refused) {
    std::string big(8193, 'x'), out(8193, '\0');
    gpumem_test::log_capture log;
    bcopy_arg bcopy = {big.data(), &out[0], big.size()};
    void *dev;

    connect();
    dev = device_alloc(big.size());
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_bcopy(m_ep, unpack_bytes, &bcopy, big.size(),
                               (uintptr_t)dev, UCT_INVALID_RKEY, NULL));
    device_free(dev);
}

TEST_F(copy_uct, zcopy_moves_every_size_class_at_unaligned_offsets) {
    /* Inline (up to 8 KiB), asynchronous in one engine chunk and in many,
     * and a size across a large page */
    const size_t sizes[]   = {1, 7, 4099, 8192, 8193, 65536 + 3,
                              (1 << 20) + 5, 4 << 20};
    const size_t offsets[] = {0, 1, 4093};

    connect();
    for (size_t size : sizes) {
        for (size_t offset : offsets) {
            for (copy_op op : {PUT_ZCOPY, GET_ZCOPY}) {
                transfer(op, false, true, size, offset);
                transfer(op, true, false, size, offset);
                transfer(op, true, true, size, offset);
            }
        }
    }
}

TEST_F(copy_uct, zero_length_zcopy_is_done_at_once) {
    counted_comp comp;
    char host;

    connect();
    EXPECT_EQ(UCS_OK, zcopy(true, &host, 0, &host, &comp));
    EXPECT_EQ(0, comp.calls);
}

TEST_F(copy_uct, large_zcopy_completes_through_progress) {
    const size_t size     = 4 << 20;
    const std::string in  = pattern(size, 1);
    void *dev;
    counted_comp comp;

    connect();
    dev = device_alloc(size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev, &comp));
    EXPECT_EQ(0, comp.calls) << "completed before any progress";
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_iface, 0, NULL));

    wait(comp);
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep, 0, NULL));
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    EXPECT_TRUE(in == from_device(dev, size));
    device_free(dev);
}

/* As on one stream of a copy engine: a small copy posted behind a large one
 * waits for it, and completions come in the order of posting */
TEST_F(copy_uct, zcopy_completions_follow_posting_order) {
    const size_t large = 2 << 20;
    std::string in = pattern(large, 2), small(100, 's');
    std::vector<int> order;
    counted_comp first(1, &order), second(2, &order), third(3, &order);
    char *dev;

    connect();
    dev = (char*)device_alloc(2 * large);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, &in[0], large, dev, &first));
    EXPECT_EQ(UCS_INPROGRESS, zcopy(true, &small[0], small.size(),
                                    dev + large, &second));
    EXPECT_EQ(UCS_INPROGRESS, zcopy(true, &in[0], large, dev + large,
                                    &third));

    wait(third);
    ASSERT_EQ(3u, order.size());
    EXPECT_EQ(1, order[0]);
    EXPECT_EQ(2, order[1]);
    EXPECT_EQ(3, order[2]);
    /* The third wrote over the second */
    EXPECT_TRUE(in == from_device(dev + large, large));
    device_free(dev);
}

TEST_F(copy_uct, ep_flush_completes_after_posted_copies) {
    const size_t size    = 1 << 20;
    const std::string in = pattern(size, 3);
    std::vector<int> order;
    counted_comp copy(1, &order), flush(2, &order);
    void *dev;

    connect();
    dev = device_alloc(size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev,
                                    &copy));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, &flush.uct));
    wait(flush);
    ASSERT_EQ(2u, order.size());
    EXPECT_EQ(1, order[0]);
    EXPECT_EQ(UCS_OK, flush.status);
    EXPECT_TRUE(in == from_device(dev, size));
    device_free(dev);
}

TEST_F(copy_uct, iface_flush_waits_for_every_ep) {
    const size_t size = 1 << 20;
    std::string in    = pattern(size, 4);
    uct_ep_h second;
    counted_comp copy, flush;
    void *dev;

    connect();
    ASSERT_EQ(UCS_OK, try_connect(m_iface, m_iface, &second));
    dev = device_alloc(size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, &in[0], size, dev, &copy, second));
    /* The first ep posted nothing: it has nothing to flush */
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep, 0, NULL));
    ASSERT_EQ(UCS_INPROGRESS, uct_iface_flush(m_iface, 0, &flush.uct));
    wait(flush);
    EXPECT_EQ(1, copy.calls);
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    uct_ep_destroy(second);
    device_free(dev);
}

TEST_F(copy_uct, flush_of_idle_ep_and_iface_is_immediate) {
    counted_comp comp;

    connect();
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep, 0, &comp.uct));
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, &comp.uct));
    EXPECT_EQ(0, comp.calls);
}

/* Short operations do not queue behind zero-copy ones, but after a fence
 * they see their bytes */
TEST_F(copy_uct, fence_makes_short_wait_for_earlier_zcopy) {
    const size_t size    = 4 << 20;
    const std::string in = pattern(size, 5);
    std::string head(64, '\0');
    counted_comp comp;
    char *dev;

    connect();
    dev = (char*)device_alloc(size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev,
                                    &comp));
    EXPECT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    /* The last bytes are the last the engine moves */
    EXPECT_EQ(UCS_OK, uct_ep_get_short(m_ep, &head[0], head.size(),
                                       (uintptr_t)(dev + size - head.size()),
                                       UCT_INVALID_RKEY));
    EXPECT_TRUE(in.substr(size - head.size()) == head);
    /* The bytes landed; the completion still comes through progress */
    EXPECT_EQ(0, comp.calls);
    wait(comp);
    device_free(dev);
}

TEST_F(copy_uct, ep_destroyed_with_copies_in_flight_still_lands_them) {
    const size_t size    = 4 << 20;
    const std::string in = pattern(size, 6);
    counted_comp comp;
    void *dev;

    connect();
    dev = device_alloc(size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev,
                                    &comp));
    uct_ep_destroy(m_ep);
    m_ep = NULL;
    wait(comp);
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_TRUE(in == from_device(dev, size));
    device_free(dev);
}

/* A completion may destroy its endpoint while the endpoint's other copies
 * complete in the same progress: they count it no more by then */
TEST_F(copy_uct, ep_destroyed_by_a_completion_leaves_its_other_copies_whole) {
    const size_t size    = 1 << 20;
    const std::string in = pattern(size, 8);
    std::string head(64, '\0');
    uct_ep_h ep;
    counted_comp second;
    char *dev;

    connect();
    ASSERT_EQ(UCS_OK, try_connect(m_iface, m_iface, &ep));
    destroying_comp first(ep);
    dev = (char*)device_alloc(2 * size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev,
                                    &first, ep));
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev + size,
                                    &second, ep));
    /* Both land before the short after the fence: one progress gives both
     * completions */
    EXPECT_EQ(UCS_OK, uct_ep_fence(ep, 0));
    EXPECT_EQ(UCS_OK, uct_ep_get_short(ep, &head[0], head.size(),
                                       (uintptr_t)dev, UCT_INVALID_RKEY));
    EXPECT_EQ(2u, uct_iface_progress(m_iface));
    EXPECT_EQ(1, first.calls);
    EXPECT_EQ(1, second.calls);
    EXPECT_TRUE(first.ep == NULL);
    EXPECT_EQ(UCS_OK, second.status);
    EXPECT_TRUE(in == from_device(dev + size, size));
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    device_free(dev);
}

/* A flush completes after what was posted before it and before what was
 * posted after it, in one progress as in several */
TEST_F(copy_uct, flush_completes_between_the_copies_around_it) {
    const size_t size    = 1 << 20;
    const std::string in = pattern(size, 9);
    std::string head(64, '\0');
    std::vector<int> order;
    counted_comp before(1, &order), flush(2, &order), after(3, &order);
    char *dev;

    connect();
    dev = (char*)device_alloc(2 * size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev,
                                    &before));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, &flush.uct));
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev + size,
                                    &after));
    EXPECT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    EXPECT_EQ(UCS_OK, uct_ep_get_short(m_ep, &head[0], head.size(),
                                       (uintptr_t)dev, UCT_INVALID_RKEY));
    uct_iface_progress(m_iface);
    ASSERT_EQ(3u, order.size());
    EXPECT_EQ(1, order[0]);
    EXPECT_EQ(2, order[1]);
    EXPECT_EQ(3, order[2]);
    device_free(dev);
}

/* The engine finishes what it was given, nothing is completed after, and
 * nothing is left: TearDown finds the emu's state gone */
TEST_F(copy_uct, iface_closed_with_copies_in_flight_is_clean) {
    const size_t size    = 4 << 20;
    const std::string in = pattern(size, 7);
    counted_comp first, second;
    char *dev;

    connect();
    dev = (char*)device_alloc(2 * size);
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev,
                                    &first));
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, (void*)in.data(), size, dev + size,
                                    &second));
    uct_ep_destroy(m_ep);
    m_ep = NULL;
    uct_iface_close(m_iface);
    m_ifaces.clear();
    m_iface = NULL;
    EXPECT_EQ(0, first.calls);
    EXPECT_EQ(0, second.calls);
    EXPECT_TRUE(in == from_device(dev, size));
    device_free(dev);
}

TEST_F(copy_uct, device_to_device_across_gpus_through_a_peer_mapping) {
    const size_t size    = (1 << 20) + 11;
    const std::string in = pattern(size, 8);
    void *dev0, *dev1;
    counted_comp comp;

    connect();
    dev0 = device_alloc(size, 0);
    dev1 = device_alloc(size, 1);
    to_device(dev0, in);
    finish(zcopy(true, dev0, size, dev1, &comp), comp);
    EXPECT_TRUE(in == from_device(dev1, size));

    to_device(dev1, pattern(size, 9));
    EXPECT_EQ(UCS_OK, uct_ep_get_short(m_ep, dev0, 4096, (uintptr_t)dev1,
                                       UCT_INVALID_RKEY));
    EXPECT_TRUE(pattern(size, 9).substr(0, 4096) ==
                from_device(dev0, 4096));
    device_free(dev1);
    device_free(dev0);
}

/* No operation runs out of resources, so there is never a reason to wait */
TEST_F(copy_uct, pending_add_says_try_again) {
    uct_pending_req_t req;

    connect();
    req.func = NULL;
    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(m_ep, &req, 0));
}

/* The engine checks every device address before a byte moves */
TEST_F(copy_uct, copy_beyond_an_allocation_is_an_error_not_a_crash) {
    const size_t size = 8192;
    std::string host(2 * size, 'h');
    gpumem_test::log_capture log;
    counted_comp comp;
    void *dev;

    connect();
    dev = device_alloc(size);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_ep_put_short(m_ep, &host[0], 2 * size, (uintptr_t)dev,
                               UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              zcopy(false, &host[0], 2 * size, dev, &comp));
    EXPECT_EQ(0, comp.calls);
    EXPECT_LE(2u, log.lines().size());
    device_free(dev);
}

/* Memory of no GPU of the driver and that the process cannot touch (device
 * memory of another driver, which UCX may hand this transport by its type):
 * an error naming the addresses and the driver, before any byte moves,
 * never a signal; host memory beside it still copies */
TEST_F(copy_uct, foreign_memory_is_an_error_naming_the_driver_not_a_crash) {
    const size_t size = 4096;
    std::string host(size, 'h'), back(size, '\0');
    gpumem_test::log_capture log;
    counted_comp comp;
    void *foreign;

    connect();
    foreign = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, foreign);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_ep_put_short(m_ep, &host[0], 64, (uintptr_t)foreign,
                               UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_ep_get_short(m_ep, &back[0], 64, (uintptr_t)foreign,
                               UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, zcopy(true, &host[0], size, foreign,
                                          &comp));
    EXPECT_EQ(0, comp.calls);
    ASSERT_EQ(3u, log.lines().size());
    EXPECT_NE(std::string::npos, log.lines()[0].find(
              "neither is device memory of the " +
              gpumem_test::driver() + " driver's GPUs"))
            << log.lines()[0];
    char address[32];
    snprintf(address, sizeof(address), "to %p", foreign);
    EXPECT_NE(std::string::npos, log.lines()[0].find(address))
            << log.lines()[0];
    EXPECT_EQ(std::string(size, '\0'), back);
    munmap(foreign, size);

    /* Host to host, as before */
    EXPECT_EQ(UCS_OK, uct_ep_get_short(m_ep, &back[0], 64,
                                       (uintptr_t)&host[0], UCT_INVALID_RKEY));
    EXPECT_EQ(host.substr(0, 64), back.substr(0, 64));
}

/* Completion events, as UCP's wakeup mode uses them: the interface's
 * descriptor; arming is busy while a zero-copy operation waits for
 * progress, and succeeds once nothing does; a post after an arm makes the
 * descriptor readable, so that a sleeper wakes to progress it */
TEST_F(copy_uct, events_arm_busy_while_in_flight_and_wake_on_a_post) {
    const size_t size = 4 << 20;
    std::vector<char> host(size, 'e');
    void *device;
    counted_comp comp;
    struct pollfd pfd;
    int fd;

    connect();
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_iface, &fd));
    device = device_alloc(size);
    ASSERT_TRUE(device != NULL);

    EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_iface, UCT_EVENT_SEND_COMP |
                                                   UCT_EVENT_RECV));
    pfd.fd     = fd;
    pfd.events = POLLIN;
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "readable with nothing posted";

    /* A post after the arm wakes the sleeper */
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, &host[0], size, device, &comp));
    EXPECT_EQ(1, poll(&pfd, 1, 1000)) << "the post did not wake";
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_iface,
                                                UCT_EVENT_SEND_COMP));
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_iface,
                                                UCT_EVENT_SEND_COMP))
            << "armed while the copy waits for progress";

    while (comp.calls == 0) {
        uct_worker_progress(m_worker);
    }
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_iface, UCT_EVENT_SEND_COMP));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_iface_event_arm(m_iface, 1u << 10));
    device_free(device);
}
