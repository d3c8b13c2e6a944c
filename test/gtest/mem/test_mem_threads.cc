/**
 * gpumem tests: the memory core called from many threads at once, on one
 * GPU and across GPUs, every byte checked. Each test runs under a watchdog,
 * so that a deadlock fails it rather than hangs the suite.
 *
 * See file LICENSE for terms.
 */

#include "mem_test.h"

#include <common/log_capture.h>
#include <common/watchdog.h>

#include <atomic>
#include <random>
#include <thread>


class mem_threads : public mem_core {
protected:
    enum { ITERATIONS = 300, WATCHDOG_SECONDS = 120 };

    unsigned num_gpus() const {
        return m_gpus.size();
    }

    /* Runs @a body(thread index) in @a count threads at once */
    template <typename Body>
    void run_threads(unsigned count, const std::string &what, Body body) {
        gpumem_test::watchdog watchdog(what, WATCHDOG_SECONDS);
        std::vector<std::thread> threads;

        for (unsigned t = 0; t < count; ++t) {
            threads.emplace_back(body, t);
        }
        for (std::thread &thread : threads) {
            thread.join();
        }
    }

    /* Bytes no other thread and iteration writes */
    static std::string pattern(unsigned thread, unsigned iteration,
                               size_t size) {
        std::string data(size, '\0');

        for (size_t i = 0; i < size; ++i) {
            data[i] = (char)((thread * 131) + (iteration * 7) + i);
        }
        return data;
    }

    /* Every GPU gives back what it holds for others at its next call: one
     * call each, then nothing may be left */
    void expect_all_given_back() {
        for (unsigned i = 0; i < num_gpus(); ++i) {
            gpumem_free(gpu(i), alloc(i, GPUMEM_KIND_GPU, 4096));
        }
        for (unsigned i = 0; i < num_gpus(); ++i) {
            gpumem_gpu_stats_t s = stats(i);
            EXPECT_EQ(0u, s.regions) << "GPU " << i;
            EXPECT_EQ(0u, s.mappings) << "GPU " << i;
            EXPECT_EQ(0u, s.memories) << "GPU " << i;
            EXPECT_EQ(0u, s.vram_bytes) << "GPU " << i;
        }
    }

    /*
     * One thread's work: allocate on its GPU, write, map on another GPU,
     * read there, then free both in either order, the peer reading its
     * bytes again after the owner's free. Returns the failures it saw.
     */
    unsigned alloc_copy_map_free(unsigned thread) {
        std::mt19937 random(thread);
        unsigned own       = thread % num_gpus();
        unsigned failures  = 0;
        unsigned iteration, other;
        gpumem_region_t *owned, *peer;
        std::string data;
        size_t size;

        for (iteration = 0; iteration < ITERATIONS; ++iteration) {
            other = (own + 1 + (random() % (num_gpus() - 1))) % num_gpus();
            size  = 1 + (random() % (64 * 1024));
            data  = pattern(thread, iteration, size);

            if (gpumem_alloc(gpu(own), GPUMEM_KIND_GPU, size, 0, &owned) !=
                UCS_OK) {
                ++failures;
                continue;
            }

            failures += (copy(own, gpumem_region_address(owned), true,
                              (uintptr_t)data.data(), false, size) != UCS_OK);
            if (gpumem_map_peer(gpu(other), owned, &peer) != UCS_OK) {
                ++failures;
                gpumem_free(gpu(own), owned);
                continue;
            }

            failures += (read_dev(other, gpumem_region_address(peer), size) !=
                         data);
            if (random() % 2) {
                failures += (gpumem_free(gpu(own), owned) != UCS_OK);
                failures += (read_dev(other, gpumem_region_address(peer),
                                      size) != data);
                failures += (gpumem_free(gpu(other), peer) != UCS_OK);
            } else {
                failures += (gpumem_free(gpu(other), peer) != UCS_OK);
                failures += (read_dev(own, gpumem_region_address(owned),
                                      size) != data);
                failures += (gpumem_free(gpu(own), owned) != UCS_OK);
            }
        }
        return failures;
    }
};


TEST_F(mem_threads, threads_share_each_gpu_alloc_copy_map_and_free) {
    unsigned count = 4 * num_gpus();
    std::atomic<unsigned> failures(0);

    run_threads(count, "alloc, copy, map_peer and free from " +
                std::to_string(count) + " threads",
                [&](unsigned thread) {
                    failures += alloc_copy_map_free(thread);
                });

    EXPECT_EQ(0u, failures.load());
    expect_all_given_back();
}

TEST_F(mem_threads, many_threads_free_peers_of_one_region) {
    const unsigned count = 8;
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    std::string data       = pattern(0, 0, 1 << 20);
    std::atomic<unsigned> failures(0);

    write_dev(0, gpumem_region_address(owned), data);

    /* The same memory mapped and unmapped by every other GPU at once: one
     * shared mapping per GPU, counted from many threads */
    run_threads(count, "map_peer and free of one region from " +
                std::to_string(count) + " threads",
                [&](unsigned thread) {
                    unsigned other = 1 + (thread % (num_gpus() - 1));
                    gpumem_region_t *peer;

                    for (unsigned i = 0; i < ITERATIONS; ++i) {
                        if (gpumem_map_peer(gpu(other), owned, &peer) !=
                            UCS_OK) {
                            ++failures;
                            continue;
                        }
                        size_t offset = (i % 256) * 4096;

                        failures += (read_dev(other,
                                              gpumem_region_address(peer) +
                                              offset, 4096) !=
                                     data.substr(offset, 4096));
                        failures += (gpumem_free(gpu(other), peer) != UCS_OK);
                    }
                });

    EXPECT_EQ(0u, failures.load());
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
    expect_all_given_back();
}

TEST_F(mem_threads, two_gpus_mapping_each_other_never_wait_in_a_cycle) {
    gpumem_region_t *owned[2] = {alloc(0, GPUMEM_KIND_GPU, 4096),
                                 alloc(1, GPUMEM_KIND_GPU, 4096)};
    std::atomic<unsigned> failures(0);

    /* GPU 0's calls read GPU 1's regions and the other way round */
    run_threads(4, "map_peer between two GPUs both ways",
                [&](unsigned thread) {
                    unsigned mapper = thread % 2;
                    gpumem_region_t *peer;

                    for (unsigned i = 0; i < 10 * ITERATIONS; ++i) {
                        if (gpumem_map_peer(gpu(mapper), owned[1 - mapper],
                                            &peer) != UCS_OK) {
                            ++failures;
                            continue;
                        }
                        failures += (gpumem_free(gpu(mapper), peer) !=
                                     UCS_OK);
                    }
                });

    EXPECT_EQ(0u, failures.load());
    gpumem_free(gpu(0), owned[0]);
    gpumem_free(gpu(1), owned[1]);
    expect_all_given_back();
}

TEST_F(mem_threads, a_freed_region_is_freed_once_whichever_thread_wins) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::atomic<unsigned> freed(0), refused(0);

    for (unsigned i = 0; i < ITERATIONS; ++i) {
        gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);

        /* Each of four threads frees the same region: one gives it back,
         * the others are told it was freed */
        run_threads(4, "four frees of one region", [&](unsigned) {
            ucs_status_t status = gpumem_free(gpu(0), owned);
            if (status == UCS_OK) {
                ++freed;
            } else if (status == UCS_ERR_INVALID_PARAM) {
                ++refused;
            }
        });
    }

    EXPECT_EQ((unsigned)ITERATIONS, freed.load());
    EXPECT_EQ(3u * ITERATIONS, refused.load());
    EXPECT_EQ(3u * ITERATIONS, log.count({"free of region", "was freed"}));
    expect_all_given_back();
}
