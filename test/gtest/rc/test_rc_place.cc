/**
 * gpumem tests: the place of a NIC for a GPU (ib_place.c), on real
 * machines' topologies, and the estimates of gpumem_rc that follow: each
 * GPU's bytes go by the NIC the topology binds it to, its nearest where no
 * other GPU needs that one more.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/ib/ib_place.h>
}

#include <cstring>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>


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

    void load(const std::string &name) {
        gpumem_topo_params_t params = {};
        std::string xml = std::string(GPUMEM_TEST_TOPO_DIR) + "/" + name;

        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
            m_topo = NULL;
        }
        params.xml_path   = xml.c_str();
        params.sysfs_root = "/nonexistent";
        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));
    }

    uct_gpumem_ib_place_t place(unsigned gpu, const char *nic) {
        uct_gpumem_ib_place_t p;
        uct_gpumem_ib_place_find(m_topo, gpu, nic, 0, &p);
        return p;
    }

    /* The NIC whose gpumem_rc UCP takes for the GPU among ports of one
     * rate: the most bandwidth, which must also be the least latency */
    std::string best_estimated(unsigned gpu) {
        double best_bw = 0, best_lat = 0, bw, lat;
        std::string best_by_bw, best_by_lat;

        for (unsigned i = 0; i < m_topo->num_devs; ++i) {
            const gpumem_topo_dev_t &nic = m_topo->devs[i];
            if (nic.type != GPUMEM_TOPO_DEV_NIC) {
                continue;
            }

            uct_gpumem_ib_place_t p = place(gpu, nic.name);
            EXPECT_TRUE(p.known && p.bind_known) << nic.name;
            uct_gpumem_ib_place_estimates(&p, 25e9, 700e-9, &bw, &lat);
            if (best_by_bw.empty() || (bw > best_bw)) {
                best_bw    = bw;
                best_by_bw = nic.name;
            }
            if (best_by_lat.empty() || (lat < best_lat)) {
                best_lat    = lat;
                best_by_lat = nic.name;
            }
        }
        EXPECT_EQ(best_by_bw, best_by_lat) << "GPU " << gpu;
        return best_by_bw;
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

    uct_gpumem_ib_place_find(NULL, 0, "mlx5_0", 0, &p);
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

/* UCP opening every NIC takes for each rank's GPU the NIC it is bound to:
 * on the XE8640 cuda2 not cuda3's mlx5_3, on Lassen the second GPU of a
 * socket not the first one's port */
TEST_F(rc_place, each_gpus_best_estimated_nic_is_its_bound_one) {
    static const char *machines[] = {
        "fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml",
        "mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml"
    };

    for (const char *machine : machines) {
        std::vector<gpumem_topo_nic_bind_t> binds;
        std::set<std::string> best;

        load(machine);
        ASSERT_EQ(4u, m_topo->num_gpus);
        binds.resize(m_topo->num_gpus);
        ASSERT_EQ(UCS_OK, gpumem_topo_bind_nics(m_topo, 0, binds.data()));
        for (unsigned gpu = 0; gpu < m_topo->num_gpus; ++gpu) {
            std::string nic = best_estimated(gpu);

            EXPECT_EQ(m_topo->devs[binds[gpu].nic].name, nic)
                    << machine << " GPU " << gpu;
            EXPECT_TRUE(place(gpu, nic.c_str()).bound);
            best.insert(nic);
        }
        EXPECT_EQ(4u, best.size()) << machine;
    }
}

/* cuda2's nearest NIC, mlx5_3 across its host bridges, is cuda3's under its
 * switch: it goes just below cuda2's own, mlx5_1 across the sockets */
TEST_F(rc_place, nearer_nic_bound_to_another_gpu_goes_just_below) {
    uct_gpumem_ib_place_t near  = place(2, "mlx5_3");
    uct_gpumem_ib_place_t bound = place(2, "mlx5_1");
    double near_bw, near_lat, bound_bw, bound_lat;

    ASSERT_EQ(0u, near.rank);
    ASSERT_FALSE(near.bound);
    ASSERT_TRUE(bound.bound);
    EXPECT_STREQ("mlx5_1", near.bound_nic);

    uct_gpumem_ib_place_estimates(&near, 25e9, 700e-9, &near_bw, &near_lat);
    uct_gpumem_ib_place_estimates(&bound, 25e9, 700e-9, &bound_bw,
                                  &bound_lat);
    EXPECT_DOUBLE_EQ(25e9 * 0.5, bound_bw) << "across the sockets, as before";
    EXPECT_DOUBLE_EQ(700e-9 + (10 * 50e-9), bound_lat);
    EXPECT_LT(near_bw, bound_bw);
    EXPECT_GT(near_bw, bound_bw * 0.98);
    EXPECT_GT(near_lat, bound_lat);
    EXPECT_LT(near_lat, bound_lat * 1.02);
}

/* cuda1 is bound to its nearest, mlx5_2: mlx5_3 across the sockets keeps
 * the estimates it had, below already */
TEST_F(rc_place, farther_nic_keeps_its_estimates) {
    uct_gpumem_ib_place_t far = place(1, "mlx5_3");
    double bw, lat;

    ASSERT_FALSE(far.bound);
    EXPECT_STREQ("mlx5_2", far.bound_nic);
    uct_gpumem_ib_place_estimates(&far, 25e9, 700e-9, &bw, &lat);
    EXPECT_DOUBLE_EQ(25e9 * 0.5, bw);
    EXPECT_DOUBLE_EQ(700e-9 + (10 * 50e-9), lat);
}
