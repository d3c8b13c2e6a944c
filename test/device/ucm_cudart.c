/**
 * The application's own CUDA allocations raise UCM memory-type events once
 * the plugin is loaded (run with LD_PRELOAD of libuct_gpumem.so): an
 * allocation event with its size, a free event with the same range, for
 * cudaMalloc/cudaFree and cuMemAlloc/cuMemFree, and for an address reused
 * by a new allocation, the free before the new allocation.
 *
 * Exits 0 when every event came as expected, 1 otherwise, 2 without a
 * device.
 *
 * See file LICENSE for terms.
 */

#include <ucm/api/ucm.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>


#define MAX_EVENTS 16

typedef struct {
    int    type;      /* 'a' or 'f' */
    void   *address;
    size_t size;
} ucm_cudart_event_t;

static ucm_cudart_event_t ucm_cudart_events[MAX_EVENTS];
static int                ucm_cudart_count;


static void ucm_cudart_record(ucm_event_type_t type, ucm_event_t *event,
                              void *arg)
{
    (void)arg;
    if (ucm_cudart_count < MAX_EVENTS) {
        ucm_cudart_events[ucm_cudart_count].type    =
                (type == UCM_EVENT_MEM_TYPE_ALLOC) ? 'a' : 'f';
        ucm_cudart_events[ucm_cudart_count].address = event->mem_type.address;
        ucm_cudart_events[ucm_cudart_count].size    = event->mem_type.size;
    }
    ++ucm_cudart_count;
}

/* Event @a i is @a type of [address, address + size) */
static int ucm_cudart_expect(int i, int type, void *address, size_t size,
                             const char *what)
{
    if ((i >= ucm_cudart_count) || (ucm_cudart_events[i].type != type) ||
        (ucm_cudart_events[i].address != address) ||
        (ucm_cudart_events[i].size != size)) {
        fprintf(stderr, "FAIL: %s: event %d is not %c %p %zu (%d events)\n",
                what, i, type, address, size, ucm_cudart_count);
        return 1;
    }
    printf("ok: %s: %c %p %zu\n", what, type, address, size);
    return 0;
}

int main(void)
{
    const size_t size = 3ul << 20;
    CUdeviceptr dptr;
    void *ptr, *again;
    int failed = 0;
    int count;

    if ((cudaGetDeviceCount(&count) != cudaSuccess) || (count == 0)) {
        fprintf(stderr, "no CUDA device\n");
        return 2;
    }

    if (ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                              UCM_EVENT_MEM_TYPE_FREE, 0, ucm_cudart_record,
                              NULL) != UCS_OK) {
        fprintf(stderr, "FAIL: ucm_set_event_handler\n");
        return 1;
    }

    if (cudaMalloc(&ptr, size) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaMalloc\n");
        return 1;
    }
    failed |= ucm_cudart_expect(0, 'a', ptr, size, "cudaMalloc");
    cudaFree(ptr);
    failed |= ucm_cudart_expect(1, 'f', ptr, size, "cudaFree");

    /* A new allocation, often at the freed address: its own event */
    if (cudaMalloc(&again, size) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaMalloc again\n");
        return 1;
    }
    failed |= ucm_cudart_expect(2, 'a', again, size, "cudaMalloc again");
    cudaFree(again);
    failed |= ucm_cudart_expect(3, 'f', again, size, "cudaFree again");

    if (cuMemAlloc(&dptr, size) != CUDA_SUCCESS) {
        fprintf(stderr, "FAIL: cuMemAlloc\n");
        return 1;
    }
    failed |= ucm_cudart_expect(4, 'a', (void*)dptr, size, "cuMemAlloc");
    cuMemFree(dptr);
    failed |= ucm_cudart_expect(5, 'f', (void*)dptr, size, "cuMemFree");

    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                            UCM_EVENT_MEM_TYPE_FREE, ucm_cudart_record, NULL);
    printf("%s\n", failed ? "FAIL" : "passed");
    return failed;
}
