/**
 * gpumem tests: the physical ranges of system memory from the kernel's page
 * map entries (gpumem_phys.c), which bus gives a client for system memory
 * (seed 003): entries as the kernel writes them, and as no kernel should.
 *
 * See file LICENSE for terms.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/mem/gpumem_phys.h>
#include <ucs/debug/memtrack_int.h>
}

#include <string>
#include <vector>


static uint64_t present(uint64_t pfn)
{
    return GPUMEM_PAGEMAP_PRESENT | pfn;
}

class mem_phys : public ::testing::Test {
protected:
    ucs_status_t decode(const std::vector<uint64_t> &entries,
                        size_t page_size = 4096) {
        gpumem_bus_range_t *ranges = NULL;
        unsigned count             = 0;
        ucs_status_t status;

        m_ranges.clear();
        m_why[0] = '\0';
        status   = gpumem_phys_decode(entries.data(), entries.size(),
                                      page_size, &ranges, &count, m_why,
                                      sizeof(m_why));
        if (status == UCS_OK) {
            m_ranges.assign(ranges, ranges + count);
            ucs_free(ranges);
        }
        return status;
    }

    std::string why() const {
        return m_why;
    }

    std::vector<gpumem_bus_range_t> m_ranges;
    char                            m_why[256];
};


TEST_F(mem_phys, contiguous_frames_are_one_range) {
    ASSERT_EQ(UCS_OK, decode({present(0x100), present(0x101),
                              present(0x102)}));
    ASSERT_EQ(1u, m_ranges.size());
    EXPECT_EQ(0x100000u, m_ranges[0].address);
    EXPECT_EQ(3u * 4096, m_ranges[0].length);
}

TEST_F(mem_phys, ranges_follow_the_pages_in_order) {
    /* Pages 0 and 1 contiguous, then a frame below them, then above */
    ASSERT_EQ(UCS_OK, decode({present(0x200), present(0x201),
                              present(0x100), present(0x300)}));
    ASSERT_EQ(3u, m_ranges.size());
    EXPECT_EQ(0x200000u, m_ranges[0].address);
    EXPECT_EQ(2u * 4096, m_ranges[0].length);
    EXPECT_EQ(0x100000u, m_ranges[1].address);
    EXPECT_EQ(4096u, m_ranges[1].length);
    EXPECT_EQ(0x300000u, m_ranges[2].address);
    EXPECT_EQ(4096u, m_ranges[2].length);
}

TEST_F(mem_phys, a_frame_seen_twice_is_two_ranges) {
    ASSERT_EQ(UCS_OK, decode({present(0x100), present(0x100)}));
    EXPECT_EQ(2u, m_ranges.size());
}

TEST_F(mem_phys, larger_pages_give_multiples_of_4k) {
    ASSERT_EQ(UCS_OK, decode({present(3)}, 65536));
    ASSERT_EQ(1u, m_ranges.size());
    EXPECT_EQ(3u * 65536, m_ranges[0].address);
    EXPECT_EQ(65536u, m_ranges[0].length);
}

TEST_F(mem_phys, the_entrys_other_flags_are_not_the_frame) {
    /* Soft-dirty (55), exclusively mapped (56), file page (61) */
    ASSERT_EQ(UCS_OK, decode({present(0x100) | (1ull << 55) | (1ull << 56) |
                              (1ull << 61)}));
    ASSERT_EQ(1u, m_ranges.size());
    EXPECT_EQ(0x100000u, m_ranges[0].address);
}

TEST_F(mem_phys, a_page_not_in_memory_is_named) {
    EXPECT_EQ(UCS_ERR_NO_ELEM, decode({present(0x100), 0x101}));
    EXPECT_NE(std::string::npos, why().find("page 1 of 2 is not in memory"))
            << why();
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              decode({present(0x100) | GPUMEM_PAGEMAP_SWAPPED}))
            << "a swapped page's entry holds a swap slot, not a frame";
}

TEST_F(mem_phys, frame_zero_is_a_hidden_address) {
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, decode({present(0)}));
    EXPECT_NE(std::string::npos, why().find("CAP_SYS_ADMIN")) << why();
}

TEST_F(mem_phys, a_frame_past_64_bit_addresses_is_refused) {
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              decode({present(GPUMEM_PAGEMAP_PFN_MASK)}));
    EXPECT_NE(std::string::npos, why().find("past 64-bit")) << why();
    ASSERT_EQ(UCS_OK, decode({present((1ull << 52) - 1)}))
            << "the highest frame of 4 KiB pages";
    EXPECT_EQ(0xfffffffffffff000ull, m_ranges[0].address);
}

TEST_F(mem_phys, no_pages_or_a_bad_page_size_is_invalid) {
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, decode({}));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, decode({present(1)}, 0));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, decode({present(1)}, 2048));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, decode({present(1)}, 12288));
}

TEST_F(mem_phys, ranges_of_pages_not_whole_are_invalid) {
    std::vector<char> buffer(3 * 4096);
    gpumem_bus_range_t *ranges;
    unsigned count;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_phys_ranges(&buffer[1], 4096, &ranges, &count, m_why,
                                 sizeof(m_why)));
    EXPECT_NE(std::string::npos, why().find("not whole pages")) << why();
}
