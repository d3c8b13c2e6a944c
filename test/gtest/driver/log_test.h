/**
 * gpumem tests: a fixture whose errors and warnings the test reads.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_LOG_TEST_H_
#define GPUMEM_LOG_TEST_H_

#include <common/gpumem_test.h>

extern "C" {
#include <ucs/debug/log_def.h>
}

#include <string>
#include <vector>


/**
 * The errors and warnings of the test, each to be expected by the test.
 */
class log_test : public testing::Test {
protected:
    virtual void SetUp();
    virtual void TearDown();

    /* A line that says @a text, taken off the log; a failure if none */
    void expect_log(const std::string &text);

private:
    static ucs_log_func_rc_t
    log_handler(const char *file, unsigned line, const char *function,
                ucs_log_level_t level,
                const ucs_log_component_config_t *comp_conf,
                const char *message, va_list ap);

    static std::vector<std::string> s_log;
};


#endif
