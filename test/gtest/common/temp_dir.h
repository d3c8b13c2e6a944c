/**
 * gpumem tests: temporary directories, and the emu machine's environment
 * that keeps its shared state in one.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TEMP_DIR_H_
#define GPUMEM_TEMP_DIR_H_

#include <sys/types.h>

#include <string>
#include <vector>


namespace gpumem_test {

/**
 * A directory of a test's own, removed with all it holds when the test is
 * done with it, whether the test passed or stopped on a failed assertion.
 * Nothing is made until make(): a test that skips before it makes none.
 */
class temp_dir {
public:
    temp_dir() = default;
    temp_dir(const temp_dir&) = delete;
    temp_dir &operator=(const temp_dir&) = delete;
    ~temp_dir();

    /* Makes @a parent/gpumem_<@a name>.XXXXXX; when it cannot, fails the
     * test, saying why, and returns false for the caller to ASSERT on */
    bool make(const std::string &name, const std::string &parent = "/tmp");

    /* The directory, "" when none is made */
    const std::string &path() const { return m_path; }

    /* The names of what it holds, sorted; "." and ".." are not among them */
    std::vector<std::string> entries() const;

    /* Removes the directory, which must be empty: when it is not, fails the
     * test, naming the directory, @a what is left in it and its entries,
     * and removes it with them. Where a test's end is an empty directory
     * (every GPU closed, nothing left shared), this is its assertion. */
    void expect_empty(const std::string &what);

    /* Removes the directory with all it holds; false when some of it stays.
     * The destructor does it, when the test has not. */
    bool remove();

private:
    std::string m_path;
    /* A child forked by a test and ending its own way leaves the parent's
     * directory alone */
    pid_t       m_owner = 0;
};


/**
 * The emu driver's settings of a test that reads them from the environment
 * (the device memory calls, UCT's and UCP's memory domains): its shared
 * state in a temporary directory (UCX_GPUMEM_EMU_SHM_DIR) and 64 MiB per
 * GPU (UCX_GPUMEM_EMU_VRAM_SIZE), so that every reader agrees.
 */
class emu_env {
public:
    emu_env() = default;
    emu_env(const emu_env&) = delete;
    emu_env &operator=(const emu_env&) = delete;
    /* unset(), when the test has not called it */
    ~emu_env();

    /* Makes the directory (gpumem_<@a name>) and sets both variables; when
     * it cannot, fails the test and returns false, setting nothing */
    bool set(const std::string &name);

    /* Unsets both and removes the directory, expecting it empty: every GPU
     * closed, nothing left shared; a failure names the directory */
    void unset();

    bool is_set() const { return !m_shm_dir.path().empty(); }
    const std::string &shm_dir() const { return m_shm_dir.path(); }

private:
    temp_dir m_shm_dir;
};

}

#endif
