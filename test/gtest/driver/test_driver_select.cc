/**
 * gpumem tests: which driver UCX_GPUMEM_DRIVER comes to on this machine,
 * and why.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "log_test.h"

extern "C" {
#include <uct/gpumem/gpumem_context.h>
#include <uct/gpumem/driver/gpumem_drivers.h>
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
};

TEST_F(driver_select, emu_when_asked) {
    uct_gpumem_driver_select_t driver;
    char why[256];

    ASSERT_EQ(UCS_OK, uct_gpumem_context_choose_driver(UCT_GPUMEM_DRIVER_EMU,
                                                       &driver, why,
                                                       sizeof(why)));
    EXPECT_EQ(UCT_GPUMEM_DRIVER_EMU, driver);
    EXPECT_STREQ("UCX_GPUMEM_DRIVER=emu", why);
}

TEST_F(driver_select, auto_takes_cuda_else_emu_saying_why) {
    uct_gpumem_driver_select_t driver;
    std::string no_cuda;
    char why[256];

    ASSERT_EQ(UCS_OK, uct_gpumem_context_choose_driver(UCT_GPUMEM_DRIVER_AUTO,
                                                       &driver, why,
                                                       sizeof(why)));
    if (cuda_answers(&no_cuda)) {
        EXPECT_EQ(UCT_GPUMEM_DRIVER_CUDA, driver);
        EXPECT_NE(std::string::npos,
                  std::string(why).find("a CUDA device answers"));
    } else {
        EXPECT_EQ(UCT_GPUMEM_DRIVER_EMU, driver);
        /* The reason names what is missing: the library, cuInit's error
         * or the device */
        EXPECT_EQ("no CUDA device: " + no_cuda, std::string(why));
    }
}

TEST_F(driver_select, cuda_without_device_is_an_error) {
    uct_gpumem_driver_select_t driver;
    std::string no_cuda;
    char why[256];

    if (cuda_answers(&no_cuda)) {
        GTEST_SKIP() << "a CUDA device answers on this machine";
    }

    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              uct_gpumem_context_choose_driver(UCT_GPUMEM_DRIVER_CUDA,
                                               &driver, why, sizeof(why)));
    expect_log("UCX_GPUMEM_DRIVER=cuda: no CUDA device: " + no_cuda);
}

TEST_F(driver_select, names_are_the_config_values) {
    EXPECT_STREQ("auto", uct_gpumem_driver_names[UCT_GPUMEM_DRIVER_AUTO]);
    EXPECT_STREQ("cuda", uct_gpumem_driver_names[UCT_GPUMEM_DRIVER_CUDA]);
    EXPECT_STREQ("emu",  uct_gpumem_driver_names[UCT_GPUMEM_DRIVER_EMU]);
    EXPECT_EQ(NULL,      uct_gpumem_driver_names[UCT_GPUMEM_DRIVER_LAST]);
}

/* UCS's enum of the DRIVER setting and the table of drivers are kept in
 * step by hand: each value but "auto" opens a driver of the table, and each
 * driver of the table is a value of the setting */
TEST_F(driver_select, each_setting_value_names_a_driver_of_the_table) {
    unsigned i, count = 0;

    for (i = 0; i < UCT_GPUMEM_DRIVER_LAST; ++i) {
        if (i == UCT_GPUMEM_DRIVER_AUTO) {
            continue;
        }
        const gpumem_driver_desc_t *desc =
                gpumem_driver_find(uct_gpumem_driver_names[i]);
        ASSERT_TRUE(desc != NULL) << uct_gpumem_driver_names[i];
        EXPECT_STREQ(uct_gpumem_driver_names[i], desc->name);
    }

    for (i = 0; gpumem_drivers[i] != NULL; ++i, ++count) {
        bool named = false;
        for (unsigned j = 0; j < UCT_GPUMEM_DRIVER_LAST; ++j) {
            named |= !strcmp(gpumem_drivers[i]->name,
                             uct_gpumem_driver_names[j]);
        }
        EXPECT_TRUE(named) << gpumem_drivers[i]->name
                           << " is no value of UCX_GPUMEM_DRIVER";
    }
    EXPECT_GT(count, 0u);
}
