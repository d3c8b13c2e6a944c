/**
 * gpumem tests: the cuda driver on a CUDA device, through the memory core:
 * allocation, copies, system memory, handles between processes, dma-bufs
 * and the application's own allocations. Skipped where no device answers.
 *
 * See file LICENSE for terms.
 */

#include "cuda_test.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;


class cuda_device : public cuda_device_test {
protected:
    static std::vector<uint8_t> pattern(size_t size, unsigned seed) {
        std::vector<uint8_t> bytes(size);

        for (size_t i = 0; i < size; ++i) {
            bytes[i] = (uint8_t)((i * 131) ^ (i >> 9) ^ seed);
        }
        return bytes;
    }

    /* VRAM of GPU @a i that no allocation holds, as the driver says */
    size_t vram_free(unsigned i) {
        size_t free_bytes = 0;

        EXPECT_EQ(UCS_OK, m_driver->ops->vram_free(
                m_driver->ops->gpu(m_driver, i), &free_bytes));
        return free_bytes;
    }

    gpumem_region_t *alloc(unsigned i, size_t size,
                           gpumem_kind_t kind = GPUMEM_KIND_GPU) {
        gpumem_region_t *region = NULL;

        EXPECT_EQ(UCS_OK, gpumem_alloc(gpu(i), kind, size, 0, &region));
        return region;
    }

    /* Writes @a bytes to device memory at @a va and reads them back */
    void expect_round_trip(unsigned i, uint64_t va,
                           const std::vector<uint8_t> &bytes) {
        std::vector<uint8_t> back(bytes.size());

        ASSERT_EQ(UCS_OK, copy(i, va, true, (uintptr_t)bytes.data(), false,
                               bytes.size()));
        ASSERT_EQ(UCS_OK, copy(i, (uintptr_t)back.data(), false, va, true,
                               back.size()));
        EXPECT_TRUE(bytes == back);
    }
};

TEST_F(cuda_device, gpus_are_placed_and_sized) {
    for (unsigned i = 0; i < num_gpus(); ++i) {
        gpumem_driver_gpu_t *dgpu = m_driver->ops->gpu(m_driver, i);

        EXPECT_GT(m_driver->ops->vram_size(dgpu), 0u);
        EXPECT_GT(m_driver->ops->bar_size(dgpu), 0u);
        if (i > 0) {
            /* Topology order: PCI address order */
            EXPECT_LT(gpumem_pci_addr_cmp(
                    &m_driver->ops->reach(m_driver->ops->gpu(m_driver,
                                                             i - 1))->addr,
                    &m_driver->ops->reach(dgpu)->addr), 0);
        }
    }
}

TEST_F(cuda_device, alloc_small_and_large_round_trip) {
    for (size_t size : {(size_t)4096, (size_t)(1ul << 20),
                        (size_t)(16ul << 20) + 4096}) {
        gpumem_region_t *region = alloc(0, size);

        ASSERT_TRUE(region != NULL);
        EXPECT_GE(gpumem_region_size(region), size);
        expect_round_trip(0, gpumem_region_address(region),
                          pattern(size, size));
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    }
}

/* Seed 003: a release gives back what the function holds. CUDA cannot
 * turn the GPU's bus mastering off, so the release unmaps what the GPU
 * maps, and the regions' frees after it give their memory and addresses
 * back: the GPU's free memory is as before the allocation, nothing
 * logged */
TEST_F(cuda_device, release_gives_the_memory_back_at_the_frees) {
    const size_t size = 8ul << 20;
    size_t before     = vram_free(0);

    gpumem_region_t *region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    EXPECT_LE(vram_free(0) + size, before) << "the allocation holds VRAM";

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    EXPECT_EQ(before, vram_free(0)) << "VRAM not given back after the release";
}

/* The owner released while another GPU maps its memory: the memory stays
 * while that GPU maps it, and goes back at its free */
TEST_F(cuda_device, released_owners_memory_goes_back_at_the_peers_free) {
    const size_t size = 2ul << 20;
    gpumem_region_t *peer;
    size_t before;

    if (num_gpus() < 2) {
        GTEST_SKIP() << "one GPU: no peer to map the memory";
    }
    before = vram_free(0);
    gpumem_region_t *region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_map_peer(gpu(1), region, &peer));

    gpumem_gpu_release(gpu(0));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    expect_round_trip(1, gpumem_region_address(peer), pattern(size, 7));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(1), peer));
    EXPECT_EQ(before, vram_free(0))
            << "VRAM not given back after the peer's free";
}

TEST_F(cuda_device, device_to_device_copy) {
    const size_t size           = 8ul << 20;
    gpumem_region_t *a          = alloc(0, size);
    gpumem_region_t *b          = alloc(0, size);
    std::vector<uint8_t> bytes  = pattern(size, 3);
    std::vector<uint8_t> back(size);

    ASSERT_TRUE((a != NULL) && (b != NULL));
    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(a), true,
                           (uintptr_t)bytes.data(), false, size));
    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(b), true,
                           gpumem_region_address(a), true, size));
    ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)back.data(), false,
                           gpumem_region_address(b), true, size));
    EXPECT_TRUE(bytes == back);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), a));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), b));
}

TEST_F(cuda_device, map_host_reached_at_host_address) {
    const size_t size          = 1ul << 20;
    std::vector<uint8_t> bytes = pattern(size, 5);
    gpumem_region_t *dev       = alloc(0, size);
    gpumem_region_t *host;
    void *buf                  = NULL;

    ASSERT_EQ(0, posix_memalign(&buf, 4096, size));
    memset(buf, 0, size);
    ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), buf, size, &host));
    EXPECT_EQ((uintptr_t)buf, gpumem_region_address(host));

    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(dev), true,
                           (uintptr_t)bytes.data(), false, size));
    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(host), true,
                           gpumem_region_address(dev), true, size));
    EXPECT_EQ(0, memcmp(buf, bytes.data(), size));

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), host));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), dev));
    free(buf);
}

TEST_F(cuda_device, host_alloc_reached_by_cpu_and_gpu) {
    const size_t size          = 256ul << 10;
    std::vector<uint8_t> bytes = pattern(size, 7);
    gpumem_region_t *host      = alloc(0, size, GPUMEM_KIND_HOST);
    gpumem_region_t *dev       = alloc(0, size);

    ASSERT_TRUE((host != NULL) && (dev != NULL));
    ASSERT_TRUE(gpumem_region_host(host) != NULL);
    memcpy(gpumem_region_host(host), bytes.data(), size);
    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(dev), true,
                           gpumem_region_address(host), true, size));
    memset(gpumem_region_host(host), 0, size);
    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(host), true,
                           gpumem_region_address(dev), true, size));
    EXPECT_EQ(0, memcmp(gpumem_region_host(host), bytes.data(), size));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), dev));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), host));
}

TEST_F(cuda_device, export_import_in_process_shares_memory) {
    const size_t size          = 4ul << 20;
    std::vector<uint8_t> bytes = pattern(size, 11);
    std::vector<uint8_t> back(size);
    uint8_t handle[GPUMEM_EXPORT_MAX];
    gpumem_region_t *region, *imported;
    size_t length;

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_export(region, handle, &length));
    ASSERT_EQ(UCS_OK, gpumem_import(gpu(0), handle, length, &imported));
    EXPECT_NE(gpumem_region_address(region), gpumem_region_address(imported));

    ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(region), true,
                           (uintptr_t)bytes.data(), false, size));
    ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)back.data(), false,
                           gpumem_region_address(imported), true, size));
    EXPECT_TRUE(bytes == back);

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), imported));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

/* CUDA refuses every call in the child of a fork of a process that
 * initialized it: the driver's probe there says why */
TEST_F(cuda_device, child_of_a_fork_is_told_why_it_has_no_gpu) {
    int status;
    pid_t pid;

    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        char why[256] = "";
        _exit(((gpumem_cuda_probe(why, sizeof(why)) == UCS_ERR_NO_DEVICE) &&
               (strstr(why, "child of a fork") != NULL)) ? 0 : 1);
    }
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
        << "the child's probe did not say it runs in the child of a fork";
}

/* The handle names the allocation as its owner made it, not the
 * granularity's pages that map it: an importer's region is of the same
 * size, which is what a remote key claims */
TEST_F(cuda_device, import_under_the_granularity_has_the_owners_size) {
    const size_t size = 1ul << 20;
    uint8_t handle[GPUMEM_EXPORT_MAX];
    gpumem_region_t *region, *imported;
    size_t length;

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_export(region, handle, &length));
    ASSERT_EQ(UCS_OK, gpumem_import(gpu(0), handle, length, &imported));
    EXPECT_EQ(gpumem_region_size(region), gpumem_region_size(imported));
    expect_round_trip(0, gpumem_region_address(imported), pattern(size, 5));

    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), imported));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

/* The handle of @a region's memory, as the driver exports it */
static gpumem_cuda_handle_t driver_handle(gpumem_driver_t *driver,
                                          gpumem_region_t *region,
                                          std::vector<uint8_t> *wire_p)
{
    gpumem_cuda_handle_t handle = {};
    gpumem_driver_mem_t *vram;
    size_t offset, length;

    wire_p->resize(GPUMEM_DRIVER_EXPORT_MAX);
    EXPECT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
    EXPECT_EQ(UCS_OK, driver->ops->mem_export(vram, wire_p->data(),
                                              &length));
    wire_p->resize(length);
    EXPECT_EQ(UCS_OK, gpumem_cuda_handle_unpack(wire_p->data(), length,
                                                &handle));
    return handle;
}

/* A key of memory its owner freed names that allocation: the owner's next
 * allocation, which has the freed one's fd number, is not imported for it */
TEST_F(cuda_device, import_of_a_freed_allocations_key_is_refused) {
    const size_t size         = 2ul << 20;
    gpumem_driver_gpu_t *dgpu = m_driver->ops->gpu(m_driver, 0);
    std::vector<uint8_t> stale_wire, fresh_wire;
    gpumem_cuda_handle_t stale, fresh;
    gpumem_region_t *region;
    gpumem_driver_mem_t *mem;

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    stale = driver_handle(m_driver, region, &stale_wire);
    EXPECT_NE(0u, stale.broker);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    fresh = driver_handle(m_driver, region, &fresh_wire);
    EXPECT_EQ(stale.fd, fresh.fd) << "the fd number was not reused: the "
                                     "case is not the one of a stale key";
    EXPECT_NE(stale.alloc_id, fresh.alloc_id);

    EXPECT_EQ(UCS_ERR_NO_ELEM, m_driver->ops->mem_import(
            dgpu, stale_wire.data(), stale_wire.size(), &mem));
    expect_log("freed: the key is stale");

    ASSERT_EQ(UCS_OK, m_driver->ops->mem_import(dgpu, fresh_wire.data(),
                                                fresh_wire.size(), &mem));
    m_driver->ops->mem_free(mem);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

/* Where the exporter's broker does not answer, the fd is taken by its
 * number */
TEST_F(cuda_device, import_takes_the_fd_by_pidfd_without_a_broker) {
    const size_t size         = 2ul << 20;
    gpumem_driver_gpu_t *dgpu = m_driver->ops->gpu(m_driver, 0);
    std::vector<uint8_t> wire;
    gpumem_cuda_handle_t handle;
    gpumem_region_t *region;
    gpumem_driver_mem_t *mem;
    size_t length;

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    handle         = driver_handle(m_driver, region, &wire);
    handle.broker ^= 1;
    wire.resize(GPUMEM_DRIVER_EXPORT_MAX);
    ASSERT_EQ(UCS_OK, gpumem_cuda_handle_pack(&handle, wire.data(),
                                              wire.size(), &length));
    ASSERT_EQ(UCS_OK, m_driver->ops->mem_import(dgpu, wire.data(), length,
                                                &mem));
    EXPECT_EQ(size, mem->size);
    m_driver->ops->mem_free(mem);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(cuda_device, device_addresses_are_known_with_their_allocation) {
    const size_t size       = 2ul << 20;
    gpumem_region_t *region = alloc(0, size);
    gpumem_driver_addr_attr_t attr;
    unsigned index;
    int on_stack;

    ASSERT_TRUE(region != NULL);
    EXPECT_TRUE(m_driver->ops->is_device_addr(
            m_driver, (void*)(gpumem_region_address(region) + 100), &index));
    EXPECT_EQ(0u, index);
    EXPECT_FALSE(m_driver->ops->is_device_addr(m_driver, &on_stack, &index));

    ASSERT_TRUE(m_driver->ops->addr_query != NULL);
    ASSERT_EQ(UCS_OK, m_driver->ops->addr_query(
            m_driver, (void*)(gpumem_region_address(region) + 100), &attr));
    EXPECT_EQ(gpumem_region_address(region), attr.base);
    EXPECT_GE(attr.size, size);
    EXPECT_NE(0u, attr.buffer_id);
    EXPECT_EQ(UCS_ERR_NO_ELEM, m_driver->ops->addr_query(m_driver, &on_stack,
                                                         &attr));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(cuda_device, reused_address_has_new_buffer_id) {
    const size_t size = 2ul << 20;
    gpumem_driver_addr_attr_t first, second;
    gpumem_region_t *region;

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, m_driver->ops->addr_query(
            m_driver, (void*)gpumem_region_address(region), &first));
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));

    region = alloc(0, size);
    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, m_driver->ops->addr_query(
            m_driver, (void*)gpumem_region_address(region), &second));
    EXPECT_NE(first.buffer_id, second.buffer_id);
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

TEST_F(cuda_device, dmabuf_for_nic_or_clear_refusal) {
    gpumem_region_t *region = alloc(0, 2ul << 20);
    gpumem_driver_mem_t *vram;
    size_t offset, dmabuf_offset;
    ucs_status_t status;
    int fd;

    ASSERT_TRUE(region != NULL);
    ASSERT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
    status = m_driver->ops->dmabuf_export(vram, &fd, &dmabuf_offset);
    if (status == UCS_OK) {
        EXPECT_GE(fd, 0);
        EXPECT_EQ(0u, dmabuf_offset);
        close(fd);
    } else {
        /* The kernel or the driver offers none: a status, not a crash */
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, status);
    }
    EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
}

/*
 * Faults injected into the cuda driver, compiled in test builds only
 * (--enable-fault-injection): each fails the next matching operation once.
 */
class cuda_device_faults : public cuda_device {
protected:
    virtual void SetUp() {
        cuda_device::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        if (m_driver->ops->inject_fault == NULL) {
            GTEST_SKIP() << "the cuda driver's fault injection is not "
                            "compiled in (configure --enable-fault-injection)";
        }
    }
};

TEST_F(cuda_device_faults, injected_faults_fail_one_operation) {
    const gpumem_driver_ops_t *ops = m_driver->ops;
    gpumem_driver_gpu_t *dgpu      = ops->gpu(m_driver, 0);
    uint8_t page[4096] __attribute__((aligned(4096)));
    gpumem_driver_mem_t *mem;
    uint64_t va;
    void *host;

    ops->inject_fault(dgpu, GPUMEM_DRIVER_FAULT_NO_ROOM);
    EXPECT_EQ(UCS_ERR_NO_MEMORY, ops->mem_alloc(dgpu, 4096, 4096, 0, &mem));
    ops->inject_fault(dgpu, GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    EXPECT_EQ(UCS_ERR_IO_ERROR, ops->mem_alloc(dgpu, 4096, 4096, 0, &mem));
    expect_log("allocation of 4096 bytes refused (injected fault)");

    ops->inject_fault(dgpu, GPUMEM_DRIVER_FAULT_NO_ROOM);
    EXPECT_EQ(UCS_ERR_NO_MEMORY, ops->sys_alloc(dgpu, 4096, &host));
    ops->inject_fault(dgpu, GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    EXPECT_EQ(UCS_ERR_IO_ERROR, ops->pin(dgpu, page, sizeof(page)));
    expect_log("pin of 4096 bytes at");

    /* The unmap is done; its flush is what the fault leaves unconfirmed */
    ASSERT_EQ(UCS_OK, ops->mem_alloc(dgpu, 4096, 4096, 0, &mem));
    ASSERT_EQ(UCS_OK, ops->va_reserve(dgpu, 4096, 4096, &va));
    ASSERT_EQ(UCS_OK, ops->pt_map_vram(dgpu, va, mem, 0, 4096, 0));
    ops->inject_fault(dgpu, GPUMEM_DRIVER_FAULT_FLUSH_UNCONFIRMED);
    EXPECT_EQ(UCS_ERR_TIMED_OUT, ops->pt_unmap(dgpu, va, 4096));
    ops->va_release(dgpu, va, 4096);
    ops->mem_free(mem);

    /* Each fault failed one operation: the next ones succeed */
    ASSERT_EQ(UCS_OK, ops->sys_alloc(dgpu, 4096, &host));
    ops->sys_free(dgpu, host, 4096);
    ASSERT_EQ(UCS_OK, ops->pin(dgpu, page, sizeof(page)));
    ops->unpin(dgpu, page, sizeof(page));
}

/*
 * The driver is a guest in the application's threads: whatever context the
 * caller has current, none or one of its own, is current again after every
 * call. The caller's calls come from libcuda.so.1 itself (opened again: the
 * same library), not from the driver's table, which has no use for them.
 */
class cuda_device_caller_ctx : public cuda_device {
protected:
    typedef CUresult (*ctx_get_current_t)(CUcontext*);
    typedef CUresult (*ctx_create_t)(CUcontext*, unsigned, CUdevice);
    typedef CUresult (*ctx_destroy_t)(CUcontext);

    cuda_device_caller_ctx() : m_lib(NULL), m_get_current(NULL),
                               m_create(NULL), m_destroy(NULL) {}

    virtual void SetUp() {
        cuda_device::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }

        m_lib = dlopen(GPUMEM_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        ASSERT_TRUE(m_lib != NULL) << dlerror();
        *(void**)&m_get_current = dlsym(m_lib, "cuCtxGetCurrent");
        *(void**)&m_create      = dlsym(m_lib, "cuCtxCreate_v2");
        *(void**)&m_destroy     = dlsym(m_lib, "cuCtxDestroy_v2");
        ASSERT_TRUE(m_get_current != NULL);
    }

    virtual void TearDown() {
        if (m_lib != NULL) {
            dlclose(m_lib);
        }
        cuda_device::TearDown();
    }

    CUcontext current() const {
        CUcontext ctx = NULL;

        EXPECT_EQ(CUDA_SUCCESS, m_get_current(&ctx));
        return ctx;
    }

    /* Every operation of the driver that calls it, successful and refused,
     * each followed by a look at the caller's current context */
    void calls_keep(const std::string &caller, CUcontext expected) {
        const size_t size          = 2ul << 20;
        std::vector<uint8_t> bytes = pattern(size, 17);
        gpumem_driver_gpu_t *dgpu  = m_driver->ops->gpu(m_driver, 0);
        uint8_t wire[GPUMEM_DRIVER_EXPORT_MAX];
        uint8_t handle[GPUMEM_EXPORT_MAX];
        gpumem_region_t *region, *host, *mapped, *imported;
        gpumem_cuda_handle_t forged;
        gpumem_driver_addr_attr_t attr;
        gpumem_driver_mem_t *vram, *mem;
        gpumem_driver_t *other;
        size_t length, offset;
        void *buf = NULL;
        unsigned index;
        int fd, on_stack;

        auto expect_kept = [&](const char *after) {
            EXPECT_EQ(expected, current()) << caller << ", after " << after;
        };

        expect_kept("nothing");

        ASSERT_EQ(UCS_OK, gpumem_cuda_open(m_topo, &other));
        expect_kept("open");
        other->ops->release(other->ops->gpu(other, 0));
        expect_kept("release");
        other->ops->close(other);
        expect_kept("close");

        region = alloc(0, size);
        ASSERT_TRUE(region != NULL);
        expect_kept("alloc");
        ASSERT_EQ(UCS_OK, copy(0, gpumem_region_address(region), true,
                               (uintptr_t)bytes.data(), false, size));
        expect_kept("copy");

        host = alloc(0, 64ul << 10, GPUMEM_KIND_HOST);
        ASSERT_TRUE(host != NULL);
        expect_kept("alloc of system memory");
        ASSERT_EQ(0, posix_memalign(&buf, 4096, size));
        ASSERT_EQ(UCS_OK, gpumem_map_host(gpu(0), buf, size, &mapped));
        expect_kept("map_host");

        ASSERT_EQ(UCS_OK, gpumem_export(region, handle, &length));
        ASSERT_EQ(UCS_OK, gpumem_import(gpu(0), handle, length, &imported));
        expect_kept("export and import");

        EXPECT_TRUE(m_driver->ops->is_device_addr(
                m_driver, (void*)gpumem_region_address(region), &index));
        EXPECT_FALSE(m_driver->ops->is_device_addr(m_driver, &on_stack,
                                                   &index));
        EXPECT_EQ(UCS_OK, m_driver->ops->addr_query(
                m_driver, (void*)gpumem_region_address(region), &attr));
        EXPECT_EQ(UCS_ERR_NO_ELEM, m_driver->ops->addr_query(
                m_driver, &on_stack, &attr));
        expect_kept("address queries");

        ASSERT_EQ(UCS_OK, gpumem_region_vram(region, &vram, &offset));
        if (m_driver->ops->dmabuf_export(vram, &fd, &offset) == UCS_OK) {
            close(fd);
        }
        expect_kept("dma-buf export");

        /* Refused by the driver after the push: the handle of this
         * process's memory, with no broker and an fd that is no memory's */
        ASSERT_EQ(UCS_OK, m_driver->ops->mem_export(vram, wire, &length));
        ASSERT_EQ(UCS_OK, gpumem_cuda_handle_unpack(wire, length, &forged));
        forged.broker = 0;
        forged.fd     = open("/dev/null", O_RDONLY);
        ASSERT_GE(forged.fd, 0);
        ASSERT_EQ(UCS_OK, gpumem_cuda_handle_pack(&forged, wire, sizeof(wire),
                                                  &length));
        EXPECT_NE(UCS_OK, m_driver->ops->mem_import(dgpu, wire, length,
                                                    &mem));
        close(forged.fd);
        expect_kept("a refused import");

        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), imported));
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), mapped));
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), host));
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
        expect_kept("free");
        free(buf);
    }

    void *             m_lib;
    ctx_get_current_t  m_get_current;
    ctx_create_t       m_create;
    ctx_destroy_t      m_destroy;
};

TEST_F(cuda_device_caller_ctx, is_current_again_after_every_call) {
    /* A thread of its own: nothing is current there yet */
    std::thread([this] {
        calls_keep("no context current", NULL);
    }).join();
    expect_log("cuMemImportFromShareableHandle failed");

    if ((m_create == NULL) || (m_destroy == NULL)) {
        std::cout << "[   NOTE   ] " << GPUMEM_CUDA_LIBRARY << " has no "
                  << "cuCtxCreate_v2: no context of the caller's own"
                  << std::endl;
        return;
    }

    std::thread([this] {
        CUcontext ctx;
        CUdevice dev;

        ASSERT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuDeviceGet(&dev, 0));
        ASSERT_EQ(CUDA_SUCCESS, m_create(&ctx, 0, dev));
        calls_keep("a context of the caller's own", ctx);
        EXPECT_EQ(CUDA_SUCCESS, m_destroy(ctx));
    }).join();
    expect_log("cuMemImportFromShareableHandle failed");
}

/* The exporter of the two-process tests, run as a process of its own (a
 * CUDA process cannot fork a CUDA child): "vmm" exports memory the core
 * allocated, "legacy" memory the application allocated with cuMemAlloc,
 * "legacy-freed" such memory after freeing it and exporting the next
 * allocation, which takes the freed one's handle file's fd number */
TEST_F(cuda_device, export_child) {
    const char *out_env  = getenv("GPUMEM_TEST_CUDA_EXPORT_FD");
    const char *in_env   = getenv("GPUMEM_TEST_CUDA_WAIT_FD");
    const char *kind_env = getenv("GPUMEM_TEST_CUDA_EXPORT_KIND");
    const size_t size    = 3ul << 20;
    std::vector<uint8_t> bytes = pattern(size, 13);
    uint8_t handle[GPUMEM_EXPORT_MAX];
    gpumem_region_t *region = NULL;
    CUdeviceptr app_ptr     = 0;
    uint64_t address, base;
    size_t length, alloc_size;
    uint32_t length32;
    CUcontext ctx;
    CUdevice dev;
    char done;

    if ((out_env == NULL) || (in_env == NULL) || (kind_env == NULL)) {
        GTEST_SKIP() << "the exporter of the two-process tests, which run it";
    }

    const std::string kind(kind_env);
    if (kind != "vmm") {
        ASSERT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuDeviceGet(&dev, 0));
        ASSERT_EQ(CUDA_SUCCESS,
                  gpumem_cuda_api.cuDevicePrimaryCtxRetain(&ctx, dev));
        ASSERT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuCtxPushCurrent(ctx));
        ASSERT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuMemAlloc(&app_ptr, size));
        address = app_ptr;
    } else {
        region = alloc(0, size);
        ASSERT_TRUE(region != NULL);
        address = gpumem_region_address(region);
    }

    ASSERT_EQ(UCS_OK, copy(0, address, true, (uintptr_t)bytes.data(), false,
                           size));
    if (region != NULL) {
        ASSERT_EQ(UCS_OK, gpumem_export(region, handle, &length));
    } else {
        /* Any address inside names the whole allocation */
        ASSERT_EQ(UCS_OK, gpumem_export_addr(gpu(0), (void*)(address + 4096),
                                             handle, &length, &base,
                                             &alloc_size));
        EXPECT_EQ(address, base);
        EXPECT_EQ(size, alloc_size);
    }

    if (kind == "legacy-freed") {
        uint8_t next[GPUMEM_EXPORT_MAX];
        size_t next_length;

        ASSERT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuMemFree(app_ptr));
        ASSERT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuMemAlloc(&app_ptr, size));
        ASSERT_EQ(UCS_OK, gpumem_export_addr(gpu(0), (void*)app_ptr, next,
                                             &next_length, &base,
                                             &alloc_size));
    }

    length32 = length;
    ASSERT_EQ((ssize_t)sizeof(length32),
              write(atoi(out_env), &length32, sizeof(length32)));
    ASSERT_EQ((ssize_t)length, write(atoi(out_env), handle, length));
    /* The memory stays until the importer is done */
    ASSERT_EQ(1, read(atoi(in_env), &done, 1));

    if (region != NULL) {
        EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), region));
    } else {
        EXPECT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuMemFree(app_ptr));
        EXPECT_EQ(CUDA_SUCCESS, gpumem_cuda_api.cuCtxPopCurrent(NULL));
        gpumem_cuda_api.cuDevicePrimaryCtxRelease(dev);
    }
}

class cuda_device_two_processes : public cuda_device {
protected:
    /* Runs export_child of @a kind, imports its handle onto GPU 0 and
     * checks the bytes it wrote, or that the import is refused */
    void import_from_child(const std::string &kind,
                           bool refused = false) {
        const size_t size          = 3ul << 20;
        std::vector<uint8_t> bytes = pattern(size, 13);
        std::vector<uint8_t> back(size);
        uint8_t handle[GPUMEM_EXPORT_MAX];
        int to_parent[2], to_child[2];
        std::string out_env, in_env, kind_env;
        gpumem_region_t *imported;
        std::vector<char*> envp;
        uint32_t length;
        int wstatus;
        char done = 1;
        pid_t pid;

        ASSERT_EQ(0, pipe2(to_parent, O_CLOEXEC));
        ASSERT_EQ(0, pipe2(to_child, O_CLOEXEC));

        /* The child's ends survive its exec */
        ASSERT_EQ(0, fcntl(to_parent[1], F_SETFD, 0));
        ASSERT_EQ(0, fcntl(to_child[0], F_SETFD, 0));
        out_env  = "GPUMEM_TEST_CUDA_EXPORT_FD=" +
                   std::to_string(to_parent[1]);
        in_env   = "GPUMEM_TEST_CUDA_WAIT_FD=" + std::to_string(to_child[0]);
        kind_env = "GPUMEM_TEST_CUDA_EXPORT_KIND=" + kind;

        for (char **env = environ; *env != NULL; ++env) {
            envp.push_back(*env);
        }
        envp.push_back(&out_env[0]);
        envp.push_back(&in_env[0]);
        envp.push_back(&kind_env[0]);
        envp.push_back(NULL);

        char filter[] = "--gtest_filter=cuda_device.export_child";
        char exe[]    = "/proc/self/exe";
        char *argv[]  = {exe, filter, NULL};
        ASSERT_EQ(0, posix_spawn(&pid, exe, NULL, NULL, argv, envp.data()));
        close(to_parent[1]);
        close(to_child[0]);

        /* The importer is the exporter's parent: pidfd_getfd(2) lets it
         * take the fd even under Yama's ptrace_scope 1 */
        ASSERT_EQ((ssize_t)sizeof(length),
                  read(to_parent[0], &length, sizeof(length)));
        ASSERT_LE(length, sizeof(handle));
        ASSERT_EQ((ssize_t)length, read(to_parent[0], handle, length));
        if (refused) {
            EXPECT_NE(UCS_OK, gpumem_import(gpu(0), handle, length,
                                            &imported));
            expect_log("legacy IPC handle of process");
        } else {
            ASSERT_EQ(UCS_OK, gpumem_import(gpu(0), handle, length,
                                            &imported));
            EXPECT_GE(gpumem_region_size(imported), size);
            ASSERT_EQ(UCS_OK, copy(0, (uintptr_t)back.data(), false,
                                   gpumem_region_address(imported), true,
                                   size));
            EXPECT_TRUE(bytes == back);
            EXPECT_EQ(UCS_OK, gpumem_free(gpu(0), imported));
        }

        EXPECT_EQ(1, write(to_child[1], &done, 1));
        ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
        EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0));
        close(to_parent[0]);
        close(to_child[1]);
    }
};

TEST_F(cuda_device_two_processes, vmm_memory_shared_by_fd) {
    import_from_child("vmm");
}

TEST_F(cuda_device_two_processes, application_memory_shared_by_legacy_ipc) {
    import_from_child("legacy");
}

/* As CUDA, the handle names one allocation: a handle of freed memory opens
 * nothing, although the exporter's next allocation has its file's number */
TEST_F(cuda_device_two_processes, legacy_handle_of_freed_memory_is_refused) {
    import_from_child("legacy-freed", true);
}
