/**
 * gpumem tests: a machine of emu GPUs for the memory core's tests.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_MEM_TEST_H_
#define GPUMEM_MEM_TEST_H_

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <common/gpumem_test.h>
#include <common/temp_dir.h>

extern "C" {
#include <uct/gpumem/mem/gpumem_mem.h>
#include <uct/gpumem/mem/gpumem_phys.h>
#include <emu/machine/emu.h>
#include <ucs/sys/sys.h>
#ifdef HAVE_CUDA
#include <uct/gpumem/driver/cuda/cuda_driver.h>
#endif
}

#include <cstring>
#include <string>
#include <vector>


/*
 * Counts the page table writes the core asks of the real emu driver, and
 * the device address reservations it holds: its operations, each counted,
 * then done by the emu itself.
 */
struct mem_table_spy {
    static const gpumem_driver_ops_t *real;
    static unsigned                  writes;
    static int                       reservations; /* Held now */
    static unsigned                  last_flags; /* Of the last map */
    static gpumem_driver_ops_t       ops;

    static ucs_status_t pt_map_vram(gpumem_driver_gpu_t *gpu, uint64_t va,
                                    gpumem_driver_mem_t *mem, size_t offset,
                                    size_t size, unsigned flags) {
        ++writes;
        last_flags = flags;
        return real->pt_map_vram(gpu, va, mem, offset, size, flags);
    }

    static ucs_status_t pt_map_host(gpumem_driver_gpu_t *gpu, uint64_t va,
                                    void *host, size_t size,
                                    unsigned flags) {
        ++writes;
        last_flags = flags;
        return real->pt_map_host(gpu, va, host, size, flags);
    }

    static ucs_status_t pt_unmap(gpumem_driver_gpu_t *gpu, uint64_t va,
                                 size_t size) {
        ++writes;
        return real->pt_unmap(gpu, va, size);
    }

    static ucs_status_t va_reserve(gpumem_driver_gpu_t *gpu, size_t size,
                                   size_t align, uint64_t *va_p) {
        ucs_status_t status = real->va_reserve(gpu, size, align, va_p);

        reservations += (status == UCS_OK);
        return status;
    }

    static void va_release(gpumem_driver_gpu_t *gpu, uint64_t va,
                           size_t size) {
        --reservations;
        real->va_release(gpu, va, size);
    }

    /* The driver's operations with the table writes counted */
    static void install(gpumem_driver_t *driver) {
        real             = driver->ops;
        ops              = *real;
        ops.pt_map_vram  = pt_map_vram;
        ops.pt_map_host  = pt_map_host;
        ops.pt_unmap     = pt_unmap;
        ops.va_reserve   = va_reserve;
        ops.va_release   = va_release;
        writes           = 0;
        reservations     = 0;
        driver->ops      = &ops;
    }
};


/* Skips the running case, saying why, where the driver under test cannot
 * do what it needs: each of seed 003's deviations on a driver, named in
 * README.md, is one of the reasons below */
#define MEM_TEST_NEEDS(_cond, _why) \
    do { \
        if (!(_cond)) { \
            GTEST_SKIP() << "the " << m_driver->ops->name << " driver " \
                         << (_why); \
        } \
    } while (0)


class mem_core : public testing::Test {
protected:
    /* Why a case does not run on a driver (MEM_TEST_NEEDS) */
    static constexpr const char *NO_FAULTS =
            "injects no faults in this build (configure "
            "--enable-fault-injection)";
    static constexpr const char *NO_SUCH_FAULT =
            "cannot inject this fault: its calls that take addresses or "
            "write tables are CUDA's own (cuMemAddressReserve, cuMemMap)";
    static constexpr const char *LIVE_MACHINE =
            "runs the live machine's GPUs, not the machine this case opens";
    static constexpr const char *EMU_HOOK =
            "has no test hook to change its memory under a handle";
    static constexpr const char *NO_BAR =
            "maps no BAR for the CPU: Bar memory and BAR windows are "
            "refused (UCS_ERR_UNSUPPORTED)";
    static constexpr const char *NO_PHYS =
            "gives no bus address of its memory "
            "(GPUMEM_DRIVER_FLAG_NO_PHYS): bus refuses it";
    static constexpr const char *HOST_UVA =
            "maps system memory at its host address, once "
            "(GPUMEM_DRIVER_FLAG_HOST_UVA; mem_core_host_uva asserts it)";
    static constexpr const char *PROCESS_MAPS =
            "maps a peer's memory at addresses of the peer's own "
            "(GPUMEM_DRIVER_FLAG_PROCESS_MAPS; mem_core_host_uva asserts it)";
    static constexpr const char *NO_FORK =
            "has no GPU in a fork child, as CUDA has none";
    static constexpr const char *NOT_TAKEN =
            "keeps no released GPU taken from other processes (no "
            "keep_taken: CUDA cannot refuse another process's context)";

    bool is_emu() const {
        return gpumem_test::driver_is_emu();
    }

    bool injects_faults() const {
        return m_driver->ops->inject_fault != NULL;
    }

    /* Whether a build with fault injection injects @a fault: the emu every
     * fault, the cuda driver those of its own allocations, pins and
     * flushes */
    bool injects(gpumem_driver_fault_t fault) const {
        return is_emu() || (fault <= GPUMEM_DRIVER_FAULT_KERNEL_REFUSES);
    }

    bool driver_has(unsigned flag) const {
        return (m_driver->ops->flags & flag) != 0;
    }

    /* The words of the driver's log line for an injected refusal of an
     * allocation of @a size bytes of VRAM, and of a pin: the emu's are the
     * kernel's, the cuda driver's its own (its allocation in granules) */
    std::vector<std::string> alloc_refused(size_t size) const {
        if (is_emu()) {
            return {"the kernel refuses " + std::to_string(size) +
                    " bytes of VRAM"};
        }
        return {"allocation of", "bytes refused (injected fault)"};
    }

    std::vector<std::string> pin_refused() const {
        if (is_emu()) {
            return {"the kernel refuses to pin"};
        }
        return {"pin of", "refused (injected fault)"};
    }

    bool keeps_taken() const {
        return m_driver->ops->keep_taken != NULL;
    }

    /* The BAR covers the memory, or reaches() refuses peers (seed 003);
     * one test opens a machine with a smaller BAR */
    enum { VRAM_SIZE = 64 << 20, SMALL_BAR_SIZE = 32 << 20 };

    virtual void SetUp() {
        ASSERT_TRUE(m_shm_dir.make("mem"));
        ASSERT_NO_FATAL_FAILURE(open_machine(NULL));
    }

    virtual void TearDown() {
        close_machine();
        EXPECT_EQ(0u, shm_files()) << "shared memory left in "
                                   << m_shm_dir.path();
        EXPECT_TRUE(m_shm_dir.remove());
    }

    /* The GPU objects of the driver just opened, its tables spied on where
     * the case asked */
    void create_gpus() {
        if (m_spy_tables) {
            mem_table_spy::install(m_driver);
        }
        for (unsigned i = 0; i < m_driver->ops->num_gpus(m_driver); ++i) {
            gpumem_gpu_t *gpu;
            ASSERT_EQ(UCS_OK, gpumem_gpu_create(m_driver, i, &gpu));
            m_gpus.push_back(gpu);
        }
    }

    /* The live machine's GPUs through the cuda driver, where the suite
     * runs on it (GPUMEM_TEST_DRIVER=cuda), with the topology and facts
     * its settings name (the emulated CUDA's machine) */
    void open_cuda_machine() {
#ifdef HAVE_CUDA
        gpumem_topo_params_t params = {};

        params.xml_path   = getenv("UCX_GPUMEM_TOPO_XML");
        params.facts_path = getenv("UCX_GPUMEM_TOPO_FACTS");
        params.sysfs_root = getenv("UCX_GPUMEM_SYSFS_ROOT");
        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));
        ASSERT_EQ(UCS_OK, gpumem_cuda_open(m_topo, &m_driver));
        ASSERT_NO_FATAL_FAILURE(create_gpus());
        for (unsigned i = 0; i < m_gpus.size(); ++i) {
            m_vram_free_at_open.push_back(vram_free(i));
        }
        if (m_gpus.size() < 2) {
            GTEST_SKIP() << "the memory core's cases need two GPUs; the "
                         << "cuda driver has " << m_gpus.size();
        }
#else
        FAIL() << "the cuda driver was not built";
#endif
    }

    /* The built-in emu machine, or the GPUs of a real machine's export */
    void open_machine(const char *xml, size_t bar_size = VRAM_SIZE) {
        gpumem_topo_params_t params = {};
        gpumem_emu_config_t config  = {};
        std::string path;

        if (!gpumem_test::driver_is_emu()) {
            ASSERT_TRUE((xml == NULL) && (bar_size == VRAM_SIZE))
                    << "a case of another machine needs is_emu()";
            open_cuda_machine();
            return;
        }

        if (xml != NULL) {
            path            = std::string(GPUMEM_TEST_TOPO_DIR) + "/" + xml;
            params.xml_path = path.c_str();
        } else {
            params.xml_buffer = gpumem_emu_builtin_topology;
        }
        params.sysfs_root = "/nonexistent";
        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));

        config.vram_size       = VRAM_SIZE;
        config.bar_size        = bar_size;
        config.shm_dir         = m_shm_dir.path().c_str();
        config.copy_inline_max = 8192;
        ASSERT_EQ(UCS_OK, gpumem_emu_open(&config, m_topo, &m_driver));
        ASSERT_NO_FATAL_FAILURE(create_gpus());
        ASSERT_GE(m_gpus.size(), 2u);
    }

    void close_machine() {
        for (gpumem_gpu_t *gpu : m_gpus) {
            if (gpu != NULL) {
                gpumem_gpu_destroy(gpu);
            }
        }
        m_gpus.clear();
        /* A live machine's VRAM is all back once the GPUs went (the emu's
         * state files are checked at the end instead) */
        for (size_t i = 0; i < m_vram_free_at_open.size(); ++i) {
            EXPECT_EQ(m_vram_free_at_open[i], vram_free(i))
                    << "VRAM of GPU " << i << " not given back";
        }
        m_vram_free_at_open.clear();
        if (m_driver != NULL) {
            if (m_spy_tables) {
                m_driver->ops = mem_table_spy::real;
            }
            m_driver->ops->close(m_driver);
            m_driver = NULL;
        }
        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
            m_topo = NULL;
        }
    }

    unsigned shm_files() const {
        return m_shm_dir.entries().size();
    }

    gpumem_gpu_t *gpu(unsigned i) {
        return m_gpus[i];
    }

    gpumem_driver_gpu_t *dgpu(unsigned i) {
        return m_driver->ops->gpu(m_driver, i);
    }

    /* The VRAM free on GPU @a i; a failure fails the test */
    size_t vram_free(unsigned i) {
        size_t free_bytes = 0;

        EXPECT_EQ(UCS_OK, m_driver->ops->vram_free(dgpu(i), &free_bytes));
        return free_bytes;
    }

    /* Moves bytes with GPU @a i's copy engine, polling to the end */
    ucs_status_t copy(unsigned i, uint64_t dst, bool dst_dev, uint64_t src,
                      bool src_dev, size_t size) {
        gpumem_driver_copy_t op;
        ucs_status_t status;

        status = m_driver->ops->copy(dgpu(i), dst, dst_dev, src, src_dev,
                                     size, &op);
        while (status == UCS_INPROGRESS) {
            status = m_driver->ops->copy_poll(&op);
        }
        return status;
    }

    void write_dev(unsigned i, uint64_t addr, const std::string &data) {
        ASSERT_EQ(UCS_OK, copy(i, addr, true, (uintptr_t)data.data(), false,
                               data.size()));
    }

    std::string read_dev(unsigned i, uint64_t addr, size_t size) {
        std::string data(size, '\0');
        EXPECT_EQ(UCS_OK, copy(i, (uintptr_t)&data[0], false, addr, true,
                               size));
        return data;
    }

    gpumem_gpu_stats_t stats(unsigned i) {
        gpumem_gpu_stats_t s;
        gpumem_gpu_stats(gpu(i), &s);
        return s;
    }

    /* The machine's last NIC, a bus client, or NULL */
    const gpumem_topo_dev_t *last_nic() const {
        const gpumem_topo_dev_t *nic = NULL;

        for (unsigned i = 0; i < m_topo->num_devs; ++i) {
            if (m_topo->devs[i].type == GPUMEM_TOPO_DEV_NIC) {
                nic = &m_topo->devs[i];
            }
        }
        return nic;
    }

    /* The bus address of a device of the machine, as gpumem_bus takes it */
    static std::string bus_addr(const gpumem_topo_dev_t *dev) {
        char name[GPUMEM_TOPO_PCI_STR_MAX];

        return gpumem_pci_addr_str(&dev->reach.addr, name, sizeof(name));
    }

    gpumem_region_t *alloc(unsigned i, gpumem_kind_t kind, size_t size,
                           unsigned flags = 0) {
        gpumem_region_t *region = NULL;
        EXPECT_EQ(UCS_OK, gpumem_alloc(gpu(i), kind, size, flags, &region));
        return region;
    }

    gpumem_test::temp_dir      m_shm_dir;
    gpumem_topo_t              *m_topo   = NULL;
    gpumem_driver_t            *m_driver = NULL;
    std::vector<gpumem_gpu_t*> m_gpus;
    bool                       m_spy_tables = false; /* At the next open */
    std::vector<size_t>        m_vram_free_at_open; /* A live machine's */
};

#endif
