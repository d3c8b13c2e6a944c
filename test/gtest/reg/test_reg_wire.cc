/**
 * gpumem tests: the wire form a peer gets of a view (seed 004): what it
 * carries, what it does not, and the bytes its unpacker refuses.
 *
 * See file LICENSE for terms.
 */

#include "reg_test.h"

#include <common/log_capture.h>

#include <cstring>
#include <errno.h>
#include <random>
#include <sys/mman.h>
#include <unistd.h>

using gpumem_test::dmabuf_params;
using gpumem_test::log_capture;

typedef std::vector<uint8_t> bytes_t;


/* A remote registration of 4096 bytes named at 0x4000 on rxe0, whose host
 * mapping is at a pointer unlike any other bytes of it */
class reg_wire : public testing::Test {
protected:
    static constexpr uintptr_t host_pointer = 0x7f11223344556000ull;

    virtual void SetUp() {
        gpumem_reg_params_t params;

        ASSERT_EQ(UCS_OK, gpumem_reg_domain_init(
                &m_domain, "rxe0", &gpumem_test::table_driver::ops,
                &m_driver));
        m_fd = memfd_create("gpumem_test_wire", 0);
        ASSERT_GE(m_fd, 0) << strerror(errno);
        params = dmabuf_params(m_fd, 0, 4096, 0x4000, (void*)host_pointer);
        ASSERT_EQ(UCS_OK, gpumem_reg_register(&m_domain, &params, &m_view));
        ASSERT_EQ(UCS_OK, gpumem_reg_view_export(&m_view, &m_remote_view));
    }

    virtual void TearDown() {
        EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&m_view));
        gpumem_reg_domain_cleanup(&m_domain);
        close(m_fd);
    }

    static bytes_t pack(const gpumem_reg_remote_view_t &remote_view) {
        bytes_t bytes(GPUMEM_REG_WIRE_SIZE);
        gpumem_reg_wire_pack(&remote_view, bytes.data());
        return bytes;
    }

    static bool contains(const bytes_t &bytes, uint64_t value,
                         unsigned size) {
        for (size_t i = 0; i + size <= bytes.size(); ++i) {
            if (!memcmp(&bytes[i], &value, size)) {
                return true;
            }
        }
        return false;
    }

    /* Unpacking refuses @a bytes with @a expected, logs @a words, and
     * leaves its output untouched */
    static void expect_refused(const bytes_t &bytes, ucs_status_t expected,
                               const std::vector<std::string> &words) {
        gpumem_reg_remote_view_t out, untouched;
        log_capture log;

        memset(&out, 0x5a, sizeof(out));
        untouched = out;
        EXPECT_EQ(expected, gpumem_reg_wire_unpack(bytes.data(), bytes.size(),
                                                   &out));
        EXPECT_EQ(0, memcmp(&out, &untouched, sizeof(out)));
        EXPECT_EQ(1u, log.count(words)) << log.text();
    }

    bytes_t good_bytes() const {
        return pack(m_remote_view);
    }

    gpumem_test::table_driver m_driver;
    gpumem_reg_domain_t       m_domain;
    gpumem_reg_view_t         m_view;
    gpumem_reg_remote_view_t  m_remote_view;
    int                       m_fd = -1;
};


TEST_F(reg_wire, wire_form_carries_rkey_address_size_and_device_name) {
    bytes_t bytes = good_bytes();
    uint32_t rkey = m_view.region->mr.rkey;
    uint64_t value;

    ASSERT_EQ(85u, bytes.size());
    EXPECT_EQ(GPUMEM_REG_WIRE_VERSION, bytes[0]);

    /* Little-endian, whatever the host */
    value = 0;
    for (int i = 0; i < 4; ++i) {
        value |= (uint64_t)bytes[1 + i] << (8 * i);
    }
    EXPECT_EQ(rkey, value);
    value = 0;
    for (int i = 0; i < 8; ++i) {
        value |= (uint64_t)bytes[5 + i] << (8 * i);
    }
    EXPECT_EQ(0x4000u, value);
    value = 0;
    for (int i = 0; i < 8; ++i) {
        value |= (uint64_t)bytes[13 + i] << (8 * i);
    }
    EXPECT_EQ(4096u, value);
    EXPECT_EQ(0, memcmp(&bytes[21], "rxe0", 5));
    for (size_t i = 21 + 5; i < bytes.size(); ++i) {
        EXPECT_EQ(0, bytes[i]) << "byte " << i;
    }
}

TEST_F(reg_wire, wire_form_carries_no_lkey_and_no_pointer) {
    bytes_t bytes = good_bytes();

    EXPECT_FALSE(contains(bytes, m_view.region->mr.lkey, 4)) << "the lkey";
    EXPECT_FALSE(contains(bytes, host_pointer, 8)) << "the host mapping";
    EXPECT_FALSE(contains(bytes, (uintptr_t)m_view.region, 8))
            << "the registration";
    EXPECT_FALSE(contains(bytes, (uintptr_t)&m_domain, 8)) << "the domain";
}

TEST_F(reg_wire, wire_form_round_trips_to_the_same_bytes) {
    gpumem_reg_remote_view_t out;
    bytes_t bytes = good_bytes();

    ASSERT_EQ(UCS_OK, gpumem_reg_wire_unpack(bytes.data(), bytes.size(), &out));
    EXPECT_EQ(m_remote_view.rkey, out.rkey);
    EXPECT_EQ(m_remote_view.address, out.address);
    EXPECT_EQ(m_remote_view.length, out.length);
    EXPECT_STREQ("rxe0", out.device_name);
    EXPECT_EQ(bytes, pack(out));
}

TEST_F(reg_wire, wire_form_of_a_slice_names_the_slice) {
    gpumem_reg_remote_view_t remote_view, out;
    gpumem_reg_view_t slice;

    ASSERT_EQ(UCS_OK, gpumem_reg_view_slice(&m_view, 512, 1024, &slice));
    ASSERT_EQ(UCS_OK, gpumem_reg_view_export(&slice, &remote_view));
    bytes_t bytes = pack(remote_view);
    ASSERT_EQ(UCS_OK, gpumem_reg_wire_unpack(bytes.data(), bytes.size(), &out));
    EXPECT_EQ(0x4200u, out.address);
    EXPECT_EQ(1024u, out.length);
    EXPECT_EQ(UCS_OK, gpumem_reg_view_release(&slice));
}

TEST_F(reg_wire, unpack_refuses_every_wrong_length) {
    bytes_t bytes = good_bytes();

    expect_refused(bytes_t(), UCS_ERR_INVALID_PARAM, {"empty"});
    for (size_t length = 1; length < bytes.size() + 16; ++length) {
        if (length == bytes.size()) {
            continue;
        }
        bytes_t other = bytes;
        other.resize(length, 0);
        expect_refused(other, UCS_ERR_INVALID_PARAM,
                       {"packed remote key has " + std::to_string(length) +
                        " bytes"});
    }
}

TEST_F(reg_wire, unpack_refuses_another_version) {
    for (unsigned version : {0u, 2u, 255u}) {
        bytes_t bytes = good_bytes();
        bytes[0]      = version;
        expect_refused(bytes, UCS_ERR_UNSUPPORTED,
                       {"version " + std::to_string(version),
                        "reads version 1"});
    }
}

TEST_F(reg_wire, unpack_refuses_an_unterminated_device_name) {
    bytes_t bytes = good_bytes();

    memset(&bytes[21], 'a', GPUMEM_REG_DEVICE_NAME_MAX);
    expect_refused(bytes, UCS_ERR_INVALID_PARAM, {"not terminated"});
}

TEST_F(reg_wire, unpack_refuses_an_empty_device_name) {
    bytes_t bytes = good_bytes();

    memset(&bytes[21], 0, GPUMEM_REG_DEVICE_NAME_MAX);
    expect_refused(bytes, UCS_ERR_INVALID_PARAM, {"device name is empty"});
}

TEST_F(reg_wire, unpack_refuses_an_unprintable_device_name) {
    for (uint8_t c : {(uint8_t)'\n', (uint8_t)' ', (uint8_t)0x7f,
                      (uint8_t)0x80, (uint8_t)0xff}) {
        bytes_t bytes = good_bytes();
        bytes[21 + 2] = c;
        expect_refused(bytes, UCS_ERR_INVALID_PARAM,
                       {"byte 2 of the device name", "not a printable"});
    }
}

TEST_F(reg_wire, unpack_refuses_bytes_after_the_device_name) {
    bytes_t bytes = good_bytes();

    bytes[bytes.size() - 1] = 1;
    expect_refused(bytes, UCS_ERR_INVALID_PARAM,
                   {"after the device name 'rxe0'", "not zero"});
}

TEST_F(reg_wire, unpack_refuses_a_region_that_wraps) {
    gpumem_reg_remote_view_t remote_view = m_remote_view, out;

    remote_view.address = UINT64_MAX - 10;
    remote_view.length  = 11;
    expect_refused(pack(remote_view), UCS_ERR_INVALID_PARAM,
                   {"11 bytes at 0xfffffffffffffff5", "wrap"});

    /* Up to the last byte of the address space is not a wrap */
    remote_view.length = 10;
    bytes_t bytes      = pack(remote_view);
    EXPECT_EQ(UCS_OK, gpumem_reg_wire_unpack(bytes.data(), bytes.size(),
                                             &out));
}

/* Every decoder of a peer's bytes: whatever the bytes, a clear refusal or a
 * view that packs back to exactly them, never anything in between */
TEST_F(reg_wire, unpack_of_corrupted_bytes_refuses_or_is_canonical) {
    std::mt19937 rng(12345);
    const bytes_t good = good_bytes();
    gpumem_reg_remote_view_t out;
    size_t refused = 0, accepted = 0;
    log_capture log;

    for (int round = 0; round < 20000; ++round) {
        bytes_t bytes = good;
        int flips     = 1 + (rng() % 4);

        for (int f = 0; f < flips; ++f) {
            bytes[rng() % bytes.size()] = (uint8_t)rng();
        }

        if (gpumem_reg_wire_unpack(bytes.data(), bytes.size(), &out) ==
            UCS_OK) {
            ++accepted;
            ASSERT_EQ(bytes, pack(out)) << "round " << round;
            ASSERT_LE(out.address, UINT64_MAX - out.length);
            ASSERT_NE(nullptr, memchr(out.device_name, '\0',
                                      sizeof(out.device_name)));
        } else {
            ++refused;
        }
    }

    EXPECT_GT(refused, 0u);
    EXPECT_GT(accepted, 0u);
    EXPECT_EQ(refused, log.lines().size()) << "one line per refusal";
}
