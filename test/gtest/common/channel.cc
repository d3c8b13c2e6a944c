/**
 * gpumem tests: two pipes between a parent and the child it forks.
 *
 * See file LICENSE for terms.
 */

#include "channel.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <unistd.h>


namespace gpumem_test {

channel::channel() : m_is_child(false)
{
    if ((pipe(m_to_child) != 0) || (pipe(m_to_parent) != 0)) {
        ADD_FAILURE() << "pipe: " << strerror(errno);
    }
}

channel::~channel()
{
    for (int fd : {m_to_child[0], m_to_child[1], m_to_parent[0],
                   m_to_parent[1]}) {
        if (fd >= 0) {
            close(fd);
        }
    }
}

void channel::parent_side()
{
    close(m_to_child[0]);
    close(m_to_parent[1]);
    m_to_child[0] = m_to_parent[1] = -1;
    m_is_child    = false;
}

void channel::child_side()
{
    close(m_to_child[1]);
    close(m_to_parent[0]);
    m_to_child[1] = m_to_parent[0] = -1;
    m_is_child    = true;
}

bool channel::send(const void *buf, size_t length)
{
    int fd = m_is_child ? m_to_parent[1] : m_to_child[1];

    return write(fd, buf, length) == (ssize_t)length;
}

bool channel::recv(void *buf, size_t length)
{
    int fd      = m_is_child ? m_to_child[0] : m_to_parent[0];
    size_t done = 0;
    ssize_t n;

    while (done < length) {
        n = read(fd, (char*)buf + done, length - done);
        if (n <= 0) {
            return false;
        }
        done += n;
    }
    return true;
}

void channel::send(const std::string &message)
{
    size_t length = message.size();

    ASSERT_TRUE(send(&length, sizeof(length)) &&
                send(message.data(), length))
            << "cannot write to the other process";
}

std::string channel::recv()
{
    size_t length;
    std::string message;

    if (!recv(&length, sizeof(length))) {
        ADD_FAILURE() << "the other process closed the channel";
        return "";
    }

    message.resize(length);
    if (!recv(&message[0], length)) {
        ADD_FAILURE() << "the other process closed the channel";
        return "";
    }
    return message;
}

bool channel::pending()
{
    struct pollfd pfd;

    pfd.fd      = m_is_child ? m_to_child[0] : m_to_parent[0];
    pfd.events  = POLLIN;
    pfd.revents = 0;
    return poll(&pfd, 1, 0) > 0;
}

}
