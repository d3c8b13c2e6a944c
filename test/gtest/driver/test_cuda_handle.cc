/**
 * gpumem tests: the cuda driver's exported handles: the wire form, and
 * every bad handle refused with a status and a log line.
 *
 * See file LICENSE for terms.
 */

#include "cuda_test.h"

#include <cstring>
#include <unistd.h>


class cuda_handle : public log_test {
protected:
    static gpumem_cuda_handle_t vmm_handle() {
        gpumem_cuda_handle_t handle;

        memset(&handle, 0, sizeof(handle));
        handle.magic       = GPUMEM_CUDA_HANDLE_MAGIC;
        handle.version     = GPUMEM_CUDA_HANDLE_VERSION;
        handle.type        = GPUMEM_CUDA_HANDLE_VMM_FD;
        handle.uid         = geteuid();
        handle.pid         = getpid();
        handle.fd          = 7;
        handle.size        = 8ul << 20;
        handle.granularity = 2ul << 20;
        handle.alloc_id    = 42;
        return handle;
    }

    /* The handle's wire form */
    static std::vector<uint8_t> pack(const gpumem_cuda_handle_t &handle) {
        std::vector<uint8_t> buf(GPUMEM_DRIVER_EXPORT_MAX);
        size_t length;

        EXPECT_EQ(UCS_OK, gpumem_cuda_handle_pack(&handle, buf.data(),
                                                  buf.size(), &length));
        buf.resize(length);
        return buf;
    }

    /* Unpacking @a handle's wire form is @a status, logged saying @a why */
    void expect_refused(const gpumem_cuda_handle_t &handle,
                        ucs_status_t status, const std::string &why) {
        std::vector<uint8_t> buf = pack(handle);
        gpumem_cuda_handle_t out;

        EXPECT_EQ(status, gpumem_cuda_handle_unpack(buf.data(), buf.size(),
                                                    &out));
        expect_log(why);
    }
};

TEST_F(cuda_handle, fits_the_driver_export_buffer) {
    EXPECT_LE(GPUMEM_CUDA_HANDLE_SIZE, (size_t)GPUMEM_DRIVER_EXPORT_MAX);
}

TEST_F(cuda_handle, pack_unpack_round_trip) {
    gpumem_cuda_handle_t handle = vmm_handle();
    std::vector<uint8_t> buf    = pack(handle);
    gpumem_cuda_handle_t out;

    ASSERT_EQ(GPUMEM_CUDA_HANDLE_SIZE, buf.size());
    ASSERT_EQ(UCS_OK, gpumem_cuda_handle_unpack(buf.data(), buf.size(),
                                                &out));
    EXPECT_EQ(0, memcmp(&handle, &out, sizeof(handle)));
}

TEST_F(cuda_handle, legacy_ipc_round_trip) {
    gpumem_cuda_handle_t handle = vmm_handle();
    std::vector<uint8_t> buf;
    gpumem_cuda_handle_t out;

    handle.type        = GPUMEM_CUDA_HANDLE_LEGACY_IPC;
    handle.fd          = -1;
    handle.granularity = 0;
    handle.alloc_id    = 77;
    handle.size        = 12345;
    memset(handle.ipc, 0xa5, sizeof(handle.ipc));
    buf = pack(handle);
    ASSERT_EQ(UCS_OK, gpumem_cuda_handle_unpack(buf.data(), buf.size(),
                                                &out));
    EXPECT_EQ(0, memcmp(handle.ipc, out.ipc, sizeof(out.ipc)));
}

TEST_F(cuda_handle, pack_into_short_buffer_refused) {
    gpumem_cuda_handle_t handle = vmm_handle();
    uint8_t buf[GPUMEM_CUDA_HANDLE_SIZE - 1];
    size_t length;

    EXPECT_EQ(UCS_ERR_BUFFER_TOO_SMALL,
              gpumem_cuda_handle_pack(&handle, buf, sizeof(buf), &length));
    expect_log("a memory handle takes");
}

TEST_F(cuda_handle, truncated_refused) {
    std::vector<uint8_t> buf = pack(vmm_handle());
    gpumem_cuda_handle_t out;

    for (size_t length : {(size_t)0, (size_t)1, buf.size() / 2,
                          buf.size() - 1}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  gpumem_cuda_handle_unpack(buf.data(), length, &out))
                << length << " bytes";
        expect_log("a handle has");
    }
}

TEST_F(cuda_handle, trailing_bytes_refused) {
    std::vector<uint8_t> buf = pack(vmm_handle());
    gpumem_cuda_handle_t out;

    buf.push_back(0);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              gpumem_cuda_handle_unpack(buf.data(), buf.size(), &out));
    expect_log("a handle has");
}

TEST_F(cuda_handle, wrong_magic_refused) {
    gpumem_cuda_handle_t handle = vmm_handle();

    handle.magic = 0x12345678;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "not a cuda driver handle");
}

TEST_F(cuda_handle, wrong_version_refused) {
    gpumem_cuda_handle_t handle = vmm_handle();

    handle.version = GPUMEM_CUDA_HANDLE_VERSION + 1;
    expect_refused(handle, UCS_ERR_INVALID_PARAM,
                   "of version " +
                   std::to_string(GPUMEM_CUDA_HANDLE_VERSION + 1));
}

TEST_F(cuda_handle, other_user_refused) {
    gpumem_cuda_handle_t handle = vmm_handle();

    handle.uid = geteuid() + 1;
    expect_refused(handle, UCS_ERR_REJECTED, "belongs to user");
}

TEST_F(cuda_handle, corrupt_fields_refused) {
    gpumem_cuda_handle_t handle;

    handle          = vmm_handle();
    handle.reserved = 1;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "reserved bytes set");

    handle     = vmm_handle();
    handle.pid = 0;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "no process");

    handle      = vmm_handle();
    handle.size = 0;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "no bytes");

    handle    = vmm_handle();
    handle.fd = -3;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "a negative fd");

    handle             = vmm_handle();
    handle.granularity = 3ul << 20;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "not a power of 2");

    handle      = vmm_handle();
    handle.size = (8ul << 20) + 100;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "not whole 4 KiB pages");

    handle          = vmm_handle();
    handle.alloc_id = 0;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "no allocation id");

    handle         = vmm_handle();
    handle.ipc[55] = 0x5a;
    expect_refused(handle, UCS_ERR_INVALID_PARAM,
                   "bytes of a legacy IPC handle set in a VMM handle");

    handle      = vmm_handle();
    handle.type = 9;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "an unknown type");

    handle      = vmm_handle();
    handle.type = GPUMEM_CUDA_HANDLE_LEGACY_IPC;
    expect_refused(handle, UCS_ERR_INVALID_PARAM,
                   "fields of a VMM handle set");

    handle             = vmm_handle();
    handle.type        = GPUMEM_CUDA_HANDLE_LEGACY_IPC;
    handle.fd          = -1;
    handle.granularity = 0;
    handle.alloc_id    = 0;
    expect_refused(handle, UCS_ERR_INVALID_PARAM, "no allocation id");
}

TEST_F(cuda_handle, allocations_at_one_fd_have_distinct_handles) {
    gpumem_cuda_handle_t first = vmm_handle(), second = vmm_handle();

    /* The exporter closed the fd of a freed allocation and the next one
     * got its number: the bytes differ, so no cache of handles takes one
     * for the other */
    second.alloc_id = first.alloc_id + 1;
    EXPECT_TRUE(pack(first) != pack(second));
}

TEST_F(cuda_handle, random_bytes_refused) {
    std::vector<uint8_t> buf(GPUMEM_CUDA_HANDLE_SIZE);
    gpumem_cuda_handle_t out;
    unsigned seed = 1;

    for (int i = 0; i < 100; ++i) {
        for (uint8_t &byte : buf) {
            byte = rand_r(&seed);
        }
        EXPECT_NE(UCS_OK, gpumem_cuda_handle_unpack(buf.data(), buf.size(),
                                                    &out));
        expect_log("refused a memory handle");
    }
}
