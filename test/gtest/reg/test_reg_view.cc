/**
 * gpumem tests: views, slices and descriptors (seeds 004 and 000), on a
 * driver that keeps its registrations in a table.
 *
 * See file LICENSE for terms.
 */

#include "reg_test.h"

#include <common/log_capture.h>

#include <cstdint>
#include <cstring>
#include <errno.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using gpumem_test::dmabuf_params;
using gpumem_test::log_capture;


/* A 4096-byte registration that the NIC names at 0x4000 and this process
 * maps at 0x1000, as in the seed's tests */
class reg_view : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_EQ(UCS_OK, gpumem_reg_domain_init(
                &m_domain, "mlx5_0", &gpumem_test::table_driver::ops,
                &m_driver));
        m_fd = memfd_create("gpumem_test_view", 0);
        ASSERT_GE(m_fd, 0) << strerror(errno);
        ASSERT_EQ(UCS_OK, make_view(GPUMEM_REG_ACCESS_REMOTE, &m_view));
    }

    virtual void TearDown() {
        if (m_view.region != NULL) {
            EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&m_view));
        }
        EXPECT_TRUE(m_driver.registered.empty()) << "a registration leaked";
        gpumem_reg_domain_cleanup(&m_domain);
        if (m_fd >= 0) {
            close(m_fd);
        }
    }

    ucs_status_t make_view(gpumem_reg_access_t access,
                           gpumem_reg_view_t *view_p) {
        gpumem_reg_params_t params = dmabuf_params(m_fd, 0, 4096, 0x4000,
                                                   (void*)0x1000, access);
        return gpumem_reg_register(&m_domain, &params, view_p);
    }

    gpumem_test::table_driver m_driver;
    gpumem_reg_domain_t       m_domain;
    gpumem_reg_view_t         m_view;
    int                       m_fd = -1;
};


TEST_F(reg_view, a_slice_moves_both_addresses_and_keeps_the_keys) {
    gpumem_reg_view_t slice;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&m_view, 1024, 512, &slice));
    EXPECT_EQ(0x4400u, slice.address) << "the NIC's address advances";
    EXPECT_EQ((void*)0x1400, slice.host_address) << "so does the host's";
    EXPECT_EQ(512u, slice.length);
    EXPECT_EQ(m_view.region, slice.region) << "same registration and keys";
    EXPECT_STREQ("mlx5_0", slice.region->domain->name);
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
}

TEST_F(reg_view, slices_are_bounded_by_the_registration) {
    struct {
        size_t offset, length;
        bool   fits;
    } cases[] = {
        {0,    4096,     true},
        {4096, 0,        true},
        {0,    4097,     false},
        {4096, 1,        false},
        {4097, 0,        false},
        {1,    SIZE_MAX, false},
        {SIZE_MAX, 2,    false},
        {SIZE_MAX, SIZE_MAX, false}
    };
    gpumem_reg_view_t slice;

    for (const auto &c : cases) {
        log_capture log;
        ucs_status_t status = gpumem_reg_view_slice(&m_view, c.offset,
                                                    c.length, &slice);

        EXPECT_EQ(c.fits ? UCS_OK : UCS_ERR_INVALID_PARAM, status)
                << "slice(" << c.offset << ", " << c.length << ")";
        if (status == UCS_OK) {
            EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
        }
    }
}

TEST_F(reg_view, slice_whose_end_wraps_is_refused_with_range_and_registration) {
    gpumem_reg_view_t slice;
    log_capture log;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_slice(&m_view, 1, SIZE_MAX, &slice));
    EXPECT_EQ(1u, log.count({"slice [1, 1+18446744073709551615)",
                             "out of bounds", "4096-byte registration",
                             "[0x4000, 0x5000)", "on mlx5_0"}))
            << log.text();
}

TEST_F(reg_view, refused_slice_takes_no_reference) {
    gpumem_reg_view_t slice;
    log_capture log;

    memset(&slice, 0x5a, sizeof(slice));
    EXPECT_NE(UCS_OK, gpumem_reg_view_slice(&m_view, 4000, 97, &slice));
    EXPECT_EQ(1u, m_view.region->refcount);
    EXPECT_EQ(0x5a5a5a5a5a5a5a5aull, slice.address) << "output untouched";
}

TEST_F(reg_view, a_slice_of_a_slice_is_bounded_by_the_slice) {
    gpumem_reg_view_t slice, inner;
    log_capture log;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&m_view, 1024, 512, &slice));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_slice(&slice, 0, 513, &inner));
    EXPECT_EQ(1u, log.count({"512-byte registration", "[0x4400, 0x4600)"}))
            << log.text();
    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&slice, 256, 256, &inner));
    EXPECT_EQ(0x4500u, inner.address);
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&inner));
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
}

TEST_F(reg_view, copies_share_one_registration) {
    gpumem_reg_view_t copy;

    gpumem_reg_view_copy(&m_view, &copy);
    EXPECT_EQ(m_view.region, copy.region);
    EXPECT_EQ(m_view.address, copy.address);
    EXPECT_EQ(m_view.length, copy.length);
    EXPECT_EQ(2u, m_view.region->refcount);
    EXPECT_EQ(1u, m_driver.num_register_calls);
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&copy));
    EXPECT_EQ(1u, m_view.region->refcount);
}

TEST_F(reg_view, registration_lives_until_the_last_view_goes) {
    gpumem_reg_view_t copy, slice;

    gpumem_reg_view_copy(&m_view, &copy);
    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&copy, 100, 100, &slice));

    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&m_view));
    EXPECT_EQ(1u, m_driver.registered.size());
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&copy));
    EXPECT_EQ(1u, m_driver.registered.size());
    EXPECT_EQ(0u, m_driver.num_deregister_calls);

    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
    EXPECT_TRUE(m_driver.registered.empty());
    EXPECT_EQ(1u, m_driver.num_deregister_calls);
}

TEST_F(reg_view, a_slice_keeps_the_registration_alive) {
    gpumem_reg_view_t slice;
    gpumem_reg_local_t local;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&m_view, 2048, 2048, &slice));
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&m_view));

    ASSERT_EQ(UCS_OK, gpumem_reg_view_local(&slice, 0, 2048, &local));
    EXPECT_EQ(1u, m_driver.registered.count(local.lkey));
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
    EXPECT_TRUE(m_driver.registered.empty());
}

TEST_F(reg_view, copies_from_many_threads_share_one_count) {
    std::vector<std::thread> threads;

    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([this]() {
            for (int i = 0; i < 10000; ++i) {
                gpumem_reg_view_t copy;
                gpumem_reg_view_copy(&m_view, &copy);
                EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&copy));
            }
        });
    }
    for (auto &thread : threads) {
        thread.join();
    }

    EXPECT_EQ(1u, m_view.region->refcount);
    EXPECT_EQ(0u, m_driver.num_deregister_calls);
}

TEST_F(reg_view, local_descriptor_names_the_bytes_with_the_lkey) {
    gpumem_reg_local_t local;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_local(&m_view, 100, 200, &local));
    EXPECT_EQ(0x4064u, local.address);
    EXPECT_EQ(200u, local.length);
    EXPECT_EQ(m_view.region->mr.lkey, local.lkey);
}

TEST_F(reg_view, local_descriptor_outside_the_view_is_invalid) {
    struct {
        size_t at, length;
    } cases[] = {{4000, 97}, {4097, 0}, {1, SIZE_MAX}, {SIZE_MAX, 1}};
    gpumem_reg_local_t local;

    for (const auto &c : cases) {
        log_capture log;

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_reg_view_local(&m_view, c.at, c.length, &local))
                << "local(" << c.at << ", " << c.length << ")";
        EXPECT_EQ(1u, log.count({"not in the 4096-byte registration",
                                 "on mlx5_0"}))
                << log.text();
    }
}

TEST_F(reg_view, local_descriptor_of_a_slice_is_bounded_by_the_slice) {
    gpumem_reg_view_t slice;
    gpumem_reg_local_t local;
    log_capture log;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&m_view, 1024, 1024, &slice));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_local(&slice, 1000, 25, &local));
    ASSERT_EQ(UCS_OK, gpumem_reg_view_local(&slice, 1000, 24, &local));
    EXPECT_EQ(0x4400u + 1000, local.address);
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
}

TEST_F(reg_view, remote_descriptor_names_the_offset_with_the_rkey) {
    gpumem_reg_remote_t remote;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_remote(&m_view, 4095, &remote));
    EXPECT_EQ(0x4fffu, remote.address);
    EXPECT_EQ(m_view.region->mr.rkey, remote.rkey);
    EXPECT_NE(m_view.region->mr.lkey, remote.rkey);
}

TEST_F(reg_view, remote_descriptor_outside_the_view_is_invalid) {
    gpumem_reg_remote_t remote;
    log_capture log;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_remote(&m_view, 4096, &remote));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_remote(&m_view, SIZE_MAX, &remote));
    EXPECT_EQ(2u, log.count({"is not in the 4096-byte registration"}))
            << log.text();
}

TEST_F(reg_view, remote_descriptor_is_refused_for_a_local_region) {
    gpumem_reg_view_t local_view;
    gpumem_reg_remote_t remote;
    log_capture log;

    ASSERT_EQ(UCS_OK, make_view(GPUMEM_REG_ACCESS_LOCAL, &local_view));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_remote(&local_view, 0, &remote));
    EXPECT_EQ(1u, log.count({"is local", "peers may neither read nor write",
                             "mlx5_0"}))
            << log.text();
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&local_view));
}

TEST_F(reg_view, remote_descriptor_is_given_for_a_remote_write_region) {
    gpumem_reg_view_t write_view;
    gpumem_reg_remote_t remote;

    ASSERT_EQ(UCS_OK, make_view(GPUMEM_REG_ACCESS_REMOTE_WRITE, &write_view));
    EXPECT_EQ(UCS_OK, gpumem_reg_view_remote(&write_view, 0, &remote));
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&write_view));
}

TEST_F(reg_view, export_is_refused_for_a_local_region) {
    gpumem_reg_view_t local_view;
    gpumem_reg_remote_view_t remote_view;
    log_capture log;

    ASSERT_EQ(UCS_OK, make_view(GPUMEM_REG_ACCESS_LOCAL, &local_view));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_view_export(&local_view, &remote_view));
    EXPECT_EQ(1u, log.count({"is local"})) << log.text();
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&local_view));
}

TEST_F(reg_view, a_remote_slice_moves_the_address_and_keeps_the_rkey) {
    gpumem_reg_remote_view_t remote_view, slice;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_export(&m_view, &remote_view));
    ASSERT_EQ(UCS_OK, gpumem_reg_remote_view_slice(&remote_view, 2048, 2048,
                                                   &slice));
    EXPECT_EQ(0x4800u, slice.address);
    EXPECT_EQ(2048u, slice.length);
    EXPECT_EQ(m_view.region->mr.rkey, slice.rkey);
    EXPECT_STREQ("mlx5_0", slice.device_name);
}

TEST_F(reg_view, remote_slices_are_bounded_by_the_peer_registration) {
    gpumem_reg_remote_view_t remote_view, slice;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_export(&m_view, &remote_view));
    EXPECT_EQ(UCS_OK, gpumem_reg_remote_view_slice(&remote_view, 4096, 0,
                                                   &slice));
    log_capture log;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_remote_view_slice(&remote_view, 2048, 2049, &slice));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_remote_view_slice(&remote_view, 1, UINT64_MAX,
                                           &slice));
    EXPECT_EQ(1u, log.count({"slice [2048, 2048+2049)",
                             "4096-byte peer registration",
                             "[0x4000, 0x5000)", "on mlx5_0"}))
            << log.text();
    EXPECT_EQ(2u, log.lines().size()) << log.text();
}
