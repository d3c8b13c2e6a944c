/**
 * gpumem tests: what the copy transport's tests share.
 *
 * See file LICENSE for terms.
 */

#include "copy_test.h"

#include <chrono>
#include <cstdlib>
#include <cstring>


namespace gpumem_test {

ucs_status_t open_device_iface(uct_md_h md, uct_worker_h worker,
                               const char *tl_name, const char *dev_name,
                               uct_iface_h *iface_p,
                               uct_error_handler_t err_handler, void *err_arg)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, tl_name, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl_name;
    params.mode.device.dev_name = dev_name;
    if (err_handler != NULL) {
        params.field_mask       |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                   UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.err_handler       = err_handler;
        params.err_handler_arg   = err_arg;
        params.err_handler_flags = 0;
    }
    status = uct_iface_open(md, worker, &params, config, iface_p);
    uct_config_release(config);
    return status;
}

ucs_status_t ucp_wait(ucs_status_ptr_t request,
                      const std::function<void()> &progress)
{
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::seconds(60);
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }

    while (((status = ucp_request_check_status(request)) ==
            UCS_INPROGRESS) &&
           (std::chrono::steady_clock::now() < deadline)) {
        progress();
    }
    ucp_request_free(request);
    return status;
}

}


void copy_test::SetUp()
{
    ASSERT_TRUE(m_emu.set("copy"));

    ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
    m_malloc = (decltype(m_malloc))gpumem_test::plugin_symbol(
            "gpumem_device_malloc");
    m_free   = (decltype(m_free))gpumem_test::plugin_symbol(
            "gpumem_device_free");
    m_memcpy = (decltype(m_memcpy))gpumem_test::plugin_symbol(
            "gpumem_device_memcpy");
    m_set    = (decltype(m_set))gpumem_test::plugin_symbol(
            "gpumem_device_set");
    m_query  = (decltype(m_query))gpumem_test::plugin_symbol(
            "gpumem_device_query");
    ASSERT_TRUE((m_malloc != NULL) && (m_free != NULL) &&
                (m_memcpy != NULL) && (m_set != NULL) && (m_query != NULL));
}

void copy_test::TearDown()
{
    gpumem_test::reset_device_calls();
    /* Everything closed and freed: the machine's state is gone */
    m_emu.unset();
}

void *copy_test::device_alloc(size_t size, int gpu)
{
    void *ptr = NULL;

    EXPECT_EQ(0, m_set(gpu));
    EXPECT_EQ(0, m_malloc(&ptr, size));
    EXPECT_EQ(0, m_set(0));
    return ptr;
}

void copy_test::device_free(void *ptr)
{
    EXPECT_EQ(0, m_free(ptr));
}

void copy_test::to_device(void *dst, const std::string &data)
{
    ASSERT_EQ(0, m_memcpy(dst, data.data(), data.size()));
}

std::string copy_test::from_device(const void *src, size_t size)
{
    std::string data(size, '\0');

    EXPECT_EQ(0, m_memcpy(&data[0], src, size));
    return data;
}

bool copy_test::is_device(const void *ptr)
{
    gpumem_pointer_attr_t attr;

    return (m_query(ptr, &attr) == 0) && attr.is_device;
}

std::string copy_test::pattern(size_t size, unsigned seed)
{
    std::string data(size, '\0');
    size_t i;

    for (i = 0; i < size; ++i) {
        data[i] = (char)((i * 131) + (i >> 9) + (seed * 17) + 1);
    }
    return data;
}
