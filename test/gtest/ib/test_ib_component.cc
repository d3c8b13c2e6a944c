/**
 * gpumem tests: the gpumem_ib component as UCT sees it: registered, one
 * memory domain per RDMA device, its configuration, and remote keys a peer
 * sent (no device needed).
 *
 * See file LICENSE for terms.
 */

#include "ib_test.h"

#include <common/log_capture.h>

extern "C" {
#include <uct/base/uct_component.h>
}

#include <algorithm>
#include <cstring>


class ib_component : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
        m_component = gpumem_test::find_component("gpumem_ib");
        ASSERT_TRUE(m_component != NULL);
    }

    /* The wire form of a peer's remote registration */
    static std::vector<uint8_t> packed(uint32_t rkey, uint64_t address,
                                       uint64_t length, const char *device) {
        gpumem_reg_remote_view_t remote_view;
        std::vector<uint8_t> bytes(GPUMEM_REG_WIRE_SIZE);

        memset(&remote_view, 0, sizeof(remote_view));
        remote_view.rkey    = rkey;
        remote_view.address = address;
        remote_view.length  = length;
        strncpy(remote_view.device_name, device,
                sizeof(remote_view.device_name) - 1);
        gpumem_reg_wire_pack(&remote_view, bytes.data());
        return bytes;
    }

    uct_component_h m_component = NULL;
};


TEST_F(ib_component, component_is_registered) {
    std::vector<std::string> names = gpumem_test::component_names();

    EXPECT_NE(names.end(), std::find(names.begin(), names.end(), "gpumem_ib"));
}

TEST_F(ib_component, lists_one_md_per_rdma_device) {
    uct_component_attr_t attr;
    struct ibv_device **devices;
    std::vector<std::string> expected;
    char name[UCT_MD_NAME_MAX];
    int num_devices = 0;

    devices = ibv_get_device_list(&num_devices);
    for (int i = 0; i < num_devices; ++i) {
        if (uct_gpumem_ib_md_name(ibv_get_device_name(devices[i]), name,
                                  sizeof(name)) == UCS_OK) {
            expected.push_back(name);
        }
    }
    if (devices != NULL) {
        ibv_free_device_list(devices);
    }

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    ASSERT_EQ(UCS_OK, uct_component_query(m_component, &attr));
    ASSERT_EQ(expected.size(), attr.md_resource_count);

    std::vector<uct_md_resource_desc_t> resources(expected.size() + 1);
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = resources.data();
    ASSERT_EQ(UCS_OK, uct_component_query(m_component, &attr));
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(expected[i], resources[i].md_name);
    }
}

TEST_F(ib_component, opening_an_absent_device_says_so) {
    uct_md_config_t *config;
    uct_md_h md;
    gpumem_test::log_capture log;

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL, &config));
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              uct_md_open(m_component, "gpumem_nodev9", config, &md));
    uct_config_release(config);
    EXPECT_EQ(1u, log.count({"no RDMA device 'nodev9'"}) +
                  log.count({"cannot list RDMA devices"}))
            << log.text();
}

TEST_F(ib_component, config_has_max_access_and_order_with_help) {
    const uct_component_t *component =
            reinterpret_cast<const uct_component_t*>(m_component);
    std::vector<std::string> names;

    EXPECT_STREQ("GPUMEM_IB_", component->md_config.prefix);
    for (const ucs_config_field_t *field = component->md_config.table;
         field->name != NULL; ++field) {
        if (field->name[0] != '\0') {
            names.push_back(field->name);
            EXPECT_GT(strlen(field->doc), 40u) << field->name << " needs help";
        }
    }
    EXPECT_NE(names.end(), std::find(names.begin(), names.end(),
                                     "MAX_ACCESS"));
    EXPECT_NE(names.end(), std::find(names.begin(), names.end(), "ORDER"));
    EXPECT_NE(names.end(), std::find(names.begin(), names.end(), "RCACHE"));
}

TEST_F(ib_component, config_takes_each_access_and_order_and_refuses_others) {
    uct_md_config_t *config;
    char value[64];

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL, &config));
    ASSERT_EQ(UCS_OK, uct_config_get(config, "MAX_ACCESS", value,
                                     sizeof(value)));
    EXPECT_STREQ("remote", value) << "the default lets UCX's flags decide";
    ASSERT_EQ(UCS_OK, uct_config_get(config, "ORDER", value, sizeof(value)));
    EXPECT_STREQ("in_order", value);
    ASSERT_EQ(UCS_OK, uct_config_get(config, "RCACHE", value, sizeof(value)));
    EXPECT_STREQ("try", value) << "registrations are cached where they can be";

    for (const char *access : {"local", "remote_write", "remote"}) {
        EXPECT_EQ(UCS_OK, gpumem_test::config_modify(config, "GPUMEM_IB_",
                                                     "MAX_ACCESS", access));
        ASSERT_EQ(UCS_OK, uct_config_get(config, "MAX_ACCESS", value,
                                         sizeof(value)));
        EXPECT_STREQ(access, value);
    }
    for (const char *order : {"in_order", "any_order"}) {
        EXPECT_EQ(UCS_OK, gpumem_test::config_modify(config, "GPUMEM_IB_",
                                                     "ORDER", order));
    }

    {
        gpumem_test::log_capture log;
        EXPECT_NE(UCS_OK, gpumem_test::config_modify(config, "GPUMEM_IB_",
                                                     "MAX_ACCESS", "atomic"));
        EXPECT_NE(UCS_OK, gpumem_test::config_modify(config, "GPUMEM_IB_",
                                                     "ORDER", "sometimes"));
    }
    uct_config_release(config);
}

TEST_F(ib_component, rkey_unpack_gives_the_peer_registration) {
    std::vector<uint8_t> bytes = packed(0x1234, 0x7f0000001000ull, 65536,
                                        "mlx5_3");
    const gpumem_reg_remote_view_t *remote_view;
    uct_rkey_bundle_t bundle;

    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, bytes.data(), &bundle));
    remote_view = reinterpret_cast<const gpumem_reg_remote_view_t*>(
            bundle.rkey);
    EXPECT_EQ(0x1234u, remote_view->rkey);
    EXPECT_EQ(0x7f0000001000ull, remote_view->address);
    EXPECT_EQ(65536u, remote_view->length);
    EXPECT_STREQ("mlx5_3", remote_view->device_name);
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &bundle));
}

/* Bytes from a peer: each kind of corruption is a clear refusal */
TEST_F(ib_component, rkey_unpack_refuses_bad_bytes) {
    struct {
        const char   *what;
        size_t       offset;
        uint8_t      value;
        ucs_status_t status;
        const char   *says;
    } cases[] = {
        {"version",           0,  7,    UCS_ERR_UNSUPPORTED,   "version 7"},
        {"empty name",        21, 0,    UCS_ERR_INVALID_PARAM, "empty"},
        {"unprintable name",  22, 0x01, UCS_ERR_INVALID_PARAM, "printable"},
        {"junk after name",   84, 0x41, UCS_ERR_INVALID_PARAM, "not zero"},
        {"wrapping address",  12, 0xff, UCS_ERR_INVALID_PARAM, "wrap"}
    };
    uct_rkey_bundle_t bundle;

    for (const auto &c : cases) {
        std::vector<uint8_t> bytes = packed(0x1234, 0xfe00000000000000ull,
                                            0x0100000000000000ull, "mlx5_3");
        gpumem_test::log_capture log;

        bytes[c.offset] = c.value;
        EXPECT_EQ(c.status, uct_rkey_unpack(m_component, bytes.data(),
                                             &bundle))
                << c.what;
        EXPECT_EQ(1u, log.count({"packed remote key", c.says}))
                << c.what << ": " << log.text();
    }
}
