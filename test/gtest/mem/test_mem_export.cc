/**
 * gpumem tests: map_peer across processes, by exported handles.
 *
 * See file LICENSE for terms.
 */

#include "mem_test.h"

#include <common/channel.h>
#include <common/log_capture.h>

#include <sys/wait.h>
#include <unistd.h>


class mem_export : public mem_core {
protected:
    std::string export_of(gpumem_region_t *region) {
        std::string handle(GPUMEM_EXPORT_MAX, '\0');
        size_t length;

        EXPECT_EQ(UCS_OK, gpumem_export(region, &handle[0], &length));
        handle.resize(length);
        return handle;
    }

    /* Whether another process's open of the emu is refused as taken by
     * this one: 1 if refused naming this process, 0 if it opens, else
     * another failure */
    int open_is_refused() {
        int status;
        pid_t pid = fork();

        if (pid == 0) {
            gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
            gpumem_topo_params_t params = {};
            gpumem_emu_config_t config  = {};
            gpumem_driver_t *driver;
            gpumem_topo_t *topo;
            ucs_status_t open_status;
            std::string taken = "taken: process " + std::to_string(getppid());

            params.xml_buffer = gpumem_emu_builtin_topology;
            params.sysfs_root = "/nonexistent";
            if (gpumem_topo_load(&params, &topo) != UCS_OK) {
                _exit(3);
            }
            config.vram_size = VRAM_SIZE;
            config.bar_size  = VRAM_SIZE;
            config.shm_dir   = m_shm_dir.path().c_str();
            open_status      = gpumem_emu_open(&config, topo, &driver);
            if (open_status == UCS_OK) {
                driver->ops->close(driver);
                _exit(0);
            }
            _exit(((open_status == UCS_ERR_BUSY) &&
                   (log.count({taken, "still reached"}) > 0)) ? 1 : 2);
        }
        if ((pid < 0) || (waitpid(pid, &status, 0) != pid) ||
            !WIFEXITED(status)) {
            return -1;
        }
        return WEXITSTATUS(status);
    }
};


/* One process allocates and exports, another imports and maps: both see
 * the same bytes, and the owner's free while the peer maps keeps them */
TEST_F(mem_export, peer_process_maps_the_memory_and_outlives_the_owners_free) {
    MEM_TEST_NEEDS(is_emu(), NO_FORK);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    gpumem_test::channel chan;
    std::string handle;
    int status;
    pid_t pid;

    ASSERT_TRUE(owned != NULL);
    write_dev(0, gpumem_region_address(owned) + 5000, "from the owner");
    handle = export_of(owned);

    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        gpumem_region_t *peer;
        int ok;

        chan.child_side();
        m_gpus.clear();
        m_driver = NULL;
        m_topo   = NULL;
        open_machine(NULL);
        ok = (gpumem_import(gpu(1), handle.data(), handle.size(), &peer) ==
              UCS_OK) &&
             (read_dev(1, gpumem_region_address(peer) + 5000, 14) ==
              "from the owner");
        write_dev(1, gpumem_region_address(peer), "from the peer");
        ok &= chan.signal();
        ok &= chan.wait();   /* the owner freed */
        ok &= (read_dev(1, gpumem_region_address(peer) + 5000, 14) ==
               "from the owner");
        ok &= (gpumem_free(gpu(1), peer) == UCS_OK);
        close_machine();
        _exit(ok ? 0 : 3);
    }

    ASSERT_TRUE(chan.wait());
    EXPECT_EQ("from the peer", read_dev(0, gpumem_region_address(owned), 13));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
    ASSERT_TRUE(chan.signal());

    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(mem_export, importing_the_same_memory_again_shares_one_mapping) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    std::string handle     = export_of(owned);
    gpumem_region_t *first, *second;

    ASSERT_EQ(UCS_OK, gpumem_import(gpu(1), handle.data(), handle.size(),
                                    &first));
    ASSERT_EQ(UCS_OK, gpumem_import(gpu(1), handle.data(), handle.size(),
                                    &second));
    EXPECT_EQ(gpumem_region_address(first), gpumem_region_address(second));
    EXPECT_EQ(1u, stats(1).mappings);

    write_dev(1, gpumem_region_address(first), "shared");
    EXPECT_EQ("shared", read_dev(0, gpumem_region_address(owned), 6));
    gpumem_free(gpu(1), first);
    gpumem_free(gpu(1), second);
    EXPECT_EQ(0u, stats(1).mappings);
    gpumem_free(gpu(0), owned);
}

TEST_F(mem_export, a_region_over_imported_memory_exports_the_same_handle) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    std::string handle     = export_of(owned);
    gpumem_region_t *imported;

    ASSERT_EQ(UCS_OK, gpumem_import(gpu(1), handle.data(), handle.size(),
                                    &imported));
    EXPECT_EQ(handle, export_of(imported));
    gpumem_free(gpu(1), imported);
    gpumem_free(gpu(0), owned);
}

TEST_F(mem_export, system_memory_is_not_exported) {
    gpumem_region_t *host = alloc(0, GPUMEM_KIND_HOST, 4096);
    char handle[GPUMEM_EXPORT_MAX];
    size_t length;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED, gpumem_export(host, handle, &length));
    gpumem_free(gpu(0), host);
}

/* A handle is bytes from a peer: each bad one is refused, nothing mapped */
TEST_F(mem_export, bad_handles_are_refused_and_map_nothing) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    std::string good       = export_of(owned);
    gpumem_region_t *region;
    std::vector<std::string> bad;
    std::string h;

    bad.push_back("");
    bad.push_back(good.substr(0, 8));                  /* truncated header */
    bad.push_back(good.substr(0, good.size() - 1));    /* truncated handle */
    bad.push_back(good + "x");                         /* trailing byte */
    bad.push_back(std::string(good.size(), '\xff'));   /* garbage */
    h = good; h[0] ^= 1;  bad.push_back(h);            /* magic */
    h = good; h[4] = 9;   bad.push_back(h);            /* version */
    h = good; h[8] ^= 0x40; bad.push_back(h);          /* no such GPU */
    h = good; h[10] = 0;  bad.push_back(h);            /* driver length */
    h = good; h[12] = 1;  bad.push_back(h);            /* reserved */
    h = good; h[good.size() - 9] ^= 0x5a; bad.push_back(h); /* driver part */
    h = std::string(GPUMEM_EXPORT_MAX + 1, '\0'); bad.push_back(h);

    for (const std::string &handle : bad) {
        region = NULL;
        EXPECT_NE(UCS_OK, gpumem_import(gpu(1), handle.data(), handle.size(),
                                        &region))
                << "handle of " << handle.size() << " bytes";
        EXPECT_TRUE(region == NULL);
    }
    EXPECT_EQ(0u, stats(1).mappings);
    EXPECT_EQ(0u, stats(1).memories);
    gpumem_free(gpu(0), owned);
}

/* Seed: a released GPU whose memory another GPU maps keeps its function
 * taken: another process's open of the machine's GPUs is refused, naming
 * the process, until the last such mapping goes */
TEST_F(mem_export, released_gpu_whose_memory_a_peer_maps_stays_taken) {
    MEM_TEST_NEEDS(keeps_taken(), NOT_TAKEN);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer;


    ASSERT_TRUE(owned != NULL);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    EXPECT_EQ(0, open_is_refused()) << "taken before its release";

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(1, open_is_refused()) << "a peer maps the released GPU's "
                                    << "memory: another open is refused, "
                                    << "naming this process";

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(0, open_is_refused()) << "the last mapping went";
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));

    /* Memory a bus client was given keeps GPU 1 taken whatever is freed,
     * until this process lets its driver go */
    owned = alloc(1, GPUMEM_KIND_GPU, 4096);
    ASSERT_TRUE(last_nic() != NULL);
    gpumem_bus_range_t *ranges;
    unsigned count;
    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(1), owned, m_topo,
                                 bus_addr(last_nic()).c_str(), &ranges,
                                 &count));
    ucs_free(ranges);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), owned));
    gpumem_gpu_release(gpu(1));
    EXPECT_EQ(1, open_is_refused()) << "a bus client may write its memory";
    close_machine();
    EXPECT_EQ(0, open_is_refused()) << "the driver's close ends it";
}

/* Seed: a peer's unconfirmed free after the owner's release keeps the
 * owner's memory, and its function taken, to the peer's own release; then
 * both go back, before the GPU objects are destroyed */
TEST_F(mem_export, peers_unconfirmed_free_after_owners_release_untakes_later) {
    MEM_TEST_NEEDS(keeps_taken(), NOT_TAKEN);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer;

    ASSERT_TRUE(owned != NULL);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_gpu_release(gpu(0));
    m_driver->ops->inject_fault(dgpu(1),
                                GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(1, open_is_refused()) << "GPU 1 may still write its memory";

    gpumem_gpu_release(gpu(1));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(0, open_is_refused()) << "both released: nothing reached";
}

/* Seed issue: an export handle is checked against the live memory at every
 * reuse of a cached mapping: importing the same handle again, and
 * gpumem_region_check() of the import, refuse memory that is no longer what
 * the handle named */
TEST_F(mem_export, reuse_of_an_import_checks_the_memory_it_maps) {
    MEM_TEST_NEEDS(is_emu(), EMU_HOOK);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *first, *again = NULL;
    std::string handle     = export_of(owned);
    gpumem_driver_mem_t *vram;
    uint64_t generation;
    size_t offset;

    ASSERT_EQ(UCS_OK, gpumem_import(gpu(1), handle.data(), handle.size(),
                                    &first));
    EXPECT_EQ(UCS_OK, gpumem_region_check(first));
    ASSERT_EQ(UCS_OK, gpumem_region_vram(first, &vram, &offset));

    generation = gpumem_emu_test_set_generation(vram, 1u << 30);
    EXPECT_EQ(UCS_ERR_NO_ELEM, gpumem_region_check(first));
    EXPECT_EQ(UCS_ERR_NO_ELEM, gpumem_import(gpu(1), handle.data(),
                                             handle.size(), &again));
    EXPECT_TRUE(again == NULL);
    EXPECT_EQ(2u, log.count({"no longer the memory its handle named"}))
            << log.text();
    log.expect("no longer the memory its handle named");
    EXPECT_EQ(1u, stats(1).regions);

    gpumem_emu_test_set_generation(vram, generation);
    EXPECT_EQ(UCS_OK, gpumem_region_check(first));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), first));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
}
