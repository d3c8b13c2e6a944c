/**
 * gpumem tests: the device memory calls for applications (gpumem.h).
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

#include <gpumem/gpumem.h>

#include <cstdlib>
#include <string>


class api : public testing::Test {
protected:
    virtual void SetUp() {
        char tmpl[] = "/tmp/gpumem_api.XXXXXX";

        ASSERT_TRUE(mkdtemp(tmpl) != NULL);
        m_shm_dir = tmpl;
        setenv("UCX_GPUMEM_EMU_SHM_DIR", tmpl, 1);
        setenv("UCX_GPUMEM_EMU_VRAM_SIZE", "64m", 1);
    }

    virtual void TearDown() {
        gpumem_device_set(0);
        unsetenv("UCX_GPUMEM_EMU_SHM_DIR");
        unsetenv("UCX_GPUMEM_EMU_VRAM_SIZE");
        /* Every allocation freed: the GPUs closed, nothing left shared */
        EXPECT_EQ(0, system(("rmdir " + m_shm_dir).c_str()));
    }

    std::string m_shm_dir;
};


TEST_F(api, counts_the_emu_machines_gpus) {
    int count = 0;

    ASSERT_EQ(0, gpumem_device_count(&count));
    EXPECT_EQ(2, count);
}

TEST_F(api, copies_host_to_device_to_peer_device_to_host) {
    std::string in(100000, 'x'), out(100000, '\0');
    void *dev0, *dev1;

    for (size_t i = 0; i < in.size(); ++i) {
        in[i] = (char)(i * 7);
    }

    ASSERT_EQ(0, gpumem_device_malloc(&dev0, in.size()));
    ASSERT_EQ(0, gpumem_device_set(1));
    ASSERT_EQ(0, gpumem_device_malloc(&dev1, in.size()));

    EXPECT_EQ(0, gpumem_device_memcpy(dev0, &in[0], in.size()));
    EXPECT_EQ(0, gpumem_device_memcpy(dev1, dev0, in.size()));
    EXPECT_EQ(0, gpumem_device_memcpy(&out[0], dev1, out.size()));
    EXPECT_EQ(in, out);

    EXPECT_EQ(0, gpumem_device_free(dev1));
    EXPECT_EQ(0, gpumem_device_free(dev0));
}

TEST_F(api, memset_and_query) {
    gpumem_pointer_attr_t attr;
    std::string out(5000, 'x');
    char host;
    char *dev;

    ASSERT_EQ(0, gpumem_device_malloc((void**)&dev, 5000));
    EXPECT_EQ(0, gpumem_device_memset(dev, 'q', 5000));
    EXPECT_EQ(0, gpumem_device_memcpy(&out[0], dev, 5000));
    EXPECT_EQ(std::string(5000, 'q'), out);

    ASSERT_EQ(0, gpumem_device_query(dev + 100, &attr));
    EXPECT_EQ(1, attr.is_device);
    EXPECT_EQ(0, attr.device);
    EXPECT_EQ((void*)dev, attr.base);
    EXPECT_EQ(8192u, attr.size);

    ASSERT_EQ(0, gpumem_device_query(&host, &attr));
    EXPECT_EQ(0, attr.is_device);
    EXPECT_EQ(0, gpumem_device_free(dev));
}

TEST_F(api, bad_arguments_are_errors) {
    char host;
    void *dev;
    int count;

    gpumem_device_count(&count);
    EXPECT_NE(0, gpumem_device_set(count));
    EXPECT_NE(0, gpumem_device_set(-1));
    EXPECT_NE(0, gpumem_device_malloc(&dev, 0));
    EXPECT_NE(0, gpumem_device_free(&host));
    EXPECT_EQ(0, gpumem_device_free(NULL));
    EXPECT_STRNE("", gpumem_result_string(-1));
}

/* The default machine's two GPUs share a PCIe switch: each maps the other's
 * memory, and says through what */
TEST_F(api, gpus_under_one_switch_access_each_other) {
    char reason[256];
    int can_access = 0;

    ASSERT_EQ(0, gpumem_device_can_access_peer(&can_access, 0, 1, reason,
                                               sizeof(reason)));
    EXPECT_EQ(1, can_access);
    EXPECT_NE(std::string::npos, std::string(reason).find("bridge"))
            << reason;
    ASSERT_EQ(0, gpumem_device_can_access_peer(&can_access, 1, 1, NULL, 0));
    EXPECT_EQ(1, can_access);
    EXPECT_GT(0, gpumem_device_can_access_peer(&can_access, 0, 2, NULL, 0));
}

/* GPUs of two sockets of a POWER8 machine: no access, and the reason */
TEST_F(api, gpus_across_sockets_do_not_access_each_other_and_say_why) {
    char reason[256];
    int can_access = 1;

    setenv("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
           "/hwloc-power8-minsky-4xP100-nvlink.xml", 1);
    ASSERT_EQ(0, gpumem_device_can_access_peer(&can_access, 0, 3, reason,
                                               sizeof(reason)));
    unsetenv("UCX_GPUMEM_TOPO_XML");
    EXPECT_EQ(0, can_access);
    EXPECT_NE(std::string::npos,
              std::string(reason).find("no PCI bridge above both"))
            << reason;
}
