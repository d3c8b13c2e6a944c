/**
 * gpumem tests: one NIC for each GPU (topo_bind.c) on real machines'
 * exports, and on parts of them, against an exhaustive search.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/topo/topo.h>
}

#include <cstring>
#include <set>
#include <string>
#include <vector>


class topo_bind : public testing::Test {
protected:
    virtual void TearDown() {
        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
        }
    }

    /* A real machine's export; no fact of this machine's /sys plays a
     * part in where a NIC is */
    void load(const std::string &name) {
        std::string xml             = std::string(GPUMEM_TEST_TOPO_DIR) +
                                      "/" + name;
        gpumem_topo_params_t params = {xml.c_str(), NULL, "/nonexistent",
                                       NULL};

        ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo)) << xml;
    }

    /* The loaded machine with only the devices named, in its order */
    gpumem_topo_t part(const std::set<std::string> &names) {
        gpumem_topo_t sub = {};

        m_part.clear();
        for (unsigned i = 0; i < m_topo->num_devs; ++i) {
            if (names.count(m_topo->devs[i].name)) {
                m_part.push_back(m_topo->devs[i]);
                sub.num_gpus += (m_topo->devs[i].type == GPUMEM_TOPO_DEV_GPU);
                sub.num_nics += (m_topo->devs[i].type == GPUMEM_TOPO_DEV_NIC);
            }
        }
        EXPECT_EQ(names.size(), m_part.size());
        sub.num_devs = m_part.size();
        sub.devs     = m_part.data();
        return sub;
    }

    /* Each GPU's NIC, by name */
    std::vector<std::string> bind(const gpumem_topo_t *topo,
                                  unsigned flags = 0) {
        std::vector<std::string> names;

        m_binds.assign(topo->num_gpus + 1, gpumem_topo_nic_bind_t());
        EXPECT_EQ(UCS_OK, gpumem_topo_bind_nics(topo, flags, m_binds.data()));
        for (unsigned gpu = 0; gpu < topo->num_gpus; ++gpu) {
            names.push_back(topo->devs[m_binds[gpu].nic].name);
        }
        return names;
    }

    /* The ranking of a GPU's NICs, as indices in devs[] */
    static std::vector<unsigned> ranking(const gpumem_topo_t *topo,
                                         unsigned gpu) {
        std::vector<gpumem_topo_nic_rank_t> ranks(topo->num_nics);
        std::vector<unsigned> nics;

        gpumem_topo_rank_nics(topo, gpu, 0, ranks.data());
        for (const gpumem_topo_nic_rank_t &rank : ranks) {
            nics.push_back(rank.nic);
        }
        return nics;
    }

    /*
     * By trying every assignment: the sums of relations and of PCI links
     * of the best one, least first, and of those as good the first with
     * each GPU in turn given the earliest NIC of its ranking.
     */
    static std::vector<unsigned> search(const gpumem_topo_t *topo) {
        unsigned gpus  = topo->num_gpus, nics = topo->num_nics;
        unsigned share = (gpus + nics - 1) / nics;
        std::vector<std::vector<unsigned>> order(gpus);
        std::vector<unsigned> pick(gpus, 0), best;
        unsigned best_rel = ~0u, best_hops = ~0u;

        for (unsigned gpu = 0; gpu < gpus; ++gpu) {
            order[gpu] = ranking(topo, gpu);
        }

        /* pick[] counts in the ranking's order, GPU 0 the most
         * significant, so the first best found is the one wanted */
        for (;;) {
            std::vector<unsigned> load(topo->num_devs, 0);
            unsigned rel = 0, hops = 0, h, gpu;
            bool fits = true;

            for (gpu = 0; gpu < gpus; ++gpu) {
                unsigned nic = order[gpu][pick[gpu]];

                fits &= (++load[nic] <= share);
                rel  += gpumem_topo_relation(&topo->devs[gpu].reach,
                                             &topo->devs[nic].reach, &h);
                hops += h;
            }
            if (fits && ((rel < best_rel) ||
                         ((rel == best_rel) && (hops < best_hops)))) {
                best_rel  = rel;
                best_hops = hops;
                best.clear();
                for (gpu = 0; gpu < gpus; ++gpu) {
                    best.push_back(order[gpu][pick[gpu]]);
                }
            }

            for (gpu = gpus; gpu > 0; --gpu) {
                if (++pick[gpu - 1] < nics) {
                    break;
                }
                pick[gpu - 1] = 0;
            }
            if (gpu == 0) {
                return best;
            }
        }
    }

    static std::set<std::string> distinct(const std::vector<std::string> &v) {
        return std::set<std::string>(v.begin(), v.end());
    }

    gpumem_topo_t                       *m_topo = NULL;
    std::vector<gpumem_topo_dev_t>      m_part;
    std::vector<gpumem_topo_nic_bind_t> m_binds;
};


/* Two H100s rank mlx5_3 first (cuda2 through its host bridges, cuda3 under
 * its switch); cuda2 takes the CX-6's second port, which cuda0 does not
 * need */
TEST_F(topo_bind, xe8640_four_h100s_get_four_distinct_nics) {
    std::vector<std::string> nics;

    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");
    nics = bind(m_topo);

    EXPECT_EQ(4u, distinct(nics).size());
    EXPECT_EQ((std::vector<std::string>{"mlx5_0", "mlx5_2", "mlx5_1",
                                        "mlx5_3"}), nics);
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_binds[3].relation);
    EXPECT_EQ(0u, m_binds[3].rank);
    EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_SOCKETS, m_binds[2].relation);
    EXPECT_EQ(2u, m_binds[2].rank) << "after mlx5_3 and mlx5_0";
    for (unsigned gpu = 0; gpu < m_topo->num_gpus; ++gpu) {
        EXPECT_EQ(1u, m_binds[gpu].sharers) << gpu;
    }
}

/* The XE8640's export was saved with one port up, mlx5_0's: on the live
 * machine, where ports are as they are now, a port that is down takes no
 * GPU */
TEST_F(topo_bind, ports_known_down_take_no_gpu_when_asked) {
    std::vector<std::string> nics;

    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");
    nics = bind(m_topo, GPUMEM_TOPO_BIND_ACTIVE);

    EXPECT_EQ((std::vector<std::string>{"mlx5_0", "mlx5_0", "mlx5_0",
                                        "mlx5_0"}), nics);
    for (unsigned gpu = 0; gpu < m_topo->num_gpus; ++gpu) {
        EXPECT_EQ(4u, m_binds[gpu].sharers) << gpu;
    }
}

/* Lassen: each pair of V100s ranks the first port of its socket's CX-5
 * first; the pair splits over the two ports */
TEST_F(topo_bind, lassen_four_v100s_get_four_distinct_ports) {
    std::vector<std::string> nics;

    load("mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml");
    nics = bind(m_topo);

    EXPECT_EQ((std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2",
                                        "mlx5_3"}), nics);
    for (unsigned gpu = 0; gpu < m_topo->num_gpus; ++gpu) {
        EXPECT_EQ(GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES, m_binds[gpu].relation)
                << gpu;
        EXPECT_EQ(gpu % 2, m_binds[gpu].rank) << gpu;
    }
}

/* Choosing GPU by GPU, cuda0 would take mlx5_2, cuda1's only near NIC,
 * and leave cuda1 a NIC across the sockets */
TEST_F(topo_bind, early_gpu_leaves_a_later_gpus_only_near_nic) {
    gpumem_topo_t sub;

    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");
    sub = part({"cuda0", "cuda1", "mlx5_2", "mlx5_3"});
    ASSERT_STREQ("mlx5_2", sub.devs[ranking(&sub, 0)[0]].name);

    EXPECT_EQ((std::vector<std::string>{"mlx5_3", "mlx5_2"}), bind(&sub));
    EXPECT_EQ(GPUMEM_TOPO_REL_SAME_SWITCH, m_binds[1].relation);
    EXPECT_EQ(1u, m_binds[0].rank);
}

/* Four GPUs, two NICs: two GPUs each, the near ones */
TEST_F(topo_bind, fewer_nics_are_shared_evenly_nearest_first) {
    gpumem_topo_t sub;

    load("fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml");
    sub = part({"cuda0", "cuda1", "cuda2", "cuda3", "mlx5_2", "mlx5_3"});
    EXPECT_EQ((std::vector<std::string>{"mlx5_2", "mlx5_2", "mlx5_3",
                                        "mlx5_3"}), bind(&sub));
    for (unsigned gpu = 0; gpu < sub.num_gpus; ++gpu) {
        EXPECT_EQ(2u, m_binds[gpu].sharers) << gpu;
    }

    /* Three NICs for four GPUs: none serves more than two */
    sub = part({"cuda0", "cuda1", "cuda2", "cuda3", "mlx5_0", "mlx5_2",
                "mlx5_3"});
    EXPECT_EQ((std::vector<std::string>{"mlx5_0", "mlx5_2", "mlx5_3",
                                        "mlx5_3"}), bind(&sub));
    EXPECT_EQ(2u, m_binds[3].sharers);
}

TEST_F(topo_bind, one_nic_serves_every_gpu) {
    load("mpibind-pascal-2xBDW-2xP100-1xIB.xml");

    EXPECT_EQ((std::vector<std::string>{"mlx5_0", "mlx5_0"}), bind(m_topo));
    EXPECT_EQ(2u, m_binds[0].sharers);
    EXPECT_EQ(0u, m_binds[1].rank);
}

TEST_F(topo_bind, no_nic_is_no_binding) {
    gpumem_topo_nic_bind_t binds[16];

    load("hwloc-nvidiaDGX2-16xV100-nvswitch.xml");
    memset(binds, 0xa5, sizeof(binds));
    EXPECT_EQ(UCS_ERR_NO_DEVICE, gpumem_topo_bind_nics(m_topo, 0, binds));
    EXPECT_EQ(0xa5a5a5a5u, binds[0].nic) << "left as it was";
}

/* Every part of the two multi-NIC machines with a GPU and a NIC, against
 * the search of every assignment: the same NICs, ties broken alike */
TEST_F(topo_bind, binding_is_the_best_assignment_of_every_part) {
    static const char *machines[] = {
        "fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml",
        "mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml"
    };
    unsigned parts = 0;

    for (const char *machine : machines) {
        if (m_topo != NULL) {
            gpumem_topo_destroy(m_topo);
            m_topo = NULL;
        }
        load(machine);
        ASSERT_EQ(8u, m_topo->num_devs);

        for (unsigned mask = 1; mask < 256; ++mask) {
            std::set<std::string> names;
            std::vector<unsigned> best;
            gpumem_topo_t sub;

            for (unsigned i = 0; i < m_topo->num_devs; ++i) {
                if (mask & (1u << i)) {
                    names.insert(m_topo->devs[i].name);
                }
            }
            sub = part(names);
            if ((sub.num_gpus == 0) || (sub.num_nics == 0)) {
                continue;
            }

            best = search(&sub);
            bind(&sub);
            for (unsigned gpu = 0; gpu < sub.num_gpus; ++gpu) {
                EXPECT_EQ(best[gpu], m_binds[gpu].nic)
                        << machine << " part " << mask << " GPU " << gpu;
            }
            ++parts;
        }
    }
    EXPECT_EQ(2u * 15 * 15, parts);
}
