/**
 * gpumem tests: which driver UCX_GPUMEM_DRIVER comes to on this machine,
 * and why; no GPU is no device, as UCX's own CUDA transports.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "log_test.h"

#include <common/scoped_env.h>

extern "C" {
#include <uct/gpumem/gpumem_context.h>
#include <ucs/debug/memtrack_int.h>
#include <uct/gpumem/driver/gpumem_drivers.h>
#include <uct/gpumem/copy/copy_md.h>
#include <uct/gpumem/ipc/ipc_md.h>
#include <emu/machine/emu.h>
#ifdef HAVE_CUDA
#  include <uct/gpumem/driver/cuda/cuda_driver.h>
#endif
}


class driver_select : public log_test {
protected:
    /* Whether a CUDA device answers here, and if not, why */
    static bool cuda_answers(std::string *why_p) {
#ifdef HAVE_CUDA
        char why[256];

        if (gpumem_cuda_probe(why, sizeof(why)) == UCS_OK) {
            return true;
        }
        *why_p = why;
#else
        *why_p = "this build has no cuda driver (cuda.h was not found at "
                 "configure time)";
#endif
        return false;
    }

    /* How many memory domains @a component offers */
    static unsigned md_resources(uct_component_t *component) {
        uct_md_resource_desc_t *resources;
        unsigned count;

        EXPECT_EQ(UCS_OK, uct_gpumem_context_query_md_resources(
                                  component, &resources, &count));
        ucs_free(resources);
        return count;
    }
};

TEST_F(driver_select, emu_when_asked) {
    const gpumem_driver_desc_t *desc;
    char why[256];

    ASSERT_EQ(UCS_OK, uct_gpumem_context_choose_driver("emu", &desc, why,
                                                       sizeof(why)));
    EXPECT_STREQ("emu", desc->name);
    EXPECT_STREQ("UCX_GPUMEM_DRIVER=emu", why);

    /* As UCS's enumerations, in any case */
    ASSERT_EQ(UCS_OK, uct_gpumem_context_choose_driver("EMU", &desc, why,
                                                       sizeof(why)));
    EXPECT_STREQ("emu", desc->name);
}

/* The emu row is the one the emulator's library exports, which this
 * program has linked: the table loads it through the interface alone */
TEST_F(driver_select, the_emu_row_is_the_emulators) {
    const gpumem_driver_desc_t *desc = gpumem_driver_find("emu");

    ASSERT_TRUE(desc != NULL);
    EXPECT_TRUE(desc->open == gpumem_emu_driver_desc.open);
    EXPECT_TRUE(desc->emulated);
    EXPECT_EQ(NULL, gpumem_driver_find("nosuch"));
}

TEST_F(driver_select, auto_takes_real_gpus_else_none_saying_why) {
    const gpumem_driver_desc_t *desc = NULL;
    std::string no_cuda;
    char why[256];

    ucs_status_t status = uct_gpumem_context_choose_driver("auto", &desc, why,
                                                           sizeof(why));
    if (cuda_answers(&no_cuda)) {
        ASSERT_EQ(UCS_OK, status);
        EXPECT_STREQ("cuda", desc->name);
        EXPECT_NE(std::string::npos,
                  std::string(why).find("the GPUs of the cuda driver answer"));
    } else {
        /* Never the emulator: no device, and why, the driver named */
        EXPECT_EQ(UCS_ERR_NO_DEVICE, status);
        EXPECT_EQ("cuda: " + no_cuda, std::string(why));
    }
}

TEST_F(driver_select, auto_tries_no_emulated_driver) {
    unsigned real = 0, emulated = 0;

    for (const gpumem_driver_desc_t *const *desc = gpumem_drivers_list();
         *desc != NULL; ++desc) {
        ((*desc)->emulated ? emulated : real)++;
        EXPECT_EQ(!strcmp((*desc)->name, "emu"), (*desc)->emulated)
                << (*desc)->name;
    }
    EXPECT_EQ(1u, real);
    EXPECT_EQ(1u, emulated);
}

TEST_F(driver_select, cuda_without_device_is_an_error) {
    const gpumem_driver_desc_t *desc;
    std::string no_cuda;
    char why[256];

    if (cuda_answers(&no_cuda)) {
        GTEST_SKIP() << "a CUDA device answers on this machine";
    }

    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              uct_gpumem_context_choose_driver("cuda", &desc, why,
                                               sizeof(why)));
    expect_log("UCX_GPUMEM_DRIVER=cuda: no GPU: " + no_cuda);
}

/* The setting's values are the table's names, and "auto" */
TEST_F(driver_select, a_name_of_no_driver_is_refused_naming_the_drivers) {
    gpumem_test::scoped_env env("UCX_GPUMEM_DRIVER", "nosuch");
    uct_gpumem_settings_t settings;
    char names[64];

    EXPECT_STREQ("auto|cuda|emu", gpumem_drivers_names(names, sizeof(names)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gpumem_settings_read(&settings));
    expect_log("UCX_GPUMEM_DRIVER=nosuch: no such driver in this build "
               "(auto|cuda|emu)");
}

/* No GPU gives the GPUs' components no memory domain, as UCX's own CUDA
 * components on such a machine; emulated GPUs are asked for */
TEST_F(driver_select, no_gpu_is_no_memory_domain) {
    gpumem_test::scoped_env env("UCX_GPUMEM_DRIVER", "auto");
    std::string no_cuda;

    if (cuda_answers(&no_cuda)) {
        GTEST_SKIP() << "a CUDA device answers on this machine";
    }

    EXPECT_EQ(0u, md_resources(&uct_gpumem_component));
    EXPECT_EQ(0u, md_resources(&uct_gpumem_ipc_component.super));

    env.set("UCX_GPUMEM_DRIVER", "emu");
    EXPECT_EQ(1u, md_resources(&uct_gpumem_component));
    EXPECT_EQ(1u, md_resources(&uct_gpumem_ipc_component.super));
}
