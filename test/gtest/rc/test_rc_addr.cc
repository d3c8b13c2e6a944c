/**
 * gpumem tests: the addresses of the gpumem_rc transport: what they carry,
 * and the bytes their unpackers refuse.
 *
 * See file LICENSE for terms.
 */

#include <common/log_capture.h>

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/rc/rc_addr.h>
}

#include <cstring>
#include <vector>

using gpumem_test::log_capture;

typedef std::vector<uint8_t> bytes_t;


static uct_gpumem_rc_dev_addr_t roce_dev_addr()
{
    uct_gpumem_rc_dev_addr_t addr;
    static const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                    10, 11, 0, 1};

    addr.is_eth = 1;
    addr.lid    = 0;
    memcpy(addr.gid, gid, sizeof(gid));
    return addr;
}

static bytes_t pack(const uct_gpumem_rc_dev_addr_t &addr)
{
    bytes_t bytes(UCT_GPUMEM_RC_DEV_ADDR_SIZE);
    uct_gpumem_rc_dev_addr_pack(&addr, bytes.data());
    return bytes;
}

static bytes_t pack(const uct_gpumem_rc_ep_addr_t &addr)
{
    bytes_t bytes(UCT_GPUMEM_RC_EP_ADDR_SIZE);
    uct_gpumem_rc_ep_addr_pack(&addr, bytes.data());
    return bytes;
}

static ucs_status_t unpack_dev(const bytes_t &bytes,
                               uct_gpumem_rc_dev_addr_t *addr_p)
{
    return uct_gpumem_rc_dev_addr_unpack(bytes.data(), UCS_LOG_LEVEL_ERROR,
                                         addr_p);
}


TEST(rc_addr, dev_addr_roce_round_trip) {
    uct_gpumem_rc_dev_addr_t addr = roce_dev_addr(), out;
    bytes_t bytes                 = pack(addr);

    EXPECT_EQ(UCT_GPUMEM_RC_ADDR_VERSION, bytes[0]);
    ASSERT_EQ(UCS_OK, unpack_dev(bytes, &out));
    EXPECT_TRUE(out.is_eth);
    EXPECT_EQ(0, memcmp(addr.gid, out.gid, sizeof(addr.gid)));
}

TEST(rc_addr, dev_addr_ib_carries_lid_little_endian) {
    uct_gpumem_rc_dev_addr_t addr = roce_dev_addr(), out;
    bytes_t bytes;

    addr.is_eth = 0;
    addr.lid    = 0x1234;
    bytes       = pack(addr);
    EXPECT_EQ(0x34, bytes[2]);
    EXPECT_EQ(0x12, bytes[3]);
    ASSERT_EQ(UCS_OK, unpack_dev(bytes, &out));
    EXPECT_FALSE(out.is_eth);
    EXPECT_EQ(0x1234, out.lid);
}

TEST(rc_addr, dev_addr_packs_at_any_alignment) {
    uct_gpumem_rc_dev_addr_t addr = roce_dev_addr(), out;
    uint8_t buffer[UCT_GPUMEM_RC_DEV_ADDR_SIZE + 1];

    uct_gpumem_rc_dev_addr_pack(&addr, buffer + 1);
    ASSERT_EQ(UCS_OK, uct_gpumem_rc_dev_addr_unpack(buffer + 1,
                                                    UCS_LOG_LEVEL_ERROR,
                                                    &out));
    EXPECT_EQ(0, memcmp(addr.gid, out.gid, sizeof(addr.gid)));
}

TEST(rc_addr, dev_addr_other_version_refused) {
    bytes_t bytes = pack(roce_dev_addr());
    uct_gpumem_rc_dev_addr_t out;
    log_capture log;

    bytes[0] = UCT_GPUMEM_RC_ADDR_VERSION + 1;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, unpack_dev(bytes, &out));
    EXPECT_EQ(1u, log.count({"version"})) << log.text();
}

TEST(rc_addr, dev_addr_unknown_flags_refused) {
    bytes_t bytes = pack(roce_dev_addr());
    uct_gpumem_rc_dev_addr_t out;
    log_capture log;

    bytes[1] |= 0x80;
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, unpack_dev(bytes, &out));
    EXPECT_EQ(1u, log.count({"flags"})) << log.text();
}

TEST(rc_addr, dev_addr_roce_without_gid_refused) {
    uct_gpumem_rc_dev_addr_t addr = roce_dev_addr(), out;
    log_capture log;

    memset(addr.gid, 0, sizeof(addr.gid));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, unpack_dev(pack(addr), &out));
    EXPECT_EQ(1u, log.count({"GID"})) << log.text();
}

TEST(rc_addr, dev_addr_ib_without_lid_refused) {
    uct_gpumem_rc_dev_addr_t addr = roce_dev_addr(), out;
    log_capture log;

    addr.is_eth = 0;
    addr.lid    = 0;
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, unpack_dev(pack(addr), &out));
    EXPECT_EQ(1u, log.count({"LID"})) << log.text();
}

TEST(rc_addr, dev_addr_refusal_logged_at_given_level) {
    bytes_t bytes = pack(roce_dev_addr());
    uct_gpumem_rc_dev_addr_t out;
    log_capture log;

    /* As reachability asks: a quiet no */
    bytes[0] = 0xff;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_gpumem_rc_dev_addr_unpack(bytes.data(), UCS_LOG_LEVEL_DEBUG,
                                            &out));
    EXPECT_EQ(0u, log.count({"version"})) << log.text();
}

TEST(rc_addr, dev_addr_every_byte_flip_is_refused_or_read_back) {
    bytes_t good = pack(roce_dev_addr());
    uct_gpumem_rc_dev_addr_t out;
    log_capture log;

    /* A flipped byte is either refused or read as exactly what it says */
    for (size_t i = 0; i < good.size(); ++i) {
        bytes_t bytes = good;
        bytes[i]     ^= 0xff;
        if (unpack_dev(bytes, &out) == UCS_OK) {
            EXPECT_EQ(pack(out), bytes) << "byte " << i;
        }
    }
}

TEST(rc_addr, ep_addr_round_trip) {
    uct_gpumem_rc_ep_addr_t addr, out;
    bytes_t bytes;

    addr.qp_num   = 0xabcdef;
    addr.path_mtu = 3;
    bytes         = pack(addr);
    EXPECT_EQ(bytes_t({0xef, 0xcd, 0xab, 3}), bytes);
    ASSERT_EQ(UCS_OK, uct_gpumem_rc_ep_addr_unpack(bytes.data(), &out));
    EXPECT_EQ(0xabcdefu, out.qp_num);
    EXPECT_EQ(3, out.path_mtu);
}

TEST(rc_addr, ep_addr_management_qps_refused) {
    uct_gpumem_rc_ep_addr_t out;
    log_capture log;

    for (uint8_t qpn = 0; qpn < 2; ++qpn) {
        bytes_t bytes = {qpn, 0, 0, 3};
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gpumem_rc_ep_addr_unpack(bytes.data(), &out));
    }
    EXPECT_EQ(2u, log.count({"queue pair"})) << log.text();
}

TEST(rc_addr, ep_addr_mtu_out_of_range_refused) {
    uct_gpumem_rc_ep_addr_t out;
    log_capture log;

    for (uint8_t mtu : {0, 6, 0xff}) {
        bytes_t bytes = {0x11, 0x22, 0x33, mtu};
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gpumem_rc_ep_addr_unpack(bytes.data(), &out));
    }
    EXPECT_EQ(3u, log.count({"MTU"})) << log.text();

    for (uint8_t mtu = 1; mtu <= 5; ++mtu) {
        bytes_t bytes = {0x11, 0x22, 0x33, mtu};
        EXPECT_EQ(UCS_OK, uct_gpumem_rc_ep_addr_unpack(bytes.data(), &out));
    }
}
