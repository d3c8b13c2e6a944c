/**
 * gpumem tests: what a peer can do to registered memory, for real: RDMA
 * WRITE and READ through two RC queue pairs of one device connected to each
 * other, against regions of each access. Skipped where no device exists.
 *
 * See file LICENSE for terms.
 */

#include "ib_test.h"

#include <common/log_capture.h>

#include <cstring>
#include <sys/mman.h>

using gpumem_test::dmabuf_params;
using gpumem_test::log_capture;


class ib_rdma : public gpumem_test::ib_md_test {
protected:
    static constexpr size_t length = 65536;

    virtual void SetUp() {
        gpumem_test::ib_md_test::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        open_md();

        m_qps.reset(new gpumem_test::loopback_qps(md()->context, md()->pd));
        ASSERT_TRUE(m_qps->ready()) << m_qps->why();

        m_source = alloc();
        m_target = alloc();
        memset(m_source, 0xab, length);
        memset(m_target, 0, length);

        /* This process's side only needs a local region: the NIC reads it
         * for our writes and writes it for our reads */
        ASSERT_EQ(UCS_OK, mem_reg(m_source, length,
                                  UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                                  &m_source_memh));
        ASSERT_EQ(GPUMEM_REG_ACCESS_LOCAL,
                  uct_gpumem_ib_memh_view(m_source_memh)->region->access);
    }

    virtual void TearDown() {
        if (m_target_memh != NULL) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m_target_memh));
        }
        if (m_source_memh != NULL) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m_source_memh));
        }
        m_qps.reset();
        for (void *p : {m_source, m_target}) {
            if (p != NULL) {
                munmap(p, length);
            }
        }
        gpumem_test::ib_md_test::TearDown();
    }

    static void *alloc() {
        void *p = mmap(NULL, length, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(MAP_FAILED, p);
        return (p == MAP_FAILED) ? NULL : p;
    }

    /* The target registered with UCT flags; a peer knows it by its packed
     * remote key */
    void register_target(unsigned flags) {
        ASSERT_EQ(UCS_OK, mem_reg(m_target, length, flags, &m_target_memh));
    }

    gpumem_reg_remote_view_t peer_view() {
        std::vector<uint8_t> packed(GPUMEM_REG_WIRE_SIZE);
        gpumem_reg_remote_view_t remote_view;
        uct_rkey_bundle_t bundle;

        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, m_target_memh,
                                           packed.data()));
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(),
                                          &bundle));
        remote_view = *reinterpret_cast<const gpumem_reg_remote_view_t*>(
                bundle.rkey);
        EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &bundle));
        return remote_view;
    }

    gpumem_reg_local_t source(size_t at, size_t bytes) {
        gpumem_reg_local_t local;

        EXPECT_EQ(UCS_OK, gpumem_reg_view_local(
                uct_gpumem_ib_memh_view(m_source_memh), at, bytes, &local));
        return local;
    }

    /* The dma-buf registered through its host pages (soft-RoCE refuses
     * dma-bufs: said once, not asserted here) */
    void register_dmabuf(const gpumem_test::udmabuf &dmabuf,
                         uct_mem_h *memh_p) {
        log_capture log;

        ASSERT_EQ(UCS_OK, reg_memory(
                dmabuf_params(dmabuf.fd(), 0, length,
                              (uintptr_t)dmabuf.host_address(),
                              dmabuf.host_address()),
                memh_p));
    }

    static size_t count(const void *p, uint8_t value, size_t bytes) {
        const uint8_t *b = static_cast<const uint8_t*>(p);
        size_t n         = 0;

        for (size_t i = 0; i < bytes; ++i) {
            n += (b[i] == value) ? 1 : 0;
        }
        return n;
    }

    std::unique_ptr<gpumem_test::loopback_qps> m_qps;
    void      *m_source      = NULL;
    void      *m_target      = NULL;
    uct_mem_h m_source_memh  = NULL;
    uct_mem_h m_target_memh  = NULL;
};


TEST_F(ib_rdma, rdma_write_lands_in_a_remote_write_region) {
    register_target(UCT_MD_MEM_ACCESS_REMOTE_PUT);
    gpumem_reg_remote_view_t peer = peer_view();

    ASSERT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_WRITE,
                                          source(0, length), peer.address,
                                          peer.rkey));
    EXPECT_EQ(length, count(m_target, 0xab, length));
}

TEST_F(ib_rdma, rdma_read_from_a_remote_region) {
    register_target(UCT_MD_MEM_ACCESS_ALL);
    memset(m_target, 0x3c, length);
    memset(m_source, 0, length);
    gpumem_reg_remote_view_t peer = peer_view();

    ASSERT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_READ, source(0, length),
                                          peer.address, peer.rkey));
    EXPECT_EQ(length, count(m_source, 0x3c, length));
}

TEST_F(ib_rdma, rdma_write_through_a_remote_slice_lands_at_its_offset) {
    gpumem_reg_remote_view_t slice;

    register_target(UCT_MD_MEM_ACCESS_ALL);
    gpumem_reg_remote_view_t peer = peer_view();
    ASSERT_EQ(UCS_OK, gpumem_reg_remote_view_slice(&peer, 4096, 512, &slice));

    ASSERT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_WRITE, source(0, 512),
                                          slice.address, slice.rkey));
    EXPECT_EQ(512u, count(m_target, 0xab, length));
    EXPECT_EQ(512u, count(static_cast<uint8_t*>(m_target) + 4096, 0xab, 512));
}

/* The seed: a local region lets no peer in, even one who has its key */
TEST_F(ib_rdma, rdma_write_into_a_local_region_fails_with_remote_access_error) {
    register_target(UCT_MD_MEM_ACCESS_LOCAL_WRITE);
    const gpumem_reg_view_t *view = uct_gpumem_ib_memh_view(m_target_memh);

    ASSERT_EQ(GPUMEM_REG_ACCESS_LOCAL, view->region->access);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              m_qps->rdma(IBV_WR_RDMA_WRITE, source(0, 4096), view->address,
                          view->region->mr.rkey));
    EXPECT_EQ(length, count(m_target, 0, length)) << "not a byte landed";
}

/* Remote write grants writes only: a read is refused */
TEST_F(ib_rdma, rdma_read_from_a_remote_write_region_fails_with_access_error) {
    register_target(UCT_MD_MEM_ACCESS_REMOTE_PUT);
    gpumem_reg_remote_view_t peer = peer_view();

    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              m_qps->rdma(IBV_WR_RDMA_READ, source(0, 4096), peer.address,
                          peer.rkey));
}

/* Bounds are the NIC's too: a write one byte past the region is refused */
TEST_F(ib_rdma, rdma_write_past_the_region_fails_with_access_error) {
    register_target(UCT_MD_MEM_ACCESS_ALL);
    gpumem_reg_remote_view_t peer = peer_view();

    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              m_qps->rdma(IBV_WR_RDMA_WRITE, source(0, 2),
                          peer.address + peer.length - 1, peer.rkey));
}

/* The dma-buf that soft-RoCE refuses, registered through its host pages
 * and named by its address, takes a peer's write */
TEST_F(ib_rdma, rdma_write_lands_in_a_dmabuf_registered_through_host_pages) {
    gpumem_test::udmabuf dmabuf(length);
    gpumem_reg_remote_view_t peer;
    uct_mem_h memh;

    if (!dmabuf.made()) {
        GTEST_SKIP() << dmabuf.why();
    }
    memset(dmabuf.host_address(), 0, length);
    ASSERT_NO_FATAL_FAILURE(register_dmabuf(dmabuf, &memh));
    ASSERT_EQ(UCS_OK, gpumem_reg_view_export(uct_gpumem_ib_memh_view(memh),
                                             &peer));
    EXPECT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_WRITE, source(0, length),
                                          peer.address, peer.rkey));
    EXPECT_EQ(length, count(dmabuf.host_address(), 0xab, length));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

/* Seed 000: Dmabuf, "the kernel keeps the dma-buf while it is registered, so
 * fd may be closed once register returns": the dma-buf's descriptor closed
 * after the registration (here soft-RoCE's, of its host pages), a peer's
 * write lands and a peer's read takes the bytes, until the deregistration */
TEST_F(ib_rdma, dmabuf_fd_closed_after_registration_still_moves_bytes) {
    gpumem_test::udmabuf dmabuf(length);
    gpumem_reg_remote_view_t peer;
    uct_mem_h memh;

    if (!dmabuf.made()) {
        GTEST_SKIP() << dmabuf.why();
    }
    memset(dmabuf.host_address(), 0, length);
    ASSERT_NO_FATAL_FAILURE(register_dmabuf(dmabuf, &memh));
    dmabuf.close_fd();

    ASSERT_EQ(UCS_OK, gpumem_reg_view_export(uct_gpumem_ib_memh_view(memh),
                                             &peer));
    EXPECT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_WRITE, source(0, length),
                                          peer.address, peer.rkey));
    EXPECT_EQ(length, count(dmabuf.host_address(), 0xab, length));

    memset(dmabuf.host_address(), 0x5c, length);
    memset(m_source, 0, length);
    EXPECT_EQ(IBV_WC_SUCCESS, m_qps->rdma(IBV_WR_RDMA_READ, source(0, length),
                                          peer.address, peer.rkey));
    EXPECT_EQ(length, count(m_source, 0x5c, length));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}
