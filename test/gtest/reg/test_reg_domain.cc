/**
 * gpumem tests: registering and deregistering (seed 000), on a driver that
 * keeps its registrations in a table, so that they run on every machine.
 *
 * See file LICENSE for terms.
 */

#include "reg_test.h"

#include <common/log_capture.h>

#include <climits>
#include <cstring>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

using gpumem_test::dmabuf_params;
using gpumem_test::host_params;
using gpumem_test::log_capture;


class reg_domain : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_EQ(UCS_OK, gpumem_reg_domain_init(
                &m_domain, "mlx5_0", &gpumem_test::table_driver::ops,
                &m_driver));
        m_open = true;
        memset(m_buffer, 0, sizeof(m_buffer));
        memset(&m_untouched, 0x5a, sizeof(m_untouched));
    }

    virtual void TearDown() {
        close();
    }

    void close() {
        if (m_open) {
            gpumem_reg_domain_cleanup(&m_domain);
            m_open = false;
        }
    }

    /* A descriptor of a file that can stand for a dma-buf: the domain only
     * reads its identity, the table driver nothing */
    int make_fd() {
        int fd = memfd_create("gpumem_test_dmabuf", 0);
        EXPECT_GE(fd, 0) << strerror(errno);
        if (fd >= 0) {
            m_fds.push_back(fd);
        }
        return fd;
    }

    /* The call refused @a params as invalid, logged @a words, and took
     * nothing: no driver call, no region, the output untouched */
    void expect_invalid(const gpumem_reg_params_t &params,
                        const std::vector<std::string> &words) {
        gpumem_reg_view_t view = m_untouched;
        unsigned calls         = m_driver.num_register_calls;
        log_capture log;

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_reg_register(&m_domain, &params, &view));
        EXPECT_EQ(calls, m_driver.num_register_calls);
        EXPECT_EQ(0u, m_domain.num_regions);
        EXPECT_EQ(0, memcmp(&view, &m_untouched, sizeof(view)));
        EXPECT_EQ(1u, log.count(words)) << log.text();
    }

    /* Register, then have the kernel refuse the deregistration */
    void fail_deregistration(const gpumem_reg_params_t &params) {
        gpumem_reg_view_t view;
        log_capture log;

        ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
        m_driver.dereg_refusals = 1;
        ASSERT_EQ(UCS_ERR_BUSY, gpumem_reg_view_release(&view));
        EXPECT_TRUE(view.region == NULL) << "the view is spent";
    }

    /* Registering @a params is refused: its memory is held after a failed
     * deregistration; the driver is not asked */
    void expect_held(const gpumem_reg_params_t &params) {
        unsigned calls = m_driver.num_register_calls;
        gpumem_reg_view_t view;
        log_capture log;

        EXPECT_EQ(UCS_ERR_BUSY, gpumem_reg_register(&m_domain, &params,
                                                    &view));
        EXPECT_EQ(calls, m_driver.num_register_calls);
        EXPECT_EQ(1u, log.count({"mlx5_0", "deregistration failed",
                                 "until the domain closes"}))
                << log.text();
    }

    /* Register and deregister */
    void expect_registers(const gpumem_reg_params_t &params) {
        gpumem_reg_view_t view;

        ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
        EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&view));
    }

    ~reg_domain() {
        for (int fd : m_fds) {
            ::close(fd);
        }
    }

    gpumem_test::table_driver m_driver;
    gpumem_reg_domain_t       m_domain;
    bool                      m_open = false;
    char                      m_buffer[4 * 4096];
    gpumem_reg_view_t         m_untouched;
    std::vector<int>          m_fds;
};


TEST_F(reg_domain, zero_bytes_is_invalid_and_takes_nothing) {
    expect_invalid(host_params(m_buffer, 0), {"mlx5_0", "0 bytes"});
}

TEST_F(reg_domain, zero_dmabuf_bytes_is_invalid_and_takes_nothing) {
    expect_invalid(dmabuf_params(make_fd(), 0, 0, 0x1000, NULL),
                   {"mlx5_0", "0 bytes"});
    expect_invalid(dmabuf_params(make_fd(), 0, -4096, 0x1000, NULL),
                   {"mlx5_0", "-4096 bytes"});
}

TEST_F(reg_domain, negative_dmabuf_offset_is_invalid_and_takes_nothing) {
    expect_invalid(dmabuf_params(make_fd(), -1, 4096, 0x1000, NULL),
                   {"mlx5_0", "offset -1", "negative"});
}

TEST_F(reg_domain, negative_dmabuf_descriptor_is_invalid_and_takes_nothing) {
    expect_invalid(dmabuf_params(-1, 0, 4096, 0x1000, NULL),
                   {"mlx5_0", "descriptor -1", "negative"});
}

TEST_F(reg_domain, host_memory_at_null_is_invalid_and_takes_nothing) {
    expect_invalid(host_params(NULL, 4096), {"mlx5_0", "NULL"});
}

TEST_F(reg_domain, bytes_that_wrap_are_invalid_and_take_nothing) {
    expect_invalid(host_params((void*)(UINTPTR_MAX - 10), 11),
                   {"wrap", "end of the address space"});
    expect_invalid(dmabuf_params(make_fd(), INT64_MAX, 1, 0x1000, NULL),
                   {"wrap"});
    expect_invalid(dmabuf_params(make_fd(), 0, 4096, UINT64_MAX - 100, NULL),
                   {"wrap"});
}

TEST_F(reg_domain, unknown_access_or_order_is_invalid_and_takes_nothing) {
    gpumem_reg_params_t params = host_params(m_buffer, 4096);

    params.access = GPUMEM_REG_ACCESS_LAST;
    expect_invalid(params, {"unknown access"});
    params        = host_params(m_buffer, 4096);
    params.order  = GPUMEM_REG_ORDER_LAST;
    expect_invalid(params, {"unknown order"});
}

/* The seed: "Error msg if the kernel refuses"; the driver logs why */
TEST_F(reg_domain, kernel_refusal_is_an_error_and_takes_nothing) {
    gpumem_reg_params_t params = host_params(m_buffer, 4096);
    gpumem_reg_view_t view     = m_untouched;
    log_capture log;

    m_driver.register_errno = ENOMEM;
    EXPECT_EQ(UCS_ERR_NO_MEMORY, gpumem_reg_register(&m_domain, &params,
                                                     &view));
    EXPECT_EQ(0u, m_domain.num_regions);
    EXPECT_TRUE(m_driver.registered.empty());
    EXPECT_EQ(0, memcmp(&view, &m_untouched, sizeof(view)));
    EXPECT_EQ(1u, log.count({"refused", strerror(ENOMEM)})) << log.text();
}

TEST_F(reg_domain, refusals_log_at_the_level_asked) {
    gpumem_reg_params_t params = host_params(m_buffer, 0);
    gpumem_reg_view_t view;
    log_capture log;

    /* A caller that handles refusals itself (UCT_MD_MEM_FLAG_HIDE_ERRORS)
     * asks for a lower level than the warnings captured here */
    params.log_level = UCS_LOG_LEVEL_DEBUG;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_register(&m_domain, &params, &view));
    EXPECT_TRUE(log.lines().empty()) << log.text();
}

TEST_F(reg_domain, registration_gives_a_view_of_all_its_bytes) {
    gpumem_reg_params_t params = host_params(m_buffer, 4096,
                                             GPUMEM_REG_ACCESS_REMOTE_WRITE,
                                             GPUMEM_REG_ORDER_ANY);
    gpumem_reg_view_t view;

    ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
    EXPECT_EQ((uintptr_t)m_buffer, view.address);
    EXPECT_EQ((void*)m_buffer, view.host_address);
    EXPECT_EQ(4096u, view.length);
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE_WRITE, view.region->access);
    EXPECT_EQ(GPUMEM_REG_ORDER_ANY, view.region->order);
    EXPECT_EQ(1u, m_domain.num_regions);
    EXPECT_EQ(1u, m_driver.registered.size());
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&view));
}

TEST_F(reg_domain, driver_is_asked_for_exactly_the_access_and_order) {
    for (int a = 0; a < GPUMEM_REG_ACCESS_LAST; ++a) {
        for (int o = 0; o < GPUMEM_REG_ORDER_LAST; ++o) {
            gpumem_reg_params_t params = host_params(
                    m_buffer, 4096, (gpumem_reg_access_t)a,
                    (gpumem_reg_order_t)o);
            gpumem_reg_view_t view;

            ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
            const gpumem_reg_params_t &seen =
                    m_driver.registered.at(view.region->mr.lkey);
            EXPECT_EQ(a, seen.access);
            EXPECT_EQ(o, seen.order);
            EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&view));
        }
    }
}

TEST_F(reg_domain, dmabuf_view_is_named_by_its_address_and_mapping) {
    gpumem_reg_params_t params = dmabuf_params(make_fd(), 8192, 4096,
                                               0x7000000000ull, m_buffer);
    gpumem_reg_view_t view;

    ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
    EXPECT_EQ(0x7000000000ull, view.address);
    EXPECT_EQ((void*)m_buffer, view.host_address);
    EXPECT_EQ(4096u, view.length);
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&view));
}

TEST_F(reg_domain, release_of_the_last_view_deregisters) {
    gpumem_reg_params_t params = host_params(m_buffer, 4096);
    gpumem_reg_view_t view;

    ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&view));
    EXPECT_TRUE(m_driver.registered.empty());
    EXPECT_EQ(0u, m_domain.num_regions);
    EXPECT_TRUE(view.region == NULL) << "a released view is spent";
}

TEST_F(reg_domain, failed_deregistration_is_an_error_that_says_what_it_means) {
    gpumem_reg_params_t params = host_params(m_buffer, 4096);
    gpumem_reg_view_t view;
    log_capture log;

    ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &view));
    m_driver.dereg_refusals = 1;
    EXPECT_EQ(UCS_ERR_BUSY, gpumem_reg_view_release(&view));
    EXPECT_EQ(1u, log.count({"mlx5_0", "counts as deregistered",
                             "until the domain closes",
                             "do not reuse or free"}))
            << log.text();
}

TEST_F(reg_domain, failed_deregistration_counts_as_deregistered) {
    fail_deregistration(host_params(m_buffer, 4096));
    EXPECT_EQ(0u, m_domain.num_regions);
    EXPECT_EQ(1u, ucs_list_length(&m_domain.held));
}

TEST_F(reg_domain, failed_deregistration_keeps_the_memory_until_close) {
    fail_deregistration(host_params(m_buffer, 4096));

    /* The NIC may still reach it: the registration is still there */
    EXPECT_EQ(1u, m_driver.registered.size());
    EXPECT_EQ(1u, m_driver.num_deregister_calls);

    close();
    EXPECT_TRUE(m_driver.registered.empty());
    EXPECT_EQ(2u, m_driver.num_deregister_calls);
}

TEST_F(reg_domain, failed_deregistration_prevents_reuse_before_close) {
    fail_deregistration(host_params(m_buffer + 4096, 4096));

    /* Any byte of it, alone or with its neighbours' */
    for (size_t offset : {4095ul, 4096ul, 8191ul}) {
        expect_held(host_params(m_buffer + offset, 2));
    }

    /* Its neighbours are other memory */
    expect_registers(host_params(m_buffer, 4096));
    expect_registers(host_params(m_buffer + 8192, 4096));
}

TEST_F(reg_domain, failed_deregistration_prevents_reuse_of_dmabuf_bytes) {
    int fd = make_fd();
    int dup_fd;

    fail_deregistration(dmabuf_params(fd, 4096, 4096, 0x10000, NULL));

    /* The same bytes through the same or another descriptor of the buffer */
    dup_fd = dup(fd);
    ASSERT_GE(dup_fd, 0);
    m_fds.push_back(dup_fd);
    for (int f : {fd, dup_fd}) {
        expect_held(dmabuf_params(f, 8191, 1, 0x20000, NULL));
    }

    /* Other bytes of it, and another buffer */
    expect_registers(dmabuf_params(fd, 0, 4096, 0x20000, NULL));
    expect_registers(dmabuf_params(make_fd(), 4096, 4096, 0x20000, NULL));
}

TEST_F(reg_domain, failed_deregistration_prevents_reuse_of_a_dmabuf_mapping) {
    fail_deregistration(dmabuf_params(make_fd(), 0, 4096, 0x10000,
                                      m_buffer));

    /* The dma-buf's host mapping is the same memory */
    expect_held(host_params(m_buffer + 100, 100));
}

TEST_F(reg_domain, memory_registers_again_once_the_domain_closed) {
    fail_deregistration(host_params(m_buffer, 4096));

    close();
    ASSERT_EQ(UCS_OK, gpumem_reg_domain_init(
                &m_domain, "mlx5_0", &gpumem_test::table_driver::ops,
                &m_driver));
    m_open = true;
    expect_registers(host_params(m_buffer, 4096));
}

TEST_F(reg_domain, domain_name_must_fit_the_wire_form) {
    gpumem_reg_domain_t domain;
    std::string long_name(GPUMEM_REG_DEVICE_NAME_MAX, 'x');
    log_capture log;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_domain_init(&domain, "", &m_driver.ops, &m_driver));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_reg_domain_init(&domain, long_name.c_str(),
                                     &m_driver.ops, &m_driver));
    long_name.resize(GPUMEM_REG_DEVICE_NAME_MAX - 1);
    ASSERT_EQ(UCS_OK, gpumem_reg_domain_init(&domain, long_name.c_str(),
                                             &m_driver.ops, &m_driver));
    gpumem_reg_domain_cleanup(&domain);
}


class reg_refusal : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &m_saved));
    }

    virtual void TearDown() {
        setrlimit(RLIMIT_MEMLOCK, &m_saved);
    }

    struct rlimit m_saved;
};

/* The issue: for ENOMEM and EPERM, the message names RLIMIT_MEMLOCK, its
 * value now, and the bytes asked */
TEST_F(reg_refusal, memlock_refusal_names_rlimit_memlock_and_bytes_asked) {
    struct rlimit limit = m_saved;
    char reason[512];

    if ((limit.rlim_max != RLIM_INFINITY) && (limit.rlim_max < 65536)) {
        GTEST_SKIP() << "the hard RLIMIT_MEMLOCK is below 64 KiB";
    }
    limit.rlim_cur = 65536;
    ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &limit)) << strerror(errno);

    for (int err : {ENOMEM, EPERM}) {
        std::string text = gpumem_reg_refusal_reason(err, 1048576, reason,
                                                     sizeof(reason));
        EXPECT_NE(std::string::npos, text.find(strerror(err))) << text;
        EXPECT_NE(std::string::npos, text.find("RLIMIT_MEMLOCK is 65536 bytes"))
                << text;
        EXPECT_NE(std::string::npos, text.find("1048576 bytes asked")) << text;
    }
}

TEST_F(reg_refusal, other_refusals_give_the_kernel_reason) {
    char reason[512];
    std::string text = gpumem_reg_refusal_reason(EFAULT, 4096, reason,
                                                 sizeof(reason));

    EXPECT_EQ(std::string(strerror(EFAULT)), text);
}

TEST_F(reg_refusal, kernel_errors_map_to_statuses) {
    EXPECT_EQ(UCS_ERR_NO_MEMORY, gpumem_reg_status_from_errno(ENOMEM));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, gpumem_reg_status_from_errno(EOPNOTSUPP));
    EXPECT_EQ(UCS_ERR_BUSY, gpumem_reg_status_from_errno(EBUSY));
    EXPECT_EQ(UCS_ERR_IO_ERROR, gpumem_reg_status_from_errno(EFAULT));
    EXPECT_EQ(UCS_ERR_IO_ERROR, gpumem_reg_status_from_errno(EPERM));
}

TEST(reg_names, access_and_order_have_the_seed_names) {
    EXPECT_STREQ("local", gpumem_reg_access_name(GPUMEM_REG_ACCESS_LOCAL));
    EXPECT_STREQ("remote write",
                 gpumem_reg_access_name(GPUMEM_REG_ACCESS_REMOTE_WRITE));
    EXPECT_STREQ("remote", gpumem_reg_access_name(GPUMEM_REG_ACCESS_REMOTE));
    EXPECT_STREQ("in order", gpumem_reg_order_name(GPUMEM_REG_ORDER_IN_ORDER));
    EXPECT_STREQ("any order", gpumem_reg_order_name(GPUMEM_REG_ORDER_ANY));
}
