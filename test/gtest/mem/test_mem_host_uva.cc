/**
 * gpumem tests: the memory core over a driver whose GPUs reach system
 * memory at its host address, which gives no physical addresses of GPU
 * memory, and whose mappings of VRAM are the process's, as the cuda driver
 * is: the emu behind those three flags.
 *
 * See file LICENSE for terms.
 */

#include "mem_test.h"

#include <common/log_capture.h>

#include <set>


class mem_core_host_uva : public mem_core {
protected:
    /* The built-in emu machine, as mem_core opens it, with the flags set
     * before the GPUs are created over it */
    virtual void SetUp() {
        gpumem_topo_params_t params = {};
        gpumem_emu_config_t config  = {};

        ASSERT_TRUE(m_shm_dir.make("mem"));

        params.xml_buffer = gpumem_emu_builtin_topology;
        params.sysfs_root = "/nonexistent";
        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));
        config.vram_size       = VRAM_SIZE;
        config.bar_size        = VRAM_SIZE;
        config.shm_dir         = m_shm_dir.path().c_str();
        config.copy_inline_max = 8192;
        ASSERT_EQ(UCS_OK, gpumem_emu_open(&config, m_topo, &m_driver));

        s_emu_ops         = m_driver->ops;
        s_ops             = *s_emu_ops;
        s_ops.flags      |= GPUMEM_DRIVER_FLAG_HOST_UVA |
                            GPUMEM_DRIVER_FLAG_NO_PHYS |
                            GPUMEM_DRIVER_FLAG_PROCESS_MAPS;
        s_ops.va_reserve  = va_reserve;
        s_ops.va_release  = va_release;
        s_ops.pt_map_host = pt_map_host;
        s_ops.pt_unmap    = pt_unmap;
        s_reserved        = 0;
        s_host_va.clear();
        m_driver->ops     = &s_ops;

        for (unsigned i = 0; i < m_driver->ops->num_gpus(m_driver); ++i) {
            gpumem_gpu_t *gpu;
            ASSERT_EQ(UCS_OK, gpumem_gpu_create(m_driver, i, &gpu));
            m_gpus.push_back(gpu);
        }
    }

    virtual void TearDown() {
        for (gpumem_gpu_t *gpu : m_gpus) {
            gpumem_gpu_destroy(gpu);
        }
        m_gpus.clear();
        m_driver->ops = s_emu_ops;
        EXPECT_EQ(0, s_reserved) << "device addresses left reserved";
        EXPECT_TRUE(s_host_va.empty()) << "system memory left mapped";
        mem_core::TearDown();
    }

    static ucs_status_t va_reserve(gpumem_driver_gpu_t *gpu, size_t size,
                                   size_t align, uint64_t *va_p) {
        ucs_status_t status = s_emu_ops->va_reserve(gpu, size, align, va_p);
        s_reserved += (status == UCS_OK);
        return status;
    }

    static void va_release(gpumem_driver_gpu_t *gpu, uint64_t va,
                           size_t size) {
        --s_reserved;
        s_emu_ops->va_release(gpu, va, size);
    }

    /* The GPU reaches the pages at their own address: nothing to map */
    static ucs_status_t pt_map_host(gpumem_driver_gpu_t *, uint64_t va,
                                    void *host, size_t, unsigned) {
        EXPECT_EQ((uintptr_t)host, va);
        s_host_va.insert(va);
        return UCS_OK;
    }

    static ucs_status_t pt_unmap(gpumem_driver_gpu_t *gpu, uint64_t va,
                                 size_t size) {
        std::multiset<uint64_t>::iterator it = s_host_va.find(va);

        if (it != s_host_va.end()) {
            s_host_va.erase(it);
            return UCS_OK;
        }
        return s_emu_ops->pt_unmap(gpu, va, size);
    }

    static const gpumem_driver_ops_t *s_emu_ops;
    static gpumem_driver_ops_t       s_ops;
    static int                       s_reserved;
    static std::multiset<uint64_t>   s_host_va;
};

const gpumem_driver_ops_t *mem_core_host_uva::s_emu_ops = NULL;
gpumem_driver_ops_t       mem_core_host_uva::s_ops;
int                       mem_core_host_uva::s_reserved = 0;
std::multiset<uint64_t>   mem_core_host_uva::s_host_va;


TEST_F(mem_core_host_uva, map_host_region_is_at_the_host_address) {
    std::vector<char> buffer(3 * 4096);
    char *a = &buffer[1234];
    gpumem_region_t *region;

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), a, 100, &region));
    EXPECT_EQ((uintptr_t)a, gpumem_region_address(region));
    EXPECT_EQ((void*)a, gpumem_region_host(region));
    /* No device addresses were taken for it */
    EXPECT_EQ(0, s_reserved);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(mem_core_host_uva, host_alloc_region_is_at_its_host_address) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_HOST, 8192);

    ASSERT_TRUE(region != NULL);
    EXPECT_EQ((uintptr_t)gpumem_region_host(region),
              gpumem_region_address(region));
    EXPECT_EQ(0, s_reserved);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

/* Seed: map_peer "raises Invalid_argument ... if m's GPU maps other memory
 * at r's addresses": two map_host of one buffer are two memories at the same
 * host addresses, and a GPU that maps one cannot map the other there */
TEST_F(mem_core_host_uva, map_peer_where_the_gpu_maps_other_memory_is_invalid) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::vector<char> buffer(2 * 4096);
    gpumem_region_t *first, *second, *peer, *refused = NULL;

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[0], 4096, &first));
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[0], 4096, &second));
    ASSERT_EQ(gpumem_region_address(first), gpumem_region_address(second));
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), first, &peer));
    EXPECT_EQ(gpumem_region_address(first), gpumem_region_address(peer));

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_map_peer(gpu(1), second, &refused));
    EXPECT_TRUE(refused == NULL);
    log.expect("maps other memory at its addresses");
    EXPECT_EQ(1u, stats(1).regions);
    EXPECT_EQ(1u, stats(1).mappings);

    /* Nothing was taken: the owner's frees give everything back */
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), second));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), first));
    EXPECT_EQ(0u, stats(0).memories) << "a peer hold was left";
}

/* Where a mapping is the process's (cuMemMap), a peer maps GPU memory at
 * addresses of its own, so that the owner's free ends only the owner's
 * mapping: the peer still reads the bytes */
TEST_F(mem_core_host_uva, peer_maps_gpu_memory_at_its_own_addresses) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 65536);
    gpumem_region_t *peer;

    ASSERT_TRUE(owned != NULL);
    write_dev(0, gpumem_region_address(owned), "owner's");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    EXPECT_NE(gpumem_region_address(owned), gpumem_region_address(peer));
    EXPECT_EQ(2, s_reserved);

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
    EXPECT_EQ("owner's", read_dev(1, gpumem_region_address(peer), 7));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
}

/* Mappings at host addresses may overlap: each map_host region of one page
 * is found by its own addresses */
TEST_F(mem_core_host_uva, each_map_host_region_of_one_page_is_found) {
    std::vector<char> buffer(2 * 4096);
    char *page = (char*)(((uintptr_t)&buffer[0] + 4095) & ~(uintptr_t)4095);
    gpumem_region_t *first, *second;

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), page, 100, &first));
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), page + 1000, 100, &second));
    EXPECT_EQ(first, gpumem_find_region(gpu(0), (uintptr_t)page + 10));
    EXPECT_EQ(second, gpumem_find_region(gpu(0), (uintptr_t)page + 1010));
    EXPECT_TRUE(gpumem_find_region(gpu(0), (uintptr_t)page + 500) == NULL);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), second));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), first));
}

TEST_F(mem_core_host_uva, gpu_memory_still_takes_device_addresses) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);

    ASSERT_TRUE(region != NULL);
    EXPECT_EQ(1, s_reserved);
    write_dev(0, gpumem_region_address(region), "vram");
    EXPECT_EQ("vram", read_dev(0, gpumem_region_address(region), 4));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(mem_core_host_uva, no_bus_addresses_without_physical_placement) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_bus_range_t *ranges;
    unsigned count;

    ASSERT_TRUE(region != NULL);
    ASSERT_GT(m_topo->num_nics, 0u);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              gpumem_bus(gpu(0), region, m_topo,
                         bus_addr(&m_topo->devs[m_topo->num_gpus]).c_str(),
                         &ranges, &count));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}
