/**
 * gpumem tests: the component is registered when the plugin is loaded, and
 * removed cleanly.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

#include <algorithm>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>


namespace {

size_t count_gpumem_components()
{
    std::vector<std::string> names = gpumem_test::component_names();
    return std::count(names.begin(), names.end(), std::string("gpumem"));
}

typedef ucs_status_t (*register_func_t)(void);
typedef void (*unregister_func_t)(void);

}


TEST(component, found_by_uct_query_components) {
    ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
    EXPECT_EQ(1u, count_gpumem_components());
}

TEST(component, has_one_md_resource_named_gpumem) {
    uct_component_attr_t attr;
    uct_md_resource_desc_t resources[4];
    uct_component_h component;

    ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
    component = gpumem_test::find_component("gpumem");
    ASSERT_TRUE(component != NULL);

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    ASSERT_EQ(UCS_OK, uct_component_query(component, &attr));
    ASSERT_EQ(1u, attr.md_resource_count);

    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = resources;
    ASSERT_EQ(UCS_OK, uct_component_query(component, &attr));
    EXPECT_STREQ("gpumem", resources[0].md_name);
}

TEST(component, second_load_registers_nothing_twice) {
    void *handle;

    ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
    for (int i = 0; i < 2; ++i) {
        handle = dlopen(GPUMEM_PLUGIN_PATH, RTLD_NOW);
        ASSERT_TRUE(handle != NULL) << dlerror();
        EXPECT_EQ(1u, count_gpumem_components());
        EXPECT_EQ(0, dlclose(handle));
        EXPECT_EQ(1u, count_gpumem_components());
    }
}

TEST(component, unregister_removes_it_and_register_restores_it) {
    register_func_t reg     = (register_func_t)
            gpumem_test::plugin_symbol("uct_gpumem_components_register");
    unregister_func_t unreg = (unregister_func_t)
            gpumem_test::plugin_symbol("uct_gpumem_components_unregister");

    ASSERT_TRUE((reg != NULL) && (unreg != NULL));

    for (int i = 0; i < 2; ++i) {
        unreg();
        EXPECT_EQ(0u, count_gpumem_components());
        unreg(); /* a second unregister does nothing */
        EXPECT_EQ(0u, count_gpumem_components());

        EXPECT_EQ(UCS_OK, reg());
        EXPECT_EQ(1u, count_gpumem_components());
        EXPECT_EQ(UCS_OK, reg()); /* a second register does nothing */
        EXPECT_EQ(1u, count_gpumem_components());
    }
}

/* A process that loads the plugin, uses UCT and exits runs the plugin's
 * unregistration after UCT's users are gone: it must exit cleanly. */
TEST(component, process_exit_after_load_is_clean) {
    pid_t pid;
    int status;

    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        void *handle = dlopen(GPUMEM_PLUGIN_PATH, RTLD_NOW);
        int ok       = (handle != NULL) && (count_gpumem_components() == 1);
        exit(ok ? 0 : 3);
    }

    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status)) << "child died of signal "
                                   << WTERMSIG(status);
    EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ucx_info -c prints the tables on UCX's global configuration list. */
TEST(component, md_config_table_is_on_the_global_config_list) {
    ASSERT_TRUE(gpumem_test::plugin_handle() != NULL);
    EXPECT_LE(1u, gpumem_test::count_config_tables("GPUMEM_"));
}
