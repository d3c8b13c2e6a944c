/**
 * gpumem memory core: where system memory lies, from the kernel's page map
 * (/proc/self/pagemap): the physical ranges bus gives a client for system
 * memory (seed 003).
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_PHYS_H_
#define GPUMEM_PHYS_H_

#include "gpumem_mem.h"

#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/* A page map entry (Linux, Documentation/admin-guide/mm/pagemap.rst) */
#define GPUMEM_PAGEMAP_PRESENT   (1ull << 63)
#define GPUMEM_PAGEMAP_SWAPPED   (1ull << 62)
#define GPUMEM_PAGEMAP_PFN_MASK  ((1ull << 55) - 1)


/**
 * The physical ranges of @a count pages of @a page_size bytes (a power of
 * two, at least 4 KiB) whose page map entries are @a entries, in order,
 * physically contiguous pages merged. @a ranges_p is allocated (ucs_free it).
 *
 * @return UCS_ERR_NO_ELEM where a page is not in memory (not present, or
 *         swapped out); UCS_ERR_UNSUPPORTED where a present page's frame
 *         reads 0, as the kernel shows it to a process without
 *         CAP_SYS_ADMIN; UCS_ERR_INVALID_PARAM for no pages, a bad page
 *         size, or a frame past 64-bit addresses; UCS_ERR_NO_MEMORY. @a why
 *         says which page and why.
 */
ucs_status_t gpumem_phys_decode(const uint64_t *entries, size_t count,
                                size_t page_size,
                                gpumem_bus_range_t **ranges_p,
                                unsigned *count_p, char *why, size_t max);


/**
 * Whether the kernel tells this process the physical addresses of its pages
 * (CAP_SYS_ADMIN when the page map is opened); UCS_ERR_UNSUPPORTED, with
 * @a why, where it does not.
 */
ucs_status_t gpumem_phys_visible(char *why, size_t max);


/**
 * The physical ranges of this process's pages [@a address, @a address +
 * @a length), page-aligned, which must be in memory (locked): as
 * gpumem_phys_decode() answers, or UCS_ERR_IO_ERROR where the page map
 * cannot be read.
 */
ucs_status_t gpumem_phys_ranges(const void *address, size_t length,
                                gpumem_bus_range_t **ranges_p,
                                unsigned *count_p, char *why, size_t max);

END_C_DECLS

#endif
