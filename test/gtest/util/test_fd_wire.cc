/**
 * gpumem tests: the descriptor broker's messages, each malformed field of
 * a peer's refused with its reason.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/util/gpumem_fd_wire.h>
}

#include <cerrno>
#include <cstring>
#include <string>


class fd_wire : public testing::Test {
protected:
    /* Decoding @a request is refused, saying @a why */
    static void expect_request_refused(const gpumem_fd_request_t &request,
                                       size_t length, const std::string &why)
    {
        gpumem_fd_request_t out;
        const char *reason = "";

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_fd_request_unpack(&request, length, &out, &reason));
        EXPECT_NE(std::string::npos, std::string(reason).find(why))
            << "the reason given: " << reason;
    }

    static void expect_reply_refused(const gpumem_fd_reply_t &reply,
                                     uint64_t id, const std::string &why)
    {
        gpumem_fd_reply_t out;
        const char *reason = "";

        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_fd_reply_unpack(&reply, sizeof(reply), id, &out,
                                         &reason));
        EXPECT_NE(std::string::npos, std::string(reason).find(why))
            << "the reason given: " << reason;
    }
};

TEST_F(fd_wire, request_round_trip) {
    gpumem_fd_request_t request, out;
    const char *why;

    gpumem_fd_request_init(&request, 42, 1ul << 21);
    ASSERT_EQ(UCS_OK, gpumem_fd_request_unpack(&request, sizeof(request),
                                               &out, &why));
    EXPECT_EQ(42u, out.id);
    EXPECT_EQ(1ul << 21, out.size);
}

TEST_F(fd_wire, malformed_requests_are_refused) {
    gpumem_fd_request_t request;

    gpumem_fd_request_init(&request, 42, 4096);
    expect_request_refused(request, sizeof(request) - 1, "length");
    expect_request_refused(request, sizeof(request) + 1, "length");

    request.magic ^= 1;
    expect_request_refused(request, sizeof(request), "magic");

    gpumem_fd_request_init(&request, 42, 4096);
    request.version += 1;
    expect_request_refused(request, sizeof(request), "version");

    gpumem_fd_request_init(&request, 42, 4096);
    request.reserved = 1;
    expect_request_refused(request, sizeof(request), "reserved");

    gpumem_fd_request_init(&request, 0, 4096);
    expect_request_refused(request, sizeof(request), "allocation id");

    gpumem_fd_request_init(&request, 42, 0);
    expect_request_refused(request, sizeof(request), "size");
}

TEST_F(fd_wire, reply_round_trip) {
    gpumem_fd_reply_t reply, out;
    const char *why;

    gpumem_fd_reply_init(&reply, 42, ENOENT);
    ASSERT_EQ(UCS_OK, gpumem_fd_reply_unpack(&reply, sizeof(reply), 42, &out,
                                             &why));
    EXPECT_EQ(ENOENT, out.error);
}

TEST_F(fd_wire, malformed_replies_are_refused) {
    gpumem_fd_reply_t reply, out;
    const char *why;

    gpumem_fd_reply_init(&reply, 42, 0);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_fd_reply_unpack(&reply, sizeof(reply) - 1, 42, &out,
                                     &why));
    expect_reply_refused(reply, 43, "another request");

    reply.reserved2 = 1;
    expect_reply_refused(reply, 42, "reserved");

    gpumem_fd_reply_init(&reply, 42, -1);
    expect_reply_refused(reply, 42, "not an errno");

    gpumem_fd_reply_init(&reply, 42, 1 << 20);
    expect_reply_refused(reply, 42, "not an errno");

    gpumem_fd_reply_init(&reply, 42, 0);
    reply.version = 0;
    expect_reply_refused(reply, 42, "version");

    /* Id 0 answers any request only as a refusal */
    gpumem_fd_reply_init(&reply, 0, 0);
    expect_reply_refused(reply, 42, "another request");
    gpumem_fd_reply_init(&reply, 0, EACCES);
    EXPECT_EQ(UCS_OK, gpumem_fd_reply_unpack(&reply, sizeof(reply), 42, &out,
                                             &why));
}
