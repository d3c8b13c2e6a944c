/**
 * gpumem tests: UCP on the IPC transport where the kernel refuses this
 * process another's descriptors, as a container runtime's default seccomp
 * profile refuses pidfd_getfd(2): device buffers still move, every byte
 * right; zero-copy where the driver needs no descriptor of the peer (the
 * emu driver's memory is opened by path), staged otherwise, with the reason
 * said once per peer and no remote key failing.
 *
 * See file LICENSE for terms.
 */

#include "ipc_ucp_test.h"

#include <common/log_capture.h>
#include <test/denied/syscall_filter.h>

#include <sys/syscall.h>

#include <cerrno>


using gpumem_test::log_capture;
using gpumem_test::setup_name;
using gpumem_test::ucp_setup;


class ipc_ucp_denied : public ipc_ucp {
protected:
    virtual void SetUp() {
        char why[256];

        ipc_ucp::SetUp();
        if (gpumem_test_syscall_filter_works(why, sizeof(why)) != 0) {
            GTEST_SKIP() << "no seccomp filter can refuse pidfd_getfd here: "
                         << why;
        }
    }
};

/* Both processes under the filter (a child of the test installs it, and the
 * sender is its child): three rendezvous messages from one peer */
TEST_P(ipc_ucp_denied, tag_of_device_buffers_where_pidfd_getfd_is_denied) {
    const std::vector<size_t> sizes = {100000, (4 << 20) + 3, 200000};
    const uint64_t rndv_bytes       = 100000 + (4 << 20) + 3 + 200000;
    pid_t pid;

    pid = fork_child([&]() {
        gpumem_test::lane_bytes receiver, sender;
        char why[256];

        ASSERT_EQ(0, gpumem_test_deny_syscall(SYS_pidfd_getfd, EPERM, why,
                                              sizeof(why)))
                << why;
        log_capture log(UCS_LOG_LEVEL_WARN);

        exchange(sizes, &receiver, &sender);
        if (gpumem_test::driver_is_emu()) {
            EXPECT_LE(rndv_bytes, receiver.ipc + sender.ipc)
                    << "the rendezvous did not go through gpumemipc";
            EXPECT_EQ(0u, log.count({"pidfd_getfd"})) << log.text();
        } else {
            EXPECT_EQ(0u, receiver.ipc + sender.ipc)
                    << "gpumemipc moved bytes it could not have mapped";
            EXPECT_LE(rndv_bytes, receiver.copy + sender.copy)
                    << "the data were not staged";
            /* The receiver maps the sender's memory first: it says why it
             * cannot, once */
            EXPECT_EQ(1u, log.count({"cannot import the memory of process",
                                     "pidfd_getfd: Operation not permitted",
                                     "seccomp filter"}))
                    << log.text();
        }
        log.clear();
    });
    wait_child(pid);
}

INSTANTIATE_TEST_SUITE_P(
        tls, ipc_ucp_denied,
        testing::Values(ucp_setup{"posix,cma,gpumemcpy,gpumemipc", 0, 1}),
        setup_name);
