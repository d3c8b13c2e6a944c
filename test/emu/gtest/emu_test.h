/**
 * gpumem tests: the emu driver's fixture: the built-in machine with its
 * shared state in a directory of its own, helpers that move bytes through
 * a driver, and a second process of the machine.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_TEST_H_
#define GPUMEM_EMU_TEST_H_

#include <common/gpumem_test.h>
#include <common/log_capture.h>
#include <common/temp_dir.h>

extern "C" {
#include <emu/machine/emu.h>
#include <ucs/debug/log_def.h>
}

#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <sys/types.h>


/* In a child process: a failed check ends it with the line as its status */
#define EMU_CHILD_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "child %d: %s:%d: %s failed\n", getpid(), \
                    __FILE__, __LINE__, #_cond); \
            return 1; \
        } \
    } while (0)


namespace gpumem_test {

/* Moves bytes with a GPU's copy engine and polls to the end; the polls
 * that were needed in @a polls_p */
ucs_status_t emu_copy(gpumem_driver_t *driver, unsigned gpu, uint64_t dst,
                      int dst_dev, uint64_t src, int src_dev, size_t size,
                      unsigned *polls_p = NULL);

/* Reserves addresses of a GPU and maps all of @a mem there: 0 on failure */
uint64_t emu_map(gpumem_driver_t *driver, unsigned gpu,
                 gpumem_driver_mem_t *mem);

void emu_unmap(gpumem_driver_t *driver, unsigned gpu, uint64_t va,
               size_t size);

/* Bytes that tell where they are: byte i of a pattern with @a seed */
std::vector<uint8_t> emu_pattern(size_t size, unsigned seed);


}


class emu_test : public testing::Test {
public:
    static const size_t VRAM_SIZE   = 64ul << 20;
    static const size_t PAGE        = 4096;
    static const size_t LARGE_PAGE  = 2ul << 20;
    static const size_t INLINE_MAX  = 8192;

protected:
    emu_test();

    virtual void SetUp();
    virtual void TearDown();

    /* The settings the tests' machines use */
    gpumem_emu_config_t config() const;

    /* Opens the emulated machine as any process of it does */
    ucs_status_t open_machine(const gpumem_emu_config_t &config,
                              gpumem_topo_t **topo_p,
                              gpumem_driver_t **driver_p,
                              const char *xml = NULL) const;
    static void close_machine(gpumem_topo_t *topo, gpumem_driver_t *driver);

    /* The fixture's machine anew, with other settings or topology */
    void reopen(const gpumem_emu_config_t &config, const char *xml = NULL);
    void close();

    const gpumem_driver_ops_t *ops() const { return m_driver->ops; }
    gpumem_driver_gpu_t *gpu(unsigned index) const;
    /* The VRAM free on GPU @a index; a failure fails the test */
    size_t vram_free(unsigned index) const;

    gpumem_driver_mem_t *alloc(unsigned gpu, size_t size,
                               size_t page_size = PAGE, int in_bar = 0);
    uint64_t map(unsigned gpu, gpumem_driver_mem_t *mem);
    ucs_status_t copy(unsigned gpu, uint64_t dst, int dst_dev, uint64_t src,
                      int src_dev, size_t size, unsigned *polls_p = NULL);

    /* Files in the machine's shared state directory */
    std::vector<std::string> shm_files() const;

    /* Runs @a body in a child process, which ends with its result */
    pid_t fork_child(const std::function<int()> &body);
    /* The child's exit status, or 128 + signal */
    static int wait_child(pid_t pid);

    /* An error or warning the test expects, taken off the log: each one not
     * expected fails the test */
    void expect_log(const std::string &text);
    void expect_no_log();

    gpumem_test::temp_dir m_shm_dir;
    gpumem_topo_t         *m_topo;
    gpumem_driver_t       *m_driver;

private:
    std::unique_ptr<gpumem_test::log_capture> m_log;
};

#endif
