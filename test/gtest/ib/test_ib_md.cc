/**
 * gpumem tests: the gpumem_ib memory domain on a real RDMA device:
 * registration of host pages and dma-bufs with verbs, refusals and their
 * reasons, remote keys. Skipped where no device exists.
 *
 * See file LICENSE for terms.
 */

#include "ib_test.h"

#include <common/log_capture.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

using gpumem_test::dmabuf_params;
using gpumem_test::host_params;
using gpumem_test::log_capture;


class ib_md : public gpumem_test::ib_md_test {
protected:
    virtual void SetUp() {
        gpumem_test::ib_md_test::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        open_md();
        m_buffer = mmap(NULL, m_length, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, m_buffer);
    }

    virtual void TearDown() {
        if ((m_buffer != NULL) && (m_buffer != MAP_FAILED)) {
            munmap(m_buffer, m_length);
        }
        gpumem_test::ib_md_test::TearDown();
    }

    /* The access and order that a registration asking every UCT access
     * gets from the domain opened with @a name set to @a value */
    void register_all_with(const char *name, const char *value,
                           gpumem_reg_access_t *access_p,
                           gpumem_reg_order_t *order_p) {
        uct_mem_h memh;

        *access_p = GPUMEM_REG_ACCESS_LAST;
        *order_p  = GPUMEM_REG_ORDER_LAST;
        uct_md_close(m_md);
        m_md = NULL;
        open_md(name, value);
        ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL,
                                  &memh));
        *access_p = uct_gpumem_ib_memh_view(memh)->region->access;
        *order_p  = uct_gpumem_ib_memh_view(memh)->region->order;
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }

    static constexpr size_t m_length = 1 << 20;
    void                *m_buffer = NULL;
};


TEST_F(ib_md, md_is_named_after_its_device) {
    EXPECT_STREQ(m_device.c_str(), md()->domain.name);
}

TEST_F(ib_md, query_advertises_registration_and_the_wire_size) {
    uct_md_attr_t attr;

    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_STREQ("gpumem_ib", attr.component_name);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);
    EXPECT_FALSE(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_CUDA),
              attr.cap.reg_mem_types) << "host and the GPUs' device memory";
    EXPECT_EQ(0u, attr.cap.detect_mem_types) << "the gpumem domain detects";
    EXPECT_EQ((size_t)GPUMEM_REG_WIRE_SIZE, attr.rkey_packed_size);
    EXPECT_GT(attr.cap.max_reg, 0u);
}

TEST_F(ib_md, registers_host_pages_for_each_uct_access) {
    struct {
        unsigned            flags;
        gpumem_reg_access_t access;
    } cases[] = {
        {UCT_MD_MEM_ACCESS_LOCAL_READ | UCT_MD_MEM_ACCESS_LOCAL_WRITE,
         GPUMEM_REG_ACCESS_LOCAL},
        {UCT_MD_MEM_ACCESS_REMOTE_PUT, GPUMEM_REG_ACCESS_REMOTE_WRITE},
        {UCT_MD_MEM_ACCESS_ALL, GPUMEM_REG_ACCESS_REMOTE}
    };
    uct_mem_h memh;

    for (const auto &c : cases) {
        ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, c.flags, &memh));
        const gpumem_reg_view_t *view = uct_gpumem_ib_memh_view(memh);
        EXPECT_EQ(c.access, view->region->access);
        EXPECT_EQ((uintptr_t)m_buffer, view->address);
        EXPECT_EQ(65536u, view->length);
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }
}

TEST_F(ib_md, registers_in_any_order) {
    gpumem_reg_params_t params = host_params(m_buffer, 65536,
                                             GPUMEM_REG_ACCESS_REMOTE,
                                             GPUMEM_REG_ORDER_ANY);
    uct_mem_h memh;

    /* Relaxed ordering is optional: the device takes it or ignores it */
    ASSERT_EQ(UCS_OK, reg_memory(params, &memh));
    EXPECT_EQ(GPUMEM_REG_ORDER_ANY,
              uct_gpumem_ib_memh_view(memh)->region->order);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

TEST_F(ib_md, zero_bytes_is_invalid_and_takes_nothing) {
    uct_mem_h memh = (uct_mem_h)0x5a;
    log_capture log;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              reg_memory(host_params(m_buffer, 0), &memh));
    EXPECT_EQ((uct_mem_h)0x5a, memh);
    EXPECT_EQ(0u, md()->domain.num_regions);
    EXPECT_EQ(1u, log.count({m_device, "0 bytes"})) << log.text();
}

TEST_F(ib_md, negative_dmabuf_descriptor_or_offset_is_invalid) {
    uct_mem_h memh;
    log_capture log;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              reg_memory(dmabuf_params(-1, 0, 4096, 0x1000, NULL), &memh));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              reg_memory(dmabuf_params(0, -4096, 4096, 0x1000, NULL), &memh));
    EXPECT_EQ(0u, md()->domain.num_regions);
    EXPECT_EQ(1u, log.count({"descriptor -1", "negative"})) << log.text();
    EXPECT_EQ(1u, log.count({"offset -4096", "negative"})) << log.text();
}

TEST_F(ib_md, kernel_refusal_is_an_error_naming_the_cause) {
    void *none = mmap(NULL, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0);
    uct_mem_h memh;
    ucs_status_t status;

    ASSERT_NE(MAP_FAILED, none);
    {
        log_capture log;
        status = mem_reg(none, 65536, UCT_MD_MEM_ACCESS_ALL, &memh);
        EXPECT_NE(UCS_OK, status);
        EXPECT_EQ(1u, log.count({m_device, "ibv_reg_mr", "length=65536",
                                 "failed", strerror(EFAULT)}))
                << log.text();
    }
    if (status == UCS_OK) {
        uct_md_mem_dereg(m_md, memh);
    }
    munmap(none, 65536);
    EXPECT_EQ(0u, md()->domain.num_regions);
}

TEST_F(ib_md, hidden_refusal_is_no_error_line) {
    void *none = mmap(NULL, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0);
    uct_mem_h memh;
    log_capture log;

    ASSERT_NE(MAP_FAILED, none);
    EXPECT_NE(UCS_OK, mem_reg(none, 65536,
                              UCT_MD_MEM_ACCESS_ALL |
                              UCT_MD_MEM_FLAG_HIDE_ERRORS, &memh));
    munmap(none, 65536);
    EXPECT_TRUE(log.lines().empty()) << log.text();
}

/* Takes CAP_IPC_LOCK out of this thread's effective set (root's way past
 * RLIMIT_MEMLOCK) and lowers the limit; gives both back */
class memlock_limit {
public:
    explicit memlock_limit(rlim_t bytes) {
        struct rlimit limit;

        m_header.version = _LINUX_CAPABILITY_VERSION_3;
        m_header.pid     = 0;
        m_caps_saved     = (syscall(SYS_capget, &m_header, m_caps) == 0);
        if (m_caps_saved) {
            struct __user_cap_data_struct caps[2];
            memcpy(caps, m_caps, sizeof(caps));
            caps[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &=
                    ~CAP_TO_MASK(CAP_IPC_LOCK);
            syscall(SYS_capset, &m_header, caps);
        }

        getrlimit(RLIMIT_MEMLOCK, &m_saved);
        limit          = m_saved;
        limit.rlim_cur = bytes;
        m_set          = (setrlimit(RLIMIT_MEMLOCK, &limit) == 0);
    }

    ~memlock_limit() {
        setrlimit(RLIMIT_MEMLOCK, &m_saved);
        if (m_caps_saved) {
            syscall(SYS_capset, &m_header, m_caps);
        }
    }

    bool set() const { return m_set; }

private:
    struct __user_cap_header_struct m_header;
    struct __user_cap_data_struct   m_caps[2];
    bool                            m_caps_saved;
    struct rlimit                   m_saved;
    bool                            m_set;
};

TEST_F(ib_md, memlock_refusal_names_rlimit_memlock_and_the_bytes_asked) {
    uct_mem_h memh;
    ucs_status_t status;

    memlock_limit limit(65536);
    if (!limit.set()) {
        GTEST_SKIP() << "cannot lower RLIMIT_MEMLOCK to 64 KiB";
    }

    log_capture log;
    status = mem_reg(m_buffer, m_length, UCT_MD_MEM_ACCESS_ALL, &memh);
    if (status == UCS_OK) {
        uct_md_mem_dereg(m_md, memh);
        FAIL() << m_device << " pinned 1 MiB past a 64 KiB RLIMIT_MEMLOCK";
    }
    EXPECT_EQ(1u, log.count({m_device, "RLIMIT_MEMLOCK is 65536 bytes",
                             "1048576 bytes asked"}))
            << log.text();
}

TEST_F(ib_md, packed_rkey_unpacks_to_the_registration) {
    std::vector<uint8_t> buffer(GPUMEM_REG_WIRE_SIZE);
    const gpumem_reg_remote_view_t *remote_view;
    uct_rkey_bundle_t bundle;
    uct_mem_h memh;

    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, buffer.data()));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, buffer.data(), &bundle));

    remote_view = reinterpret_cast<const gpumem_reg_remote_view_t*>(
            bundle.rkey);
    const gpumem_reg_view_t *view = uct_gpumem_ib_memh_view(memh);
    EXPECT_EQ(view->region->mr.rkey, remote_view->rkey);
    EXPECT_EQ((uintptr_t)m_buffer, remote_view->address);
    EXPECT_EQ(65536u, remote_view->length);
    EXPECT_EQ(m_device, remote_view->device_name);

    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &bundle));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

TEST_F(ib_md, mkey_pack_is_refused_for_a_local_region) {
    std::vector<uint8_t> buffer(GPUMEM_REG_WIRE_SIZE);
    uct_mem_h memh;

    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                              &memh));
    {
        log_capture log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_md_mkey_pack(m_md, memh, buffer.data()));
        EXPECT_EQ(1u, log.count({"is local"})) << log.text();
    }
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

TEST_F(ib_md, max_access_caps_registrations) {
    gpumem_reg_access_t access;
    gpumem_reg_order_t order;

    register_all_with("MAX_ACCESS", "remote_write", &access, &order);
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE_WRITE, access);
    EXPECT_EQ(GPUMEM_REG_ORDER_IN_ORDER, order);
}

TEST_F(ib_md, order_comes_from_the_configuration) {
    gpumem_reg_access_t access;
    gpumem_reg_order_t order;

    register_all_with("ORDER", "any_order", &access, &order);
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE, access);
    EXPECT_EQ(GPUMEM_REG_ORDER_ANY, order);
}

/* The issue: a dma-buf the device refuses (EOPNOTSUPP: soft-RoCE does)
 * falls back to the host path where the memory has one, and says so once */
TEST_F(ib_md, dmabuf_refused_falls_back_to_host_pages_and_says_so_once) {
    gpumem_test::udmabuf dmabuf(65536);
    uct_mem_h memh[2];
    log_capture log;

    if (!dmabuf.made()) {
        GTEST_SKIP() << dmabuf.why();
    }

    for (uct_mem_h &m : memh) {
        ASSERT_EQ(UCS_OK,
                  reg_memory(dmabuf_params(dmabuf.fd(), 0, dmabuf.length(),
                                           (uintptr_t)dmabuf.host_address(),
                                           dmabuf.host_address()),
                             &m));
        EXPECT_EQ(dmabuf.length(), uct_gpumem_ib_memh_view(m)->length);
    }
    for (uct_mem_h m : memh) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m));
    }

    size_t said = log.count({m_device, "refuses to register dma-bufs",
                             "host pages"});
    if (said == 0) {
        GTEST_SKIP() << m_device << " registers dma-bufs itself: there is no "
                     << "refusal to fall back from";
    }
    EXPECT_EQ(1u, said) << log.text();
}

TEST_F(ib_md, dmabuf_refused_without_host_mapping_is_an_error) {
    gpumem_test::udmabuf dmabuf(65536);
    uct_mem_h memh;
    ucs_status_t status;
    log_capture log;

    if (!dmabuf.made()) {
        GTEST_SKIP() << dmabuf.why();
    }

    status = reg_memory(dmabuf_params(dmabuf.fd(), 0, dmabuf.length(),
                                      0x10000000ull, NULL), &memh);
    if (status == UCS_OK) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
        GTEST_SKIP() << m_device << " registers dma-bufs itself";
    }
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, status);
    EXPECT_EQ(1u, log.count({m_device, "ibv_reg_dmabuf_mr",
                             strerror(EOPNOTSUPP), "no host mapping"}))
            << log.text();
    EXPECT_EQ(0u, md()->domain.num_regions);
}

/* The registrations' cache (UCX_GPUMEM_IB_RCACHE) */

static size_t ib_md_num_mrs(uct_gpumem_ib_md_t *md)
{
    size_t count;

    pthread_mutex_lock(&md->lock);
    count = ucs_list_length(&md->mrs);
    pthread_mutex_unlock(&md->lock);
    return count;
}

static const gpumem_reg_region_t *ib_md_registration(uct_mem_h memh)
{
    return uct_gpumem_ib_memh_view(memh)->region;
}

TEST_F(ib_md, memory_registered_again_takes_its_cached_registration) {
    char *inner = (char*)m_buffer + 4096 + 100;
    uct_mem_h first, second, third;

    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL,
                              &first));
    ASSERT_EQ(UCS_OK, mem_reg(inner, 8000, UCT_MD_MEM_ACCESS_ALL, &second));
    EXPECT_EQ(ib_md_registration(first), ib_md_registration(second))
            << "bytes inside a cached registration";
    EXPECT_EQ(1u, ib_md_num_mrs(md()));

    /* The handle, and the key a peer gets of it, are of the bytes asked
     * for, not of all that the registration holds */
    const gpumem_reg_view_t *view = uct_gpumem_ib_memh_view(second);
    gpumem_reg_remote_view_t remote;
    EXPECT_EQ((uintptr_t)inner, view->address);
    EXPECT_EQ(8000u, view->length);
    ASSERT_EQ(UCS_OK, gpumem_reg_view_export(view, &remote));
    EXPECT_EQ((uintptr_t)inner, remote.address);
    EXPECT_EQ(8000u, remote.length);

    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, first));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, second));
    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL,
                              &third));
    EXPECT_EQ(1u, ib_md_num_mrs(md())) << "kept after its last deregistration";
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, third));
}

TEST_F(ib_md, without_the_cache_each_registration_is_the_devices) {
    uct_mem_h first, second;

    uct_md_close(m_md);
    m_md = NULL;
    ASSERT_NO_FATAL_FAILURE(open_md("RCACHE", "no"));
    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL,
                              &first));
    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL,
                              &second));
    EXPECT_NE(ib_md_registration(first), ib_md_registration(second));
    EXPECT_EQ(2u, ib_md_num_mrs(md()));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, first));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, second));
    EXPECT_EQ(0u, ib_md_num_mrs(md())) << "deregistered at once";
}

/* The kibibytes of this process's memory the kernel pins for devices
 * (VmPin of /proc/self/status), or -1 if it does not say */
static long ib_md_pinned_kib()
{
    std::ifstream status("/proc/self/status");
    std::string line;

    while (std::getline(status, line)) {
        if (line.compare(0, 7, "VmPin:\t") == 0) {
            return std::stol(line.substr(7));
        }
    }
    return -1;
}

/* Whether every page of the @a length bytes at @a addr is in memory */
static bool ib_md_all_resident(void *addr, size_t length)
{
    size_t page = sysconf(_SC_PAGESIZE);
    std::vector<unsigned char> vec((length + page - 1) / page);

    if (mincore(addr, length, vec.data()) != 0) {
        return false;
    }
    return std::all_of(vec.begin(), vec.end(),
                       [](unsigned char v) { return (v & 1) != 0; });
}

/* Seed 000: Host, "the bytes of a bigarray, whose pages stay resident while
 * registered": the registration of pages never touched brings them in and
 * the kernel pins them for the device, until the deregistration (without
 * the cache, at once) */
TEST_F(ib_md, host_pages_stay_resident_and_pinned_while_registered) {
    long before;
    uct_mem_h memh;

    uct_md_close(m_md);
    m_md = NULL;
    ASSERT_NO_FATAL_FAILURE(open_md("RCACHE", "no"));
    before = ib_md_pinned_kib();
    if (before < 0) {
        GTEST_SKIP() << "this kernel says no VmPin in /proc/self/status";
    }
    ASSERT_FALSE(ib_md_all_resident(m_buffer, m_length))
            << "the test's pages were in memory before the registration";

    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, m_length, UCT_MD_MEM_ACCESS_ALL,
                              &memh));
    EXPECT_TRUE(ib_md_all_resident(m_buffer, m_length));
    EXPECT_GE(ib_md_pinned_kib() - before, (long)(m_length >> 10));

    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(before, ib_md_pinned_kib()) << "pinned past its deregistration";
}

/* The cache's settings are UCX's RCACHE_ ones under the domain's prefix:
 * its regions aligned to a page by default, a lookup's cost */
TEST_F(ib_md, cache_settings_are_read_under_the_domains_prefix) {
    uintptr_t inner = (uintptr_t)m_buffer + 4096 + 100;
    uct_md_attr_t attr;
    uct_mem_h memh;

    ASSERT_EQ(UCS_OK, mem_reg((void*)inner, 8000, UCT_MD_MEM_ACCESS_ALL,
                              &memh));
    EXPECT_EQ(inner & ~4095ul, ib_md_registration(memh)->host_start)
            << "a page by default";
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_NEAR(180e-9, attr.reg_cost.c, 1e-12);

    uct_md_close(m_md);
    m_md = NULL;
    ASSERT_NO_FATAL_FAILURE(open_md("RCACHE_OVERHEAD", "1us"));
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_NEAR(1e-6, attr.reg_cost.c, 1e-12);
}

/* Where UCX has the regions' alignment as a setting (to 1.17), a smaller
 * one is taken, and one that is no power of 2 refused, naming it */
TEST_F(ib_md, cache_alignment_setting_is_taken_where_ucx_has_it) {
#ifdef HAVE_UCS_RCACHE_GET_ALIGNMENT
    GTEST_SKIP() << "this UCX aligns each lookup: no RCACHE_ADDR_ALIGN";
#else
    uintptr_t inner = (uintptr_t)m_buffer + 4096 + 100;
    char md_name[UCT_MD_NAME_MAX];
    uct_mem_h memh;

    uct_md_close(m_md);
    m_md = NULL;
    ASSERT_NO_FATAL_FAILURE(open_md("RCACHE_ADDR_ALIGN", "64"));
    ASSERT_EQ(UCS_OK, mem_reg((void*)inner, 8000, UCT_MD_MEM_ACCESS_ALL,
                              &memh));
    EXPECT_EQ(inner & ~63ul, ib_md_registration(memh)->host_start);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));

    uct_md_close(m_md);
    m_md = NULL;
    ASSERT_EQ(UCS_OK, gpumem_test::config_modify(m_config, "GPUMEM_IB_",
                                                 "RCACHE_ADDR_ALIGN", "48"));
    ASSERT_EQ(UCS_OK, uct_gpumem_ib_md_name(m_device.c_str(), md_name,
                                            sizeof(md_name)));
    log_capture capture(UCS_LOG_LEVEL_ERROR);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_open(m_component, md_name, m_config, &m_md));
    m_md = NULL;
    capture.expect("UCX_GPUMEM_IB_RCACHE_ADDR_ALIGN=48 is not a power of 2");
#endif
}

/* A registration cached for one access is never handed to a caller that
 * asked for less */
TEST_F(ib_md, cached_registrations_grant_the_access_asked) {
    uct_mem_h all, put, local;

    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_ALL, &all));
    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_REMOTE_PUT,
                              &put));
    ASSERT_EQ(UCS_OK, mem_reg(m_buffer, 65536, UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                              &local));
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE, ib_md_registration(all)->access);
    EXPECT_EQ(GPUMEM_REG_ACCESS_REMOTE_WRITE,
              ib_md_registration(put)->access);
    EXPECT_EQ(GPUMEM_REG_ACCESS_LOCAL, ib_md_registration(local)->access);
    EXPECT_EQ(3u, ib_md_num_mrs(md()));
    for (uct_mem_h memh : {all, put, local}) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }
}

/* Unmapped memory leaves the cache: what is mapped there next is
 * registered anew, even while a handle of the unmapped memory lives */
TEST_F(ib_md, unmapped_memory_leaves_the_cache) {
    const size_t length = 65536;
    uct_mem_h first, second;
    void *buffer, *again;

    buffer = mmap(NULL, length, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, buffer);
    ASSERT_EQ(UCS_OK, mem_reg(buffer, length, UCT_MD_MEM_ACCESS_ALL, &first));
    ASSERT_EQ(0, munmap(buffer, length));

    again = mmap(buffer, length, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (again != buffer) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, first));
        if (again != MAP_FAILED) {
            munmap(again, length);
        }
        GTEST_SKIP() << "another mapping took the unmapped addresses";
    }
    ASSERT_EQ(UCS_OK, mem_reg(again, length, UCT_MD_MEM_ACCESS_ALL,
                              &second));
    EXPECT_NE(ib_md_registration(first), ib_md_registration(second))
            << "the unmapped memory's registration was handed out again";
    EXPECT_EQ(2u, ib_md_num_mrs(md()));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, first));
    EXPECT_EQ(1u, ib_md_num_mrs(md())) << "the unmapped memory's went";
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, second));
    munmap(again, length);
}
