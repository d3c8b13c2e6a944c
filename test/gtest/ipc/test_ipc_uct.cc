/**
 * gpumem tests: the IPC transport through the public UCT API: its domain
 * and resource, keys (their checks and the mapping cache), put/get zero-copy
 * between two GPUs of one process and between two processes, completions
 * and flush, and reachability by the topology.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_test.h"

#include <common/channel.h>
#include <common/log_capture.h>
#include <common/scoped_env.h>

extern "C" {
#include <uct/gpumem/ipc/ipc_addr.h>
#include <uct/gpumem/ipc/ipc_key.h>
#include <uct/gpumem/util/gpumem_proc.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/sys/math.h>
}

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <unistd.h>


using gpumem_test::channel;
using gpumem_test::ipc_connect_to;
using gpumem_test::counted_comp;
using gpumem_test::log_capture;


/* Offsets in a packed key of the fields the tests break byte by byte */
#define KEY_OFFSET_MAGIC       0
#define KEY_OFFSET_VERSION     4
#define KEY_OFFSET_SIZE        6
#define KEY_OFFSET_HANDLE_LEN  30


class ipc_uct : public ipc_test {
protected:
    /* A registration of @a size bytes of device memory on GPU @a gpu, and
     * its packed key */
    struct remote_buffer {
        char        *address = NULL;
        size_t      size     = 0;
        uct_mem_h   memh     = NULL;
        std::string packed;
    };

    remote_buffer register_buffer(size_t size, int gpu) {
        remote_buffer buffer;

        buffer.address = (char*)device_alloc(size, gpu);
        buffer.size    = size;
        if (buffer.address != NULL) {
            buffer.memh   = reg(buffer.address, size);
            buffer.packed = pack(buffer.memh);
        }
        return buffer;
    }

    void unregister_buffer(remote_buffer &buffer) {
        dereg(buffer.memh);
        device_free(buffer.address);
    }

    /* The latency the interface estimates for @a op */
    double op_latency(uct_ep_operation_t op) {
        uct_perf_attr_t perf;

        memset(&perf, 0, sizeof(perf));
        perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                          UCT_PERF_ATTR_FIELD_LATENCY;
        perf.operation  = op;
        EXPECT_EQ(UCS_OK, uct_iface_estimate_perf(m_iface, &perf));
        return perf.latency.c;
    }

    /* Decodes a packed key with the plugin's decoder */
    static uct_gpumem_ipc_key_t decode(const std::string &packed) {
        uct_gpumem_ipc_key_t key;

        EXPECT_EQ(UCS_OK, uct_gpumem_ipc_key_unpack(packed.data(),
                                                    packed.size(), &key));
        return key;
    }

    static std::string encode(const uct_gpumem_ipc_key_t &key) {
        std::string packed(uct_gpumem_ipc_key_packed_size(), '\0');

        uct_gpumem_ipc_key_pack(&key, &packed[0]);
        return packed;
    }

    /* The key as another live process of the user (this one's parent) would
     * give it: the cache keeps such memory mapped while idle, not this
     * process's own */
    static std::string as_of_another_process(const std::string &packed) {
        uct_gpumem_ipc_key_t key = decode(packed);

        key.pid = getppid();
        return encode(key);
    }

    /* Each way, at @a offset into both buffers, through an endpoint of this
     * interface to itself: the bytes are checked */
    void put_get(uct_ep_h ep, remote_buffer &remote, uct_rkey_t rkey,
                 char *local, size_t size, size_t offset);

    void connect_to_self() {
        m_ep = connect(device_address(), iface_address());
    }

    /* An endpoint to this process, device memory on GPU 0 for the local
     * side, and a registration on GPU 1 whose key is unpacked */
    struct transfer {
        char              *local    = NULL;
        remote_buffer     remote;
        uct_rkey_bundle_t rkey;
        bool              key_held  = false;
    };

    void setup_transfer(size_t local_size, size_t remote_size, transfer *t) {
        open_uct();
        connect_to_self();
        t->local  = (char*)device_alloc(local_size, 0);
        t->remote = register_buffer(remote_size, 1);
        ASSERT_TRUE((t->local != NULL) && (t->remote.memh != NULL));
        ASSERT_EQ(UCS_OK, unpack(t->remote.packed, &t->rkey));
        t->key_held = true;
    }

    void release_key(transfer *t) {
        release(&t->rkey);
        t->key_held = false;
    }

    void teardown_transfer(transfer *t) {
        if (t->key_held) {
            release_key(t);
        }
        unregister_buffer(t->remote);
        device_free(t->local);
    }

    /* A put of @a size bytes from @a offset of the local side to the start
     * of the remote one, which the engine is still running */
    void put_in_flight(transfer *t, size_t size, size_t offset,
                       counted_comp *comp) {
        ASSERT_EQ(UCS_INPROGRESS, zcopy(true, m_ep, t->local + offset, size,
                                        (uintptr_t)t->remote.address,
                                        t->rkey.rkey, comp));
    }

    /* On the machine of four GPUs paired by NVLink: a child process whose
     * GPU is @a gpu gives its addresses, and waits for end_peer(); this
     * process opens its own interface, on GPU 0 */
    pid_t fork_peer_on_gpu(channel &chan, int gpu, std::string *dev_addr,
                           std::string *iface_addr) {
        gpumem_test::scoped_env topo("UCX_GPUMEM_TOPO_XML",
                                     GPUMEM_TEST_TOPO_DIR "/hwloc-power8-"
                                     "minsky-4xP100-nvlink.xml");
        pid_t pid;

        pid = fork_child([&]() {
            chan.child_side();
            setenv("UCX_GPUMEM_ALLOC_GPU", std::to_string(gpu).c_str(), 1);
            open_uct();
            chan.send(device_address());
            chan.send(iface_address());
            EXPECT_EQ("done", chan.recv());
        });

        *dev_addr   = chan.recv();
        *iface_addr = chan.recv();
        open_uct();
        return pid;
    }

    void end_peer(channel &chan, pid_t pid) {
        close_uct();
        chan.send("done");
        wait_child(pid);
    }

    uct_ep_h m_ep = NULL;
};


void ipc_uct::put_get(uct_ep_h ep, remote_buffer &remote, uct_rkey_t rkey,
                      char *local, size_t size, size_t offset)
{
    const std::string in  = pattern(size, (unsigned)(size + offset));
    const std::string out = pattern(size, (unsigned)(size + offset + 1));
    counted_comp put_comp, get_comp;

    SCOPED_TRACE(std::to_string(size) + " bytes at offset " +
                 std::to_string(offset));
    to_device(local + offset, in);
    finish(zcopy(true, ep, local + offset, size,
                 (uintptr_t)remote.address + offset, rkey, &put_comp),
           put_comp);
    EXPECT_TRUE(in == from_device(remote.address + offset, size))
            << "put: bytes differ";

    to_device(remote.address + offset, out);
    finish(zcopy(false, ep, local + offset, size,
                 (uintptr_t)remote.address + offset, rkey, &get_comp),
           get_comp);
    EXPECT_TRUE(out == from_device(local + offset, size))
            << "get: bytes differ";
}


TEST_F(ipc_uct, tl_resource_is_one_shared_memory_device) {
    uct_tl_resource_desc_t *resources;
    unsigned i, count, found = 0;

    open_uct();
    ASSERT_EQ(UCS_OK, uct_md_query_tl_resources(m_md, &resources, &count));
    for (i = 0; i < count; ++i) {
        EXPECT_STREQ(IPC_TL, resources[i].tl_name);
        EXPECT_STREQ(IPC_DEV, resources[i].dev_name);
        EXPECT_EQ(UCT_DEVICE_TYPE_SHM, resources[i].dev_type);
        ++found;
    }
    uct_release_tl_resource_list(resources);
    EXPECT_EQ(1u, found);
}

TEST_F(ipc_uct, md_registers_device_memory_and_needs_a_key) {
    uct_md_attr_t attr;

    open_uct();
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &attr));
    EXPECT_STREQ(IPC_COMPONENT, attr.component_name);
    /* INVALIDATE: UCP's peer error handling selects the domain (UCX 1.16
     * and later also see UCT_MD_FLAG_INVALIDATE_RMA, a bit of their own
     * above these) */
    EXPECT_EQ((uint64_t)(UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY |
                         UCT_MD_FLAG_INVALIDATE),
              attr.cap.flags & (UCS_BIT(11) - 1));
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_CUDA), attr.cap.reg_mem_types);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_CUDA), attr.cap.access_mem_types);
    /* Host memory named for UCX 1.13's RMA key resolution only: nothing is
     * allocated here */
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.alloc_mem_types);
    EXPECT_EQ(0u, attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_EQ(0u, attr.cap.detect_mem_types);
    EXPECT_EQ(uct_gpumem_ipc_key_packed_size(), attr.rkey_packed_size);
    EXPECT_GE(255u, attr.rkey_packed_size) << "UCP keeps it in a byte";
}

/* The transport comes and goes with its component, once each time: in the
 * component's transports and on UCX's configuration list (ucx_info -c),
 * where the domain and the transport each have a table */
TEST_F(ipc_uct, registration_follows_the_component) {
    auto reg_all   = (ucs_status_t (*)(void))gpumem_test::plugin_symbol(
            "uct_gpumem_components_register");
    auto unreg_all = (void (*)(void))gpumem_test::plugin_symbol(
            "uct_gpumem_components_unregister");

    ASSERT_TRUE((reg_all != NULL) && (unreg_all != NULL));
    for (int i = 0; i < 2; ++i) {
        unreg_all();
        EXPECT_TRUE(gpumem_test::find_component(IPC_COMPONENT) == NULL);
        EXPECT_EQ(0u, gpumem_test::count_config_tables("GPUMEM_IPC_"));
        EXPECT_EQ(UCS_OK, reg_all());
        EXPECT_TRUE(gpumem_test::find_component(IPC_COMPONENT) != NULL);
        EXPECT_EQ(2u, gpumem_test::count_config_tables("GPUMEM_IPC_"));
    }
}

/* Short and bcopy too: UCX 1.13 wants them of a transport for ucp_put and
 * ucp_get, and puts up to its zero-copy threshold (16 KiB) short */
TEST_F(ipc_uct, iface_query_advertises_rma_am_to_iface_and_small_addresses) {
    const uint64_t flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                           UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                           UCT_IFACE_FLAG_CB_SYNC |
                           UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                           UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
                           UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING |
                           UCT_IFACE_FLAG_EP_CHECK |
                           UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    uct_iface_attr_t attr;

    open_uct();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    EXPECT_EQ(flags, attr.cap.flags);
    EXPECT_EQ((uint64_t)(UCT_IFACE_FLAG_EVENT_SEND_COMP |
                         UCT_IFACE_FLAG_EVENT_RECV |
                         UCT_IFACE_FLAG_EVENT_RECV_SIG |
                         UCT_IFACE_FLAG_EVENT_FD),
              attr.cap.event_flags);
    EXPECT_EQ(8u, attr.device_addr_len);
    EXPECT_GE(24u, attr.iface_addr_len);
    EXPECT_EQ(0u, attr.ep_addr_len);
    EXPECT_EQ(SIZE_MAX, attr.cap.put.max_zcopy);
    EXPECT_EQ(SIZE_MAX, attr.cap.get.max_zcopy);
    EXPECT_EQ(1u, attr.cap.put.max_iov);
    EXPECT_LE(16384u - 1, attr.cap.put.max_short);
    EXPECT_LT(0u, attr.cap.put.max_bcopy);
    EXPECT_LT(0u, attr.cap.get.max_bcopy);
    EXPECT_EQ(0u, attr.cap.get.max_short);
    EXPECT_EQ(256u, attr.cap.am.max_short);
    EXPECT_EQ(8u * 1024 - 16, attr.cap.am.max_bcopy);
    EXPECT_EQ(0u, attr.cap.am.max_zcopy);
}

/* The default machine's two GPUs share a PCIe switch: the copies'
 * estimates are that path's, the active messages' latency their FIFO's
 * (the interface's one latency, which UCX 1.13's protocols read for a
 * rendezvous: with the path's, 16 to 64 KiB device messages stayed on
 * eager copies through host memory, at a sixth of the rendezvous' rate);
 * settings replace the copies' */
TEST_F(ipc_uct, estimates_come_from_the_topology_path) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    uct_iface_attr_t attr;
    uct_perf_attr_t perf;

    open_uct();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    EXPECT_DOUBLE_EQ(12000.0 * UCS_MBYTE, attr.bandwidth.shared);
    EXPECT_DOUBLE_EQ(0.0, attr.bandwidth.dedicated);
    EXPECT_NEAR(80e-9, attr.latency.c, 1e-12);
    EXPECT_NEAR(200e-9, attr.overhead, 1e-12);

    perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                      UCT_PERF_ATTR_FIELD_BANDWIDTH |
                      UCT_PERF_ATTR_FIELD_LATENCY;
    perf.operation  = UCT_EP_OP_PUT_ZCOPY;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(m_iface, &perf));
    EXPECT_DOUBLE_EQ(attr.bandwidth.shared, perf.bandwidth.shared);
    EXPECT_NEAR(2e-6, perf.latency.c, 1e-12);
    EXPECT_NEAR(2e-6, op_latency(UCT_EP_OP_GET_ZCOPY), 1e-12);
    EXPECT_DOUBLE_EQ(attr.latency.c, op_latency(UCT_EP_OP_AM_SHORT));
    EXPECT_DOUBLE_EQ(attr.latency.c, op_latency(UCT_EP_OP_AM_BCOPY));
    close_uct();

    setenv("UCX_GPUMEM_IPC_BW", "5000MBs", 1);
    setenv("UCX_GPUMEM_IPC_LATENCY", "3us", 1);
    open_uct();
    unsetenv("UCX_GPUMEM_IPC_BW");
    unsetenv("UCX_GPUMEM_IPC_LATENCY");
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    EXPECT_DOUBLE_EQ(5000.0 * UCS_MBYTE, attr.bandwidth.shared);
    EXPECT_NEAR(3e-6, op_latency(UCT_EP_OP_PUT_ZCOPY), 1e-9);
    EXPECT_NEAR(80e-9, attr.latency.c, 1e-12);
}

#ifdef HAVE_UCT_PERF_ATTR_PATH_BANDWIDTH
/* UCX 1.20 and later ask the bandwidth of one path too, and share a device
 * among lanes by its ratio to the interface's: left unset, it was what the
 * caller's stack held, and where that was nothing UCP kept every lane out
 * of a pipelined rendezvous through device fragments, which then divided by
 * zero at its first message (ucx_perftest -t tag_bw -m cuda,cuda over
 * posix,gpumemcpy,gpumemipc) */
TEST_F(ipc_uct, estimates_give_a_paths_bandwidth_as_the_interfaces) {
    uct_perf_attr_t perf;

    open_uct();
    memset(&perf, 0, sizeof(perf));
    perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                      UCT_PERF_ATTR_FIELD_BANDWIDTH |
                      UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH;
    perf.operation  = UCT_EP_OP_GET_ZCOPY;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(m_iface, &perf));
    EXPECT_LT(1.0, perf.bandwidth.shared + perf.bandwidth.dedicated);
    EXPECT_DOUBLE_EQ(perf.bandwidth.shared, perf.path_bandwidth.shared);
    EXPECT_DOUBLE_EQ(perf.bandwidth.dedicated,
                     perf.path_bandwidth.dedicated);
}
#endif

/* On a machine whose GPUs pair by NVLink, the fabric's */
TEST_F(ipc_uct, estimates_of_a_gpu_with_nvlink_are_the_fabrics) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    gpumem_test::scoped_env topo("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                                 "/hwloc-power8-minsky-4xP100-nvlink.xml");
    uct_iface_attr_t attr;

    open_uct();
    topo.restore();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    EXPECT_DOUBLE_EQ(40000.0 * UCS_MBYTE, attr.bandwidth.shared);
    EXPECT_NEAR(1.5e-6, op_latency(UCT_EP_OP_GET_ZCOPY), 1e-12);
}

/* On the pascal machine (PCIe only, no NVLink) the estimate is the path's
 * the peer requests take: the switch's where it carries them; the host
 * bridge's, lower, where ACS on the switch's ports redirects them up to the
 * root complex (here of a host bridge Linux lists, Skylake-SP's 8086:2020,
 * so that they still reach) */
TEST_F(ipc_uct, estimate_under_a_switch_follows_the_path_the_requests_take) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    const std::string pascal = GPUMEM_TEST_TOPO_DIR "/mpibind-pascal-";
    gpumem_test::scoped_env topo, sysfs_root, facts_file;
    gpumem_test::temp_dir dir;
    double through_switch;
    uct_iface_attr_t attr;
    std::string facts;

    ASSERT_TRUE(dir.make("ipc_uct_estimate"));
    ASSERT_EQ(0, mkdir((dir.path() + "/sysfs").c_str(), 0700));
    {
        std::ifstream in(pascal + "acs-redirect.facts");
        std::ofstream out(dir.path() + "/facts");
        std::string line;

        while (std::getline(in, line)) {
            out << ((line.rfind("hostbridge ", 0) == 0) ?
                    "hostbridge 0000:00:00.0 0x80862020" : line) << "\n";
        }
    }
    topo.set("UCX_GPUMEM_TOPO_XML", pascal + "2xBDW-2xP100-1xIB.xml");
    sysfs_root.set("UCX_GPUMEM_SYSFS_ROOT", dir.path() + "/sysfs");

    facts_file.set("UCX_GPUMEM_TOPO_FACTS", pascal + "p2p.facts");
    open_uct();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    through_switch = attr.bandwidth.shared;
    close_uct();

    facts_file.set("UCX_GPUMEM_TOPO_FACTS", dir.path() + "/facts");
    open_uct();
    facts_file.restore();
    sysfs_root.restore();
    topo.restore();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    EXPECT_DOUBLE_EQ(12000.0 * UCS_MBYTE, through_switch);
    EXPECT_DOUBLE_EQ(10000.0 * UCS_MBYTE, attr.bandwidth.shared);
    EXPECT_NEAR(2.5e-6, op_latency(UCT_EP_OP_GET_ZCOPY), 1e-12);
    EXPECT_LT(attr.bandwidth.shared, through_switch);
}

/* UCP stages through the process's own memory with the copy transport, so
 * the process does not reach itself for UCP; an endpoint to itself is made
 * all the same, for copies between two of its GPUs */
TEST_F(ipc_uct, process_is_not_reachable_to_itself_but_connects) {
    uct_ep_h ep;

    open_uct();
    EXPECT_FALSE(uct_iface_is_reachable(
            m_iface, (const uct_device_addr_t*)device_address().data(),
            (const uct_iface_addr_t*)iface_address().data()));
    EXPECT_EQ(UCS_OK, try_connect(device_address(), iface_address(), &ep));
}

/* An interface address naming no process or no user is refused, saying
 * which, and no endpoint is made to it; the same address naming another
 * process of the user is reached */
TEST_F(ipc_uct, iface_address_of_no_process_or_user_is_refused) {
    struct bad_addr {
        const char  *what;
        int32_t     pid;
        uint32_t    uid;
        const char  *said;
    };
    /* Any pid but this process's: the parent's may be 0 in a namespace */
    const int32_t other = (getpid() == 1) ? 2 : 1;
    const uint32_t uid  = (uint32_t)geteuid();
    const bad_addr bad[] = {
        {"pid 0", 0, uid, "which no process can be"},
        {"pid -1", -1, uid, "which no process can be"},
        {"pid above the kernel's", UCT_GPUMEM_IPC_PID_MAX + 1, uid,
         "which no process can be"},
        {"user -1", other, (uint32_t)-1, "which is no user's"},
    };
    std::string good, addr;
    uct_ep_h ep;

    open_uct();
    good = iface_address();
    ASSERT_EQ((size_t)UCT_GPUMEM_IPC_IFACE_ADDR_SIZE, good.size());
    for (const bad_addr &b : bad) {
        SCOPED_TRACE(b.what);
        addr = good;
        memcpy(&addr[0], &b.pid, sizeof(b.pid));
        memcpy(&addr[4], &b.uid, sizeof(b.uid));
        log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
        EXPECT_FALSE(uct_iface_is_reachable(
                m_iface, (const uct_device_addr_t*)device_address().data(),
                (const uct_iface_addr_t*)addr.data()));
        EXPECT_EQ(UCS_ERR_UNREACHABLE,
                  try_connect(device_address(), addr, &ep));
        EXPECT_EQ(2u, log.count({"gpumem_ipc: interface address of process",
                                 b.said})) << log.text();
    }

    /* The control: another process of this user on this GPU */
    addr = good;
    memcpy(&addr[0], &other, sizeof(other));
    EXPECT_TRUE(uct_iface_is_reachable(
            m_iface, (const uct_device_addr_t*)device_address().data(),
            (const uct_iface_addr_t*)addr.data()));
}

/* The decoder gives back what the packer wrote */
TEST(ipc_addr, packs_and_reads_back) {
    uct_gpumem_ipc_peer_t peer, read;
    uint8_t buffer[UCT_GPUMEM_IPC_IFACE_ADDR_SIZE + 1];

    peer.pid        = UCT_GPUMEM_IPC_PID_MAX;
    peer.uid        = 1000;
    peer.iface_id   = 0xfedcba98;
    peer.gpu.domain = 0xabcd;
    peer.gpu.bus    = 0xe1;
    peer.gpu.dev    = 31;
    peer.gpu.fn     = 5;
    peer.fifo_fd    = 17;
    peer.proc_dev   = 0x9abcdef0u;
    uct_gpumem_ipc_iface_addr_pack(&peer, buffer + 1); /* Unaligned */
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_iface_addr_unpack(
                              buffer + 1, UCS_LOG_LEVEL_ERROR, &read));
    EXPECT_EQ(peer.pid, read.pid);
    EXPECT_EQ(peer.uid, read.uid);
    EXPECT_EQ(peer.iface_id, read.iface_id);
    EXPECT_EQ(peer.gpu.domain, read.gpu.domain);
    EXPECT_EQ(peer.gpu.bus, read.gpu.bus);
    EXPECT_EQ(peer.gpu.dev, read.gpu.dev);
    EXPECT_EQ(peer.gpu.fn, read.gpu.fn);
    EXPECT_EQ(peer.fifo_fd, read.fifo_fd);
    EXPECT_EQ(peer.proc_dev, read.proc_dev);
}

/* A process whose pid is of another /proc (a PID namespace with a /proc of
 * its own) is not reached, whatever the pid, and that is said once */
TEST_F(ipc_uct, process_of_another_proc_is_not_reached_and_said_once) {
    const int32_t other = (getpid() == 1) ? 2 : 1;
    uct_gpumem_ipc_peer_t peer;
    std::string addr;
    uct_ep_h ep;

    open_uct();
    addr = iface_address();
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_iface_addr_unpack(
                              addr.data(), UCS_LOG_LEVEL_ERROR, &peer));
    EXPECT_EQ(gpumem_proc_dev(), peer.proc_dev);
    peer.pid       = other;
    peer.proc_dev ^= 0x5a5a;
    uct_gpumem_ipc_iface_addr_pack(&peer, &addr[0]);

    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    for (int i = 0; i < 2; ++i) {
        EXPECT_FALSE(uct_iface_is_reachable(
                m_iface, (const uct_device_addr_t*)device_address().data(),
                (const uct_iface_addr_t*)addr.data()));
        EXPECT_EQ(UCS_ERR_UNREACHABLE,
                  try_connect(device_address(), addr, &ep));
    }
    EXPECT_EQ(1u, log.count({"is of another /proc", "a PID namespace"}))
            << log.text();
}

TEST_F(ipc_uct, iface_opens_only_on_its_device) {
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    uct_iface_h iface;

    open_uct();
    EXPECT_EQ(UCS_ERR_NO_DEVICE, try_open_iface("cuda", &iface));
    EXPECT_EQ(1u, log.count({"opens on device", IPC_DEV}));
}

/* A key says who owns the memory, where it is, and the registered range */
TEST_F(ipc_uct, packed_key_carries_owner_allocation_and_range) {
    remote_buffer buffer;
    uct_gpumem_ipc_key_t key;
    uct_mem_h memh;

    open_uct();
    buffer = register_buffer(100000, 1);
    ASSERT_TRUE(buffer.memh != NULL);
    key = decode(buffer.packed);
    EXPECT_EQ((uint32_t)geteuid(), key.uid);
    EXPECT_EQ(getpid(), key.pid);
    EXPECT_EQ((uintptr_t)buffer.address, key.alloc_address);
    EXPECT_EQ(102400u, key.alloc_size) << "rounded up to 4 KiB";
    EXPECT_EQ((uintptr_t)buffer.address, key.address);
    EXPECT_EQ(100000u, key.length);
    EXPECT_GT(key.handle_len, 0u);

    /* A range inside the allocation keys its own range, same allocation */
    memh = reg(buffer.address + 4096, 5000);
    key  = decode(pack(memh));
    EXPECT_EQ((uintptr_t)buffer.address, key.alloc_address);
    EXPECT_EQ((uintptr_t)buffer.address + 4096, key.address);
    EXPECT_EQ(5000u, key.length);
    dereg(memh);
    unregister_buffer(buffer);
}

TEST_F(ipc_uct, registration_of_what_is_not_one_device_allocation_fails) {
    std::string host(4096, 'h');
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    uct_mem_h memh;
    char *dev;

    open_uct();
    dev = (char*)device_alloc(8192);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_reg(m_md, &host[0], host.size(),
                             UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_reg(m_md, dev + 4096, 8192, UCT_MD_MEM_ACCESS_ALL,
                             &memh));
    EXPECT_EQ(2u, log.count({"cannot register"})) << log.text();
    device_free(dev);
}

/* Bytes from a peer: each bad key is a clear status with a logged reason,
 * nothing is mapped, and the process goes on */
TEST_F(ipc_uct, bad_keys_are_refused_with_a_reason_and_map_nothing) {
    struct bad_key {
        const char   *what;
        std::string  packed;
        ucs_status_t status;
    };
    std::vector<bad_key> bad;
    uct_gpumem_ipc_stats_t before, after;
    uct_gpumem_ipc_key_t key;
    remote_buffer buffer;
    uct_rkey_bundle_t rkey;
    std::string p;

    open_uct();
    buffer = register_buffer(65536, 1);
    ASSERT_TRUE(buffer.memh != NULL);
    const std::string good = buffer.packed;
    const uct_gpumem_ipc_key_t good_key = decode(good);

    p = good; p[KEY_OFFSET_MAGIC] ^= 1;
    bad.push_back({"magic", p, UCS_ERR_INVALID_PARAM});
    p = good; p[KEY_OFFSET_VERSION] = 2;
    bad.push_back({"version", p, UCS_ERR_INVALID_PARAM});
    p = good; p[KEY_OFFSET_SIZE] -= 8;
    bad.push_back({"truncated", p, UCS_ERR_INVALID_PARAM});
    p = good; p[KEY_OFFSET_HANDLE_LEN] = (char)0xff;
    bad.push_back({"handle length", p, UCS_ERR_INVALID_PARAM});
    p = good; p[p.size() - 1] = 1;
    bad.push_back({"padding", p, UCS_ERR_INVALID_PARAM});
    bad.push_back({"garbage", std::string(good.size(), '\x5a'),
                   UCS_ERR_INVALID_PARAM});

    key = good_key; key.uid += 1;
    bad.push_back({"another user", encode(key), UCS_ERR_UNREACHABLE});
    key = good_key; key.machine ^= 1;
    bad.push_back({"another machine", encode(key), UCS_ERR_UNREACHABLE});
    key = good_key; key.pid = 0;
    bad.push_back({"no process", encode(key), UCS_ERR_INVALID_PARAM});
    key = good_key; key.gpu.bus ^= 0x80;
    bad.push_back({"a GPU of no GPU of the process's machine", encode(key),
                   UCS_ERR_UNREACHABLE});

    key = good_key; key.address = key.alloc_address + key.alloc_size;
    key.length = 1;
    bad.push_back({"range past the allocation", encode(key),
                   UCS_ERR_INVALID_PARAM});
    key = good_key; key.address = key.alloc_address - 4096;
    bad.push_back({"range before the allocation", encode(key),
                   UCS_ERR_INVALID_PARAM});
    key = good_key; key.length = key.alloc_size + 1;
    bad.push_back({"range longer than the allocation", encode(key),
                   UCS_ERR_INVALID_PARAM});
    key = good_key; key.alloc_address = UINT64_MAX - 4095;
    key.address = key.alloc_address;
    bad.push_back({"allocation wrapping around", encode(key),
                   UCS_ERR_INVALID_PARAM});
    key = good_key; key.alloc_size *= 2;
    bad.push_back({"allocation larger than its memory", encode(key),
                   UCS_ERR_INVALID_PARAM});

    key = good_key; key.handle[key.handle_len - 9] ^= 0x5a;
    bad.push_back({"garbage handle", encode(key), UCS_ERR_INVALID_PARAM});
    key = good_key; key.handle[0] ^= 1;
    bad.push_back({"handle of no gpumem memory", encode(key),
                   UCS_ERR_INVALID_PARAM});

    before = stats();
    for (const bad_key &b : bad) {
        log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);

        SCOPED_TRACE(b.what);
        ASSERT_EQ(good.size(), b.packed.size());
        rkey.rkey = 0x5a5a5a5a;
        EXPECT_EQ(b.status, unpack(b.packed, &rkey));
        EXPECT_LE(1u, log.size()) << "no reason logged";
        /* UCX 1.13 releases the key whose unpack failed along with the
         * others: what is left is nothing to release */
        EXPECT_EQ(0u, rkey.rkey);
        release(&rkey);
    }
    after = stats();
    EXPECT_EQ(before.imports, after.imports);
    EXPECT_EQ(0u, after.entries);

    /* The decoder itself, of a key shorter or longer than a key */
    {
        log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gpumem_ipc_key_unpack(good.data(), good.size() - 1,
                                            &key));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gpumem_ipc_key_unpack((good + "x").data(),
                                            good.size() + 1, &key));
        EXPECT_EQ(2u, log.count({"refused a remote key of"})) << log.text();
    }

    /* And the good key still maps */
    ASSERT_EQ(UCS_OK, unpack(good, &rkey));
    release(&rkey);
    unregister_buffer(buffer);
}

/* The decoder, on random damage to a good key (a fuzzer's work in small):
 * each result is a refusal, or a key that packs back to exactly the same
 * bytes and whose range lies inside its allocation */
TEST_F(ipc_uct, key_decoder_refuses_or_repacks_every_damaged_key) {
    std::mt19937 rng(20261129);
    remote_buffer buffer;
    uct_gpumem_ipc_key_t key;
    unsigned accepted = 0;
    std::string damaged;

    open_uct();
    buffer = register_buffer(65536, 1);
    ASSERT_TRUE(buffer.memh != NULL);
    {
        log_capture quiet(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);

        for (int i = 0; i < 20000; ++i) {
            damaged = buffer.packed;
            for (unsigned n = 1 + (rng() % 4); n > 0; --n) {
                damaged[rng() % damaged.size()] ^= (char)(1 + (rng() % 255));
            }
            if (uct_gpumem_ipc_key_unpack(damaged.data(), damaged.size(),
                                          &key) != UCS_OK) {
                continue;
            }

            ++accepted;
            ASSERT_TRUE(encode(key) == damaged) << "iteration " << i;
            ASSERT_GE(key.address, key.alloc_address);
            ASSERT_LE(key.length, key.alloc_size);
            ASSERT_LE(key.address - key.alloc_address,
                      key.alloc_size - key.length);
            ASSERT_LE(key.alloc_address, UINT64_MAX - key.alloc_size);
        }
    }
    /* Damage to the owner's or the handle's bytes passes the decoder: the
     * checks after it refuse it */
    EXPECT_LT(0u, accepted);
    unregister_buffer(buffer);
}

/* A key of memory on a GPU that the cache's GPU does not reach (GPUs 0 and
 * 2 of a Minsky, on two sockets) unpacks through the process's GPU that
 * does, the key's own: the refusal of the direct way is said once, and the
 * bytes of a host buffer land through that GPU's mapping */
TEST_F(ipc_uct, key_of_a_gpu_that_is_not_reached_maps_on_one_that_reaches) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    const std::string in = pattern(4099, 7);
    std::string out(in.size(), '\0');
    counted_comp put_comp, get_comp;
    remote_buffer buffer;
    uct_rkey_bundle_t rkey;
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    gpumem_test::scoped_env topo("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                                 "/hwloc-power8-minsky-4xP100-nvlink.xml");

    open_uct();
    topo.restore();
    connect_to_self();
    buffer = register_buffer(8192, 2);
    ASSERT_TRUE(buffer.memh != NULL);

    ASSERT_EQ(UCS_OK, unpack(buffer.packed, &rkey));
    finish(zcopy(true, m_ep, (void*)in.data(), in.size(),
                 (uintptr_t)buffer.address + 5, rkey.rkey, &put_comp),
           put_comp);
    finish(zcopy(false, m_ep, &out[0], out.size(),
                 (uintptr_t)buffer.address + 5, rkey.rkey, &get_comp),
           get_comp);
    EXPECT_TRUE(in == out);
    EXPECT_EQ(1u, log.count({"0002:01:00.0", "does not reach", "000a:01:00.0",
                             "p2pdma whitelist"})) << log.text();
    release(&rkey);
    unregister_buffer(buffer);
}

TEST_F(ipc_uct, unpacking_the_same_memory_twice_shares_one_mapping) {
    uct_rkey_bundle_t first, second, third;
    uct_gpumem_ipc_stats_t before, after;
    remote_buffer buffer;
    uct_mem_h part;

    open_uct();
    buffer = register_buffer(1 << 20, 1);
    ASSERT_TRUE(buffer.memh != NULL);
    buffer.packed = as_of_another_process(buffer.packed);
    part          = reg(buffer.address + 8192, 4096);

    before = stats();
    ASSERT_EQ(UCS_OK, unpack(buffer.packed, &first));
    ASSERT_EQ(UCS_OK, unpack(buffer.packed, &second));
    /* Another range of the same allocation: the same memory */
    ASSERT_EQ(UCS_OK, unpack(as_of_another_process(pack(part)), &third));
    after = stats();
    EXPECT_EQ(before.imports + 1, after.imports);
    EXPECT_EQ(before.hits + 2, after.hits);
    EXPECT_EQ(1u, after.entries);
    EXPECT_EQ(0u, after.idle);

    release(&first);
    release(&second);
    release(&third);
    /* Kept, idle, for the next key of the memory */
    EXPECT_EQ(1u, stats().entries);
    EXPECT_EQ(1u, stats().idle);
    ASSERT_EQ(UCS_OK, unpack(buffer.packed, &first));
    EXPECT_EQ(before.imports + 1, stats().imports);
    release(&first);

    dereg(part);
    unregister_buffer(buffer);
}

/* The process's own memory (another UCP context of it) is not kept mapped
 * once no key uses it: the mapping would hold the VRAM past the free */
TEST_F(ipc_uct, mapping_of_the_processs_own_memory_goes_when_idle) {
    uct_rkey_bundle_t rkey;
    remote_buffer buffer;

    open_uct();
    buffer = register_buffer(1 << 20, 1);
    ASSERT_TRUE(buffer.memh != NULL);
    ASSERT_EQ(UCS_OK, unpack(buffer.packed, &rkey));
    EXPECT_EQ(1u, stats().entries);
    release(&rkey);
    EXPECT_EQ(0u, stats().entries);
    EXPECT_EQ(0u, stats().idle);
    unregister_buffer(buffer);
}

/* The owner frees, then allocates again at the same address: the new key
 * maps the new memory, never the old one (keyed by handle, not address),
 * and the old mapping goes, whether its key is still held or not */
TEST_F(ipc_uct, address_reused_by_a_new_allocation_gets_a_fresh_mapping) {
    const size_t size = 65536;
    uct_rkey_bundle_t old_rkey, held_rkey, new_rkey;
    remote_buffer first, second;
    uct_gpumem_ipc_stats_t before;
    counted_comp comp;
    char *local;

    open_uct();
    connect_to_self();
    local = (char*)device_alloc(size, 0);
    first = register_buffer(size, 1);
    ASSERT_TRUE((local != NULL) && (first.memh != NULL));
    to_device(first.address, pattern(size, 1));
    ASSERT_EQ(UCS_OK, unpack(first.packed, &old_rkey));
    ASSERT_EQ(UCS_OK, unpack(first.packed, &held_rkey));
    release(&old_rkey);

    unregister_buffer(first);
    before = stats();
    second = register_buffer(size, 1);
    ASSERT_TRUE(second.memh != NULL);
    ASSERT_EQ(first.address, second.address)
            << "the emu driver gave another address: nothing to test";
    EXPECT_NE(first.packed, second.packed);
    to_device(second.address, pattern(size, 2));

    ASSERT_EQ(UCS_OK, unpack(second.packed, &new_rkey));
    EXPECT_EQ(before.imports + 1, stats().imports);
    EXPECT_EQ(before.stale + 1, stats().stale);
    /* The old entry waits for its held key only */
    EXPECT_EQ(2u, stats().entries);

    finish(zcopy(false, m_ep, local, size, (uintptr_t)second.address,
                 new_rkey.rkey, &comp), comp);
    EXPECT_TRUE(pattern(size, 2) == from_device(local, size))
            << "the new key reads the old memory";

    release(&held_rkey);
    EXPECT_EQ(1u, stats().entries);
    release(&new_rkey);
    unregister_buffer(second);
    device_free(local);
}

TEST_F(ipc_uct, idle_mappings_past_the_limit_go_oldest_first) {
    std::vector<remote_buffer> buffers;
    uct_gpumem_ipc_stats_t before;
    uct_rkey_bundle_t rkey;

    setenv("UCX_GPUMEM_IPC_CACHE_MAX_IDLE", "2", 1);
    open_uct();
    unsetenv("UCX_GPUMEM_IPC_CACHE_MAX_IDLE");
    before = stats();
    for (int i = 0; i < 3; ++i) {
        buffers.push_back(register_buffer(4096, 1));
        buffers.back().packed = as_of_another_process(buffers.back().packed);
        ASSERT_EQ(UCS_OK, unpack(buffers.back().packed, &rkey));
        release(&rkey);
    }
    EXPECT_EQ(before.evicted + 1, stats().evicted);
    EXPECT_EQ(2u, stats().idle);

    /* The first was the oldest: mapped anew; the last is still there */
    ASSERT_EQ(UCS_OK, unpack(buffers[2].packed, &rkey));
    release(&rkey);
    EXPECT_EQ(before.imports + 3, stats().imports);
    ASSERT_EQ(UCS_OK, unpack(buffers[0].packed, &rkey));
    release(&rkey);
    EXPECT_EQ(before.imports + 4, stats().imports);

    for (remote_buffer &buffer : buffers) {
        unregister_buffer(buffer);
    }
}

/* Keys of this process's own memory: from a buffer on GPU 0 to one on GPU
 * 1 and back, through GPU 0's mapping of GPU 1's memory, and the other
 * way, through GPU 1's; every size class, unaligned */
TEST_F(ipc_uct, put_get_zcopy_between_two_gpus_of_one_process) {
    const size_t sizes[]   = {1, 7, 4099, 8192, 8193, 65536 + 3,
                              (1 << 20) + 5, 4 << 20};
    const size_t offsets[] = {0, 1, 4093};
    const size_t max       = (4 << 20) + 4096;
    remote_buffer on_gpu1, on_gpu0;
    uct_rkey_bundle_t rkey1, rkey0;
    char *local0, *local1;

    open_uct();
    connect_to_self();
    local0  = (char*)device_alloc(max, 0);
    local1  = (char*)device_alloc(max, 1);
    on_gpu1 = register_buffer(max, 1);
    on_gpu0 = register_buffer(max, 0);
    ASSERT_TRUE((local0 != NULL) && (local1 != NULL) &&
                (on_gpu1.memh != NULL) && (on_gpu0.memh != NULL));
    ASSERT_EQ(UCS_OK, unpack(on_gpu1.packed, &rkey1));
    ASSERT_EQ(UCS_OK, unpack(on_gpu0.packed, &rkey0));

    for (size_t size : sizes) {
        for (size_t offset : offsets) {
            put_get(m_ep, on_gpu1, rkey1.rkey, local0, size, offset);
            put_get(m_ep, on_gpu0, rkey0.rkey, local1, size, offset);
        }
    }
    EXPECT_LT(0u, stats().puts);
    EXPECT_LT(0u, stats().gets);

    release(&rkey1);
    release(&rkey0);
    unregister_buffer(on_gpu1);
    unregister_buffer(on_gpu0);
    device_free(local0);
    device_free(local1);
}

/* Device memory of a GPU that does not reach the key's memory (GPUs 0 and
 * 2 of a Minsky, on two sockets, no NVLink between them): the copy goes in
 * steps through host memory, by an engine that reaches each side, as CUDA
 * stages a copy between GPUs without peer access; every byte lands, and
 * the refusal of the direct way is said once */
TEST_F(ipc_uct, zcopy_from_a_gpu_that_does_not_reach_the_key_is_staged) {
    GPUMEM_TEST_SKIP_UNLESS_EMU("topology of the case");
    const size_t sizes[] = {1, 4099, (1 << 20) + 5, (3 << 20) + 7};
    const size_t max     = (4 << 20);
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    gpumem_test::scoped_env topo("UCX_GPUMEM_TOPO_XML", GPUMEM_TEST_TOPO_DIR
                                 "/hwloc-power8-minsky-4xP100-nvlink.xml");
    remote_buffer on_gpu0;
    uct_rkey_bundle_t rkey0;
    char *local2;

    open_uct();
    topo.restore();
    connect_to_self();
    local2  = (char*)device_alloc(max, 2);
    on_gpu0 = register_buffer(max, 0);
    ASSERT_TRUE((local2 != NULL) && (on_gpu0.memh != NULL));
    ASSERT_EQ(UCS_OK, unpack(on_gpu0.packed, &rkey0));

    for (size_t size : sizes) {
        SCOPED_TRACE(std::to_string(size) + " bytes");
        put_get(m_ep, on_gpu0, rkey0.rkey, local2, size, 3);
    }
    EXPECT_EQ(1u, log.count({"000a:01:00.0", "does not reach",
                             "0002:01:00.0"})) << log.text();
    EXPECT_EQ(1u, log.size()) << log.text();

    release(&rkey0);
    unregister_buffer(on_gpu0);
    device_free(local2);
}

/* The local side of a zero-copy may be host memory: the engine of the
 * process's GPU moves it */
TEST_F(ipc_uct, put_get_zcopy_of_host_memory_and_a_peers_device_memory) {
    const size_t sizes[] = {1, 4099, (1 << 20) + 5};
    transfer t;

    setup_transfer(4096, (1 << 20) + 4096, &t);
    for (size_t size : sizes) {
        const std::string in = pattern(size, (unsigned)size);
        std::string out(size, '\0');
        counted_comp put_comp, get_comp;

        SCOPED_TRACE(std::to_string(size) + " bytes");
        finish(zcopy(true, m_ep, (void*)in.data(), size,
                     (uintptr_t)t.remote.address + 3, t.rkey.rkey,
                     &put_comp), put_comp);
        EXPECT_TRUE(in == from_device(t.remote.address + 3, size));
        finish(zcopy(false, m_ep, &out[0], size,
                     (uintptr_t)t.remote.address + 3, t.rkey.rkey,
                     &get_comp), get_comp);
        EXPECT_TRUE(in == out);
    }
    teardown_transfer(&t);
}

/* What UCP gives a short put: host or device memory, which only the engine
 * reads; the bytes have landed when it returns */
TEST_F(ipc_uct, put_short_of_device_and_host_memory_lands_at_once) {
    uct_iface_attr_t attr;
    transfer t;

    setup_transfer(16384 + 8, 16384 + 8, &t);
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    for (size_t size : {(size_t)1, (size_t)127, attr.cap.put.max_short}) {
        const std::string from_dev  = pattern(size, (unsigned)size);
        const std::string from_host = pattern(size, (unsigned)size + 1);

        SCOPED_TRACE(std::to_string(size) + " bytes");
        to_device(t.local + 1, from_dev);
        EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, t.local + 1, size,
                                           (uintptr_t)t.remote.address + 5,
                                           t.rkey.rkey));
        EXPECT_TRUE(from_dev == from_device(t.remote.address + 5, size));

        EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, from_host.data(), size,
                                           (uintptr_t)t.remote.address + 7,
                                           t.rkey.rkey));
        EXPECT_TRUE(from_host == from_device(t.remote.address + 7, size));
    }
    teardown_transfer(&t);
}

namespace {

struct bcopy_arg {
    std::string bytes;
};

size_t bcopy_pack(void *dest, void *arg)
{
    const std::string &bytes = ((bcopy_arg*)arg)->bytes;

    memcpy(dest, bytes.data(), bytes.size());
    return bytes.size();
}

void bcopy_unpack(void *arg, const void *data, size_t length)
{
    ((bcopy_arg*)arg)->bytes.assign((const char*)data, length);
}

}

/* Bcopy packs and unpacks host bytes; they land or arrive before it
 * returns, past the limit it is refused */
TEST_F(ipc_uct, put_get_bcopy_move_host_bytes_to_and_from_device_memory) {
    uct_iface_attr_t attr;
    bcopy_arg arg;
    transfer t;

    setup_transfer(4096, (64 << 10) + 64, &t);
    ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
    for (size_t size : {(size_t)1, (size_t)1000, attr.cap.put.max_bcopy}) {
        SCOPED_TRACE(std::to_string(size) + " bytes");
        arg.bytes = pattern(size, (unsigned)size);
        EXPECT_EQ((ssize_t)size,
                  uct_ep_put_bcopy(m_ep, bcopy_pack, &arg,
                                   (uintptr_t)t.remote.address + 9,
                                   t.rkey.rkey));
        EXPECT_TRUE(arg.bytes == from_device(t.remote.address + 9, size));

        to_device(t.remote.address + 11, pattern(size, (unsigned)size + 3));
        arg.bytes.clear();
        EXPECT_EQ(UCS_OK, uct_ep_get_bcopy(m_ep, bcopy_unpack, &arg, size,
                                           (uintptr_t)t.remote.address + 11,
                                           t.rkey.rkey, NULL));
        EXPECT_TRUE(pattern(size, (unsigned)size + 3) == arg.bytes);
    }

    {
        log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_get_bcopy(m_ep, bcopy_unpack, &arg,
                                   attr.cap.get.max_bcopy + 1,
                                   (uintptr_t)t.remote.address, t.rkey.rkey,
                                   NULL));
    }
    teardown_transfer(&t);
}

TEST_F(ipc_uct, zcopy_outside_the_keys_range_is_refused) {
    remote_buffer buffer;
    uct_rkey_bundle_t rkey;
    std::string host(64, 'h');
    counted_comp comp;
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    uct_mem_h part;
    char *local;

    open_uct();
    connect_to_self();
    local  = (char*)device_alloc(65536, 0);
    buffer = register_buffer(65536, 1);
    part   = reg(buffer.address + 4096, 4096);
    ASSERT_EQ(UCS_OK, unpack(pack(part), &rkey));

    /* Inside the allocation, outside the registered range */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              zcopy(true, m_ep, local, 4097, (uintptr_t)buffer.address + 4096,
                    rkey.rkey, &comp));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              zcopy(false, m_ep, local, 1, (uintptr_t)buffer.address,
                    rkey.rkey, &comp));
    /* From host memory too */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              zcopy(true, m_ep, &host[0], host.size(),
                    (uintptr_t)buffer.address + 8192 - 63, rkey.rkey, &comp));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_ep_put_short(m_ep, &host[0], 2,
                               (uintptr_t)buffer.address + 8191, rkey.rkey));
    EXPECT_EQ(0, comp.calls);
    EXPECT_EQ(4u, log.size()) << log.text();

    release(&rkey);
    dereg(part);
    unregister_buffer(buffer);
    device_free(local);
}

TEST_F(ipc_uct, large_zcopy_completes_through_progress_and_flush_waits) {
    const size_t size = 4 << 20;
    counted_comp copy, ep_flush, iface_flush;
    transfer t;

    setup_transfer(size, size, &t);
    to_device(t.local, pattern(size, 3));
    put_in_flight(&t, size, 0, &copy);
    EXPECT_EQ(0, copy.calls) << "completed before any progress";
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_iface, 0, NULL));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, &ep_flush.uct));
    ASSERT_EQ(UCS_INPROGRESS, uct_iface_flush(m_iface, 0, &iface_flush.uct));

    wait(iface_flush);
    EXPECT_EQ(1, copy.calls) << "a flush completed before the copy";
    EXPECT_EQ(1, ep_flush.calls);
    EXPECT_EQ(UCS_OK, copy.status);
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep, 0, NULL));
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    EXPECT_TRUE(pattern(size, 3) == from_device(t.remote.address, size));
    teardown_transfer(&t);
}

/* Copies run side by side; a fence makes those after it start once the
 * bytes of those before it landed */
TEST_F(ipc_uct, fence_orders_copies_that_overlap) {
    const size_t size = 2 << 20;
    counted_comp first, second;
    transfer t;

    setup_transfer(2 * size, size, &t);
    to_device(t.local, pattern(size, 4));
    to_device(t.local + size, pattern(size, 5));

    put_in_flight(&t, size, 0, &first);
    EXPECT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    finish(zcopy(true, m_ep, t.local + size, size,
                 (uintptr_t)t.remote.address, t.rkey.rkey, &second), second);
    wait(first);
    EXPECT_TRUE(pattern(size, 5) == from_device(t.remote.address, size))
            << "the copy before the fence landed after the one after it";
    teardown_transfer(&t);
}

/* A short put after a fence lands after the zero-copy before it: its bytes
 * are the last */
TEST_F(ipc_uct, fence_makes_short_put_land_after_earlier_zcopy) {
    const size_t size = 4 << 20;
    const std::string tail(64, 't');
    counted_comp first;
    transfer t;

    setup_transfer(size, size, &t);
    to_device(t.local, pattern(size, 8));
    put_in_flight(&t, size, 0, &first);
    EXPECT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, tail.data(), tail.size(),
                                       (uintptr_t)t.remote.address + size -
                                       tail.size(), t.rkey.rkey));
    wait(first);
    EXPECT_TRUE(tail == from_device(t.remote.address + size - tail.size(),
                                    tail.size()));
    EXPECT_TRUE(pattern(size, 8).substr(0, size - tail.size()) ==
                from_device(t.remote.address, size - tail.size()));
    teardown_transfer(&t);
}

/* Short and bcopy complete before they return: nothing is left to flush */
TEST_F(ipc_uct, short_and_bcopy_leave_nothing_to_flush) {
    const std::string bytes(1000, 'b');
    transfer t;

    setup_transfer(4096, 4096, &t);
    EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, bytes.data(), bytes.size(),
                                       (uintptr_t)t.remote.address,
                                       t.rkey.rkey));
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep, 0, NULL));
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_iface, 0, NULL));
    teardown_transfer(&t);
}

/* A flush of the interface waits for the copies of every endpoint */
TEST_F(ipc_uct, iface_flush_waits_for_every_ep) {
    const size_t size = 4 << 20;
    counted_comp first, second, flush;
    uct_ep_h other;
    transfer t;

    setup_transfer(2 * size, 2 * size, &t);
    other = connect(device_address(), iface_address());
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, m_ep, t.local, size,
                                    (uintptr_t)t.remote.address, t.rkey.rkey,
                                    &first));
    ASSERT_EQ(UCS_INPROGRESS, zcopy(true, other, t.local + size, size,
                                    (uintptr_t)t.remote.address + size,
                                    t.rkey.rkey, &second));
    EXPECT_EQ(UCS_OK, uct_ep_flush(connect(device_address(),
                                           iface_address()), 0, NULL))
            << "an ep with nothing posted has nothing to flush";
    ASSERT_EQ(UCS_INPROGRESS, uct_iface_flush(m_iface, 0, &flush.uct));
    wait(flush);
    EXPECT_EQ(1, first.calls);
    EXPECT_EQ(1, second.calls);
    teardown_transfer(&t);
}

TEST_F(ipc_uct, zero_length_operations_are_done_at_once) {
    counted_comp comp;
    transfer t;

    setup_transfer(4096, 4096, &t);
    EXPECT_EQ(UCS_OK, zcopy(true, m_ep, t.local, 0,
                            (uintptr_t)t.remote.address, t.rkey.rkey, &comp));
    EXPECT_EQ(UCS_OK, zcopy(false, m_ep, t.local, 0,
                            (uintptr_t)t.remote.address, t.rkey.rkey, &comp));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, t.local, 0,
                                       (uintptr_t)t.remote.address,
                                       t.rkey.rkey));
    EXPECT_EQ(0, comp.calls);
    teardown_transfer(&t);
}

TEST_F(ipc_uct, ep_destroyed_with_copies_in_flight_still_lands_them) {
    const size_t size = 4 << 20;
    counted_comp comp;
    transfer t;

    setup_transfer(size, size, &t);
    to_device(t.local, pattern(size, 6));
    put_in_flight(&t, size, 0, &comp);
    uct_ep_destroy(m_ep);
    m_eps.clear();
    /* The key goes too: the copy holds the mapping */
    release_key(&t);
    wait(comp);
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_TRUE(pattern(size, 6) == from_device(t.remote.address, size));
    teardown_transfer(&t);
}

/* The engines finish what they were given, no completion is called, and
 * nothing is left: TearDown finds the emu's state gone */
TEST_F(ipc_uct, iface_closed_with_copies_in_flight_is_clean) {
    const size_t size = 4 << 20;
    counted_comp comp, flush;
    transfer t;

    setup_transfer(size, size, &t);
    to_device(t.local, pattern(size, 7));
    put_in_flight(&t, size, 0, &comp);
    ASSERT_EQ(UCS_INPROGRESS, uct_iface_flush(m_iface, 0, &flush.uct));
    uct_ep_destroy(m_ep);
    m_eps.clear();
    uct_iface_close(m_iface);
    m_iface = NULL;
    EXPECT_EQ(0, comp.calls);
    EXPECT_EQ(0, flush.calls);
    EXPECT_TRUE(pattern(size, 7) == from_device(t.remote.address, size));
    teardown_transfer(&t);
}

TEST_F(ipc_uct, pending_add_says_try_again) {
    uct_pending_req_t req;

    open_uct();
    connect_to_self();
    req.func = NULL;
    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(m_ep, &req, 0));
}

/* A peer process dies while this one keeps an idle mapping of its memory:
 * the async sweep drops it soon after, with no key to come, and the
 * memory goes back (UCX_GPUMEM_IPC_CACHE_SWEEP_INTERVAL) */
TEST_F(ipc_uct, idle_mapping_of_a_dead_peer_goes_at_the_next_sweep) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    const size_t size = 1 << 20;
    uct_gpumem_ipc_stats_t before;
    uct_rkey_bundle_t rkey;
    std::string packed;
    channel chan;
    pid_t pid;

    pid = fork_child([&]() {
        remote_buffer buffer;

        chan.child_side();
        setenv("UCX_GPUMEM_ALLOC_GPU", "1", 1);
        open_uct();
        buffer = register_buffer(size, 1);
        ASSERT_TRUE(buffer.memh != NULL);
        chan.send(buffer.packed);
        /* Dies with its memory registered: nothing unregisters it */
        EXPECT_EQ("die", chan.recv());
        fflush(stdout);
        _exit(0);
    });

    packed = chan.recv();
    setenv("UCX_GPUMEM_IPC_CACHE_SWEEP_INTERVAL", "50ms", 1);
    open_uct();
    unsetenv("UCX_GPUMEM_IPC_CACHE_SWEEP_INTERVAL");
    before = stats();
    ASSERT_EQ(UCS_OK, unpack(packed, &rkey));
    release(&rkey);
    EXPECT_EQ(before.entries + 1, stats().entries);
    EXPECT_EQ(before.idle + 1, stats().idle);

    chan.send("die");
    wait_child(pid);

    /* No key comes: the sweep alone finds the owner gone */
    for (int i = 0; (i < 200) && (stats().entries > before.entries); ++i) {
        usleep(10000);
    }
    EXPECT_EQ(before.entries, stats().entries) << "the mapping stayed";
    EXPECT_EQ(before.stale + 1, stats().stale);
}

/* Two processes on GPUs 0 and 1: the parent puts into the child's device
 * memory and gets from it, by the child's addresses and key; every byte is
 * checked on both sides */
TEST_F(ipc_uct, put_get_zcopy_between_two_processes) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    const size_t sizes[] = {8, 8193, (1 << 20) + 3, 4 << 20};
    const size_t max     = 4 << 20;
    channel chan;
    pid_t pid;

    pid = fork_child([&]() {
        remote_buffer buffer;

        chan.child_side();
        setenv("UCX_GPUMEM_ALLOC_GPU", "1", 1);
        open_uct();
        buffer = register_buffer(max, 1);
        ASSERT_TRUE(buffer.memh != NULL);
        to_device(buffer.address, pattern(max, 11));
        chan.send(device_address());
        chan.send(iface_address());
        chan.send(std::to_string((uintptr_t)buffer.address));
        chan.send(buffer.packed);

        for (size_t size : sizes) {
            /* The parent put its bytes and asks them checked */
            EXPECT_EQ("check", chan.recv());
            EXPECT_TRUE(pattern(size, (unsigned)size) ==
                        from_device(buffer.address, size))
                    << size << " bytes put by the parent differ";
            to_device(buffer.address, pattern(max, 11));
            chan.send("checked");
        }
        EXPECT_EQ("done", chan.recv());
        unregister_buffer(buffer);
    });

    std::string dev_addr   = chan.recv();
    std::string iface_addr = chan.recv();
    uint64_t remote        = std::stoull(chan.recv());
    std::string packed     = chan.recv();
    uct_gpumem_ipc_stats_t before;
    uct_rkey_bundle_t rkey;
    char *local;
    uct_ep_h ep;

    open_uct();
    before = stats();
    ep    = connect(dev_addr, iface_addr);
    local = (char*)device_alloc(max, 0);
    ASSERT_TRUE((ep != NULL) && (local != NULL));
    ASSERT_EQ(UCS_OK, unpack(packed, &rkey));

    for (size_t size : sizes) {
        counted_comp put, get;

        SCOPED_TRACE(std::to_string(size) + " bytes");
        to_device(local, pattern(size, (unsigned)size));
        finish(zcopy(true, ep, local, size, remote, rkey.rkey, &put), put);
        chan.send("check");
        EXPECT_EQ("checked", chan.recv());

        finish(zcopy(false, ep, local, size, remote, rkey.rkey, &get), get);
        EXPECT_TRUE(pattern(max, 11).substr(0, size) ==
                    from_device(local, size)) << "bytes got differ";
    }
    EXPECT_EQ(before.imports + 1, stats().imports)
            << "one mapping for all the copies";

    release(&rkey);
    device_free(local);
    close_uct();
    chan.send("done");
    wait_child(pid);
}

/* On a machine where GPU 0 and GPU 2 do not reach each other, a process on
 * GPU 0 finds a peer on GPU 2 unreachable, as often as UCP asks, and says
 * why once */
TEST_F(ipc_uct, peer_whose_gpu_is_not_reached_is_refused_and_logged_once) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    std::string dev_addr, iface_addr, other_machine;
    channel chan;
    pid_t pid;

    pid = fork_peer_on_gpu(chan, 2, &dev_addr, &iface_addr);
    log_capture log(UCS_LOG_LEVEL_DIAG, log_capture::LEVEL_RAISED);
    uct_ep_h ep;

    for (int i = 0; i < 3; ++i) {
        EXPECT_FALSE(uct_iface_is_reachable(
                m_iface, (const uct_device_addr_t*)dev_addr.data(),
                (const uct_iface_addr_t*)iface_addr.data()));
    }
    EXPECT_EQ(UCS_ERR_UNREACHABLE, try_connect(dev_addr, iface_addr, &ep));
    EXPECT_EQ(1u, log.count({"GPU 0002:01:00.0 does not reach the memory of "
                             "GPU 000a:01:00.0", "p2pdma whitelist"}))
            << log.text();
    EXPECT_EQ(1u, log.size()) << log.text();

    /* Another machine: refused too, said once */
    other_machine = dev_addr;
    other_machine[0] ^= 1;
    for (int i = 0; i < 2; ++i) {
        EXPECT_FALSE(uct_iface_is_reachable(
                m_iface, (const uct_device_addr_t*)other_machine.data(),
                (const uct_iface_addr_t*)iface_addr.data()));
    }
    EXPECT_EQ(1u, log.count({"another machine"})) << log.text();

    end_peer(chan, pid);
}

/* GPU 0 and GPU 1 of the same machine are joined by NVLink: reached */
TEST_F(ipc_uct, peer_whose_gpu_is_reached_by_nvlink_is_reachable) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    std::string dev_addr, iface_addr;
    channel chan;
    pid_t pid;

    pid = fork_peer_on_gpu(chan, 1, &dev_addr, &iface_addr);
    EXPECT_TRUE(uct_iface_is_reachable(
            m_iface, (const uct_device_addr_t*)dev_addr.data(),
            (const uct_iface_addr_t*)iface_addr.data()));
    end_peer(chan, pid);
}

/* An endpoint of @a iface to the interface of the addresses given */

/* Peer failure, as cuda_ipc has it: ep_check of an endpoint whose peer
 * process lives finds nothing; once the peer is killed, the interface's
 * error handler is called for the endpoint, at progress */
static ucs_status_t ipc_uct_peer_failed(void *arg, uct_ep_h ep,
                                        ucs_status_t status)
{
    std::vector<std::pair<uct_ep_h, ucs_status_t> > *failed =
            (std::vector<std::pair<uct_ep_h, ucs_status_t> >*)arg;

    failed->push_back(std::make_pair(ep, status));
    return UCS_OK;
}

TEST_F(ipc_uct, ep_check_tells_a_killed_peer_to_the_error_handler) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    std::vector<std::pair<uct_ep_h, ucs_status_t> > failed;
    std::string dev_addr, iface_addr;
    uct_iface_attr_t attr;
    uct_iface_h iface;
    channel chan;
    uct_ep_h ep;
    pid_t pid;

    pid = fork_peer_on_gpu(chan, 1, &dev_addr, &iface_addr);
    ASSERT_EQ(UCS_OK, gpumem_test::open_device_iface(
                              m_md, m_worker, IPC_TL, IPC_DEV, &iface,
                              ipc_uct_peer_failed, &failed));
    ASSERT_EQ(UCS_OK, uct_iface_query(iface, &attr));
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_EP_CHECK);
    ASSERT_EQ(UCS_OK, ipc_connect_to(iface, dev_addr, iface_addr, &ep));

    EXPECT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL));
    for (int i = 0; i < 100; ++i) {
        uct_worker_progress(m_worker);
    }
    EXPECT_TRUE(failed.empty()) << "a live peer was reported";

    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    EXPECT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL));
    for (int i = 0; (i < 100000) && failed.empty(); ++i) {
        uct_worker_progress(m_worker);
    }
    ASSERT_EQ(1u, failed.size()) << "the killed peer was not reported";
    EXPECT_EQ(ep, failed[0].first);
    EXPECT_NE(UCS_OK, failed[0].second);

    uct_ep_destroy(ep);
    uct_iface_close(iface);
}

/* An endpoint of @a iface to @a peer, another interface of the process */
/* The device and interface addresses of @a iface */
static void ipc_uct_addresses(uct_iface_h iface, std::string *dev_addr,
                              std::string *iface_addr)
{
    uct_iface_attr_t attr;

    ASSERT_EQ(UCS_OK, uct_iface_query(iface, &attr));
    dev_addr->assign(attr.device_addr_len, '\0');
    iface_addr->assign(attr.iface_addr_len, '\0');
    ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                              iface, (uct_device_addr_t*)&(*dev_addr)[0]));
    ASSERT_EQ(UCS_OK, uct_iface_get_address(
                              iface, (uct_iface_addr_t*)&(*iface_addr)[0]));
}

static void ipc_uct_connect(uct_iface_h iface, uct_iface_h peer,
                            uct_ep_h *ep_p)
{
    std::string dev_addr, iface_addr;

    ASSERT_NO_FATAL_FAILURE(ipc_uct_addresses(peer, &dev_addr, &iface_addr));
    ASSERT_EQ(UCS_OK, ipc_connect_to(iface, dev_addr, iface_addr, ep_p));
}

/* An interface that tells its peers' failures (m_failed), and an endpoint
 * of it to another interface of the process on the same GPU */
class ipc_uct_peer_iface : public ipc_uct {
protected:
    void open_pair() {
        open_uct();
        ASSERT_EQ(UCS_OK, gpumem_test::open_device_iface(
                                  m_md, m_worker, IPC_TL, IPC_DEV, &m_checked,
                                  ipc_uct_peer_failed, &m_failed));
        uct_iface_progress_enable(m_checked,
                                  UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
        ASSERT_EQ(UCS_OK, try_open_iface(IPC_DEV, &m_peer));
        ASSERT_NO_FATAL_FAILURE(ipc_uct_connect(m_checked, m_peer,
                                                &m_checked_ep));
    }

    std::vector<std::pair<uct_ep_h, ucs_status_t> > m_failed;
    uct_iface_h m_checked   = NULL;
    uct_iface_h m_peer      = NULL;
    uct_ep_h    m_checked_ep = NULL;
};

/* A peer in the same process is its interface: ep_check of an endpoint to
 * one still open finds nothing; once it is closed, the error handler is
 * told at progress (not within ep_check), once, and a sleeper's arm is
 * refused until then */
TEST_F(ipc_uct_peer_iface, ep_check_tells_a_closed_interface_of_the_process) {
    ASSERT_NO_FATAL_FAILURE(open_pair());
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(UCS_OK, uct_ep_check(m_checked_ep, 0, NULL));
        uct_worker_progress(m_worker);
    }
    EXPECT_TRUE(m_failed.empty()) << "an open interface was reported";

    uct_iface_close(m_peer);
    EXPECT_EQ(UCS_OK, uct_ep_check(m_checked_ep, 0, NULL));
    EXPECT_TRUE(m_failed.empty()) << "told within ep_check, not at progress";
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_checked,
                                                UCT_EVENT_SEND_COMP))
            << "a sleeper would miss the failure";

    EXPECT_EQ(UCS_OK, uct_ep_check(m_checked_ep, 0, NULL));
    for (int i = 0; i < 10; ++i) {
        uct_worker_progress(m_worker);
    }
    ASSERT_EQ(1u, m_failed.size()) << "the closed interface was not told once";
    EXPECT_EQ(m_checked_ep, m_failed[0].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_failed[0].second);

    EXPECT_EQ(UCS_OK, uct_ep_check(m_checked_ep, 0, NULL));
    uct_worker_progress(m_worker);
    EXPECT_EQ(1u, m_failed.size()) << "a failure told twice";

    uct_ep_destroy(m_checked_ep);
    uct_iface_close(m_checked);
}

#ifdef HAVE_UCT_IFACE_INTERNAL_OPS_EP_IS_CONNECTED
/* Whether @a ep is connected to the interface at these addresses */
static bool ipc_uct_is_connected_to(uct_ep_h ep, const std::string &dev_addr,
                                    const std::string &iface_addr)
{
    uct_ep_is_connected_params_t params = {};

    params.field_mask  = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                         UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    params.device_addr = (const uct_device_addr_t*)dev_addr.data();
    params.iface_addr  = (const uct_iface_addr_t*)iface_addr.data();
    return uct_ep_is_connected(ep, &params);
}

/* An endpoint is connected to the interface it was made to, and not to
 * another of the same process and GPU, nor to its own, nor to the same
 * interface said of another machine or another GPU: UCP asks when a peer
 * comes back by the same address */
TEST_F(ipc_uct_peer_iface, ep_is_connected_to_its_interface_only) {
    std::string dev_addr, iface_addr, other_machine, other_gpu;
    std::string other_dev, other_iface, own_dev, own_iface;
    uct_iface_h other;

    ASSERT_NO_FATAL_FAILURE(open_pair());
    ASSERT_EQ(UCS_OK, try_open_iface(IPC_DEV, &other));
    ASSERT_NO_FATAL_FAILURE(ipc_uct_addresses(m_peer, &dev_addr,
                                              &iface_addr));
    ASSERT_NO_FATAL_FAILURE(ipc_uct_addresses(other, &other_dev,
                                              &other_iface));
    ASSERT_NO_FATAL_FAILURE(ipc_uct_addresses(m_checked, &own_dev,
                                              &own_iface));
    other_machine     = dev_addr;
    other_machine[0] ^= 1;
    other_gpu         = iface_addr;
    other_gpu[14]    ^= 1;    /* The GPU's bus */

    EXPECT_TRUE(ipc_uct_is_connected_to(m_checked_ep, dev_addr, iface_addr));
    EXPECT_FALSE(ipc_uct_is_connected_to(m_checked_ep, other_dev,
                                         other_iface));
    EXPECT_FALSE(ipc_uct_is_connected_to(m_checked_ep, own_dev, own_iface));
    EXPECT_FALSE(ipc_uct_is_connected_to(m_checked_ep, other_machine,
                                         iface_addr));
    EXPECT_FALSE(ipc_uct_is_connected_to(m_checked_ep, dev_addr, other_gpu));
    uct_ep_destroy(m_checked_ep);
    uct_iface_close(other);
    uct_iface_close(m_peer);
    uct_iface_close(m_checked);
}
#endif

/* An endpoint destroyed before progress told its peer's failure is not
 * told of: nothing refers to it after */
TEST_F(ipc_uct_peer_iface, ep_destroyed_before_its_failure_is_told_is_forgotten) {
    ASSERT_NO_FATAL_FAILURE(open_pair());
    uct_iface_close(m_peer);
    EXPECT_EQ(UCS_OK, uct_ep_check(m_checked_ep, 0, NULL));
    uct_ep_destroy(m_checked_ep);
    for (int i = 0; i < 10; ++i) {
        uct_worker_progress(m_worker);
    }
    EXPECT_TRUE(m_failed.empty()) << "a destroyed endpoint was told of";
    EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_checked, UCT_EVENT_SEND_COMP));

    uct_iface_close(m_checked);
}
