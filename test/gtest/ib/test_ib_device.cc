/**
 * gpumem tests: device memory for an RDMA device without the device: which
 * way a registration takes (the driver's dma-buf or the GPU's BAR window, as
 * the memory core chooses: ../mem/test_mem_nic.cc), what it is to register,
 * and why it is refused, on emu GPUs.
 *
 * See file LICENSE for terms.
 */

#include "ib_test.h"

#include <common/log_capture.h>

extern "C" {
#include <uct/gpumem/copy/copy_md.h>
}

#include <gpumem/gpumem.h>

#include <cerrno>
#include <cstdlib>
#include <sys/mman.h>
#include <cstring>
#include <memory>
#include <vector>

using gpumem_test::log_capture;


/*
 * The preparation on emu GPUs, as the gpumem memory domain's settings
 * (UCX_GPUMEM_*) select them: what is to be registered, and the refusals.
 */
class ib_device : public testing::Test {
protected:
    enum { MIB = 1 << 20 };

    virtual void SetUp() {
        ASSERT_TRUE(m_emu.set("ib"));
    }

    virtual void TearDown() {
        for (gpumem_region_t *region : m_regions) {
            gpumem_free(gpumem_region_gpu(region), region);
        }
        if (m_context != NULL) {
            uct_gpumem_context_put(m_context);
        }
        if (m_has_settings) {
            uct_gpumem_settings_release(&m_settings);
        }
        unsetenv("UCX_GPUMEM_EMU_BAR_SIZE");
        gpumem_test::reset_device_calls();
        m_emu.unset();
    }

    /* The process's GPUs, with a BAR of @a bar_size (0: as large as VRAM) */
    void open_gpus(const char *bar_size = "0") {
        setenv("UCX_GPUMEM_EMU_BAR_SIZE", bar_size, 1);
        ASSERT_EQ(UCS_OK, uct_gpumem_settings_read(&m_settings));
        m_has_settings = true;
        ASSERT_EQ(UCS_OK, uct_gpumem_context_get(&m_settings, &m_context));
    }

    void *alloc(gpumem_kind_t kind, size_t size) {
        gpumem_region_t *region = NULL;

        EXPECT_EQ(UCS_OK, gpumem_alloc(m_context->gpus[0], kind, size, 0,
                                       &region));
        if (region == NULL) {
            return NULL;
        }
        m_regions.push_back(region);
        return (void*)gpumem_region_address(region);
    }

    /* Prepares @a length bytes at @a address into m_mem and m_memory */
    ucs_status_t open(uct_gpumem_ib_device_reg_t setting, void *address,
                      size_t length) {
        return uct_gpumem_ib_device_mem_open(&m_settings, setting, "nic0",
                                             address, length,
                                             UCS_LOG_LEVEL_ERROR, &m_mem,
                                             &m_memory);
    }

    /* What GPU @a kind memory of 4 KiB, prepared with the driver's own
     * export or none, is registered through */
    gpumem_nic_way_t way(uct_gpumem_ib_device_reg_t setting,
                                   gpumem_kind_t kind, bool dmabuf) {
        std::unique_ptr<gpumem_test::driver_without_dmabuf> no_dmabuf;
        gpumem_nic_way_t way;
        void *device = alloc(kind, 4096);

        if (!dmabuf) {
            no_dmabuf.reset(new gpumem_test::driver_without_dmabuf(m_context));
        }
        if ((device == NULL) || (open(setting, device, 4096) != UCS_OK)) {
            return GPUMEM_NIC_WAY_NONE;
        }
        way = m_mem->nic_export.way;
        uct_gpumem_ib_device_mem_close(m_mem);
        return way;
    }

    /* Preparing @a length bytes at @a address is refused with @a status,
     * giving everything back, with a line naming @a words */
    void expect_refused(uct_gpumem_ib_device_reg_t setting, void *address,
                        size_t length, ucs_status_t status,
                        const std::vector<std::string> &words) {
        unsigned refcount = m_context->refcount;
        log_capture log;

        m_mem = NULL;
        EXPECT_EQ(status, open(setting, address, length));
        EXPECT_TRUE(m_mem == NULL);
        EXPECT_EQ(refcount, m_context->refcount) << "the reference went back";
        EXPECT_EQ(1u, log.count(words)) << log.text();
    }

    gpumem_test::emu_env          m_emu;
    uct_gpumem_settings_t         m_settings;
    bool                          m_has_settings = false;
    uct_gpumem_context_t          *m_context = NULL;
    std::vector<gpumem_region_t*> m_regions;
    uct_gpumem_ib_device_mem_t    *m_mem     = NULL;
    gpumem_reg_memory_t           m_memory;
};


/* UCX's registration cache releases a registration after the application
 * freed the memory (at its next call, or at ucp_cleanup): the window still
 * goes whole, by its own size, the memory's driver object being gone */
TEST_F(ib_device, window_goes_whole_after_the_memory_was_freed) {
    unsigned char vec[16];
    size_t window_size;
    void *window;
    char *device;

    ASSERT_NO_FATAL_FAILURE(open_gpus());
    device = (char*)alloc(GPUMEM_KIND_GPU, 65536);
    ASSERT_TRUE(device != NULL);
    ASSERT_EQ(UCS_OK, open(UCT_GPUMEM_IB_DEVICE_REG_BAR, device, 65536));
    window      = m_mem->nic_export.window;
    window_size = m_mem->nic_export.window_size;
    ASSERT_TRUE(window != NULL);
    ASSERT_GE(window_size, 65536u);
    ASSERT_EQ(0, mincore(window, 65536, vec));

    gpumem_free(gpumem_region_gpu(m_regions.back()), m_regions.back());
    m_regions.pop_back();
    /* Freed memory goes back to the driver at the GPU's next call */
    ASSERT_TRUE(alloc(GPUMEM_KIND_GPU, 4096) != NULL);
    /* What the memory's objects were is another's now: one block of each
     * small size, the freed ones among them, overwritten */
    std::vector<void*> others;
    for (size_t size = 16; size <= 1024; size += 16) {
        others.push_back(malloc(size));
        memset(others.back(), 0xff, size);
    }
    uct_gpumem_ib_device_mem_close(m_mem);
    m_mem = NULL;
    for (void *other : others) {
        free(other);
    }

    errno = 0;
    EXPECT_EQ(-1, mincore(window, 65536, vec)) << "the window is still mapped";
    EXPECT_EQ(ENOMEM, errno);
}

/* What a NIC would register is the window's host pages, holding the device
 * memory's bytes; the preparation holds a reference on the GPUs until it
 * ends */
TEST_F(ib_device, bar_setting_registers_the_window_on_the_devices_bytes) {
    unsigned refcount;
    char *device;

    ASSERT_NO_FATAL_FAILURE(open_gpus());
    device = (char*)alloc(GPUMEM_KIND_GPU, 65536);
    ASSERT_TRUE(device != NULL);
    ASSERT_EQ(0, gpumem_device_memcpy(device + 1000, "in VRAM", 7));

    refcount = m_context->refcount;
    ASSERT_EQ(UCS_OK, open(UCT_GPUMEM_IB_DEVICE_REG_BAR, device + 1000,
                           4000));
    EXPECT_EQ(refcount + 1, m_context->refcount);
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR, m_mem->nic_export.way);
    EXPECT_EQ(-1, m_mem->nic_export.dmabuf_fd);
    ASSERT_EQ(GPUMEM_REG_MEMORY_HOST, m_memory.type);
    EXPECT_EQ(4000u, m_memory.host.length);
    EXPECT_EQ((char*)m_mem->nic_export.window + 1000, m_memory.host.address);
    EXPECT_EQ(0, memcmp(m_memory.host.address, "in VRAM", 7));

    uct_gpumem_ib_device_mem_close(m_mem);
    EXPECT_EQ(refcount, m_context->refcount);
}

TEST_F(ib_device, auto_without_a_dmabuf_takes_the_bar_window) {
    ASSERT_NO_FATAL_FAILURE(open_gpus());
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR,
              way(UCT_GPUMEM_IB_DEVICE_REG_AUTO, GPUMEM_KIND_GPU, false));
}

/* Where the kernel has /dev/udmabuf, the emu exports the VRAM: a dma-buf at
 * the memory's offset, named by its device address, with the window as the
 * host mapping for a NIC that refuses dma-bufs */
TEST_F(ib_device, auto_takes_the_drivers_dmabuf_with_the_window_as_fallback) {
    std::string why;
    char *device;

    if (!gpumem_test::udmabuf_usable(&why)) {
        GTEST_SKIP() << why;
    }

    ASSERT_NO_FATAL_FAILURE(open_gpus());
    device = (char*)alloc(GPUMEM_KIND_GPU, 65536);
    ASSERT_TRUE(device != NULL);
    ASSERT_EQ(UCS_OK, open(UCT_GPUMEM_IB_DEVICE_REG_AUTO, device + 4096,
                           8192));
    EXPECT_EQ(GPUMEM_NIC_WAY_DMABUF, m_mem->nic_export.way);
    ASSERT_EQ(GPUMEM_REG_MEMORY_DMABUF, m_memory.type);
    EXPECT_GE(m_memory.dmabuf.fd, 0);
    EXPECT_EQ(4096, m_memory.dmabuf.offset);
    EXPECT_EQ(8192, m_memory.dmabuf.bytes);
    EXPECT_EQ((uintptr_t)device + 4096, m_memory.dmabuf.iova);
    EXPECT_EQ((char*)m_mem->nic_export.window + 4096, m_memory.dmabuf.host_address);

    uct_gpumem_ib_device_mem_registered(m_mem);
    EXPECT_EQ(-1, m_mem->nic_export.dmabuf_fd);
    uct_gpumem_ib_device_mem_close(m_mem);
}

TEST_F(ib_device, dmabuf_setting_without_a_dmabuf_is_unsupported_naming_why) {
    void *device;

    ASSERT_NO_FATAL_FAILURE(open_gpus());
    device = alloc(GPUMEM_KIND_GPU, 4096);

    gpumem_test::driver_without_dmabuf no_dmabuf(m_context);
    expect_refused(UCT_GPUMEM_IB_DEVICE_REG_DMABUF, device, 4096,
                   UCS_ERR_UNSUPPORTED,
                   {"nic0", "cannot register 4096 bytes of device memory",
                    "UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf, but the emu driver "
                    "exports no dma-buf"});
}

/* UCX_GPUMEM_EMU_BAR_SIZE below the memory: GPU memory lies above the BAR,
 * where only a dma-buf reaches it */
TEST_F(ib_device, memory_outside_a_small_bar_without_dmabuf_is_refused) {
    void *device;

    ASSERT_NO_FATAL_FAILURE(open_gpus("16m"));
    device = alloc(GPUMEM_KIND_GPU, 4096);

    gpumem_test::driver_without_dmabuf no_dmabuf(m_context);
    expect_refused(UCT_GPUMEM_IB_DEVICE_REG_AUTO, device, 4096,
                   UCS_ERR_UNSUPPORTED,
                   {"cannot register 4096 bytes of device memory",
                    "the emu driver exports no dma-buf here, and VRAM",
                    "lies outside the GPU's BAR, which reaches only the "
                    "first 16777216 bytes"});
    expect_refused(UCT_GPUMEM_IB_DEVICE_REG_BAR, device, 4096,
                   UCS_ERR_UNSUPPORTED,
                   {"UCX_GPUMEM_IB_DEVICE_MEM_REG=bar, but VRAM",
                    "outside the GPU's BAR"});
}

/* BAR memory lies inside the small BAR, and takes the window */
TEST_F(ib_device, bar_memory_inside_a_small_bar_takes_the_window) {
    ASSERT_NO_FATAL_FAILURE(open_gpus("16m"));
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR,
              way(UCT_GPUMEM_IB_DEVICE_REG_AUTO, GPUMEM_KIND_BAR, false));
}

TEST_F(ib_device, bytes_past_the_allocation_are_an_invalid_address) {
    char *device;

    ASSERT_NO_FATAL_FAILURE(open_gpus());
    device = (char*)alloc(GPUMEM_KIND_GPU, 8192);
    expect_refused(UCT_GPUMEM_IB_DEVICE_REG_AUTO, device + 4096, 4097,
                   UCS_ERR_INVALID_ADDR,
                   {"nic0", "cannot register 4097 bytes", "no allocation",
                    "holds them whole"});
}

TEST_F(ib_device, system_memory_the_gpu_maps_is_refused_naming_it) {
    ASSERT_NO_FATAL_FAILURE(open_gpus());
    expect_refused(UCT_GPUMEM_IB_DEVICE_REG_AUTO,
                   alloc(GPUMEM_KIND_HOST, 4096), 4096, UCS_ERR_UNSUPPORTED,
                   {"system memory", "register its host address"});
}
