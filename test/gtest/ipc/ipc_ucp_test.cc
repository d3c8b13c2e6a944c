/**
 * gpumem tests: what the UCP tests of the IPC transport share.
 *
 * See file LICENSE for terms.
 */

#include "ipc_ucp_test.h"

#include <cstdlib>
#include <string>


namespace gpumem_test {

std::string setup_name(const testing::TestParamInfo<ucp_setup> &info)
{
    std::string name = info.param.tls;

    for (char &c : name) {
        c = (c == ',') ? '_' : c;
    }
    return name + "_gpu" + std::to_string(info.param.receiver_gpu) + "_gpu" +
           std::to_string(info.param.sender_gpu);
}

}


using gpumem_test::channel;
using gpumem_test::lane_bytes;
using gpumem_test::ucp_process;
using gpumem_test::ucp_setup;


lane_bytes ipc_ucp::bytes_moved()
{
    auto copy_bytes = (uint64_t (*)())gpumem_test::plugin_symbol(
            "uct_gpumem_copy_bytes");
    gpumem_test::lane_bytes result;

    result.ipc  = stats().bytes;
    result.copy = (copy_bytes != NULL) ? copy_bytes() : 0;
    return result;
}

lane_bytes ipc_ucp::bytes_moved_since(const gpumem_test::lane_bytes &before)
{
    gpumem_test::lane_bytes now = bytes_moved();

    now.ipc  -= before.ipc;
    now.copy -= before.copy;
    return now;
}

void ipc_ucp::exchange(const std::vector<size_t> &sizes,
                       gpumem_test::lane_bytes *receiver,
                       gpumem_test::lane_bytes *sender)
{
    const ucp_setup setup = GetParam();
    gpumem_test::lane_bytes before;
    ucp_request_param_t param;
    ucp_process ucp;
    channel chan;
    pid_t pid;

    pid = fork_child([&]() {
        gpumem_test::lane_bytes child_before = bytes_moved();
        gpumem_test::lane_bytes moved;
        ucp_process sender;

        chan.child_side();
        setenv("UCX_GPUMEM_ALLOC_GPU",
               std::to_string(setup.sender_gpu).c_str(), 1);
        sender.init(setup.tls);
        chan.send(sender.address());
        sender.connect(chan.recv());

        for (size_t size : sizes) {
            void *src = device_alloc(size, setup.sender_gpu);

            ASSERT_TRUE(src != NULL);
            to_device(src, pattern(size, (unsigned)size));
            param.op_attr_mask = 0;
            EXPECT_EQ(UCS_OK, sender.wait(ucp_tag_send_nbx(sender.ep, src,
                                                           size,
                                                           gpumem_test::tag,
                                                           &param)));
            /* The receiver has the bytes: the buffer may go */
            EXPECT_EQ("received", chan.recv());
            device_free(src);
        }

        moved = bytes_moved_since(child_before);
        chan.send(std::to_string(moved.ipc));
        chan.send(std::to_string(moved.copy));
        sender.close(chan);
    });

    before = bytes_moved();
    setenv("UCX_GPUMEM_ALLOC_GPU", std::to_string(setup.receiver_gpu).c_str(),
           1);
    ucp.init(setup.tls);
    unsetenv("UCX_GPUMEM_ALLOC_GPU");
    chan.send(ucp.address());
    ucp.connect(chan.recv());

    for (size_t size : sizes) {
        void *dst = device_alloc(size, setup.receiver_gpu);

        SCOPED_TRACE(std::to_string(size) + " bytes");
        ASSERT_TRUE(dst != NULL);
        param.op_attr_mask = 0;
        EXPECT_EQ(UCS_OK, ucp.wait(ucp_tag_recv_nbx(ucp.worker, dst, size,
                                                    gpumem_test::tag,
                                                    (ucp_tag_t)-1, &param)));
        EXPECT_TRUE(pattern(size, (unsigned)size) == from_device(dst, size))
                << "bytes differ";
        device_free(dst);
        chan.send("received");
    }

    sender->ipc  = std::stoull(chan.recv());
    sender->copy = std::stoull(chan.recv());
    *receiver    = bytes_moved_since(before);
    ucp.close(chan);
    wait_child(pid);
}

void ipc_ucp::exchange(const std::vector<size_t> &sizes,
                       uint64_t *receiver_bytes, uint64_t *sender_bytes)
{
    gpumem_test::lane_bytes receiver, sender;

    exchange(sizes, &receiver, &sender);
    *receiver_bytes = receiver.ipc;
    *sender_bytes   = sender.ipc;
}
