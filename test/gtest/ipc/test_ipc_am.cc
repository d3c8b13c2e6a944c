/**
 * gpumem tests: the IPC transport's active messages through the public UCT
 * API: short and bcopy messages in order through the peer's receive FIFO,
 * requests that wait for a slot, the endpoint's failure when its peer
 * closed or it was invalidated, the receiver's wakeup, another process's
 * messages, and what a peer wrote wrong into the FIFO.
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
#include <ucs/time/time.h>
#include <uct/gpumem/ipc/ipc_addr.h>
#include <uct/gpumem/ipc/ipc_fifo.h>
#include <uct/gpumem/ipc/ipc_iface.h>
#include <uct/api/v2/uct_v2.h>
#include <uct/base/uct_iface.h>
}

#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>


using gpumem_test::channel;
using gpumem_test::ipc_connect_to;
using gpumem_test::log_capture;


#define AM_ID  3


class ipc_am : public ipc_test {
protected:
    struct message {
        uint8_t     id;
        std::string bytes;
    };

    struct pending_send {
        uct_pending_req_t uct;
        ipc_am            *test;
        uint64_t          header;
    };

    virtual void TearDown() {
        if (m_ep != NULL) {
            uct_ep_destroy(m_ep);
            m_ep = NULL;
        }
        if (m_tx != NULL) {
            uct_iface_close(m_tx);
            m_tx = NULL;
        }
        ipc_test::TearDown();
    }

    /* m_iface receives; m_tx, which tells its endpoints' failures, sends
     * to it through m_ep */
    void open_pair() {
        open_uct();
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_iface, AM_ID, received,
                                                   this, 0));
        ASSERT_EQ(UCS_OK, gpumem_test::open_device_iface(
                                  m_md, m_worker, IPC_TL, IPC_DEV, &m_tx,
                                  failed, this));
        uct_iface_progress_enable(m_tx, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
        ASSERT_EQ(UCS_OK, ipc_connect_to(m_tx, device_address(),
                                         iface_address(), &m_ep));
    }

    static ucs_status_t received(void *arg, void *data, size_t length,
                                 unsigned flags) {
        ipc_am *self = (ipc_am*)arg;

        EXPECT_EQ(0u, flags) << "a message the handler may keep";
        self->m_received.push_back({AM_ID, std::string((char*)data, length)});
        return UCS_OK;
    }

    static ucs_status_t failed(void *arg, uct_ep_h ep, ucs_status_t status) {
        ipc_am *self = (ipc_am*)arg;

        self->m_failed.push_back(std::make_pair(ep, status));
        return UCS_OK;
    }

    static std::string bytes_of(uint64_t header, const std::string &payload) {
        return std::string((const char*)&header, sizeof(header)) + payload;
    }

    /* A message of @a size bytes that tells @a seed */
    static std::string pattern_of(size_t size, unsigned seed) {
        std::string bytes(size, '\0');

        for (size_t i = 0; i < size; ++i) {
            bytes[i] = (char)(seed * 31 + i * 7);
        }
        return bytes;
    }

    static size_t pack_string(void *dest, void *arg) {
        const std::string *bytes = (const std::string*)arg;

        memcpy(dest, bytes->data(), bytes->size());
        return bytes->size();
    }

    static ucs_status_t send_pending(uct_pending_req_t *self) {
        pending_send *req = ucs_container_of(self, pending_send, uct);

        req->test->m_pending_ran.push_back(req->header);
        return uct_ep_am_short(req->test->m_ep, AM_ID, req->header, NULL, 0);
    }

    static void purged(uct_pending_req_t *self, void *arg) {
        ((ipc_am*)arg)->m_purged.push_back(
                ucs_container_of(self, pending_send, uct)->header);
    }

    /* Progress until @a done, or give up after a long while */
    void progress_until(const std::function<bool()> &done) {
        ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(60);

        while (!done() && (ucs_get_time() < deadline)) {
            uct_worker_progress(m_worker);
        }
    }

    /* Whether the descriptor becomes readable within @a timeout_ms */
    static bool readable(int fd, int timeout_ms) {
        struct pollfd pfd = {fd, POLLIN, 0};

        return poll(&pfd, 1, timeout_ms) == 1;
    }

    /* Progress, then an arm for @a events that holds */
    void arm(uct_iface_h iface, unsigned events) {
        ucs_status_t status;
        int tries = 0;

        do {
            uct_worker_progress(m_worker);
            status = uct_iface_event_arm(iface, events);
        } while ((status == UCS_ERR_BUSY) && (++tries < 1000));
        ASSERT_EQ(UCS_OK, status);
    }

    uct_iface_h                                     m_tx = NULL;
    uct_ep_h                                        m_ep = NULL;
    std::vector<message>                            m_received;
    std::vector<std::pair<uct_ep_h, ucs_status_t> > m_failed;
    std::vector<uint64_t>                           m_pending_ran;
    std::vector<uint64_t>                           m_purged;
};


/* Short and bcopy messages, of every size up to their limits, reach the
 * handler whole and in the order sent, also where the FIFO fills and a
 * sender waits for its slots */
TEST_F(ipc_am, messages_reach_the_handler_in_order_across_a_full_fifo) {
    gpumem_test::scoped_env fifo("UCX_GPUMEM_IPC_FIFO_SIZE", "4");
    const unsigned count = 100;
    std::vector<std::string> sent;
    uct_iface_attr_t attr;
    unsigned no_resource = 0;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_tx, &attr));

    for (unsigned i = 0; i < count; ++i) {
        const bool is_short = (i % 2) == 0;
        const size_t size   = is_short ?
                              (i * 13) % (attr.cap.am.max_short - 7) :
                              ((i * 977) % attr.cap.am.max_bcopy) + 1;
        std::string payload = pattern_of(size, i);
        ssize_t ret;

        if (i == count - 1) {
            payload = pattern_of(attr.cap.am.max_bcopy, i);
        }

        for (;;) {
            if (is_short) {
                ret = uct_ep_am_short(m_ep, AM_ID, i, payload.data(),
                                      payload.size());
            } else {
                ret = uct_ep_am_bcopy(m_ep, AM_ID, pack_string, &payload, 0);
            }
            if (ret != UCS_ERR_NO_RESOURCE) {
                break;
            }
            ++no_resource;
            uct_worker_progress(m_worker);
        }

        if (is_short) {
            ASSERT_EQ(UCS_OK, ret);
            sent.push_back(bytes_of(i, payload));
        } else {
            ASSERT_EQ((ssize_t)payload.size(), ret);
            sent.push_back(payload);
        }
    }

    progress_until([&]() { return m_received.size() >= count; });
    ASSERT_EQ(count, m_received.size());
    for (unsigned i = 0; i < count; ++i) {
        EXPECT_EQ(AM_ID, m_received[i].id);
        EXPECT_TRUE(sent[i] == m_received[i].bytes) << "message " << i;
    }
    EXPECT_GT(no_resource, 0u) << "the FIFO of 4 slots never filled";
    EXPECT_TRUE(m_failed.empty());
}

/* A message of more than the limits, or of an id no handler can have, is
 * refused and says why */
TEST_F(ipc_am, messages_past_the_limits_are_refused) {
    uct_iface_attr_t attr;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_iface_query(m_tx, &attr));
    std::string payload = pattern_of(attr.cap.am.max_short, 1);

    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_am_short(m_ep, AM_ID, 0, payload.data(),
                                  attr.cap.am.max_short - 7));
        log.expect("am_short length");
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_am_short(m_ep, UCT_AM_ID_MAX, 0, NULL, 0));
        log.expect("active message id 32");
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_am_bcopy(m_ep, UCT_AM_ID_MAX, pack_string, &payload,
                                  0));
        log.expect("active message id 32");
    }

    EXPECT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 0, payload.data(),
                                      attr.cap.am.max_short - 8));
    progress_until([&]() { return !m_received.empty(); });
    ASSERT_EQ(1u, m_received.size());
    EXPECT_EQ(attr.cap.am.max_short, m_received[0].bytes.size());
}

/* A request waits only where the FIFO is full (else: UCS_ERR_BUSY, send
 * now), a send or a flush behind waiting requests waits too, and the
 * requests run in order once the receiver frees slots; purged ones never
 * run */
TEST_F(ipc_am, pending_requests_wait_for_a_slot_and_run_in_order) {
    gpumem_test::scoped_env fifo("UCX_GPUMEM_IPC_FIFO_SIZE", "2");
    pending_send reqs[4];

    open_pair();
    for (unsigned i = 0; i < 4; ++i) {
        reqs[i].test   = this;
        reqs[i].header = 100 + i;
        reqs[i].uct.func = send_pending;
    }

    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(m_ep, &reqs[0].uct, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 2, NULL, 0));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(m_ep, AM_ID, 3, NULL, 0));

    for (unsigned i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &reqs[i].uct, 0));
    }
    EXPECT_TRUE(m_pending_ran.empty());
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(m_ep, 0, NULL))
            << "a flush passed the requests waiting before it";

    progress_until([&]() { return m_received.size() >= 5; });
    ASSERT_EQ(5u, m_received.size());
    const uint64_t expected[] = {1, 2, 100, 101, 102};
    for (unsigned i = 0; i < 5; ++i) {
        EXPECT_EQ(bytes_of(expected[i], ""), m_received[i].bytes)
                << "message " << i;
    }
    EXPECT_GE(m_pending_ran.size(), 3u);
    EXPECT_EQ(UCS_OK, uct_ep_flush(m_ep, 0, NULL));

    /* Full again: the waiting requests are purged, not run */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 4, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 5, NULL, 0));
    m_pending_ran.clear();
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &reqs[3].uct, 0));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(m_ep, AM_ID, 6, NULL, 0))
            << "a send passed the request waiting before it";
    uct_ep_pending_purge(m_ep, purged, this);
    ASSERT_EQ(1u, m_purged.size());
    EXPECT_EQ(103u, m_purged[0]);
    progress_until([&]() { return m_received.size() >= 7; });
    EXPECT_EQ(7u, m_received.size());
    EXPECT_TRUE(m_pending_ran.empty());
}

/* A request that, when its turn comes, sends and then waits again on the
 * same endpoint (as UCP does from a completion) waits once, and runs */
TEST_F(ipc_am, a_request_that_waits_again_from_its_turn_runs_once_more) {
    gpumem_test::scoped_env fifo("UCX_GPUMEM_IPC_FIFO_SIZE", "2");
    struct again_req {
        pending_send  first;
        pending_send  second;
        uct_ep_h      ep;
        bool          added;
        ucs_status_t  add_status;
    } r;

    open_pair();
    r.ep               = m_ep;
    r.added            = false;
    r.add_status       = UCS_ERR_LAST;
    r.first.test       = this;
    r.first.header     = 10;
    r.second.test      = this;
    r.second.header    = 11;
    r.second.uct.func  = send_pending;
    r.first.uct.func   = [](uct_pending_req_t *self) -> ucs_status_t {
        pending_send *req = ucs_container_of(self, pending_send, uct);
        again_req *all    = ucs_container_of(req, again_req, first);
        ucs_status_t status;

        status = send_pending(self);
        if ((status == UCS_OK) && !all->added) {
            all->added      = true;
            all->add_status = uct_ep_pending_add(all->ep, &all->second.uct,
                                                 0);
        }
        return status;
    };

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 2, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &r.first.uct, 0));

    progress_until([&]() { return m_received.size() >= 4; });
    ASSERT_EQ(4u, m_received.size());
    EXPECT_EQ(UCS_OK, r.add_status);
    EXPECT_EQ(bytes_of(10, ""), m_received[2].bytes);
    EXPECT_EQ(bytes_of(11, ""), m_received[3].bytes);
    for (int i = 0; i < 100; ++i) {
        uct_worker_progress(m_worker);
    }
    EXPECT_EQ(4u, m_received.size()) << "a request ran twice";
}

/* Requests waiting for a full FIFO whose interface then closes: the
 * endpoint fails at progress, and its error handler purges them */
TEST_F(ipc_am, requests_waiting_on_a_closed_interface_fail_the_endpoint) {
    gpumem_test::scoped_env fifo("UCX_GPUMEM_IPC_FIFO_SIZE", "2");
    std::string dev_addr, iface_addr;
    uct_iface_h closing;
    pending_send req;

    open_pair();
    uct_ep_destroy(m_ep);
    m_ep = NULL;
    ASSERT_EQ(UCS_OK, try_open_iface(IPC_DEV, &closing));
    std::swap(closing, m_iface);
    dev_addr   = device_address();
    iface_addr = iface_address();
    std::swap(closing, m_iface);
    ASSERT_EQ(UCS_OK, ipc_connect_to(m_tx, dev_addr, iface_addr, &m_ep));

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 2, NULL, 0));
    req.test     = this;
    req.header   = 3;
    req.uct.func = send_pending;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &req.uct, 0));
    uct_iface_close(closing);

    progress_until([&]() { return !m_failed.empty(); });
    ASSERT_EQ(1u, m_failed.size()) << "requests wait on a closed peer";
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_failed[0].second);
    EXPECT_TRUE(m_pending_ran.empty());
    uct_ep_pending_purge(m_ep, purged, this);
    ASSERT_EQ(1u, m_purged.size());
    EXPECT_EQ(3u, m_purged[0]);
}

/* The closed flag of a FIFO is its receiver's word, as a peer's shared
 * memory is to UCX's shared-memory transports: a peer of the same user
 * that sets it while alive fails the endpoints that send to it. The send
 * that finds it is accepted and dropped, as a dead peer's; the error
 * handler is told UCS_ERR_CONNECTION_RESET, once, and every send after it
 * says the failure: no message is reported sent that the receiver would
 * never take */
TEST_F(ipc_am, a_receiver_that_says_closed_while_alive_fails_the_endpoint) {
    uct_gpumem_ipc_iface_t *receiver;
    ucs_status_t status;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    progress_until([&]() { return m_received.size() >= 1; });

    receiver = ucs_derived_of(m_iface, uct_gpumem_ipc_iface_t);
    receiver->fifo.ctl->closed = 1;
    status = uct_ep_am_short(m_ep, AM_ID, 2, NULL, 0);
    EXPECT_EQ(UCS_OK, status) << "dropped until the error handler is told";

    progress_until([&]() { return !m_failed.empty(); });
    ASSERT_EQ(1u, m_failed.size());
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_failed[0].second);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_am_short(m_ep, AM_ID, 3, NULL, 0));
    EXPECT_EQ(1u, m_received.size()) << "a message after the flag arrived";
    EXPECT_EQ(1u, m_failed.size());
    receiver->fifo.ctl->closed = 0;
}

/* Several processes send at once into a FIFO of two slots: each message
 * arrives once, each sender's in the order it sent them */
TEST_F(ipc_am, messages_of_many_senders_at_once_arrive_once_in_order) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    gpumem_test::scoped_env fifo("UCX_GPUMEM_IPC_FIFO_SIZE", "2");
    const unsigned senders = 4, count = 2000;
    std::vector<pid_t> pids;
    std::vector<channel> chans(senders);
    std::vector<uint32_t> next(senders, 0);
    unsigned wrong = 0;

    for (unsigned s = 0; s < senders; ++s) {
        channel &chan = chans[s];
        pids.push_back(fork_child([&, s]() {
            uct_ep_h ep;

            chan.child_side();
            open_uct();
            std::string dev_addr   = chan.recv();
            std::string iface_addr = chan.recv();
            ASSERT_EQ(UCS_OK, ipc_connect_to(m_iface, dev_addr, iface_addr,
                                             &ep));
            EXPECT_EQ("go", chan.recv());
            for (uint32_t i = 0; i < count; ++i) {
                uint64_t header     = ((uint64_t)s << 32) | i;
                ucs_time_t deadline = ucs_get_time() +
                                      ucs_time_from_sec(60);
                ucs_status_t status;

                while (((status = uct_ep_am_short(ep, AM_ID, header, NULL,
                                                  0)) ==
                        UCS_ERR_NO_RESOURCE) &&
                       (ucs_get_time() < deadline)) {
                }
                ASSERT_EQ(UCS_OK, status);
            }
            EXPECT_EQ("done", chan.recv());
            uct_ep_destroy(ep);
        }));
    }

    open_uct();
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_iface, AM_ID, received,
                                               this, 0));
    for (auto &chan : chans) {
        chan.send(device_address());
        chan.send(iface_address());
    }
    for (auto &chan : chans) {
        chan.send("go");
    }
    progress_until([&]() { return m_received.size() >= senders * count; });
    for (auto &chan : chans) {
        chan.send("done");
    }
    for (pid_t pid : pids) {
        wait_child(pid);
    }

    ASSERT_EQ(senders * count, m_received.size());
    for (const message &m : m_received) {
        uint64_t header;

        ASSERT_EQ(sizeof(header), m.bytes.size());
        memcpy(&header, m.bytes.data(), sizeof(header));
        unsigned s = (unsigned)(header >> 32);
        ASSERT_LT(s, senders);
        if ((uint32_t)header != next[s]++) {
            ++wrong;
        }
    }
    EXPECT_EQ(0u, wrong) << "messages out of their sender's order";
}

/* A message to an interface that closed fails the endpoint: the message is
 * dropped, the error handler is told once, at progress (as UCX's
 * transports tell a peer's failure), and the sends after say the failure */
TEST_F(ipc_am, a_message_to_a_closed_interface_fails_the_endpoint) {
    uct_iface_h closing;
    std::string dev_addr, iface_addr;

    open_pair();
    uct_ep_destroy(m_ep);
    m_ep = NULL;
    ASSERT_EQ(UCS_OK, try_open_iface(IPC_DEV, &closing));
    {
        uct_iface_h saved = m_iface;
        m_iface    = closing;
        dev_addr   = device_address();
        iface_addr = iface_address();
        m_iface    = saved;
    }
    ASSERT_EQ(UCS_OK, ipc_connect_to(m_tx, dev_addr, iface_addr, &m_ep));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    uct_iface_close(closing);

    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 2, NULL, 0));
        log.expect_none();
    }
    EXPECT_TRUE(m_failed.empty()) << "told within the send";
    EXPECT_TRUE(m_received.empty());

    progress_until([&]() { return !m_failed.empty(); });
    ASSERT_EQ(1u, m_failed.size());
    EXPECT_EQ(m_ep, m_failed[0].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_failed[0].second);

    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_am_short(m_ep, AM_ID, 3, NULL, 0));
    for (int i = 0; i < 100; ++i) {
        uct_worker_progress(m_worker);
    }
    EXPECT_EQ(1u, m_failed.size()) << "told more than once";
}

/* An invalidated endpoint fails as if its peer did not answer, at
 * progress: its messages are dropped until then, refused after, and its
 * waiting requests are the error handler's to purge */
TEST_F(ipc_am, an_invalidated_endpoint_fails_at_progress) {
    gpumem_test::scoped_env fifo("UCX_GPUMEM_IPC_FIFO_SIZE", "2");
    pending_send req;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 2, NULL, 0));
    req.test     = this;
    req.header   = 7;
    req.uct.func = send_pending;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &req.uct, 0));

    ASSERT_EQ(UCS_OK, uct_ep_invalidate(m_ep, 0));
    EXPECT_TRUE(m_failed.empty()) << "told within the call";
    EXPECT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 3, NULL, 0))
            << "a message before the failure is told";

    progress_until([&]() { return !m_failed.empty(); });
    ASSERT_EQ(1u, m_failed.size());
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_failed[0].second);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT,
              uct_ep_am_short(m_ep, AM_ID, 4, NULL, 0));
    EXPECT_EQ(2u, m_received.size()) << "a failed endpoint's message came";
    EXPECT_TRUE(m_pending_ran.empty()) << "a failed endpoint's request ran";
    uct_ep_pending_purge(m_ep, purged, this);
    ASSERT_EQ(1u, m_purged.size());
    EXPECT_EQ(7u, m_purged[0]);
}

/* A receiver armed for arrivals sleeps on its descriptor until a message
 * comes; armed for signaled ones only, until a signaled one comes */
TEST_F(ipc_am, an_arrival_wakes_a_receiver_armed_for_it) {
    std::string payload = "wake";
    int fd;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_iface, &fd));

    arm(m_iface, UCT_EVENT_RECV);
    EXPECT_FALSE(readable(fd, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 1, NULL, 0));
    EXPECT_TRUE(readable(fd, 10000)) << "no wakeup on an arrival";
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_iface, UCT_EVENT_RECV));
    progress_until([&]() { return m_received.size() >= 1; });
    ASSERT_EQ(1u, m_received.size());

    arm(m_iface, UCT_EVENT_RECV_SIG);
    EXPECT_FALSE(readable(fd, 0));
    ASSERT_EQ(8, uct_ep_am_bcopy(m_ep, AM_ID, pack_string,
                                 &(payload = "unsigned"), 0));
    EXPECT_FALSE(readable(fd, 100)) << "woken by a message not signaled";
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_iface, UCT_EVENT_RECV_SIG))
            << "armed with a message to read";
    progress_until([&]() { return m_received.size() >= 2; });

    arm(m_iface, UCT_EVENT_RECV_SIG);
    ASSERT_EQ(6, uct_ep_am_bcopy(m_ep, AM_ID, pack_string,
                                 &(payload = "signal"),
                                 UCT_SEND_FLAG_SIGNALED));
    EXPECT_TRUE(readable(fd, 10000)) << "no wakeup on a signaled arrival";
    progress_until([&]() { return m_received.size() >= 3; });
    ASSERT_EQ(3u, m_received.size());
    EXPECT_EQ("signal", m_received[2].bytes);
}

/* Another process's messages arrive, in order, through its mapping of this
 * interface's FIFO */
TEST_F(ipc_am, messages_of_another_process_arrive) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    const unsigned count = 300;
    channel chan;
    pid_t pid;

    pid = fork_child([&]() {
        uct_ep_h ep;

        chan.child_side();
        open_uct();
        std::string dev_addr   = chan.recv();
        std::string iface_addr = chan.recv();
        ASSERT_EQ(UCS_OK, ipc_connect_to(m_iface, dev_addr, iface_addr, &ep));
        for (unsigned i = 0; i < count; ++i) {
            std::string payload = pattern_of(64 + i, i);
            ssize_t ret;

            ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(60);
            while (((ret = uct_ep_am_bcopy(ep, AM_ID, pack_string, &payload,
                                           0)) == UCS_ERR_NO_RESOURCE) &&
                   (ucs_get_time() < deadline)) {
                uct_worker_progress(m_worker);
            }
            ASSERT_EQ((ssize_t)payload.size(), ret);
        }
        EXPECT_EQ("done", chan.recv());
        uct_ep_destroy(ep);
    });

    open_uct();
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_iface, AM_ID, received,
                                               this, 0));
    chan.send(device_address());
    chan.send(iface_address());
    progress_until([&]() { return m_received.size() >= count; });
    chan.send("done");
    wait_child(pid);

    ASSERT_EQ(count, m_received.size());
    for (unsigned i = 0; i < count; ++i) {
        EXPECT_TRUE(pattern_of(64 + i, i) == m_received[i].bytes)
                << "message " << i;
    }
}

/* What a peer wrote wrong into a slot (an id no handler has, a length past
 * the slot) reaches no handler: it is dropped with an error naming it, and
 * the messages after it arrive */
TEST_F(ipc_am, a_slot_a_peer_wrote_wrong_is_dropped_and_said) {
    uct_gpumem_ipc_fifo_peer_t peer;
    uct_gpumem_ipc_fifo_elem_t *elem;
    uct_gpumem_ipc_peer_t addr;
    uint64_t index;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_iface_addr_unpack(
                              iface_address().data(), UCS_LOG_LEVEL_ERROR,
                              &addr));
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_fifo_attach(addr.pid, addr.iface_id,
                                                 addr.fifo_fd, &peer));

    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_fifo_claim(&peer, &index, &elem));
    uct_gpumem_ipc_fifo_publish(&peer, index, elem, 200, 4, 0);
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_fifo_claim(&peer, &index, &elem));
    uct_gpumem_ipc_fifo_publish(&peer, index, elem, AM_ID, 1u << 20, 0);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 9, NULL, 0));

    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        progress_until([&]() { return !m_received.empty(); });
        log.expect("active message id 200");
        log.expect("a message of 1048576 bytes");
        log.expect_none();
    }
    ASSERT_EQ(1u, m_received.size());
    EXPECT_EQ(bytes_of(9, ""), m_received[0].bytes);
    uct_gpumem_ipc_fifo_detach(&peer);
}

/* A sender killed between its claim of a slot and the message's
 * publication does not stop the FIFO: once it is seen dead, the slot goes
 * back unread, a warning says so, and the messages after it arrive; while
 * the slot waits, an arm is refused (progress has a slot to see to) */
TEST_F(ipc_am, a_slot_whose_sender_died_before_writing_it_is_skipped) {
    GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE();
    uct_gpumem_ipc_peer_t addr;
    pid_t pid;

    open_pair();
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_iface_addr_unpack(
                              iface_address().data(), UCS_LOG_LEVEL_ERROR,
                              &addr));
    pid = fork_child([&]() {
        uct_gpumem_ipc_fifo_peer_t peer;
        uct_gpumem_ipc_fifo_elem_t *elem;
        uint64_t index;

        ASSERT_EQ(UCS_OK, uct_gpumem_ipc_fifo_attach(addr.pid, addr.iface_id,
                                                     addr.fifo_fd, &peer));
        ASSERT_EQ(UCS_OK, uct_gpumem_ipc_fifo_claim(&peer, &index, &elem));
        /* Ends at once, as killed, with the slot claimed and unwritten */
        _exit(0);
    });
    wait_child(pid);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, AM_ID, 9, NULL, 0));
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_iface, UCT_EVENT_RECV));

    {
        log_capture log(UCS_LOG_LEVEL_WARN);
        progress_until([&]() { return !m_received.empty(); });
        log.expect("died before it wrote the message of slot 0");
        log.expect_none();
    }
    ASSERT_EQ(1u, m_received.size());
    EXPECT_EQ(bytes_of(9, ""), m_received[0].bytes);
    arm(m_iface, UCT_EVENT_RECV);
}

/* An address whose FIFO descriptor names no FIFO: a pipe (a FIFO where a
 * file was expected), a memfd whose size is not sealed, a descriptor not
 * open, another interface's FIFO; the endpoint is refused and says why */
TEST_F(ipc_am, an_address_naming_no_receive_fifo_is_refused) {
    uct_gpumem_ipc_peer_t addr;
    std::string iface_addr;
    int pipe_fds[2], memfd;
    uct_ep_h ep;

    open_uct();
    iface_addr = iface_address();
    ASSERT_EQ(UCS_OK, uct_gpumem_ipc_iface_addr_unpack(
                              iface_addr.data(), UCS_LOG_LEVEL_ERROR, &addr));
    ASSERT_EQ(0, pipe(pipe_fds));
    memfd = memfd_create("not-a-fifo", MFD_CLOEXEC);
    ASSERT_LE(0, memfd);
    ASSERT_EQ(0, ftruncate(memfd, uct_gpumem_ipc_fifo_size(64)));

    struct {
        int         fd;
        std::string says;
    } cases[] = {
        {pipe_fds[1], "is no receive FIFO"},
        {memfd, "may shrink under its mapping"},
        {getdtablesize() + 10, "open(/proc/"},
        {addr.fifo_fd, "is interface"}
    };

    for (const auto &c : cases) {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        uct_gpumem_ipc_peer_t spoilt = addr;

        /* The last: this interface's FIFO, said to be another's */
        spoilt.fifo_fd   = c.fd;
        spoilt.iface_id += (c.fd == addr.fifo_fd) ? 1000 : 0;
        uct_gpumem_ipc_iface_addr_pack(&spoilt, &iface_addr[0]);
        EXPECT_NE(UCS_OK, ipc_connect_to(m_iface, device_address(),
                                         iface_addr, &ep)) << c.says;
        log.expect(c.says);
    }

    close(pipe_fds[0]);
    close(pipe_fds[1]);
    close(memfd);
}


/* A control block is used only whole: each field that cannot be is named */
TEST(ipc_fifo, ctl_check_refuses_what_cannot_be) {
    const size_t size = uct_gpumem_ipc_fifo_size(64);
    uct_gpumem_ipc_fifo_ctl_t good, ctl;

    memset(&good, 0, sizeof(good));
    good.magic                  = UCT_GPUMEM_IPC_FIFO_MAGIC;
    good.num_slots              = 64;
    good.elem_size              = UCT_GPUMEM_IPC_FIFO_ELEM_SIZE;
    good.pid                    = 1234;
    good.signal_addr.sun_family = AF_UNIX;
    good.signal_addr_len        = sizeof(sa_family_t) + 6;
    EXPECT_EQ(UCS_OK, uct_gpumem_ipc_fifo_ctl_check(&good, size,
                                                    UCS_LOG_LEVEL_ERROR));

    struct {
        std::function<void(uct_gpumem_ipc_fifo_ctl_t*)> spoil;
        size_t                                         size;
        std::string                                    says;
    } cases[] = {
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->magic ^= 1; }, size,
         "another layout"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->num_slots = 48; }, size,
         "48 slots"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->num_slots = 1; }, size,
         "1 slots"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->elem_size = 4096; }, size,
         "of 4096 bytes"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->num_slots = 128; }, size,
         "128 slots in"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->pid = 0; }, size,
         "process 0"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) { c->signal_addr_len = 2; }, size,
         "no local socket"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) {
             c->signal_addr_len = sizeof(c->signal_addr) + 1; }, size,
         "no local socket"},
        {[](uct_gpumem_ipc_fifo_ctl_t *c) {
             c->signal_addr.sun_family = AF_INET; }, size,
         "no local socket"},
        {[](uct_gpumem_ipc_fifo_ctl_t*) {}, sizeof(ctl) - 1,
         "holds no control block"}
    };

    for (const auto &c : cases) {
        log_capture log(UCS_LOG_LEVEL_ERROR);

        ctl = good;
        c.spoil(&ctl);
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gpumem_ipc_fifo_ctl_check(&ctl, c.size,
                                                UCS_LOG_LEVEL_ERROR))
                << c.says;
        log.expect(c.says);
    }
}
