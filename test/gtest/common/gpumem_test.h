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

/* The driver the suite's memory domains and device calls open
 * (GPUMEM_TEST_DRIVER, "emu" by default) */
std::string driver();

/* Whether the cases of the emulated machine apply: its settings
 * (UCX_GPUMEM_EMU_*), the topologies a case gives, the engine's figures.
 * With another driver the GPUs are the machine's own, opened once. */
bool driver_is_emu();

}

/* A case that checks the emulated machine itself skips, naming @a _what,
 * where the suite runs on another driver */
#define GPUMEM_TEST_SKIP_UNLESS_EMU(_what) \
    if (!gpumem_test::driver_is_emu()) { \
        GTEST_SKIP() << "the emu driver's " << _what << ": the GPUs are " \
                     << "the " << gpumem_test::driver() << " driver's"; \
    }

/* A case whose child of a fork uses the GPUs skips where the driver does
 * not run there: CUDA does not in the child of a process that initialized
 * it */
#define GPUMEM_TEST_SKIP_UNLESS_FORK_SAFE() \
    if (!gpumem_test::driver_is_emu()) { \
        GTEST_SKIP() << "the " << gpumem_test::driver() << " driver does " \
                     << "not run in the child of a fork of a process that " \
                     << "used it"; \
    }

#endif
