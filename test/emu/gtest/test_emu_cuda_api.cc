/**
 * gpumem tests: the emulated CUDA's rules: initialization, errors,
 * contexts, and entry points by name.
 *
 * See file LICENSE for terms.
 */

#include "emu_cuda_test.h"

#include <cstring>
#include <sys/wait.h>
#include <thread>
#include <vector>
#include <unistd.h>


/* Runs @a body in a child of a fork; its exit status is the test's */
template <typename F> static void in_child(F body)
{
    pid_t pid = fork();

    ASSERT_GE(pid, 0);
    if (pid == 0) {
        _exit(body());
    }

    int status = 0;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(0, WEXITSTATUS(status)) << "the child's check "
                                      << WEXITSTATUS(status) << " failed";
}

/* As with NVIDIA's driver, the child of a fork of a process that
 * initialized it cannot use it, cuInit included */
TEST_F(emu_cuda_test, child_of_an_initialized_process_is_not_initialized) {
    in_child([]() {
        int count = 0, version = 0;
        const char *name;

        if (p_cuDeviceGetCount(&count) != CUDA_ERROR_NOT_INITIALIZED) {
            return 1;
        }
        if (p_cuInit(0) != CUDA_ERROR_NOT_INITIALIZED) {
            return 2;
        }
        /* These answer whatever the state */
        if ((p_cuDriverGetVersion(&version) != CUDA_SUCCESS) ||
            (version != CUDA_VERSION) ||
            (p_cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &name) !=
             CUDA_SUCCESS)) {
            return 3;
        }
        return 0;
    });
}

TEST_F(emu_cuda_test, null_out_pointer_is_invalid_value) {
    CUdeviceptr dptr;

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuDeviceGetCount(NULL));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuDriverGetVersion(NULL));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemAlloc(NULL, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemAlloc(&dptr, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuStreamCreate(NULL, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuInit(1));
}

TEST_F(emu_cuda_test, call_without_context_is_invalid_context) {
    CUresult alloc_res = CUDA_SUCCESS, stream_res = CUDA_SUCCESS;
    CUcontext current = m_ctx;

    /* The context is the pushing thread's alone */
    std::thread([&]() {
        CUdeviceptr dptr;
        CUstream stream;

        p_cuCtxGetCurrent(&current);
        alloc_res  = p_cuMemAlloc(&dptr, 4096);
        stream_res = p_cuStreamCreate(&stream, 0);
    }).join();

    EXPECT_EQ(NULL, current);
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, alloc_res);
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, stream_res);
}

TEST_F(emu_cuda_test, pop_gives_back_the_context_pushed) {
    CUcontext ctx = NULL;

    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(m_ctx));
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(&ctx));
    EXPECT_EQ(m_ctx, ctx);
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxGetCurrent(&ctx));
    EXPECT_EQ(m_ctx, ctx);

    std::thread([&]() {
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, p_cuCtxPopCurrent(&ctx));
    }).join();
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, p_cuCtxPushCurrent(NULL));
}

/* A context's id is its own and lasts its life; the current one's flags
 * are what was set, within the driver's; its API is the second */
TEST_F(emu_cuda_test, context_id_and_flags) {
    unsigned long long id = 0, again = 0, other = 0;
    unsigned flags        = 1;
    CUcontext ctx, popped;

    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxGetId(NULL, &id));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxGetId(m_ctx, &again));
    EXPECT_NE(0ull, id);
    EXPECT_EQ(id, again);
    ASSERT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRetain(&ctx, 1));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxGetId(ctx, &other));
    EXPECT_NE(id, other);
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT,
              p_cuCtxGetId((CUcontext)&other, &again));
    EXPECT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRelease(1));

    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxGetFlags(&flags));
    EXPECT_EQ(0u, flags);
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxSetFlags(CU_CTX_SYNC_MEMOPS));
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxGetFlags(&flags));
    EXPECT_EQ((unsigned)CU_CTX_SYNC_MEMOPS, flags);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuCtxSetFlags(CU_CTX_MAP_HOST));
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxSetFlags(0));

    unsigned api = 0;
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxGetApiVersion(m_ctx, &api));
    EXPECT_EQ(3020u, api);

    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(&popped));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, p_cuCtxGetApiVersion(NULL, &api));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, p_cuCtxGetId(NULL, &again));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, p_cuCtxSetFlags(0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(popped));
}

TEST_F(emu_cuda_test, release_unretained_primary_is_invalid_context) {
    int count;

    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetCount(&count));
    if (count < 2) {
        GTEST_SKIP() << "the machine has one GPU";
    }
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, p_cuDevicePrimaryCtxRelease(1));
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, p_cuDevicePrimaryCtxRelease(count));
}

TEST_F(emu_cuda_test, bus_id_is_nvidia_form) {
    char bus_id[32];
    unsigned domain, bus, dev, fn;

    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), 0));
    EXPECT_EQ(4, sscanf(bus_id, "%8X:%2X:%2X.%1X", &domain, &bus, &dev, &fn))
        << bus_id;
    EXPECT_EQ(12u, strlen(bus_id)) << bus_id;
}

/* A device's UUID is its own, the same at every call (and in every
 * process of the machine: it comes of the machine and the PCI address);
 * the first version's symbol gives the same */
TEST_F(emu_cuda_test, uuid_is_the_devices_own_and_stable) {
    CUresult (*uuid_v1)(CUuuid*, CUdevice) =
            (CUresult (*)(CUuuid*, CUdevice))symbol("cuDeviceGetUuid");
    CUuuid first, again, other;
    int count = 0;

    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetCount(&count));
    ASSERT_LE(2, count);
    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetUuid(&first, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetUuid(&again, 0));
    EXPECT_EQ(0, memcmp(first.bytes, again.bytes, sizeof(first.bytes)));
    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetUuid(&other, 1));
    EXPECT_NE(0, memcmp(first.bytes, other.bytes, sizeof(first.bytes)));
    ASSERT_TRUE(uuid_v1 != NULL);
    ASSERT_EQ(CUDA_SUCCESS, uuid_v1(&again, 0));
    EXPECT_EQ(0, memcmp(first.bytes, again.bytes, sizeof(first.bytes)));
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, p_cuDeviceGetUuid(&other, count));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuDeviceGetUuid(NULL, 0));
}

/* A copy between two device buffers in a stream lands when the stream is
 * done; SYNC_MEMOPS may be set on device memory, not on host memory */
TEST_F(emu_cuda_test, device_to_device_copy_in_a_stream_and_sync_memops) {
    std::vector<unsigned char> bytes(100000), back(bytes.size());
    CUdeviceptr src, dst;
    CUstream stream;
    int one = 1;

    for (size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = (unsigned char)(i * 13 + 1);
    }
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&src, bytes.size()));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&dst, bytes.size()));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamCreate(&stream, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(src, bytes.data(), bytes.size()));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoDAsync(dst, src, bytes.size(),
                                                stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(back.data(), dst, back.size()));
    EXPECT_TRUE(bytes == back) << "the bytes copied differ";

    EXPECT_EQ(CUDA_SUCCESS,
              p_cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                      dst));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                      (CUdeviceptr)(uintptr_t)back.data()));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuPointerSetAttribute(NULL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                      dst));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamDestroy(stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(dst));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(src));
}

TEST_F(emu_cuda_test, device_is_not_its_own_peer) {
    int can_access = 1;

    EXPECT_EQ(CUDA_SUCCESS, p_cuDeviceCanAccessPeer(&can_access, 0, 0));
    EXPECT_EQ(0, can_access);
}

TEST_F(emu_cuda_test, error_names_are_the_drivers) {
    const char *name = NULL;

    ASSERT_EQ(CUDA_SUCCESS, p_cuGetErrorName(CUDA_ERROR_INVALID_VALUE,
                                             &name));
    EXPECT_STREQ("CUDA_ERROR_INVALID_VALUE", name);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuGetErrorName((CUresult)12345, &name));
    EXPECT_EQ(NULL, name);
}

TEST_F(emu_cuda_test, proc_address_by_base_and_versioned_name) {
    CUdriverProcAddressQueryResult found;
    void *fn = NULL;

    ASSERT_EQ(CUDA_SUCCESS, p_cuGetProcAddress("cuMemAlloc", &fn,
                                               CUDA_VERSION, 0, &found));
    EXPECT_EQ(symbol("cuMemAlloc_v2"), fn);
    EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, found);

    ASSERT_EQ(CUDA_SUCCESS, p_cuGetProcAddress("cuMemAlloc_v2", &fn,
                                               CUDA_VERSION, 0, NULL));
    EXPECT_EQ(symbol("cuMemAlloc_v2"), fn);

    EXPECT_EQ(CUDA_ERROR_NOT_FOUND,
              p_cuGetProcAddress("cuNoSuchCall", &fn, CUDA_VERSION, 0,
                                 &found));
    EXPECT_EQ(NULL, fn);
    EXPECT_EQ(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, found);
}

/* What the library does not emulate says so, once */
TEST_F(emu_cuda_test, entry_point_not_emulated_logs_once) {
    CUresult (*launch)(void);

    ASSERT_EQ(CUDA_SUCCESS, p_cuGetProcAddress("cuLaunchKernel",
                                               (void**)&launch, CUDA_VERSION,
                                               0, NULL));
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, launch());
    expect_log("cuLaunchKernel is not emulated");
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, launch());
}
