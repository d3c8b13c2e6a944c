/**
 * topo_bench: times all-pairs gpumem_topo_reaches() over a topology's GPUs,
 * against a memcpy of as many reach structs measured in the same run.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gpumem/topo/topo.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define TOPO_BENCH_PASSES      2000
#define TOPO_BENCH_WARMUP      50
#define TOPO_BENCH_GOAL_US     1000.0 /* All pairs under 1 ms after load */


/* What one timed loop did, per pass */
typedef struct topo_bench_result {
    double min_us;
    double median_us;
    double mean_us;
} topo_bench_result_t;


/* Kept so that the compiler cannot drop the work being timed */
static volatile unsigned long topo_bench_sink;


static double topo_bench_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ts.tv_sec * 1e6) + (ts.tv_nsec / 1e3);
}

static int topo_bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a;
    double y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

static void topo_bench_summarize(double *samples, unsigned count,
                                 topo_bench_result_t *result)
{
    double sum = 0;
    unsigned i;

    qsort(samples, count, sizeof(*samples), topo_bench_cmp_double);
    for (i = 0; i < count; ++i) {
        sum += samples[i];
    }

    result->min_us    = samples[0];
    result->median_us = samples[count / 2];
    result->mean_us   = sum / count;
}

/* One pass over the ordered pairs of distinct GPUs; the number that reach */
static unsigned topo_bench_pass(const gpumem_topo_t *topo, int dma)
{
    gpumem_topo_verdict_t verdict;
    unsigned a, b, count = 0;

    for (a = 0; a < topo->num_gpus; ++a) {
        for (b = 0; b < topo->num_gpus; ++b) {
            if (a == b) {
                continue;
            }
            count += dma ?
                     gpumem_topo_dma_reaches(&topo->devs[a].reach,
                                             &topo->devs[b].reach, 0,
                                             &verdict) :
                     gpumem_topo_reaches(&topo->devs[a].reach,
                                         &topo->devs[b].reach, 0, &verdict);
        }
    }
    return count;
}

static void topo_bench_verdicts(const gpumem_topo_t *topo, int dma,
                                unsigned passes, double *samples,
                                topo_bench_result_t *result,
                                unsigned *reached_p)
{
    unsigned i, reached = 0;
    double start;

    for (i = 0; i < TOPO_BENCH_WARMUP; ++i) {
        topo_bench_sink += topo_bench_pass(topo, dma);
    }

    for (i = 0; i < passes; ++i) {
        start      = topo_bench_now_us();
        reached    = topo_bench_pass(topo, dma);
        samples[i] = topo_bench_now_us() - start;
        topo_bench_sink += reached;
    }

    topo_bench_summarize(samples, passes, result);
    *reached_p = reached;
}

/* The peer: copying one reach struct per verdict, the least a pass that
 * looked at every pair's facts could cost */
static void topo_bench_memcpy(gpumem_topo_reach_t *dst,
                              const gpumem_topo_reach_t *src, unsigned count,
                              unsigned passes, double *samples,
                              topo_bench_result_t *result)
{
    size_t size = count * sizeof(*src);
    unsigned i;
    double start;

    for (i = 0; i < TOPO_BENCH_WARMUP; ++i) {
        memcpy(dst, src, size);
        topo_bench_sink += ((const unsigned char*)dst)[i % size];
    }

    for (i = 0; i < passes; ++i) {
        start      = topo_bench_now_us();
        memcpy(dst, src, size);
        samples[i] = topo_bench_now_us() - start;
        topo_bench_sink += ((const unsigned char*)dst)[(i * 4099) % size];
    }

    topo_bench_summarize(samples, passes, result);
}

static void topo_bench_print(const char *what, unsigned pairs,
                             const topo_bench_result_t *result)
{
    printf("%-34s median %9.2f us/pass (min %.2f, mean %.2f), "
           "%7.1f ns/verdict\n", what, result->median_us, result->min_us,
           result->mean_us, (result->median_us * 1e3) / pairs);
}

static int topo_bench_parse_passes(const char *str, unsigned *passes_p)
{
    unsigned long value;
    char *end;

    errno = 0;
    value = strtoul(str, &end, 10);
    if ((errno != 0) || (*end != '\0') || (value == 0) ||
        (value > (UINT_MAX / sizeof(double)))) {
        return -1;
    }

    *passes_p = value;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned passes          = TOPO_BENCH_PASSES;
    gpumem_topo_reach_t *src = NULL;
    gpumem_topo_reach_t *dst = NULL;
    double *samples          = NULL;
    int ret                  = 1;
    gpumem_topo_params_t params;
    topo_bench_result_t reaches, dma, copy;
    unsigned pairs, reached, dma_reached, i;
    gpumem_topo_t *topo;
    double load_us;

    if ((argc < 2) || (argc > 4) ||
        ((argc > 2) && (topo_bench_parse_passes(argv[2], &passes) != 0))) {
        fprintf(stderr, "usage: %s TOPOLOGY.xml [PASSES] [SYSFS_ROOT]\n"
                "  times all-pairs gpumem_topo_reaches() over the GPUs "
                "(default %d passes)\n", argv[0], TOPO_BENCH_PASSES);
        return 2;
    }

    memset(&params, 0, sizeof(params));
    params.xml_path   = argv[1];
    params.sysfs_root = (argc > 3) ? argv[3] : NULL;

    load_us = topo_bench_now_us();
    if (gpumem_topo_load(&params, &topo) != UCS_OK) {
        fprintf(stderr, "topo_bench: cannot load the topology of %s\n",
                argv[1]);
        return 1;
    }
    load_us = topo_bench_now_us() - load_us;

    if (topo->num_gpus < 2) {
        fprintf(stderr, "topo_bench: %s has %u GPU(s), no pair to time\n",
                argv[1], topo->num_gpus);
        goto out_destroy;
    }
    pairs = topo->num_gpus * (topo->num_gpus - 1);

    samples = malloc(passes * sizeof(*samples));
    src     = malloc(pairs * sizeof(*src));
    dst     = malloc(pairs * sizeof(*dst));
    if ((samples == NULL) || (src == NULL) || (dst == NULL)) {
        fprintf(stderr, "topo_bench: no memory for %u passes\n", passes);
        goto out_free;
    }

    /* Real facts in the copied array, as a pass reads them */
    for (i = 0; i < pairs; ++i) {
        src[i] = topo->devs[i % topo->num_gpus].reach;
    }

    topo_bench_verdicts(topo, 0, passes, samples, &reaches, &reached);
    topo_bench_verdicts(topo, 1, passes, samples, &dma, &dma_reached);
    topo_bench_memcpy(dst, src, pairs, passes, samples, &copy);

    printf("topology: %s\n"
           "  %u GPUs, %u ordered pairs, %u passes, %zu bytes a reach\n"
           "  load: %.1f ms, once (not part of the goal)\n",
           argv[1], topo->num_gpus, pairs, passes,
           sizeof(gpumem_topo_reach_t), load_us / 1e3);
    topo_bench_print("all pairs, reaches():", pairs, &reaches);
    printf("  (%u of %u pairs reach)\n", reached, pairs);
    topo_bench_print("all pairs, dma_reaches() (bus):", pairs, &dma);
    printf("  (%u of %u pairs reach by the bus rules alone)\n", dma_reached,
           pairs);
    printf("peer: memcpy of %u reach structs (%zu bytes):\n", pairs,
           pairs * sizeof(*src));
    topo_bench_print("", pairs, &copy);
    printf("ratio reaches() / memcpy: %.3f, dma_reaches() / memcpy: %.3f\n",
           reaches.median_us / copy.median_us,
           dma.median_us / copy.median_us);

    /* The goal is the question a process asks; the bus rules alone are
     * shown for scale, as a machine without a fabric would pay them */
    ret = (reaches.median_us < TOPO_BENCH_GOAL_US) ? 0 : 1;
    printf("goal: all pairs of reaches() under %.0f us after load: %s "
           "(bus rules alone: %s)\n", TOPO_BENCH_GOAL_US,
           (ret == 0) ? "met" : "NOT MET",
           (dma.median_us < TOPO_BENCH_GOAL_US) ? "under" : "OVER");

out_free:
    free(dst);
    free(src);
    free(samples);
out_destroy:
    gpumem_topo_destroy(topo);
    return ret;
}
