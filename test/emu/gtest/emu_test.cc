/**
 * gpumem tests: the emu driver's fixture and helpers.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>


namespace gpumem_test {

ucs_status_t emu_copy(gpumem_driver_t *driver, unsigned gpu, uint64_t dst,
                      int dst_dev, uint64_t src, int src_dev, size_t size,
                      unsigned *polls_p)
{
    gpumem_driver_gpu_t *dgpu = driver->ops->gpu(driver, gpu);
    gpumem_driver_copy_t copy;
    unsigned polls = 0;
    ucs_status_t status;

    status = driver->ops->copy(dgpu, dst, dst_dev, src, src_dev, size, &copy);
    while (status == UCS_INPROGRESS) {
        status = driver->ops->copy_poll(&copy);
        ++polls;
    }
    if (polls_p != NULL) {
        *polls_p = polls;
    }
    return status;
}

uint64_t emu_map(gpumem_driver_t *driver, unsigned gpu,
                 gpumem_driver_mem_t *mem)
{
    gpumem_driver_gpu_t *dgpu = driver->ops->gpu(driver, gpu);
    uint64_t va;

    if (driver->ops->va_reserve(dgpu, mem->size, mem->page_size, &va) !=
        UCS_OK) {
        return 0;
    }
    if (driver->ops->pt_map_vram(dgpu, va, mem, 0, mem->size, 0) != UCS_OK) {
        driver->ops->va_release(dgpu, va, mem->size);
        return 0;
    }
    return va;
}

void emu_unmap(gpumem_driver_t *driver, unsigned gpu, uint64_t va,
               size_t size)
{
    gpumem_driver_gpu_t *dgpu = driver->ops->gpu(driver, gpu);

    EXPECT_EQ(UCS_OK, driver->ops->pt_unmap(dgpu, va, size));
    driver->ops->va_release(dgpu, va, size);
}

std::vector<uint8_t> emu_pattern(size_t size, unsigned seed)
{
    std::vector<uint8_t> bytes(size);
    size_t i;

    for (i = 0; i < size; ++i) {
        /* Differs from page to page, not only within one */
        bytes[i] = (uint8_t)((i * 131) + (i >> 12) + seed);
    }
    return bytes;
}


}


const size_t emu_test::VRAM_SIZE;
const size_t emu_test::PAGE;
const size_t emu_test::LARGE_PAGE;
const size_t emu_test::INLINE_MAX;

emu_test::emu_test() : m_topo(NULL), m_driver(NULL)
{
}

gpumem_emu_config_t emu_test::config() const
{
    gpumem_emu_config_t config;

    config.vram_size       = VRAM_SIZE;
    config.bar_size        = 0;
    config.shm_dir         = m_shm_dir.path().c_str();
    config.copy_inline_max = INLINE_MAX;
    return config;
}

ucs_status_t emu_test::open_machine(const gpumem_emu_config_t &config,
                                    gpumem_topo_t **topo_p,
                                    gpumem_driver_t **driver_p,
                                    const char *xml) const
{
    gpumem_topo_params_t params = {};
    ucs_status_t status;

    /* No fact of this machine's /sys applies to the emulated one */
    params.xml_buffer = (xml != NULL) ? xml : gpumem_emu_builtin_topology;
    params.sysfs_root = "/nonexistent";
    status            = gpumem_topo_load(&params, topo_p);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_emu_open(&config, *topo_p, driver_p);
    if (status != UCS_OK) {
        gpumem_topo_destroy(*topo_p);
        *topo_p = NULL;
    }
    return status;
}

void emu_test::close_machine(gpumem_topo_t *topo, gpumem_driver_t *driver)
{
    if (driver != NULL) {
        driver->ops->close(driver);
    }
    if (topo != NULL) {
        gpumem_topo_destroy(topo);
    }
}

void emu_test::SetUp()
{
    m_log.reset(new gpumem_test::log_capture(UCS_LOG_LEVEL_DIAG));
    ASSERT_TRUE(m_shm_dir.make("emu_test", "/dev/shm"));
    ASSERT_EQ(UCS_OK, open_machine(config(), &m_topo, &m_driver));
}

void emu_test::TearDown()
{
    close();
    expect_no_log();
    m_log.reset();

    /* Whatever happened, nothing is left in shared memory */
    EXPECT_EQ(std::vector<std::string>(), shm_files());
    m_shm_dir.remove();
}

void emu_test::close()
{
    close_machine(m_topo, m_driver);
    m_topo   = NULL;
    m_driver = NULL;
}

void emu_test::reopen(const gpumem_emu_config_t &config, const char *xml)
{
    close();
    ASSERT_EQ(UCS_OK, open_machine(config, &m_topo, &m_driver, xml));
}

gpumem_driver_gpu_t *emu_test::gpu(unsigned index) const
{
    return m_driver->ops->gpu(m_driver, index);
}

size_t emu_test::vram_free(unsigned index) const
{
    size_t free_bytes = 0;

    EXPECT_EQ(UCS_OK, ops()->vram_free(gpu(index), &free_bytes));
    return free_bytes;
}

gpumem_driver_mem_t *emu_test::alloc(unsigned gpu_index, size_t size,
                                     size_t page_size, int in_bar)
{
    gpumem_driver_mem_t *mem = NULL;

    EXPECT_EQ(UCS_OK, ops()->mem_alloc(gpu(gpu_index), size, page_size,
                                       in_bar, &mem));
    return mem;
}

uint64_t emu_test::map(unsigned gpu_index, gpumem_driver_mem_t *mem)
{
    uint64_t va = gpumem_test::emu_map(m_driver, gpu_index, mem);

    EXPECT_NE(0u, va);
    return va;
}

ucs_status_t emu_test::copy(unsigned gpu_index, uint64_t dst, int dst_dev,
                            uint64_t src, int src_dev, size_t size,
                            unsigned *polls_p)
{
    return gpumem_test::emu_copy(m_driver, gpu_index, dst, dst_dev, src,
                                 src_dev, size, polls_p);
}

std::vector<std::string> emu_test::shm_files() const
{
    return m_shm_dir.entries();
}

pid_t emu_test::fork_child(const std::function<int()> &body)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        /* Leaves the parent's objects alone: only exits */
        _exit(body());
    }
    EXPECT_GT(pid, 0) << strerror(errno);
    return pid;
}

int emu_test::wait_child(pid_t pid)
{
    int status;

    if (waitpid(pid, &status, 0) != pid) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) :
                               (128 + WTERMSIG(status));
}

void emu_test::expect_log(const std::string &text)
{
    m_log->expect(text);
}

void emu_test::expect_no_log()
{
    m_log->expect_none("unexpected log line: ");
}
