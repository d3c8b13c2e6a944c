/**
 * gpumem tests: the topology module on real machines' hwloc exports
 * (test/topologies), with sysfs facts absent or crafted for the test.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>
#include <common/log_capture.h>
#include <common/temp_dir.h>

extern "C" {
#include <uct/gpumem/topo/topo.h>
#include <emu/machine/emu.h>
}

#include <fstream>
#include <sstream>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>


class topo_machine : public testing::Test {
protected:
    virtual void SetUp() {
        ASSERT_TRUE(m_sysfs.make("sysfs"));
    }

    virtual void TearDown() {
        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
        }
        EXPECT_TRUE(m_sysfs.remove());
    }

    static std::string xml_path(const std::string &name) {
        return std::string(GPUMEM_TEST_TOPO_DIR) + "/" + name;
    }

    /* Loads a real machine's export; this machine's /sys plays no part */
    void load(const std::string &name) {
        std::string xml          = xml_path(name);
        gpumem_topo_params_t params = {xml.c_str(), NULL,
                                       m_sysfs.path().c_str(), NULL};

        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
            m_topo = NULL;
        }
        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo)) << xml;
    }

    const gpumem_topo_dev_t &dev(const std::string &name) const {
        const gpumem_topo_dev_t *d = gpumem_topo_find_by_name(m_topo,
                                                              name.c_str());
        EXPECT_TRUE(d != NULL) << "no device " << name;
        return (d != NULL) ? *d : m_topo->devs[0];
    }

    int reaches(const std::string &r, const std::string &o,
                unsigned flags = 0) {
        return gpumem_topo_reaches(&dev(r).reach, &dev(o).reach, flags,
                                   &m_verdict);
    }

    /* The bus rules on the real PCI tree: the facts hwloc does not carry
     * (IOMMU, BAR, ACS) and the fabric set favourable, so that only the
     * tree, the host bridges and the CPU decide. */
    int bus_reaches(const std::string &r, const std::string &o) {
        gpumem_topo_reach_t rr = dev(r).reach, oo = dev(o).reach;

        favour(&rr);
        favour(&oo);
        return gpumem_topo_reaches(&rr, &oo, 0, &m_verdict);
    }

    static void favour(gpumem_topo_reach_t *reach) {
        reach->fabric         = GPUMEM_TOPO_FABRIC_NONE;
        reach->iommu.known    = 1;
        reach->iommu.value    = 0;
        reach->bar_size.known = reach->mem_size.known = 1;
        reach->bar_size.value = reach->mem_size.value = 1ul << 30;
        for (unsigned i = 0; i < reach->path_len; ++i) {
            reach->path[i].acs_ctrl.known = 1;
            reach->path[i].acs_ctrl.value = 0;
        }
    }

    std::vector<std::string> nic_order(const std::string &gpu,
                                       unsigned flags = 0) {
        std::vector<gpumem_topo_nic_rank_t> ranks(m_topo->num_nics + 1);
        std::vector<std::string> names;
        unsigned index = &dev(gpu) - m_topo->devs;

        gpumem_topo_rank_nics(m_topo, index, flags, ranks.data());
        m_ranks.assign(ranks.begin(), ranks.begin() + m_topo->num_nics);
        for (unsigned i = 0; i < m_topo->num_nics; ++i) {
            names.push_back(m_topo->devs[ranks[i].nic].name);
        }
        return names;
    }

    bool reason_has(const std::string &text) const {
        return std::string(m_verdict.reason).find(text) != std::string::npos;
    }

    /* Takes out of @a doc every element that opens with @a open and closes
     * with @a close (or is empty), holding no element of its own kind */
    static void erase_elements(std::string &doc, const std::string &open,
                               const std::string &close) {
        size_t start, tag_end, end;

        while ((start = doc.find(open)) != std::string::npos) {
            tag_end = doc.find('>', start);
            ASSERT_NE(std::string::npos, tag_end);
            end = (doc[tag_end - 1] == '/') ? (tag_end + 1) :
                  doc.find(close, tag_end);
            ASSERT_NE(std::string::npos, end);
            if (doc[tag_end - 1] != '/') {
                end += close.size();
            }
            doc.erase(start, end - start);
        }
    }

    /* An hwloc XML document without its OS devices, and without the
     * distances between them */
    static std::string without_os_devices(std::string doc) {
        erase_elements(doc, "<object type=\"OSDev\"", "</object>");
        erase_elements(doc, "<distances2 type=\"OSDev\"", "</distances2>");
        return doc;
    }

    /* Loads a real machine's export without its OS devices; the path of
     * the document loaded */
    std::string load_without_os_devices(const std::string &name) {
        std::ifstream in(xml_path(name));
        std::stringstream doc;
        std::string bare = m_sysfs.path() + "/no-osdev-" + name;

        doc << in.rdbuf();
        write_file(bare, without_os_devices(doc.str()));
        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
            m_topo = NULL;
        }

        gpumem_topo_params_t params = {bare.c_str(), NULL,
                                       m_sysfs.path().c_str(), NULL};
        EXPECT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo)) << bare;
        return bare;
    }

    static std::string read_back(const std::string &path) {
        std::ifstream in(path.c_str(), std::ios::binary);
        std::stringstream data;

        data << in.rdbuf();
        return data.str();
    }

    static void write_file(const std::string &path, const std::string &data) {
        std::ofstream out(path.c_str(), std::ios::binary);
        out << data;
    }

    gpumem_test::temp_dir               m_sysfs;
    gpumem_topo_t                       *m_topo = NULL;
    gpumem_topo_verdict_t               m_verdict;
    std::vector<gpumem_topo_nic_rank_t> m_ranks;
};


TEST_F(topo_machine, every_real_topology_loads) {
    static const char *files[] = {
        "fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml",
        "fluxcore-tuolumne-4xMI300A-SPX.xml",
        "hwloc-nvidiaDGX2-16xV100-nvswitch.xml",
        "hwloc-power8-minsky-4xP100-nvlink.xml",
        "mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml",
        "mpibind-pascal-2xBDW-2xP100-1xIB.xml",
        "mpibind-tioga-trento-4xMI250X-8GCD.xml"
    };
    static const unsigned gpus[] = {4, 4, 16, 4, 4, 2, 8};
    static const unsigned nics[] = {4, 4, 0, 0, 4, 1, 0};

    for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); ++i) {
        load(files[i]);
        EXPECT_EQ(gpus[i], m_topo->num_gpus) << files[i];
        EXPECT_EQ(nics[i], m_topo->num_nics) << files[i];
        EXPECT_EQ(gpus[i] + nics[i], m_topo->num_devs) << files[i];
    }
}

/* DGX-2: 16 V100 under two-level PLX trees, all joined by NVSwitches */
TEST_F(topo_machine, dgx2_all_gpus_joined_by_nvswitch) {
    load("hwloc-nvidiaDGX2-16xV100-nvswitch.xml");
    ASSERT_EQ(16u, m_topo->num_gpus);

    for (unsigned i = 0; i < m_topo->num_gpus; ++i) {
        for (unsigned j = 0; j < m_topo->num_gpus; ++j) {
            gpumem_topo_reaches(&m_topo->devs[i].reach,
                                &m_topo->devs[j].reach, 0, &m_verdict);
            EXPECT_EQ(i != j, m_verdict.reaches) << i << "->" << j << ": "
                                                 << m_verdict.reason;
            if (i != j) {
                EXPECT_EQ(GPUMEM_TOPO_FABRIC_NVLINK, m_verdict.fabric);
            }
        }
    }
}

TEST_F(topo_machine, dgx2_gpus_under_one_plx_reach_through_it) {
    load("hwloc-nvidiaDGX2-16xV100-nvswitch.xml");

    /* nvml0 (34:00.0) and nvml1 (36:00.0) share the switch port 33:00.0's
     * upstream 32:00.0 */
    EXPECT_TRUE(bus_reaches("nvml0", "nvml1")) << m_verdict.reason;
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_verdict.relation);
    EXPECT_TRUE(reason_has("through bridge 0000:33:00.0") ||
                reason_has("through bridge 0000:32:00.0"))
            << m_verdict.reason;

    /* nvml0 and nvml2 (39:00.0) meet higher, at the PLX 2d:00.0/2c:00.0 */
    EXPECT_TRUE(bus_reaches("nvml0", "nvml2")) << m_verdict.reason;
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_verdict.relation);
}

TEST_F(topo_machine, dgx2_skylake_root_ports_are_whitelisted) {
    load("hwloc-nvidiaDGX2-16xV100-nvswitch.xml");

    /* 8086:2030 is the root bus's function 00.0 of every host bridge */
    EXPECT_TRUE(dev("nvml0").reach.hb_id.known);
    EXPECT_EQ(0x80862030u, dev("nvml0").reach.hb_id.value);

    /* nvml0 (host bridge 2b) and nvml4 (4e): one socket */
    EXPECT_TRUE(bus_reaches("nvml0", "nvml4")) << m_verdict.reason;
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES, m_verdict.relation);
    EXPECT_TRUE(reason_has("is whitelisted")) << m_verdict.reason;

    /* nvml0 and nvml8 (ae): across sockets, still whitelisted */
    EXPECT_TRUE(bus_reaches("nvml0", "nvml8")) << m_verdict.reason;
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS, m_verdict.relation);
}

/* Pascal: both P100 and the ConnectX-4 behind one PLX switch, no NVLink
 * matrix; without sysfs facts the bus rules cannot be decided */
TEST_F(topo_machine, pascal_gpus_and_hca_share_a_switch) {
    load("mpibind-pascal-2xBDW-2xP100-1xIB.xml");

    EXPECT_FALSE(reaches("cuda0", "cuda1"));
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_verdict.relation);
    EXPECT_TRUE(reason_has("unknown: IOMMU of 0000:04:00.0")) << m_verdict.reason;

    EXPECT_TRUE(reaches("cuda0", "cuda1", GPUMEM_TOPO_ASSUME));
    EXPECT_STRNE("", m_verdict.assumed);

    EXPECT_TRUE(bus_reaches("cuda0", "cuda1")) << m_verdict.reason;

    EXPECT_EQ(std::vector<std::string>{"mlx5_0"}, nic_order("cuda0"));
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_ranks[0].relation);
    EXPECT_FALSE(m_ranks[0].gdr.reaches);
    EXPECT_NE(std::string::npos,
              std::string(m_ranks[0].gdr.reason).find("unknown:"));

    nic_order("cuda1", GPUMEM_TOPO_ASSUME);
    EXPECT_TRUE(m_ranks[0].gdr.reaches);
}

/* An export without OS devices (hwloc read where the drivers were not
 * loaded, or kept none) still has its RDMA adapters: the PCI functions of
 * InfiniBand class, named by their PCI addresses and ranked the same */
TEST_F(topo_machine, rdma_adapters_count_without_their_os_devices) {
    std::string bare = load_without_os_devices(
            "fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");

    ASSERT_EQ(std::string::npos, read_back(bare).find("OSDev"));
    ASSERT_NE(std::string::npos, read_back(bare).find("0000:5e:00.0"));
    ASSERT_TRUE(m_topo != NULL);
    EXPECT_EQ(4u, m_topo->num_gpus);
    /* The two CX-7 and the dual-port CX-6; not the Broadcom Ethernet */
    EXPECT_EQ(4u, m_topo->num_nics);
    EXPECT_TRUE(gpumem_topo_find_by_name(m_topo, "0000:01:00.0") == NULL);

    /* As with the OS devices' names: cuda1 (5f:00.0) and the CX-7 at
     * 5e:00.0 under one switch */
    EXPECT_EQ("0000:5e:00.0", nic_order("0000:5f:00.0")[0]);
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_ranks[0].relation);
    std::vector<std::string> order = nic_order("0000:4e:00.0");
    EXPECT_EQ("0000:4d:00.0", order[0]);
    EXPECT_EQ("0000:4d:00.1", order[1]);
}

/* The RDMA port UCX names a NIC by (mlx5_0:1) is the OS device's, from
 * hwloc's Port<N>State; the export was read with one link up */
TEST_F(topo_machine, nic_port_and_its_state_come_from_the_os_device) {
    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");
    EXPECT_EQ(1u, dev("mlx5_0").port);
    EXPECT_EQ(1, dev("mlx5_0").port_active);
    EXPECT_EQ(1u, dev("mlx5_2").port);
    EXPECT_EQ(0, dev("mlx5_2").port_active) << "Port1State 1: down";
    EXPECT_EQ(0u, dev("cuda0").port);

    load("mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml");
    for (const char *nic : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
        EXPECT_EQ(1u, dev(nic).port) << nic;
        EXPECT_EQ(1, dev(nic).port_active) << nic;
    }

    /* Without its OS device a NIC has neither name nor port */
    load_without_os_devices(
            "fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");
    ASSERT_TRUE(m_topo != NULL);
    EXPECT_EQ(0u, dev("0000:4d:00.0").port);
    EXPECT_EQ(-1, dev("0000:4d:00.0").port_active);
}

/* XE8640: each H100 sits under a Broadcom switch, two of them with a CX-7 */
TEST_F(topo_machine, xe8640_gpu_and_cx7_under_one_broadcom_switch) {
    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");

    /* cuda1 (5f:00.0) and mlx5_2 (CX-7 5e:00.0) under switch 5a/5b */
    EXPECT_EQ("mlx5_2", nic_order("cuda1")[0]);
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_ranks[0].relation);
    EXPECT_EQ(4u, m_ranks[0].hops);

    /* cuda3 (db:00.0) and mlx5_3 (CX-7 da:00.0) */
    EXPECT_EQ("mlx5_3", nic_order("cuda3")[0]);
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_ranks[0].relation);

    /* cuda0 (4e:00.0) with the dual-port CX-6 (4d:00.0/1) */
    std::vector<std::string> order = nic_order("cuda0");
    EXPECT_EQ("mlx5_0", order[0]);
    EXPECT_EQ("mlx5_1", order[1]);
    EXPECT_EQ("mlx5_3", order.back());
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS, m_ranks.back().relation);

    /* cuda2 (cb:00.0) has no NIC under its switch: one on its socket */
    EXPECT_EQ("mlx5_3", nic_order("cuda2")[0]);
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES, m_ranks[0].relation);
}

TEST_F(topo_machine, xe8640_nvlink_joins_all_four_gpus) {
    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");

    EXPECT_TRUE(reaches("cuda0", "cuda3"));
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_NVLINK, m_verdict.fabric);
    EXPECT_TRUE(reason_has("direct nvlink link")) << m_verdict.reason;
}

TEST_F(topo_machine, xe8640_cross_root_verdict_is_unknown) {
    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");

    /* The export filtered out the host bridges' 00.0 functions */
    EXPECT_FALSE(dev("cuda0").reach.hb_id.known);
    EXPECT_FALSE(bus_reaches("cuda0", "cuda1"));
    EXPECT_TRUE(reason_has("unknown: host bridge 0000:48")) << m_verdict.reason;
}

/* Lassen: NVLink-connected V100 pairs, but no NVLink matrix in the export */
TEST_F(topo_machine, lassen_missing_matrix_is_no_proof_of_no_fabric) {
    load("mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml");

    EXPECT_EQ(GPUMEM_TOPO_FABRIC_UNKNOWN, dev("cuda0").reach.fabric);

    /* Across the two POWER9 sockets the bus refuses, the fabric is open */
    EXPECT_FALSE(reaches("cuda0", "cuda2"));
    EXPECT_TRUE(reason_has("CPU is ppc64le, not AMD Zen")) << m_verdict.reason;
    EXPECT_TRUE(reason_has("no proof of no fabric")) << m_verdict.reason;

    EXPECT_TRUE(reaches("cuda0", "cuda2", GPUMEM_TOPO_ASSUME));
    EXPECT_NE(std::string::npos,
              std::string(m_verdict.assumed).find("no fabric links"));

    /* The pairs behind one PLX switch reach by the bus */
    EXPECT_TRUE(bus_reaches("cuda0", "cuda1")) << m_verdict.reason;
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_verdict.relation);

    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES,
              (nic_order("cuda2"), m_ranks[0].relation));
    EXPECT_EQ("mlx5_2", nic_order("cuda2")[0]);
}

/* Minsky: NVLink joins GPU pairs and each pair to its CPU, not the pairs */
TEST_F(topo_machine, minsky_nvlink_pairs_only) {
    load("hwloc-power8-minsky-4xP100-nvlink.xml");

    EXPECT_TRUE(reaches("cuda0", "cuda1"));
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_NVLINK, m_verdict.fabric);
    EXPECT_TRUE(reaches("cuda3", "cuda2"));

    EXPECT_FALSE(reaches("cuda0", "cuda2", GPUMEM_TOPO_ASSUME));
    EXPECT_TRUE(reason_has("not on Linux's p2pdma whitelist"))
            << m_verdict.reason;
}

/* Tioga: 8 MI250X GCDs in one XGMI hive, AMD Zen 3 host */
TEST_F(topo_machine, tioga_one_xgmi_hive_and_zen_root_complex) {
    load("mpibind-tioga-trento-4xMI250X-8GCD.xml");

    for (unsigned i = 0; i < m_topo->num_gpus; ++i) {
        EXPECT_EQ(GPUMEM_TOPO_FABRIC_XGMI, m_topo->devs[i].reach.fabric);
        EXPECT_EQ(0, m_topo->devs[i].reach.fabric_domain);
    }
    EXPECT_TRUE(reaches("rsmi0", "rsmi7"));
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_XGMI, m_verdict.fabric);

    EXPECT_STREQ("AuthenticAMD", dev("rsmi0").reach.cpu_vendor);
    EXPECT_EQ(25u, dev("rsmi0").reach.cpu_family.value);
    EXPECT_TRUE(bus_reaches("rsmi0", "rsmi7")) << m_verdict.reason;
    EXPECT_TRUE(reason_has("AMD Zen")) << m_verdict.reason;
}

/* Tuolumne: MI300A APUs are PCI class 0x12, and have no VRAM size */
TEST_F(topo_machine, tuolumne_apus_are_gpus) {
    load("fluxcore-tuolumne-4xMI300A-SPX.xml");

    EXPECT_EQ(0x1200, dev("rsmi0").class_id);
    EXPECT_FALSE(dev("rsmi0").reach.mem_size.known);
    EXPECT_TRUE(reaches("rsmi0", "rsmi3"));
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_XGMI, m_verdict.fabric);

    /* Each APU's Slingshot NIC hangs off its own host bridge */
    EXPECT_EQ("hsi2", nic_order("rsmi2")[0]);
    EXPECT_EQ(GPUMEM_TOPO_REL_HOST_BRIDGE, m_ranks[0].relation);
}

/* The whole load path with sysfs facts: a crafted tree for pascal's devices
 * and bridges, as root would read it */
class topo_machine_sysfs : public topo_machine {
protected:
    /* Every device and bridge: 4 KiB of config space with a PCIe capability
     * and, for @a acs_bridge, an ACS capability with @a acs bits */
    void craft(const std::string &acs_bridge, uint16_t acs) {
        std::set<std::string> functions;
        char addr[GPUMEM_TOPO_PCI_STR_MAX];

        for (unsigned i = 0; i < m_topo->num_devs; ++i) {
            const gpumem_topo_reach_t &r = m_topo->devs[i].reach;
            functions.insert(gpumem_pci_addr_str(&r.addr, addr, sizeof(addr)));
            for (unsigned j = 0; j < r.path_len; ++j) {
                functions.insert(gpumem_pci_addr_str(&r.path[j].addr, addr,
                                                     sizeof(addr)));
            }
        }

        mkdir((m_sysfs.path() + "/bus").c_str(), 0755);
        mkdir((m_sysfs.path() + "/bus/pci").c_str(), 0755);
        mkdir((m_sysfs.path() + "/bus/pci/devices").c_str(), 0755);

        /* The host bridge: Broadwell-EP, not on the whitelist */
        std::string host = m_sysfs.path() + "/bus/pci/devices/0000:00:00.0";
        mkdir(host.c_str(), 0755);
        write_file(host + "/vendor", "0x8086\n");
        write_file(host + "/device", "0x6f00\n");
        for (const std::string &f : functions) {
            std::string dir = m_sysfs.path() + "/bus/pci/devices/" + f;
            std::string config(4096, '\0');

            mkdir(dir.c_str(), 0755);
            config[0x06] = 0x10;       /* capability list */
            config[0x34] = 0x40;
            config[0x40] = 0x10;       /* PCI Express */
            if (f == acs_bridge) {
                config[0x100] = 0x0d;  /* ACS, version 1, last */
                config[0x102] = 0x01;
                config[0x106] = acs & 0xff;
                config[0x107] = acs >> 8;
            }
            write_file(dir + "/config", config);
            /* BAR0 16 MiB registers, BAR1 16 GiB memory window */
            write_file(dir + "/resource",
                  "0x00000000c4000000 0x00000000c4ffffff 0x0000000000040200\n"
                  "0x0000038000000000 0x00000383ffffffff 0x000000000014220c\n"
                  "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                  "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                  "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                  "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
        }
    }
};

TEST_F(topo_machine_sysfs, pascal_reaches_through_the_plx_with_facts) {
    load("mpibind-pascal-2xBDW-2xP100-1xIB.xml");
    craft("", 0);
    load("mpibind-pascal-2xBDW-2xP100-1xIB.xml");

    EXPECT_TRUE(dev("cuda0").reach.iommu.known);
    EXPECT_EQ(0u, dev("cuda0").reach.iommu.value);
    EXPECT_EQ(16ul << 30, dev("cuda1").reach.bar_size.value);

    EXPECT_TRUE(reaches("cuda0", "cuda1")) << m_verdict.reason;
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_verdict.relation);
    EXPECT_STREQ("", m_verdict.assumed);

    nic_order("cuda0");
    EXPECT_TRUE(m_ranks[0].gdr.reaches) << m_ranks[0].gdr.reason;
}

TEST_F(topo_machine_sysfs, pascal_acs_redirect_on_switch_port_refuses) {
    char port[GPUMEM_TOPO_PCI_STR_MAX];

    load("mpibind-pascal-2xBDW-2xP100-1xIB.xml");
    gpumem_pci_addr_str(&dev("cuda1").reach.path[0].addr, port, sizeof(port));
    craft(port, GPUMEM_TOPO_ACS_RR | GPUMEM_TOPO_ACS_CR);
    load("mpibind-pascal-2xBDW-2xP100-1xIB.xml");

    EXPECT_FALSE(reaches("cuda0", "cuda1")) << m_verdict.reason;
    EXPECT_TRUE(reason_has(std::string("ACS redirects peer requests to the "
                                       "root complex on bridge ") + port))
            << port << ": " << m_verdict.reason;
}

TEST_F(topo_machine, bad_input_is_a_clear_error) {
    gpumem_topo_params_t params = {"/nonexistent/topo.xml", NULL, NULL,
                                   NULL};
    std::string bad             = m_sysfs.path() + "/bad.xml";
    gpumem_topo_t *topo;

    EXPECT_EQ(UCS_ERR_IO_ERROR, gpumem_topo_load(&params, &topo));

    write_file(bad, "<?xml version=\"1.0\"?>\n<topology><object type=");
    params.xml_path = bad.c_str();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_topo_load(&params, &topo));

    write_file(bad, "");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_topo_load(&params, &topo));

    std::string xml    = xml_path("mpibind-pascal-2xBDW-2xP100-1xIB.xml");
    params.xml_path    = xml.c_str();
    params.facts_path  = "/nonexistent/facts";
    EXPECT_EQ(UCS_ERR_IO_ERROR, gpumem_topo_load(&params, &topo));
}


/* What is not a machine's export is refused before hwloc reads it, saying
 * what it is: a FIFO (which would block), a device, a directory, an
 * element nesting that would overflow hwloc's parser */
TEST_F(topo_machine, xml_that_is_no_regular_file_or_too_deep_is_refused) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::string fifo = m_sysfs.path() + "/fifo.xml";
    std::string deep = m_sysfs.path() + "/deep.xml";
    std::string nested;
    gpumem_topo_params_t params = {NULL, NULL, m_sysfs.path().c_str(), NULL};
    struct {
        std::string path, says;
    } cases[] = {{fifo, "is a FIFO"}, {"/dev/zero", "is a device"},
                 {m_sysfs.path(), "is a directory"},
                 {deep, "nests elements more than 256 deep"}};

    ASSERT_EQ(0, mkfifo(fifo.c_str(), 0600));
    for (int i = 0; i < 100000; ++i) {
        nested += "<object type=\"Group\">";
    }
    write_file(deep, "<?xml version=\"1.0\"?><topology>" + nested);

    for (const auto &c : cases) {
        params.xml_path = c.path.c_str();
        EXPECT_NE(UCS_OK, gpumem_topo_load(&params, &m_topo)) << c.path;
        EXPECT_EQ(1u, log.count({c.path, c.says})) << log.text();
        EXPECT_TRUE(m_topo == NULL);
    }
}

/* Two GPUs at one PCI address would share one GPU's state and VRAM */
TEST_F(topo_machine, two_devices_at_one_pci_address_are_refused) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::string xml = gpumem_emu_builtin_topology;
    std::string path = m_sysfs.path() + "/twice.xml";
    gpumem_topo_params_t params = {NULL, NULL, m_sysfs.path().c_str(), NULL};
    size_t pos;

    pos = xml.find("pci_busid=\"00e0:04:00.0\"");
    ASSERT_NE(std::string::npos, pos) << "the built-in machine changed";
    xml.replace(pos, 24, "pci_busid=\"00e0:03:00.0\"");
    write_file(path, xml);

    params.xml_path = path.c_str();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_topo_load(&params, &m_topo));
    EXPECT_EQ(1u, log.count({"two devices at PCI address 00e0:03:00.0"}))
            << log.text();
    EXPECT_TRUE(m_topo == NULL);
}

/* hwloc itself crashes on some malformed exports (here an object with a
 * cpuset and no complete_cpuset): the load refuses the file, and this
 * process lives */
TEST_F(topo_machine, xml_that_crashes_hwloc_is_refused) {
    gpumem_test::log_capture log(UCS_LOG_LEVEL_ERROR);
    std::ifstream in(xml_path("hwloc-power8-minsky-4xP100-nvlink.xml"));
    std::string xml((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
    std::string path = m_sysfs.path() + "/crash.xml";
    gpumem_topo_params_t params = {NULL, NULL, m_sysfs.path().c_str(), NULL};
    size_t pos = xml.find("os_index=\"105\"");

    ASSERT_NE(std::string::npos, pos);
    pos = xml.find("complete_cpuset=", pos);
    ASSERT_NE(std::string::npos, pos);
    xml.replace(pos, 16, "completX_cpuset=");
    write_file(path, xml);

    /* hwloc's own parser, whatever XML library is installed */
    params.xml_path = path.c_str();
    setenv("HWLOC_LIBXML_IMPORT", "0", 1);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_topo_load(&params, &m_topo));
    unsetenv("HWLOC_LIBXML_IMPORT");
    EXPECT_EQ(1u, log.count({"hwloc crashes", path})) << log.text();
    EXPECT_TRUE(m_topo == NULL);
}
