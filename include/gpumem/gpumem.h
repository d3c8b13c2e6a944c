/**
 * gpumem: device memory for applications that do not go through UCP (an MPI
 * program, a benchmark), in the manner of the CUDA runtime's calls.
 *
 * The calls live in the plugin, libuct_gpumem.so: link it (which also
 * brings the plugin into UCX before 1.22) or preload it. They use the GPUs
 * that the UCX_GPUMEM_* variables select, the same the plugin's memory
 * domain uses; device memory they give is device memory to UCX too.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_API_H_
#define GPUMEM_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Errors are negative, as ucs_status_t: 0 is success. Every call may come
 * from any thread; a NULL where a call writes its answer, or a NULL buffer
 * of bytes to move, is an invalid argument (UCS_ERR_INVALID_PARAM, -5),
 * logged. */
typedef int gpumem_result_t;

/**
 * What gpumem_device_query() tells of an address.
 */
typedef struct gpumem_pointer_attr {
    int    is_device;   /* 1: device memory of a gpumem GPU */
    int    device;      /* Its GPU, in PCI address order */
    void   *base;       /* First byte of the allocation that holds it */
    size_t size;        /* Size of that allocation */
} gpumem_pointer_attr_t;


/* Number of GPUs */
gpumem_result_t gpumem_device_count(int *count);

/* The calling thread's GPU for gpumem_device_malloc (0 at first) */
gpumem_result_t gpumem_device_set(int device);
gpumem_result_t gpumem_device_get(int *device);

/* @a size bytes of device memory on the calling thread's GPU */
gpumem_result_t gpumem_device_malloc(void **ptr, size_t size);
gpumem_result_t gpumem_device_free(void *ptr);

/* Bytes of device memory free and in all on the calling thread's GPU
 * (cudaMemGetInfo), every process's allocations taken; UCS_ERR_UNSUPPORTED
 * (-22) where the driver does not tell */
gpumem_result_t gpumem_device_mem_get_info(size_t *free, size_t *total);

/* Copies @a size bytes between any two of host memory and device memory,
 * returning when the bytes have landed. Every byte is checked first: a
 * device range that runs past its allocation, host pages the CPU cannot
 * read, or destination pages it cannot write, are UCS_ERR_INVALID_PARAM
 * (-5), logged, and nothing is moved */
gpumem_result_t gpumem_device_memcpy(void *dst, const void *src, size_t size);

/* Sets @a size bytes of device or host memory to @a value; the range is
 * checked as gpumem_device_memcpy() checks it */
gpumem_result_t gpumem_device_memset(void *ptr, int value, size_t size);

gpumem_result_t gpumem_device_query(const void *ptr,
                                    gpumem_pointer_attr_t *attr);

/**
 * Whether GPU @a device maps the memory of GPU @a peer_device, as the
 * topology decides (cudaDeviceCanAccessPeer): where it does, gpumemipc moves
 * buffers between processes on them zero-copy; where not, UCX stages them.
 * @a reason (when not NULL) gets why, at most @a max_reason bytes with the
 * terminating zero. A GPU reaches its own memory.
 */
gpumem_result_t gpumem_device_can_access_peer(int *can_access, int device,
                                              int peer_device, char *reason,
                                              size_t max_reason);

/* Bytes this process moved through gpumemipc so far, to and from other
 * processes' device memory */
gpumem_result_t gpumem_ipc_bytes(unsigned long long *bytes);

/* Bytes this process's gpumem_rc endpoints posted in RDMA writes and reads
 * so far, to and from other processes' memory, device or host */
gpumem_result_t gpumem_rc_bytes(unsigned long long *bytes);

/* A description of an error; of a value that is no result, says so */
const char *gpumem_result_string(gpumem_result_t result);

/**
 * Closes the GPUs that these calls opened (cudaDeviceReset): they stay open
 * from the first call until this one or the process's exit, so that
 * allocating and freeing does not open the machine each time; memory still
 * allocated keeps them open until its free. The next call opens them
 * again, with the UCX_GPUMEM_* settings of that time.
 */
gpumem_result_t gpumem_device_reset(void);

#ifdef __cplusplus
}
#endif

#endif
