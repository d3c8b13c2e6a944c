/**
 * gpumem tests: host memory the emulated GPUs reach: system memory and
 * pinned pages.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>


class emu_host : public emu_test {
protected:
    /* Gives up CAP_IPC_LOCK, with which mlock() ignores RLIMIT_MEMLOCK */
    static void drop_ipc_lock() {
        struct __user_cap_header_struct header = {};
        struct __user_cap_data_struct data[2]  = {};

        header.version = _LINUX_CAPABILITY_VERSION_3;
        if (syscall(SYS_capget, &header, data) != 0) {
            return;
        }
        data[0].effective &= ~(1u << CAP_IPC_LOCK);
        data[0].permitted &= ~(1u << CAP_IPC_LOCK);
        syscall(SYS_capset, &header, data);
    }

    /* Bytes the process has locked, from /proc */
    static size_t locked_bytes() {
        std::ifstream status("/proc/self/status");
        std::string line;

        while (std::getline(status, line)) {
            if (line.compare(0, 6, "VmLck:") == 0) {
                return std::stoul(line.substr(6)) * 1024;
            }
        }
        return 0;
    }
};


TEST_F(emu_host, system_memory_maps_for_its_gpu_without_a_pin)
{
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(3 * PAGE, 12);
    std::vector<uint8_t> read(3 * PAGE);
    uint64_t va0, va1;
    void *host;

    ASSERT_EQ(UCS_OK, ops()->sys_alloc(gpu(0), 3 * PAGE, &host));
    memcpy(host, pattern.data(), 3 * PAGE);

    ASSERT_EQ(UCS_OK, ops()->va_reserve(gpu(0), 3 * PAGE, 0, &va0));
    ASSERT_EQ(UCS_OK, ops()->pt_map_host(gpu(0), va0, host, 3 * PAGE,
                                         GPUMEM_DRIVER_MAP_UNCACHED));
    EXPECT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va0, 1, 3 * PAGE));
    EXPECT_EQ(pattern, read);

    /* Another GPU pins it first */
    ASSERT_EQ(UCS_OK, ops()->va_reserve(gpu(1), 3 * PAGE, 0, &va1));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->pt_map_host(gpu(1), va1, host, 3 * PAGE, 0));
    expect_log("not pinned for this GPU");
    ops()->va_release(gpu(1), va1, 3 * PAGE);

    gpumem_test::emu_unmap(m_driver, 0, va0, 3 * PAGE);
    ops()->sys_free(gpu(0), host, 3 * PAGE);
}

TEST_F(emu_host, pins_are_counted_so_an_unpin_keeps_other_pins)
{
    size_t before = locked_bytes();
    uint8_t *host = (uint8_t*)mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    ASSERT_NE(MAP_FAILED, (void*)host);
    ASSERT_EQ(UCS_OK, ops()->pin(gpu(0), host, 4 * PAGE));
    if (locked_bytes() == before) {
        ops()->unpin(gpu(0), host, 4 * PAGE);
        munmap(host, 4 * PAGE);
        GTEST_SKIP() << "mlock() locks nothing in this process (sanitizers "
                        "intercept it): the pin count cannot be observed";
    }
    ASSERT_EQ(UCS_OK, ops()->pin(gpu(1), host + PAGE + 10, PAGE));
    EXPECT_EQ(before + 4 * PAGE, locked_bytes());

    /* Pages 1 and 2 stay pinned for GPU 1 */
    ops()->unpin(gpu(0), host, 4 * PAGE);
    EXPECT_EQ(before + 2 * PAGE, locked_bytes());
    ops()->unpin(gpu(1), host + PAGE + 10, PAGE);
    EXPECT_EQ(before, locked_bytes());

    ops()->unpin(gpu(1), host, PAGE);
    expect_log("cannot unpin");
    munmap(host, 4 * PAGE);
}

TEST_F(emu_host, pin_beyond_memlock_limit_is_refused_naming_it)
{
    const size_t size = 1ul << 20;
    int result;

    /* In a child, which may give up the right to lock beyond the limit */
    result = wait_child(fork_child([&]() {
        struct rlimit limit;
        ucs_status_t status;
        void *host;

        drop_ipc_lock();
        EMU_CHILD_CHECK(getrlimit(RLIMIT_MEMLOCK, &limit) == 0);
        limit.rlim_cur = 64 * 1024;
        EMU_CHILD_CHECK(setrlimit(RLIMIT_MEMLOCK, &limit) == 0);
        host = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EMU_CHILD_CHECK(host != MAP_FAILED);

        status = ops()->pin(gpu(0), host, size);
        if (status == UCS_OK) {
            return 2;
        }
        EMU_CHILD_CHECK(status == UCS_ERR_EXCEEDS_LIMIT);
        expect_log("RLIMIT_MEMLOCK, 65536 bytes");
        return ::testing::Test::HasFailure() ? 1 : 0;
    }));

    if (result == 2) {
        GTEST_SKIP() << "this process may lock memory beyond "
                        "RLIMIT_MEMLOCK (CAP_IPC_LOCK)";
    }
    EXPECT_EQ(0, result);
}

TEST_F(emu_host, injected_faults_fail_one_allocation_or_pin)
{
    uint8_t page[PAGE] __attribute__((aligned(4096)));
    void *host;

    ops()->inject_fault(gpu(0), GPUMEM_DRIVER_FAULT_NO_ROOM);
    EXPECT_EQ(UCS_ERR_NO_MEMORY, ops()->sys_alloc(gpu(0), PAGE, &host));

    ops()->inject_fault(gpu(0), GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    EXPECT_EQ(UCS_ERR_REJECTED, ops()->pin(gpu(0), page, PAGE));
    expect_log("the kernel refuses to pin 4096 bytes");
    ops()->inject_fault(gpu(0), GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    EXPECT_EQ(UCS_ERR_REJECTED, ops()->sys_alloc(gpu(0), PAGE, &host));
    expect_log("the kernel refuses to allocate system memory");

    ASSERT_EQ(UCS_OK, ops()->pin(gpu(0), page, PAGE));
    ops()->unpin(gpu(0), page, PAGE);
    ASSERT_EQ(UCS_OK, ops()->sys_alloc(gpu(0), PAGE, &host));
    ops()->sys_free(gpu(0), host, PAGE);
    ops()->sys_free(gpu(0), host, PAGE);
    expect_log("not allocated by it");
}
