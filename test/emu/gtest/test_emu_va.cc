/**
 * gpumem tests: the emu's device addresses and page tables.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <sys/mman.h>

#include <vector>


class emu_va : public emu_test {
protected:
    uint64_t reserve(unsigned gpu_index, size_t size, size_t align = 0) {
        uint64_t va = 0;

        EXPECT_EQ(UCS_OK, ops()->va_reserve(gpu(gpu_index), size, align,
                                            &va));
        return va;
    }

    /* Whether GPU 0's copy engine reads a byte at va */
    ucs_status_t read_byte(uint64_t va) {
        uint8_t byte;

        return copy(0, (uintptr_t)&byte, 0, va, 1, 1);
    }
};


TEST_F(emu_va, cpu_access_to_device_memory_faults)
{
    gpumem_driver_mem_t *mem = alloc(0, PAGE);
    uint64_t va              = map(0, mem);
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(PAGE, 5);

    /* The GPU reaches it */
    ASSERT_EQ(UCS_OK, copy(0, va, 1, (uintptr_t)pattern.data(), 0, PAGE));

    /* The CPU does not, as on a discrete GPU (the dying child is a fork
     * that touches nothing shared) */
    EXPECT_DEATH(
        {
            volatile uint8_t byte = *(volatile uint8_t*)(uintptr_t)va;
            (void)byte;
        },
        "");
    EXPECT_DEATH(*(volatile uint8_t*)(uintptr_t)va = 1, "");

    gpumem_test::emu_unmap(m_driver, 0, va, PAGE);
    ops()->mem_free(mem);
}

TEST_F(emu_va, reservations_are_aligned_and_reused)
{
    uint64_t a = reserve(0, PAGE);
    uint64_t b = reserve(0, LARGE_PAGE, LARGE_PAGE);
    uint64_t c;
    unsigned index;

    EXPECT_EQ(0u, a % PAGE);
    EXPECT_EQ(0u, b % LARGE_PAGE);
    EXPECT_TRUE(ops()->is_device_addr(m_driver, (void*)b, &index));
    EXPECT_EQ(0u, index);

    ops()->va_release(gpu(0), a, PAGE);
    c = reserve(0, PAGE);
    EXPECT_EQ(a, c);
    ops()->va_release(gpu(0), c, PAGE);
    ops()->va_release(gpu(0), b, LARGE_PAGE);

    ops()->va_release(gpu(0), b, LARGE_PAGE);
    expect_log("not a reservation");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ops()->va_reserve(gpu(0), 100, 0, &c));
    expect_log("cannot reserve 100 bytes");
}

TEST_F(emu_va, maps_need_reserved_free_whole_pages)
{
    gpumem_driver_mem_t *small = alloc(0, 2 * PAGE);
    gpumem_driver_mem_t *large = alloc(0, LARGE_PAGE, LARGE_PAGE);
    uint64_t va                = reserve(0, 2 * LARGE_PAGE, LARGE_PAGE);

    /* Not reserved */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              ops()->pt_map_vram(gpu(0), va + 2 * LARGE_PAGE, small, 0,
                                 PAGE, 0));
    expect_log("the addresses are not reserved");

    /* Beyond the memory, or not in whole pages */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->pt_map_vram(gpu(0), va, small, PAGE, 2 * PAGE, 0));
    expect_log("cannot map 8192 bytes at offset 4096");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->pt_map_vram(gpu(0), va + PAGE, large, 0, LARGE_PAGE,
                                 0));
    expect_log("not in whole pages of 2097152 bytes");

    /* Over another mapping */
    ASSERT_EQ(UCS_OK, ops()->pt_map_vram(gpu(0), va + LARGE_PAGE, small, 0,
                                         2 * PAGE, 0));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->pt_map_vram(gpu(0), va + LARGE_PAGE, large, 0,
                                 LARGE_PAGE, 0));
    expect_log("it maps other memory there");
    ASSERT_EQ(UCS_OK, ops()->pt_map_vram(gpu(0), va, large, 0, LARGE_PAGE,
                                         0));

    EXPECT_EQ(UCS_OK, ops()->pt_unmap(gpu(0), va, 2 * LARGE_PAGE));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, read_byte(va));
    expect_log("is not mapped");
    ops()->va_release(gpu(0), va, 2 * LARGE_PAGE);
    ops()->mem_free(small);
    ops()->mem_free(large);
}

TEST_F(emu_va, unmapping_part_of_a_large_page_keeps_the_rest)
{
    gpumem_driver_mem_t *mem = alloc(0, 2 * LARGE_PAGE, LARGE_PAGE);
    uint64_t va              = map(0, mem);

    EXPECT_EQ(UCS_OK, ops()->pt_unmap(gpu(0), va + LARGE_PAGE + PAGE, PAGE));
    EXPECT_EQ(UCS_OK, read_byte(va));
    EXPECT_EQ(UCS_OK, read_byte(va + LARGE_PAGE));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, read_byte(va + LARGE_PAGE + PAGE + 7));
    expect_log("is not mapped");
    EXPECT_EQ(UCS_OK, read_byte(va + LARGE_PAGE + 2 * PAGE));

    gpumem_test::emu_unmap(m_driver, 0, va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_va, unconfirmed_flush_times_out_and_unmaps)
{
    gpumem_driver_mem_t *mem = alloc(0, PAGE);
    uint64_t va              = map(0, mem);

    ops()->inject_fault(gpu(0), GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED);
    EXPECT_EQ(UCS_ERR_TIMED_OUT, ops()->pt_unmap(gpu(0), va, PAGE));
    expect_log("did not confirm the flush");
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, read_byte(va));
    expect_log("is not mapped");

    /* One unmap only */
    EXPECT_EQ(UCS_OK, ops()->pt_unmap(gpu(0), va, PAGE));
    ops()->va_release(gpu(0), va, PAGE);
    ops()->mem_free(mem);
}

TEST_F(emu_va, peer_vram_maps_where_the_gpus_reach_each_other)
{
    gpumem_emu_config_t small = config();
    gpumem_driver_mem_t *mem1;
    uint64_t va;

    mem1 = alloc(1, PAGE);
    va   = map(0, mem1);
    gpumem_test::emu_unmap(m_driver, 0, va, PAGE);
    ops()->mem_free(mem1);

    /* A BAR smaller than VRAM: GPU 0 does not reach GPU 1's memory */
    small.bar_size = VRAM_SIZE / 2;
    reopen(small);
    mem1 = alloc(1, PAGE);
    va   = reserve(0, PAGE);
    EXPECT_EQ(UCS_ERR_UNREACHABLE,
              ops()->pt_map_vram(gpu(0), va, mem1, 0, PAGE, 0));
    expect_log("cannot map VRAM of GPU 00e0:04:00.0: BAR of 00e0:04:00.0");
    ops()->va_release(gpu(0), va, PAGE);
    ops()->mem_free(mem1);
}

TEST_F(emu_va, host_pages_map_once_pinned)
{
    void *host = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t va = reserve(0, 2 * PAGE);
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(2 * PAGE, 6);
    std::vector<uint8_t> read(2 * PAGE);

    ASSERT_NE(MAP_FAILED, host);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->pt_map_host(gpu(0), va, host, 2 * PAGE, 0));
    expect_log("it is not pinned for this GPU");

    /* Pinned for another GPU is not pinned for this one */
    ASSERT_EQ(UCS_OK, ops()->pin(gpu(1), host, 2 * PAGE));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->pt_map_host(gpu(0), va, host, 2 * PAGE, 0));
    expect_log("it is not pinned for this GPU");

    ASSERT_EQ(UCS_OK, ops()->pin(gpu(0), host, 2 * PAGE));
    ASSERT_EQ(UCS_OK, ops()->pt_map_host(gpu(0), va, host, 2 * PAGE,
                                         GPUMEM_DRIVER_MAP_UNCACHED));

    /* The GPU writes the host pages through its tables */
    EXPECT_EQ(UCS_OK, copy(0, va, 1, (uintptr_t)pattern.data(), 0,
                           2 * PAGE));
    EXPECT_EQ(0, memcmp(host, pattern.data(), 2 * PAGE));
    EXPECT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va + 5, 1,
                           2 * PAGE - 5));
    EXPECT_EQ(0, memcmp(read.data(), pattern.data() + 5, 2 * PAGE - 5));

    gpumem_test::emu_unmap(m_driver, 0, va, 2 * PAGE);
    ops()->unpin(gpu(0), host, 2 * PAGE);
    ops()->unpin(gpu(1), host, 2 * PAGE);
    munmap(host, 2 * PAGE);
}
