/**
 * gpumem tests: the cuda driver's CUresult mapping and its log lines, and
 * the driver's PCI bus ids, without a device.
 *
 * See file LICENSE for terms.
 */

#include "cuda_test.h"


class cuda_error : public log_test {
};

TEST_F(cuda_error, every_result_maps_to_a_status) {
    EXPECT_EQ(UCS_OK,                 gpumem_cuda_status(CUDA_SUCCESS));
    EXPECT_EQ(UCS_INPROGRESS,         gpumem_cuda_status(CUDA_ERROR_NOT_READY));
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              gpumem_cuda_status(CUDA_ERROR_OUT_OF_MEMORY));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_cuda_status(CUDA_ERROR_INVALID_VALUE));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_cuda_status(CUDA_ERROR_INVALID_HANDLE));
    EXPECT_EQ(UCS_ERR_NO_DEVICE,      gpumem_cuda_status(CUDA_ERROR_NO_DEVICE));
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              gpumem_cuda_status(CUDA_ERROR_NOT_INITIALIZED));
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              gpumem_cuda_status(CUDA_ERROR_STUB_LIBRARY));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              gpumem_cuda_status(CUDA_ERROR_NOT_SUPPORTED));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              gpumem_cuda_status(CUDA_ERROR_NOT_PERMITTED));
    EXPECT_EQ(UCS_ERR_UNREACHABLE,
              gpumem_cuda_status(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS,
              gpumem_cuda_status(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED));
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              gpumem_cuda_status(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              gpumem_cuda_status(CUDA_ERROR_ILLEGAL_ADDRESS));
    EXPECT_EQ(UCS_ERR_TIMED_OUT,      gpumem_cuda_status(CUDA_ERROR_TIMEOUT));
    EXPECT_EQ(UCS_ERR_BUSY,
              gpumem_cuda_status(CUDA_ERROR_SYSTEM_NOT_READY));
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              gpumem_cuda_status(CUDA_ERROR_ECC_UNCORRECTABLE));
    /* A code newer than cuda.h */
    EXPECT_EQ(UCS_ERR_IO_ERROR,       gpumem_cuda_status((CUresult)98765));
}

TEST_F(cuda_error, log_names_the_call_and_the_error) {
    char name[32];
    std::string expected_name;

    /* The driver's own name where the library is open, else the number */
    expected_name = gpumem_cuda_error_name(CUDA_ERROR_OUT_OF_MEMORY, name,
                                           sizeof(name));
    if (gpumem_cuda_api.cuGetErrorName == NULL) {
        EXPECT_EQ("CUresult 2", expected_name);
    } else {
        EXPECT_EQ("CUDA_ERROR_OUT_OF_MEMORY", expected_name);
    }

    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              gpumem_cuda_log_result(UCS_LOG_LEVEL_ERROR,
                                     CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate",
                                     "GPU %u: %zu bytes", 0u, (size_t)4096));
    expect_log("gpumem_cuda: GPU 0: 4096 bytes: cuMemCreate failed: " +
               expected_name);
}

TEST_F(cuda_error, log_below_level_is_silent) {
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              gpumem_cuda_log_result(UCS_LOG_LEVEL_TRACE,
                                     CUDA_ERROR_NOT_SUPPORTED, "cuMemMap",
                                     "quiet"));
}

TEST_F(cuda_error, bus_ids_of_the_driver_parse) {
    gpumem_pci_addr_t addr;

    ASSERT_EQ(UCS_OK, gpumem_cuda_bus_id_parse("0000:1B:00.0", &addr));
    EXPECT_EQ(0u, addr.domain);
    EXPECT_EQ(0x1bu, addr.bus);
    EXPECT_EQ(0u, addr.dev);
    EXPECT_EQ(0u, addr.fn);

    ASSERT_EQ(UCS_OK, gpumem_cuda_bus_id_parse("00000002:c1:1f.7", &addr));
    EXPECT_EQ(2u, addr.domain);
    EXPECT_EQ(0xc1u, addr.bus);
    EXPECT_EQ(0x1fu, addr.dev);
    EXPECT_EQ(7u, addr.fn);

    for (const char *bad : {"", "0000:1B:00", "0000:1B:00.0x", "1B:00.0:0",
                            "10000:1B:00.0", "0000:1B:20.0", "0000:1B:00.8",
                            "GPU-0"}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, gpumem_cuda_bus_id_parse(bad, &addr))
                << "'" << bad << "'";
    }
}
