/**
 * gpumem tests: what the IPC transport's tests share.
 *
 * See file LICENSE for terms.
 */

#include "ipc_test.h"

#include <cstring>
#include <sys/wait.h>
#include <unistd.h>


namespace gpumem_test {

counted_comp::counted_comp() : calls(0), status(UCS_INPROGRESS)
{
    uct.func   = done;
    uct.count  = 1;
    uct.status = UCS_OK;
}

void counted_comp::done(uct_completion_t *self)
{
    counted_comp *comp = ucs_container_of(self, counted_comp, uct);

    ++comp->calls;
    comp->status = self->status;
}

}


void ipc_test::SetUp()
{
    copy_test::SetUp();
    if (HasFatalFailure()) {
        return;
    }

    m_component = gpumem_test::find_component(IPC_COMPONENT);
    ASSERT_TRUE(m_component != NULL);
}

void ipc_test::TearDown()
{
    close_uct();
    copy_test::TearDown();
}

ucs_status_t gpumem_test::ipc_connect_to(uct_iface_h iface,
                                         const std::string &dev_addr,
                                         const std::string &iface_addr,
                                         uct_ep_h *ep_p)
{
    uct_ep_params_t params = {};

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = iface;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr.data();
    params.iface_addr = (const uct_iface_addr_t*)iface_addr.data();
    return uct_ep_create(&params, ep_p);
}

void ipc_test::open_uct()
{
    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL,
                                         &m_md_config));
    ASSERT_EQ(UCS_OK, uct_md_open(m_component, IPC_COMPONENT, m_md_config,
                                  &m_md));
    ASSERT_EQ(UCS_OK, ucs_async_context_create(
                              UCS_ASYNC_MODE_THREAD_SPINLOCK, &m_async));
    ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                        &m_worker));
    ASSERT_EQ(UCS_OK, try_open_iface(IPC_DEV, &m_iface));
    uct_iface_progress_enable(m_iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

ucs_status_t ipc_test::try_open_iface(const char *dev_name,
                                      uct_iface_h *iface_p)
{
    return gpumem_test::open_device_iface(m_md, m_worker, IPC_TL, dev_name,
                                          iface_p);
}

void ipc_test::close_uct()
{
    for (uct_ep_h ep : m_eps) {
        uct_ep_destroy(ep);
    }
    m_eps.clear();
    if (m_iface != NULL) {
        uct_iface_close(m_iface);
        m_iface = NULL;
    }
    if (m_worker != NULL) {
        uct_worker_destroy(m_worker);
        m_worker = NULL;
    }
    if (m_async != NULL) {
        ucs_async_context_destroy(m_async);
        m_async = NULL;
    }
    if (m_md != NULL) {
        uct_md_close(m_md);
        m_md = NULL;
    }
    if (m_md_config != NULL) {
        uct_config_release(m_md_config);
        m_md_config = NULL;
    }
}

std::string ipc_test::device_address()
{
    uct_iface_attr_t attr;

    EXPECT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    std::string address(attr.device_addr_len, '\0');
    EXPECT_EQ(UCS_OK, uct_iface_get_device_address(
                              m_iface, (uct_device_addr_t*)&address[0]));
    return address;
}

std::string ipc_test::iface_address()
{
    uct_iface_attr_t attr;

    EXPECT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    std::string address(attr.iface_addr_len, '\0');
    EXPECT_EQ(UCS_OK, uct_iface_get_address(
                              m_iface, (uct_iface_addr_t*)&address[0]));
    return address;
}

ucs_status_t ipc_test::try_connect(const std::string &dev_addr,
                                   const std::string &iface_addr,
                                   uct_ep_h *ep_p)
{
    uct_ep_params_t params;
    ucs_status_t status;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_iface;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr.data();
    params.iface_addr = (const uct_iface_addr_t*)iface_addr.data();
    status            = uct_ep_create(&params, ep_p);
    if (status == UCS_OK) {
        m_eps.push_back(*ep_p);
    }
    return status;
}

uct_ep_h ipc_test::connect(const std::string &dev_addr,
                           const std::string &iface_addr)
{
    uct_ep_h ep = NULL;

    EXPECT_EQ(UCS_OK, try_connect(dev_addr, iface_addr, &ep));
    return ep;
}

uct_mem_h ipc_test::reg(void *address, size_t length)
{
    uct_mem_h memh = NULL;

    EXPECT_EQ(UCS_OK, uct_md_mem_reg(m_md, address, length,
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    return memh;
}

void ipc_test::dereg(uct_mem_h memh)
{
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

std::string ipc_test::pack(uct_mem_h memh)
{
    uct_md_attr_t attr;

    EXPECT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    std::string packed(attr.rkey_packed_size, '\0');
    EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, &packed[0]));
    return packed;
}

ucs_status_t ipc_test::unpack(const std::string &packed,
                              uct_rkey_bundle_t *rkey)
{
    return uct_rkey_unpack(m_component, packed.data(), rkey);
}

void ipc_test::release(uct_rkey_bundle_t *rkey)
{
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, rkey));
}

ucs_status_t ipc_test::zcopy(bool put, uct_ep_h ep, void *local,
                             size_t length, uint64_t remote, uct_rkey_t rkey,
                             gpumem_test::counted_comp *comp)
{
    uct_iov_t iov;

    iov.buffer = local;
    iov.length = length;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    return put ? uct_ep_put_zcopy(ep, &iov, 1, remote, rkey, &comp->uct) :
                 uct_ep_get_zcopy(ep, &iov, 1, remote, rkey, &comp->uct);
}

void ipc_test::wait(const gpumem_test::counted_comp &comp)
{
    for (unsigned i = 0; (comp.calls == 0) && (i < 10000000); ++i) {
        uct_worker_progress(m_worker);
    }
    ASSERT_EQ(1, comp.calls) << "completion not called";
}

void ipc_test::finish(ucs_status_t status, gpumem_test::counted_comp &comp)
{
    if (status == UCS_INPROGRESS) {
        wait(comp);
        status = comp.status;
    }
    EXPECT_EQ(UCS_OK, status);
}

uct_gpumem_ipc_stats_t ipc_test::stats()
{
    auto get = (void (*)(uct_gpumem_ipc_stats_t*))
            gpumem_test::plugin_symbol("uct_gpumem_ipc_stats");
    uct_gpumem_ipc_stats_t result;

    memset(&result, 0, sizeof(result));
    if (get != NULL) {
        get(&result);
    }
    return result;
}

pid_t ipc_test::fork_child(const std::function<void()> &body)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    EXPECT_GE(pid, 0);
    if (pid == 0) {
        body();
        close_uct();
        /* _exit runs no destructor: the device calls' GPUs close here */
        gpumem_test::reset_device_calls();
        fflush(stdout);
        _exit(HasFailure() ? 1 : 0);
    }
    return pid;
}

void ipc_test::wait_child(pid_t pid)
{
    int status;

    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status)) << "the child process was killed";
    EXPECT_EQ(0, WEXITSTATUS(status)) << "a check of the child process "
                                         "failed (above)";
}
