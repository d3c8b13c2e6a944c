/**
 * gpumem tests: UCP between the GPUs of real machines, emulated from their
 * exports and the facts hwloc does not carry: where the machine's bus would
 * corrupt or refuse peer-to-peer (ACS redirect, a translating IOMMU, a BAR
 * short of the memory) the bytes are staged through gpumemcpy and the
 * reason names the object that refused; where it carries them, the
 * rendezvous is zero-copy through gpumemipc.
 *
 * See file LICENSE for terms.
 */

#include "ipc_ucp_test.h"

#include <common/log_capture.h>
#include <common/scoped_env.h>
#include <common/temp_dir.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>


using gpumem_test::lane_bytes;
using gpumem_test::log_capture;
using gpumem_test::setup_name;
using gpumem_test::ucp_setup;


/*
 * The pascal export (two P100s and a ConnectX-5 behind one PLX switch under
 * a Broadwell root port) with a facts file of test/topologies each test
 * names. This machine's /sys has no say: an empty directory stands for it.
 */
class ipc_ucp_pascal : public ipc_ucp {
protected:
    virtual void SetUp() {
        ipc_ucp::SetUp();
        if (HasFatalFailure()) {
            return;
        }

        ASSERT_TRUE(m_sysfs.make("ipc_ucp_pascal_sysfs"));
        m_topo.set("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                   "/mpibind-pascal-2xBDW-2xP100-1xIB.xml");
        m_sysfs_root.set("UCX_GPUMEM_SYSFS_ROOT", m_sysfs.path());
    }

    virtual void TearDown() {
        m_facts.restore();
        m_sysfs_root.restore();
        m_topo.restore();
        ipc_ucp::TearDown();
    }

    /* The machine's facts: test/topologies/mpibind-pascal-@a name.facts */
    void use_facts(const std::string &name) {
        m_facts.set("UCX_GPUMEM_TOPO_FACTS",
                    std::string(GPUMEM_TEST_TOPO_DIR) + "/mpibind-pascal-" +
                    name + ".facts");
    }

    /* Messages of each size from GPU 1 (cuda1, 0000:07:00.0) to GPU 0
     * (cuda0, 0000:04:00.0): none moves through gpumemipc, both processes
     * stage every byte through gpumemcpy, and GPU 0's refusal is logged once
     * with @a reason */
    void expect_staged(const std::string &reason) {
        const std::vector<size_t> sizes = {8, 100000, (4 << 20) + 3};
        const uint64_t total = std::accumulate(sizes.begin(), sizes.end(),
                                               (uint64_t)0);
        log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
        lane_bytes receiver, sender;

        exchange(sizes, &receiver, &sender);
        EXPECT_EQ(0u, receiver.ipc + sender.ipc) << "gpumemipc moved bytes";
        EXPECT_LE(total, receiver.copy) << "the receiver did not stage "
                                           "through gpumemcpy";
        EXPECT_LE(total, sender.copy) << "the sender did not stage through "
                                         "gpumemcpy";
        EXPECT_EQ(1u, log.count({"GPU 0000:04:00.0 does not reach the memory "
                                 "of GPU 0000:07:00.0", reason,
                                 "another transport"}))
                << log.text();
    }

    /* Large messages from GPU 1 to GPU 0 go zero-copy through gpumemipc */
    void expect_zero_copy() {
        const std::vector<size_t> sizes = {100000, (4 << 20) + 3,
                                           (16 << 20) + 5};
        const uint64_t total = std::accumulate(sizes.begin(), sizes.end(),
                                               (uint64_t)0);
        lane_bytes receiver, sender;

        exchange(sizes, &receiver, &sender);
        EXPECT_LE(total, receiver.ipc + sender.ipc)
                << "the rendezvous did not go through gpumemipc";
        EXPECT_GT(total, receiver.copy + sender.copy)
                << "the messages were staged through gpumemcpy";
    }

    gpumem_test::temp_dir m_sysfs;
    gpumem_test::scoped_env m_topo;
    gpumem_test::scoped_env m_sysfs_root;
    gpumem_test::scoped_env m_facts;
};


/* ACS request and completion redirect on the switch's downstream ports
 * send peer requests up to a root complex that Linux does not list for
 * peer-to-peer (such machines corrupted P2P transfers silently): staged,
 * naming the receiver's port */
TEST_P(ipc_ucp_pascal,
       tag_under_a_switch_with_acs_redirect_is_staged_naming_the_port) {
    use_facts("acs-redirect");
    expect_staged("ACS redirects peer requests to the root complex on "
                  "bridge 0000:03:04.0");
}

/* The IOMMU translates the GPUs' requests, which a peer's BAR address does
 * not survive: staged, naming the IOMMU group */
TEST_P(ipc_ucp_pascal, tag_behind_a_translating_iommu_is_staged_naming_it) {
    use_facts("iommu");
    expect_staged("IOMMU group 30 translates the requests of 0000:04:00.0");
}

/* A 256 MiB BAR over 16 GiB of memory (as the emu has it: the export's in
 * whole 2 MiB pages): the peer cannot reach most of it, staged, naming the
 * peer's BAR */
TEST_P(ipc_ucp_pascal, tag_to_a_gpu_whose_bar_is_short_is_staged_naming_it) {
    use_facts("bar256m");
    expect_staged("BAR of 0000:07:00.0 is 268435456 bytes, smaller than its "
                  "17070817280 bytes of memory");
}

/* PCIe only, no NVLink: the switch carries peer requests, and UCP takes
 * gpumemipc's zero-copy over staging for large messages */
TEST_P(ipc_ucp_pascal, tag_of_large_messages_under_a_switch_is_zero_copy) {
    use_facts("p2p");
    expect_zero_copy();
}

/* The same with UCP's protocols chosen by the estimates (UCX_PROTO_ENABLE):
 * gpumemipc's path through the switch beats the staging pipeline */
TEST_P(ipc_ucp_pascal,
       tag_of_large_messages_under_a_switch_is_zero_copy_by_the_estimates) {
    use_facts("p2p");
    setenv("UCX_PROTO_ENABLE", "y", 1);
    expect_zero_copy();
    unsetenv("UCX_PROTO_ENABLE");
}

INSTANTIATE_TEST_SUITE_P(
        tls, ipc_ucp_pascal,
        testing::Values(ucp_setup{"posix,cma,gpumemcpy,gpumemipc", 0, 1}),
        setup_name);
