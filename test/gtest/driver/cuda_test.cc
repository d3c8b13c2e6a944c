/**
 * gpumem tests: the cuda driver's fixture.
 *
 * See file LICENSE for terms.
 */

#include "cuda_test.h"

#include <cstdlib>


void cuda_device_test::SetUp()
{
    gpumem_topo_params_t params = {};
    char why[256];

    log_test::SetUp();
    if (gpumem_cuda_probe(why, sizeof(why)) != UCS_OK) {
        GTEST_SKIP() << "no CUDA device: " << why;
    }

    /* The live machine, as the cuda driver's context opens it: with the
     * topology and facts its settings name (the emulated CUDA's machine) */
    params.xml_path   = getenv("UCX_GPUMEM_TOPO_XML");
    params.facts_path = getenv("UCX_GPUMEM_TOPO_FACTS");
    params.sysfs_root = getenv("UCX_GPUMEM_SYSFS_ROOT");
    ASSERT_EQ(UCS_OK, gpumem_topo_load(&params, &m_topo));
    ASSERT_EQ(UCS_OK, gpumem_cuda_open(m_topo, &m_driver));
    for (unsigned i = 0; i < m_driver->ops->num_gpus(m_driver); ++i) {
        gpumem_gpu_t *gpu;
        ASSERT_EQ(UCS_OK, gpumem_gpu_create(m_driver, i, &gpu));
        m_gpus.push_back(gpu);
    }
    ASSERT_GE(m_gpus.size(), 1u);
}

void cuda_device_test::TearDown()
{
    for (gpumem_gpu_t *gpu : m_gpus) {
        gpumem_gpu_destroy(gpu);
    }
    m_gpus.clear();
    if (m_driver != NULL) {
        m_driver->ops->close(m_driver);
    }
    if (m_topo != NULL) {
        gpumem_topo_destroy(m_topo);
    }
    log_test::TearDown();
}

ucs_status_t cuda_device_test::copy(unsigned i, uint64_t dst, bool dst_dev,
                                    uint64_t src, bool src_dev, size_t size)
{
    gpumem_driver_copy_t op;
    ucs_status_t status;

    status = m_driver->ops->copy(m_driver->ops->gpu(m_driver, i), dst,
                                 dst_dev, src, src_dev, size, &op);
    while (status == UCS_INPROGRESS) {
        status = m_driver->ops->copy_poll(&op);
    }
    return status;
}
