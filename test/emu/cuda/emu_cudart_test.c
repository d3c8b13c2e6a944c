/**
 * gpumem emulated CUDA runtime: a program built against the toolkit's
 * libcudart, as UCX's cuda transports are, run on the emulated libcudart
 * (LD_LIBRARY_PATH): its calls bind by soname and symbol version, and
 * each does what the runtime's documentation says. Exits non-zero on the
 * first wrong answer, naming it.
 *
 * See file LICENSE for terms.
 */

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdint.h>
#include "emu_expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *emu_expect_program = "emu_cudart_test";
int emu_expect_failures;

#define EXPECT_CUDA(_expected, _call) \
    do { \
        cudaError_t _err = (_call); \
        EXPECT(_err == (_expected), "%s gave %s (%s), wanted %s", #_call, \
               cudaGetErrorName(_err), cudaGetErrorString(_err), \
               cudaGetErrorName(_expected)); \
    } while (0)

#define SIZE (3 * 1024 * 1024 + 5)

static void fill(unsigned char *bytes, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        bytes[i] = (unsigned char)(seed + i * 7 + (i >> 11));
    }
}

/* Copies both ways, synchronous and in a stream with an event, and
 * cudaMemset, every byte checked */
static void test_copies(int device)
{
    unsigned char *host = malloc(SIZE), *back = malloc(SIZE);
    struct cudaPointerAttributes attr;
    cudaStream_t stream;
    cudaEvent_t event;
    void *dev = NULL;
    size_t i;

    EXPECT_CUDA(cudaSuccess, cudaSetDevice(device));
    EXPECT_CUDA(cudaSuccess, cudaMalloc(&dev, SIZE));
    EXPECT(dev != NULL, "no address");

    EXPECT_CUDA(cudaSuccess, cudaPointerGetAttributes(&attr, dev));
    EXPECT(attr.type == cudaMemoryTypeDevice, "type %d", attr.type);
    EXPECT(attr.device == device, "device %d, wanted %d", attr.device,
           device);
    EXPECT(attr.devicePointer == dev, "device pointer %p", attr.devicePointer);

    fill(host, SIZE, (unsigned)device);
    EXPECT_CUDA(cudaSuccess, cudaMemcpy(dev, host, SIZE,
                                        cudaMemcpyHostToDevice));
    memset(back, 0, SIZE);
    EXPECT_CUDA(cudaSuccess, cudaMemcpy(back, dev, SIZE,
                                        cudaMemcpyDeviceToHost));
    EXPECT(memcmp(host, back, SIZE) == 0, "synchronous copies differ");

    EXPECT_CUDA(cudaSuccess, cudaStreamCreateWithFlags(&stream,
                                                      cudaStreamNonBlocking));
    EXPECT_CUDA(cudaSuccess, cudaEventCreateWithFlags(&event,
                                                     cudaEventDisableTiming));
    fill(host, SIZE, 99);
    EXPECT_CUDA(cudaSuccess, cudaMemcpyAsync(dev, host, SIZE,
                                             cudaMemcpyDefault, stream));
    EXPECT_CUDA(cudaSuccess, cudaMemcpyAsync(back, dev, SIZE,
                                             cudaMemcpyDefault, stream));
    EXPECT_CUDA(cudaSuccess, cudaEventRecord(event, stream));
    while (cudaEventQuery(event) == cudaErrorNotReady) {
    }
    EXPECT_CUDA(cudaSuccess, cudaEventQuery(event));
    EXPECT(memcmp(host, back, SIZE) == 0, "copies in a stream differ");

    EXPECT_CUDA(cudaSuccess, cudaMemset(dev, 0xa5, SIZE));
    EXPECT_CUDA(cudaSuccess, cudaMemcpy(back, dev, SIZE, cudaMemcpyDefault));
    for (i = 0; (i < SIZE) && (back[i] == 0xa5); ++i) {
    }
    EXPECT(i == SIZE, "cudaMemset: byte %zu is 0x%x", i, back[i]);

    EXPECT_CUDA(cudaSuccess, cudaEventDestroy(event));
    EXPECT_CUDA(cudaSuccess, cudaStreamSynchronize(stream));
    EXPECT_CUDA(cudaSuccess, cudaStreamDestroy(stream));
    EXPECT_CUDA(cudaSuccess, cudaFree(dev));
    free(back);
    free(host);
}

/* Host memory: allocated pinned, registered, and plain */
static void test_host(void)
{
    struct cudaPointerAttributes attr;
    size_t size = 1 << 20;
    void *pinned = NULL, *plain = malloc(size);

    EXPECT_CUDA(cudaSuccess, cudaMallocHost(&pinned, size));
    EXPECT_CUDA(cudaSuccess, cudaPointerGetAttributes(&attr, pinned));
    EXPECT(attr.type == cudaMemoryTypeHost, "pinned: type %d", attr.type);
    EXPECT_CUDA(cudaSuccess, cudaFreeHost(pinned));

    EXPECT_CUDA(cudaSuccess, cudaPointerGetAttributes(&attr, plain));
    EXPECT(attr.type == cudaMemoryTypeUnregistered, "plain: type %d",
           attr.type);
    EXPECT_CUDA(cudaSuccess, cudaHostRegister(plain, size,
                                              cudaHostRegisterPortable));
    EXPECT_CUDA(cudaErrorHostMemoryAlreadyRegistered,
                cudaHostRegister(plain, size, cudaHostRegisterPortable));
    EXPECT_CUDA(cudaSuccess, cudaPointerGetAttributes(&attr, plain));
    EXPECT(attr.type == cudaMemoryTypeHost, "registered: type %d",
           attr.type);
    EXPECT_CUDA(cudaSuccess, cudaHostUnregister(plain));
    free(plain);
}

/* Managed memory: one address the CPU writes and the device copies from;
 * pitched rows */
static void test_managed_and_pitch(void)
{
    unsigned char *managed = NULL, *back = malloc(SIZE);
    struct cudaPointerAttributes attr;
    size_t pitch = 0;
    void *dev = NULL;

    EXPECT_CUDA(cudaSuccess, cudaSetDevice(1));
    EXPECT_CUDA(cudaSuccess, cudaMallocManaged((void**)&managed, SIZE,
                                               cudaMemAttachGlobal));
    EXPECT_CUDA(cudaSuccess, cudaPointerGetAttributes(&attr, managed));
    EXPECT(attr.type == cudaMemoryTypeManaged, "managed: type %d", attr.type);
    EXPECT(attr.device == 1, "managed: device %d", attr.device);
    EXPECT(attr.hostPointer == managed, "managed: host pointer %p",
           attr.hostPointer);

    fill(managed, SIZE, 5);
    EXPECT_CUDA(cudaSuccess, cudaMalloc(&dev, SIZE));
    EXPECT_CUDA(cudaSuccess, cudaMemcpy(dev, managed, SIZE,
                                        cudaMemcpyDefault));
    memset(managed, 0, SIZE);
    EXPECT_CUDA(cudaSuccess, cudaMemcpy(managed, dev, SIZE,
                                        cudaMemcpyDefault));
    fill(back, SIZE, 5);
    EXPECT(memcmp(managed, back, SIZE) == 0,
           "managed memory copied to the device and back differs");
    EXPECT_CUDA(cudaSuccess, cudaFree(managed));
    EXPECT_CUDA(cudaSuccess, cudaFree(dev));

    EXPECT_CUDA(cudaSuccess, cudaMallocPitch(&dev, &pitch, 100, 8));
    EXPECT(pitch == 512, "pitch %zu of rows of 100 bytes", pitch);
    EXPECT_CUDA(cudaSuccess, cudaMemset(dev, 7, pitch * 8));
    memset(back, 0, pitch * 8);
    EXPECT_CUDA(cudaSuccess, cudaMemcpy(back, dev, pitch * 8,
                                        cudaMemcpyDefault));
    EXPECT(back[0] == 7 && back[pitch * 8 - 1] == 7 &&
           memchr(back, 0, pitch * 8) == NULL,
           "cudaMemset of the pitched rows left other bytes");
    EXPECT_CUDA(cudaSuccess, cudaFree(dev));
    EXPECT_CUDA(cudaErrorInvalidValue,
                cudaMallocManaged((void**)&managed, 0, cudaMemAttachGlobal));
    free(back);
}

/* cudaDeviceReset(), as a program calls it at exit: the runtime lets go of
 * the device's primary context and makes it again at its next call, and a
 * device the runtime never used resets too */
static void test_reset(void)
{
    unsigned flags;
    int active = -1;
    void *dev;

    EXPECT_CUDA(cudaSuccess, cudaSetDevice(0));
    EXPECT_CUDA(cudaSuccess, cudaMalloc(&dev, 4096));
    EXPECT(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS &&
           active == 1, "device 0's primary context is not active in use");
    EXPECT_CUDA(cudaSuccess, cudaDeviceReset());
    EXPECT(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS &&
           active == 0, "device 0's primary context is active after "
           "cudaDeviceReset");
    EXPECT_CUDA(cudaSuccess, cudaDeviceReset());
    EXPECT_CUDA(cudaSuccess, cudaMalloc(&dev, 4096));
    EXPECT_CUDA(cudaSuccess, cudaMemset(dev, 1, 4096));
    EXPECT_CUDA(cudaSuccess, cudaFree(dev));
    EXPECT_CUDA(cudaSuccess, cudaDeviceReset());
}

int main(void)
{
    int count = 0, device = -1, version = 0;
    void *ptr = NULL;

    EXPECT_CUDA(cudaSuccess, cudaGetDeviceCount(&count));
    EXPECT(count >= 2, "%d devices, the emulated machine has more", count);
    EXPECT_CUDA(cudaSuccess, cudaRuntimeGetVersion(&version));
    EXPECT(version == CUDART_VERSION, "runtime version %d", version);
    EXPECT_CUDA(cudaSuccess, cudaDriverGetVersion(&version));
    EXPECT(version >= CUDART_VERSION, "driver version %d", version);

    /* The device of a thread, and what an invalid one gives */
    EXPECT_CUDA(cudaSuccess, cudaGetDevice(&device));
    EXPECT(device == 0, "first device %d", device);
    EXPECT_CUDA(cudaErrorInvalidDevice, cudaSetDevice(count));
    EXPECT_CUDA(cudaErrorInvalidDevice, cudaGetLastError());
    EXPECT_CUDA(cudaSuccess, cudaGetLastError());
    EXPECT_CUDA(cudaSuccess, cudaSetDevice(1));
    EXPECT_CUDA(cudaSuccess, cudaGetDevice(&device));
    EXPECT(device == 1, "device %d after cudaSetDevice(1)", device);

    test_copies(0);
    test_copies(1);
    test_host();
    test_managed_and_pitch();
    test_reset();

    /* Errors: what the runtime says of wrong arguments and of what the
     * emulation does not have */
    EXPECT_CUDA(cudaErrorInvalidValue, cudaMalloc(NULL, 4096));
    EXPECT_CUDA(cudaSuccess, cudaFree(NULL));
    EXPECT(cudaFree((void*)(uintptr_t)0x1000) != cudaSuccess,
           "freeing an address never allocated succeeded");
    EXPECT_CUDA(cudaErrorInvalidValue, cudaMallocManaged(&ptr, 4096, 4));
    EXPECT_CUDA(cudaErrorMemoryAllocation, cudaMalloc(&ptr, SIZE_MAX / 2));

    if (emu_expect_result() != 0) {
        return 1;
    }
    printf("emu_cudart_test: the toolkit's runtime calls, on the emulated "
           "libcudart.so.%d: every answer right\n", CUDART_VERSION / 1000);
    return 0;
}
