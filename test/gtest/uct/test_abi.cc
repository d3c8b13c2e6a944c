/**
 * gpumem tests: the ABI guard's decision.
 *
 * See file LICENSE for terms.
 */

#include <common/gpumem_test.h>

extern "C" {
#include <uct/gpumem/compat/gpumem_abi.h>
}


TEST(abi, check_accepts_equal_sizes) {
    const uct_gpumem_abi_class_t classes[] = {
        {"a", 128, 128},
        {"b", 64,  64}
    };
    unsigned mismatch = 77;

    EXPECT_EQ(UCS_OK, uct_gpumem_abi_check(classes, 2, &mismatch));
    EXPECT_EQ(77u, mismatch); /* output set only on failure */
}

TEST(abi, check_refuses_mismatch_and_names_the_class) {
    const uct_gpumem_abi_class_t classes[] = {
        {"uct_iface_t",      64,  64},
        {"uct_base_iface_t", 856, 848},
        {"uct_base_ep_t",    16,  24}
    };
    unsigned mismatch = 77;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gpumem_abi_check(classes, 3, &mismatch));
    EXPECT_EQ(1u, mismatch);
    EXPECT_STREQ("uct_base_iface_t", classes[mismatch].name);
}

TEST(abi, check_of_no_classes_accepts) {
    unsigned mismatch = 77;

    EXPECT_EQ(UCS_OK, uct_gpumem_abi_check(NULL, 0, &mismatch));
}

TEST(abi, version_check_accepts_the_release_series_it_was_built_for) {
    EXPECT_EQ(UCS_OK, uct_gpumem_abi_check_version(1, 22, 1, 22));
    EXPECT_EQ(UCS_OK, uct_gpumem_abi_check_version(1, 13, 1, 13));
}

TEST(abi, version_check_refuses_another_minor_or_major) {
    /* 1.16's ucs_config_field_t is not 1.22's; the sizes the class guard
     * compares are equal all the same */
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gpumem_abi_check_version(1, 16, 1, 22));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gpumem_abi_check_version(1, 22, 1, 16));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gpumem_abi_check_version(1, 22, 2, 22));
}

/* The build under test was configured against the installed UCX, so the
 * real guard must agree with the running libuct. */
TEST(abi, guard_accepts_the_ucx_it_was_built_against) {
    EXPECT_EQ(UCS_OK, uct_gpumem_abi_guard());
}
