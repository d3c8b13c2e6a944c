/**
 * gpumem tests: device memory of emu GPUs registered with a real RDMA device
 * through uct_md_mem_reg(), each way (the driver's dma-buf, the BAR
 * window), and a peer's RDMA WRITE into it, read back through the GPU's
 * copy engine. Skipped where no device exists.
 *
 * See file LICENSE for terms.
 */

#include "ib_test.h"

#include <common/log_capture.h>

#include <gpumem/gpumem.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

using gpumem_test::log_capture;


class ib_device_rdma : public gpumem_test::ib_md_test {
protected:
    static constexpr size_t length = 65536;

    virtual void SetUp() {
        gpumem_test::ib_md_test::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }

        ASSERT_NO_FATAL_FAILURE(find_device_calls());

        m_source.resize(length);
        for (size_t i = 0; i < length; ++i) {
            m_source[i] = (uint8_t)(i * 7 + 3);
        }
    }

    virtual void TearDown() {
        if (m_source_memh != NULL) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m_source_memh));
        }
        m_qps.reset();
        for (void *device : m_devices) {
            EXPECT_EQ(0, m_free(device));
        }
        gpumem_test::ib_md_test::TearDown();
    }

    /* The domain with UCX_GPUMEM_IB_DEVICE_MEM_REG=@a setting, connected
     * queue pairs, the host source of the peer's writes, and device memory
     * to register */
    void open(const char *setting) {
        open_md("DEVICE_MEM_REG", setting);
        ASSERT_TRUE(md()->gpus != NULL) << "the domain has no GPUs";

        m_qps.reset(new gpumem_test::loopback_qps(md()->context, md()->pd));
        ASSERT_TRUE(m_qps->ready()) << m_qps->why();
        ASSERT_EQ(UCS_OK, mem_reg(m_source.data(), length,
                                  UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                                  &m_source_memh));
        m_device_mem = device_alloc();
        ASSERT_TRUE(m_device_mem != NULL);
    }

    void *device_alloc() {
        std::vector<uint8_t> zeros(length, 0);
        void *device = NULL;

        EXPECT_EQ(0, m_malloc(&device, length));
        if (device != NULL) {
            m_devices.push_back(device);
            EXPECT_EQ(0, m_memcpy(device, zeros.data(), length));
        }
        return device;
    }

    /* Registers @a device, which the debug log says goes through the way
     * that @a words name, for the reason they name */
    void register_through(void *device, const std::vector<std::string> &words,
                          uct_mem_h *memh_p) {
        std::vector<std::string> line = {m_device, "bytes of device memory"};
        log_capture log(UCS_LOG_LEVEL_DEBUG, log_capture::LEVEL_RAISED);

        line.insert(line.end(), words.begin(), words.end());
        ASSERT_EQ(UCS_OK, mem_reg(device, length, UCT_MD_MEM_ACCESS_ALL,
                                  memh_p));
        EXPECT_EQ(1u, log.count(line)) << log.text("gpumem");
        m_fallback_said = log.count({m_device, "refuses to register dma-bufs",
                                     "host pages"});
    }

    /* Registration of m_device is refused, with a line naming @a words */
    void expect_refused(const std::vector<std::string> &words) {
        unsigned num_regions = md()->domain.num_regions;
        unsigned refcount    = md()->gpus->refcount;
        uct_mem_h memh       = (uct_mem_h)0x5a;
        log_capture log;

        EXPECT_EQ(UCS_ERR_UNSUPPORTED, mem_reg(m_device_mem, length,
                                               UCT_MD_MEM_ACCESS_ALL, &memh));
        EXPECT_EQ((uct_mem_h)0x5a, memh);
        EXPECT_EQ(num_regions, md()->domain.num_regions) << "none registered";
        EXPECT_EQ(refcount, md()->gpus->refcount) << "nothing held";
        EXPECT_EQ(1u, log.count(words)) << log.text();
    }

    /* The source's bytes, as the queue pair names them: a registration
     * may begin before them (a cached one begins at a page) */
    void source_bytes(gpumem_reg_local_t *local_p) {
        const gpumem_reg_view_t *view = uct_gpumem_ib_memh_view(
                m_source_memh);

        ASSERT_EQ(UCS_OK, gpumem_reg_view_local(
                view, (uintptr_t)m_source.data() - view->address, length,
                local_p));
    }

    /* What a peer is sent of the registration @a memh */
    gpumem_reg_remote_view_t remote_view(uct_mem_h memh) {
        std::vector<uint8_t> packed(GPUMEM_REG_WIRE_SIZE);
        gpumem_reg_remote_view_t peer = {};
        uct_rkey_bundle_t bundle;

        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed.data()));
        if (uct_rkey_unpack(m_component, packed.data(), &bundle) == UCS_OK) {
            peer = *reinterpret_cast<const gpumem_reg_remote_view_t*>(
                    bundle.rkey);
            EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &bundle));
        }
        return peer;
    }

    /* A peer writes the source into the device memory @a memh registers,
     * by the key it was sent; the GPU's copy engine reads every byte back */
    void expect_rdma_write_lands(uct_mem_h memh, void *device) {
        std::vector<uint8_t> packed(GPUMEM_REG_WIRE_SIZE);
        std::vector<uint8_t> back(length, 0);
        gpumem_reg_remote_view_t peer;
        gpumem_reg_local_t local;
        uct_rkey_bundle_t bundle;
        size_t wrong = 0;

        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed.data()));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(),
                                          &bundle));
        peer = *reinterpret_cast<const gpumem_reg_remote_view_t*>(
                bundle.rkey);
        EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &bundle));
        EXPECT_EQ((uintptr_t)device, peer.address)
                << "named by its device address";
        EXPECT_EQ(length, peer.length);

        ASSERT_NO_FATAL_FAILURE(source_bytes(&local));
        ASSERT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_WRITE, local,
                                              peer.address, peer.rkey));

        ASSERT_EQ(0, m_memcpy(back.data(), device, length));
        for (size_t i = 0; i < length; ++i) {
            wrong += (back[i] != m_source[i]) ? 1 : 0;
        }
        EXPECT_EQ(0u, wrong) << "bytes of " << length << " that differ";
    }

    std::unique_ptr<gpumem_test::loopback_qps> m_qps;
    std::vector<uint8_t> m_source;
    uct_mem_h            m_source_memh   = NULL;
    std::vector<void*>   m_devices;
    void                 *m_device_mem   = NULL;
    size_t               m_fallback_said = 0;  /* By the last registration */
};


TEST_F(ib_device_rdma, device_memory_type_is_the_gpumem_setting) {
    uct_md_attr_t attr;

    setenv("UCX_GPUMEM_MEM_TYPE", "rocm", 1);
    open_md();
    unsetenv("UCX_GPUMEM_MEM_TYPE");
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_ROCM),
              attr.cap.reg_mem_types);
}

TEST_F(ib_device_rdma, bar_window_takes_a_peers_rdma_write) {
    uct_mem_h memh;

    ASSERT_NO_FATAL_FAILURE(open("bar"));
    register_through(m_device_mem, {"registered through the BAR window",
                                    "UCX_GPUMEM_IB_DEVICE_MEM_REG=bar"},
                     &memh);

    const gpumem_reg_view_t *view = uct_gpumem_ib_memh_view(memh);
    EXPECT_EQ((uintptr_t)m_device_mem, view->address);
    EXPECT_EQ(length, view->length);
    EXPECT_TRUE(view->host_address != NULL) << "the window";
    expect_rdma_write_lands(memh, m_device_mem);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

/* Where the kernel has /dev/udmabuf the emu exports a dma-buf; soft-RoCE
 * refuses it, and the window takes its place, said once */
TEST_F(ib_device_rdma, dmabuf_refused_falls_back_to_the_window_said_once) {
    size_t said = 0;
    uct_mem_h memh[2];
    void *device[2];
    std::string why;

    if (!gpumem_test::udmabuf_usable(&why)) {
        GTEST_SKIP() << why;
    }

    ASSERT_NO_FATAL_FAILURE(open("dmabuf"));
    device[0] = m_device_mem;
    device[1] = device_alloc();
    ASSERT_TRUE(device[1] != NULL);
    for (int i = 0; i < 2; ++i) {
        register_through(device[i], {"registered through the dma-buf",
                                     "UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf"},
                         &memh[i]);
        said += m_fallback_said;
    }
    if (said == 0) {
        RecordProperty("dmabuf", "registered by the device: no fallback");
    } else {
        EXPECT_EQ(1u, said);
    }

    for (int i = 0; i < 2; ++i) {
        expect_rdma_write_lands(memh[i], device[i]);
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh[i]));
    }
}

TEST_F(ib_device_rdma, auto_takes_the_dmabuf_where_the_driver_exports_one) {
    uct_mem_h memh;
    std::string why;

    if (!gpumem_test::udmabuf_usable(&why)) {
        GTEST_SKIP() << why;
    }

    ASSERT_NO_FATAL_FAILURE(open("auto"));
    register_through(m_device_mem, {"registered through the dma-buf",
                                    "exports a dma-buf"}, &memh);
    expect_rdma_write_lands(memh, m_device_mem);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

TEST_F(ib_device_rdma, auto_without_a_dmabuf_takes_the_bar_window) {
    uct_mem_h memh;

    ASSERT_NO_FATAL_FAILURE(open("auto"));
    {
        gpumem_test::driver_without_dmabuf no_dmabuf(md()->gpus);
        register_through(m_device_mem, {"registered through the BAR window",
                                        "exports no dma-buf here"}, &memh);
        EXPECT_EQ(0u, m_fallback_said);
    }
    expect_rdma_write_lands(memh, m_device_mem);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

TEST_F(ib_device_rdma, dmabuf_setting_without_a_dmabuf_is_unsupported) {
    ASSERT_NO_FATAL_FAILURE(open("dmabuf"));

    gpumem_test::driver_without_dmabuf no_dmabuf(md()->gpus);
    expect_refused({m_device, "cannot register",
                    "UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf, but the emu driver "
                    "exports no dma-buf"});
}

TEST_F(ib_device_rdma, memory_outside_a_small_bar_without_dmabuf_is_refused) {
    setenv("UCX_GPUMEM_EMU_BAR_SIZE", "16m", 1);
    open("auto");
    unsetenv("UCX_GPUMEM_EMU_BAR_SIZE");
    ASSERT_FALSE(HasFatalFailure());

    gpumem_test::driver_without_dmabuf no_dmabuf(md()->gpus);
    expect_refused({m_device, "exports no dma-buf", "lies outside the GPU's "
                    "BAR, which reaches only the first 16777216 bytes"});
}

/* The registration, not the handle, holds the device memory: a view that
 * outlives the handle keeps the window and the GPUs' reference */
TEST_F(ib_device_rdma, device_memory_is_held_while_a_view_of_it_lives) {
    gpumem_reg_view_t copy;
    unsigned refcount;
    uct_mem_h memh;

    /* A cached registration is a view of its own */
    ASSERT_EQ(UCS_OK, gpumem_test::config_modify(m_config, "GPUMEM_IB_",
                                                 "RCACHE", "no"));
    ASSERT_NO_FATAL_FAILURE(open("bar"));
    refcount = md()->gpus->refcount;
    ASSERT_EQ(UCS_OK, mem_reg(m_device_mem, length, UCT_MD_MEM_ACCESS_ALL,
                              &memh));
    EXPECT_EQ(refcount + 1, md()->gpus->refcount);

    gpumem_reg_view_copy(uct_gpumem_ib_memh_view(memh), &copy);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(refcount + 1, md()->gpus->refcount);
    EXPECT_EQ(0, ((volatile uint8_t*)copy.host_address)[length - 1])
            << "the window is still mapped";

    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&copy));
    EXPECT_EQ(refcount, md()->gpus->refcount);
}

/* The domain caches registrations of device memory, and the device stops
 * reaching them when the memory is freed: a peer that kept the key of freed
 * memory does not reach what is allocated there next */
TEST_F(ib_device_rdma, freed_memory_is_not_reached_through_a_cached_key) {
    std::vector<uint8_t> back(length, 0xff);
    const gpumem_reg_region_t *registration;
    gpumem_reg_remote_view_t stale;
    gpumem_reg_local_t local;
    uct_mem_h memh, again;
    void *next;
    size_t written;

    ASSERT_NO_FATAL_FAILURE(open("bar"));
    if (md()->rcache[GPUMEM_REG_ACCESS_REMOTE] == NULL) {
        GTEST_SKIP() << "the domain could not make its registration cache "
                        "(UCX's memory events are off)";
    }
    register_through(m_device_mem, {"registered through the BAR window"},
                     &memh);
    expect_rdma_write_lands(memh, m_device_mem);
    stale        = remote_view(memh);
    registration = uct_gpumem_ib_memh_view(memh)->region;
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));

    ASSERT_EQ(UCS_OK, mem_reg(m_device_mem, length, UCT_MD_MEM_ACCESS_ALL,
                              &again));
    EXPECT_EQ(registration, uct_gpumem_ib_memh_view(again)->region)
            << "registered again: the cached registration";
    EXPECT_EQ(stale.rkey, remote_view(again).rkey);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, again));

    EXPECT_EQ(0, m_free(m_device_mem));
    m_devices.erase(std::find(m_devices.begin(), m_devices.end(),
                              m_device_mem));
    next = device_alloc();
    ASSERT_TRUE(next != NULL);

    ASSERT_NO_FATAL_FAILURE(source_bytes(&local));
    EXPECT_NE(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_WRITE, local,
                                          stale.address, stale.rkey))
            << "the freed memory's key still reaches memory";
    ASSERT_EQ(0, m_memcpy(back.data(), next, length));
    written = length - std::count(back.begin(), back.end(), 0);
    EXPECT_EQ(0u, written) << "bytes of the next allocation (at "
                           << next << ", the freed memory was at "
                           << m_device_mem << ") written through it";

    /* The memory allocated next is registered anew, and reached */
    m_qps.reset(new gpumem_test::loopback_qps(md()->context, md()->pd));
    ASSERT_TRUE(m_qps->ready()) << m_qps->why();
    register_through(next, {"registered through the BAR window"}, &memh);
    expect_rdma_write_lands(memh, next);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}
