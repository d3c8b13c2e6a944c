/**
 * gpumem tests: the gpumem_rc transport on a real RDMA device, through the
 * public UCT API: put and get zero-copy of host and device memory, flush,
 * fence, pending requests, order of completions, endpoints destroyed with
 * operations in flight, and a peer's access refused. Two endpoints of one
 * interface connected to each other stand in for two machines. Skipped
 * where no device exists.
 *
 * See file LICENSE for terms.
 */

#include <ib/ib_test.h>

#include <common/log_capture.h>

#include <gpumem/gpumem.h>

extern "C" {
#include <uct/gpumem/rc/rc_ep.h>
#include <uct/gpumem/rc/rc_iface.h>
#include <uct/api/uct.h>
#include <ucs/arch/cpu.h>
#include <ucs/async/async.h>
}

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>
#include <sched.h>

using gpumem_test::log_capture;


/* Registered bytes, host or device, with their key as a peer holds it */
struct rc_buffer {
    void            *address   = NULL;   /* Host or device address */
    size_t          length     = 0;
    bool            device     = false;
    uct_mem_h       memh       = NULL;
    uct_rkey_bundle_t rkey     = {};
    bool            has_rkey   = false;
    std::vector<uint8_t> host;
};


class rc_uct : public gpumem_test::ib_md_test {
public:
    virtual void SetUp() {
        gpumem_test::ib_md_test::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }

        ASSERT_NO_FATAL_FAILURE(find_device_calls());

        ASSERT_EQ(UCS_OK, ucs_async_context_create(
                UCS_ASYNC_MODE_THREAD_SPINLOCK, &m_async));
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker));
    }

    virtual void TearDown() {
        for (auto &buffer : m_buffers) {
            release(*buffer);
        }
        m_buffers.clear();
        for (uct_ep_h ep : {m_ep[0], m_ep[1]}) {
            if (ep != NULL) {
                uct_ep_destroy(ep);
            }
        }
        if (m_iface != NULL) {
            uct_iface_close(m_iface);
        }
        if (m_iface_config != NULL) {
            uct_config_release(m_iface_config);
        }
        if (m_worker != NULL) {
            uct_worker_destroy(m_worker);
        }
        if (m_async != NULL) {
            ucs_async_context_destroy(m_async);
        }
        gpumem_test::ib_md_test::TearDown();
    }

    /* The first port of the device that gpumem_rc offers */
    std::string rc_device() {
        uct_tl_resource_desc_t *resources;
        unsigned i, num_resources;
        std::string found;

        EXPECT_EQ(UCS_OK, uct_md_query_tl_resources(m_md, &resources,
                                                    &num_resources));
        for (i = 0; (i < num_resources) && found.empty(); ++i) {
            if (!strcmp(resources[i].tl_name, UCT_GPUMEM_RC_TL_NAME)) {
                found = resources[i].dev_name;
            }
        }
        uct_release_tl_resource_list(resources);
        return found;
    }

    typedef std::vector<std::pair<std::string, std::string>> settings_t;

    /* The domain, the interface on its first port (configured with
     * @a name = @a value if given), and two endpoints connected to each
     * other */
    void open(const char *name = NULL, const char *value = NULL,
              const char *md_name = NULL, const char *md_value = NULL) {
        settings_t settings;

        if (name != NULL) {
            settings.emplace_back(name, value);
        }
        open(settings, md_name, md_value);
    }

    void open(const settings_t &settings, const char *md_name = NULL,
              const char *md_value = NULL) {
        open_md(md_name, md_value);
        ASSERT_EQ(UCS_OK, open_iface(settings));
        connect_pair();
    }

    /* The interface on the domain's first port, configured with
     * @a settings (UCX_GPUMEM_RC_<name>=<value>) */
    ucs_status_t open_iface(const settings_t &settings) {
        uct_iface_params_t params = {};
        std::string dev_name;
        ucs_status_t status;

        dev_name = rc_device();
        EXPECT_FALSE(dev_name.empty()) << "gpumem_rc offers no port of "
                                       << m_device;

        if (m_iface_config != NULL) {
            uct_config_release(m_iface_config);
            m_iface_config = NULL;
        }
        status = uct_md_iface_config_read(m_md, UCT_GPUMEM_RC_TL_NAME, NULL,
                                          NULL, &m_iface_config);
        if (status != UCS_OK) {
            return status;
        }
        for (auto &setting : settings) {
            status = gpumem_test::config_modify(m_iface_config, "GPUMEM_RC_",
                                                setting.first,
                                                setting.second.c_str());
            EXPECT_EQ(UCS_OK, status) << setting.first << "="
                                      << setting.second;
            if (status != UCS_OK) {
                return status;
            }
        }

        params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE   |
                                      UCT_IFACE_PARAM_FIELD_DEVICE      |
                                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = UCT_GPUMEM_RC_TL_NAME;
        params.mode.device.dev_name = dev_name.c_str();
        params.err_handler          = err_handler;
        params.err_handler_arg      = this;
        params.err_handler_flags    = 0;
        status = uct_iface_open(m_md, m_worker, &params, m_iface_config,
                                &m_iface);
        if (status != UCS_OK) {
            m_iface = NULL;
            return status;
        }
        return uct_iface_query(m_iface, &m_iface_attr);
    }

    /* The value of the interface's setting @a name, as UCX prints it */
    std::string setting(const std::string &name) {
        char value[128] = "";

        if ((uct_config_get(m_iface_config, name.c_str(), value,
                            sizeof(value)) != UCS_OK) &&
            (uct_config_get(m_iface_config, ("GPUMEM_RC_" + name).c_str(),
                            value, sizeof(value)) != UCS_OK)) {
            return "(none)";
        }
        return value;
    }

    uct_gpumem_rc_iface_t *rc_iface() const {
        return ucs_derived_of(m_iface, uct_gpumem_rc_iface_t);
    }

    uct_gpumem_rc_ep_t *rc_ep(int i) const {
        return ucs_derived_of(m_ep[i], uct_gpumem_rc_ep_t);
    }

    void connect_pair() {
        uct_ep_params_t ep_params = {};
        std::vector<uint8_t> dev_addr(m_iface_attr.device_addr_len);
        std::vector<uint8_t> ep_addr[2];

        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep_params.iface      = m_iface;
        ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                m_iface, (uct_device_addr_t*)dev_addr.data()));
        EXPECT_TRUE(uct_iface_is_reachable(m_iface,
                                           (uct_device_addr_t*)dev_addr.data(),
                                           NULL));
        for (int i = 0; i < 2; ++i) {
            ASSERT_EQ(UCS_OK, uct_ep_create(&ep_params, &m_ep[i]));
            ep_addr[i].resize(m_iface_attr.ep_addr_len);
            ASSERT_EQ(UCS_OK, uct_ep_get_address(
                    m_ep[i], (uct_ep_addr_t*)ep_addr[i].data()));
        }
        for (int i = 0; i < 2; ++i) {
            ASSERT_EQ(UCS_OK, uct_ep_connect_to_ep(
                    m_ep[i], (uct_device_addr_t*)dev_addr.data(),
                    (uct_ep_addr_t*)ep_addr[1 - i].data()));
        }
    }

    /* @a length registered bytes filled with a pattern of @a seed, host or
     * device memory, open to peers as @a flags say */
    rc_buffer &alloc(size_t length, bool device, uint8_t seed,
                     unsigned flags = UCT_MD_MEM_ACCESS_ALL,
                     bool pack = true) {
        std::unique_ptr<rc_buffer> buffer(new rc_buffer);
        std::vector<uint8_t> pattern = make_pattern(length, seed);

        buffer->length = length;
        buffer->device = device;
        if (device) {
            EXPECT_EQ(0, m_malloc(&buffer->address, length));
            EXPECT_EQ(0, m_memcpy(buffer->address, pattern.data(), length));
        } else {
            buffer->host     = pattern;
            buffer->address  = buffer->host.data();
        }

        EXPECT_EQ(UCS_OK, mem_reg(buffer->address, length, flags,
                                  &buffer->memh));
        if (pack && (buffer->memh != NULL)) {
            std::vector<uint8_t> packed(GPUMEM_REG_WIRE_SIZE);
            EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, buffer->memh,
                                               packed.data()));
            EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(),
                                              &buffer->rkey));
            buffer->has_rkey = true;
        }

        m_buffers.push_back(std::move(buffer));
        return *m_buffers.back();
    }

    void release(rc_buffer &buffer) {
        if (buffer.has_rkey) {
            EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &buffer.rkey));
        }
        if (buffer.memh != NULL) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, buffer.memh));
        }
        if (buffer.device && (buffer.address != NULL)) {
            EXPECT_EQ(0, m_free(buffer.address));
        }
    }

    /* A peer's key of @a remote_view, through the wire form */
    uct_rkey_bundle_t unpack(const gpumem_reg_remote_view_t &remote_view) {
        std::vector<uint8_t> packed(GPUMEM_REG_WIRE_SIZE);
        uct_rkey_bundle_t rkey = {};

        gpumem_reg_wire_pack(&remote_view, packed.data());
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkey));
        m_forged.push_back(rkey);
        return rkey;
    }

    static std::vector<uint8_t> make_pattern(size_t length, uint8_t seed) {
        std::vector<uint8_t> pattern(length);
        for (size_t i = 0; i < length; ++i) {
            pattern[i] = (uint8_t)(i * 13 + seed + (i >> 8));
        }
        return pattern;
    }

    /* The bytes of @a buffer now, read through the GPU for device memory */
    std::vector<uint8_t> contents(const rc_buffer &buffer) {
        if (!buffer.device) {
            return buffer.host;
        }
        std::vector<uint8_t> bytes(buffer.length);
        EXPECT_EQ(0, m_memcpy(bytes.data(), buffer.address, buffer.length));
        return bytes;
    }

    uct_iov_t iov(const rc_buffer &buffer, size_t offset, size_t length) {
        uct_iov_t iov;

        iov.buffer = (uint8_t*)buffer.address + offset;
        iov.length = length;
        iov.memh   = buffer.memh;
        iov.stride = 0;
        iov.count  = 1;
        return iov;
    }

    uint64_t remote(const rc_buffer &buffer, size_t offset) {
        return (uintptr_t)buffer.address + offset;
    }

    /* Progress until @a comp has completed; a guard against a hang, not a
     * measure of speed */
    void wait(uct_completion_t *comp) {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(120);

        while ((comp->count > 0) && (ucs_get_time() < deadline)) {
            uct_iface_progress(m_iface);
        }
        ASSERT_EQ(0, comp->count) << "no completion after 120 s";
    }

    /* Progress until no work request of the interface is in flight */
    void drain() {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(120);

        while ((uct_iface_flush(m_iface, 0, NULL) != UCS_OK) &&
               (ucs_get_time() < deadline)) {
            uct_iface_progress(m_iface);
        }
        ASSERT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    }

    /* One put or get of @a length bytes at the offsets, to its end */
    ucs_status_t rdma(bool put, rc_buffer &local, size_t local_offset,
                      rc_buffer &peer, size_t peer_offset, size_t length,
                      uct_rkey_t rkey = 0, unsigned ep = 0) {
        uct_iov_t local_iov = iov(local, local_offset, length);
        struct completion comp;
        ucs_status_t status;

        if (rkey == 0) {
            rkey = peer.rkey.rkey;
        }
        status = put ?
                 uct_ep_put_zcopy(m_ep[ep], &local_iov, 1,
                                  remote(peer, peer_offset), rkey,
                                  &comp.super) :
                 uct_ep_get_zcopy(m_ep[ep], &local_iov, 1,
                                  remote(peer, peer_offset), rkey,
                                  &comp.super);
        if (status != UCS_INPROGRESS) {
            return status;
        }
        wait(&comp.super);
        return comp.status;
    }

    /* Put (or get) at odd offsets and sizes, and check every byte on both
     * sides */
    void check_transfer(bool put, bool local_device, bool peer_device,
                        size_t length) {
        const size_t local_offset = 3, peer_offset = 5;
        size_t total              = length + 16;
        rc_buffer &local          = alloc(total, local_device, 1);
        rc_buffer &peer           = alloc(total, peer_device, 2);
        std::vector<uint8_t> local_before = contents(local);
        std::vector<uint8_t> peer_before  = contents(peer);
        std::vector<uint8_t> local_expected = local_before;
        std::vector<uint8_t> peer_expected  = peer_before;

        if (put) {
            memcpy(&peer_expected[peer_offset], &local_before[local_offset],
                   length);
        } else {
            memcpy(&local_expected[local_offset], &peer_before[peer_offset],
                   length);
        }

        ASSERT_EQ(UCS_OK, rdma(put, local, local_offset, peer, peer_offset,
                               length));
        EXPECT_TRUE(contents(local) == local_expected)
                << (put ? "put" : "get") << " of " << length
                << " bytes changed the local side";
        EXPECT_TRUE(contents(peer) == peer_expected)
                << (put ? "put" : "get") << " of " << length
                << " bytes: the peer's bytes differ";
    }

    struct completion {
        uct_completion_t super;
        ucs_status_t     status = UCS_INPROGRESS;
        unsigned         calls  = 0;
        std::vector<int> *order = NULL;
        int              id     = 0;

        completion() {
            super.func   = done;
            super.count  = 1;
            super.status = UCS_OK;
        }

        static void done(uct_completion_t *self) {
            completion *comp = ucs_container_of(self, completion, super);
            comp->status     = self->status;
            ++comp->calls;
            if (comp->order != NULL) {
                comp->order->push_back(comp->id);
            }
        }
    };

    /* A put of 1 MiB of host memory by m_ep[0], in flight */
    void put_in_flight(completion &comp) {
        rc_buffer &local = alloc(1 << 20, false, 1);
        rc_buffer &peer  = alloc(1 << 20, false, 2);
        uct_iov_t io     = iov(local, 0, 1 << 20);

        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &io, 1,
                                                   remote(peer, 0),
                                                   peer.rkey.rkey,
                                                   &comp.super));
    }

    static ucs_status_t err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status) {
        rc_uct *self = (rc_uct*)arg;
        self->m_failed.push_back(std::make_pair(ep, status));
        return UCS_OK;
    }

    ucs_async_context_t *m_async      = NULL;
    uct_worker_h       m_worker       = NULL;
    uct_iface_config_t *m_iface_config = NULL;
    uct_iface_h        m_iface        = NULL;
    uct_iface_attr_t   m_iface_attr;
    uct_ep_h           m_ep[2]        = {NULL, NULL};
    std::vector<std::unique_ptr<rc_buffer>> m_buffers;
    std::vector<uct_rkey_bundle_t> m_forged;
    std::vector<std::pair<uct_ep_h, ucs_status_t>> m_failed;

    virtual ~rc_uct() {
        for (auto &rkey : m_forged) {
            uct_rkey_release(m_component, &rkey);
        }
    }
};


static const size_t rc_sizes[] = {1, 7, 4096, 65537, 1 << 20};


TEST_F(rc_uct, offers_its_ports_with_zcopy_and_connect_to_ep) {
    open();
    EXPECT_TRUE(m_iface_attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    EXPECT_TRUE(m_iface_attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY);
    EXPECT_TRUE(m_iface_attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY);
    EXPECT_TRUE(m_iface_attr.cap.flags & UCT_IFACE_FLAG_PENDING);
    EXPECT_EQ(0u, m_iface_attr.iface_addr_len);
    EXPECT_EQ((size_t)UCT_GPUMEM_RC_DEV_ADDR_SIZE,
              m_iface_attr.device_addr_len);
    EXPECT_EQ((size_t)UCT_GPUMEM_RC_EP_ADDR_SIZE, m_iface_attr.ep_addr_len);
    EXPECT_GE(m_iface_attr.cap.put.max_iov, 1u);
    EXPECT_GT(m_iface_attr.bandwidth.dedicated, 0);
}

TEST_F(rc_uct, put_zcopy_host_to_host_every_byte) {
    open();
    for (size_t length : rc_sizes) {
        check_transfer(true, false, false, length);
    }
}

TEST_F(rc_uct, get_zcopy_host_from_host_every_byte) {
    open();
    for (size_t length : rc_sizes) {
        check_transfer(false, false, false, length);
    }
}

TEST_F(rc_uct, put_zcopy_host_to_device_every_byte) {
    open();
    ASSERT_TRUE(md()->gpus != NULL) << "the domain has no GPUs";
    for (size_t length : rc_sizes) {
        check_transfer(true, false, true, length);
    }
}

TEST_F(rc_uct, put_zcopy_device_to_device_every_byte) {
    open();
    ASSERT_TRUE(md()->gpus != NULL) << "the domain has no GPUs";
    for (size_t length : {(size_t)4093, (size_t)1 << 20}) {
        check_transfer(true, true, true, length);
    }
}

TEST_F(rc_uct, get_zcopy_device_from_device_every_byte) {
    open();
    ASSERT_TRUE(md()->gpus != NULL) << "the domain has no GPUs";
    for (size_t length : {(size_t)4093, (size_t)1 << 20}) {
        check_transfer(false, true, true, length);
    }
}

TEST_F(rc_uct, get_zcopy_host_from_device_every_byte) {
    open();
    ASSERT_TRUE(md()->gpus != NULL) << "the domain has no GPUs";
    for (size_t length : {(size_t)1, (size_t)65537}) {
        check_transfer(false, false, true, length);
    }
}

TEST_F(rc_uct, put_zcopy_gathers_entries_in_order) {
    open();
    rc_buffer &a    = alloc(1000, false, 10);
    rc_buffer &b    = alloc(3000, true, 20);
    rc_buffer &c    = alloc(500, false, 30);
    rc_buffer &peer = alloc(8192, true, 40);
    std::vector<uint8_t> expected = contents(peer);
    uct_iov_t iovs[3] = {iov(a, 1, 999), iov(b, 7, 2000), iov(c, 0, 500)};
    size_t count      = std::min<size_t>(m_iface_attr.cap.put.max_iov, 3);
    size_t at         = 11;
    completion comp;

    for (size_t i = 0; i < count; ++i) {
        std::vector<uint8_t> part = contents(i == 0 ? a : (i == 1 ? b : c));
        size_t offset             = (uint8_t*)iovs[i].buffer -
                                    (uint8_t*)(i == 0 ? a : (i == 1 ? b : c))
                                    .address;
        memcpy(&expected[at], &part[offset], iovs[i].length);
        at += iovs[i].length;
    }

    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], iovs, count,
                                               remote(peer, 11),
                                               peer.rkey.rkey, &comp.super));
    wait(&comp.super);
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_TRUE(contents(peer) == expected);
}

TEST_F(rc_uct, completions_come_in_posting_order) {
    open();
    rc_buffer &local = alloc(65536, false, 1);
    rc_buffer &peer  = alloc(65536, true, 2);
    std::vector<completion> comps(32);
    std::vector<int> order;

    for (int i = 0; i < (int)comps.size(); ++i) {
        uct_iov_t local_iov = iov(local, i * 2048, (i % 2) ? 2048 : 1);
        comps[i].order      = &order;
        comps[i].id         = i;
        ASSERT_EQ(UCS_INPROGRESS,
                  (i % 3) ?
                  uct_ep_put_zcopy(m_ep[0], &local_iov, 1,
                                   remote(peer, i * 2048), peer.rkey.rkey,
                                   &comps[i].super) :
                  uct_ep_get_zcopy(m_ep[0], &local_iov, 1,
                                   remote(peer, i * 2048), peer.rkey.rkey,
                                   &comps[i].super));
    }
    wait(&comps.back().super);

    ASSERT_EQ(comps.size(), order.size());
    for (int i = 0; i < (int)order.size(); ++i) {
        EXPECT_EQ(i, order[i]);
    }
}

TEST_F(rc_uct, flush_completes_after_what_was_posted_before) {
    open();
    rc_buffer &local = alloc(1 << 20, false, 1);
    rc_buffer &peer  = alloc(1 << 20, true, 2);
    std::vector<int> order;
    completion puts[4], flush;
    ucs_status_t status;

    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep[0], 0, NULL)) << "nothing posted";
    for (int i = 0; i < 4; ++i) {
        uct_iov_t local_iov = iov(local, i << 18, 1 << 18);
        puts[i].order       = &order;
        puts[i].id          = i;
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_put_zcopy(m_ep[0], &local_iov, 1,
                                   remote(peer, i << 18), peer.rkey.rkey,
                                   &puts[i].super));
    }

    flush.order = &order;
    flush.id    = 100;
    status      = uct_ep_flush(m_ep[0], 0, &flush.super);
    ASSERT_EQ(UCS_INPROGRESS, status);
    EXPECT_NE(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    wait(&flush.super);

    EXPECT_EQ(UCS_OK, flush.status);
    EXPECT_EQ(std::vector<int>({0, 1, 2, 3, 100}), order);
    EXPECT_TRUE(contents(peer) == contents(local));
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep[0], 0, NULL));
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
}

TEST_F(rc_uct, get_after_fence_reads_what_put_wrote) {
    open();
    rc_buffer &source = alloc(65536, false, 1);
    rc_buffer &peer   = alloc(65536, true, 2);
    rc_buffer &back   = alloc(65536, false, 3);
    uct_iov_t put_iov = iov(source, 0, 65536);
    uct_iov_t get_iov = iov(back, 0, 65536);
    completion put, get;

    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &put_iov, 1,
                                               remote(peer, 0),
                                               peer.rkey.rkey, &put.super));
    ASSERT_EQ(UCS_OK, uct_ep_fence(m_ep[0], 0));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(m_ep[0], &get_iov, 1,
                                               remote(peer, 0),
                                               peer.rkey.rkey, &get.super));
    wait(&get.super);
    EXPECT_EQ(1u, put.calls);
    EXPECT_EQ(UCS_OK, get.status);
    EXPECT_TRUE(contents(back) == contents(source));
    EXPECT_EQ(UCS_OK, uct_iface_fence(m_iface, 0));
}

TEST_F(rc_uct, full_send_queue_waits_in_pending_and_all_lands) {
    open("TX_QUEUE_LEN", "4");
    const size_t chunk = 4096, count = 24;
    rc_buffer &local   = alloc(chunk * count, false, 1);
    rc_buffer &peer    = alloc(chunk * count, true, 2);

    struct pending_put {
        uct_pending_req_t super;
        rc_uct            *test;
        size_t            index;
        completion        comp;
    };

    std::vector<pending_put> reqs(count);
    size_t next = 0, queued = 0, dispatched = 0;
    ucs_status_t status;
    static size_t *s_dispatched;

    s_dispatched = &dispatched;
    for (size_t i = 0; i < count; ++i) {
        reqs[i].test  = this;
        reqs[i].index = i;
        reqs[i].super.func = [](uct_pending_req_t *self) -> ucs_status_t {
            pending_put *req  = ucs_container_of(self, pending_put, super);
            rc_uct *test      = req->test;
            rc_buffer &local  = *test->m_buffers[0];
            rc_buffer &peer   = *test->m_buffers[1];
            uct_iov_t io      = test->iov(local, req->index * 4096, 4096);
            ucs_status_t st   = uct_ep_put_zcopy(test->m_ep[0], &io, 1,
                                                 test->remote(peer,
                                                      req->index * 4096),
                                                 peer.rkey.rkey,
                                                 &req->comp.super);
            if (st == UCS_INPROGRESS) {
                ++*s_dispatched;
                return UCS_OK;
            }
            return st;
        };
    }

    /* Post until the queue is full; the rest waits in the pending queue */
    for (; next < count; ++next) {
        uct_iov_t io = iov(local, next * chunk, chunk);
        status       = uct_ep_put_zcopy(m_ep[0], &io, 1,
                                        remote(peer, next * chunk),
                                        peer.rkey.rkey,
                                        &reqs[next].comp.super);
        if (status == UCS_ERR_NO_RESOURCE) {
            break;
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
    }
    ASSERT_EQ(4u, next) << "TX_QUEUE_LEN=4";

    for (size_t i = next; i < count; ++i) {
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep[0], &reqs[i].super, 0));
        ++queued;
    }
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(m_ep[0], 0, NULL))
            << "a flush waits behind the pending requests";

    wait(&reqs[count - 1].comp.super);
    drain();
    EXPECT_EQ(queued, dispatched);
    for (auto &req : reqs) {
        EXPECT_EQ(UCS_OK, req.comp.status);
    }
    EXPECT_TRUE(contents(peer) == contents(local));
    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(m_ep[0], &reqs[0].super, 0))
            << "with room in the queue, the caller posts itself";
}

TEST_F(rc_uct, pending_purge_gives_back_every_request) {
    open("TX_QUEUE_LEN", "2");
    rc_buffer &local = alloc(4096, false, 1);
    rc_buffer &peer  = alloc(4096, false, 2);
    uct_pending_req_t reqs[3];
    std::vector<uct_pending_req_t*> purged;
    completion comps[2];

    for (int i = 0; i < 2; ++i) {
        uct_iov_t io = iov(local, 0, 4096);
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &io, 1,
                                                   remote(peer, 0),
                                                   peer.rkey.rkey,
                                                   &comps[i].super));
    }
    for (auto &req : reqs) {
        req.func = [](uct_pending_req_t*) -> ucs_status_t {
            return UCS_ERR_NO_RESOURCE;
        };
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep[0], &req, 0));
    }

    uct_ep_pending_purge(m_ep[0], [](uct_pending_req_t *req, void *arg) {
        ((std::vector<uct_pending_req_t*>*)arg)->push_back(req);
    }, &purged);
    EXPECT_EQ(std::vector<uct_pending_req_t*>({&reqs[0], &reqs[1], &reqs[2]}),
              purged);
    wait(&comps[1].super);
}

TEST_F(rc_uct, ep_destroy_with_operations_in_flight) {
    open();
    rc_buffer &local = alloc(1 << 20, false, 1);
    rc_buffer &peer  = alloc(1 << 20, true, 2);
    completion comps[8];

    for (int i = 0; i < 8; ++i) {
        uct_iov_t io = iov(local, i << 17, 1 << 17);
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &io, 1,
                                                   remote(peer, i << 17),
                                                   peer.rkey.rkey,
                                                   &comps[i].super));
    }

    uct_ep_destroy(m_ep[0]);
    m_ep[0] = NULL;
    drain();
    for (auto &comp : comps) {
        EXPECT_EQ(0u, comp.calls) << "a destroyed endpoint calls no "
                                     "completion";
    }

    /* The interface goes on: a new pair moves bytes */
    uct_ep_destroy(m_ep[1]);
    m_ep[1] = NULL;
    connect_pair();
    check_transfer(true, false, true, 65536);
}

TEST_F(rc_uct, iface_close_with_destroyed_endpoint_in_flight) {
    open();
    completion comp;

    ASSERT_NO_FATAL_FAILURE(put_in_flight(comp));
    uct_ep_destroy(m_ep[0]);
    m_ep[0] = NULL;
    uct_ep_destroy(m_ep[1]);
    m_ep[1] = NULL;
    uct_iface_close(m_iface);
    m_iface = NULL;
    EXPECT_EQ(0u, comp.calls);
}

/* UCP's keepalive: ep_check sends a probe (a zero-length RDMA WRITE) that
 * a live peer acknowledges; once the peer's queue pair is gone, the
 * probe's retries run out and the error handler is told, at progress, that
 * the endpoint failed with UCS_ERR_ENDPOINT_TIMEOUT */
TEST_F(rc_uct, ep_check_tells_a_peer_gone_to_the_error_handler) {
    ASSERT_NO_FATAL_FAILURE(open({{"TIMEOUT", "100ms"},
                                  {"RETRY_COUNT", "2"}}));
    EXPECT_TRUE(m_iface_attr.cap.flags & UCT_IFACE_FLAG_EP_CHECK);
    EXPECT_TRUE(m_iface_attr.cap.flags &
                UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);

    ASSERT_EQ(UCS_OK, uct_ep_check(m_ep[0], 0, NULL));
    EXPECT_EQ(1u, rc_ep(0)->posted) << "no probe was sent";
    drain();
    EXPECT_TRUE(m_failed.empty()) << "a live peer was told as failed";
    EXPECT_EQ(UCS_OK, rc_ep(0)->status);

    uct_ep_destroy(m_ep[1]);
    m_ep[1] = NULL;
    ASSERT_EQ(UCS_OK, uct_ep_check(m_ep[0], 0, NULL));
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(60);
    while (m_failed.empty() && (ucs_get_time() < deadline)) {
        uct_iface_progress(m_iface);
    }
    ASSERT_EQ(1u, m_failed.size()) << "the peer gone was not told";
    EXPECT_EQ(m_ep[0], m_failed[0].first);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_failed[0].second);

    /* A failed endpoint is not probed again, nor told twice */
    ASSERT_EQ(UCS_OK, uct_ep_check(m_ep[0], 0, NULL));
    EXPECT_EQ(0u, rc_ep(0)->posted);
    drain();
    EXPECT_EQ(1u, m_failed.size());
}

/* A probe is not added to work in flight, which tells a peer's failure as
 * well; and ep_check takes no flags */
TEST_F(rc_uct, ep_check_adds_no_probe_to_work_in_flight) {
    open();
    completion comp;

    ASSERT_NO_FATAL_FAILURE(put_in_flight(comp));
    ASSERT_EQ(1u, rc_ep(0)->posted);
    EXPECT_EQ(UCS_OK, uct_ep_check(m_ep[0], 0, NULL));
    EXPECT_EQ(1u, rc_ep(0)->posted);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_check(m_ep[0], 1, NULL));
    drain();
    EXPECT_EQ(1u, comp.calls);
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_TRUE(m_failed.empty());
}

TEST_F(rc_uct, put_into_local_region_fails_with_remote_access_error) {
    open();
    rc_buffer &local  = alloc(4096, false, 1);
    rc_buffer &target = alloc(4096, true, 2, UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                               false);  /* local access */
    std::vector<uint8_t> before = contents(target);
    gpumem_reg_view_t *view     = uct_gpumem_ib_memh_view(target.memh);
    gpumem_reg_remote_view_t forged = {};
    uct_rkey_bundle_t rkey;
    ucs_status_t status;
    log_capture log;

    /* A local region has no key to give: a peer that guesses its device
     * key is refused by the device */
    std::vector<uint8_t> packed(GPUMEM_REG_WIRE_SIZE);
    EXPECT_NE(UCS_OK, uct_md_mkey_pack(m_md, target.memh, packed.data()));

    forged.rkey    = view->region->mr.rkey;
    forged.address = view->address;
    forged.length  = view->length;
    strncpy(forged.device_name, m_device.c_str(),
            sizeof(forged.device_name) - 1);
    rkey = unpack(forged);

    status = rdma(true, local, 0, target, 0, 4096, rkey.rkey);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, status) << ucs_status_string(status);
    EXPECT_TRUE(contents(target) == before) << "no byte landed";
    EXPECT_EQ(1u, log.count({"gpumem_rc", "RDMA WRITE", "remote access"}))
            << log.text();

    /* The endpoint has failed: it says so to every later call, and its
     * error handler heard it once */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, rdma(true, local, 0, target, 0, 16,
                                         rkey.rkey));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_flush(m_ep[0], 0, NULL));
    drain();
    ASSERT_LE(1u, m_failed.size());
    EXPECT_EQ(m_ep[0], m_failed[0].first);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, m_failed[0].second);
    size_t said = 0;
    for (auto &failure : m_failed) {
        said += (failure.first == m_ep[0]);
    }
    EXPECT_EQ(1u, said);
}

/* A peer reads memory of this side that was deregistered since (as a
 * device does when it sends a read again after its time-out, and the first
 * answer completed the read): the device refuses it, and moves this side's
 * queue pair to the error state without a completion here. The next
 * operation of this side is flushed: the endpoint fails, says why, and its
 * error handler hears it; it is not taken for a cancel of its own */
TEST_F(rc_uct, a_queue_pair_the_device_failed_fails_its_endpoint) {
    /* Deregistered at once: a cached registration stays, by design */
    ASSERT_NO_FATAL_FAILURE(open({{"TIMEOUT", "100ms"},
                                  {"RETRY_COUNT", "2"}}, "RCACHE", "no"));
    rc_buffer &local  = alloc(4096, false, 1);
    rc_buffer &gone   = alloc(4096, true, 2);
    rc_buffer &source = alloc(4096, true, 3);
    rc_buffer &target = alloc(4096, false, 4);
    std::vector<uint8_t> before = contents(target);
    ucs_status_t status;
    log_capture log;

    /* ep 1 is the peer that ep 0 reads from */
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, gone.memh));
    gone.memh = NULL;
    status    = rdma(false, local, 0, gone, 0, 4096, 0, 0);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, status) << ucs_status_string(status);
    drain();
    ASSERT_EQ(1u, m_failed.size());
    EXPECT_EQ(m_ep[0], m_failed[0].first);
    EXPECT_EQ(UCS_OK, rc_ep(1)->status) << "ep 1 heard nothing yet";

    status = rdma(true, source, 0, target, 0, 4096, 0, 1);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, status) << ucs_status_string(status);
    EXPECT_TRUE(contents(target) == before) << "no byte landed";
    EXPECT_EQ(1u, log.count({"gpumem_rc", "moved to the error state by the "
                             "device"})) << log.text();
    drain();
    ASSERT_EQ(2u, m_failed.size());
    EXPECT_EQ(m_ep[1], m_failed[1].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_failed[1].second);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, uct_ep_flush(m_ep[1], 0, NULL));
}

/* Seed 000: a peer reads or writes a region only through a queue pair whose
 * access allows it, and only if the region's access allows it too. The
 * regions below allow everything; the queue pair does not. soft-RoCE answers
 * the refusal as an invalid request; a device may answer it as a remote
 * access error; either fails the endpoint */
static bool is_refusal(ucs_status_t status)
{
    return (status == UCS_ERR_CONNECTION_RESET) ||
           (status == UCS_ERR_INVALID_ADDR);
}

TEST_F(rc_uct, queue_pair_grants_peers_read_and_write_by_default) {
    ASSERT_NO_FATAL_FAILURE(open());
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    EXPECT_EQ("remote", setting("PEER_ACCESS"));
    ASSERT_EQ(0, ibv_query_qp(rc_ep(1)->qp, &attr, IBV_QP_ACCESS_FLAGS,
                              &init_attr));
    EXPECT_EQ((unsigned)(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
              attr.qp_access_flags & (IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ |
                                      IBV_ACCESS_REMOTE_ATOMIC));
}

TEST_F(rc_uct, queue_pair_that_lets_peers_write_refuses_their_reads) {
    ASSERT_NO_FATAL_FAILURE(open("PEER_ACCESS", "remote_write"));
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    ASSERT_EQ(0, ibv_query_qp(rc_ep(1)->qp, &attr, IBV_QP_ACCESS_FLAGS,
                              &init_attr));
    EXPECT_EQ((unsigned)IBV_ACCESS_REMOTE_WRITE,
              attr.qp_access_flags & (IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ |
                                      IBV_ACCESS_REMOTE_ATOMIC));

    /* Writes land */
    check_transfer(true, false, true, 4096);

    /* A read is refused although the region allows it */
    rc_buffer &local  = alloc(4096, false, 1);
    rc_buffer &target = alloc(4096, true, 2);
    std::vector<uint8_t> before = contents(local);
    ucs_status_t status = rdma(false, local, 0, target, 0, 4096);
    EXPECT_TRUE(is_refusal(status)) << ucs_status_string(status);
    EXPECT_TRUE(contents(local) == before) << "no byte landed";
    drain();
    ASSERT_LE(1u, m_failed.size());
    EXPECT_EQ(m_ep[0], m_failed[0].first);
}

TEST_F(rc_uct, queue_pair_that_lets_peers_do_nothing_refuses_their_writes) {
    ASSERT_NO_FATAL_FAILURE(open("PEER_ACCESS", "local"));
    rc_buffer &local  = alloc(4096, false, 1);
    rc_buffer &target = alloc(4096, true, 2);
    std::vector<uint8_t> before = contents(target);
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    ASSERT_EQ(0, ibv_query_qp(rc_ep(1)->qp, &attr, IBV_QP_ACCESS_FLAGS,
                              &init_attr));
    EXPECT_EQ(0u, attr.qp_access_flags & (IBV_ACCESS_REMOTE_WRITE |
                                          IBV_ACCESS_REMOTE_READ |
                                          IBV_ACCESS_REMOTE_ATOMIC));

    ucs_status_t status = rdma(true, local, 0, target, 0, 4096);
    EXPECT_TRUE(is_refusal(status)) << ucs_status_string(status);
    EXPECT_TRUE(contents(target) == before) << "no byte landed";
    drain();
    ASSERT_LE(1u, m_failed.size());
    EXPECT_EQ(m_ep[0], m_failed[0].first);
}

/* A flush after writes in any order reads their last byte back from the
 * peer, which a queue pair below remote refuses: the interface does not
 * open, saying so */
TEST_F(rc_uct, peer_access_below_remote_with_writes_in_any_order_refuses) {
    open_md("ORDER", "any_order");
    for (const char *access : {"remote_write", "local"}) {
        log_capture log;

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  open_iface({{"PEER_ACCESS", access}})) << access;
        EXPECT_EQ(1u, log.count({"gpumem_rc",
                                 "PEER_ACCESS=" + std::string(access),
                                 "any_order"})) << log.text();
        if (m_iface != NULL) {
            uct_iface_close(m_iface);
            m_iface = NULL;
        }
    }
}

TEST_F(rc_uct, get_from_remote_write_region_fails_with_remote_access_error) {
    open();
    rc_buffer &local  = alloc(4096, false, 1);
    rc_buffer &target = alloc(4096, false, 2, UCT_MD_MEM_ACCESS_REMOTE_PUT);
    std::vector<uint8_t> before = contents(local);

    EXPECT_EQ(UCS_ERR_INVALID_ADDR, rdma(false, local, 0, target, 0, 4096));
    EXPECT_TRUE(contents(local) == before) << "no byte landed";
}

TEST_F(rc_uct, put_past_the_registration_fails_with_remote_access_error) {
    open();
    rc_buffer &local  = alloc(8192, false, 1);
    rc_buffer &target = alloc(8192, false, 2);
    gpumem_reg_remote_view_t forged =
            *(gpumem_reg_remote_view_t*)target.rkey.rkey;
    uct_rkey_bundle_t rkey;

    /* A key that claims more than the registration: the device refuses */
    forged.length *= 2;
    rkey           = unpack(forged);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, rdma(true, local, 0, target, 4096, 8192,
                                         rkey.rkey));
}

TEST_F(rc_uct, put_past_a_slice_is_refused_before_posting) {
    open();
    rc_buffer &local  = alloc(8192, false, 1);
    rc_buffer &target = alloc(8192, true, 2);
    std::vector<uint8_t> before = contents(target);
    gpumem_reg_remote_view_t slice;
    uct_rkey_bundle_t rkey;
    log_capture log;

    ASSERT_EQ(UCS_OK, gpumem_reg_remote_view_slice(
            (gpumem_reg_remote_view_t*)target.rkey.rkey, 1024, 2048, &slice));
    rkey = unpack(slice);

    EXPECT_EQ(UCS_ERR_INVALID_ADDR, rdma(true, local, 0, target, 2048, 2048,
                                         rkey.rkey));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, rdma(true, local, 0, target, 0, 16,
                                         rkey.rkey));
    EXPECT_EQ(2u, log.count({"gpumem_rc", "outside the peer's key"}))
            << log.text();
    EXPECT_TRUE(contents(target) == before) << "no byte landed";

    /* Inside the slice, the endpoint still works */
    EXPECT_EQ(UCS_OK, rdma(true, local, 0, target, 1024, 2048, rkey.rkey));
    EXPECT_TRUE(m_failed.empty());
}

/* Zero bytes reach nothing of the peer's: every operation completes at once
 * whatever the key (UCX's own tests give UCT_INVALID_RKEY with zero-length
 * buffers), and posts nothing */
TEST_F(rc_uct, zero_bytes_complete_at_once_with_any_key) {
    open();
    rc_buffer &peer = alloc(4096, true, 2);
    uct_iov_t none  = {NULL, 0, UCT_MEM_HANDLE_NULL, 0, 1};
    std::vector<uint8_t> before = contents(peer);
    unsigned unpacked           = 0;
    completion comp, flush;
    log_capture log;

    for (uct_rkey_t rkey : {(uct_rkey_t)UCT_INVALID_RKEY, peer.rkey.rkey}) {
        EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep[0], NULL, 0, 0, rkey));
        EXPECT_EQ(0, uct_ep_put_bcopy(m_ep[0],
                                      [](void*, void*) -> size_t {
                                          return 0;
                                      }, NULL, 0, rkey));
        EXPECT_EQ(UCS_OK, uct_ep_get_bcopy(m_ep[0],
                                           [](void *arg, const void*, size_t) {
                                               ++*(unsigned*)arg;
                                           }, &unpacked, 0, 0, rkey,
                                           &comp.super));
        EXPECT_EQ(UCS_OK, uct_ep_put_zcopy(m_ep[0], &none, 1, 0, rkey,
                                           &comp.super));
        EXPECT_EQ(UCS_OK, uct_ep_get_zcopy(m_ep[0], &none, 1, 0, rkey,
                                           &comp.super));
    }
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep[0], 0, &flush.super))
            << "nothing was posted";
    EXPECT_EQ(0u, comp.calls);
    EXPECT_EQ(0u, unpacked);
    EXPECT_EQ(0u, log.count({"gpumem_rc"})) << log.text();
    EXPECT_TRUE(contents(peer) == before);
    EXPECT_TRUE(m_failed.empty());
}

/* A byte or more needs the key rkey_unpack gave */
TEST_F(rc_uct, bytes_without_a_key_are_refused) {
    open();
    rc_buffer &local = alloc(4096, false, 1);
    rc_buffer &peer  = alloc(4096, false, 2);
    uint64_t word    = 0;
    log_capture log;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              rdma(true, local, 0, peer, 0, 16, UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_short(m_ep[0], &word, sizeof(word), remote(peer, 0),
                               UCT_INVALID_RKEY));
    EXPECT_EQ(2u, log.count({"gpumem_rc", "needs the peer's remote key"}))
            << log.text();
}

TEST_F(rc_uct, unregistered_local_bytes_are_refused) {
    open();
    rc_buffer &local = alloc(4096, false, 1);
    rc_buffer &peer  = alloc(4096, false, 2);
    uct_iov_t io     = iov(local, 0, 4096);
    completion comp;
    log_capture log;

    io.memh = UCT_MEM_HANDLE_NULL;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_zcopy(m_ep[0], &io, 1, remote(peer, 0),
                               peer.rkey.rkey, &comp.super));
    io      = iov(local, 1, 4096);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_zcopy(m_ep[0], &io, 1, remote(peer, 0),
                               peer.rkey.rkey, &comp.super))
            << "a byte past the registration";
    EXPECT_EQ(0u, comp.calls);
}

TEST_F(rc_uct, put_short_lands_before_completion_of_a_flush) {
    open();
    rc_buffer &peer = alloc(4096, true, 2);
    std::vector<uint8_t> expected = contents(peer);
    std::vector<uint8_t> bytes    = make_pattern(m_iface_attr.cap.put.max_short,
                                                 77);
    completion flush;

    ASSERT_GT(m_iface_attr.cap.put.max_short, 0u);
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep[0], bytes.data(), bytes.size(),
                                       remote(peer, 9), peer.rkey.rkey));
    memcpy(&expected[9], bytes.data(), bytes.size());
    bytes.assign(bytes.size(), 0);  /* The request holds its own copy */
    if (uct_ep_flush(m_ep[0], 0, &flush.super) == UCS_INPROGRESS) {
        wait(&flush.super);
    }
    EXPECT_TRUE(contents(peer) == expected);
}

TEST_F(rc_uct, put_bcopy_packs_and_lands) {
    open();
    rc_buffer &peer = alloc(65536, true, 2);
    std::vector<uint8_t> expected = contents(peer);
    std::vector<uint8_t> bytes    = make_pattern(m_iface_attr.cap.put.max_bcopy,
                                                 5);
    completion flush;
    ssize_t packed;

    packed = uct_ep_put_bcopy(m_ep[0], [](void *dest, void *arg) -> size_t {
        std::vector<uint8_t> *src = (std::vector<uint8_t>*)arg;
        memcpy(dest, src->data(), src->size());
        return src->size();
    }, &bytes, remote(peer, 100), peer.rkey.rkey);
    ASSERT_EQ((ssize_t)bytes.size(), packed);
    memcpy(&expected[100], bytes.data(), bytes.size());
    if (uct_ep_flush(m_ep[0], 0, &flush.super) == UCS_INPROGRESS) {
        wait(&flush.super);
    }
    EXPECT_TRUE(contents(peer) == expected);
}

TEST_F(rc_uct, get_bcopy_unpacks_before_completion) {
    open();
    rc_buffer &peer = alloc(65536, true, 2);
    std::vector<uint8_t> source = contents(peer);
    size_t length               = m_iface_attr.cap.get.max_bcopy - 3;
    std::vector<uint8_t> out;
    completion comp;

    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_bcopy(m_ep[0], [](void *arg, const void *data,
                                           size_t length) {
                  std::vector<uint8_t> *dst = (std::vector<uint8_t>*)arg;
                  dst->assign((const uint8_t*)data,
                              (const uint8_t*)data + length);
              }, &out, length, remote(peer, 3), peer.rkey.rkey,
              &comp.super));
    wait(&comp.super);
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_TRUE(std::vector<uint8_t>(source.begin() + 3,
                                     source.begin() + 3 + length) == out);
}

/* Peers' regions written in any order (UCX_GPUMEM_IB_ORDER=any_order, as
 * this side's): a write's completion says nothing of its bytes' landing, a
 * READ after it does */
TEST_F(rc_uct, flush_after_writes_in_any_order_reads_back_first) {
    open(NULL, NULL, "ORDER", "any_order");
    rc_buffer &local = alloc(65536, false, 1);
    rc_buffer &peer  = alloc(65536, true, 2);
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(m_ep[0], uct_gpumem_rc_ep_t);
    std::vector<int> order;
    completion put, flush;

    put.order   = &order;
    put.id      = 1;
    flush.order = &order;
    flush.id    = 2;
    uct_iov_t io = iov(local, 0, 65536);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &io, 1,
                                               remote(peer, 0),
                                               peer.rkey.rkey, &put.super));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep[0], 0, &flush.super));
    EXPECT_EQ(1u, ep->read_backs);
    wait(&flush.super);
    EXPECT_EQ(UCS_OK, flush.status);
    EXPECT_EQ(std::vector<int>({1, 2}), order);
    EXPECT_TRUE(contents(peer) == contents(local));

    /* Nothing written since: nothing to read back */
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep[0], 0, NULL));
    EXPECT_EQ(1u, ep->read_backs);

    /* A fence after a write reads back too, and the next request waits */
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &io, 1,
                                               remote(peer, 0),
                                               peer.rkey.rkey, NULL));
    EXPECT_EQ(UCS_OK, uct_ep_fence(m_ep[0], 0));
    EXPECT_EQ(2u, ep->read_backs);
    drain();
    EXPECT_TRUE(m_failed.empty());
}

TEST_F(rc_uct, flush_after_writes_in_order_reads_nothing_back) {
    open();
    rc_buffer &local = alloc(4096, false, 1);
    rc_buffer &peer  = alloc(4096, true, 2);
    uct_gpumem_rc_ep_t *ep = ucs_derived_of(m_ep[0], uct_gpumem_rc_ep_t);

    ASSERT_EQ(UCS_OK, rdma(true, local, 0, peer, 0, 4096));
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep[0], 0, NULL));
    EXPECT_EQ(UCS_OK, uct_ep_fence(m_ep[0], 0));
    EXPECT_EQ(0u, ep->read_backs);
}

/* Seed 000, In_order: "the writes of one queue pair land in the order its
 * entries and its peer's were posted", a peer's writes and the bytes of
 * this process's reads alike. A large write (or read), then a small one
 * behind it with no fence: whoever sees the small one's bytes, before any
 * completion is polled, sees every byte of the large one */
struct rc_order_case {
    bool put;     /* A peer's writes; else the bytes of this side's reads */
    bool device;  /* Landing in device memory; else in host memory */
};

class rc_uct_order : public rc_uct,
                     public ::testing::WithParamInterface<rc_order_case> {
protected:
    /* Eight bytes of @a buffer at @a offset, as they are now */
    uint64_t peek(const rc_buffer &buffer, size_t offset) {
        uint64_t value;

        if (buffer.device) {
            EXPECT_EQ(0, m_memcpy(&value, (uint8_t*)buffer.address + offset,
                                  sizeof(value)));
        } else {
            value = *(volatile uint64_t*)((uint8_t*)buffer.address + offset);
        }
        ucs_memory_cpu_load_fence();
        return value;
    }

    /* Posts @a length bytes from @a source to @a landing at @a offset, by
     * a write or by a read as the case says */
    void post(rc_buffer &source, rc_buffer &landing, size_t offset,
              size_t length, completion &comp) {
        ucs_status_t status;

        if (GetParam().put) {
            uct_iov_t local = iov(source, 0, length);
            status = uct_ep_put_zcopy(m_ep[0], &local, 1,
                                      remote(landing, offset),
                                      landing.rkey.rkey, &comp.super);
        } else {
            uct_iov_t local = iov(landing, offset, length);
            status = uct_ep_get_zcopy(m_ep[0], &local, 1, remote(source, 0),
                                      source.rkey.rkey, &comp.super);
        }
        ASSERT_EQ(UCS_INPROGRESS, status) << ucs_status_string(status);
    }
};

TEST_P(rc_uct_order, in_order_bytes_land_in_posting_order) {
    const size_t big = 1024 * 1024;
    ASSERT_NO_FATAL_FAILURE(open(NULL, NULL, "ORDER", "in_order"));
    rc_buffer &source  = alloc(big, false, 1);
    rc_buffer &flag    = alloc(sizeof(uint64_t), false, 9);
    rc_buffer &landing = alloc(big + sizeof(uint64_t), GetParam().device, 2);
    std::vector<uint8_t> zeros(landing.length, 0);

    for (unsigned round = 1; round <= 8; ++round) {
        completion big_done, flag_done;

        /* Clear where the bytes land; each round has its own bytes */
        if (landing.device) {
            ASSERT_EQ(0, m_memcpy(landing.address, zeros.data(),
                                  zeros.size()));
        } else {
            memset(landing.address, 0, landing.length);
        }
        memset(source.address, round * 37, big);
        *(uint64_t*)flag.address = round;

        ASSERT_NO_FATAL_FAILURE(post(source, landing, 0, big, big_done));
        ASSERT_NO_FATAL_FAILURE(post(flag, landing, big, sizeof(uint64_t),
                                     flag_done));

        /* No progress: the completions stay unpolled while the bytes land */
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(120);
        while ((peek(landing, big) != round) && (ucs_get_time() < deadline)) {
            sched_yield();
        }
        ASSERT_EQ(round, peek(landing, big)) << "the small one never landed";

        std::vector<uint8_t> landed = contents(landing);
        size_t missing = std::count_if(landed.begin(), landed.begin() + big,
                                       [round](uint8_t byte) {
                                           return byte != (uint8_t)(round * 37);
                                       });
        EXPECT_EQ(0u, missing) << "round " << round << ": bytes of the large "
                               << "one not there when the small one was";

        wait(&big_done.super);
        wait(&flag_done.super);
        EXPECT_EQ(UCS_OK, big_done.status);
        EXPECT_EQ(UCS_OK, flag_done.status);
    }
}

INSTANTIATE_TEST_SUITE_P(
        put_and_get, rc_uct_order,
        ::testing::Values(rc_order_case{true, false},
                          rc_order_case{true, true},
                          rc_order_case{false, false},
                          rc_order_case{false, true}),
        [](const ::testing::TestParamInfo<rc_order_case> &info) {
            return std::string(info.param.put ? "peer_writes" : "own_reads") +
                   (info.param.device ? "_into_device" : "_into_host");
        });

/* The bounce buffers of bcopy are a pool of UCX's (uct_iface_mpool_init):
 * while all are in flight, operations answer UCS_ERR_NO_RESOURCE and wait
 * in the pending queue, which a completion dispatches */
TEST_F(rc_uct, bounce_buffers_all_in_flight_give_no_resource) {
    ASSERT_NO_FATAL_FAILURE(open("TX_MAX_BUFS", "2"));
    rc_buffer &peer = alloc(65536, true, 2);
    std::vector<uint8_t> source   = contents(peer);
    std::vector<uint8_t> expected = source;
    std::vector<uint8_t> out[2];
    std::vector<uint8_t> bytes    = make_pattern(100, 9);
    uct_unpack_callback_t unpack  = [](void *arg, const void *data,
                                       size_t length) {
        ((std::vector<uint8_t>*)arg)->assign((const uint8_t*)data,
                                             (const uint8_t*)data + length);
    };
    uct_pack_callback_t pack      = [](void *dest, void *arg) -> size_t {
        std::vector<uint8_t> *src = (std::vector<uint8_t>*)arg;
        memcpy(dest, src->data(), src->size());
        return src->size();
    };

    struct pending_put {
        uct_pending_req_t super;
        rc_uct            *test;
        std::vector<uint8_t> *bytes;
        uct_pack_callback_t pack;
        uint64_t          remote_addr;
        uct_rkey_t        rkey;
        ssize_t           packed = 0;
    } req;
    completion comps[2], flush;
    log_capture log;

    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_get_bcopy(m_ep[0], unpack, &out[i], 1000,
                                   remote(peer, i * 1000), peer.rkey.rkey,
                                   &comps[i].super));
    }

    EXPECT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_get_bcopy(m_ep[0], unpack, &out[0], 1000,
                               remote(peer, 0), peer.rkey.rkey,
                               &comps[0].super));
    EXPECT_EQ((ssize_t)UCS_ERR_NO_RESOURCE,
              uct_ep_put_bcopy(m_ep[0], pack, &bytes, remote(peer, 5000),
                               peer.rkey.rkey));
    EXPECT_EQ(0u, log.count({"gpumem_rc"})) << "no room is no error: "
                                            << log.text();

    /* No room: the request waits, rather than being told to post again */
    req.test        = this;
    req.bytes       = &bytes;
    req.pack        = pack;
    req.remote_addr = remote(peer, 5000);
    req.rkey        = peer.rkey.rkey;
    req.super.func  = [](uct_pending_req_t *self) -> ucs_status_t {
        pending_put *r = ucs_container_of(self, pending_put, super);
        r->packed      = uct_ep_put_bcopy(r->test->m_ep[0], r->pack, r->bytes,
                                          r->remote_addr, r->rkey);
        return (r->packed < 0) ? (ucs_status_t)r->packed : UCS_OK;
    };
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep[0], &req.super, 0));

    wait(&comps[1].super);
    drain();
    EXPECT_EQ((ssize_t)bytes.size(), req.packed) << "dispatched once a "
                                                    "buffer came back";
    if (uct_ep_flush(m_ep[0], 0, &flush.super) == UCS_INPROGRESS) {
        wait(&flush.super);
    }

    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(UCS_OK, comps[i].status);
        EXPECT_TRUE(std::vector<uint8_t>(source.begin() + i * 1000,
                                         source.begin() + (i + 1) * 1000) ==
                    out[i]);
    }
    memcpy(&expected[5000], bytes.data(), bytes.size());
    EXPECT_TRUE(contents(peer) == expected);
    EXPECT_TRUE(m_failed.empty());
}

/* A fence of the interface is every endpoint's: one that cannot read back
 * (no bounce buffer) makes the interface's fail too, and a fence again,
 * once one came back, succeeds */
TEST_F(rc_uct, iface_fence_tells_an_endpoint_fence_failure) {
    ASSERT_NO_FATAL_FAILURE(open("TX_MAX_BUFS", "1", "ORDER", "any_order"));
    rc_buffer &local       = alloc(4096, false, 1);
    rc_buffer &peer        = alloc(4096, true, 2);
    uct_gpumem_rc_ep_t *ep = rc_ep(0);
    uct_iov_t io           = iov(local, 0, 4096);
    std::vector<uint8_t> out;
    completion put, get;

    ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(m_ep[0], &io, 1,
                                               remote(peer, 0),
                                               peer.rkey.rkey, &put.super));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_bcopy(m_ep[0], [](void *arg, const void *data,
                                           size_t length) {
                  ((std::vector<uint8_t>*)arg)->assign(
                          (const uint8_t*)data, (const uint8_t*)data + length);
              }, &out, 16, remote(peer, 0), peer.rkey.rkey, &get.super));

    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_fence(m_ep[0], 0));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_iface_fence(m_iface, 0));
    EXPECT_EQ(0u, ep->read_backs);

    wait(&get.super);
    EXPECT_EQ(UCS_OK, uct_iface_fence(m_iface, 0));
    EXPECT_EQ(1u, ep->read_backs);
    drain();
    EXPECT_EQ(UCS_OK, put.status);
    EXPECT_TRUE(m_failed.empty());
}

/* UCX_GPUMEM_RC_* of the queue pairs, with UCX's names for them, and the
 * bounce buffers' */
TEST_F(rc_uct, queue_pair_and_bounce_buffer_settings_exist) {
    ASSERT_NO_FATAL_FAILURE(open());
    EXPECT_EQ("7", setting("RNR_RETRY_COUNT"));
    EXPECT_EQ("64", setting("HOP_LIMIT"));
    EXPECT_EQ("0", setting("SL"));
    EXPECT_EQ("auto", setting("PKEY"));
    EXPECT_NE("(none)", setting("RNR_TIMEOUT"));
    EXPECT_EQ("-1", setting("TX_MAX_BUFS"));
    EXPECT_EQ("64", setting("TX_BUFS_GROW"));
}

/* The defaults are the values the queue pairs always had */
TEST_F(rc_uct, queue_pairs_have_the_default_timers_and_path) {
    ASSERT_NO_FATAL_FAILURE(open());
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    ASSERT_EQ(0, ibv_query_qp(rc_ep(0)->qp, &attr,
                              IBV_QP_MIN_RNR_TIMER | IBV_QP_RNR_RETRY |
                              IBV_QP_AV | IBV_QP_PKEY_INDEX, &init_attr));
    EXPECT_EQ(12, attr.min_rnr_timer);
    EXPECT_EQ(7, attr.rnr_retry);
    EXPECT_EQ(0, attr.pkey_index);
    EXPECT_EQ(64, rc_iface()->config.hop_limit);
    EXPECT_EQ(0, rc_iface()->config.sl);
}

TEST_F(rc_uct, queue_pair_settings_take_effect) {
    const settings_t settings = {{"RNR_TIMEOUT", "10ms"},
                                 {"RNR_RETRY_COUNT", "3"},
                                 {"HOP_LIMIT", "17"}, {"SL", "2"},
                                 {"PKEY", "0x7fff"}};
    ASSERT_NO_FATAL_FAILURE(open(settings));
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    ASSERT_EQ(0, ibv_query_qp(rc_ep(0)->qp, &attr,
                              IBV_QP_MIN_RNR_TIMER | IBV_QP_RNR_RETRY |
                              IBV_QP_AV | IBV_QP_PKEY_INDEX, &init_attr));
    EXPECT_EQ(20, attr.min_rnr_timer) << "10.24 ms";
    EXPECT_EQ(3, attr.rnr_retry);
    /* The port's default P_Key is partition 0x7fff's full member */
    EXPECT_EQ(0, attr.pkey_index);
    /* What the queue pairs were given: for RoCE v2 the kernel takes the
     * route's TTL for the hop limit, and soft-RoCE keeps no service level
     * to query */
    EXPECT_EQ(17, rc_iface()->config.hop_limit);
    EXPECT_EQ(2, rc_iface()->config.sl);

    /* And the pair moves bytes */
    check_transfer(true, false, true, 4096);
}

TEST_F(rc_uct, queue_pair_settings_out_of_range_refuse_to_open) {
    open_md();
    for (auto &bad : settings_t{{"HOP_LIMIT", "256"}, {"SL", "16"},
                                {"RETRY_COUNT", "8"},
                                {"RNR_RETRY_COUNT", "8"},
                                {"TX_MAX_BUFS", "0"},
                                {"PKEY", "0x8000"}, {"PKEY", "0x1234"}}) {
        log_capture log;

        EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_iface({bad}))
                << bad.first << "=" << bad.second;
        EXPECT_EQ(1u, log.count({"gpumem_rc", bad.first.c_str()}))
                << log.text();
        if (m_iface != NULL) {
            uct_iface_close(m_iface);
            m_iface = NULL;
        }
    }
}

/* Put short moves what the queue pairs take inline: MAX_INLINE where the
 * device takes that many, what ibv_create_qp() answers where it takes
 * fewer */
TEST_F(rc_uct, max_inline_is_capped_by_the_queue_pairs) {
    ASSERT_NO_FATAL_FAILURE(open("MAX_INLINE", "1048576"));
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;

    ASSERT_GT(m_iface_attr.cap.put.max_short, 0u);
    EXPECT_LT(m_iface_attr.cap.put.max_short, 1048576u)
            << "no device takes 1 MiB inline";
    ASSERT_EQ(0, ibv_query_qp(rc_ep(0)->qp, &attr, IBV_QP_CAP, &init_attr));
    EXPECT_GE(init_attr.cap.max_inline_data, m_iface_attr.cap.put.max_short);

    rc_buffer &peer = alloc(m_iface_attr.cap.put.max_short + 16, true, 2);
    std::vector<uint8_t> expected = contents(peer);
    std::vector<uint8_t> bytes    = make_pattern(m_iface_attr.cap.put.max_short,
                                                 33);
    completion flush;

    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep[0], bytes.data(), bytes.size(),
                                       remote(peer, 8), peer.rkey.rkey));
    memcpy(&expected[8], bytes.data(), bytes.size());
    if (uct_ep_flush(m_ep[0], 0, &flush.super) == UCS_INPROGRESS) {
        wait(&flush.super);
    }
    EXPECT_TRUE(contents(peer) == expected);
}

TEST_F(rc_uct, max_inline_the_device_takes_stays_as_configured) {
    ASSERT_NO_FATAL_FAILURE(open("MAX_INLINE", "16"));
    EXPECT_EQ(16u, m_iface_attr.cap.put.max_short);
}
