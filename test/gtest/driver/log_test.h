/**
 * gpumem tests: a fixture whose errors and warnings the test reads.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_LOG_TEST_H_
#define GPUMEM_LOG_TEST_H_

#include <common/gpumem_test.h>
#include <common/log_capture.h>

#include <memory>
#include <string>


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
    std::unique_ptr<gpumem_test::log_capture> m_log;
};


#endif
