/**
 * gpumem tests: the memory core's behaviours (seed 003) on the emu driver,
 * one test per behaviour, named after it (see README.md here for the table
 * from the seed's sentences to the tests).
 *
 * See file LICENSE for terms.
 */

#include "mem_test.h"

#include <common/log_capture.h>
#include <common/watchdog.h>

#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <thread>


const gpumem_driver_ops_t *mem_table_spy::real = NULL;
unsigned mem_table_spy::writes                  = 0;
int mem_table_spy::reservations                 = 0;
unsigned mem_table_spy::last_flags              = 0;
gpumem_driver_ops_t mem_table_spy::ops;


TEST_F(mem_core, alloc_rounds_gpu_memory_up_to_4k) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 5000);

    ASSERT_TRUE(region != NULL);
    EXPECT_EQ(8192u, gpumem_region_size(region));
    EXPECT_EQ(0u, gpumem_region_address(region) % 4096);
    EXPECT_EQ(8192u, stats(0).vram_bytes);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(mem_core, alloc_rounds_to_2m_pages_from_8m_on) {
    gpumem_region_t *small = alloc(0, GPUMEM_KIND_GPU, (8 << 20) - 1);
    gpumem_region_t *large = alloc(0, GPUMEM_KIND_GPU, (8 << 20) + 1);

    ASSERT_TRUE((small != NULL) && (large != NULL));
    EXPECT_EQ(8u << 20, gpumem_region_size(small));
    EXPECT_EQ(10u << 20, gpumem_region_size(large));
    EXPECT_EQ(0u, gpumem_region_address(large) % (2 << 20));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), small));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), large));
}

TEST_F(mem_core, alloc_rounds_system_memory_up_to_the_page) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_HOST, 10);

    ASSERT_TRUE(region != NULL);
    EXPECT_EQ(ucs_get_page_size(), gpumem_region_size(region));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(mem_core, alloc_of_zero_bytes_is_invalid_and_takes_nothing) {
    gpumem_region_t *region = NULL;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_alloc(gpu(0), GPUMEM_KIND_GPU, 0, 0, &region));
    EXPECT_TRUE(region == NULL);
    EXPECT_EQ(0u, stats(0).regions);
    EXPECT_EQ(0u, stats(0).memories);
}

TEST_F(mem_core, gpu_memory_has_no_process_window) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);

    ASSERT_TRUE(region != NULL);
    EXPECT_TRUE(gpumem_region_host(region) == NULL);
    EXPECT_EQ(GPUMEM_KIND_GPU, gpumem_region_kind(region));
    gpumem_free(gpu(0), region);
}

TEST_F(mem_core, no_room_now_is_no_memory_and_freeing_makes_room) {
    /* All the VRAM free now: the emu's whole, a live machine's what its
     * processes left */
    gpumem_region_t *all  = alloc(0, GPUMEM_KIND_GPU,
                                  is_emu() ? (size_t)VRAM_SIZE :
                                             vram_free(0));
    gpumem_region_t *more = NULL;

    ASSERT_TRUE(all != NULL);
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              gpumem_alloc(gpu(0), GPUMEM_KIND_GPU, 4096, 0, &more));
    EXPECT_EQ(1u, stats(0).regions);

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), all));
    more = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_TRUE(more != NULL);
    gpumem_free(gpu(0), more);
}

TEST_F(mem_core, no_room_injected_gives_back_what_it_took) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    gpumem_region_t *region = NULL;

    m_driver->ops->inject_fault(dgpu(0), GPUMEM_DRIVER_FAULT_NO_ROOM);
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              gpumem_alloc(gpu(0), GPUMEM_KIND_GPU, 4096, 0, &region));
    EXPECT_EQ(0u, stats(0).memories);
    EXPECT_EQ(0u, stats(0).mappings);
}

/*
 * Seed: "alloc, map_host and map_peer each return Ok None if the machine's
 * system memory, the GPU's memory, its space or a page table has no room,
 * and freeing memory makes room. ... Each gives back what it took before it
 * returns None". Each resource through each call that takes it (map_peer
 * maps at the addresses the region has, and takes none from the space:
 * mem_core.map_peer_takes_no_addresses_from_a_full_space).
 */
struct mem_no_room_case {
    const char            *name;
    gpumem_driver_fault_t fault;
    const char            *call;   /* alloc, alloc_host, map_host, map_peer */
};

class mem_core_no_room : public mem_core,
                         public testing::WithParamInterface<mem_no_room_case> {
protected:
    /* The call of the case, on GPU @a i */
    ucs_status_t call(unsigned i, void *pages, gpumem_region_t *of_other,
                      gpumem_region_t **region_p) {
        const std::string call = GetParam().call;

        if (call == "alloc") {
            return gpumem_alloc(gpu(i), GPUMEM_KIND_GPU, 4096, 0, region_p);
        } else if (call == "alloc_host") {
            return gpumem_alloc(gpu(i), GPUMEM_KIND_HOST, 4096, 0, region_p);
        } else if (call == "map_host") {
            return gpumem_map_host(gpu(i), pages, 4096, region_p);
        }
        return gpumem_map_peer(gpu(i), of_other, region_p);
    }
};

TEST_P(mem_core_no_room, is_no_memory_takes_nothing_and_room_comes_back) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    MEM_TEST_NEEDS(injects(GetParam().fault), NO_SUCH_FAULT);
    std::vector<char> buffer(2 * 4096);
    void *pages              = (void*)(((uintptr_t)buffer.data() + 4095) &
                                       ~(uintptr_t)4095);
    gpumem_region_t *of_gpu0 = alloc(0, GPUMEM_KIND_HOST, 4096);
    size_t free_before       = vram_free(1);
    gpumem_gpu_stats_t before = stats(1);
    gpumem_region_t *region   = NULL;

    m_driver->ops->inject_fault(dgpu(1), GetParam().fault);
    EXPECT_EQ(UCS_ERR_NO_MEMORY, call(1, pages, of_gpu0, &region));
    EXPECT_EQ(before.regions, stats(1).regions);
    EXPECT_EQ(before.mappings, stats(1).mappings);
    EXPECT_EQ(before.memories, stats(1).memories);
    EXPECT_EQ(free_before, vram_free(1));

    /* The same call, with room */
    ASSERT_EQ(UCS_OK, call(1, pages, of_gpu0, &region));
    EXPECT_EQ(before.regions + 1, stats(1).regions);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), region));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), of_gpu0));
}

INSTANTIATE_TEST_SUITE_P(
        resource, mem_core_no_room,
        testing::Values(
            mem_no_room_case{"gpu_memory", GPUMEM_DRIVER_FAULT_NO_ROOM,
                             "alloc"},
            mem_no_room_case{"system_memory", GPUMEM_DRIVER_FAULT_NO_ROOM,
                             "alloc_host"},
            mem_no_room_case{"space_alloc", GPUMEM_DRIVER_FAULT_NO_ADDRESSES,
                             "alloc"},
            mem_no_room_case{"table_alloc", GPUMEM_DRIVER_FAULT_NO_TABLE_ROOM,
                             "alloc"},
            mem_no_room_case{"space_map_host",
                             GPUMEM_DRIVER_FAULT_NO_ADDRESSES, "map_host"},
            mem_no_room_case{"table_map_host",
                             GPUMEM_DRIVER_FAULT_NO_TABLE_ROOM, "map_host"},
            mem_no_room_case{"table_map_peer",
                             GPUMEM_DRIVER_FAULT_NO_TABLE_ROOM, "map_peer"}),
        [](const testing::TestParamInfo<mem_no_room_case> &info) {
            return std::string(info.param.name);
        });

TEST_F(mem_core, refusal_is_an_error_and_takes_nothing) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    size_t free_before      = vram_free(0);
    gpumem_region_t *region = NULL;
    ucs_status_t status;

    m_driver->ops->inject_fault(dgpu(0), GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    status = gpumem_alloc(gpu(0), GPUMEM_KIND_GPU, 4096, 0, &region);
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(UCS_ERR_NO_MEMORY, status);
    EXPECT_NE(UCS_ERR_INVALID_PARAM, status);
    /* The reason names what is missing; nothing was taken */
    EXPECT_EQ(1u, log.count(alloc_refused(4096))) << log.text();
    EXPECT_EQ(0u, stats(0).memories);
    EXPECT_EQ(0u, stats(0).mappings);
    EXPECT_EQ(free_before, vram_free(0));
}

TEST_F(mem_core, bar_memory_window_and_copy_engine_see_the_same_bytes) {
    MEM_TEST_NEEDS(is_emu(), NO_BAR);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_BAR, 4096);
    char *window;

    ASSERT_TRUE(region != NULL);
    window = (char*)gpumem_region_host(region);
    ASSERT_TRUE(window != NULL);

    memcpy(window, "through the BAR", 16);
    EXPECT_EQ(std::string("through the BAR", 16),
              read_dev(0, gpumem_region_address(region), 16));

    write_dev(0, gpumem_region_address(region) + 100,
              std::string("by the engine", 14));
    EXPECT_EQ(0, memcmp(window + 100, "by the engine", 14));
    gpumem_free(gpu(0), region);
}

TEST_F(mem_core, bar_memory_that_no_bar_block_fits_is_no_room) {
    MEM_TEST_NEEDS(is_emu(), NO_BAR);
    gpumem_region_t *region = NULL;

    close_machine();
    ASSERT_NO_FATAL_FAILURE(open_machine(NULL, SMALL_BAR_SIZE));
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              gpumem_alloc(gpu(0), GPUMEM_KIND_BAR, SMALL_BAR_SIZE + 4096, 0,
                           &region));

    /* GPU memory outside the BAR still fits */
    region = alloc(0, GPUMEM_KIND_GPU, SMALL_BAR_SIZE + 4096);
    EXPECT_TRUE(region != NULL);
    gpumem_free(gpu(0), region);
}

TEST_F(mem_core, host_memory_is_reached_by_process_and_gpu) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_HOST, 8192,
                                    GPUMEM_ALLOC_UNCACHED);
    char *window;

    ASSERT_TRUE(region != NULL);
    window = (char*)gpumem_region_host(region);
    ASSERT_TRUE(window != NULL);
    strcpy(window + 4000, "across a page");
    EXPECT_EQ("across a page",
              read_dev(0, gpumem_region_address(region) + 4000, 13));
    gpumem_free(gpu(0), region);
}

TEST_F(mem_core, map_host_address_is_where_the_gpu_reaches_byte_a) {
    std::vector<char> buffer(3 * 4096);
    char *a = &buffer[1234];
    gpumem_region_t *region;

    strcpy(a, "byte a");
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), a, 100, &region));
    EXPECT_EQ((void*)a, gpumem_region_host(region));
    EXPECT_EQ("byte a", read_dev(0, gpumem_region_address(region), 6));

    write_dev(0, gpumem_region_address(region) + 50, "from the GPU");
    EXPECT_EQ(0, memcmp(a + 50, "from the GPU", 12));
    gpumem_free(gpu(0), region);
}

TEST_F(mem_core, map_host_maps_anew_at_each_call) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_HOST_UVA), HOST_UVA);
    std::vector<char> buffer(4096, 'x');
    gpumem_region_t *first, *second;

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[0], 4096, &first));
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[0], 4096, &second));
    EXPECT_NE(gpumem_region_address(first), gpumem_region_address(second));
    EXPECT_EQ(2u, stats(0).mappings);
    gpumem_free(gpu(0), first);
    EXPECT_EQ("xxxx", read_dev(0, gpumem_region_address(second), 4));
    gpumem_free(gpu(0), second);
}

TEST_F(mem_core, map_host_of_no_bytes_is_invalid) {
    char byte;
    gpumem_region_t *region = NULL;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_map_host(gpu(0), &byte, 0, &region));
    EXPECT_EQ(0u, stats(0).memories);
}

TEST_F(mem_core, map_host_pin_refused_is_an_error) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    std::vector<char> buffer(4096);
    gpumem_region_t *region = NULL;
    ucs_status_t status;

    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);

    m_driver->ops->inject_fault(dgpu(0), GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    status = gpumem_map_host(gpu(0), &buffer[0], 4096, &region);
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(UCS_ERR_INVALID_PARAM, status);
    /* The pin's own reason */
    EXPECT_EQ(1u, log.count(pin_refused())) << log.text();
    EXPECT_EQ(0u, stats(0).memories);
    EXPECT_EQ(0u, stats(0).mappings);
}

TEST_F(mem_core, map_peer_sees_the_owners_bytes) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    gpumem_region_t *peer;

    ASSERT_TRUE(owned != NULL);
    write_dev(0, gpumem_region_address(owned) + 4090, "over the page");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    EXPECT_EQ(gpu(1), gpumem_region_gpu(peer));
    EXPECT_EQ("over the page",
              read_dev(1, gpumem_region_address(peer) + 4090, 13));

    write_dev(1, gpumem_region_address(peer), "peer wrote");
    EXPECT_EQ("peer wrote", read_dev(0, gpumem_region_address(owned), 10));
    gpumem_free(gpu(1), peer);
    gpumem_free(gpu(0), owned);
}

/* Seed: map_peer maps r for the GPU of m "at the address r has there": one
 * address space per machine, for GPU memory, system memory and borrowed
 * pages alike, and for a region map_peer gave */
TEST_F(mem_core, map_peer_maps_at_the_address_the_region_has_there) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_PROCESS_MAPS), PROCESS_MAPS);
    std::vector<char> buffer(2 * 4096, 'h');
    gpumem_region_t *owned[3], *peer[3], *again;

    owned[0] = alloc(0, GPUMEM_KIND_GPU, 65536);
    owned[1] = alloc(0, GPUMEM_KIND_HOST, 8192);
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[100], 4000, &owned[2]));
    write_dev(0, gpumem_region_address(owned[0]) + 4096, "owner's");

    for (unsigned i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned[i], &peer[i]));
        EXPECT_EQ(gpumem_region_address(owned[i]),
                  gpumem_region_address(peer[i])) << "region " << i;
        EXPECT_EQ(gpumem_region_size(owned[i]), gpumem_region_size(peer[i]));
    }

    /* The peer's engine reaches the owner's bytes there */
    EXPECT_EQ("owner's",
              read_dev(1, gpumem_region_address(peer[0]) + 4096, 7));
    EXPECT_EQ("hhhh", read_dev(1, gpumem_region_address(peer[2]), 4));

    /* A region map_peer gave maps its owner's region, at its address */
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(0), peer[0], &again));
    EXPECT_EQ(gpumem_region_address(owned[0]), gpumem_region_address(again));
    EXPECT_EQ("owner's", read_dev(0, gpumem_region_address(again) + 4096, 7));

    gpumem_free(gpu(0), again);
    for (unsigned i = 0; i < 3; ++i) {
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer[i]));
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned[i]));
    }
}

/* One space per machine: map_peer maps at the region's addresses, so a
 * space with no room does not stop it */
TEST_F(mem_core, map_peer_takes_no_addresses_from_a_full_space) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    MEM_TEST_NEEDS(injects(GPUMEM_DRIVER_FAULT_NO_ADDRESSES), NO_SUCH_FAULT);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_region_t *peer, *refused = NULL;

    m_driver->ops->inject_fault(dgpu(1), GPUMEM_DRIVER_FAULT_NO_ADDRESSES);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    EXPECT_EQ(gpumem_region_address(owned), gpumem_region_address(peer));

    /* The space of GPU 1 has no room still: its own alloc is refused */
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              gpumem_alloc(gpu(1), GPUMEM_KIND_GPU, 4096, 0, &refused));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
}

/* A bus client reaches memory at its physical addresses: another GPU's
 * mapping of it goes at that GPU's free as any other, and maps again */
TEST_F(mem_core, peer_of_bus_reserved_memory_maps_again_after_its_free) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer;
    gpumem_bus_range_t *ranges;
    unsigned count;

    ASSERT_TRUE(last_nic() != NULL);
    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(0), owned, m_topo,
                                 bus_addr(last_nic()).c_str(), &ranges,
                                 &count));
    ucs_free(ranges);
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer)) << i;
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
        EXPECT_EQ(0u, stats(1).kept) << "the peer's mapping was kept";
    }
    gpumem_free(gpu(0), owned);
}

/* The range of an allocation holds the address asked about: the bytes
 * asked for, or past them (in the rounding) the whole region */
TEST_F(mem_core, find_range_holds_the_address_asked_about) {
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 100);
    uint64_t base, address = gpumem_region_address(region);
    size_t size;

    ASSERT_EQ(UCS_OK, gpumem_find_range(gpu(0), address + 50, &base, &size));
    EXPECT_EQ(address, base);
    EXPECT_EQ(100u, size);
    ASSERT_EQ(UCS_OK, gpumem_find_range(gpu(0), address + 200, &base, &size));
    EXPECT_EQ(address, base);
    EXPECT_EQ(4096u, size);
    gpumem_free(gpu(0), region);
}

/* The peer holds the addresses it maps: after the owner's release, which
 * gives back what the owner holds, the peer still reaches the memory there,
 * and the addresses go with the peer's last free */
TEST_F(mem_core, a_peer_holds_the_addresses_past_the_owners_release) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_PROCESS_MAPS), PROCESS_MAPS);
    gpumem_region_t *owned, *peer;
    uint64_t address;

    close_machine();
    m_spy_tables = true;
    ASSERT_NO_FATAL_FAILURE(open_machine(NULL));

    owned   = alloc(0, GPUMEM_KIND_GPU, 65536);
    address = gpumem_region_address(owned);
    write_dev(0, address, "kept");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    EXPECT_EQ(1, mem_table_spy::reservations) << "the peer took addresses";

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(1, mem_table_spy::reservations) << "the addresses went back "
                                              << "while the peer maps them";
    EXPECT_EQ("kept", read_dev(1, address, 4));

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(0, mem_table_spy::reservations);
    EXPECT_EQ(0u, stats(1).mappings);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
}

TEST_F(mem_core, map_peer_shares_one_mapping) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *first, *second;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &first));
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &second));
    EXPECT_NE(first, second);
    EXPECT_EQ(gpumem_region_address(first), gpumem_region_address(second));
    EXPECT_EQ(1u, stats(1).mappings);
    EXPECT_EQ(2u, stats(1).regions);

    /* The mapping stays until every region over it is freed */
    gpumem_free(gpu(1), first);
    EXPECT_EQ(1u, stats(1).mappings);
    write_dev(1, gpumem_region_address(second), "live");
    EXPECT_EQ("live", read_dev(1, gpumem_region_address(second), 4));
    gpumem_free(gpu(1), second);
    EXPECT_EQ(0u, stats(1).mappings);
    gpumem_free(gpu(0), owned);
}

TEST_F(mem_core, map_peer_of_own_region_shares_its_own_mapping) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *again;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(0), owned, &again));
    EXPECT_EQ(gpumem_region_address(owned), gpumem_region_address(again));
    EXPECT_EQ(1u, stats(0).mappings);

    /* The owner's free of one leaves the other mapped */
    gpumem_free(gpu(0), owned);
    write_dev(0, gpumem_region_address(again), "still");
    EXPECT_EQ("still", read_dev(0, gpumem_region_address(again), 5));
    gpumem_free(gpu(0), again);
    EXPECT_EQ(0u, stats(0).memories);
}

TEST_F(mem_core, map_peer_of_a_peer_region_maps_the_owners_region) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer, *back;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    /* GPU 0 maps what GPU 1's region maps: its own memory, its mapping */
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(0), peer, &back));
    EXPECT_EQ(gpumem_region_address(owned), gpumem_region_address(back));
    EXPECT_EQ(1u, stats(0).mappings);
    gpumem_free(gpu(0), back);
    gpumem_free(gpu(1), peer);
    gpumem_free(gpu(0), owned);
}

/* Seed: "If map_peer gave r itself, map_peer maps the region that r maps,
 * which its owner gave": the release of the GPU that mapped r leaves the
 * owner's region, and its memory, to map */
TEST_F(mem_core, map_peer_of_a_peer_region_of_a_released_gpu_maps_the_owners) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer, *back = NULL;

    write_dev(0, gpumem_region_address(owned), "owner's");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_gpu_release(gpu(1));

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(0), peer, &back));
    EXPECT_EQ(gpumem_region_address(owned), gpumem_region_address(back));
    EXPECT_EQ(gpumem_region_size(owned), gpumem_region_size(back));
    EXPECT_EQ("owner's", read_dev(0, gpumem_region_address(back), 7));
    /* GPU 0's own mapping, no other */
    EXPECT_EQ(1u, stats(0).mappings);
    EXPECT_EQ(2u, stats(0).regions);

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), back));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
    EXPECT_EQ(0u, stats(0).vram_bytes);
}

/* ... and where the owner was released too, the refusal names the owner,
 * not the GPU that mapped r */
TEST_F(mem_core, map_peer_of_a_peer_region_of_a_released_owner_names_it) {
    MEM_TEST_NEEDS(is_emu(), LIVE_MACHINE);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned, *peer, *back = NULL;
    char name[GPUMEM_TOPO_PCI_STR_MAX];

    /* Minsky: four GPUs, so that a third asks once both are released */
    close_machine();
    ASSERT_NO_FATAL_FAILURE(open_machine(
            "hwloc-power8-minsky-4xP100-nvlink.xml"));
    owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_pci_addr_str(&gpumem_gpu_reach(gpu(0))->addr, name, sizeof(name));
    gpumem_gpu_release(gpu(1));
    gpumem_gpu_release(gpu(0));

    EXPECT_EQ(UCS_ERR_NOT_CONNECTED, gpumem_map_peer(gpu(2), peer, &back));
    log.expect(std::string("memory of GPU ") + name +
               ", whose function was released");
    EXPECT_TRUE(back == NULL);
}

/* Seed: "Raises Invalid_argument if r, or the region it maps, was freed":
 * a peer region whose owner's region is gone maps nothing more, whichever
 * GPU asks (the owner itself too), and takes nothing */
TEST_F(mem_core, map_peer_of_a_peer_region_whose_owner_freed_is_invalid) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer, *again = NULL;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(0), owned));

    for (unsigned i : {0u, 1u}) {
        gpumem_gpu_stats_t before = stats(i);

        EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_map_peer(gpu(i), peer, &again))
                << "GPU " << i;
        log.expect("which its owner freed");
        EXPECT_EQ(before.regions, stats(i).regions);
        EXPECT_EQ(before.mappings, stats(i).mappings);
    }

    /* The peer's last free, then the owner's next call, give it all back */
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    gpumem_free(gpu(0), alloc(0, GPUMEM_KIND_GPU, 4096));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(0u, stats(0).memories);
}

TEST_F(mem_core, map_peer_of_system_memory_pins_for_the_peer) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_region_t *peer;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    strcpy((char*)gpumem_region_host(owned), "system");
    EXPECT_EQ("system", read_dev(1, gpumem_region_address(peer), 6));
    EXPECT_EQ(gpumem_region_host(owned), gpumem_region_host(peer));
    gpumem_free(gpu(0), owned);
    EXPECT_EQ("system", read_dev(1, gpumem_region_address(peer), 6));
    gpumem_free(gpu(1), peer);
}

TEST_F(mem_core, free_while_peer_maps_keeps_memory) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    gpumem_region_t *peer, *next;

    write_dev(0, gpumem_region_address(owned), "kept");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));

    /* The owner's memory and its addresses stay for the peer */
    EXPECT_EQ(1u << 20, stats(0).vram_bytes);
    EXPECT_EQ("kept", read_dev(1, gpumem_region_address(peer), 4));

    /* The peer's last free, then the owner's next call, give it back */
    gpumem_free(gpu(1), peer);
    EXPECT_EQ(1u << 20, stats(0).vram_bytes);
    next = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_EQ(4096u, stats(0).vram_bytes);
    gpumem_free(gpu(0), next);
}

/*
 * Seed: "The owner's last free of its regions over that memory, while
 * another GPU's region over it is out, keeps the memory and its addresses.
 * They go back at the owner's first alloc, map_host, map_peer, free or
 * release after the last such region's free." Each trigger in turn.
 */
class mem_core_owner_gives_back :
    public mem_core, public testing::WithParamInterface<std::string> {
protected:
    /* The owner's next call, the one that gives the kept memory back */
    void trigger(gpumem_region_t *spare, gpumem_region_t *of_gpu1) {
        const std::string &call = GetParam();
        std::vector<char> page(2 * 4096);
        gpumem_region_t *region;

        if (call == "alloc") {
            region = alloc(0, GPUMEM_KIND_GPU, 4096);
            EXPECT_EQ(4096u, stats(0).vram_bytes - spare_bytes(spare));
            gpumem_free(gpu(0), region);
        } else if (call == "map_host") {
            ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), page.data(), 4096,
                                              &region));
            EXPECT_EQ(0u, stats(0).vram_bytes - spare_bytes(spare));
            gpumem_free(gpu(0), region);
        } else if (call == "map_peer") {
            ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(0), of_gpu1, &region));
            EXPECT_EQ(0u, stats(0).vram_bytes - spare_bytes(spare));
            gpumem_free(gpu(0), region);
        } else if (call == "free") {
            ASSERT_EQ(UCS_OK, gpumem_free(gpu(0), spare));
            EXPECT_EQ(0u, stats(0).vram_bytes);
        } else {
            gpumem_gpu_release(gpu(0));
            EXPECT_EQ(0u, stats(0).vram_bytes);
        }
    }

    static size_t spare_bytes(gpumem_region_t *spare) {
        return gpumem_region_size(spare);
    }
};

TEST_P(mem_core_owner_gives_back, at_its_next_call_after_the_peers_last_free)
{
    gpumem_region_t *spare   = alloc(0, GPUMEM_KIND_GPU, 8192);
    gpumem_region_t *of_gpu1 = alloc(1, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *owned   = alloc(0, GPUMEM_KIND_GPU, 4096);
    uint64_t address         = gpumem_region_address(owned);
    gpumem_region_t *peer, *other;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(0), owned));

    /* Kept: the memory, and the addresses, which no new region takes */
    EXPECT_EQ(8192u + 4096u, stats(0).vram_bytes);
    other = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_NE(address, gpumem_region_address(other));
    gpumem_free(gpu(0), other);
    EXPECT_EQ(8192u + 4096u, stats(0).vram_bytes);

    /* The peer's last free leaves it to the owner's next call */
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(8192u + 4096u, stats(0).vram_bytes);

    trigger(spare, of_gpu1);
    if (GetParam() != "free") {
        gpumem_free(gpu(0), spare);
    }
    gpumem_free(gpu(1), of_gpu1);
}

INSTANTIATE_TEST_SUITE_P(call, mem_core_owner_gives_back,
                         testing::Values("alloc", "map_host", "map_peer",
                                         "free", "release"));

TEST_F(mem_core, map_peer_refused_where_gpu_does_not_reach) {
    MEM_TEST_NEEDS(is_emu(), LIVE_MACHINE);
    gpumem_region_t *owned, *peer = NULL;

    /* Minsky: GPUs of two sockets, no NVLink between them, POWER8 */
    close_machine();
    ASSERT_NO_FATAL_FAILURE(open_machine(
            "hwloc-power8-minsky-4xP100-nvlink.xml"));
    owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_EQ(UCS_ERR_UNREACHABLE, gpumem_map_peer(gpu(2), owned, &peer));
    EXPECT_EQ(0u, stats(2).mappings);

    /* NVLink joins GPUs 0 and 1 */
    EXPECT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_free(gpu(1), peer);
    gpumem_free(gpu(0), owned);
}

/* A refusal at map_peer's pin step: the pin's reason, nothing taken, and
 * the owner's memory is its own alone again (its free gives it back) */
TEST_F(mem_core, map_peer_pin_refused_carries_its_reason_and_takes_nothing) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_region_t *peer  = NULL;
    ucs_status_t status;

    m_driver->ops->inject_fault(dgpu(1), GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    status = gpumem_map_peer(gpu(1), owned, &peer);
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(UCS_ERR_NO_MEMORY, status);
    EXPECT_EQ(1u, log.count(pin_refused())) << log.text();
    EXPECT_EQ(0u, stats(1).regions);
    EXPECT_EQ(0u, stats(1).mappings);

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
    EXPECT_EQ(0u, stats(0).memories) << "a peer hold was left";
}

TEST_F(mem_core, map_peer_refused_when_owner_was_released) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer  = NULL;

    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    char name[GPUMEM_TOPO_PCI_STR_MAX];

    gpumem_pci_addr_str(&gpumem_gpu_reach(gpu(0))->addr, name, sizeof(name));
    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(UCS_ERR_NOT_CONNECTED, gpumem_map_peer(gpu(1), owned, &peer));
    /* Naming the owner */
    log.expect(std::string("memory of GPU ") + name +
               ", whose function was released");
    EXPECT_EQ(0u, stats(1).mappings);
    EXPECT_EQ(0u, stats(1).regions);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
}

TEST_F(mem_core, free_of_a_freed_or_foreign_region_is_invalid) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *other = alloc(1, GPUMEM_KIND_GPU, 4096);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_free(gpu(0), other));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_free(gpu(0), owned));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), other));
}

TEST_F(mem_core, map_peer_of_a_freed_region_is_invalid) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer  = NULL;

    gpumem_free(gpu(0), owned);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_map_peer(gpu(1), owned, &peer));
}

TEST_F(mem_core, release_gives_back_all_regions_out_included) {
    alloc(0, GPUMEM_KIND_GPU, VRAM_SIZE / 2);
    alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_gpu_release(gpu(0));

    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(0u, stats(0).mappings);
    EXPECT_EQ(0u, stats(0).memories);
}

/* Locked memory of this process, in kB (/proc/self/status) */
static long mem_core_locked_kb() {
    FILE *file = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    while ((file != NULL) && (fgets(line, sizeof(line), file) != NULL)) {
        if (sscanf(line, "VmLck: %ld kB", &kb) == 1) {
            break;
        }
    }
    if (file != NULL) {
        fclose(file);
    }
    return kb;
}

/* Whether locking @a size bytes at @a addr shows in VmLck */
static bool mem_core_locks_are_seen(void *addr, size_t size) {
    long before = mem_core_locked_kb();
    bool seen;

    if (mlock(addr, size) != 0) {
        return false;
    }
    seen = (mem_core_locked_kb() > before);
    munlock(addr, size);
    return seen;
}

/* Page-aligned bytes of a vector */
static void *mem_core_pages(std::vector<char> &buffer) {
    return (void*)(((uintptr_t)buffer.data() + 4095) & ~(uintptr_t)4095);
}

/* Seed: map_host "Function.pins them ... Each call maps anew, so memory
 * mapped already ... is pinned once more" */
TEST_F(mem_core, each_map_host_pins_the_pages_again) {
    const size_t size = 16 * 4096;
    std::vector<char> buffer(size + 4096);
    void *addr  = mem_core_pages(buffer);
    long before = mem_core_locked_kb();
    gpumem_region_t *first, *second;
    long locked;

    if (!mem_core_locks_are_seen(addr, size)) {
        GTEST_SKIP() << "mlock() locks nothing in this process (a "
                        "sanitizer's mlock is a no-op)";
    }

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), addr, size, &first));
    locked = mem_core_locked_kb();
    EXPECT_GE(locked, before + (long)(size / 1024));
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), addr, size, &second));

    /* The first free leaves the second pin */
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(0), first));
    EXPECT_EQ(locked, mem_core_locked_kb());
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(0), second));
    EXPECT_EQ(before, mem_core_locked_kb());
}

TEST_F(mem_core, release_unpins_map_host_pins_and_peers_pins) {
    const size_t size = 64 * 4096;
    std::vector<char> pages(size + 4096);
    void *addr        = mem_core_pages(pages);
    long before       = mem_core_locked_kb();
    gpumem_region_t *pinned, *system, *peer_of_pinned, *peer_of_system;

    ASSERT_GE(before, 0) << "no VmLck in /proc/self/status";
    if (!mem_core_locks_are_seen(addr, size)) {
        GTEST_SKIP() << "mlock() locks nothing in this process (a "
                        "sanitizer's mlock is a no-op)";
    }

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), addr, size, &pinned));
    system = alloc(0, GPUMEM_KIND_HOST, size);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), pinned, &peer_of_pinned));
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), system, &peer_of_system));
    EXPECT_GT(mem_core_locked_kb(), before);

    /* GPU 1's release ends its pins as its frees would, GPU 0's release
     * its own: the locked memory is back where it was */
    gpumem_gpu_release(gpu(1));
    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(before, mem_core_locked_kb());

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer_of_pinned));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer_of_system));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), pinned));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), system));
    EXPECT_EQ(before, mem_core_locked_kb());
}

TEST_F(mem_core, requests_after_release_are_invalid) {
    char byte;
    gpumem_region_t *region = alloc(1, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *out    = NULL;

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_alloc(gpu(0), GPUMEM_KIND_GPU, 4096, 0, &out));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_map_host(gpu(0), &byte, 1, &out));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_map_peer(gpu(0), region, &out));
    gpumem_free(gpu(1), region);
}

/* Seed: "With ~uncached:true (defaults to false) the GPU bypasses its
 * caches for them; Host memory is always uncached", as the tables are
 * written */
TEST_F(mem_core, uncached_is_off_by_default_and_host_memory_always_uncached) {
    std::vector<char> buffer(2 * 4096);
    void *pages = (void*)(((uintptr_t)buffer.data() + 4095) & ~(uintptr_t)4095);
    std::vector<gpumem_region_t*> regions;
    gpumem_region_t *region;

    close_machine();
    m_spy_tables = true;
    ASSERT_NO_FATAL_FAILURE(open_machine(NULL));

    regions.push_back(alloc(0, GPUMEM_KIND_GPU, 4096));
    EXPECT_EQ(0u, mem_table_spy::last_flags & GPUMEM_DRIVER_MAP_UNCACHED);
    regions.push_back(alloc(0, GPUMEM_KIND_GPU, 4096, GPUMEM_ALLOC_UNCACHED));
    EXPECT_NE(0u, mem_table_spy::last_flags & GPUMEM_DRIVER_MAP_UNCACHED);
    regions.push_back(alloc(0, GPUMEM_KIND_HOST, 4096));
    EXPECT_NE(0u, mem_table_spy::last_flags & GPUMEM_DRIVER_MAP_UNCACHED);
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), pages, 4096, &region));
    regions.push_back(region);
    EXPECT_NE(0u, mem_table_spy::last_flags & GPUMEM_DRIVER_MAP_UNCACHED);

    for (gpumem_region_t *r : regions) {
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), r));
    }
}

TEST_F(mem_core, free_after_release_writes_no_table_and_gives_back_nothing) {
    gpumem_region_t *region, *host;
    gpumem_gpu_stats_t released;
    unsigned writes;

    close_machine();
    m_spy_tables = true;
    ASSERT_NO_FATAL_FAILURE(open_machine(NULL));
    region = alloc(0, GPUMEM_KIND_GPU, 4096);
    host   = alloc(0, GPUMEM_KIND_HOST, 4096);
    ASSERT_GT(mem_table_spy::writes, 0u) << "the spy counts no table write";

    gpumem_gpu_release(gpu(0));
    writes   = mem_table_spy::writes;
    released = stats(0);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), host));
    EXPECT_EQ(writes, mem_table_spy::writes) << "a free wrote the tables";
    EXPECT_EQ(released.vram_bytes, stats(0).vram_bytes);
    EXPECT_EQ(released.memories, stats(0).memories);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_free(gpu(0), region));
}

TEST_F(mem_core, releasing_again_does_nothing_more) {
    alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_gpu_release(gpu(0));
    gpumem_gpu_stats_t released = stats(0);

    /* The driver is not asked again: it logs each release it does */
    gpumem_test::log_capture log(UCS_LOG_LEVEL_DEBUG,
                                 gpumem_test::log_capture::LEVEL_RAISED);
    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(0u, log.count({"released"})) << log.text();
    EXPECT_EQ(released.regions, stats(0).regions);
    EXPECT_EQ(released.memories, stats(0).memories);
    EXPECT_EQ(released.vram_bytes, stats(0).vram_bytes);
}

/* Seed: "The memory of a region map_peer gave stays its owner's": the
 * peer's free leaves the owner's region and bytes as they were */
TEST_F(mem_core, a_peer_regions_memory_stays_its_owners) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 8192);
    gpumem_region_t *peer;

    write_dev(0, gpumem_region_address(owned), "the owner's bytes");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    write_dev(1, gpumem_region_address(peer) + 4096, "the peer's bytes");
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(1), peer));

    EXPECT_EQ("the owner's bytes",
              read_dev(0, gpumem_region_address(owned), 17));
    EXPECT_EQ("the peer's bytes",
              read_dev(0, gpumem_region_address(owned) + 4096, 16));
    EXPECT_EQ(8192u, stats(0).vram_bytes);
    EXPECT_EQ(1u, stats(0).regions);
    EXPECT_EQ(0u, stats(1).vram_bytes);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), owned));
}

TEST_F(mem_core, release_keeps_what_peers_map) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    gpumem_region_t *peer;

    write_dev(0, gpumem_region_address(owned), "survives");
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_gpu_release(gpu(0));

    EXPECT_EQ(1u << 20, stats(0).vram_bytes);
    EXPECT_EQ("survives", read_dev(1, gpumem_region_address(peer), 8));

    /* The peer's last free gives the released owner's memory back */
    gpumem_free(gpu(1), peer);
    EXPECT_EQ(0u, stats(0).vram_bytes);
}

TEST_F(mem_core, release_ends_its_mappings_of_peers_memory) {
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer, *next;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_free(gpu(0), owned);
    gpumem_gpu_release(gpu(1));

    /* As GPU 1's free would: the owner gives the memory back next call */
    next = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_EQ(4096u, stats(0).vram_bytes);
    gpumem_free(gpu(0), next);
}

TEST_F(mem_core, unconfirmed_flush_keeps_memory_until_release) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);

    m_driver->ops->inject_fault(dgpu(0),
                                GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    EXPECT_EQ(4096u, stats(0).vram_bytes);
    EXPECT_EQ(1u, stats(0).kept);

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(0u, stats(0).kept);
}

TEST_F(mem_core, peers_unconfirmed_flush_keeps_owners_memory_to_its_release) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer, *next;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_free(gpu(0), owned);
    m_driver->ops->inject_fault(dgpu(1),
                                GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED);
    gpumem_free(gpu(1), peer);

    /* GPU 1 may still write it: none of it goes back before GPU 0's
     * release, whatever GPU 0 does meanwhile */
    gpumem_gpu_release(gpu(1));
    next = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_EQ(8192u, stats(0).vram_bytes);
    gpumem_free(gpu(0), next);
    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(0u, stats(0).vram_bytes);
}

/* Seed: a peer's free that its GPU does not confirm "leaves the memory
 * reached: none of what the owner holds goes back before the owner's
 * release, and none of what the peer holds before its own": after the
 * owner's release, the peer's release gives it back */
TEST_F(mem_core, peers_unconfirmed_flush_after_owners_release_goes_at_its_own) {
    MEM_TEST_NEEDS(injects_faults(), NO_FAULTS);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer;

    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), owned, &peer));
    gpumem_gpu_release(gpu(0));
    m_driver->ops->inject_fault(dgpu(1),
                                GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(4096u, stats(0).vram_bytes) << "GPU 1 may still write it";
    EXPECT_EQ(1u, stats(0).memories);

    gpumem_gpu_release(gpu(1));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(0u, stats(0).memories);
    EXPECT_EQ(0u, stats(1).kept);
}

TEST_F(mem_core, bus_gives_bar_addresses_and_reserves_the_memory) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    const gpumem_topo_dev_t *nic = last_nic();
    gpumem_bus_range_t *ranges;
    unsigned count;

    ASSERT_TRUE(nic != NULL);

    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(0), region, m_topo,
                                 bus_addr(nic).c_str(), &ranges, &count));
    ASSERT_EQ(1u, count);
    EXPECT_EQ(1u << 20, ranges[0].length);
    EXPECT_EQ(0u, ranges[0].address % 4096);
    EXPECT_GE(ranges[0].address, m_driver->ops->bar_bus_addr(dgpu(0)));
    ucs_free(ranges);

    /* Reserved: the free gives nothing back */
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    EXPECT_EQ(1u << 20, stats(0).vram_bytes);
}

/* Seed: bus "From then on, until the process exits, r's memory and m's GPU
 * are reserved for client, whatever is freed or released meanwhile ...
 * Asking again reserves nothing more." */
TEST_F(mem_core, bus_reservation_outlasts_the_gpus_destroy_and_asking_again) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 1 << 20);
    const gpumem_topo_dev_t *nic = last_nic();
    gpumem_bus_range_t *first, *again;
    unsigned count;
    size_t free_before;

    ASSERT_TRUE(nic != NULL);

    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(0), region, m_topo,
                                 bus_addr(nic).c_str(), &first, &count));
    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(0), region, m_topo,
                                 bus_addr(nic).c_str(), &again, &count));
    EXPECT_EQ(first[0].address, again[0].address);
    EXPECT_EQ(first[0].length, again[0].length);
    ucs_free(first);
    ucs_free(again);
    EXPECT_EQ(1u << 20, stats(0).vram_bytes) << "asking again reserved more";
    EXPECT_TRUE(gpumem_gpu_is_reserved(gpu(0)));

    /* The free and the GPU's destroy give back nothing of it */
    free_before = vram_free(0);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    gpumem_gpu_destroy(gpu(0));
    m_gpus[0] = NULL;
    EXPECT_EQ(free_before, vram_free(0))
            << "the VRAM a bus client may write went back";
}

/* The physical address of the page at @a addr, as the kernel's page map
 * gives it to this process, read here on its own; 0 where it cannot */
static uint64_t mem_core_page_phys(const void *addr)
{
    size_t page_size = ucs_get_page_size();
    uint64_t entry   = 0;
    int fd           = open("/proc/self/pagemap", O_RDONLY);

    if (fd < 0) {
        return 0;
    }
    if (pread(fd, &entry, sizeof(entry),
              ((uintptr_t)addr / page_size) * sizeof(entry)) !=
        sizeof(entry)) {
        entry = 0;
    }
    close(fd);
    return (entry >> 63) ? (entry & ((1ull << 55) - 1)) * page_size : 0;
}

/* Seed: bus gives "system memory at its physical addresses", as (address,
 * bytes) pairs in order from r's first byte, each a multiple of 4 KiB;
 * "from then on ... free of r gives back nothing, so no later allocation
 * takes its memory". Asking again gives the same places, and a peer's
 * mapping of the memory, when it goes, leaves the pages pinned. */
TEST_F(mem_core, bus_gives_physical_addresses_of_system_memory_and_keeps_them) {
    const size_t size = 1 << 20, page_size = ucs_get_page_size();
    const gpumem_topo_dev_t *nic = last_nic();
    gpumem_region_t *region, *peer;
    gpumem_bus_range_t *ranges, *again;
    unsigned count, count_again;
    size_t total = 0, page = 0;
    long locked;
    char why[256];
    uint8_t *host;
    void *probe;
    bool seen;

    if (gpumem_phys_visible(why, sizeof(why)) != UCS_OK) {
        GTEST_SKIP() << "this process cannot see physical addresses: " << why;
    }
    probe = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, probe);
    seen = mem_core_locks_are_seen(probe, page_size);
    munmap(probe, page_size);
    if (!seen) {
        GTEST_SKIP() << "mlock() locks nothing in this process (a "
                        "sanitizer's mlock is a no-op)";
    }

    ASSERT_TRUE(nic != NULL);
    region = alloc(0, GPUMEM_KIND_HOST, size);
    ASSERT_TRUE(region != NULL);
    host = (uint8_t*)gpumem_region_host(region);
    ASSERT_TRUE(host != NULL);

    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(0), region, m_topo,
                                 bus_addr(nic).c_str(), &ranges, &count));
    ASSERT_GE(count, 1u);
    for (unsigned i = 0; i < count; ++i) {
        EXPECT_EQ(0u, ranges[i].address % 4096) << "range " << i;
        EXPECT_EQ(0u, ranges[i].length % 4096) << "range " << i;
        /* Each page where the kernel's page map, read here, says it is */
        for (size_t off = 0; off < ranges[i].length; off += page_size) {
            EXPECT_EQ(ranges[i].address + off,
                      mem_core_page_phys(host + page * page_size))
                    << "page " << page;
            ++page;
        }
        total += ranges[i].length;
    }
    EXPECT_EQ(size, total);
    EXPECT_TRUE(gpumem_gpu_is_reserved(gpu(0)));

    ASSERT_EQ(UCS_OK, gpumem_bus(gpu(0), region, m_topo,
                                 bus_addr(nic).c_str(), &again,
                                 &count_again));
    ASSERT_EQ(count, count_again);
    EXPECT_EQ(0, memcmp(ranges, again, count * sizeof(*ranges)));
    ucs_free(again);

    /* Another GPU maps the memory, then lets it go: the pages stay pinned */
    locked = mem_core_locked_kb();
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), region, &peer));
    ASSERT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(locked, mem_core_locked_kb()) << "a peer's unpin unpinned "
                                            << "the bus client's pages";

    /* The free gives back nothing: the pages stay, in memory, where the
     * client was told they are */
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    EXPECT_EQ(1u, stats(0).memories);
    EXPECT_EQ(1u, stats(0).kept);
    EXPECT_EQ(locked, mem_core_locked_kb());
    EXPECT_EQ(ranges[0].address, mem_core_page_phys(host));
    ucs_free(ranges);
}

TEST_F(mem_core, bus_of_a_region_alloc_did_not_give_is_invalid) {
    std::vector<char> buffer(4096);
    gpumem_region_t *region;
    gpumem_bus_range_t *ranges;
    unsigned count;

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[0], 4096, &region));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_bus(gpu(0), region, m_topo,
                         bus_addr(&m_topo->devs[1]).c_str(), &ranges,
                         &count));
    gpumem_free(gpu(0), region);
}

/* One call at a time per GPU; calls on two GPUs run at once, mapping each
 * other's memory, and never wait for each other in a cycle */
TEST_F(mem_core, calls_on_two_gpus_run_at_once_without_deadlock) {
    gpumem_region_t *owned[2] = {alloc(0, GPUMEM_KIND_GPU, 4096),
                                 alloc(1, GPUMEM_KIND_GPU, 4096)};
    std::atomic<unsigned> failures(0);
    std::vector<std::thread> threads;
    /* A cycle of waits fails the test, naming it, rather than hanging */
    gpumem_test::watchdog watchdog("calls on two GPUs", 120);

    for (unsigned t = 0; t < 2; ++t) {
        threads.emplace_back([this, t, &owned, &failures]() {
            for (int i = 0; i < 300; ++i) {
                gpumem_region_t *peer, *mine;
                if ((gpumem_map_peer(gpu(t), owned[1 - t], &peer) != UCS_OK) ||
                    (gpumem_alloc(gpu(t), GPUMEM_KIND_GPU, 4096, 0, &mine) !=
                     UCS_OK)) {
                    ++failures;
                    continue;
                }
                failures += (gpumem_free(gpu(t), peer) != UCS_OK);
                failures += (gpumem_free(gpu(t), mine) != UCS_OK);
            }
        });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }

    EXPECT_EQ(0u, failures.load());
    gpumem_free(gpu(0), owned[0]);
    gpumem_free(gpu(1), owned[1]);
    EXPECT_EQ(0u, stats(0).vram_bytes + stats(1).vram_bytes);
}
