/**
 * gpumem tests: what the copy transport's tests share: a fresh emu machine
 * per test, the plugin's device memory calls to check bytes with, an
 * interface of a transport, and the wait for a UCP request.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_COPY_TEST_H_
#define GPUMEM_COPY_TEST_H_

#include <common/gpumem_test.h>
#include <common/temp_dir.h>

#include <gpumem/gpumem.h>
#include <uct/api/uct.h>
#include <ucp/api/ucp.h>

#include <functional>
#include <string>


namespace gpumem_test {

/* An interface of transport @a tl_name on device @a dev_name of @a md, in
 * the transport's default configuration; @a err_handler, if given, is its
 * error handler, called with @a err_arg */
ucs_status_t open_device_iface(uct_md_h md, uct_worker_h worker,
                               const char *tl_name, const char *dev_name,
                               uct_iface_h *iface_p,
                               uct_error_handler_t err_handler = NULL,
                               void *err_arg = NULL);

/* The status of @a request once complete, calling @a progress until then;
 * UCS_INPROGRESS after a minute */
ucs_status_t ucp_wait(ucs_status_ptr_t request,
                      const std::function<void()> &progress);

}


/**
 * Each test runs on its own emu machine (a temporary shared state directory,
 * 64 MiB per GPU), set in the environment so that every reader of the
 * UCX_GPUMEM_* settings agrees: UCT's and UCP's memory domains and the
 * device memory calls. The calls are the loaded plugin's: the test binary's
 * own copy of them would open a second emu driver, whose device addresses
 * the plugin's would not know.
 */
class copy_test : public testing::Test {
protected:
    virtual void SetUp();
    virtual void TearDown();

    /* @a size bytes of device memory on GPU @a gpu */
    void *device_alloc(size_t size, int gpu = 0);
    void device_free(void *ptr);

    void to_device(void *dst, const std::string &data);
    std::string from_device(const void *src, size_t size);
    bool is_device(const void *ptr);

    /* Bytes that differ from one @a seed to the next */
    static std::string pattern(size_t size, unsigned seed);

    gpumem_test::emu_env m_emu;

private:
    decltype(&gpumem_device_malloc) m_malloc = NULL;
    decltype(&gpumem_device_free)   m_free   = NULL;
    decltype(&gpumem_device_memcpy) m_memcpy = NULL;
    decltype(&gpumem_device_set)    m_set    = NULL;
    decltype(&gpumem_device_query)  m_query  = NULL;
};

#endif
