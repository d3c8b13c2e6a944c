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

/* Stream-ordered memory is there at once and goes after the stream's work
 * before the free; no legacy IPC handle shares it */
TEST_F(emu_cuda_test, stream_ordered_memory_is_freed_after_the_work_before) {
    std::vector<unsigned char> bytes(1 << 20, 0x5a), back(bytes.size());
    CUipcMemHandle handle;
    CUdeviceptr ptr, dev;
    CUstream stream;
    int ipc = 1;

    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamCreate(&stream, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAllocAsync(&ptr, bytes.size(), stream));
    ASSERT_EQ(CUDA_SUCCESS,
              p_cuPointerGetAttribute(&ipc,
                                      CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                      ptr));
    EXPECT_EQ(0, ipc);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuIpcGetMemHandle(&handle, ptr));

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&dev, bytes.size()));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(ptr, bytes.data(), bytes.size()));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoDAsync(dev, ptr, bytes.size(),
                                                stream));
    /* The copy queued before the free reads the memory whole */
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemFreeAsync(ptr, stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(back.data(), dev, back.size()));
    EXPECT_TRUE(bytes == back) << "the copy before the free lost bytes";
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemFreeAsync(ptr, stream));

    /* cuMemFree frees it as well */
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAllocAsync(&ptr, 64, stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(ptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemAllocAsync(&ptr, 0, stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(dev));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamDestroy(stream));
}

/* The granule of pinned device memory, also for a property left zero */
TEST_F(emu_cuda_test, allocation_granularity_of_a_zero_property) {
    CUmemAllocationProp prop = {};
    size_t granularity = 0;

    ASSERT_EQ(CUDA_SUCCESS,
              p_cuMemGetAllocationGranularity(&granularity, &prop,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT_EQ(2u << 20, granularity);
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id   = 99;
    prop.type          = CU_MEM_ALLOCATION_TYPE_PINNED;
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE,
              p_cuMemGetAllocationGranularity(&granularity, &prop,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemGetAllocationGranularity(&granularity, NULL,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM));
}

/* The handle of mapped memory is retained and released like the creator's,
 * and tells its properties; other memory has none */
TEST_F(emu_cuda_test, mapped_memory_gives_its_handle_back) {
    CUmemAllocationProp prop = {}, got;
    CUmemGenericAllocationHandle handle, retained;
    CUdeviceptr ptr, dev;
    const size_t size = 2u << 20;

    prop.type          = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id   = 1;
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemCreate(&handle, size, &prop, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAddressReserve(&ptr, size, 0, 0, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemMap(ptr, size, 0, handle, 0));

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemRetainAllocationHandle(
                                    &retained, (void*)(uintptr_t)(ptr + 100)));
    EXPECT_EQ(handle, retained);
    ASSERT_EQ(CUDA_SUCCESS,
              p_cuMemGetAllocationPropertiesFromHandle(&got, retained));
    EXPECT_EQ(CU_MEM_ALLOCATION_TYPE_PINNED, got.type);
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, got.location.type);
    EXPECT_EQ(1, got.location.id);

    /* Two references: the creator's and the retained one */
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemRelease(retained));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemRelease(handle));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemRelease(handle));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemUnmap(ptr, size));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemAddressFree(ptr, size));

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&dev, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemRetainAllocationHandle(
                                                &retained, (void*)(uintptr_t)dev));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(dev));
}

/* Managed memory no one advised: no preferred or prefetch location */
TEST_F(emu_cuda_test, managed_range_has_no_location_advised) {
    CUdeviceptr ptr, dev;
    int value = 0, accessed[3] = {0, 0, 0};

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAllocManaged(&ptr, 8192,
                                                CU_MEM_ATTACH_GLOBAL));
    ASSERT_EQ(CUDA_SUCCESS,
              p_cuMemRangeGetAttribute(&value, sizeof(value),
                                       CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
                                       ptr, 8192));
    EXPECT_EQ(CU_DEVICE_INVALID, value);
    ASSERT_EQ(CUDA_SUCCESS,
              p_cuMemRangeGetAttribute(accessed, sizeof(accessed),
                                       CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
                                       ptr + 4096, 4096));
    EXPECT_EQ(CU_DEVICE_INVALID, accessed[2]);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemRangeGetAttribute(&value, sizeof(value),
                                       CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                       ptr, 8193));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&dev, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemRangeGetAttribute(&value, sizeof(value),
                                       CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                       dev, 4096));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(dev));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(ptr));
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
