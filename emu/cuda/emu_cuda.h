/**
 * gpumem emulated CUDA: the state of libcuda.so.1 over the emu driver,
 * shared by its files.
 *
 * The library's GPUs are the emu driver's (same VRAM, same sharing across
 * processes, same topology, same copy engine): what it adds is the CUDA
 * driver API's objects (contexts, streams, events, allocations, handles)
 * and its rules (errors, lifetimes). One recursive lock guards it all, so
 * that a call made from inside another (a memory event raised while the
 * library maps) finds the lock its own. A thread of the library's own
 * moves the streams' work on while no caller asks (emu_cuda_progress.c),
 * as a GPU and its driver do.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_CUDA_H_
#define GPUMEM_EMU_CUDA_H_

#include <cuda.h>
#include <uct/gpumem/driver/gpumem_driver.h>
#include <ucs/datastruct/list.h>
#include <ucs/debug/log.h>
#include <pthread.h>
#include <stdint.h>

BEGIN_C_DECLS

/* The driver API version the library answers with: the header's own */
#define GPUMEM_EMU_CUDA_VERSION     CUDA_VERSION

/* cuMemCreate's granularity, as on NVIDIA GPUs; cuMemAlloc places smaller
 * allocations in pages of GPUMEM_EMU_CUDA_SMALL_PAGE */
#define GPUMEM_EMU_CUDA_GRANULARITY (2ul << 20)
#define GPUMEM_EMU_CUDA_SMALL_PAGE  (4ul << 10)

/* What cuMemAllocPitch rounds a row up to */
#define GPUMEM_EMU_CUDA_PITCH_ALIGN 512

/* The context flags kept (cuCtxCreate, cuCtxSetFlags): scheduling and
 * memory operations, which the emu's engine needs none of */
#define GPUMEM_EMU_CUDA_CTX_FLAGS   (CU_CTX_SCHED_MASK | CU_CTX_SYNC_MEMOPS)

/* Contexts one thread may have pushed over each other */
#define GPUMEM_EMU_CUDA_CTX_DEPTH   64


/**
 * A context: a device's primary one, retained and released, or one the
 * application created.
 */
struct CUctx_st {
    int             device;
    unsigned        refs;     /* Primary: retains not yet released */
    ucs_list_link_t list;     /* Created: in the library's contexts */
    CUstream        stream;   /* The NULL stream of the context */
    unsigned long long id;    /* cuCtxGetId's: of this context's life (a
                                 primary one's, from its first retain) */
    unsigned        flags;    /* cuCtxSetFlags' */
    ucs_list_link_t streams;  /* All its streams, the NULL one included */
    CUresult        sticky;   /* A fault the engine found in its work:
                                 every later call that uses the context
                                 returns it, as CUDA's sticky errors, until
                                 the context ends */
};


/**
 * A stream: its operations in order, the first in progress.
 */
struct CUstream_st {
    ucs_list_link_t list;     /* In the context's streams */
    CUcontext       ctx;
    unsigned        flags;
    ucs_list_link_t ops;      /* gpumem_emu_cuda_op_t */
    CUresult        error;    /* Of a copy that failed, told once */
};


/**
 * An event: complete when the work its stream had at its record is.
 */
struct CUevent_st {
    CUcontext ctx;
    unsigned  flags;
    CUstream  stream;         /* Of the last record */
    unsigned  generation;     /* Of the last record */
    int       pending;        /* The record's work is not done */
};


/**
 * What one side of a copy, or an address asked about, is.
 */
typedef enum {
    GPUMEM_EMU_CUDA_RANGE_ALLOC,   /* cuMemAlloc */
    GPUMEM_EMU_CUDA_RANGE_IPC,     /* cuIpcOpenMemHandle */
    GPUMEM_EMU_CUDA_RANGE_VMM,     /* cuMemMap of a cuMemCreate handle */
    GPUMEM_EMU_CUDA_RANGE_HOST,    /* cuMemHostAlloc */
    GPUMEM_EMU_CUDA_RANGE_PINNED,  /* cuMemHostRegister */
    GPUMEM_EMU_CUDA_RANGE_MANAGED  /* cuMemAllocManaged */
} gpumem_emu_cuda_range_kind_t;


typedef struct gpumem_emu_cuda_vmm gpumem_emu_cuda_vmm_t;


/**
 * Memory at addresses of the process: device memory mapped on every GPU
 * that reaches it (unified addressing), or system memory the GPUs reach at
 * its own address.
 */
typedef struct gpumem_emu_cuda_range {
    ucs_list_link_t              list;
    gpumem_emu_cuda_range_kind_t kind;
    uint64_t                     base;
    size_t                       size;       /* As asked */
    size_t                       map_size;   /* As mapped, whole pages */
    int                          device;     /* Whose VRAM, or whose
                                                context allocated it */
    CUcontext                    ctx;
    unsigned long long           buffer_id;
    gpumem_driver_mem_t          *mem;       /* ALLOC, IPC: the VRAM */
    gpumem_emu_cuda_vmm_t        *vmm;       /* VMM: the handle mapped */
    uint64_t                     mapped;     /* GPUs that map it, a bit
                                                each */
    int                          access;     /* VMM: cuMemSetAccess given */
    int                          stream_ordered; /* ALLOC: of
                                                cuMemAllocAsync, which no
                                                legacy IPC handle shares */
    int                          ipc_fd;     /* ALLOC: the IPC handle's
                                                file, -1 until asked */
    uint64_t                     ipc_broker; /* ALLOC: the descriptor
                                                broker serving ipc_fd, or
                                                0 */
} gpumem_emu_cuda_range_t;


/**
 * A physical allocation of cuMemCreate, or one imported: it lives while
 * its handle or any mapping of it does.
 */
struct gpumem_emu_cuda_vmm {
    ucs_list_link_t     list;
    gpumem_driver_mem_t *mem;
    size_t              size;
    int                 device;
    unsigned            refs;       /* The handle, and each mapping */
    unsigned            handles;    /* cuMemCreate's or import's, and each
                                       cuMemRetainAllocationHandle: each
                                       cuMemRelease gives one back */
};


/**
 * Device addresses cuMemAddressReserve gave.
 */
typedef struct gpumem_emu_cuda_reservation {
    ucs_list_link_t list;
    uint64_t        base;
    size_t          size;
    unsigned        gpu;        /* Whose part of the space */
} gpumem_emu_cuda_reservation_t;


typedef struct gpumem_emu_cuda {
    pthread_mutex_t     lock;        /* Recursive */
    pthread_cond_t      work;        /* Signalled as work is queued */
    int                 progress;    /* The progress thread runs */
    int                 stopping;    /* The library is unloaded: the
                                        thread has stopped */
    unsigned long       queued;      /* Operations in the streams */
    unsigned long long  last_op;     /* The number of the last queued */
    int                 initialized; /* cuInit succeeded in this process */
    int                 forked;      /* A child of a fork of a process in
                                        which it had */
    gpumem_topo_t       *topo;
    gpumem_driver_t     *emu;
    int                 num_devices;
    struct CUctx_st     *primary;    /* One per device */
    ucs_list_link_t     contexts;    /* Created by the application */
    ucs_list_link_t     ranges;      /* gpumem_emu_cuda_range_t */
    ucs_list_link_t     vmms;        /* gpumem_emu_cuda_vmm_t */
    ucs_list_link_t     reservations;
    unsigned long long  next_buffer_id;
    unsigned long long  next_ctx_id;
} gpumem_emu_cuda_t;


extern gpumem_emu_cuda_t gpumem_emu_cuda;


/* What a live handle is (emu_cuda_live.c) */
typedef enum {
    GPUMEM_EMU_CUDA_LIVE_STREAM = 1,
    GPUMEM_EMU_CUDA_LIVE_EVENT  = 2
} gpumem_emu_cuda_live_kind_t;

/* A stream or an event from its create to its destroy (lock held);
 * CUDA_ERROR_OUT_OF_MEMORY if it cannot be recorded */
CUresult gpumem_emu_cuda_live_add(const void *handle,
                                  gpumem_emu_cuda_live_kind_t kind);
void gpumem_emu_cuda_live_remove(const void *handle);

/* Whether @a handle is a live one of @a kind (lock held) */
int gpumem_emu_cuda_live_is(const void *handle,
                            gpumem_emu_cuda_live_kind_t kind);


/* Times the calling thread holds the library's lock */
extern __thread unsigned gpumem_emu_cuda_lock_depth;
/* The calling thread is in a host function of a stream */
extern __thread int gpumem_emu_cuda_in_host_fn;

void gpumem_emu_cuda_lock(void);
void gpumem_emu_cuda_unlock(void);

/* Locks the library; CUDA_SUCCESS, or CUDA_ERROR_NOT_INITIALIZED (and
 * unlocked) before cuInit, or CUDA_ERROR_NOT_PERMITTED (unlocked) in a
 * host function, which may call no CUDA */
CUresult gpumem_emu_cuda_enter(void);
void gpumem_emu_cuda_leave(void);

/* Unlocks and returns @a res */
static inline CUresult gpumem_emu_cuda_return(CUresult res)
{
    gpumem_emu_cuda_leave();
    return res;
}

/* The GPU of device @a device, or NULL where there is none */
gpumem_driver_gpu_t *gpumem_emu_cuda_gpu(int device);

/* The device at the PCI address of @a reach, or -1 */
int gpumem_emu_cuda_device_of(const gpumem_pci_addr_t *addr);

/* The calling thread's current context, or NULL */
CUcontext gpumem_emu_cuda_ctx_current(void);

/* The context a call that needs one runs in: CUDA_ERROR_INVALID_CONTEXT
 * where the thread has none, and its sticky error where its work faulted */
CUresult gpumem_emu_cuda_ctx_get(CUcontext *ctx_p);
/* The same, a context whose work faulted too: for the calls that wait for
 * its work before they say its sticky error */
CUresult gpumem_emu_cuda_ctx_find(CUcontext *ctx_p);
/* The sticky error of @a ctx, CUDA_SUCCESS where it has none or is no live
 * context any more */
CUresult gpumem_emu_cuda_ctx_sticky(CUcontext ctx);

/* The CUresult for a status of the emu driver */
CUresult gpumem_emu_cuda_result(ucs_status_t status);


/* emu_cuda_range.c: the memory at an address */
gpumem_emu_cuda_range_t *gpumem_emu_cuda_range_find(uint64_t addr);
gpumem_emu_cuda_range_t *gpumem_emu_cuda_range_new(
        gpumem_emu_cuda_range_kind_t kind, uint64_t base, size_t size,
        int device);
/* System memory the GPUs reach (the emu's sys_alloc by GPU @a gpu), at a
 * range of @a kind of @a device */
CUresult gpumem_emu_cuda_sys_range_new(gpumem_emu_cuda_range_kind_t kind,
                                       int gpu, int device, size_t size,
                                       void **addr_p);
void gpumem_emu_cuda_range_free(gpumem_emu_cuda_range_t *range);
/* Maps @a size bytes of @a mem at @a offset, at @a va, on its GPU and on
 * every other GPU that reaches it */
CUresult gpumem_emu_cuda_range_map(gpumem_emu_cuda_range_t *range,
                                   gpumem_driver_mem_t *mem, size_t offset);
void gpumem_emu_cuda_range_unmap(gpumem_emu_cuda_range_t *range);
/* Frees the VRAM of an ALLOC or IPC range, its addresses and the range,
 * after the work that may use it (cuMemFree synchronizes) */
void gpumem_emu_cuda_range_release(gpumem_emu_cuda_range_t *range);
/* Reserves the range's addresses in device @a device's part of the space */
CUresult gpumem_emu_cuda_va_reserve(int device, size_t size, size_t align,
                                    uint64_t *va_p);

/* emu_cuda_handle.c: a memory handle as a file another process takes */
CUresult gpumem_emu_cuda_handle_file(gpumem_driver_mem_t *mem, int *fd_p);
CUresult gpumem_emu_cuda_handle_open(int fd, gpumem_driver_mem_t **mem_p);
CUresult gpumem_emu_cuda_fd_take(int pid, int fd, int *fd_p);

/* emu_cuda_managed.c: frees managed memory, after the work that may use
 * it */
void gpumem_emu_cuda_managed_release(gpumem_emu_cuda_range_t *range);

/* emu_cuda_stream.c: the streams of a context and their work */
CUresult gpumem_emu_cuda_stream_new(CUcontext ctx, unsigned flags,
                                    CUstream *stream_p);
/* Frees a stream of no work */
void gpumem_emu_cuda_stream_free(CUstream stream);
/* The stream a call names: the context's NULL stream for 0 and the
 * per-thread and legacy handles (a context current needed); the context's
 * sticky error where its work faulted */
CUresult gpumem_emu_cuda_stream_get(CUstream handle, CUstream *stream_p);
/* The same, the stream of a context whose work faulted too */
CUresult gpumem_emu_cuda_stream_find(CUstream handle, CUstream *stream_p);
/* Moves the stream's work on by one step of the copy engine, up to a
 * host function, which the progress thread calls */
void gpumem_emu_cuda_stream_progress(CUstream stream);
/* The progress thread's step of the stream: host functions called too,
 * with the lock let go; whether one was (the library may have changed) */
int gpumem_emu_cuda_stream_run(CUstream stream);
/* Waits for all of the stream's work, the lock held (in a call that
 * changes what the work may touch: host functions are called in the
 * calling thread); the error of a copy that failed */
CUresult gpumem_emu_cuda_stream_drain(CUstream stream);
void gpumem_emu_cuda_ctx_drain(CUcontext ctx);
/* A step of a wait: the lock let go a moment after it if @a yield
 * (gpumem_emu_cuda_can_yield()), host functions called else */
void gpumem_emu_cuda_stream_step(CUstream stream, int yield);
/* Waits for all of the stream's work as an application's synchronize
 * does, letting the lock go between steps so that the progress thread and
 * other threads go on */
CUresult gpumem_emu_cuda_stream_wait(CUstream stream);
void gpumem_emu_cuda_ctx_wait(CUcontext ctx);
/* Queues a copy: @a gpu's engine moves it */
CUresult gpumem_emu_cuda_stream_copy(CUstream stream, int gpu, uint64_t dst,
                                     int dst_dev, uint64_t src, int src_dev,
                                     size_t size);
/* Queues the record of @a event */
CUresult gpumem_emu_cuda_stream_record(CUstream stream, CUevent event);
/* Forgets @a event in the stream's queue */
void gpumem_emu_cuda_stream_forget(CUstream stream, CUevent event);

/* emu_cuda_progress.c: the thread that moves the streams' work on */
/* Tells it of work queued, started at the first */
void gpumem_emu_cuda_progress_wake(void);
/* Whether a wait of the calling thread may let the lock go, for the
 * progress thread to go on */
int gpumem_emu_cuda_can_yield(void);
/* Lets the lock go a moment (a wait that can yield) */
void gpumem_emu_cuda_yield(void);
/* Forgets the thread, in a child of a fork */
void gpumem_emu_cuda_progress_forget(void);

/* Logs once that the entry point @a name is not emulated */
void gpumem_emu_cuda_not_supported(const char *name, int *logged);

END_C_DECLS

#endif
