/**
 * gpumem tests: what the UCP tests of the IPC transport share: one
 * process's UCP, where the processes are, the bytes each transport of the
 * plugin moved, and tag messages of device buffers from a child process to
 * its parent.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_IPC_UCP_TEST_H_
#define GPUMEM_IPC_UCP_TEST_H_

#include "ipc_test.h"

#include <common/channel.h>

#include <ucp/api/ucp.h>

#include <string>
#include <vector>


namespace gpumem_test {

/* One process's UCP: a context, a worker and an endpoint to the peer */
struct ucp_process {
    ucp_context_h context = NULL;
    ucp_worker_h  worker  = NULL;
    ucp_ep_h      ep      = NULL;

    ucs_status_t  peer_error = UCS_OK;   /* What the error handler got */

    void init(const std::string &tls, uint64_t features = UCP_FEATURE_TAG,
              const char *keepalive_interval = NULL) {
        ucp_worker_params_t worker_params;
        ucp_params_t params;
        ucp_config_t *config;

        ASSERT_EQ(UCS_OK, ucp_config_read(NULL, NULL, &config));
        EXPECT_EQ(UCS_OK, ucp_config_modify(config, "TLS", tls.c_str()));
        if (keepalive_interval != NULL) {
            EXPECT_EQ(UCS_OK, ucp_config_modify(config, "KEEPALIVE_INTERVAL",
                                                keepalive_interval));
        }
        /* Rendezvous from 8 KiB on, whatever the estimates */
        EXPECT_EQ(UCS_OK, ucp_config_modify(config, "RNDV_THRESH", "8k"));
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = features;
        ASSERT_EQ(UCS_OK, ucp_init(&params, config, &context));
        ucp_config_release(config);

        worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
        ASSERT_EQ(UCS_OK, ucp_worker_create(context, &worker_params,
                                            &worker));
    }

    std::string address() {
        ucp_address_t *address;
        size_t length;
        std::string result;

        EXPECT_EQ(UCS_OK, ucp_worker_get_address(worker, &address, &length));
        result.assign((const char*)address, length);
        ucp_worker_release_address(worker, address);
        return result;
    }

    void connect(const std::string &peer, bool peer_errors = false) {
        ucp_ep_params_t params;

        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = (const ucp_address_t*)peer.data();
        if (peer_errors) {
            /* As MPI's fault tolerance asks: the peer's failure is an
             * error of the endpoint, not of the process */
            params.field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                     UCP_EP_PARAM_FIELD_ERR_HANDLER;
            params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
            params.err_handler.cb  = peer_failed;
            params.err_handler.arg = this;
        }
        ASSERT_EQ(UCS_OK, ucp_ep_create(worker, &params, &ep));
    }

    static void peer_failed(void *arg, ucp_ep_h, ucs_status_t status) {
        ((ucp_process*)arg)->peer_error = status;
    }

    ucs_status_t flush() {
        ucp_request_param_t param;

        param.op_attr_mask = 0;
        return wait(ucp_ep_flush_nbx(ep, &param));
    }

    ucs_status_t wait(ucs_status_ptr_t request) {
        return gpumem_test::ucp_wait(request,
                                     [this]() { ucp_worker_progress(worker); });
    }

    /* Both processes close at the same time, each progressing its own
     * worker, and tell each other before the workers go */
    void close(channel &chan) {
        ucp_request_param_t param;

        if (ep != NULL) {
            param.op_attr_mask = 0;
            EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(ep, &param)));
        }
        chan.send("closed");
        EXPECT_EQ("closed", chan.recv());
        if (worker != NULL) {
            ucp_worker_destroy(worker);
        }
        if (context != NULL) {
            ucp_cleanup(context);
        }
    }
};


/* Where the processes are: UCX_TLS, and the GPU of each */
struct ucp_setup {
    const char *tls;
    int        receiver_gpu;
    int        sender_gpu;
};

/* The test's name for a setup: its transports and GPUs */
std::string setup_name(const testing::TestParamInfo<ucp_setup> &info);

const ucp_tag_t tag = 0x69706367;


/* What each transport of the plugin moved in one process */
struct lane_bytes {
    uint64_t ipc  = 0;   /* gpumemipc: zero-copy to and from peers' memory */
    uint64_t copy = 0;   /* gpumemcpy: staging, and copies within the
                            process */
};

}


class ipc_ucp : public ipc_test,
                public testing::WithParamInterface<gpumem_test::ucp_setup> {
protected:
    /* Every case has a child of a fork move device memory */
    virtual void SetUp() {
        ipc_test::SetUp();
        GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    }

    /* What the plugin's transports moved in this process so far */
    gpumem_test::lane_bytes bytes_moved();
    gpumem_test::lane_bytes
    bytes_moved_since(const gpumem_test::lane_bytes &before);

    /* The child sends a message of each size from device memory on its GPU;
     * the parent receives into device memory on its own and checks every
     * byte. Gives what each transport moved in the parent and the child. */
    void exchange(const std::vector<size_t> &sizes,
                  gpumem_test::lane_bytes *receiver,
                  gpumem_test::lane_bytes *sender);

    /* As above, the IPC transport's bytes only */
    void exchange(const std::vector<size_t> &sizes, uint64_t *receiver_bytes,
                  uint64_t *sender_bytes);
};

#endif
