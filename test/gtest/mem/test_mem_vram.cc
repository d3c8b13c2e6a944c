/**
 * gpumem tests: the VRAM behind a region (gpumem_region_vram), by which a
 * NIC that reaches GPU memory through the driver names it.
 *
 * See file LICENSE for terms.
 */

#include "mem_test.h"

#include <common/log_capture.h>

using gpumem_test::log_capture;


class mem_vram : public mem_core {
protected:
    /* The bytes at @a at of the region, read through a BAR window of the
     * VRAM that gpumem_region_vram() names */
    std::string read_through_bar(gpumem_region_t *region, size_t at,
                                 size_t size) {
        gpumem_driver_mem_t *vram;
        std::string data;
        size_t offset;
        void *window;

        EXPECT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
        EXPECT_EQ(UCS_OK, m_driver->ops->bar_map(vram, &window));
        if (HasFailure()) {
            return data;
        }
        data.assign(static_cast<char*>(window) + offset + at, size);
        m_driver->ops->bar_unmap(window, vram->size);
        return data;
    }
};


TEST_F(mem_vram, region_vram_names_the_gpu_memory_of_the_region) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    gpumem_driver_mem_t *vram;
    size_t offset = 1;

    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
    EXPECT_EQ(dgpu(0), vram->gpu);
    EXPECT_GE(vram->size, gpumem_region_size(region));
    if (is_emu()) {
        EXPECT_EQ(gpumem_region_size(region), vram->size);
    }
    EXPECT_EQ(0u, offset);
    gpumem_free(gpu(0), region);
}

TEST_F(mem_vram, region_vram_names_the_bytes_of_gpu_memory) {
    MEM_TEST_NEEDS(is_emu(), NO_BAR);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 1 << 20);

    ASSERT_TRUE(region != NULL);
    write_dev(0, gpumem_region_address(region) + 4090, "over the page");
    EXPECT_EQ("over the page", read_through_bar(region, 4090, 13));
    gpumem_free(gpu(0), region);
}

TEST_F(mem_vram, region_vram_of_bar_memory_lies_inside_the_bar) {
    MEM_TEST_NEEDS(is_emu(), NO_BAR);
    gpumem_region_t *region;
    gpumem_driver_mem_t *vram;
    size_t offset;

    close_machine();
    ASSERT_NO_FATAL_FAILURE(open_machine(NULL, SMALL_BAR_SIZE));
    region = alloc(0, GPUMEM_KIND_BAR, 4096);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
    EXPECT_LE(vram->phys + vram->size,
              m_driver->ops->bar_size(dgpu(0)));
    gpumem_free(gpu(0), region);

    /* GPU memory goes above a small BAR, keeping it for BAR memory */
    region = alloc(0, GPUMEM_KIND_GPU, 4096);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
    EXPECT_GE(vram->phys, m_driver->ops->bar_size(dgpu(0)));
    gpumem_free(gpu(0), region);
}

TEST_F(mem_vram, peer_region_names_the_owners_vram) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 65536);
    gpumem_driver_mem_t *vram, *peer_vram;
    gpumem_region_t *peer;
    size_t offset;

    ASSERT_TRUE(owned != NULL);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    ASSERT_EQ(UCS_OK, gpumem_region_vram(owned, &vram, &offset));
    ASSERT_EQ(UCS_OK, gpumem_region_vram(peer, &peer_vram, &offset));
    EXPECT_EQ(vram, peer_vram);
    EXPECT_EQ(dgpu(0), peer_vram->gpu);
    EXPECT_EQ(0u, offset);

    /* The bytes the peer writes are the owner's VRAM's, read through its
     * BAR where the driver has one */
    if (is_emu()) {
        write_dev(1, gpumem_region_address(peer) + 100, "peer wrote");
        EXPECT_EQ("peer wrote", read_through_bar(owned, 100, 10));
    }
    gpumem_free(gpu(1), peer);
    gpumem_free(gpu(0), owned);
}

TEST_F(mem_vram, system_memory_has_no_vram) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_driver_mem_t *vram = NULL;
    size_t offset             = 1;

    ASSERT_TRUE(region != NULL);
    {
        log_capture log;
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  gpumem_region_vram(region, &vram, &offset));
        EXPECT_EQ(1u, log.count({"which is system memory"})) << log.text();
    }
    EXPECT_TRUE(vram == NULL);
    EXPECT_EQ(1u, offset);
    gpumem_free(gpu(0), region);
}

TEST_F(mem_vram, region_vram_of_a_freed_region_is_invalid) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_driver_mem_t *vram;
    size_t offset;

    ASSERT_TRUE(region != NULL);
    gpumem_free(gpu(0), region);

    log_capture log;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_region_vram(region, &vram, &offset));
    EXPECT_EQ(1u, log.count({"which was freed"})) << log.text();
}
