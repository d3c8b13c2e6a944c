/**
 * gpumem tests: emu VRAM as another PCI function reaches it: dma-bufs.
 *
 * See file LICENSE for terms.
 */

#include "emu_test.h"

extern "C" {
#include <ucs/config/global_opts.h>
}

#include <sys/mman.h>
#include <unistd.h>

#include <vector>


class emu_bar : public emu_test {
};


TEST_F(emu_bar, dmabuf_export_is_a_udmabuf_or_clearly_unsupported)
{
    gpumem_driver_mem_t *mem     = alloc(0, 4 * PAGE);
    uint64_t va                  = map(0, mem);
    std::vector<uint8_t> pattern = gpumem_test::emu_pattern(mem->size, 13);
    ucs_log_level_t saved_level  = ucs_global_opts.log_component.log_level;
    ucs_status_t status;
    size_t offset;
    void *addr;
    int fd;

    ASSERT_EQ(UCS_OK, copy(0, va, 1, (uintptr_t)pattern.data(), 0,
                           mem->size));

    /* The refusal is a diagnostic, not an error of the program */
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_DIAG;
    status = ops()->dmabuf_export(mem, &fd, &offset);
    ucs_global_opts.log_component.log_level = saved_level;

    if (access("/dev/udmabuf", F_OK) != 0) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, status);
        expect_log("no /dev/udmabuf on this kernel");
    } else {
        /* Another function sees the same bytes as the copy engine */
        ASSERT_EQ(UCS_OK, status);
        addr = mmap(NULL, mem->size, PROT_READ, MAP_SHARED, fd, 0);
        ASSERT_NE(MAP_FAILED, addr);
        EXPECT_EQ(0, memcmp((uint8_t*)addr + offset, pattern.data(),
                            mem->size - offset));
        munmap(addr, mem->size);
        ::close(fd);
    }

    gpumem_test::emu_unmap(m_driver, 0, va, mem->size);
    ops()->mem_free(mem);
}
