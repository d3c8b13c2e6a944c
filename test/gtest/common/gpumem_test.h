/**
 * gpumem tests: helpers shared by the test fixtures.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TEST_H_
#define GPUMEM_TEST_H_

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
}

#include <string>
#include <vector>


namespace gpumem_test {

/* The built plugin, dlopen()ed once per process, as LD_PRELOAD would. */
void *plugin_handle();

/* A symbol of the loaded plugin; fails the test when it is missing. */
void *plugin_symbol(const char *name);

/* Names of the components uct_query_components() returns now. */
std::vector<std::string> component_names();

/* Closes the GPUs that the device memory calls (gpumem.h) keep open, the
 * loaded plugin's and this binary's own, so that the next test's calls open
 * them with its settings: what each fixture that makes them does at its
 * end. */
void reset_device_calls();

/* The registered component of that name, or NULL. */
uct_component_h find_component(const std::string &name);

/* How many tables of settings named @a prefix* are on UCX's global
 * configuration list, the one ucx_info -c prints. */
unsigned count_config_tables(const std::string &prefix);

/* uct_config_modify() of the setting @a name of a table whose settings are
 * named @a prefix* (GPUMEM_ for ALLOC_GPU): UCX before 1.17 matches the
 * name alone, later versions the name with the prefix; this takes either. */
ucs_status_t config_modify(void *config, const std::string &prefix,
                           const std::string &name, const char *value);

}

#endif
