/**
 * gpumem emulated CUDA's test programs: a failed expectation says where
 * and what, and counts; the program's end tells the count.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_EXPECT_H_
#define GPUMEM_EMU_EXPECT_H_

#include <stdio.h>

/* The program's name in its lines, and the expectations that failed */
extern const char *emu_expect_program;
extern int emu_expect_failures;

#define EXPECT(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "%s: %s:%d: %s: ", emu_expect_program, \
                    __FILE__, __LINE__, #_cond); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            ++emu_expect_failures; \
        } \
    } while (0)

/* The exit status: 0 when every expectation held, else 1, said */
static inline int emu_expect_result(void)
{
    if (emu_expect_failures == 0) {
        return 0;
    }
    fprintf(stderr, "%s: %d wrong answers\n", emu_expect_program,
            emu_expect_failures);
    return 1;
}

#endif
