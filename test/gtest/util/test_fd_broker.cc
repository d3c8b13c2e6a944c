/**
 * gpumem tests: the descriptor broker, which hands a process's descriptors
 * to processes of its user that name the allocation, and to no one else.
 *
 * See file LICENSE for terms.
 */

#include <driver/log_test.h>

extern "C" {
#include <uct/gpumem/util/gpumem_fd_broker.h>
#include <uct/gpumem/util/gpumem_fd_wire.h>
}

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>


/* The user another user's tests become */
static const uid_t nobody = 65534;


class fd_broker : public log_test {
protected:
    virtual void TearDown() {
        for (auto &offer : m_offers) {
            gpumem_fd_broker_withdraw(offer.first);
            close(offer.second);
        }
        log_test::TearDown();
    }

    /* Ids no driver of the test process gives */
    static uint64_t new_id() {
        static uint64_t id = 1ull << 48;
        return ++id;
    }

    /* A file that holds @a text */
    static int new_file(const std::string &text) {
        int fd = memfd_create("gpumem-test-fd-broker", MFD_CLOEXEC);

        EXPECT_GE(fd, 0);
        EXPECT_EQ((ssize_t)text.size(), pwrite(fd, text.data(), text.size(),
                                               0));
        return fd;
    }

    static std::string text_of(int fd) {
        char buf[64];
        ssize_t length = pread(fd, buf, sizeof(buf), 0);

        return std::string(buf, (length > 0) ? length : 0);
    }

    /* Offers a new file of @a text as allocation @a id; the broker's name */
    uint64_t offer(uint64_t id, const std::string &text,
                   uint64_t size = 4096) {
        int fd        = new_file(text);
        uint64_t name = 0;

        EXPECT_EQ(UCS_OK, gpumem_fd_broker_offer(id, size, fd, &name));
        EXPECT_NE(0u, name);
        m_offers.push_back(std::make_pair(id, fd));
        return name;
    }

    /* Withdraws and closes the offer of @a id; its fd's number */
    int withdraw(uint64_t id) {
        for (auto it = m_offers.begin(); it != m_offers.end(); ++it) {
            if (it->first == id) {
                int fd = it->second;

                gpumem_fd_broker_withdraw(id);
                close(fd);
                m_offers.erase(it);
                return fd;
            }
        }
        ADD_FAILURE() << "no offer of allocation " << id;
        return -1;
    }

    static ucs_status_t take(uint64_t name, uint64_t id, uint64_t size,
                             int *fd_p, std::string *why_p = NULL,
                             uid_t uid = geteuid()) {
        char why[256] = "";
        ucs_status_t status;

        status = gpumem_fd_broker_take(name, uid, id, size, fd_p, why,
                                       sizeof(why));
        if (why_p != NULL) {
            *why_p = why;
        }
        return status;
    }

    /* The text of allocation @a id, taken from broker @a name */
    static std::string taken_text(uint64_t name, uint64_t id) {
        std::string text;
        int fd;

        if (take(name, id, 4096, &fd) != UCS_OK) {
            return "(refused)";
        }
        text = text_of(fd);
        close(fd);
        return text;
    }

    /* The address of broker @a name of user @a uid */
    static socklen_t address(uint64_t name, uid_t uid,
                             struct sockaddr_un *addr) {
        memset(addr, 0, sizeof(*addr));
        addr->sun_family = AF_UNIX;
        int length = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1,
                              "gpumem-fd-%u-%016" PRIx64, (unsigned)uid,
                              name);
        return offsetof(struct sockaddr_un, sun_path) + 1 + length;
    }

    /* How many descriptors of this process are of @a fd's file: other
     * threads open and close their own meanwhile */
    static unsigned open_fds_of(int fd) {
        struct stat file, other;
        struct dirent *entry;
        unsigned count = 0;
        DIR *dir       = opendir("/proc/self/fd");

        EXPECT_EQ(0, fstat(fd, &file));
        while ((entry = readdir(dir)) != NULL) {
            if ((entry->d_name[0] != '.') &&
                (fstat(atoi(entry->d_name), &other) == 0) &&
                (other.st_dev == file.st_dev) &&
                (other.st_ino == file.st_ino)) {
                ++count;
            }
        }
        closedir(dir);
        return count;
    }

    /* Runs @a body as user nobody in a child; whether it exited 0 */
    static bool as_another_user(const std::function<bool()> &body) {
        int status;
        pid_t pid = fork();

        if (pid == 0) {
            _exit(((setresgid(nobody, nobody, nobody) == 0) &&
                   (setresuid(nobody, nobody, nobody) == 0) && body()) ?
                  0 : 1);
        }
        EXPECT_EQ(pid, waitpid(pid, &status, 0));
        return WIFEXITED(status) && (WEXITSTATUS(status) == 0);
    }

    /* A socket of broker @a name's address that answers every request
     * with @a reply and the descriptors @a fds */
    static void fake_broker(uint64_t name, const gpumem_fd_reply_t &reply,
                            const std::vector<int> &fds,
                            std::thread *thread_p) {
        struct sockaddr_un addr;
        socklen_t addr_len = address(name, geteuid(), &addr);
        int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        ASSERT_GE(sock, 0);
        ASSERT_EQ(0, bind(sock, (struct sockaddr*)&addr, addr_len));
        ASSERT_EQ(0, listen(sock, 1));
        *thread_p = std::thread([sock, reply, fds]() {
            std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
            struct msghdr msg = {};
            gpumem_fd_request_t request;
            struct iovec iov;
            int conn = accept(sock, NULL, NULL);

            EXPECT_EQ((ssize_t)sizeof(request),
                      recv(conn, &request, sizeof(request), 0));
            iov.iov_base       = (void*)&reply;
            iov.iov_len        = sizeof(reply);
            msg.msg_iov        = &iov;
            msg.msg_iovlen     = 1;
            msg.msg_control    = control.data();
            msg.msg_controllen = control.size();
            struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
            cmsg->cmsg_level     = SOL_SOCKET;
            cmsg->cmsg_type      = SCM_RIGHTS;
            cmsg->cmsg_len       = CMSG_LEN(sizeof(int) * fds.size());
            memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
            EXPECT_EQ((ssize_t)sizeof(reply), sendmsg(conn, &msg, 0));
            close(conn);
            close(sock);
        });
    }

    /* A fake broker's @a reply to a request for allocation 7, with two
     * descriptors attached, is refused saying @a why, and neither
     * descriptor stays open here */
    void expect_answer_refused(const gpumem_fd_reply_t &reply,
                               const std::string &why) {
        uint64_t name = new_id();
        int file      = new_file("bait");
        std::thread broker;
        std::string said;
        int fd;

        fake_broker(name, reply, {file, file}, &broker);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, take(name, 7, 4096, &fd, &said));
        broker.join();
        EXPECT_NE(std::string::npos, said.find(why)) << said;
        /* Neither of the two sent stays open: the file is ours alone */
        EXPECT_EQ(1u, open_fds_of(file));
        close(file);
    }

    std::vector<std::pair<uint64_t, int>> m_offers;
};

TEST_F(fd_broker, hands_the_offered_file_to_the_same_user) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "first");
    struct stat mine, theirs;
    int fd;

    ASSERT_EQ(UCS_OK, take(name, id, 4096, &fd));
    EXPECT_NE(m_offers.back().second, fd);
    ASSERT_EQ(0, fstat(m_offers.back().second, &mine));
    ASSERT_EQ(0, fstat(fd, &theirs));
    EXPECT_EQ(mine.st_ino, theirs.st_ino) << "another file was handed over";
    EXPECT_EQ("first", text_of(fd));
    EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

TEST_F(fd_broker, one_name_serves_every_allocation) {
    uint64_t first = new_id(), second = new_id();
    uint64_t name  = offer(first, "first");

    EXPECT_EQ(name, offer(second, "second"));
    EXPECT_EQ("first", taken_text(name, first));
    EXPECT_EQ("second", taken_text(name, second));
}

TEST_F(fd_broker, withdrawn_allocation_is_refused_as_freed) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "gone");
    std::string why;
    int fd;

    withdraw(id);
    EXPECT_EQ(UCS_ERR_NO_ELEM, take(name, id, 4096, &fd, &why));
    EXPECT_NE(std::string::npos, why.find("freed")) << why;
}

/* The key of a freed allocation names it by id: the next allocation, which
 * may have the freed one's descriptor number, is not handed over for it */
TEST_F(fd_broker, key_of_a_freed_allocation_never_gets_the_next_one) {
    uint64_t old_id = new_id(), new_id_ = new_id();
    uint64_t name   = offer(old_id, "old");
    int old_fd      = withdraw(old_id);
    int fd;

    offer(new_id_, "new");
    EXPECT_EQ(old_fd, m_offers.back().second)
        << "the descriptor number was not reused: the case is not the one "
           "of a stale key";
    EXPECT_EQ(UCS_ERR_NO_ELEM, take(name, old_id, 4096, &fd));
    EXPECT_EQ("new", taken_text(name, new_id_));
}

TEST_F(fd_broker, size_other_than_the_allocation_is_refused) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "sized", 8192);
    std::string why;
    int fd;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, take(name, id, 4096, &fd, &why));
    EXPECT_NE(std::string::npos, why.find("not of 4096 bytes")) << why;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, take(name, id, 1ul << 40, &fd));
    ASSERT_EQ(UCS_OK, take(name, id, 8192, &fd));
    close(fd);
}

TEST_F(fd_broker, name_nobody_serves_is_unreachable) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "here");
    std::string why;
    int fd;

    EXPECT_EQ(UCS_ERR_UNREACHABLE, take(name ^ 1, id, 4096, &fd, &why));
    EXPECT_NE(std::string::npos, why.find("does not answer")) << why;
}

TEST_F(fd_broker, another_user_is_refused) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "mine");
    uid_t owner   = geteuid();

    if (owner != 0) {
        GTEST_SKIP() << "becoming another user takes root";
    }
    EXPECT_TRUE(as_another_user([name, id, owner]() {
        std::string why;
        int fd;

        return (take(name, id, 4096, &fd, &why, owner) ==
                UCS_ERR_REJECTED) &&
               (why.find("refused this process's user") != std::string::npos);
    })) << "another user was not refused";
}

/* Abstract socket names are anyone's: another user's socket at a broker's
 * name is not trusted */
TEST_F(fd_broker, socket_of_another_user_is_not_trusted) {
    uint64_t name = new_id();
    int ready[2], done[2];
    struct sockaddr_un addr;
    std::string why;
    char byte = 0;
    int status, fd;
    pid_t pid;

    if (geteuid() != 0) {
        GTEST_SKIP() << "becoming another user takes root";
    }

    ASSERT_EQ(0, pipe(ready));
    ASSERT_EQ(0, pipe(done));
    pid = fork();
    if (pid == 0) {
        socklen_t addr_len = address(name, 0, &addr);
        int sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);

        if ((setresuid(nobody, nobody, nobody) != 0) ||
            (bind(sock, (struct sockaddr*)&addr, addr_len) != 0) ||
            (listen(sock, 1) != 0) || (write(ready[1], &byte, 1) != 1)) {
            _exit(1);
        }
        _exit((read(done[0], &byte, 1) == 1) ? 0 : 1);
    }

    ASSERT_EQ(1, read(ready[0], &byte, 1));
    EXPECT_EQ(UCS_ERR_REJECTED, take(name, 1, 4096, &fd, &why, 0));
    EXPECT_NE(std::string::npos, why.find("user 65534's")) << why;
    EXPECT_EQ(1, write(done[1], &byte, 1));
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
    for (int end : {ready[0], ready[1], done[0], done[1]}) {
        close(end);
    }
}

/* The broker's thread is not in the child of a fork: the child takes no
 * offer, and the parent serves on */
TEST_F(fd_broker, child_of_a_fork_offers_nothing_and_the_parent_serves_on) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "parent");
    int status;
    pid_t pid;

    pid = fork();
    if (pid == 0) {
        int fd        = new_file("child");
        uint64_t next = 0;

        _exit((gpumem_fd_broker_offer(id + 1000, 4096, fd, &next) ==
               UCS_ERR_UNSUPPORTED) ? 0 : 1);
    }
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
        << "the child of a fork took an offer";
    EXPECT_EQ("parent", taken_text(name, id));
}

TEST_F(fd_broker, malformed_request_is_answered_invalid) {
    uint64_t id   = new_id();
    uint64_t name = offer(id, "kept");
    const char garbage[] = "not a request";
    gpumem_fd_reply_t reply, out;
    struct sockaddr_un addr;
    socklen_t addr_len = address(name, geteuid(), &addr);
    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const char *why;

    ASSERT_EQ(0, connect(sock, (struct sockaddr*)&addr, addr_len));
    ASSERT_EQ((ssize_t)sizeof(garbage),
              send(sock, garbage, sizeof(garbage), 0));
    ASSERT_EQ((ssize_t)sizeof(reply), recv(sock, &reply, sizeof(reply), 0));
    ASSERT_EQ(UCS_OK, gpumem_fd_reply_unpack(&reply, sizeof(reply), 0, &out,
                                             &why));
    EXPECT_EQ(EINVAL, out.error);
    close(sock);

    /* The broker still serves */
    EXPECT_EQ("kept", taken_text(name, id));
}

TEST_F(fd_broker, malformed_answer_is_refused_and_its_descriptors_closed) {
    gpumem_fd_reply_t reply;

    gpumem_fd_reply_init(&reply, 7, 0);
    reply.magic ^= 1;
    expect_answer_refused(reply, "malformed");
}

TEST_F(fd_broker, answer_with_two_descriptors_is_refused) {
    gpumem_fd_reply_t reply;

    gpumem_fd_reply_init(&reply, 7, 0);
    expect_answer_refused(reply, "2 descriptors");
}
