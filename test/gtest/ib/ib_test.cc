/**
 * gpumem tests: fixtures of the tests on a real RDMA device.
 *
 * See file LICENSE for terms.
 */

#include "ib_test.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>


namespace gpumem_test {

typedef ucs_status_t (*reg_memory_func_t)(uct_md_h,
                                          const gpumem_reg_params_t*,
                                          uct_mem_h*);

std::string ib_test_device(std::string *why_p)
{
    const char *wanted = getenv("UCX_GPUMEM_IB_TEST_DEVICE");
    struct ibv_device **devices;
    std::string found;
    int i, num_devices;

    devices = ibv_get_device_list(&num_devices);
    if ((devices == NULL) || (num_devices == 0)) {
        *why_p = "no RDMA device: ibv_get_device_list returned none";
        if (devices == NULL) {
            *why_p += std::string(" (") + strerror(errno) + ")";
        }
        if (devices != NULL) {
            ibv_free_device_list(devices);
        }
        return "";
    }

    for (i = 0; (i < num_devices) && found.empty(); ++i) {
        const char *name = ibv_get_device_name(devices[i]);
        if ((wanted == NULL) || (wanted[0] == '\0') || !strcmp(wanted, name)) {
            found = name;
        }
    }
    ibv_free_device_list(devices);

    if (found.empty()) {
        *why_p = std::string("no RDMA device '") + wanted +
                 "' (UCX_GPUMEM_IB_TEST_DEVICE)";
    }
    return found;
}


void ib_md_test::SetUp()
{
    std::string why;

    ASSERT_TRUE(plugin_handle() != NULL);
    m_component = find_component("gpumem_ib");
    ASSERT_TRUE(m_component != NULL);

    m_device = ib_test_device(&why);
    if (m_device.empty()) {
        const char *wanted = getenv("UCX_GPUMEM_IB_TEST_DEVICE");
        /* A device asked for and absent is a failure, not a skip */
        ASSERT_TRUE((wanted == NULL) || (wanted[0] == '\0')) << why;
        GTEST_SKIP() << why;
    }

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL, &m_config));
    m_emu.set("ib");
}

void ib_md_test::open_md(const char *name, const char *value)
{
    char md_name[UCT_MD_NAME_MAX];

    if (name != NULL) {
        ASSERT_EQ(UCS_OK, gpumem_test::config_modify(m_config, "GPUMEM_IB_",
                                                     name, value));
    }
    ASSERT_EQ(UCS_OK, uct_gpumem_ib_md_name(m_device.c_str(), md_name,
                                            sizeof(md_name)));
    ASSERT_EQ(UCS_OK, uct_md_open(m_component, md_name, m_config, &m_md));
}

void ib_md_test::TearDown()
{
    if (m_md != NULL) {
        uct_md_close(m_md);
    }
    if (m_config != NULL) {
        uct_config_release(m_config);
    }
    if (m_emu.is_set()) {
        reset_device_calls();
        m_emu.unset();
    }
}

ucs_status_t ib_md_test::reg_memory(const gpumem_reg_params_t &params,
                                    uct_mem_h *memh_p)
{
    reg_memory_func_t func = (reg_memory_func_t)
            plugin_symbol("uct_gpumem_ib_mem_reg_memory");

    return (func == NULL) ? UCS_ERR_NO_ELEM : func(m_md, &params, memh_p);
}

void ib_md_test::find_device_calls()
{
    m_malloc = (malloc_func_t)plugin_symbol("gpumem_device_malloc");
    m_free   = (free_func_t)plugin_symbol("gpumem_device_free");
    m_memcpy = (memcpy_func_t)plugin_symbol("gpumem_device_memcpy");
    ASSERT_TRUE((m_malloc != NULL) && (m_free != NULL) && (m_memcpy != NULL));
}


driver_without_dmabuf::driver_without_dmabuf(uct_gpumem_context_t *context) :
    m_driver(context->driver), m_saved(context->driver->ops),
    m_ops(*context->driver->ops)
{
    m_ops.dmabuf_export = dmabuf_export;
    m_driver->ops       = &m_ops;
}

driver_without_dmabuf::~driver_without_dmabuf()
{
    m_driver->ops = m_saved;
}

ucs_status_t driver_without_dmabuf::dmabuf_export(gpumem_driver_mem_t *,
                                                  int *, size_t *)
{
    return UCS_ERR_UNSUPPORTED;
}


bool udmabuf_usable(std::string *why_p)
{
    if (access("/dev/udmabuf", R_OK | W_OK) != 0) {
        *why_p = std::string("the emu driver exports no dma-buf here: "
                             "/dev/udmabuf: ") + strerror(errno);
        return false;
    }
    return true;
}


udmabuf::udmabuf(size_t length) : m_length(length)
{
    struct udmabuf_create create;
    int dev;

    dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev < 0) {
        m_why = std::string("cannot make a dma-buf: /dev/udmabuf: ") +
                strerror(errno);
        return;
    }

    m_memfd = memfd_create("gpumem_test_udmabuf", MFD_ALLOW_SEALING);
    if ((m_memfd < 0) || (ftruncate(m_memfd, length) != 0) ||
        (fcntl(m_memfd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)) {
        m_why = std::string("cannot make a sealed memfd: ") + strerror(errno);
        close(dev);
        return;
    }

    m_host = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, m_memfd,
                  0);
    if (m_host == MAP_FAILED) {
        m_host = NULL;
        m_why  = std::string("cannot map the memfd: ") + strerror(errno);
        close(dev);
        return;
    }

    memset(&create, 0, sizeof(create));
    create.memfd  = m_memfd;
    create.flags  = UDMABUF_FLAGS_CLOEXEC;
    create.offset = 0;
    create.size   = length;
    m_dmabuf_fd   = ioctl(dev, UDMABUF_CREATE, &create);
    if (m_dmabuf_fd < 0) {
        m_why = std::string("UDMABUF_CREATE failed: ") + strerror(errno);
    }
    m_made = (m_dmabuf_fd >= 0);
    close(dev);
}

void udmabuf::close_fd()
{
    if (m_dmabuf_fd >= 0) {
        close(m_dmabuf_fd);
        m_dmabuf_fd = -1;
    }
}

udmabuf::~udmabuf()
{
    if (m_dmabuf_fd >= 0) {
        close(m_dmabuf_fd);
    }
    if (m_host != NULL) {
        munmap(m_host, m_length);
    }
    if (m_memfd >= 0) {
        close(m_memfd);
    }
}


loopback_qps::loopback_qps(struct ibv_context *context, struct ibv_pd *pd) :
    m_context(context), m_pd(pd)
{
    m_ready = connect();
}

loopback_qps::~loopback_qps()
{
    for (struct ibv_qp *qp : m_qp) {
        if (qp != NULL) {
            ibv_destroy_qp(qp);
        }
    }
    if (m_cq != NULL) {
        ibv_destroy_cq(m_cq);
    }
}

bool loopback_qps::fail(const std::string &why)
{
    m_why = why;
    return false;
}

bool loopback_qps::connect()
{
    const char *env = getenv("GPUMEM_TEST_GID_INDEX");
    struct ibv_qp_init_attr init;

    if (ibv_query_port(m_context, 1, &m_port) != 0) {
        return fail(std::string("ibv_query_port: ") + strerror(errno));
    }

    /* RoCE addresses by GID; rxe's index 1 is the RoCE v2 GID of its
     * netdev's IPv4 address */
    if (m_port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        m_gid_index = (env != NULL) ? atoi(env) : 1;
        if (ibv_query_gid(m_context, 1, m_gid_index, &m_gid) != 0) {
            return fail("ibv_query_gid(index " + std::to_string(m_gid_index) +
                        "): " + strerror(errno));
        }
        if ((m_gid.global.subnet_prefix == 0) &&
            (m_gid.global.interface_id == 0)) {
            return fail("GID index " + std::to_string(m_gid_index) +
                        " is empty (set GPUMEM_TEST_GID_INDEX)");
        }
    }

    m_cq = ibv_create_cq(m_context, 16, NULL, NULL, 0);
    if (m_cq == NULL) {
        return fail(std::string("ibv_create_cq: ") + strerror(errno));
    }

    for (struct ibv_qp *&qp : m_qp) {
        memset(&init, 0, sizeof(init));
        init.send_cq          = m_cq;
        init.recv_cq          = m_cq;
        init.qp_type          = IBV_QPT_RC;
        init.cap.max_send_wr  = 4;
        init.cap.max_recv_wr  = 4;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        qp = ibv_create_qp(m_pd, &init);
        if (qp == NULL) {
            return fail(std::string("ibv_create_qp: ") + strerror(errno));
        }
    }

    return to_init(m_qp[0]) && to_init(m_qp[1]) &&
           to_rtr(m_qp[0], m_qp[1]->qp_num) &&
           to_rtr(m_qp[1], m_qp[0]->qp_num) &&
           to_rts(m_qp[0]) && to_rts(m_qp[1]);
}

/* The queue pairs let peers read and write: whether a peer may is the
 * region's access to decide, which is what the tests look at */
bool loopback_qps::to_init(struct ibv_qp *qp)
{
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = 1;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    return (ret == 0) || fail(std::string("QP to INIT: ") + strerror(ret));
}

bool loopback_qps::to_rtr(struct ibv_qp *qp, uint32_t peer_qpn)
{
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state           = IBV_QPS_RTR;
    attr.path_mtu           = m_port.active_mtu;
    attr.dest_qp_num        = peer_qpn;
    attr.rq_psn             = 0;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer      = 12;
    attr.ah_attr.dlid       = m_port.lid;
    attr.ah_attr.sl         = 0;
    attr.ah_attr.port_num   = 1;
    if (m_gid_index >= 0) {
        attr.ah_attr.is_global      = 1;
        attr.ah_attr.grh.dgid       = m_gid;
        attr.ah_attr.grh.sgid_index = m_gid_index;
        attr.ah_attr.grh.hop_limit  = 1;
    }
    ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC |
                                   IBV_QP_MIN_RNR_TIMER);
    return (ret == 0) || fail(std::string("QP to RTR: ") + strerror(ret));
}

bool loopback_qps::to_rts(struct ibv_qp *qp)
{
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTS;
    attr.timeout       = 14;
    attr.retry_cnt     = 7;
    attr.rnr_retry     = 7;
    attr.sq_psn        = 0;
    attr.max_rd_atomic = 1;
    ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
                                   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    return (ret == 0) || fail(std::string("QP to RTS: ") + strerror(ret));
}

enum ibv_wc_status loopback_qps::rdma(enum ibv_wr_opcode opcode,
                                      const gpumem_reg_local_t &local,
                                      uint64_t remote_address, uint32_t rkey)
{
    /* Everything may be emulated (soft-RoCE under qemu): be patient */
    const time_t deadline = time(NULL) + 60;
    struct ibv_send_wr wr, *bad_wr;
    struct ibv_sge sge;
    struct ibv_wc wc;
    int ret;

    sge.addr   = local.address;
    sge.length = local.length;
    sge.lkey   = local.lkey;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = 0x600d;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.opcode              = opcode;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_address;
    wr.wr.rdma.rkey        = rkey;

    ret = ibv_post_send(m_qp[0], &wr, &bad_wr);
    if (ret != 0) {
        ADD_FAILURE() << "ibv_post_send: " << strerror(ret);
        return IBV_WC_GENERAL_ERR;
    }

    do {
        ret = ibv_poll_cq(m_cq, 1, &wc);
        if (ret < 0) {
            ADD_FAILURE() << "ibv_poll_cq failed";
            return IBV_WC_GENERAL_ERR;
        }
    } while ((ret == 0) && (time(NULL) < deadline));

    if (ret == 0) {
        ADD_FAILURE() << "no completion in 60 seconds";
        return IBV_WC_GENERAL_ERR;
    }

    EXPECT_EQ(0x600du, wc.wr_id);
    return wc.status;
}

}
