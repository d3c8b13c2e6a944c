/**
 * gpumem tests: helpers shared by the test fixtures.
 *
 * See file LICENSE for terms.
 */

#include "gpumem_test.h"

#include <gpumem/gpumem.h>

extern "C" {
#include <ucs/config/parser.h>
}

#include <cstdlib>
#include <dlfcn.h>


namespace gpumem_test {

/*
 * The suite's cases are written for the emulated machine, so its memory
 * domains open the emu driver even where a GPU answers, unless
 * GPUMEM_TEST_DRIVER (or UCX_GPUMEM_DRIVER itself) names another: with
 * GPUMEM_TEST_DRIVER=cuda the same cases run on the machine's GPUs. The
 * cuda driver's own cases open it whatever this says.
 */
static struct driver_default {
    driver_default() {
        const char *driver = getenv("GPUMEM_TEST_DRIVER");

        setenv("UCX_GPUMEM_DRIVER", (driver != NULL) ? driver : "emu", 0);
    }
} s_driver_default;

std::string driver()
{
    const char *name = getenv("UCX_GPUMEM_DRIVER");

    return (name != NULL) ? name : "emu";
}

bool driver_is_emu()
{
    return driver() == "emu";
}

void *plugin_handle()
{
    static void *handle = NULL;

    if (handle == NULL) {
        handle = dlopen(GPUMEM_PLUGIN_PATH, RTLD_NOW | RTLD_GLOBAL);
        if (handle == NULL) {
            ADD_FAILURE() << "cannot load " << GPUMEM_PLUGIN_PATH << ": "
                          << dlerror();
        }
    }
    return handle;
}

void *plugin_symbol(const char *name)
{
    void *handle = plugin_handle();
    void *sym;

    if (handle == NULL) {
        return NULL;
    }

    sym = dlsym(handle, name);
    EXPECT_TRUE(sym != NULL) << "plugin has no symbol " << name;
    return sym;
}

void reset_device_calls()
{
    void *handle = plugin_handle();
    void *reset  = (handle != NULL) ? dlsym(handle, "gpumem_device_reset") :
                                      NULL;

    if (reset != NULL) {
        EXPECT_EQ(0, ((decltype(&gpumem_device_reset))reset)());
    }
    EXPECT_EQ(0, gpumem_device_reset());
}

std::vector<std::string> component_names()
{
    std::vector<std::string> names;
    uct_component_h *components;
    unsigned i, count;
    uct_component_attr_t attr;

    if (uct_query_components(&components, &count) != UCS_OK) {
        ADD_FAILURE() << "uct_query_components failed";
        return names;
    }

    for (i = 0; i < count; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(components[i], &attr) == UCS_OK) {
            names.push_back(attr.name);
        }
    }

    uct_release_component_list(components);
    return names;
}

uct_component_h find_component(const std::string &name)
{
    uct_component_h *components, found = NULL;
    unsigned i, count;
    uct_component_attr_t attr;

    if (uct_query_components(&components, &count) != UCS_OK) {
        return NULL;
    }

    for (i = 0; (i < count) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            (name == attr.name)) {
            found = components[i];
        }
    }

    uct_release_component_list(components);
    return found;
}

unsigned count_config_tables(const std::string &prefix)
{
    ucs_config_global_list_entry_t *entry;
    unsigned found = 0;

    ucs_list_for_each(entry, &ucs_config_global_list, list) {
        found += (entry->prefix != NULL) && (prefix == entry->prefix);
    }
    return found;
}

ucs_status_t config_modify(void *config, const std::string &prefix,
                           const std::string &name, const char *value)
{
    ucs_status_t status;

    status = uct_config_modify(config, name.c_str(), value);
    if (status != UCS_ERR_NO_ELEM) {
        return status;
    }

    return uct_config_modify(config, (prefix + name).c_str(), value);
}

}
