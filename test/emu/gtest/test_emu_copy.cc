/**
 * gpumem tests: the emu's copy engine, and the BAR window on the same
 * bytes.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <thread>
#include <vector>


class emu_copy : public emu_test {
protected:
    /*
     * host -> GPU 0's memory -> GPU 1's memory (GPU 0 writing its peer's
     * memory through its own tables) -> host (read by GPU 1), each step
     * offset in its pages so that it crosses them. Each step's polls.
     */
    void round_trip(size_t size, size_t page_size) {
        const size_t skew            = 123;
        size_t alloc_size            = ((size + skew + page_size - 1) /
                                        page_size) * page_size;
        std::vector<uint8_t> pattern = gpumem_test::emu_pattern(size, size);
        std::vector<uint8_t> read(size);
        gpumem_driver_mem_t *mem0    = alloc(0, alloc_size, page_size);
        gpumem_driver_mem_t *mem1    = alloc(1, alloc_size, page_size);
        uint64_t va0                 = map(0, mem0);
        uint64_t va1_on_0            = map(0, mem1);
        uint64_t va1                 = map(1, mem1);
        ucs_status_t expected        = (size <= INLINE_MAX) ? UCS_OK :
                                                              UCS_INPROGRESS;
        gpumem_driver_copy_t op;
        unsigned polls;

        EXPECT_EQ(expected,
                  ops()->copy(gpu(0), va0 + skew, 1,
                              (uintptr_t)pattern.data(), 0, size, &op));
        while (ops()->copy_poll(&op) == UCS_INPROGRESS) {
        }

        EXPECT_EQ(UCS_OK, copy(0, va1_on_0, 1, va0 + skew, 1, size, &polls));
        EXPECT_EQ((size <= INLINE_MAX) ? 0u : 1u, (polls > 0) ? 1u : 0u);
        EXPECT_EQ(UCS_OK, copy(1, (uintptr_t)read.data(), 0, va1, 1, size));
        EXPECT_EQ(pattern, read) << size << " bytes in pages of "
                                 << page_size;

        gpumem_test::emu_unmap(m_driver, 0, va0, alloc_size);
        gpumem_test::emu_unmap(m_driver, 0, va1_on_0, alloc_size);
        gpumem_test::emu_unmap(m_driver, 1, va1, alloc_size);
        ops()->mem_free(mem0);
        ops()->mem_free(mem1);
    }
};


TEST_F(emu_copy, round_trip_through_peer_gpu_in_small_pages)
{
    for (size_t size : {(size_t)1, PAGE, INLINE_MAX, INLINE_MAX + 1,
                        3 * PAGE + 5, (size_t)(1ul << 20) + 17}) {
        round_trip(size, PAGE);
    }
}

TEST_F(emu_copy, round_trip_through_peer_gpu_in_large_pages)
{
    for (size_t size : {(size_t)100, INLINE_MAX + 1, LARGE_PAGE,
                        LARGE_PAGE + 12345, 3 * LARGE_PAGE}) {
        round_trip(size, LARGE_PAGE);
    }
}

TEST_F(emu_copy, large_copies_progress_a_chunk_per_poll)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * LARGE_PAGE, LARGE_PAGE);
    uint64_t va              = map(0, mem);
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(mem->size, 9);
    std::vector<uint8_t> read(mem->size);
    unsigned polls;

    EXPECT_EQ(UCS_OK, copy(0, va, 1, (uintptr_t)pattern.data(), 0, mem->size,
                           &polls));
    /* As a real engine: the caller goes on while the bytes move */
    EXPECT_GT(polls, 1u);
    EXPECT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va, 1, mem->size));
    EXPECT_EQ(pattern, read);

    gpumem_test::emu_unmap(m_driver, 0, va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_copy, bar_window_sees_the_copy_engine_bytes)
{
    gpumem_driver_mem_t *mem  = alloc(0, 4 * PAGE);
    uint64_t va               = map(0, mem);
    std::vector<uint8_t> in   = gpumem_test::emu_pattern(mem->size, 10);
    std::vector<uint8_t> out  = gpumem_test::emu_pattern(mem->size, 11);
    std::vector<uint8_t> read(mem->size);
    void *bar;

    ASSERT_EQ(UCS_OK, ops()->bar_map(mem, &bar));
    ASSERT_EQ(UCS_OK, copy(0, va, 1, (uintptr_t)in.data(), 0, mem->size));
    EXPECT_EQ(0, memcmp(bar, in.data(), mem->size));

    memcpy(bar, out.data(), mem->size);
    ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va, 1, mem->size));
    EXPECT_EQ(out, read);

    ops()->bar_unmap(bar, mem->size);
    gpumem_test::emu_unmap(m_driver, 0, va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_copy, unmapped_device_address_fails_naming_it)
{
    gpumem_driver_mem_t *mem = alloc(0, 2 * PAGE);
    uint64_t va              = map(0, mem);
    std::vector<uint8_t> buf(3 * PAGE);
    char text[32];

    /* The copy runs past the mapping's end: nothing moves */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              copy(0, va, 1, (uintptr_t)buf.data(), 0, buf.size()));
    snprintf(text, sizeof(text), "0x%lx", (unsigned long)(va + 2 * PAGE));
    expect_log(std::string("destination device address ") + text +
               " is not mapped");

    /* Another GPU's address is not this GPU's */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              copy(1, (uintptr_t)buf.data(), 0, va, 1, PAGE));
    expect_log("source device address");

    gpumem_test::emu_unmap(m_driver, 0, va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_copy, small_copy_into_an_unmapped_page_moves_nothing)
{
    gpumem_driver_mem_t *mem     = alloc(0, PAGE);
    uint64_t va                  = map(0, mem);
    std::vector<uint8_t> before  = gpumem_test::emu_pattern(PAGE, 12);
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(16, 13);
    std::vector<uint8_t> read(PAGE);
    char text[32];

    ASSERT_EQ(UCS_OK, copy(0, va, 1, (uintptr_t)before.data(), 0, PAGE));

    /* 8 bytes in the mapped page, 8 past it: checked whole, as a copy that
     * lies in one page is not */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              copy(0, va + PAGE - 8, 1, (uintptr_t)pattern.data(), 0,
                   pattern.size()));
    snprintf(text, sizeof(text), "0x%lx", (unsigned long)(va + PAGE));
    expect_log(std::string("destination device address ") + text +
               " is not mapped");

    ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va, 1, PAGE));
    EXPECT_EQ(before, read);

    /* Within the page, the same copy lands */
    ASSERT_EQ(UCS_OK, copy(0, va + PAGE - 16, 1, (uintptr_t)pattern.data(), 0,
                           pattern.size()));
    ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va, 1, PAGE));
    EXPECT_EQ(0, memcmp(&read[PAGE - 16], pattern.data(), pattern.size()));
    EXPECT_EQ(0, memcmp(read.data(), before.data(), PAGE - 16));

    gpumem_test::emu_unmap(m_driver, 0, va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_copy, unmapping_during_a_copy_faults_it)
{
    gpumem_driver_mem_t *mem = alloc(0, 2 * LARGE_PAGE, LARGE_PAGE);
    uint64_t va              = map(0, mem);
    std::vector<uint8_t> buf(mem->size);
    gpumem_driver_copy_t op;

    ASSERT_EQ(UCS_INPROGRESS, ops()->copy(gpu(0), va, 1,
                                          (uintptr_t)buf.data(), 0,
                                          mem->size, &op));
    EXPECT_EQ(UCS_INPROGRESS, ops()->copy_poll(&op));
    EXPECT_EQ(UCS_OK, ops()->pt_unmap(gpu(0), va, mem->size));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, ops()->copy_poll(&op));
    expect_log("is not mapped");

    ops()->va_release(gpu(0), va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_copy, release_stops_copies_and_maps)
{
    gpumem_driver_mem_t *mem = alloc(0, 2 * LARGE_PAGE, LARGE_PAGE);
    uint64_t va              = map(0, mem);
    std::vector<uint8_t> buf(mem->size);
    gpumem_driver_copy_t op;
    gpumem_driver_mem_t *other;
    void *bar;

    ASSERT_EQ(UCS_INPROGRESS, ops()->copy(gpu(0), va, 1,
                                          (uintptr_t)buf.data(), 0,
                                          mem->size, &op));
    ops()->release(gpu(0));

    EXPECT_EQ(UCS_ERR_NOT_CONNECTED, ops()->copy_poll(&op));
    expect_log("the GPU was released");
    EXPECT_EQ(UCS_ERR_NOT_CONNECTED,
              copy(0, va, 1, (uintptr_t)buf.data(), 0, PAGE));
    expect_log("cannot copy: the GPU was released");
    EXPECT_EQ(UCS_ERR_NOT_CONNECTED,
              ops()->pt_map_vram(gpu(0), va, mem, 0, mem->size, 0));
    expect_log("cannot map VRAM: the GPU was released");
    EXPECT_EQ(UCS_ERR_NOT_CONNECTED, ops()->bar_map(mem, &bar));
    expect_log("cannot map its BAR");
    EXPECT_EQ(UCS_ERR_NOT_CONNECTED,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &other));
    expect_log("cannot allocate VRAM");

    /* The other GPU goes on */
    other = alloc(1, PAGE);
    ops()->mem_free(other);

    /* What the GPU held is still given back */
    EXPECT_EQ(UCS_OK, ops()->pt_unmap(gpu(0), va, mem->size));
    ops()->va_release(gpu(0), va, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_copy, two_gpus_work_at_once_from_two_threads)
{
    const unsigned rounds = 50;
    bool ok[2]            = {false, false};
    std::vector<std::thread> threads;

    /* Each thread allocates, maps and copies on its own GPU */
    for (unsigned g = 0; g < 2; ++g) {
        threads.emplace_back([this, g, rounds, &ok]() {
            std::vector<uint8_t> in = gpumem_test::emu_pattern(3 * PAGE, g);
            std::vector<uint8_t> out(in.size());
            gpumem_driver_mem_t *mem;
            uint64_t va;
            unsigned i;

            for (i = 0; i < rounds; ++i) {
                if ((ops()->mem_alloc(gpu(g), in.size(), PAGE, 0, &mem) !=
                     UCS_OK)) {
                    return;
                }
                va = gpumem_test::emu_map(m_driver, g, mem);
                if ((va == 0) ||
                    (copy(g, va, 1, (uintptr_t)in.data(), 0, in.size()) !=
                     UCS_OK) ||
                    (copy(g, (uintptr_t)out.data(), 0, va, 1, out.size()) !=
                     UCS_OK) ||
                    (in != out)) {
                    return;
                }
                ops()->pt_unmap(gpu(g), va, in.size());
                ops()->va_release(gpu(g), va, in.size());
                ops()->mem_free(mem);
            }
            ok[g] = true;
        });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }
    EXPECT_TRUE(ok[0]);
    EXPECT_TRUE(ok[1]);
}
