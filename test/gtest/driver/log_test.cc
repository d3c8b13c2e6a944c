/**
 * gpumem tests: a fixture whose errors and warnings the test reads.
 *
 * See file LICENSE for terms.
 */

#include "log_test.h"

#include <cstdio>
#include <cstdlib>


std::vector<std::string> log_test::s_log;

void log_test::SetUp()
{
    s_log.clear();
    ucs_log_push_handler(log_handler);
}

void log_test::TearDown()
{
    ucs_log_pop_handler();
    for (const std::string &line : s_log) {
        ADD_FAILURE() << "unexpected log: " << line;
    }
    s_log.clear();
}

void log_test::expect_log(const std::string &text)
{
    std::vector<std::string>::iterator it;

    for (it = s_log.begin(); it != s_log.end(); ++it) {
        if (it->find(text) != std::string::npos) {
            s_log.erase(it);
            return;
        }
    }
    ADD_FAILURE() << "no log line says '" << text << "'";
}

ucs_log_func_rc_t
log_test::log_handler(const char *, unsigned, const char *,
                           ucs_log_level_t level,
                           const ucs_log_component_config_t *,
                           const char *message, va_list ap)
{
    char buf[1024];

    if (level > UCS_LOG_LEVEL_WARN) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    vsnprintf(buf, sizeof(buf), message, ap);
    if (getenv("GPUMEM_TEST_SHOW_LOG") != NULL) {
        fprintf(stderr, "[log] %s\n", buf);
    }
    s_log.push_back(buf);
    return UCS_LOG_FUNC_RC_STOP;
}

