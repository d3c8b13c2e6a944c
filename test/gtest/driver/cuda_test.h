/**
 * gpumem tests: the cuda driver's fixture: a machine with a CUDA device,
 * skipped where there is none.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_CUDA_TEST_H_
#define GPUMEM_CUDA_TEST_H_

#include "log_test.h"

extern "C" {
#include <uct/gpumem/driver/cuda/cuda_api.h>
#include <uct/gpumem/driver/cuda/cuda_driver.h>
#include <uct/gpumem/driver/cuda/cuda_handle.h>
#include <uct/gpumem/mem/gpumem_mem.h>
}

#include <string>
#include <vector>


/**
 * The live machine's CUDA devices through the memory core; each test is
 * skipped, naming why, where no device answers.
 */
class cuda_device_test : public log_test {
protected:
    cuda_device_test() : m_topo(NULL), m_driver(NULL) {}

    virtual void SetUp();
    virtual void TearDown();

    unsigned num_gpus() const { return m_gpus.size(); }
    gpumem_gpu_t *gpu(unsigned i) const { return m_gpus[i]; }

    /* Moves bytes with GPU @a i's copy engine, polling to the end */
    ucs_status_t copy(unsigned i, uint64_t dst, bool dst_dev, uint64_t src,
                      bool src_dev, size_t size);

    gpumem_topo_t             *m_topo;
    gpumem_driver_t           *m_driver;
    std::vector<gpumem_gpu_t*> m_gpus;
};

#endif
