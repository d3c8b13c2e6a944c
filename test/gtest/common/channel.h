/**
 * gpumem tests: two pipes between a parent and the child it forks.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_CHANNEL_H_
#define GPUMEM_CHANNEL_H_

#include <cstddef>
#include <string>


namespace gpumem_test {

/**
 * Both ends of two pipes, made before the fork: from then on each process
 * writes to the other, bytes or messages of any length.
 */
class channel {
public:
    channel();
    ~channel();

    /* Each side keeps only its own ends after the fork; the child must call
     * child_side() before it sends or receives */
    void parent_side();
    void child_side();

    bool send(const void *buf, size_t length);
    bool recv(void *buf, size_t length);

    /* One byte each way, for "done" */
    bool signal() { char c = 1; return send(&c, 1); }
    bool wait()   { char c; return recv(&c, 1); }

    /* A message, its length first; a failure if it cannot be written or
     * read, and then recv() returns "" */
    void send(const std::string &message);
    std::string recv();

    /* Whether bytes from the other process wait to be received */
    bool pending();

private:
    channel(const channel&);
    channel &operator=(const channel&);

    int  m_to_child[2];
    int  m_to_parent[2];
    bool m_is_child;
};

}

#endif
