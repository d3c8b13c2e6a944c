/**
 * gpumem tests: the saved facts file round-trips, overrides what sysfs could
 * not read, and is refused whole when any line of it is wrong.
 *
 * See file LICENSE for terms.
 */

#include <common/log_capture.h>
#include <common/temp_dir.h>

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/topo/topo_facts.h>
#include <uct/gpumem/topo/topo_sysfs.h>
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>


class topo_facts : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(m_dir.make("topo_facts"));
        m_path = m_dir.path() + "/facts";
        m_errors.reset(new gpumem_test::log_capture(UCS_LOG_LEVEL_ERROR));
        m_topo = make_topo();
    }

    virtual void TearDown() {
        m_errors.reset();
        free_topo(m_topo);
        m_dir.remove();
    }

    static gpumem_pci_addr_t pci(uint16_t domain, uint8_t bus, uint8_t dev,
                                 uint8_t fn) {
        gpumem_pci_addr_t addr;

        addr.domain = domain;
        addr.bus    = bus;
        addr.dev    = dev;
        addr.fn     = fn;
        return addr;
    }

    static void init_reach(gpumem_topo_reach_t *reach, gpumem_pci_addr_t addr,
                           const std::vector<gpumem_pci_addr_t> &path,
                           uint8_t hb_bus) {
        reach->addr        = addr;
        reach->iommu_group = -1;
        reach->hb_domain   = 0;
        reach->hb_bus      = hb_bus;
        reach->path_len    = path.size();
        gpumem_topo_fact_unknown(&reach->iommu, "not read");
        gpumem_topo_fact_unknown(&reach->bar_size, "not read");
        gpumem_topo_fact_unknown(&reach->mem_size, "not read");
        gpumem_topo_fact_unknown(&reach->hb_id, "not read");
        for (size_t i = 0; i < path.size(); ++i) {
            reach->path[i].addr = path[i];
            gpumem_topo_fact_unknown(&reach->path[i].acs_ctrl, "not read");
        }
    }

    /*
     * Two GPUs under one switch (upstream port 32:00.0) below root port
     * 30:01.0 of host bridge 30, and a NIC below host bridge b0. No fact
     * is known.
     */
    static gpumem_topo_t *make_topo() {
        gpumem_topo_t *topo = (gpumem_topo_t*)calloc(1, sizeof(*topo));

        topo->num_devs = 3;
        topo->num_gpus = 2;
        topo->num_nics = 1;
        topo->devs     = (gpumem_topo_dev_t*)calloc(topo->num_devs,
                                                    sizeof(*topo->devs));

        topo->devs[0].type = GPUMEM_TOPO_DEV_GPU;
        strcpy(topo->devs[0].name, "cuda0");
        init_reach(&topo->devs[0].reach, pci(0, 0x34, 0, 0),
                   {pci(0, 0x33, 0, 0), pci(0, 0x32, 0, 0),
                    pci(0, 0x30, 1, 0)}, 0x30);

        topo->devs[1].type = GPUMEM_TOPO_DEV_GPU;
        strcpy(topo->devs[1].name, "cuda1");
        init_reach(&topo->devs[1].reach, pci(0, 0x35, 0, 0),
                   {pci(0, 0x33, 1, 0), pci(0, 0x32, 0, 0),
                    pci(0, 0x30, 1, 0)}, 0x30);

        topo->devs[2].type = GPUMEM_TOPO_DEV_NIC;
        strcpy(topo->devs[2].name, "mlx5_0");
        init_reach(&topo->devs[2].reach, pci(0, 0xb1, 0, 0),
                   {pci(0, 0xb0, 1, 0)}, 0xb0);
        return topo;
    }

    static void free_topo(gpumem_topo_t *topo) {
        if (topo != NULL) {
            free(topo->devs);
            free(topo);
        }
    }

    /* What a root run of the loader would have read */
    static void know_everything(gpumem_topo_t *topo) {
        gpumem_topo_reach_t *gpu0 = &topo->devs[0].reach;
        gpumem_topo_reach_t *gpu1 = &topo->devs[1].reach;
        gpumem_topo_reach_t *nic  = &topo->devs[2].reach;

        gpumem_topo_fact_set(&gpu0->iommu, 1);
        gpu0->iommu_group = 12;
        gpumem_topo_fact_set(&gpu0->bar_size, 32ull << 30);
        gpumem_topo_fact_set(&gpu0->mem_size, 80ull << 30);
        gpumem_topo_fact_set(&gpu0->hb_id, 0x10221480);
        gpumem_topo_fact_set(&gpu0->path[0].acs_ctrl, 0);
        gpumem_topo_fact_set(&gpu0->path[1].acs_ctrl, 0);
        gpumem_topo_fact_set(&gpu0->path[2].acs_ctrl, 0x001d);

        gpumem_topo_fact_set(&gpu1->iommu, 1);
        gpu1->iommu_group = 13;
        gpumem_topo_fact_set(&gpu1->bar_size, 256ull << 20);
        gpumem_topo_fact_set(&gpu1->hb_id, 0x10221480);
        gpumem_topo_fact_set(&gpu1->path[0].acs_ctrl,
                             GPUMEM_TOPO_ACS_REDIRECT);
        gpumem_topo_fact_set(&gpu1->path[1].acs_ctrl, 0);
        gpumem_topo_fact_set(&gpu1->path[2].acs_ctrl, 0x001d);

        gpumem_topo_fact_set(&nic->iommu, 0);
        gpumem_topo_fact_set(&nic->bar_size, 0);
        gpumem_topo_fact_set(&nic->hb_id, 0x80862030);
        gpumem_topo_fact_set(&nic->path[0].acs_ctrl, 0x005f);
    }

    void write_facts(const std::string &text) {
        std::ofstream file(m_path.c_str(), std::ios::binary);

        file << text;
        ASSERT_TRUE(file.good());
    }

    std::string read_facts() const {
        std::ifstream file(m_path.c_str());
        std::stringstream text;

        text << file.rdbuf();
        return text.str();
    }

    static void expect_fact_eq(const gpumem_topo_fact_t &expected,
                               const gpumem_topo_fact_t &actual,
                               const std::string &what) {
        EXPECT_EQ(expected.known, actual.known) << what;
        if (expected.known) {
            EXPECT_EQ(expected.value, actual.value) << what;
        }
    }

    /* Whether any error logged so far contains @a text */
    bool logged(const std::string &text) const {
        return m_errors->count({text}) > 0;
    }

    /* Errors are kept for the tests to read, and not printed */
    std::unique_ptr<gpumem_test::log_capture> m_errors;
    gpumem_test::temp_dir                     m_dir;
    std::string                               m_path;
    gpumem_topo_t                             *m_topo = NULL;
};


TEST_F(topo_facts, save_then_apply_restores_every_known_fact) {
    gpumem_topo_t *saved = make_topo();

    know_everything(saved);
    ASSERT_EQ(UCS_OK, gpumem_topo_save_facts(saved, m_path.c_str()));
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    for (unsigned dev = 0; dev < saved->num_devs; ++dev) {
        const gpumem_topo_reach_t *s = &saved->devs[dev].reach;
        const gpumem_topo_reach_t *r = &m_topo->devs[dev].reach;
        std::string name             = saved->devs[dev].name;

        expect_fact_eq(s->iommu, r->iommu, name + " iommu");
        EXPECT_EQ(s->iommu_group, r->iommu_group) << name;
        expect_fact_eq(s->bar_size, r->bar_size, name + " bar");
        expect_fact_eq(s->mem_size, r->mem_size, name + " mem");
        expect_fact_eq(s->hb_id, r->hb_id, name + " hostbridge");
        for (unsigned hop = 0; hop < s->path_len; ++hop) {
            expect_fact_eq(s->path[hop].acs_ctrl, r->path[hop].acs_ctrl,
                           name + " acs of hop " + std::to_string(hop));
        }
    }

    free_topo(saved);
}

/* A fact left unknown is read again at the next load, not frozen unknown */
TEST_F(topo_facts, save_leaves_out_unknown_facts) {
    std::istringstream lines;
    std::string line;

    ASSERT_EQ(UCS_OK, gpumem_topo_save_facts(m_topo, m_path.c_str()));

    lines.str(read_facts());
    while (std::getline(lines, line)) {
        EXPECT_TRUE(line.empty() || (line[0] == '#')) << line;
    }

    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));
    EXPECT_EQ(0, m_topo->devs[0].reach.mem_size.known);
    EXPECT_STREQ("not read", m_topo->devs[0].reach.mem_size.why);
}

TEST_F(topo_facts, save_writes_a_shared_bridge_once) {
    std::string text;

    know_everything(m_topo);
    ASSERT_EQ(UCS_OK, gpumem_topo_save_facts(m_topo, m_path.c_str()));

    text = read_facts();
    EXPECT_NE(std::string::npos, text.find("acs 0000:32:00.0 "));
    EXPECT_EQ(text.find("acs 0000:32:00.0 "), text.rfind("acs 0000:32:00.0 "));
    EXPECT_NE(std::string::npos, text.find("hostbridge 0000:30:00.0 "));
    EXPECT_EQ(text.find("hostbridge 0000:30:00.0 "),
              text.rfind("hostbridge 0000:30:00.0 "));
}

TEST_F(topo_facts, save_to_unwritable_path_is_io_error) {
    std::string path = m_dir.path() + "/no/such/dir/facts";

    EXPECT_EQ(UCS_ERR_IO_ERROR, gpumem_topo_save_facts(m_topo, path.c_str()));
    EXPECT_TRUE(logged(path));
}

TEST_F(topo_facts, apply_overrides_unknown_facts) {
    const gpumem_topo_reach_t *gpu0 = &m_topo->devs[0].reach;

    write_facts("iommu 0000:34:00.0 0 group 12\n"
                "bar 0000:34:00.0 34359738368\n"
                "mem 0000:34:00.0 0x1400000000\n"
                "acs 0000:33:00.0 0x0004\n");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    ASSERT_EQ(1, gpu0->iommu.known);
    EXPECT_EQ(0u, gpu0->iommu.value);
    EXPECT_EQ(12, gpu0->iommu_group);
    ASSERT_EQ(1, gpu0->bar_size.known);
    EXPECT_EQ(32ull << 30, gpu0->bar_size.value);
    ASSERT_EQ(1, gpu0->mem_size.known);
    EXPECT_EQ(80ull << 30, gpu0->mem_size.value);
    ASSERT_EQ(1, gpu0->path[0].acs_ctrl.known);
    EXPECT_EQ((uint64_t)GPUMEM_TOPO_ACS_RR, gpu0->path[0].acs_ctrl.value);

    /* Other devices are left as they were */
    EXPECT_EQ(0, m_topo->devs[1].reach.bar_size.known);
    EXPECT_EQ(0, m_topo->devs[1].reach.path[0].acs_ctrl.known);
}

/* The administrator's file is the last word, over what sysfs said too */
TEST_F(topo_facts, apply_overrides_known_facts) {
    know_everything(m_topo);
    write_facts("iommu 0000:b1:00.0 1 group 40\n");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    EXPECT_EQ(1, m_topo->devs[2].reach.iommu.known);
    EXPECT_EQ(1u, m_topo->devs[2].reach.iommu.value);
    EXPECT_EQ(40, m_topo->devs[2].reach.iommu_group);
}

TEST_F(topo_facts, apply_acs_to_every_hop_at_the_address) {
    write_facts("acs 0000:32:00.0 0x1d\n");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    for (unsigned dev = 0; dev < 2; ++dev) {
        const gpumem_topo_reach_t *r = &m_topo->devs[dev].reach;

        EXPECT_EQ(0, r->path[0].acs_ctrl.known) << dev;
        ASSERT_EQ(1, r->path[1].acs_ctrl.known) << dev;
        EXPECT_EQ(0x1du, r->path[1].acs_ctrl.value) << dev;
        EXPECT_EQ(0, r->path[2].acs_ctrl.known) << dev;
    }
    EXPECT_EQ(0, m_topo->devs[2].reach.path[0].acs_ctrl.known);
}

TEST_F(topo_facts, apply_hostbridge_to_every_device_below_it) {
    write_facts("hostbridge 0000:30:00.0 0x10221480\n");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    for (unsigned dev = 0; dev < 2; ++dev) {
        ASSERT_EQ(1, m_topo->devs[dev].reach.hb_id.known) << dev;
        EXPECT_EQ(0x10221480u, m_topo->devs[dev].reach.hb_id.value) << dev;
    }
    EXPECT_EQ(0, m_topo->devs[2].reach.hb_id.known);
}

TEST_F(topo_facts, apply_iommu_without_group_keeps_the_group) {
    m_topo->devs[0].reach.iommu_group = 5;
    write_facts("iommu 0000:34:00.0 1\n"
                "iommu 0000:b1:00.0 0 group -1\n");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    EXPECT_EQ(1, m_topo->devs[0].reach.iommu.known);
    EXPECT_EQ(5, m_topo->devs[0].reach.iommu_group);
    EXPECT_EQ(1, m_topo->devs[2].reach.iommu.known);
    EXPECT_EQ(-1, m_topo->devs[2].reach.iommu_group);
}

/* A fact of a device the machine does not have is no error: the file may
 * cover a whole cluster's worth of slots */
TEST_F(topo_facts, apply_ignores_absent_devices) {
    write_facts("bar 0000:99:00.0 1024\n");
    EXPECT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));
    EXPECT_EQ(0, m_topo->devs[0].reach.bar_size.known);
}

TEST_F(topo_facts, apply_accepts_comments_and_blank_lines) {
    write_facts("# gpumem topology facts\n"
                "\n"
                "   \t\n"
                "  # an indented comment\n"
                "\tbar   0000:34:00.0\t1024  \r\n"
                "mem 34:00.0 2048");        /* no domain, no newline */
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));

    EXPECT_EQ(1, m_topo->devs[0].reach.bar_size.known);
    EXPECT_EQ(1024u, m_topo->devs[0].reach.bar_size.value);
    EXPECT_EQ(1, m_topo->devs[0].reach.mem_size.known);
    EXPECT_EQ(2048u, m_topo->devs[0].reach.mem_size.value);
    EXPECT_TRUE(m_errors->lines().empty());
}

TEST_F(topo_facts, apply_empty_file_changes_nothing) {
    write_facts("");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));
    EXPECT_EQ(0, m_topo->devs[0].reach.bar_size.known);
}

/* Each bad line comes after a good one, which must not be applied */
TEST_F(topo_facts, apply_rejects_malformed_line_and_applies_nothing) {
    static const std::string bad[] = {
        "frob 0000:34:00.0 1",
        "BAR 0000:34:00.0 1",
        "bar",
        "bar 0000:34:00.0",
        "bar 0000:34:00 1024",
        "bar 0000:34:00.8 1024",
        "bar 0000:34:20.0 1024",
        "bar 0000:3x4:00.0 1024",
        "bar 0000:34:00.0 12k",
        "bar 0000:34:00.0 -1",
        "bar 0000:34:00.0 +1",
        "bar 0000:34:00.0 0x",
        "bar 0000:34:00.0 18446744073709551616",
        "bar 0000:34:00.0 1024 extra",
        "mem 0000:34:00.0 1024 # trailing comment",
        "iommu 0000:34:00.0 2",
        "iommu 0000:34:00.0 1 group",
        "iommu 0000:34:00.0 1 group x",
        "iommu 0000:34:00.0 1 group -2",
        "iommu 0000:34:00.0 1 group 2147483648",
        "iommu 0000:34:00.0 1 group 1 more",
        "iommu 0000:34:00.0 1 grope 1",
        "acs 0000:32:00.0 0x10000",
        "hostbridge 0000:30:01.0 0x10221480",
        "hostbridge 0000:30:00.0 0x100000000",
        "bar 0000:34:00.0 1024 " + std::string(300, 'x'),
        "# " + std::string(300, 'x'),
        std::string("bar 0000:34:00.0 1\0 garbage", 27)
    };

    for (const std::string &line : bad) {
        m_errors->clear();
        write_facts("mem 0000:34:00.0 1024\n" + line + "\n"
                    "bar 0000:35:00.0 1024\n");

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_topo_facts_apply(m_topo, m_path.c_str())) << line;
        EXPECT_EQ(0, m_topo->devs[0].reach.mem_size.known) << line;
        EXPECT_EQ(0, m_topo->devs[0].reach.bar_size.known) << line;
        EXPECT_EQ(0, m_topo->devs[1].reach.bar_size.known) << line;
        EXPECT_EQ(0, m_topo->devs[1].reach.path[1].acs_ctrl.known) << line;
        EXPECT_TRUE(logged(m_path + ":2:")) << line;
    }
}

TEST_F(topo_facts, apply_missing_file_is_io_error) {
    std::string path = m_dir.path() + "/absent";

    EXPECT_EQ(UCS_ERR_IO_ERROR, gpumem_topo_facts_apply(m_topo,
                                                        path.c_str()));
    EXPECT_TRUE(logged(path));
    EXPECT_TRUE(logged(strerror(ENOENT)));
}

TEST_F(topo_facts, apply_directory_is_refused_as_not_a_regular_file) {
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_topo_facts_apply(m_topo, m_dir.path().c_str()));
    EXPECT_TRUE(logged(m_dir.path() + " is a directory"));
}

/* A FIFO with no writer would block open() forever */
TEST_F(topo_facts, apply_fifo_is_refused_without_blocking) {
    ASSERT_EQ(0, mkfifo(m_path.c_str(), 0600));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_topo_facts_apply(m_topo, m_path.c_str()));
    EXPECT_TRUE(logged(m_path + " is a FIFO"));
}

TEST_F(topo_facts, apply_device_is_refused) {
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_topo_facts_apply(m_topo, "/dev/zero"));
    EXPECT_TRUE(logged("/dev/zero is a device"));
}

/* Two lines of one fact of one device that differ: the later is applied,
 * and a warning names both */
TEST_F(topo_facts, conflicting_lines_warn_naming_both_and_the_later_wins) {
    gpumem_test::log_capture warnings(UCS_LOG_LEVEL_WARN);
    const gpumem_topo_reach_t *gpu0 = &m_topo->devs[0].reach;

    write_facts("bar 0000:34:00.0 34359738368\n"
                "# the same again: no warning\n"
                "bar 0000:34:00.0 34359738368\n"
                "bar 0000:34:00.0 17179869184\n");
    ASSERT_EQ(UCS_OK, gpumem_topo_facts_apply(m_topo, m_path.c_str()));
    EXPECT_EQ(1u, warnings.count({m_path + ":1 and " + m_path + ":4",
                                  "different bar facts of 0000:34:00.0",
                                  "line 4 is applied"}))
            << warnings.text();
    EXPECT_EQ(1u, warnings.size()) << warnings.text();
    EXPECT_EQ(17179869184ull, gpu0->bar_size.value);
}
