/**
 * gpumem tests: the decisions of the gpumem_rc transport that need no
 * device: completion statuses, the GID of a RoCE port, timeouts and RNR
 * timers, port rates, and its name under UCX's limit.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/rc/rc_ep.h>
#include <uct/gpumem/rc/rc_iface.h>
}

#include <cstring>
#include <vector>


TEST(rc_rules, tl_name_fits_ucx) {
    EXPECT_LT(strlen(UCT_GPUMEM_RC_TL_NAME), (size_t)UCT_TL_NAME_MAX);
    EXPECT_STREQ(UCT_GPUMEM_RC_TL_NAME, uct_gpumem_rc_tl.name);
}

TEST(rc_rules, wc_success_is_ok) {
    EXPECT_EQ(UCS_OK, uct_gpumem_rc_wc_status(IBV_WC_SUCCESS));
}

TEST(rc_rules, wc_remote_access_error_is_invalid_addr) {
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_gpumem_rc_wc_status(IBV_WC_REM_ACCESS_ERR));
}

TEST(rc_rules, wc_retries_exceeded_is_endpoint_timeout) {
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT,
              uct_gpumem_rc_wc_status(IBV_WC_RETRY_EXC_ERR));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT,
              uct_gpumem_rc_wc_status(IBV_WC_RNR_RETRY_EXC_ERR));
}

TEST(rc_rules, wc_flushed_is_canceled) {
    EXPECT_EQ(UCS_ERR_CANCELED, uct_gpumem_rc_wc_status(IBV_WC_WR_FLUSH_ERR));
}

TEST(rc_rules, wc_local_faults_are_invalid_param) {
    for (auto s : {IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR,
                   IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_ACCESS_ERR}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gpumem_rc_wc_status(s))
                << ibv_wc_status_str(s);
    }
}

TEST(rc_rules, wc_remote_faults_are_connection_reset) {
    for (auto s : {IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR,
                   IBV_WC_REM_ABORT_ERR}) {
        EXPECT_EQ(UCS_ERR_CONNECTION_RESET, uct_gpumem_rc_wc_status(s))
                << ibv_wc_status_str(s);
    }
}

TEST(rc_rules, wc_every_failure_is_an_error) {
    for (int s = IBV_WC_LOC_LEN_ERR; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
        EXPECT_TRUE(UCS_STATUS_IS_ERR(
                uct_gpumem_rc_wc_status((enum ibv_wc_status)s)))
                << ibv_wc_status_str((enum ibv_wc_status)s);
    }
}

static struct ibv_gid_entry gid_entry(uint32_t type, const uint8_t *raw)
{
    struct ibv_gid_entry entry;

    memset(&entry, 0, sizeof(entry));
    memcpy(entry.gid.raw, raw, 16);
    entry.gid_type = type;
    return entry;
}

static const uint8_t link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                       0x02, 0x11, 0x22, 0xff, 0xfe, 0x33,
                                       0x44, 0x55};
static const uint8_t ipv4[16]       = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff, 10, 11, 0, 1};
static const uint8_t zero[16]       = {0};

TEST(rc_rules, gid_roce_v2_ipv4_first) {
    /* As soft-RoCE lists them: link-local v1, v2, then IPv4 v1, v2 */
    std::vector<struct ibv_gid_entry> table = {
        gid_entry(IBV_GID_TYPE_ROCE_V1, link_local),
        gid_entry(IBV_GID_TYPE_ROCE_V2, link_local),
        gid_entry(IBV_GID_TYPE_ROCE_V1, ipv4),
        gid_entry(IBV_GID_TYPE_ROCE_V2, ipv4)
    };

    EXPECT_EQ(3, uct_gpumem_rc_gid_choose(table.data(), table.size()));
}

TEST(rc_rules, gid_roce_v2_before_v1) {
    std::vector<struct ibv_gid_entry> table = {
        gid_entry(IBV_GID_TYPE_ROCE_V1, link_local),
        gid_entry(IBV_GID_TYPE_ROCE_V2, link_local)
    };

    EXPECT_EQ(1, uct_gpumem_rc_gid_choose(table.data(), table.size()));
}

TEST(rc_rules, gid_zero_entries_passed_over) {
    std::vector<struct ibv_gid_entry> table = {
        gid_entry(IBV_GID_TYPE_ROCE_V2, zero),
        gid_entry(IBV_GID_TYPE_ROCE_V1, link_local)
    };

    EXPECT_EQ(1, uct_gpumem_rc_gid_choose(table.data(), table.size()));
}

TEST(rc_rules, gid_none_without_address) {
    std::vector<struct ibv_gid_entry> table = {
        gid_entry(IBV_GID_TYPE_ROCE_V2, zero),
        gid_entry(IBV_GID_TYPE_IB, link_local)
    };

    EXPECT_EQ(-1, uct_gpumem_rc_gid_choose(table.data(), table.size()));
    EXPECT_EQ(-1, uct_gpumem_rc_gid_choose(NULL, 0));
}

TEST(rc_rules, timeout_exponent_not_shorter) {
    /* 4.096 us * 2^18 = 1.07 s */
    EXPECT_EQ(18, uct_gpumem_rc_timeout_exp(1.0));
    EXPECT_EQ(1, uct_gpumem_rc_timeout_exp(0));
    EXPECT_EQ(1, uct_gpumem_rc_timeout_exp(8.192e-6));
    EXPECT_EQ(2, uct_gpumem_rc_timeout_exp(8.2e-6));
    EXPECT_EQ(31, uct_gpumem_rc_timeout_exp(1e9));
}

TEST(rc_rules, rnr_timer_not_shorter) {
    /* IBTA: code 12 is 0.64 ms, 1 is 0.01 ms, 20 is 10.24 ms, 31 is
     * 491.52 ms, 0 is 655.36 ms */
    EXPECT_EQ(12, uct_gpumem_rc_rnr_timer(640e-6));
    EXPECT_EQ(13, uct_gpumem_rc_rnr_timer(641e-6));
    EXPECT_EQ(1, uct_gpumem_rc_rnr_timer(0));
    EXPECT_EQ(1, uct_gpumem_rc_rnr_timer(10e-6));
    EXPECT_EQ(14, uct_gpumem_rc_rnr_timer(1e-3));
    EXPECT_EQ(20, uct_gpumem_rc_rnr_timer(10e-3));
    EXPECT_EQ(31, uct_gpumem_rc_rnr_timer(491.52e-3));
    EXPECT_EQ(0, uct_gpumem_rc_rnr_timer(0.5));
    EXPECT_EQ(0, uct_gpumem_rc_rnr_timer(1e9));
}

TEST(rc_rules, port_bandwidth_from_width_and_speed) {
    /* EDR 4x: 100 Gb/s signalling, 64b/66b */
    EXPECT_NEAR(4 * 25.78125e9 * 64 / 66 / 8,
                uct_gpumem_rc_port_bandwidth(2, 32), 1);
    /* QDR 4x: 40 Gb/s, 8b/10b */
    EXPECT_NEAR(4e9, uct_gpumem_rc_port_bandwidth(2, 4), 1);
    /* SDR 1x */
    EXPECT_NEAR(250e6, uct_gpumem_rc_port_bandwidth(1, 1), 1);
    EXPECT_EQ(0, uct_gpumem_rc_port_bandwidth(3, 32));
    EXPECT_EQ(0, uct_gpumem_rc_port_bandwidth(2, 3));
}
