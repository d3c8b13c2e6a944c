/**
 * gpumem tests: the memory domain opens, answers queries truthfully and
 * closes.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <ucs/sys/topo/base/topo.h>
}

#include <string>


class md : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
        m_component = gpumem_test::find_component("gpumem");
        ASSERT_TRUE(m_component != NULL);
        ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL,
                                             &m_config));
        ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", m_config,
                                      &m_md));
    }

    virtual void TearDown() {
        if (m_md != NULL) {
            uct_md_close(m_md);
        }
        if (m_config != NULL) {
            uct_config_release(m_config);
        }
    }

    uct_component_h m_component = NULL;
    uct_md_config_t *m_config   = NULL;
    uct_md_h        m_md        = NULL;
};


TEST_F(md, query_names_the_component) {
    uct_md_attr_t attr;

    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_STREQ("gpumem", attr.component_name);
}

/* Nothing is advertised that is not built: no allocation, registration or
 * memory type detection yet. */
TEST_F(md, query_advertises_nothing_not_built) {
    uct_md_attr_t attr;

    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_EQ(0u, attr.cap.flags);
    EXPECT_EQ(0u, attr.cap.alloc_mem_types);
    EXPECT_EQ(0u, attr.cap.reg_mem_types);
    EXPECT_EQ(0u, attr.cap.detect_mem_types);
    EXPECT_EQ(0u, attr.rkey_packed_size);
}

TEST_F(md, unbuilt_operations_say_unsupported) {
    ucs_memory_type_t mem_type;
    char buffer[64];
    uct_mem_h memh;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_mem_reg(m_md, buffer, sizeof(buffer),
                             UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_detect_memory_type(m_md, buffer, sizeof(buffer),
                                        &mem_type));
}

TEST_F(md, opens_twice_independently) {
    uct_md_h second;

    ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", m_config, &second));
    EXPECT_NE(m_md, second);
    uct_md_close(second);
}

class md_topo : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
        m_component = gpumem_test::find_component("gpumem");
        ASSERT_TRUE(m_component != NULL);
        ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL,
                                             &m_config));
    }

    virtual void TearDown() {
        if (m_config != NULL) {
            uct_config_release(m_config);
        }
    }

    uct_component_h m_component = NULL;
    uct_md_config_t *m_config   = NULL;
};

/* UCX's own topology sees each GPU of the topology as a system device */
TEST_F(md_topo, gpus_become_named_ucx_system_devices) {
    std::string xml = std::string(GPUMEM_TEST_TOPO_DIR) +
                      "/hwloc-nvidiaDGX2-16xV100-nvswitch.xml";
    ucs_sys_bus_id_t bus_id = {0, 0xe7, 0, 0};
    ucs_sys_device_t sys_dev;
    uct_md_h md;

    ASSERT_EQ(UCS_OK, uct_config_modify(m_config, "TOPO_XML", xml.c_str()));
    ASSERT_EQ(UCS_OK, uct_config_modify(m_config, "SYSFS_ROOT", "/nonexistent"));
    ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", m_config, &md));

    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev));
    EXPECT_STREQ("nvml15", ucs_topo_sys_device_get_name(sys_dev));
    uct_md_close(md);
}

TEST_F(md_topo, unreadable_topology_fails_the_open) {
    uct_md_h md;

    ASSERT_EQ(UCS_OK, uct_config_modify(m_config, "TOPO_XML",
                                        "/nonexistent/topo.xml"));
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              uct_md_open(m_component, "gpumem", m_config, &md));
}
