/**
 * gpumem benchmark: a gpumem_device_malloc/free cycle of 4 KiB with no
 * other allocation alive, against the same cycle while one allocation is
 * held, measured in the same run: the calls keep the machine open between
 * allocations, so the two cost the same. A third loop resets the calls at
 * each cycle, reopening the machine, to show what is saved.
 *
 *   bench/api_cycle_bench [CYCLES]
 *
 * Prints the median microseconds of a cycle of each loop and the ratio of
 * the first to the second; exits 1 when it is over 1.5.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <gpumem/gpumem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define API_CYCLE_GOAL       1.5
#define API_CYCLE_SIZE       4096
#define API_CYCLE_REOPENS    20  /* Reopening is slow: fewer of them */


static double api_cycle_now_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ts.tv_sec * 1e6) + (ts.tv_nsec / 1e3);
}

static int api_cycle_compare(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* The median microseconds of @a cycles malloc/free cycles, each followed by
 * a reset if @a reset */
static double api_cycle_run(unsigned cycles, int reset)
{
    double *times = calloc(cycles, sizeof(*times));
    double start, median;
    unsigned i;
    void *ptr;

    if (times == NULL) {
        fprintf(stderr, "api_cycle_bench: out of memory\n");
        exit(2);
    }

    for (i = 0; i < cycles; ++i) {
        start = api_cycle_now_usec();
        if ((gpumem_device_malloc(&ptr, API_CYCLE_SIZE) != 0) ||
            (gpumem_device_free(ptr) != 0) ||
            (reset && (gpumem_device_reset() != 0))) {
            fprintf(stderr, "api_cycle_bench: a cycle failed\n");
            exit(2);
        }
        times[i] = api_cycle_now_usec() - start;
    }

    qsort(times, cycles, sizeof(*times), api_cycle_compare);
    median = times[cycles / 2];
    free(times);
    return median;
}

int main(int argc, char **argv)
{
    unsigned cycles = (argc > 1) ? (unsigned)atoi(argv[1]) : 2000;
    double none, held, reopen, ratio;
    void *holder;

    if (cycles == 0) {
        fprintf(stderr, "usage: %s [CYCLES]\n", argv[0]);
        return 2;
    }

    /* The first call opens the machine; not timed */
    if ((gpumem_device_malloc(&holder, API_CYCLE_SIZE) != 0) ||
        (gpumem_device_free(holder) != 0)) {
        fprintf(stderr, "api_cycle_bench: cannot allocate device memory\n");
        return 2;
    }

    none = api_cycle_run(cycles, 0);
    if (gpumem_device_malloc(&holder, API_CYCLE_SIZE) != 0) {
        fprintf(stderr, "api_cycle_bench: cannot allocate device memory\n");
        return 2;
    }
    held = api_cycle_run(cycles, 0);
    gpumem_device_free(holder);
    reopen = api_cycle_run(API_CYCLE_REOPENS, 1);

    ratio = none / held;
    printf("%-40s %10.2f us\n", "malloc/free, none held", none);
    printf("%-40s %10.2f us\n", "malloc/free, one held", held);
    printf("%-40s %10.2f us\n", "malloc/free/reset (reopens the machine)",
           reopen);
    printf("none held / one held: %.2f (goal <= %.1f): %s\n", ratio,
           API_CYCLE_GOAL, (ratio <= API_CYCLE_GOAL) ? "met" : "missed");
    return (ratio <= API_CYCLE_GOAL) ? 0 : 1;
}
