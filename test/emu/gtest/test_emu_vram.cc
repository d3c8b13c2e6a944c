/**
 * gpumem tests: the emu's VRAM: allocation, capacity shared by the
 * machine's processes, and nothing left behind.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <common/channel.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>


class emu_vram : public emu_test {
protected:
    /* Allocates large pages until there is no room; the count */
    std::vector<gpumem_driver_mem_t*> fill(unsigned gpu_index) {
        std::vector<gpumem_driver_mem_t*> mems;
        gpumem_driver_mem_t *mem;

        while (ops()->mem_alloc(gpu(gpu_index), LARGE_PAGE, LARGE_PAGE, 0,
                                &mem) == UCS_OK) {
            mems.push_back(mem);
        }
        return mems;
    }

    void free_all(std::vector<gpumem_driver_mem_t*> &mems) {
        for (gpumem_driver_mem_t *mem : mems) {
            ops()->mem_free(mem);
        }
        mems.clear();
    }

    /* In a child: opens the machine, takes all of GPU 0's VRAM, says so,
     * and then frees it, or dies holding it */
    int child_fill(gpumem_test::channel &channel, bool crash) {
        gpumem_driver_mem_t *mem;
        gpumem_driver_t *driver;
        gpumem_topo_t *topo;

        channel.child_side();
        EMU_CHILD_CHECK(open_machine(config(), &topo, &driver) == UCS_OK);
        EMU_CHILD_CHECK(driver->ops->mem_alloc(driver->ops->gpu(driver, 0),
                                               VRAM_SIZE, LARGE_PAGE, 0,
                                               &mem) == UCS_OK);
        EMU_CHILD_CHECK(channel.signal());
        EMU_CHILD_CHECK(channel.wait());
        if (crash) {
            raise(SIGKILL);
        }
        driver->ops->mem_free(mem);
        EMU_CHILD_CHECK(channel.signal());
        EMU_CHILD_CHECK(channel.wait());
        close_machine(topo, driver);
        return 0;
    }
};


TEST_F(emu_vram, alloc_until_no_room_then_free_makes_room)
{
    std::vector<gpumem_driver_mem_t*> mems = fill(0);
    gpumem_driver_mem_t *mem;

    EXPECT_EQ(VRAM_SIZE / LARGE_PAGE, mems.size());
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem));

    /* The other GPU's VRAM is its own */
    mem = alloc(1, LARGE_PAGE, LARGE_PAGE);
    ops()->mem_free(mem);

    ops()->mem_free(mems.back());
    mems.pop_back();
    mem = alloc(0, PAGE);
    ASSERT_TRUE(mem != NULL);
    EXPECT_EQ(VRAM_SIZE - LARGE_PAGE, mem->phys);
    ops()->mem_free(mem);
    free_all(mems);
    expect_no_log();
}

TEST_F(emu_vram, allocations_are_contiguous_and_aligned_to_their_pages)
{
    gpumem_driver_mem_t *small = alloc(0, 3 * PAGE);
    gpumem_driver_mem_t *large = alloc(0, 2 * LARGE_PAGE, LARGE_PAGE);
    gpumem_driver_mem_t *after = alloc(0, PAGE);

    EXPECT_EQ(0u, small->phys);
    EXPECT_EQ(3 * PAGE, small->size);
    EXPECT_EQ(PAGE, small->page_size);
    EXPECT_EQ(LARGE_PAGE, large->phys);
    EXPECT_EQ(LARGE_PAGE, large->page_size);
    /* First fit: the gap below the large pages */
    EXPECT_EQ(3 * PAGE, after->phys);

    ops()->mem_free(small);
    ops()->mem_free(large);
    ops()->mem_free(after);
}

TEST_F(emu_vram, bad_sizes_are_invalid_and_take_nothing)
{
    gpumem_driver_mem_t *mem;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->mem_alloc(gpu(0), 0, PAGE, 0, &mem));
    expect_log("cannot allocate 0 bytes");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->mem_alloc(gpu(0), PAGE + 1, PAGE, 0, &mem));
    expect_log("cannot allocate 4097 bytes");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->mem_alloc(gpu(0), LARGE_PAGE, 8192, 0, &mem));
    expect_log("pages of 8192 bytes");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->mem_alloc(gpu(0), PAGE, LARGE_PAGE, 0, &mem));
    expect_log("cannot allocate 4096 bytes");

    /* All of it is still there */
    mem = alloc(0, VRAM_SIZE, LARGE_PAGE);
    ops()->mem_free(mem);
}

TEST_F(emu_vram, bar_memory_lies_inside_a_small_bar)
{
    gpumem_emu_config_t small = config();
    gpumem_driver_mem_t *plain, *bar, *mem;
    void *addr;

    small.bar_size = 8ul << 20;
    reopen(small);

    /* Other memory leaves the BAR to what needs it */
    plain = alloc(0, LARGE_PAGE, LARGE_PAGE);
    EXPECT_GE(plain->phys, small.bar_size);
    bar = alloc(0, 4 * LARGE_PAGE, LARGE_PAGE, 1);
    EXPECT_LE(bar->phys + bar->size, small.bar_size);
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 1, &mem));

    ASSERT_EQ(UCS_OK, ops()->bar_map(bar, &addr));
    ops()->bar_unmap(addr, bar->size);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ops()->bar_map(plain, &addr));
    expect_log("the BAR reaches only 8388608 bytes");

    ops()->mem_free(plain);
    ops()->mem_free(bar);
}

TEST_F(emu_vram, freed_vram_goes_back_zeroed)
{
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(LARGE_PAGE, 7);
    gpumem_driver_mem_t *mem     = alloc(0, LARGE_PAGE, LARGE_PAGE);
    uint64_t phys                = mem->phys;
    void *addr;

    ASSERT_EQ(UCS_OK, ops()->bar_map(mem, &addr));
    memcpy(addr, pattern.data(), LARGE_PAGE);
    ops()->bar_unmap(addr, mem->size);
    ops()->mem_free(mem);

    /* The same VRAM again: its old bytes are gone with its memory */
    mem = alloc(0, LARGE_PAGE, LARGE_PAGE);
    ASSERT_EQ(phys, mem->phys);
    ASSERT_EQ(UCS_OK, ops()->bar_map(mem, &addr));
    EXPECT_EQ(std::vector<uint8_t>(LARGE_PAGE, 0),
              std::vector<uint8_t>((uint8_t*)addr,
                                   (uint8_t*)addr + LARGE_PAGE));
    ops()->bar_unmap(addr, mem->size);
    ops()->mem_free(mem);
}

TEST_F(emu_vram, injected_no_room_and_kernel_refusal_fail_one_allocation)
{
    gpumem_driver_mem_t *mem;

    ops()->inject_fault(gpu(0), GPUMEM_DRIVER_FAULT_NO_ROOM);
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem));
    mem = alloc(0, PAGE);
    ops()->mem_free(mem);

    ops()->inject_fault(gpu(1), GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    EXPECT_EQ(UCS_ERR_REJECTED,
              ops()->mem_alloc(gpu(1), PAGE, PAGE, 0, &mem));
    expect_log("the kernel refuses 4096 bytes of VRAM");
    mem = alloc(1, PAGE);
    ops()->mem_free(mem);
}

TEST_F(emu_vram, capacity_is_shared_across_processes)
{
    gpumem_test::channel channel;
    gpumem_driver_mem_t *mem;
    pid_t pid;

    pid = fork_child([&]() { return child_fill(channel, false); });
    channel.parent_side();
    ASSERT_TRUE(channel.wait());

    /* The child holds all of GPU 0's VRAM */
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem));
    mem = alloc(1, PAGE);
    ops()->mem_free(mem);

    /* It frees it: room for this process */
    channel.signal();
    ASSERT_TRUE(channel.wait());
    mem = alloc(0, VRAM_SIZE, LARGE_PAGE);
    ops()->mem_free(mem);

    channel.signal();
    EXPECT_EQ(0, wait_child(pid));
}

TEST_F(emu_vram, dead_process_gives_its_vram_back)
{
    gpumem_test::channel channel;
    gpumem_driver_mem_t *mem;
    pid_t pid;

    pid = fork_child([&]() { return child_fill(channel, true); });
    channel.parent_side();
    ASSERT_TRUE(channel.wait());
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem));

    /* It dies holding the VRAM and attached */
    channel.signal();
    EXPECT_EQ(128 + SIGKILL, wait_child(pid));
    EXPECT_EQ(2u, shm_files().size());

    mem = alloc(0, VRAM_SIZE, LARGE_PAGE);
    ops()->mem_free(mem);

    /* This process, the last one, leaves nothing behind */
    close();
    EXPECT_EQ(std::vector<std::string>(), shm_files());
}

/* A process alone in a PID namespace of its own is process 1 there; its
 * slot names it by its pid in /proc, so that when it dies holding VRAM
 * this process, outside, sees it gone (not the host's process 1, alive for
 * ever) and takes the VRAM back */
TEST_F(emu_vram, dead_process_of_another_pid_namespace_gives_its_vram_back)
{
    gpumem_test::channel channel;
    gpumem_driver_mem_t *mem;
    pid_t pid;
    int status;

    /* The namespace's process 1 ignores the SIGKILL it sends itself: its
     * child, process 2 there, is the one that dies */
    pid = fork_child([&]() {
        if (unshare(CLONE_NEWPID) != 0) {
            return 77;
        }
        return wait_child(fork_child([&]() {
            return wait_child(fork_child([&]() {
                return child_fill(channel, true);
            }));
        }));
    });
    channel.parent_side();
    if (!channel.wait()) {
        status = wait_child(pid);
        if (status == 77) {
            GTEST_SKIP() << "unshare(CLONE_NEWPID) refused (needs "
                            "CAP_SYS_ADMIN)";
        }
        FAIL() << "the child in its own PID namespace ended with " << status;
    }
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem));

    channel.signal();
    EXPECT_EQ(128 + SIGKILL, wait_child(pid));
    mem = alloc(0, VRAM_SIZE, LARGE_PAGE);
    ops()->mem_free(mem);
}

TEST_F(emu_vram, last_process_to_close_removes_the_shared_state)
{
    gpumem_driver_t *driver;
    gpumem_topo_t *topo;

    /* One state file per GPU while the machine is open */
    EXPECT_EQ(2u, shm_files().size());

    /* A second open of the same machine joins it */
    ASSERT_EQ(UCS_OK, open_machine(config(), &topo, &driver));
    EXPECT_EQ(2u, shm_files().size());
    close();
    EXPECT_EQ(2u, shm_files().size());
    close_machine(topo, driver);
    EXPECT_EQ(std::vector<std::string>(), shm_files());
}

TEST_F(emu_vram, another_vram_size_for_the_same_gpu_is_refused)
{
    gpumem_emu_config_t other = config();
    gpumem_driver_t *driver;
    gpumem_topo_t *topo;

    other.vram_size = 2 * VRAM_SIZE;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open_machine(other, &topo, &driver));
    expect_log("other processes emulate it with 67108864 bytes");
}

TEST_F(emu_vram, state_file_of_another_version_is_refused_and_left_alone)
{
    std::vector<std::string> names = shm_files();
    std::string path;
    FILE *file;

    ASSERT_EQ(2u, names.size());
    close();
    path = m_shm_dir.path() + "/" + names[0];
    file = fopen(path.c_str(), "w");
    ASSERT_TRUE(file != NULL);
    fputs("a state file of another layout", file);
    fclose(file);

    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              open_machine(config(), &m_topo, &m_driver));
    expect_log("another version of gpumem uses it");
    EXPECT_EQ(std::vector<std::string>(1, names[0]), shm_files());
    unlink(path.c_str());
}

/* The machine's table of allocations of a GPU can be full with VRAM left:
 * said so, and freeing one makes a slot */
TEST_F(emu_vram, a_full_allocation_table_is_said_so_with_vram_left)
{
    gpumem_emu_config_t larger = config();
    std::vector<gpumem_driver_mem_t*> mems;
    gpumem_driver_mem_t *mem;

    larger.vram_size = 2 * VRAM_SIZE;
    ASSERT_NO_FATAL_FAILURE(reopen(larger));
    for (;;) {
        if (ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem) != UCS_OK) {
            break;
        }
        mems.push_back(mem);
    }

    EXPECT_EQ(16384u, mems.size());
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &mem));
    for (int i = 0; i < 2; ++i) {
        expect_log("the table of the machine's allocations on this GPU is "
                   "full (16384");
    }
    EXPECT_EQ(2 * VRAM_SIZE - 16384 * PAGE, vram_free(0));

    ops()->mem_free(mems.back());
    mems.pop_back();
    mem = alloc(0, PAGE);
    EXPECT_TRUE(mem != NULL);
    mems.push_back(mem);
    free_all(mems);
}
