/**
 * gpumem tests: a watchdog, so that a test whose threads deadlock fails,
 * naming what did not finish, instead of hanging the suite.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_WATCHDOG_H_
#define GPUMEM_WATCHDOG_H_

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>


namespace gpumem_test {

/* Aborts the process, saying what did not finish, unless it is destroyed
 * within @a seconds of its making */
class watchdog {
public:
    watchdog(const std::string &what, unsigned seconds);
    ~watchdog();

private:
    std::string             m_what;
    std::mutex              m_lock;
    std::condition_variable m_cond;
    bool                    m_done = false;
    std::thread             m_thread;
};

}

#endif
