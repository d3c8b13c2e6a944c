/**
 * gpumem tests: the memory core's refusals (seed 003) on the emu driver:
 * bus and map_peer refuse with a status, log a reason naming what is
 * missing, and take nothing.
 *
 * See file LICENSE for terms.
 */

#include "mem_test.h"

#include <common/log_capture.h>

extern "C" {
#include <ucs/sys/string.h>
}

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <string>
#include <utility>
#include <vector>


class mem_refusal : public mem_core {
protected:
    virtual void TearDown() {
        restore_reaches();
        mem_core::TearDown();
    }

    /* The reach the core reads of GPU @a i: the driver's own, which a test
     * changes as a driver would report another place of the GPU; restored
     * at the test's end */
    gpumem_topo_reach_t *edit_reach(unsigned i) {
        gpumem_topo_reach_t *reach =
                const_cast<gpumem_topo_reach_t*>(gpumem_gpu_reach(gpu(i)));

        m_saved_reaches.push_back(std::make_pair(reach, *reach));
        return reach;
    }

    void restore_reaches() {
        while (!m_saved_reaches.empty()) {
            *m_saved_reaches.back().first = m_saved_reaches.back().second;
            m_saved_reaches.pop_back();
        }
    }

    /* A PCI function's address as the core's log lines write it */
    static std::string pci_name(const gpumem_topo_reach_t *reach) {
        char name[GPUMEM_TOPO_PCI_STR_MAX];

        return gpumem_pci_addr_str(&reach->addr, name, sizeof(name));
    }

    std::string gpu_name(unsigned i) {
        return pci_name(gpumem_gpu_reach(gpu(i)));
    }

    std::string machine(unsigned i) {
        return gpumem_gpu_reach(gpu(i))->machine;
    }

    /* A reach of the machine's last NIC, for a test to change */
    gpumem_topo_reach_t nic_reach() {
        const gpumem_topo_dev_t *nic = last_nic();

        EXPECT_TRUE(nic != NULL) << "the machine has no NIC";
        return (nic != NULL) ? nic->reach : gpumem_topo_reach_t();
    }

    /* bus of GPU @a i's region for the function at @a client */
    ucs_status_t bus_at(unsigned i, gpumem_region_t *region,
                        const char *client) {
        gpumem_bus_range_t *ranges = NULL;
        unsigned count             = 0;
        ucs_status_t status;

        status = gpumem_bus(gpu(i), region, m_topo, client, &ranges, &count);
        if (status == UCS_OK) {
            ucs_free(ranges);
        }
        return status;
    }

    /* bus for the machine's function at @a client's address, as @a client
     * describes it for this call: the machine's topology says so */
    ucs_status_t bus(unsigned i, gpumem_region_t *region,
                     const gpumem_topo_reach_t *client) {
        gpumem_topo_dev_t *dev = NULL;
        gpumem_topo_reach_t saved;
        ucs_status_t status;

        for (unsigned d = 0; d < m_topo->num_devs; ++d) {
            if (gpumem_pci_addr_equal(&m_topo->devs[d].reach.addr,
                                      &client->addr)) {
                dev = &m_topo->devs[d];
            }
        }
        EXPECT_TRUE(dev != NULL) << pci_name(client) << " is not in the "
                                 << "machine's topology";
        if (dev == NULL) {
            return UCS_ERR_NO_DEVICE;
        }

        saved      = dev->reach;
        dev->reach = *client;
        status     = bus_at(i, region, pci_name(client).c_str());
        dev->reach = saved;
        return status;
    }

    /* The refusal logged one error line, which names each of @a words */
    static void expect_reason(gpumem_test::log_capture &log,
                              const std::vector<std::string> &words) {
        EXPECT_EQ(1u, log.count(words)) << log.text();
        log.expect(words[0]);
        log.expect_none();
    }

    /* A refused bus reserved nothing: the free of GPU @a i's @a region
     * gives its memory back */
    void expect_free_gives_back(unsigned i, gpumem_region_t *region) {
        EXPECT_FALSE(gpumem_gpu_is_reserved(gpu(i)));
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(i), region));
        EXPECT_EQ(0u, stats(i).vram_bytes);
        EXPECT_EQ(0u, stats(i).memories);
        EXPECT_EQ(0u, stats(i).kept);
    }

    /* A refused map_peer on GPU @a peer took nothing: it holds no region
     * and no mapping, and the owner's free of @a owned gives it back */
    void expect_peer_took_nothing(unsigned peer, unsigned owner,
                                  gpumem_region_t *owned) {
        EXPECT_EQ(0u, stats(peer).regions);
        EXPECT_EQ(0u, stats(peer).mappings);
        EXPECT_EQ(0u, stats(peer).memories);
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(owner), owned));
        EXPECT_EQ(0u, stats(owner).vram_bytes);
        EXPECT_EQ(0u, stats(owner).memories) << "a peer hold was left";
    }

    std::vector<std::pair<gpumem_topo_reach_t*, gpumem_topo_reach_t> >
            m_saved_reaches;
};


/* Seed: bus "Error why, reserving nothing, where ... client ... names no
 * function of the machine, why naming it" */
TEST_F(mem_refusal, bus_refuses_a_client_of_another_machine_naming_it) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_topo_reach_t client = nic_reach();
    ucs_status_t status;

    ucs_strncpy_zero(client.machine, "another-machine",
                     sizeof(client.machine));
    status = bus(0, region, &client);
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(UCS_ERR_NO_MEMORY, status);
    EXPECT_NE(UCS_ERR_INVALID_PARAM, status);
    expect_reason(log, {pci_name(&client), "'another-machine'"});
    expect_free_gives_back(0, region);
}

/* Seed: bus "Error why, reserving nothing, where client is not a bus
 * address or names no function of the machine, why naming it" */
TEST_F(mem_refusal, bus_refuses_what_is_no_bus_address_naming_it) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);

    EXPECT_EQ(UCS_ERR_NO_DEVICE, bus_at(0, region, "the-nic"));
    expect_reason(log, {"'the-nic'", "not a bus address", gpu_name(0)});
    expect_free_gives_back(0, region);
}

TEST_F(mem_refusal, bus_refuses_an_address_of_no_function_naming_it) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region = alloc(0, GPUMEM_KIND_GPU, 4096);

    EXPECT_EQ(UCS_ERR_NO_DEVICE, bus_at(0, region, "abcd:ee:1f.7"));
    expect_reason(log, {"abcd:ee:1f.7", "names no function of machine",
                        machine(0)});
    expect_free_gives_back(0, region);
}

/* Seed: bus refuses where "the GPU ... is behind an IOMMU that translates
 * its requests", naming the GPU */
TEST_F(mem_refusal, bus_refuses_where_an_iommu_translates_the_gpus_requests) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_topo_reach_t client = nic_reach();
    gpumem_topo_reach_t *reach = edit_reach(0);

    reach->iommu.known = 1;
    reach->iommu.value = 1;
    reach->iommu_group = 7;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {pci_name(&client),
                        "IOMMU group 7 translates the requests of " +
                        gpu_name(0)});
    expect_free_gives_back(0, region);
}

/* Seed: bus refuses where "the ... client is behind an IOMMU that
 * translates its requests", naming the client */
TEST_F(mem_refusal, bus_refuses_where_an_iommu_translates_the_clients) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_topo_reach_t client = nic_reach();

    client.iommu.known = 1;
    client.iommu.value = 1;
    client.iommu_group = 5;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {gpu_name(0),
                        "IOMMU group 5 translates the requests of " +
                        pci_name(&client)});
    expect_free_gives_back(0, region);
}

/* Seed: bus refuses GPU memory where "the memory BAR is smaller than the
 * GPU's memory", naming the BAR */
TEST_F(mem_refusal, bus_refuses_where_the_bar_is_smaller_than_the_memory) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_topo_reach_t client;
    gpumem_region_t *region;

    close_machine();
    ASSERT_NO_FATAL_FAILURE(open_machine(NULL, SMALL_BAR_SIZE));
    region = alloc(0, GPUMEM_KIND_GPU, 4096);
    client = nic_reach();
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {pci_name(&client),
                        "BAR of " + gpu_name(0) + " is " +
                        std::to_string((size_t)SMALL_BAR_SIZE) +
                        " bytes, smaller than its " +
                        std::to_string((size_t)VRAM_SIZE) +
                        " bytes of memory"});
    expect_free_gives_back(0, region);
}

/* Seed: bus refuses GPU memory where "the bus does not carry client's
 * requests to it, as reaches states": on lassen (POWER9), a NIC of the
 * other socket, under a host bridge Linux's p2pdma does not list */
TEST_F(mem_refusal, bus_refuses_where_the_bus_does_not_carry_the_requests) {
    MEM_TEST_NEEDS(!driver_has(GPUMEM_DRIVER_FLAG_NO_PHYS), NO_PHYS);
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_topo_reach_t client;
    gpumem_region_t *region;
    unsigned hops;

    close_machine();
    /* A BAR as large as the memory, so that only the bus refuses */
    ASSERT_NO_FATAL_FAILURE(open_machine(
            "mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml", 0));
    client = nic_reach();
    ASSERT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS,
              gpumem_topo_relation(&client, gpumem_gpu_reach(gpu(0)), &hops));

    region = alloc(0, GPUMEM_KIND_GPU, 4096);
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {pci_name(&client), gpu_name(0),
                        "no PCI bridge above both",
                        "is not on Linux's p2pdma whitelist"});
    expect_free_gives_back(0, region);
}

/* The calling thread without CAP_SYS_ADMIN in its effective set, for the
 * object's life: the kernel then hides page frames in the page map opened
 * meanwhile. It stays permitted, so it comes back. */
class without_sys_admin {
public:
    without_sys_admin() {
        struct __user_cap_data_struct lowered[2];

        m_header.version = _LINUX_CAPABILITY_VERSION_3;
        m_header.pid     = 0;
        if (syscall(SYS_capget, &m_header, m_saved) != 0) {
            return;
        }
        m_had = m_saved[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &
                CAP_TO_MASK(CAP_SYS_ADMIN);
        memcpy(lowered, m_saved, sizeof(lowered));
        lowered[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &=
                ~CAP_TO_MASK(CAP_SYS_ADMIN);
        m_dropped = (syscall(SYS_capset, &m_header, lowered) == 0);
    }

    /* The thread is without it now: it never had it, or dropped it */
    bool without() const {
        return m_dropped || !m_had;
    }

    ~without_sys_admin() {
        if (m_dropped) {
            EXPECT_EQ(0, syscall(SYS_capset, &m_header, m_saved));
        }
    }

private:
    struct __user_cap_header_struct m_header;
    struct __user_cap_data_struct   m_saved[2];
    bool                            m_had     = true;
    bool                            m_dropped = false;
};

/* Seed: bus refuses system memory as GPU memory where "the machine is
 * reached through a transport" */
TEST_F(mem_refusal, bus_refuses_system_memory_to_a_client_of_another_machine) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_topo_reach_t client = nic_reach();

    ucs_strncpy_zero(client.machine, "another-machine",
                     sizeof(client.machine));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {pci_name(&client), "system memory of GPU " +
                        gpu_name(0), "different machines",
                        "'another-machine'"});
    expect_free_gives_back(0, region);
}

/* Seed: bus refuses where "the GPU or client is behind an IOMMU that
 * translates its requests": physical addresses are then no bus addresses */
TEST_F(mem_refusal, bus_refuses_system_memory_where_an_iommu_translates) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_topo_reach_t client = nic_reach();
    gpumem_topo_reach_t *reach;

    client.iommu.known = 1;
    client.iommu.value = 1;
    client.iommu_group = 5;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {gpu_name(0), "at its physical addresses",
                        "IOMMU group 5 translates the requests of " +
                        pci_name(&client)});

    client             = nic_reach();
    reach              = edit_reach(0);
    reach->iommu.known = 1;
    reach->iommu.value = 1;
    reach->iommu_group = 7;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {pci_name(&client),
                        "IOMMU group 7 translates the requests of " +
                        gpu_name(0)});

    /* A fact that cannot be read is no "yes" */
    reach->iommu.known = 0;
    ucs_strncpy_zero(reach->iommu.why, "no iommu_group link",
                     sizeof(reach->iommu.why));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, bus(0, region, &client));
    expect_reason(log, {pci_name(&client), "unknown: IOMMU of " +
                        gpu_name(0), "no iommu_group link"});
    expect_free_gives_back(0, region);
}

/* Seed: bus gives "system memory at its physical addresses": where the
 * kernel does not tell the process where its pages lie (no CAP_SYS_ADMIN),
 * bus refuses, saying so, and reserves nothing */
TEST_F(mem_refusal, bus_of_system_memory_is_refused_where_frames_are_hidden) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_topo_reach_t client = nic_reach();

    {
        without_sys_admin hidden;
        ASSERT_TRUE(hidden.without()) << "capset: " << strerror(errno);
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, bus(0, region, &client));
    }
    expect_reason(log, {pci_name(&client), "system memory of GPU " +
                        gpu_name(0), "hides the physical addresses",
                        "CAP_SYS_ADMIN"});
    expect_free_gives_back(0, region);
}

/* Seed: bus "Raises Invalid_argument if r is not a region alloc gave m":
 * neither map_host's nor map_peer's, and nothing is reserved */
TEST_F(mem_refusal, bus_of_a_region_alloc_did_not_give_is_invalid) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::vector<char> buffer(4096);
    gpumem_topo_reach_t client = nic_reach();
    gpumem_region_t *owned     = alloc(1, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *pinned, *peer;

    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), &buffer[0], 4096, &pinned));
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(0), owned, &peer));

    for (gpumem_region_t *region : {pinned, peer}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, bus(0, region, &client));
        expect_reason(log, {"not a live region that alloc gave GPU " +
                            gpu_name(0)});
    }
    EXPECT_FALSE(gpumem_gpu_is_reserved(gpu(0)));
    EXPECT_FALSE(gpumem_gpu_is_reserved(gpu(1)));

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), peer));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), pinned));
    EXPECT_EQ(0u, stats(0).mappings);
    EXPECT_EQ(0u, stats(0).memories);
    expect_free_gives_back(1, owned);
}

/* Seed: bus "Raises Invalid_argument if r ... was freed" */
TEST_F(mem_refusal, bus_of_a_freed_region_is_invalid) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_topo_reach_t client = nic_reach();

    ASSERT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, bus(0, region, &client));
    expect_reason(log, {"not a live region that alloc gave GPU " +
                        gpu_name(0)});
    EXPECT_FALSE(gpumem_gpu_is_reserved(gpu(0)));
    EXPECT_EQ(0u, stats(0).vram_bytes);
}

/* Seed: bus "Raises Invalid_argument if r is not a region alloc gave m":
 * another GPU's region is not m's, and stays its owner's alone */
TEST_F(mem_refusal, bus_of_another_gpus_region_is_invalid) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *other     = alloc(1, GPUMEM_KIND_GPU, 4096);
    gpumem_topo_reach_t client = nic_reach();

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, bus(0, other, &client));
    expect_reason(log, {"not a live region that alloc gave GPU " +
                        gpu_name(0)});
    EXPECT_FALSE(gpumem_gpu_is_reserved(gpu(0)));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    expect_free_gives_back(1, other);
}

/* Seed: bus "Raises Invalid_argument ... if the GPU's function is
 * released" */
TEST_F(mem_refusal, bus_after_release_is_invalid) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *region    = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_topo_reach_t client = nic_reach();

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, bus(0, region, &client));
    expect_reason(log, {"not a live region that alloc gave GPU " +
                        gpu_name(0), "or the GPU was released"});
    EXPECT_FALSE(gpumem_gpu_is_reserved(gpu(0)));
    EXPECT_EQ(0u, stats(0).vram_bytes);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

/* Seed: map_peer "Error why if the GPUs are on different machines ...
 * naming both": system memory */
TEST_F(mem_refusal, map_peer_of_system_memory_of_another_machine_names_both) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_region_t *peer  = NULL;

    ucs_strncpy_zero(edit_reach(1)->machine, "another-machine",
                     sizeof(gpumem_topo_reach_t::machine));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, gpumem_map_peer(gpu(1), owned, &peer));
    expect_reason(log, {gpu_name(1), "'another-machine'", gpu_name(0),
                        "'" + machine(0) + "'"});
    expect_peer_took_nothing(1, 0, owned);
}

/* Seed: map_peer "Error why ... if their page tables take addresses from
 * different spaces, naming both": system memory */
TEST_F(mem_refusal, map_peer_of_system_memory_of_another_space_names_both) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_HOST, 4096);
    gpumem_region_t *peer  = NULL;

    edit_reach(1)->space ^= 1;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, gpumem_map_peer(gpu(1), owned, &peer));
    expect_reason(log, {"page tables of GPU " + gpu_name(1) + " and GPU " +
                        gpu_name(0), "different spaces"});
    expect_peer_took_nothing(1, 0, owned);
}

/* Seed: map_peer "Error why if the GPUs are on different machines ...
 * naming both": GPU memory, as reaches states it */
TEST_F(mem_refusal, map_peer_of_gpu_memory_of_another_machine_names_both) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer  = NULL;

    ucs_strncpy_zero(edit_reach(1)->machine, "another-machine",
                     sizeof(gpumem_topo_reach_t::machine));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, gpumem_map_peer(gpu(1), owned, &peer));
    expect_reason(log, {gpu_name(1), gpu_name(0), "different machines",
                        "'another-machine'", "'" + machine(0) + "'"});
    expect_peer_took_nothing(1, 0, owned);
}

/* Seed: map_peer "Error why ... if their page tables take addresses from
 * different spaces, naming both": GPU memory */
TEST_F(mem_refusal, map_peer_of_gpu_memory_of_another_space_names_both) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    gpumem_region_t *owned = alloc(0, GPUMEM_KIND_GPU, 4096);
    gpumem_region_t *peer  = NULL;

    edit_reach(1)->space ^= 1;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, gpumem_map_peer(gpu(1), owned, &peer));
    expect_reason(log, {"page tables of " + gpu_name(1) + " and " +
                        gpu_name(0), "different spaces"});
    expect_peer_took_nothing(1, 0, owned);
}
