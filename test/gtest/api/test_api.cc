/**
 * gpumem tests: the device memory calls for applications (gpumem.h).
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>
#include <common/log_capture.h>
#include <common/scoped_env.h>
#include <common/temp_dir.h>
#include <common/watchdog.h>

#include <gpumem/gpumem.h>

extern "C" {
#include <ucs/type/status.h>
}

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>


class api : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(m_emu.set("api"));
    }

    virtual void TearDown() {
        gpumem_device_set(0);
        gpumem_test::reset_device_calls();
        /* Every allocation freed: the GPUs closed, nothing left shared */
        m_emu.unset();
    }

    gpumem_test::emu_env m_emu;
};


TEST_F(api, counts_the_emu_machines_gpus) {
    int count = 0;

    ASSERT_EQ(0, gpumem_device_count(&count));
    EXPECT_EQ(2, count);
}

TEST_F(api, copies_host_to_device_to_peer_device_to_host) {
    std::string in(100000, 'x'), out(100000, '\0');
    void *dev0, *dev1;

    for (size_t i = 0; i < in.size(); ++i) {
        in[i] = (char)(i * 7);
    }

    ASSERT_EQ(0, gpumem_device_malloc(&dev0, in.size()));
    ASSERT_EQ(0, gpumem_device_set(1));
    ASSERT_EQ(0, gpumem_device_malloc(&dev1, in.size()));

    EXPECT_EQ(0, gpumem_device_memcpy(dev0, &in[0], in.size()));
    EXPECT_EQ(0, gpumem_device_memcpy(dev1, dev0, in.size()));
    EXPECT_EQ(0, gpumem_device_memcpy(&out[0], dev1, out.size()));
    EXPECT_EQ(in, out);

    EXPECT_EQ(0, gpumem_device_free(dev1));
    EXPECT_EQ(0, gpumem_device_free(dev0));
}

TEST_F(api, memset_and_query) {
    gpumem_pointer_attr_t attr;
    std::string out(5000, 'x');
    char host;
    char *dev;

    ASSERT_EQ(0, gpumem_device_malloc((void**)&dev, 5000));
    EXPECT_EQ(0, gpumem_device_memset(dev, 'q', 5000));
    EXPECT_EQ(0, gpumem_device_memcpy(&out[0], dev, 5000));
    EXPECT_EQ(std::string(5000, 'q'), out);

    ASSERT_EQ(0, gpumem_device_query(dev + 100, &attr));
    EXPECT_EQ(1, attr.is_device);
    EXPECT_EQ(0, attr.device);
    EXPECT_EQ((void*)dev, attr.base);
    EXPECT_EQ(5000u, attr.size) << "the bytes asked for, as CUDA says";

    ASSERT_EQ(0, gpumem_device_query(&host, &attr));
    EXPECT_EQ(0, attr.is_device);
    EXPECT_EQ(0, gpumem_device_free(dev));
}

TEST_F(api, bad_arguments_are_errors) {
    char host;
    void *dev;
    int count;

    gpumem_device_count(&count);
    EXPECT_NE(0, gpumem_device_set(count));
    EXPECT_NE(0, gpumem_device_set(-1));
    EXPECT_NE(0, gpumem_device_malloc(&dev, 0));
    EXPECT_NE(0, gpumem_device_free(&host));
    EXPECT_EQ(0, gpumem_device_free(NULL));
    EXPECT_STRNE("", gpumem_result_string(-1));
}

/* The default machine's two GPUs share a PCIe switch: each maps the other's
 * memory, and says through what */
TEST_F(api, gpus_under_one_switch_access_each_other) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    char reason[256];
    int can_access = 0;

    ASSERT_EQ(0, gpumem_device_can_access_peer(&can_access, 0, 1, reason,
                                               sizeof(reason)));
    EXPECT_EQ(1, can_access);
    EXPECT_NE(std::string::npos, std::string(reason).find("bridge"))
            << reason;
    ASSERT_EQ(0, gpumem_device_can_access_peer(&can_access, 1, 1, NULL, 0));
    EXPECT_EQ(1, can_access);
    EXPECT_GT(0, gpumem_device_can_access_peer(&can_access, 0, 2, NULL, 0));
}

/* GPUs of two sockets of a POWER8 machine: no access, and the reason */
TEST_F(api, gpus_across_sockets_do_not_access_each_other_and_say_why) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    char reason[256];
    int can_access = 1;

    gpumem_test::scoped_env topo("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                                 "/hwloc-power8-minsky-4xP100-nvlink.xml");
    ASSERT_EQ(0, gpumem_device_can_access_peer(&can_access, 0, 3, reason,
                                               sizeof(reason)));
    topo.restore();
    EXPECT_EQ(0, can_access);
    EXPECT_NE(std::string::npos,
              std::string(reason).find("no PCI bridge above both"))
            << reason;
}

TEST_F(api, a_null_answer_or_buffer_is_an_invalid_argument_logged) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    unsigned long long bytes;
    char host[16];
    size_t size;
    void *dev;

    ASSERT_EQ(0, gpumem_device_malloc(&dev, 4096));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_count(NULL));
    log.expect("gpumem_device_count: count is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_get(NULL));
    log.expect("gpumem_device_get: device is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_malloc(NULL, 4096));
    log.expect("gpumem_device_malloc: ptr is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_query(dev, NULL));
    log.expect("gpumem_device_query: attr is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_can_access_peer(NULL, 0, 1, NULL, 0));
    log.expect("gpumem_device_can_access_peer: can_access is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_ipc_bytes(NULL));
    log.expect("gpumem_ipc_bytes: bytes is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_mem_get_info(NULL, &size));
    log.expect("gpumem_device_mem_get_info: free is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_mem_get_info(&size, NULL));
    log.expect("gpumem_device_mem_get_info: total is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_rc_bytes(NULL));
    log.expect("gpumem_rc_bytes: bytes is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(NULL, host, sizeof(host)));
    log.expect("gpumem_device_memcpy: dst is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(dev, NULL, sizeof(host)));
    log.expect("gpumem_device_memcpy: src is NULL");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memset(NULL, 0, sizeof(host)));
    log.expect("gpumem_device_memset: ptr is NULL");
    log.expect_none();

    /* No bytes to move: nothing is read or written */
    EXPECT_EQ(0, gpumem_device_memcpy(NULL, NULL, 0));
    EXPECT_EQ(0, gpumem_device_memset(NULL, 0, 0));
    EXPECT_EQ(0, gpumem_ipc_bytes(&bytes));
    EXPECT_EQ(0, gpumem_rc_bytes(&bytes));
    EXPECT_EQ(0, gpumem_device_free(dev));
}

/* Every byte of a copy or a set is checked before any moves: a range past
 * its allocation, an address of a GPU where nothing is allocated, or host
 * pages that are not mapped are refused, every time, and nothing faults */
TEST_F(api, a_range_outside_its_allocation_is_refused_and_logged) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    const size_t size = 64 << 10;
    std::vector<char> host(2 * size, 'h');
    std::vector<char> back(size);
    char *dev, *other;
    int attempt;

    ASSERT_EQ(0, gpumem_device_malloc((void**)&dev, size));
    ASSERT_EQ(0, gpumem_device_memset(dev, 'd', size));
    for (attempt = 0; attempt < 3; ++attempt) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_device_memcpy(dev + 4096, &host[0], size));
        log.expect("dst");
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_device_memcpy(&host[0], dev + 1, size));
        log.expect("runs past the end of its allocation");
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_device_memset(dev + size / 2, 'x', size));
        log.expect("gpumem_device_memset: ptr");
    }

    /* Nothing was written by the refused calls */
    ASSERT_EQ(0, gpumem_device_memcpy(&back[0], dev, size));
    EXPECT_EQ(std::vector<char>(size, 'd'), back);

    /* Past the last allocation, in the GPU's addresses (which the cuda
     * driver tells from host memory by its allocations only: there, the
     * addresses CUDA reserved and the CPU cannot read) */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(&back[0], dev + (64ul << 20), 16));
    log.expect(gpumem_test::driver_is_emu() ? "where no allocation is" :
                                              "gpumem_device_memcpy: src");

    /* A huge size wraps no address */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(dev, &host[0], SIZE_MAX));
    log.expect("past the end");

    /* Host pages that are not mapped: the first page, and one unmapped */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(dev, (void*)0x1000, 16));
    log.expect("nor memory this process may read");
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, page);
    ASSERT_EQ(0, munmap(page, 4096));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_memcpy(page, dev, 16));
    log.expect("nor memory this process may write");

    /* Between two GPUs, the source's range is checked on its own GPU */
    ASSERT_EQ(0, gpumem_device_set(1));
    ASSERT_EQ(0, gpumem_device_malloc((void**)&other, size));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(other, dev + 8, size));
    log.expect("src");
    EXPECT_EQ(0, gpumem_device_memcpy(other, dev, size));
    log.expect_none();

    EXPECT_EQ(0, gpumem_device_free(other));
    EXPECT_EQ(0, gpumem_device_free(dev));
}

/* A host destination that may be read but not written (a read-only page,
 * code) is refused before any byte moves, and the page is as it was; the
 * same page as a source is read */
TEST_F(api, a_host_destination_that_cannot_be_written_is_refused) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::vector<char> host(4096, 'h');
    char *dev, *page;

    ASSERT_EQ(0, gpumem_device_malloc((void**)&dev, 4096));
    ASSERT_EQ(0, gpumem_device_memcpy(dev, &host[0], 4096));
    page = (char*)mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void*)page);
    memset(page, 'p', 4096);
    ASSERT_EQ(0, mprotect(page, 4096, PROT_READ));

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_device_memcpy(page, dev, 16));
    log.expect("nor memory this process may write");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_device_memcpy(reinterpret_cast<void*>(&gpumem_device_free),
                                   dev, 16));
    log.expect("dst");
    EXPECT_EQ(std::string(4096, 'p'), std::string(page, 4096));

    EXPECT_EQ(0, gpumem_device_memcpy(dev, page, 4096));
    log.expect_none();
    ASSERT_EQ(0, gpumem_device_memcpy(&host[0], dev, 4096));
    EXPECT_EQ(std::vector<char>(4096, 'p'), host);

    munmap(page, 4096);
    EXPECT_EQ(0, gpumem_device_free(dev));
}

TEST_F(api, result_string_of_a_value_that_is_no_result_says_so) {
    EXPECT_STREQ("not a gpumem result", gpumem_result_string(12345));
    EXPECT_STREQ("not a gpumem result", gpumem_result_string(-1000));
    EXPECT_STREQ("not a gpumem result", gpumem_result_string(-99));
    EXPECT_STREQ("Invalid parameter",
                 gpumem_result_string(UCS_ERR_INVALID_PARAM));
    EXPECT_STREQ("Success", gpumem_result_string(0));
}

TEST_F(api, an_allocation_without_room_names_the_gpu_and_what_is_free) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("VRAM size of the case");
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    void *held, *dev = NULL;

    ASSERT_EQ(0, gpumem_device_malloc(&held, 16 << 20));
    EXPECT_EQ(UCS_ERR_NO_MEMORY, gpumem_device_malloc(&dev, 64 << 20));
    EXPECT_EQ(1u, log.count({"gpumem_device_malloc of 67108864 bytes on GPU "
                             "0", "no room now", "48M of 64M of VRAM free"}))
            << log.text();
    EXPECT_EQ(0, gpumem_device_free(held));
}

/* cudaMemGetInfo's answer: an allocation takes from what is free of the
 * thread's GPU only, its size rounded up to the driver's granule (the emu's
 * pages; CUDA's 2 MiB), and its free gives it back */
TEST_F(api, mem_get_info_tells_the_vram_an_allocation_takes) {
    size_t free0, total0, free1, total1, after;
    void *dev;

    ASSERT_EQ(0, gpumem_device_mem_get_info(&free0, &total0));
    if (gpumem_test::driver_is_emu()) {
        EXPECT_EQ((size_t)64 << 20, total0);
    }
    EXPECT_LE(free0, total0);
    ASSERT_EQ(0, gpumem_device_malloc(&dev, 1 << 20));
    ASSERT_EQ(0, gpumem_device_mem_get_info(&after, &total0));
    EXPECT_LE((size_t)1 << 20, free0 - after);
    EXPECT_GE((size_t)2 << 20, free0 - after);
    if (gpumem_test::driver_is_emu()) {
        EXPECT_EQ(free0 - (1 << 20), after);
    }

    ASSERT_EQ(0, gpumem_device_set(1));
    ASSERT_EQ(0, gpumem_device_mem_get_info(&free1, &total1));
    EXPECT_EQ(total1, free1) << "GPU 1 lost what GPU 0 allocated";
    ASSERT_EQ(0, gpumem_device_set(0));

    EXPECT_EQ(0, gpumem_device_free(dev));
    ASSERT_EQ(0, gpumem_device_mem_get_info(&after, &total0));
    EXPECT_EQ(free0, after);
}

TEST_F(api, allocations_do_not_open_the_machine_each_time) {
    void *dev;

    ASSERT_EQ(0, gpumem_device_malloc(&dev, 4096));
    ASSERT_EQ(0, gpumem_device_free(dev));

    /* The machine was opened by the first call, and stays open */
    gpumem_test::log_capture log(UCS_LOG_LEVEL_DEBUG,
                                 gpumem_test::log_capture::LEVEL_RAISED);
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(0, gpumem_device_malloc(&dev, 4096));
        ASSERT_EQ(0, gpumem_device_free(dev));
    }
    EXPECT_EQ(0u, log.count({"GPUs of the", "driver"})) << log.text("GPUs");

    /* A reset closes it; the next call opens it again */
    EXPECT_EQ(0, gpumem_device_reset());
    ASSERT_EQ(0, gpumem_device_malloc(&dev, 4096));
    ASSERT_EQ(0, gpumem_device_free(dev));
    EXPECT_EQ(1u, log.count({"GPUs of the", "driver"})) << log.text("GPUs");
}

TEST_F(api, threads_allocate_copy_and_free_on_shared_gpus) {
    const unsigned count = 8, iterations = 200;
    std::atomic<unsigned> failures(0);
    gpumem_test::watchdog watchdog("gpumem.h calls from 8 threads", 120);
    std::vector<std::thread> threads;

    for (unsigned t = 0; t < count; ++t) {
        threads.emplace_back([&, t]() {
            std::string in, out;
            gpumem_pointer_attr_t attr;
            void *dev[2];

            for (unsigned i = 0; i < iterations; ++i) {
                size_t size = 1 + ((t * 7919 + i * 104729) % 100000);

                in.assign(size, (char)(t + i));
                out.assign(size, '\0');
                failures += (gpumem_device_set((t + i) % 2) != 0);
                failures += (gpumem_device_malloc(&dev[0], size) != 0);
                failures += (gpumem_device_set((t + i + 1) % 2) != 0);
                failures += (gpumem_device_malloc(&dev[1], size) != 0);
                failures += (gpumem_device_memcpy(dev[0], &in[0], size) != 0);
                failures += (gpumem_device_memcpy(dev[1], dev[0], size) != 0);
                failures += (gpumem_device_memcpy(&out[0], dev[1], size) != 0);
                failures += (in != out);
                failures += (gpumem_device_query(dev[1], &attr) != 0) ||
                            (attr.base != dev[1]) || (attr.size < size);
                failures += (gpumem_device_free(dev[0]) != 0);
                failures += (gpumem_device_free(dev[1]) != 0);
            }
        });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }
    EXPECT_EQ(0u, failures.load());
}

TEST_F(api, of_two_frees_of_one_allocation_one_frees_it) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_test::watchdog watchdog("concurrent frees", 120);
    std::atomic<unsigned> freed(0), refused(0);

    for (unsigned i = 0; i < 100; ++i) {
        std::vector<std::thread> threads;
        void *dev;

        ASSERT_EQ(0, gpumem_device_malloc(&dev, 4096));
        for (unsigned t = 0; t < 4; ++t) {
            threads.emplace_back([&]() {
                int result = gpumem_device_free(dev);
                if (result == 0) {
                    ++freed;
                } else if (result == UCS_ERR_INVALID_ADDR) {
                    ++refused;
                }
            });
        }
        for (std::thread &thread : threads) {
            thread.join();
        }
    }
    EXPECT_EQ(100u, freed.load());
    EXPECT_EQ(300u, refused.load());
    EXPECT_EQ(300u, log.count({"which no gpumem_device_malloc gave"}));
}

/* The GPUs open at a fork are the parent's: the child opens its own, and
 * neither disturbs the other's memory */
TEST_F(api, a_child_of_a_fork_opens_its_own_gpus) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    std::string in(10000, 'p'), out(10000, '\0');
    int status;
    void *dev;
    pid_t pid;

    ASSERT_EQ(0, gpumem_device_malloc(&dev, in.size()));
    ASSERT_EQ(0, gpumem_device_memcpy(dev, &in[0], in.size()));

    fflush(stdout);
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        std::string child_in(10000, 'c'), child_out(10000, '\0');
        void *child_dev;
        int ok;

        /* The parent's allocation is not the child's to free */
        ok = (gpumem_device_free(dev) == UCS_ERR_INVALID_ADDR) &&
             (gpumem_device_malloc(&child_dev, child_in.size()) == 0) &&
             (gpumem_device_memcpy(child_dev, &child_in[0],
                                   child_in.size()) == 0) &&
             (gpumem_device_memcpy(&child_out[0], child_dev,
                                   child_out.size()) == 0) &&
             (child_in == child_out) && (gpumem_device_free(child_dev) == 0) &&
             (gpumem_device_reset() == 0);
        _exit(ok ? 0 : 1);
    }

    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
            << "the child's own GPUs failed it";
    EXPECT_EQ(0, gpumem_device_memcpy(&out[0], dev, out.size()));
    EXPECT_EQ(in, out);
    EXPECT_EQ(0, gpumem_device_free(dev));
}
