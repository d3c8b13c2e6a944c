/**
 * gpumem tests: a process killed at each step of a change of the emulated
 * GPU's shared state (allocation, free, import) leaves it whole: the next
 * process to lock it repairs what was half-done and drops what the dead
 * one held; a keeper's memory and bytes are untouched; the dead process's
 * handle maps nothing.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <common/channel.h>
#include <common/log_capture.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>


/* A keeper: memory of this process, its bytes and its handle, which the
 * deaths of other processes must leave as they are */
class emu_keeper_test : public emu_test {
protected:
    static const size_t KEEP = 1ul << 20;

    void hold_keeper(unsigned seed) {
        uint8_t handle[GPUMEM_DRIVER_EXPORT_MAX];
        size_t length;

        m_pattern = gpumem_test::emu_pattern(KEEP, seed);
        m_keeper  = alloc(0, KEEP);
        m_va      = map(0, m_keeper);
        ASSERT_EQ(UCS_OK, copy(0, m_va, 1, (uintptr_t)m_pattern.data(), 0,
                               KEEP));
        ASSERT_EQ(UCS_OK, ops()->mem_export(m_keeper, handle, &length));
        m_keeper_handle.assign((const char*)handle, length);
    }

    /* After a death, the next locked operation repairs and sweeps: the
     * state must be whole and hold the keeper's memory only; why not in
     * @a why */
    bool state_is_whole(std::string *why) {
        gpumem_driver_mem_t *small = alloc(0, PAGE);
        char text[256];

        ops()->mem_free(small);
        if (!gpumem_emu_state_is_consistent(m_driver, 0, text,
                                            sizeof(text))) {
            *why = text;
            return false;
        }
        if (vram_free(0) != VRAM_SIZE - KEEP) {
            *why = "the dead process's memory was not given back";
            return false;
        }
        return true;
    }

    void expect_keeper_intact_and_drop() {
        std::vector<uint8_t> read(KEEP);

        ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, m_va, 1, KEEP));
        EXPECT_EQ(m_pattern, read) << "the keeper's bytes changed";
        gpumem_test::emu_unmap(m_driver, 0, m_va, KEEP);
        ops()->mem_free(m_keeper);
    }

    std::vector<uint8_t> m_pattern;
    gpumem_driver_mem_t  *m_keeper = NULL;
    uint64_t             m_va      = 0;
    std::string          m_keeper_handle;
};


class emu_kill : public emu_keeper_test,
                 public testing::WithParamInterface<std::string> {
protected:
    /* In the child: its own memory, exported to the parent, then the step
     * of the parameter, at which it dies */
    int child(gpumem_test::channel &channel, const std::string &keeper) {
        const std::string &point = GetParam();
        uint8_t handle[GPUMEM_DRIVER_EXPORT_MAX];
        gpumem_driver_mem_t *own, *more;
        gpumem_driver_t *driver;
        gpumem_topo_t *topo;
        size_t length;

        channel.child_side();
        EMU_CHILD_CHECK(open_machine(config(), &topo, &driver) == UCS_OK);
        const gpumem_driver_ops_t *ops = driver->ops;
        gpumem_driver_gpu_t *gpu       = ops->gpu(driver, 0);

        EMU_CHILD_CHECK(ops->mem_alloc(gpu, 4 * PAGE, PAGE, 0, &own) ==
                        UCS_OK);
        EMU_CHILD_CHECK(ops->mem_export(own, handle, &length) == UCS_OK);
        channel.send(std::string((const char*)handle, length));

        EMU_CHILD_CHECK(gpumem_emu_test_die_at(point.c_str()) == UCS_OK);
        if (point.compare(0, 5, "alloc") == 0) {
            ops->mem_alloc(gpu, 8 * PAGE, PAGE, 0, &more);
        } else if (point.compare(0, 4, "free") == 0) {
            ops->mem_free(own);
        } else {
            ops->mem_import(gpu, keeper.data(), keeper.size(), &more);
        }
        return 2; /* Did not die at the step */
    }
};


TEST_P(emu_kill, at_each_step_the_state_stays_whole) {
    gpumem_test::channel channel;
    gpumem_driver_mem_t *imported;
    std::string dead_handle, why;
    pid_t pid;

    ASSERT_NO_FATAL_FAILURE(hold_keeper(21));
    pid = fork_child([&]() { return child(channel, m_keeper_handle); });
    channel.parent_side();
    dead_handle = channel.recv();
    ASSERT_EQ(128 + SIGKILL, wait_child(pid)) << "not killed at the step";

    EXPECT_TRUE(state_is_whole(&why)) << why;

    /* Its handle maps nothing */
    ASSERT_FALSE(dead_handle.empty());
    EXPECT_NE(UCS_OK, ops()->mem_import(gpu(0), dead_handle.data(),
                                        dead_handle.size(), &imported));
    expect_log("refused a stale memory handle");
    expect_keeper_intact_and_drop();
}

INSTANTIATE_TEST_SUITE_P(step, emu_kill,
                         testing::Values("alloc-placed", "alloc-listed",
                                         "alloc-held", "free-unlisted",
                                         "free-punched", "import-held"));


/* A process that leaves cleanly (its driver closed, other processes still
 * attached) is not taken for one that died changing the state: the next
 * process to lock it has nothing to repair */
TEST_F(emu_keeper_test, a_process_that_leaves_cleanly_leaves_nothing_to_repair) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_DIAG,
                                 gpumem_test::log_capture::LEVEL_RAISED);
    std::string why;
    pid_t pid;

    ASSERT_NO_FATAL_FAILURE(hold_keeper(23));
    pid = fork_child([&]() {
        gpumem_driver_mem_t *own;
        gpumem_driver_t *driver;
        gpumem_topo_t *topo;

        EMU_CHILD_CHECK(open_machine(config(), &topo, &driver) == UCS_OK);
        EMU_CHILD_CHECK(driver->ops->mem_alloc(driver->ops->gpu(driver, 0),
                                               4 * PAGE, PAGE, 0, &own) ==
                        UCS_OK);
        driver->ops->mem_free(own);
        close_machine(topo, driver);
        return 0;
    });
    ASSERT_EQ(0, wait_child(pid));

    EXPECT_TRUE(state_is_whole(&why)) << why;
    EXPECT_EQ(0u, log.count({"died changing the shared state"}))
        << log.text("died");
    expect_keeper_intact_and_drop();
}


/*
 * The soak: processes that allocate, free, export and import in a loop,
 * each killed at a random moment, for GPUMEM_EMU_SOAK_SECONDS (default
 * 10); after each kill the survivor's next call must find the state whole
 * and its memory and bytes untouched. Not part of "make check" (disabled);
 * test/emu/kill_soak.sh runs it. Prints the kills and the invariant
 * failures.
 */
class emu_kill_soak : public emu_keeper_test {
protected:
    /* A child's loop: whatever it does, its next step may be its last */
    int churn(const std::string &keeper) {
        std::vector<gpumem_driver_mem_t*> mems;
        gpumem_driver_mem_t *mem;
        gpumem_driver_t *driver;
        gpumem_topo_t *topo;
        unsigned seed = getpid();

        EMU_CHILD_CHECK(open_machine(config(), &topo, &driver) == UCS_OK);
        gpumem_driver_gpu_t *gpu = driver->ops->gpu(driver, 0);

        for (;;) {
            switch (rand_r(&seed) % 4) {
            case 0:
            case 1:
                if (driver->ops->mem_alloc(gpu, (1 + rand_r(&seed) % 8) * PAGE,
                                           PAGE, 0, &mem) == UCS_OK) {
                    mems.push_back(mem);
                }
                break;
            case 2:
                if (!mems.empty()) {
                    driver->ops->mem_free(mems.back());
                    mems.pop_back();
                }
                break;
            default:
                if (driver->ops->mem_import(gpu, keeper.data(), keeper.size(),
                                            &mem) == UCS_OK) {
                    mems.push_back(mem);
                }
                break;
            }
            if (mems.size() > 64) {
                driver->ops->mem_free(mems.front());
                mems.erase(mems.begin());
            }
        }
        return 0;
    }
};

TEST_F(emu_kill_soak, DISABLED_random_kills_leave_the_state_whole) {
    const char *env = getenv("GPUMEM_EMU_SOAK_SECONDS");
    const double seconds = (env != NULL) ? atof(env) : 10;
    unsigned kills = 0, failures = 0;
    unsigned seed = 1;
    std::string why;

    ASSERT_NO_FATAL_FAILURE(hold_keeper(33));
    auto end = std::chrono::steady_clock::now() +
               std::chrono::milliseconds((long)(seconds * 1000));
    while (std::chrono::steady_clock::now() < end) {
        pid_t pid = fork_child([&]() { return churn(m_keeper_handle); });

        usleep(rand_r(&seed) % 20000);
        kill(pid, SIGKILL);
        EXPECT_EQ(128 + SIGKILL, wait_child(pid));
        ++kills;

        if (!state_is_whole(&why)) {
            ADD_FAILURE() << "after kill " << kills << ": " << why;
            ++failures;
        }
    }

    expect_keeper_intact_and_drop();
    printf("emu kill soak: %u kills in %.0f s, %u invariant failures\n",
           kills, seconds, failures);
}
