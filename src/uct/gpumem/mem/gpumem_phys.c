/**
 * gpumem memory core: physical ranges of system memory from the kernel's
 * page map.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_phys.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>


#define GPUMEM_PAGEMAP_PATH  "/proc/self/pagemap"


ucs_status_t gpumem_phys_decode(const uint64_t *entries, size_t count,
                                size_t page_size,
                                gpumem_bus_range_t **ranges_p,
                                unsigned *count_p, char *why, size_t max)
{
    gpumem_bus_range_t *ranges, *last;
    uint64_t pfn, address;
    unsigned num_ranges;
    size_t i;

    if ((count == 0) || (count > UINT_MAX) || (page_size < 4096) ||
        !ucs_is_pow2(page_size)) {
        ucs_snprintf_zero(why, max, "%zu pages of %zu bytes", count,
                          page_size);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < count; ++i) {
        if (!(entries[i] & GPUMEM_PAGEMAP_PRESENT) ||
            (entries[i] & GPUMEM_PAGEMAP_SWAPPED)) {
            ucs_snprintf_zero(why, max, "page %zu of %zu is not in memory",
                              i, count);
            return UCS_ERR_NO_ELEM;
        }
        pfn = entries[i] & GPUMEM_PAGEMAP_PFN_MASK;
        if (pfn == 0) {
            ucs_snprintf_zero(why, max, "the kernel hides the physical "
                              "addresses of this process's pages ("
                              GPUMEM_PAGEMAP_PATH " shows page frames to "
                              "CAP_SYS_ADMIN only)");
            return UCS_ERR_UNSUPPORTED;
        }
        if (pfn > ((UINT64_MAX - page_size + 1) / page_size)) {
            ucs_snprintf_zero(why, max, "page %zu of %zu: frame 0x%lx lies "
                              "past 64-bit addresses", i, count,
                              (unsigned long)pfn);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    ranges = ucs_malloc(count * sizeof(*ranges), "gpumem_bus_ranges");
    if (ranges == NULL) {
        ucs_snprintf_zero(why, max, "no memory for %zu ranges", count);
        return UCS_ERR_NO_MEMORY;
    }

    num_ranges = 0;
    last       = NULL;
    for (i = 0; i < count; ++i) {
        address = (entries[i] & GPUMEM_PAGEMAP_PFN_MASK) * page_size;
        if ((last != NULL) && (last->address + last->length == address)) {
            last->length += page_size;
        } else {
            last          = &ranges[num_ranges++];
            last->address = address;
            last->length  = page_size;
        }
    }

    *ranges_p = ranges;
    *count_p  = num_ranges;
    return UCS_OK;
}

/* Reads the page map entries of @a count pages from page @a first on */
static ucs_status_t gpumem_phys_read(uint64_t *entries, size_t first,
                                     size_t count, char *why, size_t max)
{
    size_t length = count * sizeof(*entries), done = 0;
    ssize_t ret;
    int fd;

    /* The kernel shows frames by the credentials of the open */
    fd = open(GPUMEM_PAGEMAP_PATH, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ucs_snprintf_zero(why, max, "open(" GPUMEM_PAGEMAP_PATH "): %s",
                          strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    while (done < length) {
        ret = pread(fd, (char*)entries + done, length - done,
                    (off_t)(first * sizeof(*entries) + done));
        if ((ret < 0) && (errno == EINTR)) {
            continue;
        }
        if (ret <= 0) {
            ucs_snprintf_zero(why, max, "reading " GPUMEM_PAGEMAP_PATH
                              ": %s", (ret < 0) ? strerror(errno) :
                              "it ended early");
            close(fd);
            return UCS_ERR_IO_ERROR;
        }
        done += ret;
    }

    close(fd);
    return UCS_OK;
}

ucs_status_t gpumem_phys_visible(char *why, size_t max)
{
    gpumem_bus_range_t *ranges;
    size_t page_size = ucs_get_page_size();
    volatile uint64_t here = 0; /* On a page in memory: the stack's */
    ucs_status_t status;
    unsigned count;
    uint64_t entry;

    status = gpumem_phys_read(&entry, (uintptr_t)&here / page_size, 1, why,
                              max);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_phys_decode(&entry, 1, page_size, &ranges, &count, why,
                                max);
    if (status == UCS_OK) {
        ucs_free(ranges);
    }
    return status;
}

ucs_status_t gpumem_phys_ranges(const void *address, size_t length,
                                gpumem_bus_range_t **ranges_p,
                                unsigned *count_p, char *why, size_t max)
{
    size_t page_size = ucs_get_page_size();
    size_t count     = length / page_size;
    uint64_t *entries;
    ucs_status_t status;

    if (((uintptr_t)address % page_size) || (length % page_size) ||
        (count == 0)) {
        ucs_snprintf_zero(why, max, "%p+%zu is not whole pages", address,
                          length);
        return UCS_ERR_INVALID_PARAM;
    }

    entries = ucs_malloc(count * sizeof(*entries), "gpumem_pagemap");
    if (entries == NULL) {
        ucs_snprintf_zero(why, max, "no memory for %zu page map entries",
                          count);
        return UCS_ERR_NO_MEMORY;
    }

    status = gpumem_phys_read(entries, (uintptr_t)address / page_size, count,
                              why, max);
    if (status == UCS_OK) {
        status = gpumem_phys_decode(entries, count, page_size, ranges_p,
                                    count_p, why, max);
    }
    ucs_free(entries);
    return status;
}
