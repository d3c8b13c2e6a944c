/**
 * gpumem tests: how a NIC reaches a region's GPU memory, the memory core's
 * one rule (the driver's dma-buf, or the BAR where the memory lies within
 * it), which a NIC's registration and gpumem_bus() both take.
 *
 * See file LICENSE for terms.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/mem/gpumem_nic.h>
}

#include <cstdint>
#include <string>


/*
 * The choice alone: a pure function of the ways allowed and the facts.
 */
class mem_nic_choice : public testing::Test {
protected:
    enum { MIB = 1 << 20 };

    /* 4 KiB at @a vram_offset, a 16 MiB BAR, and the driver's export */
    static gpumem_nic_facts_t facts(ucs_status_t dmabuf,
                                              uint64_t vram_offset) {
        gpumem_nic_facts_t f;

        f.driver      = "emu";
        f.dmabuf      = dmabuf;
        f.phys_known  = 1;
        f.vram_offset = vram_offset;
        f.vram_size   = 4096;
        f.bar_size    = 16 * MIB;
        return f;
    }

    /* As the setting UCX_GPUMEM_IB_DEVICE_MEM_REG allows */
    gpumem_nic_way_t choose(gpumem_nic_allow_t allow,
                            const gpumem_nic_facts_t &f) {
        static const char *names[] = {"auto", "dmabuf", "bar"};
        std::string allowed_by = std::string("UCX_GPUMEM_IB_DEVICE_MEM_REG=") +
                                 names[allow];
        char reason[512];
        gpumem_nic_way_t way;

        way      = gpumem_nic_choose(allow, allowed_by.c_str(), &f, reason,
                                     sizeof(reason));
        m_reason = reason;
        return way;
    }

    bool reason_has(const char *word) const {
        return m_reason.find(word) != std::string::npos;
    }

    std::string m_reason;
};


TEST_F(mem_nic_choice, auto_takes_the_dmabuf_wherever_the_memory_lies) {
    for (uint64_t offset : {(uint64_t)0, (uint64_t)32 * MIB}) {
        EXPECT_EQ(GPUMEM_NIC_WAY_DMABUF,
                  choose(GPUMEM_NIC_ALLOW_ANY,
                         facts(UCS_OK, offset)));
        EXPECT_TRUE(reason_has("exports a dma-buf")) << m_reason;
    }
}

TEST_F(mem_nic_choice, auto_without_a_dmabuf_takes_the_bar_window) {
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR,
              choose(GPUMEM_NIC_ALLOW_ANY,
                     facts(UCS_ERR_UNSUPPORTED, 16 * MIB - 4096)));
    EXPECT_TRUE(reason_has("emu driver exports no dma-buf")) << m_reason;
    EXPECT_TRUE(reason_has("within the GPU's BAR")) << m_reason;
}

TEST_F(mem_nic_choice, auto_after_a_failed_export_takes_the_window) {
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR,
              choose(GPUMEM_NIC_ALLOW_ANY,
                     facts(UCS_ERR_IO_ERROR, 0)));
    EXPECT_TRUE(reason_has("dma-buf export failed")) << m_reason;
    EXPECT_TRUE(reason_has(ucs_status_string(UCS_ERR_IO_ERROR))) << m_reason;
}

TEST_F(mem_nic_choice, auto_without_either_names_both_reasons) {
    EXPECT_EQ(GPUMEM_NIC_WAY_NONE,
              choose(GPUMEM_NIC_ALLOW_ANY,
                     facts(UCS_ERR_UNSUPPORTED, 16 * MIB)));
    EXPECT_TRUE(reason_has("exports no dma-buf")) << m_reason;
    EXPECT_TRUE(reason_has("VRAM [0x1000000, +4096) lies outside the GPU's "
                           "BAR, which reaches only the first 16777216 "
                           "bytes")) << m_reason;
}

TEST_F(mem_nic_choice, dmabuf_setting_never_takes_the_window) {
    EXPECT_EQ(GPUMEM_NIC_WAY_DMABUF,
              choose(GPUMEM_NIC_ALLOW_DMABUF, facts(UCS_OK, 0)));
    EXPECT_TRUE(reason_has("UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf")) << m_reason;

    EXPECT_EQ(GPUMEM_NIC_WAY_NONE,
              choose(GPUMEM_NIC_ALLOW_DMABUF,
                     facts(UCS_ERR_UNSUPPORTED, 0)));
    EXPECT_TRUE(reason_has("UCX_GPUMEM_IB_DEVICE_MEM_REG=dmabuf, but the emu "
                           "driver exports no dma-buf")) << m_reason;
}

TEST_F(mem_nic_choice, bar_setting_never_takes_the_dmabuf) {
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR,
              choose(GPUMEM_NIC_ALLOW_BAR, facts(UCS_OK, 0)));
    EXPECT_TRUE(reason_has("UCX_GPUMEM_IB_DEVICE_MEM_REG=bar")) << m_reason;

    EXPECT_EQ(GPUMEM_NIC_WAY_NONE,
              choose(GPUMEM_NIC_ALLOW_BAR, facts(UCS_OK, 32 * MIB)));
    EXPECT_TRUE(reason_has("UCX_GPUMEM_IB_DEVICE_MEM_REG=bar, but VRAM "
                           "[0x2000000, +4096) lies outside the GPU's BAR"))
            << m_reason;
}

/* The window maps the memory whole: one byte past the BAR is outside, and
 * no sum wraps */
TEST_F(mem_nic_choice, bar_bounds_are_whole_and_overflow_safe) {
    gpumem_nic_facts_t f = facts(UCS_ERR_UNSUPPORTED, 0);

    f.vram_size = 16 * MIB;
    EXPECT_EQ(GPUMEM_NIC_WAY_BAR,
              choose(GPUMEM_NIC_ALLOW_BAR, f));

    f.vram_offset = 4096;
    EXPECT_EQ(GPUMEM_NIC_WAY_NONE,
              choose(GPUMEM_NIC_ALLOW_BAR, f));

    f.vram_offset = 4096;
    f.vram_size   = SIZE_MAX;
    EXPECT_EQ(GPUMEM_NIC_WAY_NONE,
              choose(GPUMEM_NIC_ALLOW_BAR, f));

    f.vram_offset = UINT64_MAX;
    f.vram_size   = 4096;
    EXPECT_EQ(GPUMEM_NIC_WAY_NONE,
              choose(GPUMEM_NIC_ALLOW_BAR, f));
}

/* A driver that does not tell where memory lies in VRAM (the cuda driver):
 * its dma-buf, or nothing, whatever the BAR's size */
TEST_F(mem_nic_choice, unknown_placement_closes_the_bar) {
    gpumem_nic_facts_t f = facts(UCS_OK, 0);

    f.phys_known = 0;
    f.driver     = "cuda";
    EXPECT_EQ(GPUMEM_NIC_WAY_DMABUF, choose(GPUMEM_NIC_ALLOW_ANY, f));
    EXPECT_EQ(GPUMEM_NIC_WAY_NONE, choose(GPUMEM_NIC_ALLOW_BAR, f));
    EXPECT_TRUE(reason_has("the cuda driver does not tell where the memory "
                           "lies in VRAM")) << m_reason;

    f.dmabuf = UCS_ERR_UNSUPPORTED;
    EXPECT_EQ(GPUMEM_NIC_WAY_NONE, choose(GPUMEM_NIC_ALLOW_ANY, f));
    EXPECT_TRUE(reason_has("exports no dma-buf")) << m_reason;
}
