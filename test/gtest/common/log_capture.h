/**
 * gpumem tests: the UCX log lines a test writes, kept for it to read.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_LOG_CAPTURE_H_
#define GPUMEM_LOG_CAPTURE_H_

extern "C" {
#include <ucs/debug/log_def.h>
}

#include <string>
#include <vector>


namespace gpumem_test {

/**
 * While alive, takes the log lines of @a level and more severe off the
 * terminal and keeps them (GPUMEM_TEST_SHOW_LOG=1 shows them as well).
 * Captures nest: a line goes to the latest one alive whose level takes it.
 */
class log_capture {
public:
    /* What the log level is while a capture lives */
    enum level_mode {
        LEVEL_AS_SET, /* As configured: lines below it are not written */
        LEVEL_RAISED  /* Raised to the capture's level, when lower */
    };

    explicit log_capture(ucs_log_level_t level = UCS_LOG_LEVEL_WARN,
                         level_mode mode = LEVEL_AS_SET);
    ~log_capture();

    const std::vector<std::string> &lines() const { return m_lines; }
    size_t size() const { return m_lines.size(); }
    void clear() { m_lines.clear(); }

    /* How many lines contain every one of @a words */
    size_t count(const std::vector<std::string> &words) const;

    /* The first line that contains @a text, taken off; a failure if none */
    void expect(const std::string &text);

    /* A failure for each line kept, which starts with @a what; then none is
     * kept */
    void expect_none(const std::string &what = "unexpected log line: ");

    /* The lines that contain @a word (all when empty), one per line, for a
     * failure message */
    std::string text(const std::string &word = "") const;

private:
    log_capture(const log_capture&);
    log_capture &operator=(const log_capture&);

    static ucs_log_func_rc_t handler(const char *file, unsigned line,
                                     const char *function,
                                     ucs_log_level_t level,
                                     const ucs_log_component_config_t *conf,
                                     const char *message, va_list ap);

    static log_capture       *s_latest;
    log_capture              *m_outer;
    ucs_log_level_t          m_level;
    ucs_log_level_t          m_saved_level;
    bool                     m_raised;
    std::vector<std::string> m_lines;
};

}

#endif
