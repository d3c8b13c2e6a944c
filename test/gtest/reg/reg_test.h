/**
 * gpumem tests: helpers of the registration tests: a driver that keeps its
 * registrations in a table, and parameters to register bytes.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_REG_TEST_H_
#define GPUMEM_REG_TEST_H_

#include <gtest/gtest.h>

extern "C" {
#include <uct/gpumem/reg/reg.h>
}

#include <map>


namespace gpumem_test {

/**
 * A driver below a registration domain that registers nothing with any
 * device: it hands out keys, keeps its registrations in a table, and refuses
 * what it is told to refuse, as a kernel would.
 */
class table_driver {
public:
    table_driver();

    static const gpumem_reg_ops_t ops;

    /* Keys unlike any other bytes of a registration, to look for them */
    static constexpr uint32_t first_lkey = 0x6b6c0001u;
    static constexpr uint32_t rkey_mask  = 0x3c3c0000u;

    /* Registrations the driver holds now, by lkey */
    std::map<uint32_t, gpumem_reg_params_t> registered;
    unsigned num_register_calls;
    unsigned num_deregister_calls;
    int      register_errno;       /* Refuse registration with it, if not 0 */
    unsigned dereg_refusals;       /* Refuse that many deregistrations */

private:
    static ucs_status_t mr_register(void *arg,
                                    const gpumem_reg_params_t *params,
                                    gpumem_reg_mr_t *mr_p);
    static ucs_status_t mr_deregister(void *arg, const gpumem_reg_mr_t *mr);

    uint32_t m_next_key;
};


/* Parameters to register host bytes */
gpumem_reg_params_t host_params(void *address, size_t length,
                                gpumem_reg_access_t access =
                                        GPUMEM_REG_ACCESS_REMOTE,
                                gpumem_reg_order_t order =
                                        GPUMEM_REG_ORDER_IN_ORDER);

/* Parameters to register dma-buf bytes */
gpumem_reg_params_t dmabuf_params(int fd, int64_t offset, int64_t bytes,
                                  uint64_t iova, void *host_address,
                                  gpumem_reg_access_t access =
                                          GPUMEM_REG_ACCESS_REMOTE);

}

#endif
