/**
 * gpumem cuda driver: the driver's state, shared by its files.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_CUDA_INT_H_
#define GPUMEM_CUDA_INT_H_

#include "cuda_api.h"
#include "cuda_driver.h"
#include "cuda_handle.h"

#include <ucs/datastruct/list.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <inttypes.h>
#include <pthread.h>


/* The page sizes of the memory core (seed 003), which an imported
 * allocation is described with */
#define GPUMEM_CUDA_SMALL_PAGE  (4ul << 10)
#define GPUMEM_CUDA_LARGE_PAGE  (2ul << 20)


typedef struct gpumem_cuda_driver gpumem_cuda_driver_t;
typedef struct gpumem_cuda_opened gpumem_cuda_opened_t;


/**
 * One CUDA device, with its primary context and the stream of its copies.
 */
typedef struct gpumem_cuda_gpu {
    gpumem_cuda_driver_t *driver;
    unsigned             index;       /* In the driver, PCI address order */
    CUdevice             device;
    int                  ordinal;     /* CUDA's device number */
    CUcontext            ctx;         /* The primary context, retained */
    CUstream             stream;      /* Copies of this GPU */
    size_t               vram_size;
    size_t               bar_size;
    int                  rdma_vmm;    /* GPUDirect RDMA flag of cuMemCreate */
    int                  released;    /* release() was called */
#ifdef GPUMEM_FAULT_INJECTION
    unsigned             faults[GPUMEM_DRIVER_FAULT_KERNEL_REFUSES + 1];
#endif
    pthread_mutex_t      events_lock;
    CUevent              *events;     /* Idle copy events, for reuse */
    unsigned             num_events;
    unsigned             max_events;
    char                 name[64];    /* "NVIDIA H200 0000:19:00.0" */
    gpumem_topo_reach_t  reach;
} gpumem_cuda_gpu_t;


/**
 * Device memory of a VMM allocation: created here, or imported.
 */
typedef struct gpumem_cuda_mem {
    gpumem_driver_mem_t          super;
    CUmemGenericAllocationHandle handle;
    size_t                       alloc_size;  /* Rounded to granularity */
    int                          export_fd;   /* -1 until exported */
    int                          imported;
    uint64_t                     alloc_id;    /* Unique in the process */
    uint64_t                     broker;      /* The descriptor broker
                                                 serving export_fd, or 0 */
    gpumem_cuda_opened_t         *opened;     /* Legacy IPC: its mapping */
    CUdeviceptr                  dmabuf_va;   /* 0 until dmabuf_export */
} gpumem_cuda_mem_t;


/**
 * System memory the GPUs reach: pinned by cuMemHostRegister, or allocated
 * by cuMemHostAlloc. Pinned once for every GPU (portable), counted.
 */
typedef struct gpumem_cuda_host {
    void            *addr;
    size_t          size;
    unsigned        refs;        /* pin() calls; allocations hold one */
    int             allocated;   /* cuMemHostAlloc gave it */
    ucs_list_link_t list;
} gpumem_cuda_host_t;


/**
 * Memory of another process opened from a legacy IPC handle: the driver
 * maps it once per process, at an address of its choosing, counted.
 */
struct gpumem_cuda_opened {
    int32_t         pid;         /* The exporter */
    uint64_t        buffer_id;   /* Its allocation */
    CUdeviceptr     va;          /* Where it is mapped here */
    size_t          size;
    unsigned        refs;        /* Memory objects over it */
    ucs_list_link_t list;
};


struct gpumem_cuda_driver {
    gpumem_driver_t   super;
    unsigned          num_gpus;
    gpumem_cuda_gpu_t *gpus;
    size_t            granularity;  /* Largest of the GPUs' minimum */
    pthread_mutex_t   host_lock;
    ucs_list_link_t   hosts;        /* gpumem_cuda_host_t */
    ucs_list_link_t   opened;       /* gpumem_cuda_opened_t, host_lock */
};


static UCS_F_ALWAYS_INLINE gpumem_cuda_gpu_t *
gpumem_cuda_gpu(gpumem_driver_gpu_t *gpu)
{
    return (gpumem_cuda_gpu_t*)gpu;
}

static UCS_F_ALWAYS_INLINE gpumem_driver_gpu_t *
gpumem_cuda_gpu_handle(gpumem_cuda_gpu_t *gpu)
{
    return (gpumem_driver_gpu_t*)gpu;
}

static UCS_F_ALWAYS_INLINE gpumem_cuda_mem_t *
gpumem_cuda_mem(gpumem_driver_mem_t *mem)
{
    return ucs_container_of(mem, gpumem_cuda_mem_t, super);
}


/*
 * cuda_ctx.c: the driver is a guest in the application's threads. Each
 * operation pushes the GPU's primary context over whatever the caller has
 * current for its driver calls, and pops it before it returns, on every
 * path: the caller's current context (or none) is the same after any call
 * of the driver as before. Where the caller's is the GPU's already, the
 * pair pushes and pops nothing. A failed push is logged as an error, with
 * @a what the operation, and leaves nothing to pop.
 */
ucs_status_t gpumem_cuda_ctx_push(gpumem_cuda_gpu_t *gpu, const char *what);
void gpumem_cuda_ctx_pop(gpumem_cuda_gpu_t *gpu);

#ifdef GPUMEM_FAULT_INJECTION
/* A fault a test injected (the inject_fault op), consumed */
static UCS_F_ALWAYS_INLINE int
gpumem_cuda_fault_take(gpumem_cuda_gpu_t *gpu, gpumem_driver_fault_t fault)
{
    if ((fault >= ucs_static_array_size(gpu->faults)) ||
        (gpu->faults[fault] == 0)) {
        return 0;
    }
    --gpu->faults[fault];
    return 1;
}
#else
/* Faults are injected in test builds only (--enable-fault-injection): here
 * none ever is, and the checks compile to nothing */
static UCS_F_ALWAYS_INLINE int
gpumem_cuda_fault_take(gpumem_cuda_gpu_t UCS_V_UNUSED *gpu,
                       gpumem_driver_fault_t UCS_V_UNUSED fault)
{
    return 0;
}
#endif

/* Bytes rounded up to the driver's granularity */
static UCS_F_ALWAYS_INLINE size_t
gpumem_cuda_round(gpumem_cuda_driver_t *driver, size_t size)
{
    return ucs_align_up_pow2(size, driver->granularity);
}


/* cuda_mem.c: device memory, addresses, page tables, handles, dma-buf */
ucs_status_t gpumem_cuda_mem_alloc(gpumem_driver_gpu_t *gpu, size_t size,
                                   size_t page_size, int in_bar,
                                   gpumem_driver_mem_t **mem_p);
void gpumem_cuda_mem_free(gpumem_driver_mem_t *mem);
ucs_status_t gpumem_cuda_mem_export(gpumem_driver_mem_t *mem, void *buf,
                                    size_t *length_p);
ucs_status_t gpumem_cuda_mem_import(gpumem_driver_gpu_t *gpu, const void *buf,
                                    size_t length,
                                    gpumem_driver_mem_t **mem_p);
ucs_status_t gpumem_cuda_va_reserve(gpumem_driver_gpu_t *gpu, size_t size,
                                    size_t align, uint64_t *va_p);
void gpumem_cuda_va_release(gpumem_driver_gpu_t *gpu, uint64_t va,
                            size_t size);
ucs_status_t gpumem_cuda_pt_map_vram(gpumem_driver_gpu_t *gpu, uint64_t va,
                                     gpumem_driver_mem_t *mem, size_t offset,
                                     size_t size, unsigned flags);
ucs_status_t gpumem_cuda_pt_unmap(gpumem_driver_gpu_t *gpu, uint64_t va,
                                  size_t size);
ucs_status_t gpumem_cuda_addr_export(gpumem_driver_t *driver,
                                     const void *addr, void *buf,
                                     size_t *length_p,
                                     gpumem_driver_addr_attr_t *attr);
ucs_status_t gpumem_cuda_bar_map(gpumem_driver_mem_t *mem, void **addr_p);
void gpumem_cuda_bar_unmap(void *addr, size_t size);
ucs_status_t gpumem_cuda_dmabuf_export(gpumem_driver_mem_t *mem, int *fd_p,
                                       size_t *offset_p);

/* cuda_addr.c: whether @a addr is device memory of the driver's GPUs, and
 * the allocation that holds it */
int gpumem_cuda_is_device_addr(gpumem_driver_t *driver, const void *addr,
                               unsigned *gpu_index_p);
ucs_status_t gpumem_cuda_addr_query(gpumem_driver_t *driver, const void *addr,
                                    gpumem_driver_addr_attr_t *attr);

/* cuda_host.c: system memory for the GPUs */
ucs_status_t gpumem_cuda_pin(gpumem_driver_gpu_t *gpu, void *addr,
                             size_t size);
void gpumem_cuda_unpin(gpumem_driver_gpu_t *gpu, void *addr, size_t size);
ucs_status_t gpumem_cuda_sys_alloc(gpumem_driver_gpu_t *gpu, size_t size,
                                   void **addr_p);
void gpumem_cuda_sys_free(gpumem_driver_gpu_t *gpu, void *addr, size_t size);
ucs_status_t gpumem_cuda_pt_map_host(gpumem_driver_gpu_t *gpu, uint64_t va,
                                     void *host, size_t size, unsigned flags);
int gpumem_cuda_host_find(gpumem_cuda_driver_t *driver, uint64_t va);

/* cuda_copy.c: the copy engine */
ucs_status_t gpumem_cuda_copy(gpumem_driver_gpu_t *gpu, uint64_t dst,
                              int dst_dev, uint64_t src, int src_dev,
                              size_t size, gpumem_driver_copy_t *copy);
ucs_status_t gpumem_cuda_copy_poll(gpumem_driver_copy_t *copy);
ucs_status_t gpumem_cuda_copy_sync(gpumem_driver_gpu_t *gpu, uint64_t dst,
                                   int dst_dev, uint64_t src, int src_dev,
                                   size_t size);
void gpumem_cuda_copy_cleanup(gpumem_cuda_gpu_t *gpu);


#define gpumem_cuda_gpu_log(_level, _gpu, _fmt, ...) \
    ucs_log(_level, "gpumem_cuda: GPU %u (%s): " _fmt, (_gpu)->index, \
            (_gpu)->name, ## __VA_ARGS__)

#endif
