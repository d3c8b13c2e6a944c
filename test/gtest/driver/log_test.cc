/**
 * gpumem tests: a fixture whose errors and warnings the test reads.
 *
 * See file LICENSE for terms.
 */

#include "log_test.h"


void log_test::SetUp()
{
    m_log.reset(new gpumem_test::log_capture(UCS_LOG_LEVEL_WARN));
}

void log_test::TearDown()
{
    m_log->expect_none("unexpected log: ");
    m_log.reset();
}

void log_test::expect_log(const std::string &text)
{
    m_log->expect(text);
}
