/**
 * gpumem tests: exporting emu VRAM to another process of the machine, and
 * refusing handles that are not what they say.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

#include <common/channel.h>

#include <string.h>
#include <unistd.h>

#include <vector>


class emu_export : public emu_test {
protected:
    /* Fields of the emu's handle (emu_export.c), by offset, for forging */
    enum {
        HANDLE_MAGIC      = 0,
        HANDLE_VERSION    = 4,
        HANDLE_UID        = 8,
        HANDLE_MACHINE    = 16,
        HANDLE_EXTENT     = 32,
        HANDLE_GENERATION = 48,
        HANDLE_OFFSET     = 56
    };

    typedef std::vector<uint8_t> handle_t;

    handle_t export_mem(gpumem_driver_mem_t *mem) {
        handle_t handle(GPUMEM_DRIVER_EXPORT_MAX);
        size_t length;

        EXPECT_EQ(UCS_OK, ops()->mem_export(mem, handle.data(), &length));
        EXPECT_LE(length, (size_t)GPUMEM_DRIVER_EXPORT_MAX);
        handle.resize(length);
        return handle;
    }

    template <typename T>
    static handle_t forge(handle_t handle, size_t offset, T value) {
        memcpy(&handle[offset], &value, sizeof(value));
        return handle;
    }

    ucs_status_t import(unsigned gpu_index, const handle_t &handle) {
        gpumem_driver_mem_t *mem;
        ucs_status_t status;

        status = ops()->mem_import(gpu(gpu_index), handle.data(),
                                   handle.size(), &mem);
        if (status == UCS_OK) {
            ops()->mem_free(mem);
        }
        return status;
    }

    /* Writes a pattern to all of a GPU's memory through its copy engine */
    void write(unsigned gpu_index, uint64_t va, const std::vector<uint8_t> &p) {
        ASSERT_EQ(UCS_OK, copy(gpu_index, va, 1, (uintptr_t)p.data(), 0,
                               p.size()));
    }

    /* In a child: receives a handle and imports it into GPU 0 */
    static int child_import(gpumem_driver_t *driver,
                            gpumem_test::channel &channel,
                            gpumem_driver_mem_t **mem_p) {
        uint8_t handle[GPUMEM_DRIVER_EXPORT_MAX];
        size_t length;

        EMU_CHILD_CHECK(channel.recv(&length, sizeof(length)));
        EMU_CHILD_CHECK(length <= sizeof(handle));
        EMU_CHILD_CHECK(channel.recv(handle, length));
        EMU_CHILD_CHECK(driver->ops->mem_import(driver->ops->gpu(driver, 0),
                                                handle, length, mem_p) ==
                        UCS_OK);
        return 0;
    }

    void send_handle(gpumem_test::channel &channel, const handle_t &h) {
        size_t length = h.size();

        ASSERT_TRUE(channel.send(&length, sizeof(length)));
        ASSERT_TRUE(channel.send(h.data(), length));
    }

    /* In a child: whether the GPU reads these bytes at va */
    static bool child_reads(gpumem_driver_t *driver, unsigned gpu_index,
                            uint64_t va, const std::vector<uint8_t> &bytes) {
        std::vector<uint8_t> read(bytes.size());

        return (gpumem_test::emu_copy(driver, gpu_index,
                                      (uintptr_t)read.data(), 0, va, 1,
                                      read.size()) == UCS_OK) &&
               (read == bytes);
    }
};


TEST_F(emu_export, peer_process_sees_the_same_bytes)
{
    const size_t size            = 16 * PAGE;
    std::vector<uint8_t> mine    = gpumem_test::emu_pattern(size, 1);
    std::vector<uint8_t> theirs  = gpumem_test::emu_pattern(size, 2);
    gpumem_driver_mem_t *mem     = alloc(0, size);
    uint64_t va                  = map(0, mem);
    std::vector<uint8_t> read(size);
    gpumem_test::channel channel;
    pid_t pid;

    write(0, va, mine);
    pid = fork_child([&]() {
        gpumem_driver_mem_t *imported;
        gpumem_driver_t *driver;
        gpumem_topo_t *topo;
        uint64_t va0, va1;

        channel.child_side();
        EMU_CHILD_CHECK(open_machine(config(), &topo, &driver) == UCS_OK);
        EMU_CHILD_CHECK(child_import(driver, channel, &imported) == 0);

        /* Its own GPU and the peer GPU read the owner's bytes */
        va0 = gpumem_test::emu_map(driver, 0, imported);
        va1 = gpumem_test::emu_map(driver, 1, imported);
        EMU_CHILD_CHECK((va0 != 0) && (va1 != 0));
        EMU_CHILD_CHECK(child_reads(driver, 0, va0, mine));
        EMU_CHILD_CHECK(child_reads(driver, 1, va1, mine));

        /* And the owner reads what the peer GPU writes */
        EMU_CHILD_CHECK(gpumem_test::emu_copy(driver, 1, va1, 1,
                                              (uintptr_t)theirs.data(), 0,
                                              size) == UCS_OK);
        EMU_CHILD_CHECK(channel.signal());
        EMU_CHILD_CHECK(channel.wait());

        gpumem_test::emu_unmap(driver, 0, va0, size);
        gpumem_test::emu_unmap(driver, 1, va1, size);
        driver->ops->mem_free(imported);
        close_machine(topo, driver);
        return 0;
    });
    channel.parent_side();
    send_handle(channel, export_mem(mem));

    ASSERT_TRUE(channel.wait());
    EXPECT_EQ(UCS_OK, copy(0, (uintptr_t)read.data(), 0, va, 1, size));
    EXPECT_EQ(theirs, read);
    channel.signal();
    EXPECT_EQ(0, wait_child(pid));

    gpumem_test::emu_unmap(m_driver, 0, va, size);
    ops()->mem_free(mem);
}

TEST_F(emu_export, owner_free_keeps_memory_for_the_importer)
{
    const size_t size         = 2 * LARGE_PAGE;
    std::vector<uint8_t> mine = gpumem_test::emu_pattern(size, 3);
    gpumem_driver_mem_t *mem  = alloc(0, size, LARGE_PAGE);
    uint64_t va               = map(0, mem);
    gpumem_test::channel channel;
    gpumem_driver_mem_t *other;
    pid_t pid;

    write(0, va, mine);
    pid = fork_child([&]() {
        gpumem_driver_mem_t *imported;
        gpumem_driver_t *driver;
        gpumem_topo_t *topo;
        uint64_t va1;

        channel.child_side();
        EMU_CHILD_CHECK(open_machine(config(), &topo, &driver) == UCS_OK);
        EMU_CHILD_CHECK(child_import(driver, channel, &imported) == 0);
        va1 = gpumem_test::emu_map(driver, 1, imported);
        EMU_CHILD_CHECK(va1 != 0);
        EMU_CHILD_CHECK(channel.signal());

        /* The owner has freed it meanwhile */
        EMU_CHILD_CHECK(channel.wait());
        EMU_CHILD_CHECK(child_reads(driver, 1, va1, mine));

        gpumem_test::emu_unmap(driver, 1, va1, size);
        driver->ops->mem_free(imported);
        close_machine(topo, driver);
        return 0;
    });
    channel.parent_side();
    send_handle(channel, export_mem(mem));
    ASSERT_TRUE(channel.wait());

    gpumem_test::emu_unmap(m_driver, 0, va, size);
    ops()->mem_free(mem);

    /* The importer still holds it: no room for all of VRAM */
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), VRAM_SIZE, LARGE_PAGE, 0, &other));
    channel.signal();
    EXPECT_EQ(0, wait_child(pid));

    /* Its last holder gone, the memory is back */
    other = alloc(0, VRAM_SIZE, LARGE_PAGE);
    ops()->mem_free(other);
}

TEST_F(emu_export, import_in_the_owner_process_holds_the_memory_too)
{
    std::vector<uint8_t> mine = gpumem_test::emu_pattern(PAGE, 4);
    gpumem_driver_mem_t *mem  = alloc(0, VRAM_SIZE, LARGE_PAGE);
    handle_t handle           = export_mem(mem);
    std::vector<uint8_t> read(PAGE);
    gpumem_driver_mem_t *imported, *other;
    uint64_t va;

    ASSERT_EQ(UCS_OK, ops()->mem_import(gpu(0), handle.data(), handle.size(),
                                        &imported));
    EXPECT_EQ(mem->phys, imported->phys);
    EXPECT_EQ(mem->size, imported->size);
    EXPECT_EQ(mem->page_size, imported->page_size);
    ops()->mem_free(mem);

    va = map(1, imported);
    write(1, va, mine);
    EXPECT_EQ(UCS_OK, copy(1, (uintptr_t)read.data(), 0, va, 1, PAGE));
    EXPECT_EQ(mine, read);
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              ops()->mem_alloc(gpu(0), PAGE, PAGE, 0, &other));

    gpumem_test::emu_unmap(m_driver, 1, va, imported->size);
    ops()->mem_free(imported);
    other = alloc(0, VRAM_SIZE, LARGE_PAGE);
    ops()->mem_free(other);
}

TEST_F(emu_export, malformed_handles_are_refused)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * PAGE);
    handle_t handle          = export_mem(mem);
    handle_t truncated(handle.begin(), handle.end() - 1);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, import(0, truncated));
    expect_log("refused a memory handle of 79 bytes");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ops()->mem_import(gpu(0), NULL, 0, &mem));
    expect_log("refused a memory handle of 0 bytes");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, handle_t(handle.size(), 0xa5)));
    expect_log("not an emu handle");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_MAGIC, (uint32_t)0)));
    expect_log("not an emu handle");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_VERSION, (uint16_t)2)));
    expect_log("of version 2");

    /* The memory is untouched, and still imports */
    EXPECT_EQ(UCS_OK, import(0, handle));
    ops()->mem_free(mem);
}

TEST_F(emu_export, handles_of_other_owners_or_gpus_are_refused)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * PAGE);
    handle_t handle          = export_mem(mem);
    uint64_t machine;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, import(1, handle));
    expect_log("it is memory of GPU 00e0:03:00.0");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_UID, (uint32_t)getuid() + 1)));
    expect_log("of user");
    memcpy(&machine, &handle[HANDLE_MACHINE], sizeof(machine));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_MACHINE, machine ^ 1)));
    expect_log("of another machine");

    ops()->mem_free(mem);
}

TEST_F(emu_export, forged_extents_are_refused)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * PAGE);
    handle_t handle          = export_mem(mem);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_OFFSET, (uint64_t)PAGE)));
    expect_log("forged memory handle");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_OFFSET, (uint64_t)VRAM_SIZE)));
    expect_log("is not one of its 67108864 bytes of VRAM");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_EXTENT, (uint32_t)1u << 30)));
    expect_log("is not one of its");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              import(0, forge(handle, HANDLE_GENERATION, (uint64_t)1000)));
    expect_log("generation 1000 was never allocated");

    ops()->mem_free(mem);
}

TEST_F(emu_export, stale_handles_are_refused)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * PAGE);
    handle_t handle          = export_mem(mem);

    ops()->mem_free(mem);
    EXPECT_EQ(UCS_ERR_NO_ELEM, import(0, handle));
    expect_log("was freed");

    /* The same extent and VRAM allocated again: a new generation */
    mem = alloc(0, 4 * PAGE);
    EXPECT_EQ(UCS_ERR_NO_ELEM, import(0, handle));
    expect_log("stale memory handle");
    ops()->mem_free(mem);

    /* The GPU's VRAM created anew once every process left */
    mem    = alloc(0, 4 * PAGE);
    handle = export_mem(mem);
    ops()->mem_free(mem);
    reopen(config());
    mem = alloc(0, 4 * PAGE);
    EXPECT_EQ(UCS_ERR_NO_ELEM, import(0, handle));
    expect_log("its VRAM was created anew since");
    ops()->mem_free(mem);
}

TEST_F(emu_export, every_flipped_byte_is_refused_but_the_logged_pid)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * PAGE);
    handle_t handle          = export_mem(mem);
    const size_t pid_offset  = 12; /* Only said in logs */
    handle_t flipped;
    size_t i;

    for (i = 0; i < handle.size(); ++i) {
        flipped     = handle;
        flipped[i] ^= 0xff;
        if ((i >= pid_offset) && (i < pid_offset + sizeof(int32_t))) {
            EXPECT_EQ(UCS_OK, import(0, flipped)) << "byte " << i;
        } else {
            EXPECT_NE(UCS_OK, import(0, flipped)) << "byte " << i;
            expect_log("refused");
        }
    }

    ops()->mem_free(mem);
}

/* An import is checked against the extent its handle named: once another
 * allocation has the extent (here, its generation changed under it), the
 * import is no longer that memory, and says so */
TEST_F(emu_export, an_import_is_checked_against_the_extent_it_named)
{
    gpumem_driver_mem_t *mem = alloc(0, 4 * PAGE);
    handle_t handle          = export_mem(mem);
    gpumem_driver_mem_t *imported;
    uint64_t generation;

    ASSERT_EQ(UCS_OK, ops()->mem_import(gpu(0), handle.data(), handle.size(),
                                        &imported));
    EXPECT_EQ(UCS_OK, ops()->mem_check(imported));

    generation = gpumem_emu_test_set_generation(imported, 1u << 30);
    EXPECT_EQ(UCS_ERR_NO_ELEM, ops()->mem_check(imported));
    expect_log("is no longer the memory its handle named");

    gpumem_emu_test_set_generation(imported, generation);
    EXPECT_EQ(UCS_OK, ops()->mem_check(imported));
    ops()->mem_free(imported);
    ops()->mem_free(mem);
}
