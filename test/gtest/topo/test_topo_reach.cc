/**
 * gpumem tests: the rules of reaches(), one crafted case per rule and per
 * refusal reason.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/topo/topo.h>
}

#include <cstring>
#include <string>


namespace {

gpumem_pci_addr_t pci(uint16_t domain, uint8_t bus, uint8_t dev, uint8_t fn)
{
    gpumem_pci_addr_t addr = {domain, bus, dev, fn};
    return addr;
}

void known(gpumem_topo_fact_t *fact, uint64_t value)
{
    fact->known  = 1;
    fact->value  = value;
    fact->why[0] = '\0';
}

void unknown(gpumem_topo_fact_t *fact, const char *why)
{
    fact->known = 0;
    fact->value = 0;
    snprintf(fact->why, sizeof(fact->why), "%s", why);
}

}


/*
 * Two GPUs of one machine behind one PCIe switch, every fact known and
 * favourable except that the host bridge (Broadwell 8086:6f00) is not on
 * the whitelist and the CPU is Intel's: each test changes one fact.
 *
 *   host bridge 0000:00 -- root port 00:01.0 -- switch up 01:00.0
 *       -- down 02:08.0 -- GPU a 03:00.0
 *       -- down 02:10.0 -- GPU b 04:00.0
 */
class topo_reach : public testing::Test {
protected:
    virtual void SetUp() {
        init_gpu(&a, pci(0, 3, 0, 0), pci(0, 2, 8, 0));
        init_gpu(&b, pci(0, 4, 0, 0), pci(0, 2, 0x10, 0));
    }

    static void init_gpu(gpumem_topo_reach_t *r, gpumem_pci_addr_t addr,
                         gpumem_pci_addr_t downstream_port) {
        memset(r, 0, sizeof(*r));
        strcpy(r->machine, "node1");
        r->space         = 42;
        r->addr          = addr;
        r->fabric        = GPUMEM_TOPO_FABRIC_NONE;
        r->fabric_domain = -1;
        known(&r->iommu, 0);
        r->iommu_group   = -1;
        known(&r->bar_size, 32ul << 30);
        known(&r->mem_size, 32ul << 30);
        r->path_len      = 3;
        r->path[0].addr  = downstream_port;
        r->path[1].addr  = pci(0, 1, 0, 0);
        r->path[2].addr  = pci(0, 0, 1, 0);
        for (unsigned i = 0; i < r->path_len; ++i) {
            known(&r->path[i].acs_ctrl, 0);
        }
        r->hb_domain = 0;
        r->hb_bus    = 0;
        known(&r->hb_id, 0x80866f00);
        r->package   = 0;
        strcpy(r->cpu_vendor, "GenuineIntel");
        known(&r->cpu_family, 6);
    }

    /* Moves @a r under another root port (no common bridge with the other
     * GPU) of host bridge @a bus, in @a package */
    static void move_to_root_port(gpumem_topo_reach_t *r, uint8_t bus,
                                  int package) {
        r->path_len     = 1;
        r->path[0].addr = pci(0, bus, 2, 0);
        r->addr         = pci(0, bus + 1, 0, 0);
        r->hb_bus       = bus;
        r->package      = package;
    }

    int reaches(unsigned flags = 0) {
        return gpumem_topo_reaches(&a, &b, flags, &verdict);
    }

    bool reason_has(const std::string &text) const {
        return std::string(verdict.reason).find(text) != std::string::npos;
    }

    gpumem_topo_reach_t   a, b;
    gpumem_topo_verdict_t verdict;
};


TEST_F(topo_reach, reaches_through_a_common_switch) {
    EXPECT_TRUE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, verdict.relation);
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, verdict.route);
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_NONE, verdict.fabric);
    EXPECT_EQ(4u, verdict.hops);
    EXPECT_TRUE(reason_has("through bridge 0000:01:00.0")) << verdict.reason;
    EXPECT_STREQ("", verdict.assumed);
}

TEST_F(topo_reach, false_for_a_gpu_and_itself) {
    EXPECT_FALSE(gpumem_topo_reaches(&a, &a, 0, &verdict));
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_GPU, verdict.relation);
    EXPECT_TRUE(reason_has("same GPU: 0000:03:00.0")) << verdict.reason;

    /* Not even when every unknown would count as favourable */
    EXPECT_FALSE(gpumem_topo_reaches(&a, &a, GPUMEM_TOPO_ASSUME, &verdict));
}

TEST_F(topo_reach, refuses_gpus_of_different_machines) {
    strcpy(b.machine, "node2");
    EXPECT_FALSE(reaches(GPUMEM_TOPO_ASSUME));
    EXPECT_EQ(GPUMEM_TOPO_REL_OTHER_MACHINE, verdict.relation);
    EXPECT_TRUE(reason_has("different machines: 'node1' and 'node2'"))
            << verdict.reason;
}

TEST_F(topo_reach, refuses_page_tables_of_different_spaces) {
    b.space = 43;
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("0000:03:00.0 and 0000:04:00.0 take addresses "
                           "from different spaces")) << verdict.reason;
}

TEST_F(topo_reach, shared_fabric_domain_joins_despite_iommu_and_bar) {
    a.fabric = b.fabric = GPUMEM_TOPO_FABRIC_NVLINK;
    a.fabric_domain = b.fabric_domain = 0;
    known(&a.iommu, 1);
    known(&b.bar_size, 256ul << 20);

    EXPECT_TRUE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_NVLINK, verdict.fabric);
    EXPECT_TRUE(reason_has("joined by nvlink")) << verdict.reason;
}

TEST_F(topo_reach, direct_fabric_link_joins_either_way) {
    a.fabric = b.fabric = GPUMEM_TOPO_FABRIC_XGMI;
    b.num_links = 1;
    b.links[0]  = a.addr;
    known(&a.iommu, 1);

    EXPECT_TRUE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_XGMI, verdict.fabric);
    EXPECT_TRUE(reason_has("direct xgmi link")) << verdict.reason;
}

TEST_F(topo_reach, fabric_without_a_link_between_them_does_not_join) {
    a.fabric = b.fabric = GPUMEM_TOPO_FABRIC_NVLINK;
    known(&a.iommu, 1);

    EXPECT_FALSE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_NONE, verdict.fabric);
    EXPECT_TRUE(reason_has("IOMMU")) << verdict.reason;
}

TEST_F(topo_reach, fabrics_of_two_kinds_do_not_join) {
    a.fabric        = GPUMEM_TOPO_FABRIC_NVLINK;
    b.fabric        = GPUMEM_TOPO_FABRIC_XGMI;
    a.fabric_domain = b.fabric_domain = 0;
    known(&b.iommu, 1);

    EXPECT_FALSE(reaches());
}

TEST_F(topo_reach, unknown_fabric_and_bus_refusal_says_both) {
    a.fabric = GPUMEM_TOPO_FABRIC_UNKNOWN;
    known(&b.iommu, 1);

    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("IOMMU group")) << verdict.reason;
    EXPECT_TRUE(reason_has("no fabric links of 0000:03:00.0")) << verdict.reason;

    /* What if the fabric that may exist joined them */
    EXPECT_TRUE(reaches(GPUMEM_TOPO_ASSUME));
    EXPECT_NE(std::string::npos,
              std::string(verdict.assumed).find("no fabric links"));
}

TEST_F(topo_reach, refuses_translating_iommu_of_requester) {
    known(&a.iommu, 1);
    a.iommu_group = 17;
    EXPECT_FALSE(reaches(GPUMEM_TOPO_ASSUME));
    EXPECT_TRUE(reason_has("IOMMU group 17 translates the requests of "
                           "0000:03:00.0")) << verdict.reason;
}

TEST_F(topo_reach, refuses_translating_iommu_of_owner) {
    known(&b.iommu, 1);
    b.iommu_group = 5;
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("IOMMU group 5 translates the requests of "
                           "0000:04:00.0")) << verdict.reason;
}

TEST_F(topo_reach, refuses_bar_smaller_than_memory) {
    known(&b.bar_size, 256ul << 20);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("BAR of 0000:04:00.0 is 268435456 bytes, smaller "
                           "than its 34359738368 bytes of memory"))
            << verdict.reason;

    /* Only the owner's BAR matters: the requester's may be small */
    SetUp();
    known(&a.bar_size, 256ul << 20);
    EXPECT_TRUE(reaches());
}

TEST_F(topo_reach, acs_redirect_on_downstream_port_refuses) {
    known(&b.path[0].acs_ctrl, GPUMEM_TOPO_ACS_RR | GPUMEM_TOPO_ACS_CR);
    EXPECT_FALSE(reaches(GPUMEM_TOPO_ASSUME));
    EXPECT_TRUE(reason_has("ACS redirects peer requests to the root complex "
                           "on bridge 0000:02:10.0")) << verdict.reason;
    EXPECT_TRUE(reason_has("not on Linux's p2pdma whitelist"))
            << verdict.reason;
}

TEST_F(topo_reach, acs_egress_control_on_common_bridge_refuses) {
    known(&a.path[1].acs_ctrl, GPUMEM_TOPO_ACS_EC);
    known(&b.path[1].acs_ctrl, GPUMEM_TOPO_ACS_EC);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("bridge 0000:01:00.0")) << verdict.reason;
}

TEST_F(topo_reach, acs_bits_that_do_not_redirect_are_harmless) {
    /* Source validation and translation blocking redirect nothing */
    known(&a.path[0].acs_ctrl, 0x0003);
    EXPECT_TRUE(reaches());
}

TEST_F(topo_reach, acs_above_the_common_bridge_does_not_matter) {
    known(&a.path[2].acs_ctrl, GPUMEM_TOPO_ACS_REDIRECT);
    known(&b.path[2].acs_ctrl, GPUMEM_TOPO_ACS_REDIRECT);
    EXPECT_TRUE(reaches());
}

TEST_F(topo_reach, acs_redirect_but_amd_zen_root_complex_carries_it_there) {
    known(&b.path[0].acs_ctrl, GPUMEM_TOPO_ACS_RR);
    strcpy(a.cpu_vendor, "AuthenticAMD");
    known(&a.cpu_family, 0x19);
    EXPECT_TRUE(reaches());
    EXPECT_TRUE(reason_has("AMD Zen CPU (family 0x19)")) << verdict.reason;
    /* Placed under one switch, carried through the root complex */
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, verdict.relation);
    EXPECT_EQ(GPUMEM_TOPO_REL_HOST_BRIDGE, verdict.route);
}

TEST_F(topo_reach, amd_zen_carries_across_sockets) {
    move_to_root_port(&a, 0x40, 0);
    move_to_root_port(&b, 0xc0, 1);
    strcpy(a.cpu_vendor, "AuthenticAMD");
    known(&a.cpu_family, 0x17);
    EXPECT_TRUE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS, verdict.relation);
}

TEST_F(topo_reach, amd_before_zen_does_not_carry) {
    move_to_root_port(&a, 0x40, 0);
    strcpy(a.cpu_vendor, "AuthenticAMD");
    known(&a.cpu_family, 0x15);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("AMD CPU family 0x15 is older than Zen"))
            << verdict.reason;
}

TEST_F(topo_reach, whitelisted_host_bridges_carry_across_host_bridges) {
    move_to_root_port(&a, 0x17, 0);
    move_to_root_port(&b, 0x3a, 0);
    known(&a.hb_id, 0x80862030); /* Skylake-SP */
    known(&b.hb_id, 0x80862031);
    EXPECT_TRUE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES, verdict.relation);
    EXPECT_TRUE(reason_has("is whitelisted")) << verdict.reason;
}

TEST_F(topo_reach, one_host_bridge_off_the_whitelist_refuses) {
    move_to_root_port(&a, 0x17, 0);
    move_to_root_port(&b, 0x3a, 0);
    known(&a.hb_id, 0x80862030);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("host bridge 0000:3a (8086:6f00) is not on "
                           "Linux's p2pdma whitelist")) << verdict.reason;
}

TEST_F(topo_reach, same_host_bridge_entry_refuses_two_host_bridges) {
    move_to_root_port(&a, 0x17, 0);
    move_to_root_port(&b, 0x3a, 0);
    known(&a.hb_id, 0x80863c00); /* Sandy Bridge-EP */
    known(&b.hb_id, 0x80863c00);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("whitelisted only for functions under one host "
                           "bridge")) << verdict.reason;
}

TEST_F(topo_reach, same_host_bridge_entry_carries_under_one_host_bridge) {
    move_to_root_port(&a, 0, 0);
    a.path[0].addr = pci(0, 0, 2, 0);
    a.addr         = pci(0, 5, 0, 0);
    move_to_root_port(&b, 0, 0);
    b.path[0].addr = pci(0, 0, 3, 0);
    b.addr         = pci(0, 6, 0, 0);
    known(&a.hb_id, 0x80863c00);
    known(&b.hb_id, 0x80863c00);
    EXPECT_TRUE(reaches());
    EXPECT_EQ(GPUMEM_TOPO_REL_HOST_BRIDGE, verdict.relation);
}

TEST_F(topo_reach, unknown_acs_is_no_with_its_reason) {
    unknown(&b.path[0].acs_ctrl, "cannot read the extended configuration "
            "space of 0000:02:10.0 (needs root)");
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("unknown: ACS of bridge 0000:02:10.0: cannot read"))
            << verdict.reason;
}

TEST_F(topo_reach, unknown_iommu_is_no_with_its_reason) {
    unknown(&a.iommu, "cannot read /sys/kernel/iommu_groups/3/type");
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("unknown: IOMMU of 0000:03:00.0: cannot read"))
            << verdict.reason;
}

TEST_F(topo_reach, unknown_bar_or_memory_size_is_no) {
    unknown(&b.bar_size, "cannot read resource");
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("unknown: BAR size of 0000:04:00.0"))
            << verdict.reason;

    SetUp();
    unknown(&b.mem_size, "no GPU memory size");
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("unknown: memory size of 0000:04:00.0"))
            << verdict.reason;
}

TEST_F(topo_reach, unknown_host_bridge_is_no) {
    move_to_root_port(&a, 0x17, 0);
    move_to_root_port(&b, 0x3a, 0);
    unknown(&a.hb_id, "not in the topology");
    known(&b.hb_id, 0x80862030);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("unknown: host bridge 0000:17: not in the "
                           "topology")) << verdict.reason;
}

TEST_F(topo_reach, unknown_cpu_vendor_is_no) {
    move_to_root_port(&a, 0x17, 0);
    move_to_root_port(&b, 0x3a, 0);
    a.cpu_vendor[0] = '\0';
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("unknown: the topology names no CPU vendor"))
            << verdict.reason;
}

TEST_F(topo_reach, known_refusal_wins_over_unknowns) {
    unknown(&a.iommu, "cannot read");
    known(&b.bar_size, 1ul << 20);
    EXPECT_FALSE(reaches(GPUMEM_TOPO_ASSUME));
    EXPECT_TRUE(reason_has("BAR of 0000:04:00.0")) << verdict.reason;
    EXPECT_STREQ("", verdict.assumed);
}

TEST_F(topo_reach, assume_counts_unknowns_favourable_and_lists_them) {
    unknown(&a.iommu, "cannot read iommu_group");
    unknown(&b.path[0].acs_ctrl, "64 bytes of config");

    EXPECT_FALSE(reaches());
    EXPECT_STREQ("", verdict.assumed);

    EXPECT_TRUE(reaches(GPUMEM_TOPO_ASSUME));
    std::string assumed(verdict.assumed);
    EXPECT_NE(std::string::npos, assumed.find("IOMMU of 0000:03:00.0"))
            << assumed;
    EXPECT_NE(std::string::npos, assumed.find("ACS of bridge 0000:02:10.0"))
            << assumed;
}

TEST_F(topo_reach, nic_dma_ignores_fabrics) {
    a.fabric = b.fabric = GPUMEM_TOPO_FABRIC_NVLINK;
    a.fabric_domain = b.fabric_domain = 0;
    known(&a.iommu, 1);
    a.iommu_group = 9;

    EXPECT_FALSE(gpumem_topo_dma_reaches(&a, &b, 0, &verdict));
    EXPECT_TRUE(reason_has("IOMMU group 9")) << verdict.reason;

    known(&a.iommu, 0);
    EXPECT_TRUE(gpumem_topo_dma_reaches(&a, &b, 0, &verdict));
    EXPECT_EQ(GPUMEM_TOPO_FABRIC_NONE, verdict.fabric);
}

TEST_F(topo_reach, relation_classes_and_hops) {
    unsigned hops;

    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, gpumem_topo_relation(&a, &b, &hops));
    EXPECT_EQ(4u, hops);

    move_to_root_port(&a, 0x00, 0);
    move_to_root_port(&b, 0x00, 0);
    b.path[0].addr = pci(0, 0, 3, 0);
    b.addr         = pci(0, 9, 0, 0);
    EXPECT_EQ(GPUMEM_TOPO_REL_HOST_BRIDGE, gpumem_topo_relation(&a, &b, &hops));
    EXPECT_EQ(4u, hops);

    move_to_root_port(&b, 0x80, 0);
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES,
              gpumem_topo_relation(&a, &b, &hops));
    EXPECT_EQ(5u, hops);

    move_to_root_port(&b, 0x80, 1);
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS,
              gpumem_topo_relation(&a, &b, &hops));
    EXPECT_EQ(6u, hops);
}

TEST(topo_pci, addresses_parse_and_print) {
    gpumem_pci_addr_t addr;
    char buf[GPUMEM_TOPO_PCI_STR_MAX];

    ASSERT_EQ(UCS_OK, gpumem_pci_addr_parse("0035:04:1f.7", &addr));
    EXPECT_STREQ("0035:04:1f.7", gpumem_pci_addr_str(&addr, buf, sizeof(buf)));
    ASSERT_EQ(UCS_OK, gpumem_pci_addr_parse("3b:00.0", &addr));
    EXPECT_STREQ("0000:3b:00.0", gpumem_pci_addr_str(&addr, buf, sizeof(buf)));

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_pci_addr_parse("", &addr));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_pci_addr_parse("00:20.0", &addr));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_pci_addr_parse("00:00.8", &addr));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_pci_addr_parse("100:00.0", &addr));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_pci_addr_parse("0000:00:00.0x", &addr));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_pci_addr_parse("mlx5_0", &addr));
}


/* The brief: the one reason that decides, for a screen's line */

TEST_F(topo_reach, brief_of_a_yes_is_the_way_it_takes) {
    EXPECT_TRUE(reaches());
    EXPECT_STREQ("through bridge 0000:01:00.0", verdict.brief);
    EXPECT_EQ(0u, verdict.unknown);
}

TEST_F(topo_reach, brief_of_an_acs_refusal_names_the_port_alone) {
    known(&b.path[0].acs_ctrl, GPUMEM_TOPO_ACS_RR | GPUMEM_TOPO_ACS_CR);
    EXPECT_FALSE(reaches());
    /* The reason names every closed way; the brief only the switch's, which
     * decides for GPUs under one switch */
    EXPECT_TRUE(reason_has("not on Linux's p2pdma whitelist"))
            << verdict.reason;
    EXPECT_STREQ("ACS redirects peer requests to the root complex on bridge "
                 "0000:02:10.0 (control 0x000c)", verdict.brief);
}

TEST_F(topo_reach, brief_of_a_refusal_that_unknown_facts_leave_open) {
    /* The ACS redirect sends the requests to a root complex whose host
     * bridge cannot be read: "no" for the redirect, the host bridge in the
     * unknown kinds */
    known(&b.path[0].acs_ctrl, GPUMEM_TOPO_ACS_RR);
    unknown(&a.hb_id, "cannot read it");
    EXPECT_FALSE(reaches());
    EXPECT_STREQ("ACS redirects peer requests to the root complex on bridge "
                 "0000:02:10.0 (control 0x0004)", verdict.brief);
    EXPECT_EQ((unsigned)GPUMEM_TOPO_FACT_HOST_BRIDGE, verdict.unknown);
}

TEST_F(topo_reach, brief_across_host_bridges_is_the_whitelist_on_intel) {
    move_to_root_port(&a, 0x10, 0);
    EXPECT_FALSE(reaches());
    EXPECT_TRUE(reason_has("no PCI bridge above both")) << verdict.reason;
    EXPECT_STREQ("host bridge 0000:10 (8086:6f00) is not on Linux's p2pdma "
                 "whitelist", verdict.brief);
}

TEST_F(topo_reach, brief_across_host_bridges_is_amd_rule_on_amd) {
    move_to_root_port(&a, 0x10, 0);
    strcpy(a.cpu_vendor, "AuthenticAMD");
    known(&a.cpu_family, 0x15);
    EXPECT_FALSE(reaches());
    EXPECT_STREQ("AMD CPU family 0x15 is older than Zen (0x17)",
                 verdict.brief);
}

TEST_F(topo_reach, brief_across_host_bridges_of_an_unknown_cpu_is_the_cpu) {
    /* A CPU of no known vendor may be AMD's, whose rule would carry them */
    move_to_root_port(&a, 0x10, 0);
    a.cpu_vendor[0] = '\0';
    EXPECT_FALSE(reaches());
    EXPECT_STREQ("unknown: CPU", verdict.brief);
    EXPECT_TRUE(reaches(GPUMEM_TOPO_ASSUME));
}

TEST_F(topo_reach, brief_of_unknown_facts_lists_their_kinds) {
    unknown(&a.iommu, "cannot find it");
    unknown(&b.bar_size, "cannot read it");
    unknown(&b.path[0].acs_ctrl, "cannot read it");
    a.fabric = GPUMEM_TOPO_FABRIC_UNKNOWN;
    EXPECT_FALSE(reaches());
    EXPECT_EQ((unsigned)(GPUMEM_TOPO_FACT_FABRIC | GPUMEM_TOPO_FACT_IOMMU |
                         GPUMEM_TOPO_FACT_BAR_SIZE | GPUMEM_TOPO_FACT_ACS),
              verdict.unknown);
    EXPECT_STREQ("unknown: fabric links, IOMMU, BAR size and ACS",
                 verdict.brief);

    EXPECT_TRUE(reaches(GPUMEM_TOPO_ASSUME));
    EXPECT_STREQ("assumed: fabric links, IOMMU, BAR size and ACS",
                 verdict.brief);
}

TEST_F(topo_reach, brief_of_a_known_refusal_over_an_unknown_fabric) {
    /* The bus refuses; only a fabric the topology does not describe could
     * join them: the refusal is the brief, the fabric an unknown kind */
    known(&b.bar_size, 256ul << 20);
    a.fabric = GPUMEM_TOPO_FABRIC_UNKNOWN;
    EXPECT_FALSE(reaches());
    EXPECT_STREQ("BAR of 0000:04:00.0 is 268435456 bytes, smaller than its "
                 "34359738368 bytes of memory", verdict.brief);
    EXPECT_EQ((unsigned)GPUMEM_TOPO_FACT_FABRIC, verdict.unknown);
}

TEST(topo_fact_kinds, names_each_kind_once_in_order) {
    char buf[GPUMEM_TOPO_BRIEF_MAX];

    EXPECT_STREQ("", gpumem_topo_fact_kinds_str(0, buf, sizeof(buf)));
    EXPECT_STREQ("IOMMU", gpumem_topo_fact_kinds_str(GPUMEM_TOPO_FACT_IOMMU,
                                                     buf, sizeof(buf)));
    EXPECT_STREQ("fabric links, IOMMU, BAR size, memory size, ACS, host "
                 "bridge ID and CPU",
                 gpumem_topo_fact_kinds_str(GPUMEM_TOPO_FACT_LAST - 1, buf,
                                            sizeof(buf)));
    /* A short buffer holds what fits, terminated */
    EXPECT_STREQ("fabric ", gpumem_topo_fact_kinds_str(GPUMEM_TOPO_FACT_LAST -
                                                       1, buf, 8));
}
