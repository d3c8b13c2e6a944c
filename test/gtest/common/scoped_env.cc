/**
 * gpumem tests: an environment variable set for a while.
 *
 * See file LICENSE for terms.
 */

#include "scoped_env.h"

#include <cstdlib>


namespace gpumem_test {

scoped_env::scoped_env(const std::string &name, const std::string &value)
{
    set(name, value);
}

scoped_env::~scoped_env()
{
    restore();
}

void scoped_env::set(const std::string &name, const std::string &value)
{
    const char *saved;

    if (name != m_name) {
        restore();
        saved       = getenv(name.c_str());
        m_had_value = (saved != NULL);
        m_saved     = m_had_value ? saved : "";
        m_name      = name;
    }
    setenv(m_name.c_str(), value.c_str(), 1);
}

void scoped_env::restore()
{
    if (m_name.empty()) {
        return;
    }
    if (m_had_value) {
        setenv(m_name.c_str(), m_saved.c_str(), 1);
    } else {
        unsetenv(m_name.c_str());
    }
    m_name.clear();
}

}
