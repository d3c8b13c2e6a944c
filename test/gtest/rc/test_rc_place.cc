/**
 * gpumem tests: the place of a NIC for a GPU (ib_place.c), on real
 * machines' topologies, and the estimates of gpumem_rc that follow: each
 * GPU's bytes go by the NIC the topology ranks nearest.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/ib/ib_place.h>
}

#include <cstring>
#include <string>
#include <unistd.h>


class rc_place : public testing::Test {
protected:
    /* Dell XE8640: 4 H100, CX7 NICs beside GPUs 1 and 3 */
    virtual void SetUp() {
        gpumem_topo_params_t params = {};
        std::string xml = std::string(GPUMEM_TEST_TOPO_DIR) +
                          "/fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual"
                          ".xml";

        params.xml_path   = xml.c_str();
        params.sysfs_root = "/nonexistent";
        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));
    }

    virtual void TearDown() {
        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
        }
    }

    uct_gpumem_ib_place_t place(unsigned gpu, const char *nic) {
        uct_gpumem_ib_place_t p;
        uct_gpumem_ib_place_find(m_topo, gpu, nic, &p);
        return p;
    }

    gpumem_topo_t *m_topo = NULL;
};


TEST_F(rc_place, nearest_nic_ranks_first_under_the_gpus_switch) {
    uct_gpumem_ib_place_t p = place(1, "mlx5_2");

    ASSERT_TRUE(p.known) << p.reason;
    EXPECT_EQ(0u, p.rank);
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, p.relation);
    EXPECT_TRUE(p.dma_reaches) << p.reason;
}

TEST_F(rc_place, nic_across_sockets_ranks_last) {
    uct_gpumem_ib_place_t p = place(1, "mlx5_3");

    ASSERT_TRUE(p.known) << p.reason;
    EXPECT_EQ(m_topo->num_nics - 1, p.rank);
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS, p.relation);
}

TEST_F(rc_place, nic_that_cannot_reach_gpu_memory_is_known_as_such) {
    /* GPU 1's memory BAR (256 MiB) is smaller than its memory (80 GiB): no
     * NIC reaches all of it through the BAR */
    char path[] = "/tmp/gpumem_test_factsXXXXXX";
    gpumem_topo_params_t params = {};
    std::string xml = std::string(GPUMEM_TEST_TOPO_DIR) +
                      "/fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual"
                      ".xml";
    const char facts[] = "bar 0000:5f:00.0 268435456\n"
                         "mem 0000:5f:00.0 85899345920\n";
    uct_gpumem_ib_place_t p;
    int fd = mkstemp(path);

    ASSERT_GE(fd, 0);
    ASSERT_EQ((ssize_t)strlen(facts), write(fd, facts, strlen(facts)));
    close(fd);
    gpumem_topo_destroy(m_topo);
    m_topo            = NULL;
    params.xml_path   = xml.c_str();
    params.sysfs_root = "/nonexistent";
    params.facts_path = path;
    ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));
    unlink(path);

    p = place(1, "mlx5_2");
    ASSERT_TRUE(p.known) << p.reason;
    EXPECT_EQ(0u, p.rank) << "still the nearest";
    EXPECT_FALSE(p.dma_reaches);
    EXPECT_NE(std::string::npos, std::string(p.reason).find("BAR"))
            << p.reason;
}

TEST_F(rc_place, device_outside_the_topology_is_unknown_and_reaches) {
    uct_gpumem_ib_place_t p = place(1, "rxe0");

    EXPECT_FALSE(p.known);
    EXPECT_TRUE(p.dma_reaches);
    EXPECT_NE(std::string::npos, std::string(p.reason).find("rxe0"));

    uct_gpumem_ib_place_find(NULL, 0, "mlx5_0", &p);
    EXPECT_FALSE(p.known);
    EXPECT_TRUE(p.dma_reaches);
}

TEST_F(rc_place, estimates_favour_the_nearest_nic) {
    uct_gpumem_ib_place_t near = place(1, "mlx5_2");
    uct_gpumem_ib_place_t far  = place(1, "mlx5_3");
    double near_bw, near_lat, far_bw, far_lat;

    uct_gpumem_ib_place_estimates(&near, 25e9, 700e-9, &near_bw, &near_lat);
    uct_gpumem_ib_place_estimates(&far, 25e9, 700e-9, &far_bw, &far_lat);
    EXPECT_DOUBLE_EQ(25e9, near_bw);
    EXPECT_GT(near_bw, far_bw);
    EXPECT_LT(near_lat, far_lat);
    EXPECT_GT(near_lat, 700e-9) << "PCI links add latency";
}

TEST_F(rc_place, estimates_of_an_unknown_place_are_the_ports) {
    uct_gpumem_ib_place_t p = place(0, "rxe0");
    double bw, lat;

    uct_gpumem_ib_place_estimates(&p, 1e9, 1e-6, &bw, &lat);
    EXPECT_DOUBLE_EQ(1e9, bw);
    EXPECT_DOUBLE_EQ(1e-6, lat);
}
