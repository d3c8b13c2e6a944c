/**
 * gpumem tests: the emulated machine: its topology, its GPUs' facts and
 * their device addresses.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <common/channel.h>
#include <common/log_capture.h>
#include <common/temp_dir.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>


class emu_machine : public emu_test {
protected:
    static std::string host_name() {
        char name[256] = "";

        gethostname(name, sizeof(name) - 1);
        return name;
    }
};


TEST_F(emu_machine, builtin_topology_has_two_gpus_and_a_nic_under_one_switch)
{
    gpumem_topo_params_t params = {};
    gpumem_topo_t *topo;

    params.xml_buffer = gpumem_emu_builtin_topology;
    params.sysfs_root = "/nonexistent";
    ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &topo));

    ASSERT_EQ(2u, topo->num_gpus);
    ASSERT_EQ(1u, topo->num_nics);
    for (unsigned i = 0; i < 2; ++i) {
        EXPECT_EQ(GPUMEM_TOPO_DEV_GPU, topo->devs[i].type);
        EXPECT_EQ(0x10de, topo->devs[i].vendor);
        EXPECT_EQ(0x0302, topo->devs[i].class_id);
        /* The machine is this one, so that every process agrees */
        EXPECT_EQ(host_name(), topo->devs[i].reach.machine);
        EXPECT_STREQ("GenuineIntel", topo->devs[i].reach.cpu_vendor);
    }
    EXPECT_EQ(GPUMEM_TOPO_DEV_NIC, topo->devs[2].type);
    EXPECT_STREQ("mlx5_0", topo->devs[2].name);
    EXPECT_EQ(0x15b3, topo->devs[2].vendor);

    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH,
              gpumem_topo_relation(&topo->devs[0].reach,
                                   &topo->devs[1].reach, NULL));
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH,
              gpumem_topo_relation(&topo->devs[0].reach,
                                   &topo->devs[2].reach, NULL));
    gpumem_topo_destroy(topo);
}

TEST_F(emu_machine, open_sets_the_facts_so_the_gpus_reach_each_other)
{
    gpumem_topo_verdict_t verdict;
    const gpumem_topo_reach_t *r0, *r1;

    ASSERT_EQ(2u, ops()->num_gpus(m_driver));
    r0 = ops()->reach(gpu(0));
    r1 = ops()->reach(gpu(1));

    EXPECT_TRUE(gpumem_topo_reaches(r0, r1, 0, &verdict)) << verdict.reason;
    EXPECT_TRUE(gpumem_topo_reaches(r1, r0, 0, &verdict)) << verdict.reason;
    EXPECT_FALSE(gpumem_topo_reaches(r0, r0, 0, &verdict));

    /* The topology the machine was opened on says so as well */
    EXPECT_TRUE(gpumem_topo_reaches(&m_topo->devs[0].reach,
                                    &m_topo->devs[1].reach, 0, &verdict))
            << verdict.reason;
    EXPECT_TRUE(gpumem_topo_dma_reaches(&m_topo->devs[2].reach,
                                        &m_topo->devs[0].reach, 0, &verdict))
            << verdict.reason;

    for (const gpumem_topo_reach_t *r : {r0, r1}) {
        EXPECT_TRUE(r->iommu.known);
        EXPECT_EQ(0u, r->iommu.value);
        EXPECT_TRUE(r->mem_size.known);
        EXPECT_EQ(VRAM_SIZE, r->mem_size.value);
        EXPECT_TRUE(r->bar_size.known);
        EXPECT_EQ(VRAM_SIZE, r->bar_size.value);
        EXPECT_TRUE(r->hb_id.known);
        for (unsigned i = 0; i < r->path_len; ++i) {
            EXPECT_TRUE(r->path[i].acs_ctrl.known);
            EXPECT_EQ(0u, r->path[i].acs_ctrl.value);
        }
    }
    EXPECT_EQ(VRAM_SIZE, ops()->vram_size(gpu(0)));
    EXPECT_EQ(VRAM_SIZE, ops()->bar_size(gpu(1)));
}

TEST_F(emu_machine, topology_memory_size_is_the_vram_size)
{
    std::string xml = gpumem_emu_builtin_topology;
    const std::string osdev = "name=\"emu0\"";
    size_t pos      = xml.find(">", xml.find(osdev)) + 1;

    /* GPU 0 says it has 32 MiB, as a CUDA OS device of hwloc would */
    xml.insert(pos, "<info name=\"CUDAGlobalMemorySize\" value=\"32768\"/>");
    reopen(config(), xml.c_str());

    EXPECT_EQ(32ul << 20, ops()->vram_size(gpu(0)));
    EXPECT_EQ(VRAM_SIZE, ops()->vram_size(gpu(1)));
}

TEST_F(emu_machine, bar_smaller_than_vram_stops_peer_reach)
{
    gpumem_emu_config_t small = config();
    gpumem_topo_verdict_t verdict;

    small.bar_size = 16ul << 20;
    reopen(small);

    EXPECT_EQ(16ul << 20, ops()->bar_size(gpu(0)));
    EXPECT_FALSE(gpumem_topo_reaches(ops()->reach(gpu(0)),
                                     ops()->reach(gpu(1)), 0, &verdict));
    EXPECT_NE(std::string::npos, std::string(verdict.reason).find("BAR"))
            << verdict.reason;
}

TEST_F(emu_machine, device_addresses_tell_their_gpu)
{
    gpumem_driver_mem_t *mem0 = alloc(0, PAGE);
    gpumem_driver_mem_t *mem1 = alloc(1, PAGE);
    uint64_t va0              = map(0, mem0);
    uint64_t va1              = map(1, mem1);
    unsigned index            = 99;
    int on_stack;

    EXPECT_TRUE(ops()->is_device_addr(m_driver, (void*)va0, &index));
    EXPECT_EQ(0u, index);
    EXPECT_TRUE(ops()->is_device_addr(m_driver, (void*)(va1 + 100), &index));
    EXPECT_EQ(1u, index);
    EXPECT_FALSE(ops()->is_device_addr(m_driver, &on_stack, &index));
    EXPECT_FALSE(ops()->is_device_addr(m_driver, mem0, &index));

    gpumem_test::emu_unmap(m_driver, 0, va0, PAGE);
    gpumem_test::emu_unmap(m_driver, 1, va1, PAGE);
    ops()->mem_free(mem0);
    ops()->mem_free(mem1);
}

TEST_F(emu_machine, bar_bus_address_is_fixed_per_gpu)
{
    uint64_t bus0 = ops()->bar_bus_addr(gpu(0));
    uint64_t bus1 = ops()->bar_bus_addr(gpu(1));

    EXPECT_NE(bus0, bus1);
    /* Far enough apart for a BAR of the whole VRAM each */
    EXPECT_GE((bus0 > bus1) ? (bus0 - bus1) : (bus1 - bus0), VRAM_SIZE);

    /* Another open of the machine gives the same */
    reopen(config());
    EXPECT_EQ(bus0, ops()->bar_bus_addr(gpu(0)));
    EXPECT_EQ(bus1, ops()->bar_bus_addr(gpu(1)));
}

TEST_F(emu_machine, topology_without_gpu_is_refused)
{
    std::string xml = gpumem_emu_builtin_topology;
    gpumem_driver_t *driver;
    gpumem_topo_t *topo;
    size_t pos;

    /* The GPUs' functions become network controllers */
    while ((pos = xml.find("pci_type=\"0302")) != std::string::npos) {
        xml.replace(pos, 14, "pci_type=\"0200");
    }

    close();
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              open_machine(config(), &topo, &driver, xml.c_str()));
    expect_log("no GPU to emulate");
}

/* An empty directory would put the shared state at the root */
TEST_F(emu_machine, empty_shared_memory_directory_is_refused) {
    gpumem_emu_config_t empty = config();
    gpumem_driver_t *driver   = NULL;
    gpumem_topo_t *topo       = NULL;

    empty.shm_dir = "";
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              open_machine(empty, &topo, &driver));
    expect_log("(UCX_GPUMEM_EMU_SHM_DIR) is empty");
    EXPECT_TRUE(driver == NULL);
    close_machine(topo, NULL);
}

/* A full shared directory: the state is backed when the machine opens, so
 * the open fails, saying why, instead of every process taking SIGBUS when
 * its pages are first touched */
TEST_F(emu_machine, a_full_shared_directory_fails_the_open_naming_it) {
    gpumem_emu_config_t full = config();
    gpumem_driver_t *driver  = NULL;
    gpumem_topo_t *topo      = NULL;
    gpumem_test::temp_dir dir;
    ucs_status_t status;

    ASSERT_TRUE(dir.make("full"));
    if (mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=64k") != 0) {
        int err = errno;
        GTEST_SKIP() << "cannot mount a 64 KiB tmpfs to fill: "
                     << strerror(err);
    }

    full.shm_dir = dir.path().c_str();
    status       = open_machine(full, &topo, &driver);
    EXPECT_NE(UCS_OK, status);
    expect_log(std::string("cannot reserve the"));
    if (driver != NULL) {
        close_machine(topo, driver);
    } else {
        close_machine(topo, NULL);
    }

    EXPECT_EQ(0, umount(dir.path().c_str())) << strerror(errno);
    dir.expect_empty("files");
}

/* A shared directory this user may not write, or that does not exist:
 * the open says which, and what the directory must be */
TEST_F(emu_machine, an_unwritable_shared_directory_is_named_as_such) {
    const uid_t other      = 65534;
    gpumem_emu_config_t ro = config();
    gpumem_test::temp_dir dir;
    pid_t pid;

    if (geteuid() != 0) {
        GTEST_SKIP() << "acting as another user needs root";
    }
    ASSERT_TRUE(dir.make("readonly"));
    ASSERT_EQ(0, chmod(dir.path().c_str(), 0555));
    ro.shm_dir = dir.path().c_str();

    pid = fork_child([&]() {
        gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
        gpumem_driver_t *child_driver = NULL;
        gpumem_topo_t *child_topo     = NULL;
        gpumem_emu_config_t missing   = ro;
        std::string gone              = dir.path() + "/none";
        ucs_status_t status;

        EMU_CHILD_CHECK((setgid(other) == 0) && (setuid(other) == 0));
        status = open_machine(ro, &child_topo, &child_driver);
        close_machine(child_topo, NULL);
        EMU_CHILD_CHECK(status != UCS_OK);
        EMU_CHILD_CHECK(log.count({"Permission denied", "UCX_GPUMEM_EMU_"
                                   "SHM_DIR must be a directory this user "
                                   "may write"}) >= 1);

        missing.shm_dir = gone.c_str();
        child_topo      = NULL;
        status          = open_machine(missing, &child_topo, &child_driver);
        close_machine(child_topo, NULL);
        EMU_CHILD_CHECK(status != UCS_OK);
        EMU_CHILD_CHECK(log.count({"No such file or directory",
                                   "UCX_GPUMEM_EMU_SHM_DIR"}) >= 1);
        return 0;
    });
    EXPECT_EQ(0, wait_child(pid));
    ASSERT_EQ(0, chmod(dir.path().c_str(), 0700));
    dir.expect_empty("files");
}

/* The names of the files of a machine's shared state in @a dir */
static std::vector<std::string> emu_machine_state_files(const char *dir)
{
    std::vector<std::string> names;
    struct dirent *entry;
    DIR *d = opendir(dir);

    while ((d != NULL) && ((entry = readdir(d)) != NULL)) {
        if (entry->d_name[0] != '.') {
            names.push_back(std::string(dir) + "/" + entry->d_name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return names;
}

/* The state files' names are predictable (user, machine, GPU): another
 * user may make this user's first in a shared directory. The open is then
 * refused, naming the files' owner and what to do, whichever user is the
 * victim; and no user reads another's files */
TEST_F(emu_machine, another_users_state_files_are_refused_naming_the_owner) {
    const uid_t other = 65534;
    gpumem_emu_config_t shared = config();
    std::vector<std::string> names;
    gpumem_driver_t *driver = NULL;
    gpumem_topo_t *topo     = NULL;
    gpumem_test::temp_dir dir;
    pid_t pid;

    if (geteuid() != 0) {
        GTEST_SKIP() << "acting as another user needs root";
    }
    ASSERT_TRUE(dir.make("users"));
    ASSERT_EQ(0, chmod(dir.path().c_str(), 01777))
            << "a directory like /dev/shm";
    shared.shm_dir = dir.path().c_str();

    /* The names this user's machine takes */
    ASSERT_EQ(UCS_OK, open_machine(shared, &topo, &driver));
    names = emu_machine_state_files(dir.path().c_str());
    ASSERT_FALSE(names.empty());

    /* No other user reads them */
    pid = fork_child([&]() {
        EMU_CHILD_CHECK((setgid(other) == 0) && (setuid(other) == 0));
        for (const std::string &name : names) {
            EMU_CHILD_CHECK((open(name.c_str(), O_RDONLY) < 0) &&
                            (errno == EACCES));
        }
        return 0;
    });
    EXPECT_EQ(0, wait_child(pid));
    close_machine(topo, driver);
    ASSERT_TRUE(emu_machine_state_files(dir.path().c_str()).empty());

    /* The other user makes them first: this user is refused, told whose */
    pid = fork_child([&]() {
        EMU_CHILD_CHECK((setgid(other) == 0) && (setuid(other) == 0));
        for (const std::string &name : names) {
            int fd = open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            EMU_CHILD_CHECK(fd >= 0);
            ::close(fd);
        }
        return 0;
    });
    ASSERT_EQ(0, wait_child(pid));
    topo = NULL;
    EXPECT_NE(UCS_OK, open_machine(shared, &topo, &driver));
    expect_log("belongs to user 65534, not to this process's user 0: set "
               "UCX_GPUMEM_EMU_SHM_DIR");
    close_machine(topo, NULL);
    for (const std::string &name : names) {
        EXPECT_EQ(0, unlink(name.c_str()));
    }

    /* This user makes the other's first: the other, who cannot open them,
     * is told whose they are */
    for (std::string name : names) {
        size_t pos = name.find("/gpumem-emu.0.");
        ASSERT_NE(std::string::npos, pos) << name;
        name.replace(pos, 14, "/gpumem-emu.65534.");
        int fd = open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        ASSERT_GE(fd, 0) << name;
        ::close(fd);
    }
    pid = fork_child([&]() {
        gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
        gpumem_driver_t *child_driver = NULL;
        gpumem_topo_t *child_topo     = NULL;
        ucs_status_t status;

        EMU_CHILD_CHECK((setgid(other) == 0) && (setuid(other) == 0));
        status = open_machine(shared, &child_topo, &child_driver);
        close_machine(child_topo, NULL);
        EMU_CHILD_CHECK(status != UCS_OK);
        EMU_CHILD_CHECK(log.count({"belongs to user 0, not to this process's "
                                   "user 65534"}) >= 1);
        return 0;
    });
    EXPECT_EQ(0, wait_child(pid));
    for (const std::string &name :
         emu_machine_state_files(dir.path().c_str())) {
        EXPECT_EQ(0, unlink(name.c_str()));
    }
    dir.expect_empty("files");
}
