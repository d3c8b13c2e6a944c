/**
 * gpumem tests: the UCX log lines a test writes, kept for it to read.
 *
 * See file LICENSE for terms.
 */

#include "log_capture.h"

#include <gtest/gtest.h>

extern "C" {
#include <ucs/config/global_opts.h>
}

#include <cstdio>
#include <cstdlib>
#include <mutex>


namespace gpumem_test {

log_capture *log_capture::s_latest = NULL;

/* Lines come from any thread of the test */
static std::mutex log_capture_lock;

log_capture::log_capture(ucs_log_level_t level, level_mode mode) :
    m_outer(s_latest), m_level(level),
    m_saved_level(ucs_global_opts.log_component.log_level),
    m_raised((mode == LEVEL_RAISED) && (m_saved_level < level))
{
    if (m_raised) {
        ucs_global_opts.log_component.log_level = level;
    }
    s_latest = this;
    ucs_log_push_handler(handler);
}

log_capture::~log_capture()
{
    ucs_log_pop_handler();
    if (m_raised) {
        ucs_global_opts.log_component.log_level = m_saved_level;
    }
    s_latest = m_outer;
}

/* Each capture alive pushed this handler once; whichever copy is called
 * first hands the line to the capture that takes it, and the others are
 * called only when none does */
ucs_log_func_rc_t
log_capture::handler(const char *, unsigned, const char *,
                     ucs_log_level_t level, const ucs_log_component_config_t *,
                     const char *message, va_list ap)
{
    log_capture *capture = s_latest;
    char buf[2048];

    while ((capture != NULL) && (level > capture->m_level)) {
        capture = capture->m_outer;
    }
    if (capture == NULL) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    vsnprintf(buf, sizeof(buf), message, ap);
    std::lock_guard<std::mutex> guard(log_capture_lock);
    capture->m_lines.push_back(buf);
    if (getenv("GPUMEM_TEST_SHOW_LOG") != NULL) {
        fprintf(stderr, "[captured %s] %s\n", ucs_log_level_names[level],
                buf);
    }
    return UCS_LOG_FUNC_RC_STOP;
}

size_t log_capture::count(const std::vector<std::string> &words) const
{
    size_t n = 0;

    for (const std::string &line : m_lines) {
        bool all = true;
        for (const std::string &word : words) {
            all = all && (line.find(word) != std::string::npos);
        }
        n += all ? 1 : 0;
    }
    return n;
}

void log_capture::expect(const std::string &text)
{
    std::vector<std::string>::iterator it;

    for (it = m_lines.begin(); it != m_lines.end(); ++it) {
        if (it->find(text) != std::string::npos) {
            m_lines.erase(it);
            return;
        }
    }
    ADD_FAILURE() << "no log line says '" << text << "'";
}

void log_capture::expect_none(const std::string &what)
{
    for (const std::string &line : m_lines) {
        ADD_FAILURE() << what << line;
    }
    m_lines.clear();
}

std::string log_capture::text(const std::string &word) const
{
    std::string all;

    for (const std::string &line : m_lines) {
        if (line.find(word) != std::string::npos) {
            all += line + "\n";
        }
    }
    if (all.empty()) {
        return word.empty() ? "(no log line)\n" :
                              "(no " + word + " log line)\n";
    }
    return all;
}

}
