/**
 * gpumem tests: the emulated CUDA's allocations beyond cuMemAlloc: managed
 * memory, pitched rows, and the openings of the entry points that UCM
 * patches in place.
 *
 * See file LICENSE for terms.
 */

#include "emu_cuda_test.h"

#include <cstring>
#include <vector>


/* Managed memory is device memory to the driver, at an address the CPU
 * reads and writes, which copies take either way; no IPC handle is given
 * for it, and cuMemFree frees it */
TEST_F(emu_cuda_test, managed_memory_is_device_memory_the_cpu_reaches) {
    const size_t size = 3 * 65536 + 11;
    std::vector<unsigned char> back(size);
    CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_HOST_POINTER};
    CUmemorytype type = (CUmemorytype)0;
    int managed = 0, ordinal = -1;
    void *host = NULL;
    void *values[] = {&type, &managed, &ordinal, &host};
    CUipcMemHandle handle;
    CUdeviceptr ptr, dev, base;
    size_t range_size;

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAllocManaged(&ptr, size,
                                                CU_MEM_ATTACH_GLOBAL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuPointerGetAttributes(4, names, values,
                                                     ptr + 100));
    EXPECT_EQ(CU_MEMORYTYPE_DEVICE, type);
    EXPECT_EQ(1, managed);
    EXPECT_EQ(0, ordinal);
    EXPECT_EQ((void*)(uintptr_t)(ptr + 100), host);
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemGetAddressRange(&base, &range_size,
                                                   ptr + 100));
    EXPECT_EQ(ptr, base);
    EXPECT_EQ(size, range_size);

    /* The CPU writes it; the device copies it and back */
    unsigned char *bytes = (unsigned char*)(uintptr_t)ptr;
    for (size_t i = 0; i < size; ++i) {
        bytes[i] = (unsigned char)(i * 7 + 3);
    }
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&dev, size));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(dev, bytes, size));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(back.data(), dev, size));
    EXPECT_EQ(0, memcmp(bytes, back.data(), size));
    memset(bytes, 0, size);
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(bytes, dev, size));
    EXPECT_EQ(0, memcmp(bytes, back.data(), size));

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuIpcGetMemHandle(&handle, ptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemFree(ptr + 1));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(ptr));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(dev));

    /* Freed, the address is no memory of the driver */
    type = CU_MEMORYTYPE_DEVICE;
    ASSERT_EQ(CUDA_SUCCESS, p_cuPointerGetAttributes(1, names, values, ptr));
    EXPECT_EQ((CUmemorytype)0, type);
}

TEST_F(emu_cuda_test, managed_memory_arguments_are_checked) {
    CUdeviceptr ptr;

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemAllocManaged(NULL, 4096, CU_MEM_ATTACH_GLOBAL));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemAllocManaged(&ptr, 0, CU_MEM_ATTACH_GLOBAL));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemAllocManaged(&ptr, 4096, CU_MEM_ATTACH_SINGLE));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY,
              p_cuMemAllocManaged(&ptr, SIZE_MAX / 2, CU_MEM_ATTACH_HOST));
}

/* Rows of any width begin at multiples of 512 bytes; the element sizes
 * are the driver's */
TEST_F(emu_cuda_test, pitched_rows_begin_at_multiples_of_512) {
    CUdeviceptr ptr, base;
    size_t pitch = 0, size = 0;

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAllocPitch(&ptr, &pitch, 100, 8, 4));
    EXPECT_EQ(512u, pitch);
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemGetAddressRange(&base, &size, ptr));
    EXPECT_EQ(ptr, base);
    EXPECT_EQ(512u * 8, size);
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(ptr));

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAllocPitch(&ptr, &pitch, 1024, 2, 16));
    EXPECT_EQ(1024u, pitch);
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(ptr));

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemAllocPitch(&ptr, &pitch, 100, 8, 3));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemAllocPitch(&ptr, NULL, 100, 8, 4));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemAllocPitch(&ptr, &pitch, 0, 8, 4));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY,
              p_cuMemAllocPitch(&ptr, &pitch, SIZE_MAX / 2, 4, 4));
}

/* UCM's memory hooks patch these in place, copying their first 5 or 12
 * bytes out: each opens with instructions UCM's relocator takes (push
 * %rbp; mov %rsp,%rbp; the pushes of rbx and r12 to r15), whichever is
 * the implementation behind */
TEST_F(emu_cuda_test, entry_points_ucm_patches_open_as_it_relocates) {
#if defined(__x86_64__)
    static const unsigned char opening[] = {0x55, 0x48, 0x89, 0xe5, 0x53,
                                            0x41, 0x54, 0x41, 0x55, 0x41,
                                            0x56, 0x41, 0x57};
    static const char *names[] = {"cuMemAlloc_v2", "cuMemAllocManaged",
                                  "cuMemAllocPitch_v2", "cuMemFree_v2",
                                  "cuMemFreeHost", "cuMemMap", "cuMemUnmap",
                                  "cuMemAllocAsync", "cuMemFreeAsync"};

    for (const char *name : names) {
        const void *code = symbol(name);

        ASSERT_TRUE(code != NULL) << name;
        EXPECT_EQ(0, memcmp(code, opening, sizeof(opening)))
                << name << " does not open as UCM relocates";
    }
#else
    GTEST_SKIP() << "UCM's relocator is x86-64's; elsewhere the entry "
                    "points are plain aliases";
#endif
}
