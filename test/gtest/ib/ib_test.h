/**
 * gpumem tests: fixtures of the tests on a real RDMA device: the gpumem_ib
 * memory domain of the device under test, a dma-buf made by udmabuf, and a
 * pair of RC queue pairs connected to each other on that device; and for
 * device memory, a driver without dma-bufs.
 *
 * The device is $UCX_GPUMEM_IB_TEST_DEVICE, else the first one verbs lists;
 * without any, the tests skip. On RoCE (soft-RoCE included) the queue pairs
 * address each other through GID index $GPUMEM_TEST_GID_INDEX, 1 by default.
 * The domain's GPUs are the emu driver's, with their shared state in a
 * directory of the test's own.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_IB_TEST_H_
#define GPUMEM_IB_TEST_H_

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <common/gpumem_test.h>
#include <common/temp_dir.h>
#include <reg/reg_test.h>

#include <gpumem/gpumem.h>

extern "C" {
#include <uct/gpumem/ib/ib_md.h>
#include <infiniband/verbs.h>
}

#include <string>


namespace gpumem_test {

/* The device under test, "" when there is none; sets @a why_p to why. */
std::string ib_test_device(std::string *why_p);


/**
 * The gpumem_ib memory domain of the device under test, on emu GPUs.
 */
class ib_md_test : public testing::Test {
protected:
    typedef gpumem_result_t (*malloc_func_t)(void**, size_t);
    typedef gpumem_result_t (*free_func_t)(void*);
    typedef gpumem_result_t (*memcpy_func_t)(void*, const void*, size_t);

    virtual void SetUp();
    virtual void TearDown();

    /* Open the domain, after changing its configuration if asked */
    void open_md(const char *name = NULL, const char *value = NULL);

    uct_gpumem_ib_md_t *md() const {
        return ucs_derived_of(m_md, uct_gpumem_ib_md_t);
    }

    /* Register through the plugin's uct_gpumem_ib_mem_reg_memory() */
    ucs_status_t reg_memory(const gpumem_reg_params_t &params,
                            uct_mem_h *memh_p);

    ucs_status_t mem_reg(void *address, size_t length, unsigned flags,
                         uct_mem_h *memh_p) {
        return uct_md_mem_reg(m_md, address, length, flags, memh_p);
    }

    /* The plugin's device memory calls, into m_malloc, m_free and
     * m_memcpy: its GPUs are the ones its domains use */
    void find_device_calls();

    std::string     m_device;
    emu_env         m_emu;
    uct_component_h m_component = NULL;
    uct_md_config_t *m_config   = NULL;
    uct_md_h        m_md        = NULL;
    malloc_func_t   m_malloc    = NULL;
    free_func_t     m_free      = NULL;
    memcpy_func_t   m_memcpy    = NULL;
};


/**
 * While alive, the driver of @a context exports no dma-buf, as on a kernel
 * without /dev/udmabuf; everything else is the driver's own.
 */
class driver_without_dmabuf {
public:
    explicit driver_without_dmabuf(uct_gpumem_context_t *context);
    ~driver_without_dmabuf();

private:
    static ucs_status_t dmabuf_export(gpumem_driver_mem_t *mem, int *fd_p,
                                      size_t *offset_p);

    gpumem_driver_t           *m_driver;
    const gpumem_driver_ops_t *m_saved;
    gpumem_driver_ops_t       m_ops;
};


/* Whether this process can make dma-bufs with /dev/udmabuf (root only in
 * the VM); otherwise @a why_p says why not */
bool udmabuf_usable(std::string *why_p);


/**
 * A dma-buf of host pages made by /dev/udmabuf, mapped in this process.
 */
class udmabuf {
public:
    explicit udmabuf(size_t length);
    ~udmabuf();

    /* Whether it was made; otherwise why() says why not */
    bool made() const { return m_made; }
    const std::string &why() const { return m_why; }

    int fd() const { return m_dmabuf_fd; }
    void *host_address() const { return m_host; }

    /* Closes the dma-buf's descriptor: its memory stays mapped */
    void close_fd();
    size_t length() const { return m_length; }

private:
    size_t      m_length;
    int         m_memfd     = -1;
    int         m_dmabuf_fd = -1;
    bool        m_made      = false;
    void        *m_host     = NULL;
    std::string m_why;
};


/**
 * Two RC queue pairs on one device and protection domain, connected to each
 * other, sharing one completion queue: a peer in the same process.
 */
class loopback_qps {
public:
    loopback_qps(struct ibv_context *context, struct ibv_pd *pd);
    ~loopback_qps();

    /* Connected; otherwise why() says why not */
    bool ready() const { return m_ready; }
    const std::string &why() const { return m_why; }

    /* Post one RDMA WRITE or READ on the first queue pair, between local
     * bytes and a peer's, and wait for its completion status */
    enum ibv_wc_status rdma(enum ibv_wr_opcode opcode,
                            const gpumem_reg_local_t &local,
                            uint64_t remote_address, uint32_t rkey);

private:
    bool connect();
    bool to_init(struct ibv_qp *qp);
    bool to_rtr(struct ibv_qp *qp, uint32_t peer_qpn);
    bool to_rts(struct ibv_qp *qp);
    bool fail(const std::string &why);

    struct ibv_context *m_context;
    struct ibv_pd      *m_pd;
    struct ibv_cq      *m_cq    = NULL;
    struct ibv_qp      *m_qp[2] = {NULL, NULL};
    struct ibv_port_attr m_port;
    union ibv_gid      m_gid;
    int                m_gid_index = -1;
    bool               m_ready     = false;
    std::string        m_why;
};

}

#endif
