/**
 * gpumem tests: what the IPC transport's tests share: the gpumem_ipc domain,
 * an interface and endpoints through the public UCT API, keys, the
 * transport's statistics, and peer processes.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_IPC_TEST_H_
#define GPUMEM_IPC_TEST_H_

#include <copy/copy_test.h>

extern "C" {
#include <uct/gpumem/ipc/ipc_cache.h>
#include <ucs/async/async_fwd.h>
}

#include <functional>
#include <string>
#include <vector>


#define IPC_COMPONENT  "gpumem_ipc"
#define IPC_TL         "gpumemipc"
#define IPC_DEV        "gpumem"


namespace gpumem_test {

/* An endpoint of @a iface to the interface at those addresses */
ucs_status_t ipc_connect_to(uct_iface_h iface, const std::string &dev_addr,
                            const std::string &iface_addr, uct_ep_h *ep_p);

/* A completion that counts its calls */
struct counted_comp {
    uct_completion_t uct;
    int              calls;
    ucs_status_t     status;

    counted_comp();
    static void done(uct_completion_t *self);
};

}


class ipc_test : public copy_test {
protected:
    virtual void SetUp();
    virtual void TearDown();

    /* This process's gpumem_ipc domain, a worker and an interface */
    void open_uct();
    void close_uct();

    /* Another interface of the transport, on the device @a dev_name */
    ucs_status_t try_open_iface(const char *dev_name, uct_iface_h *iface_p);

    std::string device_address();
    std::string iface_address();

    /* An endpoint to the interface at those addresses */
    ucs_status_t try_connect(const std::string &dev_addr,
                             const std::string &iface_addr, uct_ep_h *ep_p);
    uct_ep_h connect(const std::string &dev_addr,
                     const std::string &iface_addr);

    uct_mem_h reg(void *address, size_t length);
    void dereg(uct_mem_h memh);
    std::string pack(uct_mem_h memh);
    ucs_status_t unpack(const std::string &packed, uct_rkey_bundle_t *rkey);
    void release(uct_rkey_bundle_t *rkey);

    ucs_status_t zcopy(bool put, uct_ep_h ep, void *local, size_t length,
                       uint64_t remote, uct_rkey_t rkey,
                       gpumem_test::counted_comp *comp);

    /* Progress until @a comp is called, or give up after a long while */
    void wait(const gpumem_test::counted_comp &comp);

    /* Posted with @a status; UCS_INPROGRESS: wait for the completion */
    void finish(ucs_status_t status, gpumem_test::counted_comp &comp);

    /* The plugin's statistics of the transport */
    uct_gpumem_ipc_stats_t stats();

    /* Runs @a body in a child process, which exits 0 unless a check of it
     * failed; wait_child() checks that */
    pid_t fork_child(const std::function<void()> &body);
    void wait_child(pid_t pid);

    uct_component_h       m_component = NULL;
    uct_md_config_t       *m_md_config = NULL;
    uct_md_h              m_md         = NULL;
    ucs_async_context_t   *m_async     = NULL;
    uct_worker_h          m_worker     = NULL;
    uct_iface_h           m_iface      = NULL;
    std::vector<uct_ep_h> m_eps;
};

#endif
