/**
 * gpumem fuzz targets: what an accepted input must hold.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_FUZZ_CHECK_H_
#define GPUMEM_FUZZ_CHECK_H_

#include <stdlib.h>

/* An input the decoder accepted that does not hold: the fuzzer's finding */
static inline void fuzz_check(int condition)
{
    if (!condition) {
        abort();
    }
}

#endif
