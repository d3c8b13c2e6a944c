/**
 * gpumem tests: a watchdog that aborts a hung test.
 *
 * See file LICENSE for terms.
 */

#include "watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>


namespace gpumem_test {

watchdog::watchdog(const std::string &what, unsigned seconds) :
    m_what(what)
{
    m_thread = std::thread([this, seconds]() {
        std::unique_lock<std::mutex> guard(m_lock);

        if (!m_cond.wait_for(guard, std::chrono::seconds(seconds),
                             [this]() { return m_done; })) {
            fprintf(stderr, "watchdog: %s did not finish in %u s: a deadlock "
                    "or a hang\n", m_what.c_str(), seconds);
            fflush(stderr);
            abort();
        }
    });
}

watchdog::~watchdog()
{
    {
        std::lock_guard<std::mutex> guard(m_lock);
        m_done = true;
    }
    m_cond.notify_one();
    m_thread.join();
}

}
