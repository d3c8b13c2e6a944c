/**
 * gpumem MPI example: latency and bandwidth ping-pong of device buffers
 * between two ranks, every byte checked. Device memory comes from gpumem.h;
 * Open MPI's pml ucx hands the buffers to UCX, which moves them with the
 * plugin's transports. "host" as third argument takes host buffers instead,
 * the same program, for comparison (bench/ipc_bench.sh). Only the messages
 * are timed: filling and checking the buffers are not.
 *
 *   mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any \
 *          --mca pml_ucx_devices any -x UCX_TLS=posix,gpumemcpy,gpumemipc \
 *          -x LD_PRELOAD=<libuct_gpumem.so> \
 *          ./gpumem_mpi_pingpong [max] [iters] [device|host]
 *
 * See file LICENSE for terms.
 */

#include <gpumem/gpumem.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void fill(unsigned char *bytes, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        bytes[i] = (unsigned char)((i * 31) ^ seed ^ (i >> 11));
    }
}

/* A size with an optional k, m or g suffix */
static size_t parse_size(const char *str)
{
    char *end;
    size_t size = strtoul(str, &end, 0);

    switch (*end) {
    case 'k': case 'K': return size << 10;
    case 'm': case 'M': return size << 20;
    case 'g': case 'G': return size << 30;
    default:            return size;
    }
}

int main(int argc, char **argv)
{
    size_t max_size = (argc > 1) ? parse_size(argv[1]) : (1ul << 22);
    int iters       = (argc > 2) ? atoi(argv[2]) : 20;
    int on_host     = (argc > 3) && !strcmp(argv[3], "host");
    unsigned long long ipc_bytes, all_ipc_bytes = 0;
    unsigned char *host, *expect;
    int rank, size_ranks, count, i, errors = 0, all_errors;
    double start, elapsed;
    size_t size;
    void *device;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size_ranks);
    if (size_ranks != 2) {
        if (rank == 0) {
            fprintf(stderr, "gpumem_mpi_pingpong: run with 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Each rank on its own GPU where there are two */
    if ((gpumem_device_count(&count) != 0) || (count == 0)) {
        fprintf(stderr, "gpumem_mpi_pingpong: no GPU\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    gpumem_device_set(rank % count);

    host   = malloc(max_size);
    expect = malloc(max_size);
    device = on_host ? malloc(max_size) : NULL;
    if ((host == NULL) || (expect == NULL) ||
        (on_host ? (device == NULL) :
                   (gpumem_device_malloc(&device, max_size) != 0))) {
        fprintf(stderr, "gpumem_mpi_pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (rank == 0) {
        printf("# %s buffers\n", on_host ? "host" : "device");
        printf("# %-10s %10s %14s %12s\n", "bytes", "iters", "latency (us)",
               "MB/s");
    }

    for (size = 1; size <= max_size; size *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        elapsed = 0;
        for (i = 0; i < iters; ++i) {
            fill(expect, size, (unsigned)(size * 7 + i));
            if (rank == 0) {
                gpumem_device_memcpy(device, expect, size);
                start = MPI_Wtime();
                MPI_Send(device, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(device, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                elapsed += MPI_Wtime() - start;
            } else {
                MPI_Recv(device, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                /* Sending leaves the buffer as it is: checked after */
                MPI_Send(device, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }

            /* What arrived in the buffer is checked byte by byte */
            gpumem_device_memcpy(host, device, size);
            if (memcmp(host, expect, size) != 0) {
                fprintf(stderr, "rank %d: %zu bytes arrived wrong\n", rank,
                        size);
                ++errors;
            }
        }
        if (rank == 0) {
            printf("  %-10zu %10d %14.2f %12.1f\n", size, iters,
                   elapsed * 1e6 / (2.0 * iters),
                   (2.0 * size * iters) / elapsed / 1e6);
        }
    }

    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* What went zero-copy: the bytes gpumemipc moved from and to the peer's
     * memory, both ranks' */
    if (gpumem_ipc_bytes(&ipc_bytes) != 0) {
        ipc_bytes = 0;
    }
    MPI_Reduce(&ipc_bytes, &all_ipc_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
               0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("gpumem_mpi_pingpong: gpumemipc moved %llu bytes zero-copy\n",
               all_ipc_bytes);
        printf("gpumem_mpi_pingpong: %s (%d transfers wrong)\n",
               all_errors ? "FAILED" : "passed, every byte checked",
               all_errors);
    }

    if (on_host) {
        free(device);
    } else {
        gpumem_device_free(device);
    }
    free(expect);
    free(host);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
