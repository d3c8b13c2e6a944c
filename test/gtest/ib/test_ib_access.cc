/**
 * gpumem tests: what a registration asks of the NIC, from UCT's flags to
 * IBV_ACCESS_* (pure functions: no device needed).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/ib/ib_access.h>
#include <uct/gpumem/ib/ib_md.h>
#include <uct/api/uct.h>
#include <infiniband/verbs.h>
}


static const gpumem_reg_access_t all_accesses[] = {
    GPUMEM_REG_ACCESS_LOCAL, GPUMEM_REG_ACCESS_REMOTE_WRITE,
    GPUMEM_REG_ACCESS_REMOTE
};

static const gpumem_reg_order_t all_orders[] = {
    GPUMEM_REG_ORDER_IN_ORDER, GPUMEM_REG_ORDER_ANY
};

static unsigned in_order_flags(gpumem_reg_access_t access)
{
    return uct_gpumem_ib_access_flags(access, GPUMEM_REG_ORDER_IN_ORDER);
}


TEST(ib_access, local_access_grants_only_local_write) {
    EXPECT_EQ((unsigned)IBV_ACCESS_LOCAL_WRITE,
              in_order_flags(GPUMEM_REG_ACCESS_LOCAL));
}

TEST(ib_access, remote_write_access_grants_local_and_remote_write) {
    EXPECT_EQ((unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
              in_order_flags(GPUMEM_REG_ACCESS_REMOTE_WRITE));
}

TEST(ib_access, remote_access_grants_local_write_remote_write_and_read) {
    EXPECT_EQ((unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ),
              in_order_flags(GPUMEM_REG_ACCESS_REMOTE));
}

TEST(ib_access, no_access_grants_atomics_windows_or_paging) {
    const unsigned never = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND |
                           IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
                           IBV_ACCESS_HUGETLB;

    for (gpumem_reg_access_t access : all_accesses) {
        for (gpumem_reg_order_t order : all_orders) {
            EXPECT_EQ(0u, uct_gpumem_ib_access_flags(access, order) & never)
                    << gpumem_reg_access_name(access) << ", "
                    << gpumem_reg_order_name(order);
        }
    }
}

TEST(ib_access, unknown_access_grants_the_least) {
    EXPECT_EQ((unsigned)IBV_ACCESS_LOCAL_WRITE,
              in_order_flags(GPUMEM_REG_ACCESS_LAST));
}

#if HAVE_DECL_IBV_ACCESS_RELAXED_ORDERING
TEST(ib_access, any_order_asks_relaxed_ordering) {
    for (gpumem_reg_access_t access : all_accesses) {
        EXPECT_EQ(in_order_flags(access) | IBV_ACCESS_RELAXED_ORDERING,
                  uct_gpumem_ib_access_flags(access, GPUMEM_REG_ORDER_ANY));
    }
}

/* An optional flag: rdma-core drops it where the kernel cannot take it, and
 * the kernel where the device cannot */
TEST(ib_access, relaxed_ordering_is_an_optional_flag) {
    EXPECT_NE(0u, (unsigned)(IBV_ACCESS_RELAXED_ORDERING &
                             IBV_ACCESS_OPTIONAL_RANGE));
}
#endif

TEST(ib_access, in_order_asks_no_relaxed_ordering) {
    for (gpumem_reg_access_t access : all_accesses) {
        EXPECT_EQ(0u, in_order_flags(access) & ~(IBV_ACCESS_LOCAL_WRITE |
                                                 IBV_ACCESS_REMOTE_WRITE |
                                                 IBV_ACCESS_REMOTE_READ));
    }
}

TEST(ib_access, uct_flags_without_remote_access_register_local) {
    for (unsigned flags : {0u, (unsigned)UCT_MD_MEM_ACCESS_LOCAL_READ,
                           (unsigned)UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                           (unsigned)(UCT_MD_MEM_ACCESS_LOCAL_READ |
                                      UCT_MD_MEM_ACCESS_LOCAL_WRITE |
                                      UCT_MD_MEM_FLAG_NONBLOCK |
                                      UCT_MD_MEM_FLAG_HIDE_ERRORS)}) {
        EXPECT_EQ(GPUMEM_REG_ACCESS_LOCAL,
                  uct_gpumem_ib_access_from_uct_flags(
                          flags, GPUMEM_REG_ACCESS_REMOTE))
                << "flags 0x" << std::hex << flags;
    }
}

TEST(ib_access, uct_remote_put_alone_registers_remote_write) {
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE_WRITE,
              uct_gpumem_ib_access_from_uct_flags(
                      UCT_MD_MEM_ACCESS_REMOTE_PUT |
                      UCT_MD_MEM_ACCESS_LOCAL_READ,
                      GPUMEM_REG_ACCESS_REMOTE));
}

TEST(ib_access, uct_remote_get_or_atomic_registers_remote) {
    for (unsigned flags : {(unsigned)UCT_MD_MEM_ACCESS_REMOTE_GET,
                           (unsigned)UCT_MD_MEM_ACCESS_REMOTE_ATOMIC,
                           (unsigned)UCT_MD_MEM_ACCESS_RMA,
                           (unsigned)UCT_MD_MEM_ACCESS_ALL}) {
        EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE,
                  uct_gpumem_ib_access_from_uct_flags(
                          flags, GPUMEM_REG_ACCESS_REMOTE))
                << "flags 0x" << std::hex << flags;
    }
}

TEST(ib_access, max_access_caps_what_flags_ask) {
    EXPECT_EQ(GPUMEM_REG_ACCESS_LOCAL,
              uct_gpumem_ib_access_from_uct_flags(UCT_MD_MEM_ACCESS_ALL,
                                                  GPUMEM_REG_ACCESS_LOCAL));
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE_WRITE,
              uct_gpumem_ib_access_from_uct_flags(
                      UCT_MD_MEM_ACCESS_ALL, GPUMEM_REG_ACCESS_REMOTE_WRITE));
    EXPECT_EQ(GPUMEM_REG_ACCESS_LOCAL,
              uct_gpumem_ib_access_from_uct_flags(
                      0, GPUMEM_REG_ACCESS_REMOTE_WRITE))
            << "a cap never raises";
}

/* Seed 000: a peer reads or writes a region only through a queue pair whose
 * access allows it */
TEST(ib_access, queue_pair_access_grants_peers_only_what_it_names) {
    EXPECT_EQ(0u, uct_gpumem_ib_qp_access_flags(GPUMEM_REG_ACCESS_LOCAL));
    EXPECT_EQ((unsigned)IBV_ACCESS_REMOTE_WRITE,
              uct_gpumem_ib_qp_access_flags(GPUMEM_REG_ACCESS_REMOTE_WRITE));
    EXPECT_EQ((unsigned)(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
              uct_gpumem_ib_qp_access_flags(GPUMEM_REG_ACCESS_REMOTE));
    EXPECT_EQ(0u, uct_gpumem_ib_qp_access_flags(GPUMEM_REG_ACCESS_LAST))
            << "an unknown access grants nothing";

    for (gpumem_reg_access_t access : all_accesses) {
        EXPECT_EQ(0u, uct_gpumem_ib_qp_access_flags(access) &
                      IBV_ACCESS_REMOTE_ATOMIC)
                << gpumem_reg_access_name(access);
    }
}

/* The queue pair and the region grant a peer the same for one access */
TEST(ib_access, queue_pair_and_region_of_one_access_agree_on_peers) {
    const unsigned remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

    for (gpumem_reg_access_t access : all_accesses) {
        EXPECT_EQ(in_order_flags(access) & remote,
                  uct_gpumem_ib_qp_access_flags(access))
                << gpumem_reg_access_name(access);
    }
}

TEST(ib_access, access_names_are_the_settings_values) {
    EXPECT_STREQ("local",
                 uct_gpumem_ib_access_names[GPUMEM_REG_ACCESS_LOCAL]);
    EXPECT_STREQ("remote_write",
                 uct_gpumem_ib_access_names[GPUMEM_REG_ACCESS_REMOTE_WRITE]);
    EXPECT_STREQ("remote",
                 uct_gpumem_ib_access_names[GPUMEM_REG_ACCESS_REMOTE]);
    EXPECT_EQ(NULL, uct_gpumem_ib_access_names[GPUMEM_REG_ACCESS_LAST])
            << "UCS's enum parser stops at NULL";
}


TEST(ib_md_name, md_name_is_gpumem_and_the_device) {
    char name[UCT_MD_NAME_MAX];

    ASSERT_EQ(UCS_OK, uct_gpumem_ib_md_name("mlx5_0", name, sizeof(name)));
    EXPECT_STREQ("gpumem_mlx5_0", name);
    EXPECT_STREQ("mlx5_0", uct_gpumem_ib_md_dev_name(name));
}

TEST(ib_md_name, md_name_is_the_device_where_the_prefix_does_not_fit) {
    char name[UCT_MD_NAME_MAX];

    ASSERT_EQ(UCS_OK, uct_gpumem_ib_md_name("rocep65s0f0", name,
                                            sizeof(name)));
    EXPECT_STREQ("rocep65s0f0", name);
    EXPECT_STREQ("rocep65s0f0", uct_gpumem_ib_md_dev_name(name));
}

TEST(ib_md_name, device_whose_name_does_not_fit_has_no_md) {
    char name[UCT_MD_NAME_MAX];

    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              uct_gpumem_ib_md_name("a_device_name_too_long", name,
                                    sizeof(name)));
}
