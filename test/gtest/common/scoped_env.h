/**
 * gpumem tests: an environment variable set for a while.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_SCOPED_ENV_H_
#define GPUMEM_SCOPED_ENV_H_

#include <string>


namespace gpumem_test {

/**
 * Sets one variable and, at restore() or at the end of its life, gives it
 * back the value it had before, or unsets it where it had none: a test that
 * points a variable elsewhere leaves it as the run set it (the emulated
 * CUDA's machine, for one) for the tests after it.
 */
class scoped_env {
public:
    scoped_env() = default;
    scoped_env(const std::string &name, const std::string &value);
    scoped_env(const scoped_env&) = delete;
    scoped_env &operator=(const scoped_env&) = delete;
    ~scoped_env();

    /* Sets @a name to @a value; the value to come back is the one before
     * the first set() of that name. Another name restores the first. */
    void set(const std::string &name, const std::string &value);

    /* The value before, or none; nothing when nothing is set */
    void restore();

private:
    std::string m_name;
    std::string m_saved;
    bool        m_had_value = false;
};

}

#endif
