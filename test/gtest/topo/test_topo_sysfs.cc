/**
 * gpumem tests: sysfs facts (ACS, IOMMU, BARs, memory, IDs) read from crafted
 * sysfs trees, including broken ones.
 *
 * See file LICENSE for terms.
 */

#include <common/temp_dir.h>

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/topo/topo_sysfs.h>
}

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>


class topo_sysfs : public testing::Test {
protected:
    /* Configuration space offsets the tests craft */
    enum {
        CFG_STATUS       = 0x06,
        CFG_CAP_PTR      = 0x34,
        STATUS_CAPS      = 0x10,
        CAP_ID_EXP       = 0x10,
        CAP_ID_PM        = 0x01,
        EXT_CAP_ID_AER   = 0x0001,
        EXT_CAP_ID_ACS   = 0x000d,
        EXT_CAP_ID_VC    = 0x0002,
        IORESOURCE_IO    = 0x101,
        IORESOURCE_MEM64 = 0x140204
    };

    virtual void SetUp() {
        ASSERT_TRUE(m_root.make("topo_sysfs"));

        m_addr.domain = 0;
        m_addr.bus    = 0x2b;
        m_addr.dev    = 0;
        m_addr.fn     = 0;
        m_dev_dir     = "bus/pci/devices/0000:2b:00.0";
        mkdirs(m_dev_dir);
    }

    virtual void TearDown() {
        m_root.remove();
    }

    /* Make a directory and its parents under the root */
    void mkdirs(const std::string &rel) {
        std::string path = m_root.path();
        size_t pos       = 0;

        while (pos != std::string::npos) {
            pos = rel.find('/', pos + 1);
            path = m_root.path() + "/" + rel.substr(0, pos);
            mkdir(path.c_str(), 0755);
        }
    }

    void write_file(const std::string &rel, const void *data, size_t size) {
        std::string path = m_root.path() + "/" + rel;
        FILE *file       = fopen(path.c_str(), "w");

        ASSERT_TRUE(file != NULL) << path;
        if (size > 0) {
            ASSERT_EQ(size, fwrite(data, 1, size, file));
        }
        ASSERT_EQ(0, fclose(file));
    }

    void write_file(const std::string &rel, const std::string &text) {
        write_file(rel, text.data(), text.size());
    }

    void write_dev_file(const std::string &name, const std::string &text) {
        write_file(m_dev_dir + "/" + name, text);
    }

    void write_config(const std::vector<uint8_t> &cfg) {
        write_file(m_dev_dir + "/config", cfg.data(), cfg.size());
    }

    /* A configuration space whose standard capability list is power
     * management, then PCI Express unless @a express is false */
    static std::vector<uint8_t> config(size_t size, bool express = true) {
        std::vector<uint8_t> cfg(size, 0);

        cfg[0x00]        = 0xde;    /* vendor 0x10de */
        cfg[0x01]        = 0x10;
        cfg[CFG_STATUS]  = STATUS_CAPS;
        cfg[CFG_CAP_PTR] = 0x40;
        cfg[0x40]        = CAP_ID_PM;
        cfg[0x41]        = express ? 0x60 : 0x00;
        if (express) {
            cfg[0x60] = CAP_ID_EXP;
            cfg[0x61] = 0x00;
        }
        return cfg;
    }

    static void put16(std::vector<uint8_t> &cfg, size_t offset,
                      uint16_t value) {
        cfg[offset]     = value & 0xff;
        cfg[offset + 1] = value >> 8;
    }

    /* An extended capability header: id, version 1, next offset */
    static void put_ext_cap(std::vector<uint8_t> &cfg, size_t offset,
                            uint16_t id, unsigned next) {
        uint32_t header = id | (1u << 16) | (next << 20);

        for (unsigned i = 0; i < 4; ++i) {
            cfg[offset + i] = (header >> (8 * i)) & 0xff;
        }
    }

    /* AER at 0x100, then ACS at 0x148 with @a ctrl */
    static std::vector<uint8_t> config_with_acs(uint16_t ctrl) {
        std::vector<uint8_t> cfg = config(4096);

        put_ext_cap(cfg, 0x100, EXT_CAP_ID_AER, 0x148);
        put_ext_cap(cfg, 0x148, EXT_CAP_ID_ACS, 0x000);
        put16(cfg, 0x148 + 4, 0x005f);  /* capability register */
        put16(cfg, 0x148 + 6, ctrl);
        return cfg;
    }

    void make_iommu_group(int group, const std::string &type) {
        std::string dir = "kernel/iommu_groups/" + std::to_string(group);
        std::string target = "../../../../kernel/iommu_groups/" +
                             std::to_string(group);

        mkdirs(dir);
        if (!type.empty()) {
            write_file(dir + "/type", type);
        }
        ASSERT_EQ(0, symlink(target.c_str(),
                             (m_root.path() + "/" + m_dev_dir +
                              "/iommu_group").c_str()));
    }

    void read_iommu() {
        gpumem_topo_sysfs_iommu(m_root.path().c_str(), &m_addr, &m_fact,
                                &m_group);
    }

    /* "0x<start> 0x<end> 0x<flags>" as the kernel writes a resource */
    static std::string resource(uint64_t start, uint64_t end,
                                uint64_t flags) {
        char line[80];

        snprintf(line, sizeof(line), "0x%016llx 0x%016llx 0x%016llx\n",
                 (unsigned long long)start, (unsigned long long)end,
                 (unsigned long long)flags);
        return line;
    }

    static std::string unused_resource() {
        return resource(0, 0, 0);
    }

    bool why_has(const std::string &text) const {
        return std::string(m_fact.why).find(text) != std::string::npos;
    }

    gpumem_test::temp_dir m_root;
    std::string           m_dev_dir;
    gpumem_pci_addr_t     m_addr;
    gpumem_topo_fact_t    m_fact  = {};
    int                   m_group = -2;
};


TEST_F(topo_sysfs, fact_set_is_known_with_no_reason) {
    gpumem_topo_fact_unknown(&m_fact, "stale");
    gpumem_topo_fact_set(&m_fact, 42);

    EXPECT_EQ(1, m_fact.known);
    EXPECT_EQ(42u, m_fact.value);
    EXPECT_STREQ("", m_fact.why);
}

TEST_F(topo_sysfs, fact_unknown_formats_reason_and_clears_value) {
    gpumem_topo_fact_set(&m_fact, 42);
    gpumem_topo_fact_unknown(&m_fact, "cannot read %s: %d", "x", 7);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(0u, m_fact.value);
    EXPECT_STREQ("cannot read x: 7", m_fact.why);
}

TEST_F(topo_sysfs, fact_unknown_reason_is_cut_to_fit) {
    std::string longer(2 * sizeof(m_fact.why), 'x');

    gpumem_topo_fact_unknown(&m_fact, "%s", longer.c_str());
    EXPECT_EQ(sizeof(m_fact.why) - 1, strlen(m_fact.why));
}

TEST_F(topo_sysfs, acs_redirect_bits_read_from_extended_capability) {
    uint16_t ctrl = GPUMEM_TOPO_ACS_RR | GPUMEM_TOPO_ACS_CR | 0x0001;

    write_config(config_with_acs(ctrl));
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(ctrl, m_fact.value);
    EXPECT_TRUE(m_fact.value & GPUMEM_TOPO_ACS_RR);
}

TEST_F(topo_sysfs, acs_with_no_bits_set_is_known_zero) {
    write_config(config_with_acs(0));
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

TEST_F(topo_sysfs, acs_found_after_a_long_capability_chain) {
    std::vector<uint8_t> cfg = config(4096);
    unsigned pos;

    /* Virtual channel capabilities every 0x10 bytes, ACS at the end */
    for (pos = 0x100; pos < 0xf00; pos += 0x10) {
        put_ext_cap(cfg, pos, EXT_CAP_ID_VC, pos + 0x10);
    }
    put_ext_cap(cfg, pos, EXT_CAP_ID_ACS, 0);
    put16(cfg, pos + 6, GPUMEM_TOPO_ACS_EC);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ((uint64_t)GPUMEM_TOPO_ACS_EC, m_fact.value);
}

TEST_F(topo_sysfs, acs_capability_absent_is_known_zero) {
    std::vector<uint8_t> cfg = config(4096);

    put_ext_cap(cfg, 0x100, EXT_CAP_ID_AER, 0x148);
    put_ext_cap(cfg, 0x148, EXT_CAP_ID_VC, 0x000);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

TEST_F(topo_sysfs, acs_empty_extended_space_is_known_zero) {
    write_config(config(4096));
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

/* What an unprivileged process gets: the kernel stops at 64 bytes */
TEST_F(topo_sysfs, acs_unprivileged_64_byte_config_is_unknown) {
    std::vector<uint8_t> cfg = config_with_acs(GPUMEM_TOPO_ACS_RR);

    cfg.resize(64);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(0u, m_fact.value);
    EXPECT_TRUE(why_has(m_root.path() + "/" + m_dev_dir + "/config"))
            << m_fact.why;
    EXPECT_TRUE(why_has("0000:2b:00.0")) << m_fact.why;
    EXPECT_TRUE(why_has("64 bytes")) << m_fact.why;
    EXPECT_TRUE(why_has("root")) << m_fact.why;
}

TEST_F(topo_sysfs, acs_conventional_pci_function_has_none) {
    write_config(config(256, false));
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

TEST_F(topo_sysfs, acs_function_without_capability_list_has_none) {
    std::vector<uint8_t> cfg = config(256, false);

    cfg[CFG_STATUS]  = 0;
    cfg[CFG_CAP_PTR] = 0x60;    /* Not a list: the status bit is clear */
    cfg[0x60]        = CAP_ID_EXP;
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

/* An express function whose extended space the kernel cannot reach */
TEST_F(topo_sysfs, acs_express_function_with_256_bytes_is_unknown) {
    write_config(config(256, true));
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("256 bytes")) << m_fact.why;
    EXPECT_TRUE(why_has("PCI Express")) << m_fact.why;
}

/* A standard list that loops cannot tell whether the function is express */
TEST_F(topo_sysfs, acs_looping_standard_list_with_256_bytes_is_unknown) {
    std::vector<uint8_t> cfg = config(256, false);

    cfg[0x41] = 0x50;
    cfg[0x50] = CAP_ID_PM;
    cfg[0x51] = 0x40;
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("capability list")) << m_fact.why;
}

TEST_F(topo_sysfs, acs_looping_extended_chain_is_unknown) {
    std::vector<uint8_t> cfg = config(4096);

    put_ext_cap(cfg, 0x100, EXT_CAP_ID_AER, 0x148);
    put_ext_cap(cfg, 0x148, EXT_CAP_ID_VC, 0x100);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("loops")) << m_fact.why;
}

TEST_F(topo_sysfs, acs_chain_pointing_into_standard_space_is_unknown) {
    std::vector<uint8_t> cfg = config(4096);

    put_ext_cap(cfg, 0x100, EXT_CAP_ID_AER, 0x040);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("0x40")) << m_fact.why;
}

TEST_F(topo_sysfs, acs_capability_cut_by_end_of_space_is_unknown) {
    std::vector<uint8_t> cfg = config(4096);

    put_ext_cap(cfg, 0x100, EXT_CAP_ID_AER, 0xffc);
    put_ext_cap(cfg, 0xffc, EXT_CAP_ID_ACS, 0);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("ACS")) << m_fact.why;
}

/* Random bytes must give an answer, never a crash or a read past the end:
 * known with 16 bits at most, or unknown with a reason */
TEST_F(topo_sysfs, acs_garbage_config_space_gives_an_answer) {
    static const size_t sizes[] = {0, 1, 7, 63, 64, 255, 256, 300, 4095,
                                   4096, 8192};
    unsigned seed               = 1;

    for (size_t size : sizes) {
        for (int round = 0; round < 20; ++round) {
            std::vector<uint8_t> cfg(size);

            for (size_t i = 0; i < size; ++i) {
                cfg[i] = rand_r(&seed) & 0xff;
            }
            write_config(cfg);
            gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

            if (m_fact.known) {
                EXPECT_LE(m_fact.value, 0xffffu);
            } else {
                EXPECT_NE('\0', m_fact.why[0]) << "size " << size;
            }
            if (size < 256) {
                EXPECT_EQ(0, m_fact.known) << "size " << size;
            }
        }
    }
}

/* Only the first 4096 bytes are configuration space */
TEST_F(topo_sysfs, acs_read_from_config_longer_than_extended_space) {
    std::vector<uint8_t> cfg = config_with_acs(GPUMEM_TOPO_ACS_RR);

    cfg.resize(3 * 4096, 0xff);
    write_config(cfg);
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ((uint64_t)GPUMEM_TOPO_ACS_RR, m_fact.value);
}

TEST_F(topo_sysfs, acs_missing_config_is_unknown_with_error) {
    gpumem_topo_sysfs_acs_ctrl(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has(m_dev_dir + "/config")) << m_fact.why;
    EXPECT_TRUE(why_has(strerror(ENOENT))) << m_fact.why;
}

TEST_F(topo_sysfs, iommu_identity_domain_does_not_translate) {
    make_iommu_group(12, "identity\n");
    read_iommu();

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
    EXPECT_EQ(12, m_group);
}

TEST_F(topo_sysfs, iommu_dma_domain_translates) {
    make_iommu_group(7, "DMA\n");
    read_iommu();

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(1u, m_fact.value);
    EXPECT_EQ(7, m_group);
}

TEST_F(topo_sysfs, iommu_dma_fq_domain_translates) {
    make_iommu_group(3, "DMA-FQ\n");
    read_iommu();

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(1u, m_fact.value);
    EXPECT_EQ(3, m_group);
}

/* A group given to VFIO is translated by the user's own page tables */
TEST_F(topo_sysfs, iommu_unmanaged_domain_translates) {
    make_iommu_group(40, "unmanaged\n");
    read_iommu();

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(1u, m_fact.value);
}

TEST_F(topo_sysfs, iommu_absent_from_machine_does_not_translate) {
    mkdirs("class/iommu");
    read_iommu();

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
    EXPECT_EQ(-1, m_group);
}

TEST_F(topo_sysfs, iommu_class_missing_does_not_translate) {
    read_iommu();

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
    EXPECT_EQ(-1, m_group);
}

/* An IOMMU that left a function out of every group: nobody can tell */
TEST_F(topo_sysfs, iommu_on_machine_without_group_is_unknown) {
    mkdirs("class/iommu/dmar0");
    read_iommu();

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(-1, m_group);
    EXPECT_TRUE(why_has("iommu_group")) << m_fact.why;
}

TEST_F(topo_sysfs, iommu_missing_type_is_unknown_with_group) {
    make_iommu_group(12, "");
    read_iommu();

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(12, m_group);
    EXPECT_TRUE(why_has("kernel/iommu_groups/12/type")) << m_fact.why;
    EXPECT_TRUE(why_has(strerror(ENOENT))) << m_fact.why;
}

TEST_F(topo_sysfs, iommu_empty_type_is_unknown) {
    make_iommu_group(12, "\n");
    read_iommu();

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(12, m_group);
}

TEST_F(topo_sysfs, iommu_link_not_to_a_group_is_unknown) {
    ASSERT_EQ(0, symlink("../../somewhere/else",
                         (m_root.path() + "/" + m_dev_dir +
                          "/iommu_group").c_str()));
    read_iommu();

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(-1, m_group);
    EXPECT_TRUE(why_has("not to an IOMMU group")) << m_fact.why;
}

TEST_F(topo_sysfs, iommu_missing_device_is_unknown) {
    m_addr.bus = 0x99;
    read_iommu();

    EXPECT_EQ(0, m_fact.known);
    EXPECT_EQ(-1, m_group);
    EXPECT_TRUE(why_has("0000:99:00.0")) << m_fact.why;
    EXPECT_TRUE(why_has(strerror(ENOENT))) << m_fact.why;
}

TEST_F(topo_sysfs, bar_size_is_largest_memory_bar) {
    write_dev_file("resource",
                   resource(0xfb000000, 0xfbffffff, 0x40200) +
                   unused_resource() +
                   resource(0x38000000000ull, 0x387ffffffffull,
                            IORESOURCE_MEM64) +
                   unused_resource() +
                   resource(0x2000000000ull, 0x2001ffffffull,
                            IORESOURCE_MEM64) +
                   resource(0xf000, 0xffffffff, IORESOURCE_IO) +
                   resource(0xfc000000, 0xfc07ffff, 0x46200) +
                   unused_resource());
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(32ull << 30, m_fact.value);
}

/* An I/O BAR larger than every memory BAR still does not count */
TEST_F(topo_sysfs, bar_size_ignores_io_bars) {
    write_dev_file("resource",
                   resource(0x0, 0xffffffff, IORESOURCE_IO) +
                   resource(0xfb000000, 0xfbffffff, 0x40200) +
                   unused_resource() + unused_resource() +
                   unused_resource() + unused_resource());
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(16ull << 20, m_fact.value);
}

/* The ROM and bridge windows after the six BARs are no BAR */
TEST_F(topo_sysfs, bar_size_ignores_lines_after_the_bars) {
    std::string text;

    for (int i = 0; i < 6; ++i) {
        text += unused_resource();
    }
    text += resource(0x10000000, 0x1fffffff, 0x200);
    write_dev_file("resource", text);
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

TEST_F(topo_sysfs, bar_size_without_memory_bars_is_known_zero) {
    write_dev_file("resource",
                   resource(0xe000, 0xe07f, IORESOURCE_IO) +
                   unused_resource() + unused_resource() +
                   unused_resource() + unused_resource() +
                   unused_resource() + unused_resource());
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0u, m_fact.value);
}

TEST_F(topo_sysfs, bar_malformed_resource_line_is_unknown_naming_it) {
    static const char *bad[] = {
        "garbage\n",
        "0xfb000000 0xfbffffff\n",
        "0xfb000000 0xfbffffff 0x40200 0x1\n",
        "0xfb000000 0xfbffffff 0x40200x\n",
        "0xfbffffff 0xfb000000 0x40200\n",    /* End before start */
        "0x10000000000000000 0x0 0x200\n",    /* 65 bits */
        "-0x1 0x0 0x200\n",
        "fb000000 fbffffff 40200\n"
    };

    for (const char *line : bad) {
        write_dev_file("resource", unused_resource() + unused_resource() +
                                   line + unused_resource() +
                                   unused_resource() + unused_resource());
        gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

        EXPECT_EQ(0, m_fact.known) << line;
        EXPECT_TRUE(why_has("line 3")) << m_fact.why;
        EXPECT_TRUE(why_has("resource")) << m_fact.why;
    }
}

TEST_F(topo_sysfs, bar_truncated_resource_is_unknown) {
    write_dev_file("resource", unused_resource() +
                               resource(0xfb000000, 0xfbffffff, 0x40200));
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("line 3")) << m_fact.why;
}

TEST_F(topo_sysfs, bar_huge_resource_is_unknown) {
    write_dev_file("resource", std::string(1 << 20, '0'));
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_NE('\0', m_fact.why[0]);
}

TEST_F(topo_sysfs, bar_missing_resource_is_unknown) {
    gpumem_topo_sysfs_bar_size(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has(m_dev_dir + "/resource")) << m_fact.why;
    EXPECT_TRUE(why_has(strerror(ENOENT))) << m_fact.why;
}

TEST_F(topo_sysfs, mem_size_read_from_vram_total) {
    write_dev_file("mem_info_vram_total", "68702699520\n");
    gpumem_topo_sysfs_mem_size(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(68702699520ull, m_fact.value);
}

TEST_F(topo_sysfs, mem_size_absent_is_unknown) {
    gpumem_topo_sysfs_mem_size(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has("no GPU memory size in sysfs for 0000:2b:00.0"))
            << m_fact.why;
    EXPECT_TRUE(why_has(strerror(ENOENT))) << m_fact.why;
}

TEST_F(topo_sysfs, mem_size_garbage_is_unknown) {
    static const char *bad[] = {"", "\n", "abc\n", "12abc\n", "-1\n",
                                "0x100\n", "99999999999999999999999\n"};

    for (const char *text : bad) {
        write_dev_file("mem_info_vram_total", text);
        gpumem_topo_sysfs_mem_size(m_root.path().c_str(), &m_addr, &m_fact);

        EXPECT_EQ(0, m_fact.known) << text;
        EXPECT_TRUE(why_has("mem_info_vram_total")) << m_fact.why;
    }
}

TEST_F(topo_sysfs, pci_id_combines_vendor_and_device) {
    write_dev_file("vendor", "0x10de\n");
    write_dev_file("device", "0x2330\n");
    gpumem_topo_sysfs_pci_id(m_root.path().c_str(), &m_addr, &m_fact);

    ASSERT_EQ(1, m_fact.known) << m_fact.why;
    EXPECT_EQ(0x10de2330u, m_fact.value);
}

TEST_F(topo_sysfs, pci_id_garbage_is_unknown) {
    static const char *bad[] = {"", "garbage\n", "10de\n", "0x\n",
                                "0x10de0\n", "0x10dez\n", "-0x1\n"};

    write_dev_file("vendor", "0x1002\n");
    for (const char *text : bad) {
        write_dev_file("device", text);
        gpumem_topo_sysfs_pci_id(m_root.path().c_str(), &m_addr, &m_fact);

        EXPECT_EQ(0, m_fact.known) << text;
        EXPECT_TRUE(why_has("device")) << m_fact.why;
    }
}

TEST_F(topo_sysfs, pci_id_missing_vendor_is_unknown) {
    write_dev_file("device", "0x2330\n");
    gpumem_topo_sysfs_pci_id(m_root.path().c_str(), &m_addr, &m_fact);

    EXPECT_EQ(0, m_fact.known);
    EXPECT_TRUE(why_has(m_dev_dir + "/vendor")) << m_fact.why;
    EXPECT_TRUE(why_has(strerror(ENOENT))) << m_fact.why;
}
