/**
 * gpumem tests: the memory domain opens, answers queries truthfully,
 * allocates device memory on the emu GPU and recognises it, and closes.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <common/gpumem_test.h>
#include <common/log_capture.h>
#include <common/temp_dir.h>

extern "C" {
#include <ucs/sys/math.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucm/api/ucm.h>
#include <ucs/memory/memtype_cache.h>
}

#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>


class md : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
        m_component = gpumem_test::find_component("gpumem");
        ASSERT_TRUE(m_component != NULL);
        ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL,
                                             &m_config));
        /* Another driver's GPUs are the machine's, open for the process's
         * life: their state is theirs */
        if (gpumem_test::driver_is_emu()) {
            ASSERT_TRUE(m_shm_dir.make("md"));
            modify("EMU_SHM_DIR", m_shm_dir.path());
            modify("EMU_VRAM_SIZE", "64m");
        }
    }

    /* The GPUs' settings are the plugin's, from the environment, read by
     * each memory domain's open */
    void modify(const char *name, const std::string &value) {
        std::string var = std::string("UCX_GPUMEM_") + name;

        const char *old = getenv(var.c_str());

        m_vars.push_back({var, (old != NULL) ? old : "", old != NULL});
        ASSERT_EQ(0, setenv(var.c_str(), value.c_str(), 1));
    }

    virtual void TearDown() {
        if (m_md != NULL) {
            uct_md_close(m_md);
        }
        if (m_config != NULL) {
            uct_config_release(m_config);
        }
        /* Latest first, each to what it was before */
        for (auto var = m_vars.rbegin(); var != m_vars.rend(); ++var) {
            if (var->was_set) {
                setenv(var->name.c_str(), var->value.c_str(), 1);
            } else {
                unsetenv(var->name.c_str());
            }
        }
        /* The domains closed: nothing left shared */
        m_shm_dir.expect_empty("emu state");
    }

    void open() {
        ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", m_config,
                                      &m_md));
    }

    void *alloc(size_t *length_p, uct_allocated_memory_t *mem) {
        uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
        uct_mem_alloc_params_t params;

        params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                            UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                            UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                            UCT_MEM_ALLOC_PARAM_FIELD_NAME;
        params.flags      = UCT_MD_MEM_ACCESS_ALL;
        params.mem_type   = UCS_MEMORY_TYPE_CUDA;
        params.mds.mds    = &m_md;
        params.mds.count  = 1;
        params.name       = "test";
        EXPECT_EQ(UCS_OK, uct_mem_alloc(*length_p, &method, 1, &params, mem));
        *length_p = mem->length;
        return mem->address;
    }

    gpumem_test::temp_dir m_shm_dir;
    uct_component_h       m_component = NULL;
    uct_md_config_t       *m_config   = NULL;
    uct_md_h              m_md        = NULL;
    /* A variable modify() set, and what it was before */
    struct saved_var {
        std::string name;
        std::string value;
        bool        was_set;
    };
    std::vector<saved_var> m_vars;
};


TEST_F(md, query_names_the_component) {
    uct_md_attr_t attr;

    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_STREQ("gpumem", attr.component_name);
}

/* What works is advertised, and nothing else: allocation and detection of
 * device memory of the configured type; registration of host and device
 * memory for the copy transport, which needs no rkey */
TEST_F(md, query_advertises_allocation_detection_and_keyless_registration) {
    uct_md_attr_t attr;

    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_EQ((uint64_t)(UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_REG),
              attr.cap.flags);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_CUDA), attr.cap.alloc_mem_types);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_CUDA), attr.cap.detect_mem_types);
    /* The copy engine reaches host memory as well as device memory */
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_CUDA),
              attr.cap.access_mem_types);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_CUDA),
              attr.cap.reg_mem_types);
    EXPECT_EQ(SIZE_MAX, attr.cap.max_reg);
    EXPECT_EQ(0u, attr.rkey_packed_size);
    EXPECT_EQ(0.0, attr.reg_cost.c);
    EXPECT_EQ(0.0, attr.reg_cost.m);
    if (gpumem_test::driver_is_emu()) {
        /* The case's VRAM (UCX_GPUMEM_EMU_VRAM_SIZE) */
        EXPECT_EQ(64u << 20, attr.cap.max_alloc);
    } else {
        EXPECT_GT(attr.cap.max_alloc, 0u);
    }
}

TEST_F(md, memory_type_is_a_setting) {
    uct_md_attr_t attr;

    modify("MEM_TYPE", "rocm");
    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_ROCM), attr.cap.alloc_mem_types);
}

TEST_F(md, host_memory_type_setting_is_refused) {
    modify("MEM_TYPE", "host");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_open(m_component, "gpumem", m_config, &m_md));
    m_md = NULL;
}

TEST_F(md, allocates_device_memory_it_then_detects) {
    uct_allocated_memory_t mem;
    ucs_memory_type_t mem_type;
    size_t length = 5000;
    char host[64];
    void *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = alloc(&length, &mem);
    ASSERT_TRUE(address != NULL);
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, mem.mem_type);
    EXPECT_EQ(8192u, length);

    ASSERT_EQ(UCS_OK, uct_md_detect_memory_type(m_md, address, length,
                                                &mem_type));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, mem_type);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_detect_memory_type(m_md, host, sizeof(host), &mem_type));
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}

TEST_F(md, mem_query_gives_the_allocation_and_its_gpu) {
    uct_allocated_memory_t mem;
    uct_md_mem_attr_t attr;
    size_t length = 1 << 20;
    char *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = (char*)alloc(&length, &mem);
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE |
                      UCT_MD_MEM_ATTR_FIELD_SYS_DEV |
                      UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                      UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
    ASSERT_EQ(UCS_OK, uct_md_mem_query(m_md, address + 1000, 10, &attr));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, attr.mem_type);
    EXPECT_EQ((void*)address, attr.base_address);
    EXPECT_EQ(length, attr.alloc_length);
    EXPECT_NE(UCS_SYS_DEVICE_ID_UNKNOWN, attr.sys_dev);
    /* The emu's built-in GPUs are named by their PCI address */
    EXPECT_STREQ("00e0:03:00.0", ucs_topo_sys_device_get_name(attr.sys_dev));
    uct_mem_free(&mem);
}

#ifdef HAVE_UCT_MD_MEM_ATTR_FIELD_DMABUF
/* UCX asks a memory domain for a dma-buf of device memory to register it
 * with a NIC: the emu driver exports one where the kernel has udmabuf, and
 * the offset places the address in it */
TEST_F(md, mem_query_gives_a_dmabuf_where_the_driver_exports_one) {
    uct_allocated_memory_t mem;
    uct_md_mem_attr_t attr;
    size_t length = 1 << 20;
    struct stat st;
    char *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address         = (char*)alloc(&length, &mem);
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                      UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
    attr.dmabuf_fd  = 12345;
    {
        gpumem_test::log_capture log; /* the emu says why it exports none */
        ASSERT_EQ(UCS_OK, uct_md_mem_query(m_md, address + 4096, 10, &attr));
    }
    if (access("/dev/udmabuf", R_OK | W_OK) != 0) {
        EXPECT_EQ(UCT_DMABUF_FD_INVALID, attr.dmabuf_fd);
        uct_mem_free(&mem);
        GTEST_SKIP() << "no /dev/udmabuf on this kernel: no dma-buf, and "
                        "none was given";
    }

    ASSERT_NE(UCT_DMABUF_FD_INVALID, attr.dmabuf_fd);
    ASSERT_EQ(0, fstat(attr.dmabuf_fd, &st));
    EXPECT_LE(attr.dmabuf_offset + 10, (size_t)st.st_size);
    EXPECT_EQ(4096u, attr.dmabuf_offset % length);
    close(attr.dmabuf_fd);
    uct_mem_free(&mem);
}
#endif

#ifdef HAVE_UCT_MD_MEM_ALLOC_SYS_DEV
/* UCX (1.19 and later) may ask for device memory of a given GPU */
TEST_F(md, allocates_on_the_gpu_ucx_asks_for) {
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;
    uct_allocated_memory_t mem;
    uct_md_mem_attr_t attr;
    ucs_sys_device_t gpu1;

    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bdf_name("00e0:04:00.0",
                                                       &gpu1));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE;
    params.mem_type   = UCS_MEMORY_TYPE_CUDA;
    params.mds.mds    = &m_md;
    params.mds.count  = 1;
    params.sys_device = gpu1;
    ASSERT_EQ(UCS_OK, uct_mem_alloc(4096, &method, 1, &params, &mem));

    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_SYS_DEV;
    ASSERT_EQ(UCS_OK, uct_md_mem_query(m_md, mem.address, 4096, &attr));
    EXPECT_EQ(gpu1, attr.sys_dev);
    uct_mem_free(&mem);

    /* A device that is none of the domain's GPUs: no allocation */
    params.sys_device = UCS_SYS_DEVICE_ID_MAX - 1;
    {
        gpumem_test::log_capture log;
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_mem_alloc(4096, &method, 1, &params, &mem));
    }
}
#endif

TEST_F(md, no_room_is_no_memory) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("VRAM size of the case");
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;
    uct_allocated_memory_t mem;

    ASSERT_NO_FATAL_FAILURE(open());
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS;
    params.mem_type   = UCS_MEMORY_TYPE_CUDA;
    params.mds.mds    = &m_md;
    params.mds.count  = 1;
    EXPECT_NE(UCS_OK, uct_mem_alloc(128 << 20, &method, 1, &params, &mem));
}

TEST_F(md, opens_twice_sharing_the_gpus) {
    uct_allocated_memory_t mem;
    ucs_memory_type_t mem_type;
    size_t length = 4096;
    uct_md_h second;
    void *address;

    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", m_config, &second));
    EXPECT_NE(m_md, second);
    address = alloc(&length, &mem);
    EXPECT_EQ(UCS_OK, uct_md_detect_memory_type(second, address, length,
                                                &mem_type));
    uct_mem_free(&mem);
    uct_md_close(second);
}

/* Registration holds nothing (the copy engines reach memory by address)
 * and packs no key; the key a peer unpacks is no key, and needs none */
TEST_F(md, registers_host_and_device_memory_without_keys) {
    uct_allocated_memory_t mem;
    uct_rkey_bundle_t rkey;
    size_t length = 8192;
    uct_mem_h host_memh, dev_memh;
    char buffer[64], rkey_buffer[8];
    char *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = (char*)alloc(&length, &mem);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buffer, sizeof(buffer),
                                     UCT_MD_MEM_ACCESS_ALL, &host_memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, address + 100, length - 100,
                                     UCT_MD_MEM_ACCESS_ALL, &dev_memh));
    EXPECT_TRUE(host_memh != UCT_MEM_HANDLE_NULL);
    EXPECT_TRUE(dev_memh != UCT_MEM_HANDLE_NULL);

    /* rkey_packed_size is 0: the buffer is not written */
    memset(rkey_buffer, 'k', sizeof(rkey_buffer));
    EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, dev_memh, rkey_buffer));
    EXPECT_EQ(std::string(sizeof(rkey_buffer), 'k'),
              std::string(rkey_buffer, sizeof(rkey_buffer)));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, rkey_buffer, &rkey));
    EXPECT_EQ(UCT_INVALID_RKEY, rkey.rkey);
    EXPECT_TRUE(rkey.handle == NULL);
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &rkey));

    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, dev_memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, host_memh));
    uct_mem_free(&mem);
}

TEST_F(md, registration_past_a_device_allocation_is_refused) {
    uct_allocated_memory_t mem;
    size_t length = 8192;
    uct_mem_h memh;
    char *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = (char*)alloc(&length, &mem);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_reg(m_md, address + 100, length,
                             UCT_MD_MEM_ACCESS_ALL |
                             UCT_MD_MEM_FLAG_HIDE_ERRORS, &memh));
    uct_mem_free(&mem);
    /* Freed: no allocation holds it any more. Where device addresses are
     * unified with the host's (CUDA), a freed one is as any host address */
    if (!gpumem_test::driver_is_emu()) {
        return;
    }
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_reg(m_md, address, 4096,
                             UCT_MD_MEM_ACCESS_ALL |
                             UCT_MD_MEM_FLAG_HIDE_ERRORS, &memh));
}

/* UCP's registration cache rounds a range out to its alignment: an 8-byte
 * allocation is registered as 16 bytes, which the allocation's block holds;
 * past the block is another allocation's, and refused */
TEST_F(md, registration_rounded_out_within_the_allocations_block_is_held) {
    uct_allocated_memory_t mem;
    size_t length = 8;
    uct_mem_h memh;
    char *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = (char*)alloc(&length, &mem);
    ASSERT_LE(8u, length);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, address,
                                     (length + 15) / 16 * 16,
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_reg(m_md, address,
                             (length + 255) / 256 * 256 + 1,
                             UCT_MD_MEM_ACCESS_ALL |
                             UCT_MD_MEM_FLAG_HIDE_ERRORS, &memh));
    uct_mem_free(&mem);
}

/* UCX's own topology sees each GPU of the topology as a system device */
TEST_F(md, gpus_of_a_topology_become_named_ucx_system_devices) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    std::string xml = std::string(GPUMEM_TEST_TOPO_DIR) +
                      "/hwloc-nvidiaDGX2-16xV100-nvswitch.xml";
    ucs_sys_bus_id_t bus_id = {0, 0xe7, 0, 0};
    ucs_sys_device_t sys_dev;

    modify("TOPO_XML", xml);
    modify("SYSFS_ROOT", "/nonexistent");
    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bus_id(&bus_id, &sys_dev));
    EXPECT_STREQ("nvml15", ucs_topo_sys_device_get_name(sys_dev));
}

TEST_F(md, unreadable_topology_fails_the_open) {
    modify("TOPO_XML", "/nonexistent/topo.xml");
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              uct_md_open(m_component, "gpumem", m_config, &m_md));
    m_md = NULL;
}

namespace {

struct mem_type_events {
    std::vector<std::pair<void*, size_t> > allocs, frees;
};

void record_mem_type_event(ucm_event_type_t type, ucm_event_t *event,
                           void *arg)
{
    mem_type_events *events = (mem_type_events*)arg;

    if (event->mem_type.mem_type != UCS_MEMORY_TYPE_CUDA) {
        return;
    }
    ((type == UCM_EVENT_MEM_TYPE_ALLOC) ? events->allocs : events->frees)
            .push_back(std::make_pair(event->mem_type.address,
                                      event->mem_type.size));
}

}

/* UCX's memory type cache and registration caches learn of device memory
 * from UCM events: one for the allocation, one for the free */
TEST_F(md, allocation_and_free_raise_ucm_memory_type_events) {
    uct_allocated_memory_t mem;
    mem_type_events events;
    size_t length = 4096;
    void *address;

    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                            UCM_EVENT_MEM_TYPE_FREE |
                                            UCM_EVENT_FLAG_NO_INSTALL, 0,
                                            record_mem_type_event, &events));
    address = alloc(&length, &mem);
    uct_mem_free(&mem);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                            UCM_EVENT_MEM_TYPE_FREE, record_mem_type_event,
                            &events);

    ASSERT_EQ(1u, events.allocs.size());
    EXPECT_EQ(address, events.allocs[0].first);
    EXPECT_EQ(length, events.allocs[0].second);
    ASSERT_EQ(1u, events.frees.size());
    EXPECT_EQ(address, events.frees[0].first);
}

#ifdef HAVE_UCM_MEM_TYPE_EVENT_SYS_DEV
namespace {

typedef std::vector<std::pair<ucs_sys_device_t, uint8_t> > mem_type_attrs;

void record_mem_type_attrs(ucm_event_type_t type, ucm_event_t *event,
                           void *arg)
{
    if (type == UCM_EVENT_MEM_TYPE_ALLOC) {
        ((mem_type_attrs*)arg)->push_back(
                std::make_pair(event->mem_type.sys_dev,
                               event->mem_type.mem_flags));
    }
}

}

/* UCX 1.22 and later take the GPU from the event, and register only memory
 * whose event says it is registrable */
TEST_F(md, allocation_event_names_the_gpu_and_registrable_memory) {
    uct_allocated_memory_t mem;
    mem_type_attrs attrs;
    size_t length = 4096;

    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                            UCM_EVENT_FLAG_NO_INSTALL, 0,
                                            record_mem_type_attrs, &attrs));
    alloc(&length, &mem);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, record_mem_type_attrs,
                            &attrs);
    uct_mem_free(&mem);

    ASSERT_EQ(1u, attrs.size());
    EXPECT_STREQ("00e0:03:00.0", ucs_topo_sys_device_get_name(attrs[0].first));
    EXPECT_EQ(UCS_MEM_FLAG_REGISTRABLE, attrs[0].second);
}
#endif

/* UCX creates its memory type cache at its first lookup, asking for the
 * allocations made before: device memory allocated earlier is reported */
TEST_F(md, handler_added_later_learns_of_live_allocations) {
    uct_allocated_memory_t live, freed;
    size_t live_length = 4096, freed_length = 4096;
    mem_type_events events;
    void *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = alloc(&live_length, &live);
    alloc(&freed_length, &freed);
    uct_mem_free(&freed);

    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                            UCM_EVENT_MEM_TYPE_FREE |
                                            UCM_EVENT_FLAG_NO_INSTALL |
                                            UCM_EVENT_FLAG_EXISTING_ALLOC, 0,
                                            record_mem_type_event, &events));
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                            UCM_EVENT_MEM_TYPE_FREE, record_mem_type_event,
                            &events);
    uct_mem_free(&live);

    ASSERT_EQ(1u, events.allocs.size());
    EXPECT_EQ(address, events.allocs[0].first);
    EXPECT_EQ(live_length, events.allocs[0].second);
    EXPECT_EQ(0u, events.frees.size());
}

/* UCX's memory type cache (which UCP consults) follows the allocations:
 * device memory is known at once, a freed range is forgotten, and a new
 * allocation of another type at the same address is seen as that type */
TEST_F(md, memtype_cache_follows_free_and_reuse_with_another_type) {
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_allocated_memory_t cuda_mem, rocm_mem;
    uct_mem_alloc_params_t params;
    uct_md_config_t *rocm_config;
    ucs_memory_info_t info;
    size_t length = 1 << 20;
    uct_md_h rocm_md;
    void *address;

    ASSERT_NO_FATAL_FAILURE(open());
    address = alloc(&length, &cuda_mem);
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_lookup(address, length, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, info.type);

    uct_mem_free(&cuda_mem);
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucs_memtype_cache_lookup(address, length,
                                                        &info));

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL,
                                         &rocm_config));
    modify("MEM_TYPE", "rocm");
    ASSERT_EQ(UCS_OK, uct_md_open(m_component, "gpumem", rocm_config,
                                  &rocm_md));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS;
    params.mem_type   = UCS_MEMORY_TYPE_ROCM;
    params.mds.mds    = &rocm_md;
    params.mds.count  = 1;
    ASSERT_EQ(UCS_OK, uct_mem_alloc(length, &method, 1, &params, &rocm_mem));

    /* The emu hands the same device addresses out again */
    EXPECT_EQ(address, rocm_mem.address);
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_lookup(rocm_mem.address, length,
                                               &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_ROCM, info.type);

    uct_mem_free(&rocm_mem);
    uct_md_close(rocm_md);
    uct_config_release(rocm_config);
}

/* The interface configuration of @a tl, read through an MD of @a component
 * opened with the environment's settings */
/* Opens and closes the memory domain of @a component */
static ucs_status_t md_open_close(uct_component_h component)
{
    uct_md_config_t *config;
    ucs_status_t status;
    uct_md_h md;

    status = uct_md_config_read(component, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_md_open(component, "gpumem", config, &md);
    uct_config_release(config);
    if (status == UCS_OK) {
        uct_md_close(md);
    }
    return status;
}

static ucs_status_t md_config_read_iface(uct_component_h component,
                                         const char *tl)
{
    uct_md_resource_desc_t resource;
    uct_component_attr_t attr;
    uct_iface_config_t *iface_config;
    uct_md_config_t *config;
    ucs_status_t status;
    uct_md_h md;

    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = &resource;
    status            = uct_component_query(component, &attr);
    if (status == UCS_OK) {
        status = uct_md_config_read(component, NULL, NULL, &config);
    }
    if (status != UCS_OK) {
        return status;
    }

    status = uct_md_open(component, resource.md_name, config, &md);
    uct_config_release(config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_md_iface_config_read(md, tl, NULL, NULL, &iface_config);
    if (status == UCS_OK) {
        uct_config_release(iface_config);
    }
    uct_md_close(md);
    return status;
}

/* A value UCS's own types would take in silence (a fraction or a negative
 * as a count, a negative or endless time, an endless size, a bandwidth that
 * is not positive) fails the configuration read, and the log names the
 * variable and the value */
TEST(md_config, bad_values_are_refused_naming_the_variable) {
    /* The variable, and the name its table gives the setting */
    const struct {
        const char *component, *tl, *name, *field, *value;
    } cases[] = {
        {"gpumem", NULL, "ALLOC_GPU", "ALLOC_GPU", "1.5"},
        {"gpumem", NULL, "ALLOC_GPU", "ALLOC_GPU", "-1"},
        {"gpumem", NULL, "EMU_VRAM_SIZE", "EMU_VRAM_SIZE", "-1"},
        {"gpumem", NULL, "EMU_VRAM_SIZE", "EMU_VRAM_SIZE", "inf"},
        {"gpumem_ipc", NULL, "IPC_CACHE_MAX_IDLE", "CACHE_MAX_IDLE", "-1"},
        {"gpumem_ipc", NULL, "IPC_CACHE_SWEEP_INTERVAL",
         "CACHE_SWEEP_INTERVAL", "-1s"},
        {"gpumem", "gpumemcpy", "COPY_LATENCY", "LATENCY", "-5us"},
        {"gpumem", "gpumemcpy", "COPY_OVERHEAD", "OVERHEAD", "-1ns"},
        {"gpumem_ipc", "gpumemipc", "IPC_LATENCY", "LATENCY", "-5us"},
        {"gpumem_ipc", "gpumemipc", "IPC_OVERHEAD", "OVERHEAD", "-1us"},
        /* UCP's protocol selection aborts on a bandwidth that is not
         * positive, and takes an endless or undefined estimate */
        {"gpumem", "gpumemcpy", "COPY_BW", "BW", "-1GBs"},
        {"gpumem", "gpumemcpy", "COPY_BW", "BW", "0GBs"},
        {"gpumem", "gpumemcpy", "COPY_BW", "BW", "inf"},
        {"gpumem_ipc", "gpumemipc", "IPC_BW", "BW", "-1GBs"},
        {"gpumem_ipc", "gpumemipc", "IPC_BW", "BW", "nan"},
        {"gpumem", "gpumemcpy", "COPY_LATENCY", "LATENCY", "nan"},
        {"gpumem", "gpumemcpy", "COPY_LATENCY", "LATENCY", "inf"},
        {"gpumem_ipc", "gpumemipc", "IPC_LATENCY", "LATENCY", "inf"},
        {"gpumem_ipc", "gpumemipc", "IPC_OVERHEAD", "OVERHEAD", "inf"},
        {"gpumem", "gpumemcpy", "COPY_OVERHEAD", "OVERHEAD", "nan"},
    };
    gpumem_test::emu_env emu;

    ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
    ASSERT_TRUE(emu.set("md_config"));

    for (const auto &c : cases) {
        std::string var = std::string("UCX_GPUMEM_") + c.name;
        uct_component_h component = gpumem_test::find_component(c.component);
        gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
        uct_md_config_t *config;
        ucs_status_t status;

        ASSERT_TRUE(component != NULL) << c.component;
        if (!strncmp(c.name, "EMU_", 4) && !gpumem_test::driver_is_emu()) {
            /* Another driver reads no setting of the emu's */
            continue;
        }
        setenv(var.c_str(), c.value, 1);
        if (c.tl != NULL) {
            status = md_config_read_iface(component, c.tl);
        } else if (!strcmp(c.component, "gpumem")) {
            /* The GPUs' settings are read by the open */
            status = md_open_close(component);
        } else {
            status = uct_md_config_read(component, NULL, NULL, &config);
            if (status == UCS_OK) {
                uct_config_release(config);
            }
        }
        unsetenv(var.c_str());
        if (emu.is_set()) {
            setenv("UCX_GPUMEM_EMU_VRAM_SIZE", "64m", 1);
        }

        EXPECT_NE(UCS_OK, status) << var << "=" << c.value << " was taken";
        EXPECT_EQ(1u, log.count({c.field, std::string("'") + c.value + "'"}))
                << var << "=" << c.value << ": " << log.text();
    }

    emu.unset();
}
