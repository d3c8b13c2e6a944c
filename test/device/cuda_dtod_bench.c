/**
 * Device-to-device copy bandwidth of one GPU through the plugin
 * (gpumem_device_memcpy on the cuda driver) against the driver's own
 * cuMemcpyDtoD, in the same run, on buffers of the same size.
 *
 *   cuda_dtod_bench [SIZE_MIB [ITERATIONS]]
 *
 * Each copy is waited for before the next, on both sides: the plugin's
 * memcpy returns when the bytes have landed, and the baseline synchronizes
 * its context after each copy. The plugin's figure includes what its call
 * costs besides the copy (finding the GPUs, the event it polls), which
 * large buffers make small. Bytes are counted once per copy. Exits 0 with both figures, 1 if a copy
 * failed or moved the wrong bytes, 2 without a CUDA device.
 *
 * See file LICENSE for terms.
 */

#include <gpumem/gpumem.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


typedef struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice*, int);
    CUresult (*ctx_retain)(CUcontext*, CUdevice);
    CUresult (*ctx_set)(CUcontext);
    CUresult (*ctx_sync)(void);
    CUresult (*alloc)(CUdeviceptr*, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t);
} bench_cuda_t;


static double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bench_cuda_open(bench_cuda_t *cu)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);

    if (lib == NULL) {
        fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
        return -1;
    }

    *(void**)&cu->init       = dlsym(lib, "cuInit");
    *(void**)&cu->device_get = dlsym(lib, "cuDeviceGet");
    *(void**)&cu->ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    *(void**)&cu->ctx_set    = dlsym(lib, "cuCtxSetCurrent");
    *(void**)&cu->ctx_sync   = dlsym(lib, "cuCtxSynchronize");
    *(void**)&cu->alloc      = dlsym(lib, "cuMemAlloc_v2");
    *(void**)&cu->free       = dlsym(lib, "cuMemFree_v2");
    *(void**)&cu->dtod       = dlsym(lib, "cuMemcpyDtoD_v2");
    if ((cu->init == NULL) || (cu->device_get == NULL) ||
        (cu->ctx_retain == NULL) || (cu->ctx_set == NULL) ||
        (cu->ctx_sync == NULL) || (cu->alloc == NULL) ||
        (cu->free == NULL) || (cu->dtod == NULL)) {
        fprintf(stderr, "libcuda.so.1 lacks a driver API call\n");
        return -1;
    }
    return 0;
}

/* GB/s of @a iters copies of @a size bytes through the plugin */
static double bench_plugin(size_t size, int iters)
{
    unsigned char check[4096];
    void *src, *dst;
    double start, elapsed;
    gpumem_result_t ret;
    int i;

    if ((gpumem_device_malloc(&src, size) != 0) ||
        (gpumem_device_malloc(&dst, size) != 0)) {
        fprintf(stderr, "gpumem_device_malloc of %zu bytes failed\n", size);
        return -1;
    }

    /* The last bytes tell whether the copy landed (a memset of the whole
     * buffers through the plugin's 4 KiB staging would take longer than
     * the measurement) */
    gpumem_device_memset((char*)src + size - sizeof(check), 0x5a,
                         sizeof(check));
    gpumem_device_memset((char*)dst + size - sizeof(check), 0,
                         sizeof(check));

    ret = gpumem_device_memcpy(dst, src, size); /* warm-up */
    for (i = 0, start = bench_now(); (ret == 0) && (i < iters); ++i) {
        ret = gpumem_device_memcpy(dst, src, size);
    }
    elapsed = bench_now() - start;
    if (ret != 0) {
        fprintf(stderr, "gpumem_device_memcpy: %s\n",
                gpumem_result_string(ret));
        return -1;
    }

    /* The last bytes landed where they should */
    ret = gpumem_device_memcpy(check, (char*)dst + size - sizeof(check),
                               sizeof(check));
    for (i = 0; (ret == 0) && (i < (int)sizeof(check)); ++i) {
        if (check[i] != 0x5a) {
            fprintf(stderr, "byte %zu of the copy is 0x%x, not 0x5a\n",
                    size - sizeof(check) + i, check[i]);
            return -1;
        }
    }

    gpumem_device_free(src);
    gpumem_device_free(dst);
    return (double)size * iters / elapsed / 1e9;
}

/* GB/s of @a iters cuMemcpyDtoD of @a size bytes, each synchronized */
static double bench_driver(bench_cuda_t *cu, size_t size, int iters)
{
    CUdeviceptr src, dst;
    double start, elapsed;
    CUcontext ctx;
    CUdevice dev;
    CUresult res;
    int i;

    if ((cu->init(0) != CUDA_SUCCESS) ||
        (cu->device_get(&dev, 0) != CUDA_SUCCESS) ||
        (cu->ctx_retain(&ctx, dev) != CUDA_SUCCESS) ||
        (cu->ctx_set(ctx) != CUDA_SUCCESS) ||
        (cu->alloc(&src, size) != CUDA_SUCCESS) ||
        (cu->alloc(&dst, size) != CUDA_SUCCESS)) {
        fprintf(stderr, "cuda setup for %zu bytes failed\n", size);
        return -1;
    }

    res = cu->dtod(dst, src, size); /* warm-up */
    cu->ctx_sync();
    for (i = 0, start = bench_now(); (res == CUDA_SUCCESS) && (i < iters);
         ++i) {
        res = cu->dtod(dst, src, size);
        if (res == CUDA_SUCCESS) {
            res = cu->ctx_sync();
        }
    }
    elapsed = bench_now() - start;

    cu->free(src);
    cu->free(dst);
    if (res != CUDA_SUCCESS) {
        fprintf(stderr, "cuMemcpyDtoD failed: CUresult %d\n", (int)res);
        return -1;
    }
    return (double)size * iters / elapsed / 1e9;
}

int main(int argc, char **argv)
{
    size_t size = ((argc > 1) ? strtoul(argv[1], NULL, 0) : 1024) << 20;
    int iters   = (argc > 2) ? atoi(argv[2]) : 20;
    double plugin, driver;
    bench_cuda_t cu;
    int count;

    if ((size == 0) || (iters <= 0)) {
        fprintf(stderr, "usage: %s [SIZE_MIB [ITERATIONS]]\n", argv[0]);
        return 1;
    }

    /* The plugin on the real GPU, never silently on the emu */
    setenv("UCX_GPUMEM_DRIVER", "cuda", 0);
    if ((bench_cuda_open(&cu) != 0) || (gpumem_device_count(&count) != 0) ||
        (count == 0)) {
        fprintf(stderr, "no CUDA device for the plugin\n");
        return 2;
    }

    plugin = bench_plugin(size, iters);
    driver = bench_driver(&cu, size, iters);
    if ((plugin < 0) || (driver < 0)) {
        return 1;
    }

    printf("size %zu MiB, %d copies each, device to device on GPU 0\n",
           size >> 20, iters);
    printf("plugin gpumem_device_memcpy: %8.1f GB/s\n", plugin);
    printf("driver cuMemcpyDtoD:         %8.1f GB/s\n", driver);
    printf("plugin / driver:             %8.2f\n", plugin / driver);
    return 0;
}
