/**
 * gpumem tests: the emulated CUDA's fixture.
 *
 * See file LICENSE for terms.
 */

#include "emu_cuda_test.h"

#include <dlfcn.h>


#define EMU_CUDA_TEST_FIELD(_func, _symbol) \
    decltype(&_func) emu_cuda_test::p_##_func = NULL;
EMU_CUDA_TEST_API(EMU_CUDA_TEST_FIELD)
#undef EMU_CUDA_TEST_FIELD


void *emu_cuda_test::symbol(const char *name)
{
    static void *handle = NULL;

    if (handle == NULL) {
        handle = dlopen(GPUMEM_EMU_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            ADD_FAILURE() << "cannot load " << GPUMEM_EMU_CUDA_PATH << ": "
                          << dlerror();
            return NULL;
        }
    }
    return dlsym(handle, name);
}

void emu_cuda_test::SetUp()
{
    log_test::SetUp();

#define EMU_CUDA_TEST_LOAD(_func, _symbol) \
    p_##_func = (decltype(&_func))symbol(_symbol); \
    ASSERT_TRUE(p_##_func != NULL) << "no " _symbol;
    EMU_CUDA_TEST_API(EMU_CUDA_TEST_LOAD)
#undef EMU_CUDA_TEST_LOAD

    ASSERT_EQ(CUDA_SUCCESS, p_cuInit(0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRetain(&m_ctx, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(m_ctx));
}

void emu_cuda_test::TearDown()
{
    CUcontext ctx = NULL;

    if (m_ctx != NULL) {
        EXPECT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(&ctx));
        EXPECT_EQ(m_ctx, ctx);
        EXPECT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRelease(0));
    }
    log_test::TearDown();
}
