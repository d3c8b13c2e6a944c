/**
 * gpumem fuzz target: the page map decoder, which reads the kernel's
 * /proc/self/pagemap entries into the physical ranges bus gives a client
 * for system memory. Whatever it accepts must cover every page, in order,
 * each range a whole number of pages that does not wrap, each page at the
 * frame its entry names.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/mem/gpumem_phys.h>
#include <ucs/debug/memtrack_int.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


/* The input: a page size exponent, then page map entries */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t count, page_size, i, j, page, pages;
    gpumem_bus_range_t *ranges;
    uint64_t *entries;
    unsigned num_ranges;
    char why[256];

    if (size < 1) {
        return 0;
    }
    page_size = (size_t)1 << (data[0] % 32);
    count     = (size - 1) / sizeof(uint64_t);
    entries   = malloc((count + 1) * sizeof(*entries));
    if (entries == NULL) {
        return 0;
    }
    memcpy(entries, data + 1, count * sizeof(*entries));

    if (gpumem_phys_decode(entries, count, page_size, &ranges, &num_ranges,
                           why, sizeof(why)) == UCS_OK) {
        fuzz_check((num_ranges >= 1) && (num_ranges <= count));
        page = 0;
        for (i = 0; i < num_ranges; ++i) {
            fuzz_check((ranges[i].length % page_size) == 0);
            fuzz_check(ranges[i].address + ranges[i].length - 1 >=
                       ranges[i].address);
            pages = ranges[i].length / page_size;
            fuzz_check((pages >= 1) && (page + pages <= count));
            for (j = 0; j < pages; ++j) {
                /* Every page at its frame, the range's pages in a row */
                fuzz_check(ranges[i].address + (j * page_size) ==
                           (entries[page + j] & GPUMEM_PAGEMAP_PFN_MASK) *
                           page_size);
            }
            page += pages;
        }
        fuzz_check(page == count);
        ucs_free(ranges);
    } else {
        fuzz_check(strlen(why) > 0);
    }

    free(entries);
    return 0;
}
