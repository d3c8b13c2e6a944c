/**
 * gpumem tests: temporary directories, and the emu machine's environment.
 *
 * See file LICENSE for terms.
 */

#include "temp_dir.h"
#include "gpumem_test.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>


namespace gpumem_test {

static int temp_dir_remove_entry(const char *path, const struct stat *, int,
                                 struct FTW *)
{
    /* Goes on past an entry that stays, removing what it can */
    remove(path);
    return 0;
}

temp_dir::~temp_dir()
{
    remove();
}

bool temp_dir::make(const std::string &name, const std::string &parent)
{
    std::string templ = parent + "/gpumem_" + name + ".XXXXXX";

    remove();
    if (mkdtemp(&templ[0]) == NULL) {
        ADD_FAILURE() << "mkdtemp " << templ << ": " << strerror(errno);
        return false;
    }
    m_path  = templ;
    m_owner = getpid();
    return true;
}

std::vector<std::string> temp_dir::entries() const
{
    std::vector<std::string> names;
    struct dirent *entry;
    DIR *dir;

    dir = m_path.empty() ? NULL : opendir(m_path.c_str());
    if (dir == NULL) {
        return names;
    }
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") && strcmp(entry->d_name, "..")) {
            names.push_back(entry->d_name);
        }
    }
    closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

void temp_dir::expect_empty(const std::string &what)
{
    std::string left;
    int err;

    if (m_path.empty()) {
        return;
    }
    if (rmdir(m_path.c_str()) == 0) {
        m_path.clear();
        return;
    }

    err = errno;
    for (const std::string &name : entries()) {
        left += " " + name;
    }
    ADD_FAILURE() << what << " left in " << m_path << ": " << strerror(err)
                  << (left.empty() ? "" : ":") << left;
    remove();
}

bool temp_dir::remove()
{
    bool removed;

    if (m_path.empty() || (getpid() != m_owner)) {
        return true;
    }
    /* Depth first, the links themselves and not what they point at */
    nftw(m_path.c_str(), temp_dir_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    removed = (access(m_path.c_str(), F_OK) != 0) && (errno == ENOENT);
    m_path.clear();
    return removed;
}


emu_env::~emu_env()
{
    unset();
}

bool emu_env::set(const std::string &name)
{
    /* Another driver's GPUs are the machine's, open for the process's
     * life: their state is theirs */
    if (!driver_is_emu()) {
        return true;
    }
    if (!m_shm_dir.make(name)) {
        return false;
    }
    setenv("UCX_GPUMEM_EMU_SHM_DIR", m_shm_dir.path().c_str(), 1);
    setenv("UCX_GPUMEM_EMU_VRAM_SIZE", "64m", 1);
    return true;
}

void emu_env::unset()
{
    if (!is_set()) {
        return;
    }
    unsetenv("UCX_GPUMEM_EMU_SHM_DIR");
    unsetenv("UCX_GPUMEM_EMU_VRAM_SIZE");
    m_shm_dir.expect_empty("emu state");
}

}
