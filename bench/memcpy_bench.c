/**
 * gpumem benchmark: single-thread memcpy bandwidth between two host buffers,
 * the peer that bench/ipc_bench.sh sets the IPC transport against.
 *
 *   memcpy_bench SIZE [ITERATIONS]
 *
 * Prints "SIZE MB/s": the best of five runs of ITERATIONS copies (warm
 * buffers, first touched before timing), in bytes copied per second / 2^20
 * as ucx_perftest counts its MB/s.
 *
 * See file LICENSE for terms.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static double memcpy_bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

int main(int argc, char **argv)
{
    size_t size = (argc > 1) ? strtoul(argv[1], NULL, 0) : (4ul << 20);
    long iters  = (argc > 2) ? atol(argv[2]) : 200;
    double best = 0, start, rate;
    volatile unsigned char sink;
    char *src, *dst;
    int run;
    long i;

    if ((size == 0) || (iters <= 0)) {
        fprintf(stderr, "usage: memcpy_bench SIZE [ITERATIONS]\n");
        return 2;
    }

    src = malloc(size);
    dst = malloc(size);
    if ((src == NULL) || (dst == NULL)) {
        fprintf(stderr, "memcpy_bench: cannot allocate 2 x %zu bytes\n",
                size);
        return 1;
    }
    memset(src, 0x5a, size);
    memset(dst, 0, size);

    for (run = 0; run < 5; ++run) {
        start = memcpy_bench_now();
        for (i = 0; i < iters; ++i) {
            memcpy(dst, src, size);
            /* The copy must happen: read a byte of it back */
            sink = ((volatile unsigned char*)dst)[i % size];
        }
        rate = (double)size * iters / (memcpy_bench_now() - start) /
               (1024.0 * 1024.0);
        best = (rate > best) ? rate : best;
    }
    (void)sink;

    printf("%zu %.1f\n", size, best);
    free(src);
    free(dst);
    return 0;
}
