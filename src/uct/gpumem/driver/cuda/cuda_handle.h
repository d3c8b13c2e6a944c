/**
 * gpumem cuda driver: the wire form of an exported memory handle, which
 * another process of the machine imports to map the memory.
 *
 * Two kinds: a VMM allocation's shareable POSIX fd, named by the exporting
 * process's descriptor broker and the allocation's id (the importer asks
 * the broker, which hands the fd to processes of the same user), or where
 * the broker does not answer, by the exporting process and the fd's number
 * in it (the importer duplicates it with pidfd_getfd(2), so only a process
 * that may trace the exporter can); and a legacy IPC handle of memory an
 * application allocated with cudaMalloc or cuMemAlloc. Every field is
 * checked on decode.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_CUDA_HANDLE_H_
#define GPUMEM_CUDA_HANDLE_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

#define GPUMEM_CUDA_HANDLE_MAGIC    0x43474d55u /* "UMGC" */
#define GPUMEM_CUDA_HANDLE_VERSION  3
#define GPUMEM_CUDA_IPC_HANDLE_SIZE 64          /* CU_IPC_HANDLE_SIZE */
#define GPUMEM_CUDA_HANDLE_PAGE     4096        /* The core's small page */


typedef enum {
    GPUMEM_CUDA_HANDLE_VMM_FD     = 1,  /* cuMemExportToShareableHandle */
    GPUMEM_CUDA_HANDLE_LEGACY_IPC = 2   /* cuIpcGetMemHandle */
} gpumem_cuda_handle_type_t;


/**
 * A handle, decoded. The wire form is this structure's fields in order,
 * each in the machine's byte order (a handle never leaves the machine).
 */
typedef struct gpumem_cuda_handle {
    uint32_t magic;
    uint16_t version;
    uint16_t type;          /* gpumem_cuda_handle_type_t */
    uint32_t uid;           /* The exporter's effective user */
    int32_t  pid;           /* The exporting process */
    int32_t  fd;            /* VMM_FD: the fd's number in the exporter */
    uint32_t reserved;      /* 0 */
    uint64_t size;          /* Bytes of the allocation, as its owner
                               allocated them (VMM_FD: the handle maps
                               them rounded up to the granularity) */
    uint64_t granularity;   /* VMM_FD: the allocation granularity */
    uint64_t alloc_id;      /* The exporter's allocation, unique in its
                               life (LEGACY_IPC: the driver's buffer id):
                               an fd number or address reused for another
                               allocation makes another handle */
    uint64_t broker;        /* VMM_FD: the exporter's descriptor broker,
                               0 if it has none (LEGACY_IPC: 0) */
    uint8_t  ipc[GPUMEM_CUDA_IPC_HANDLE_SIZE]; /* LEGACY_IPC: the handle */
} UCS_S_PACKED gpumem_cuda_handle_t;


/* Bytes of the wire form */
#define GPUMEM_CUDA_HANDLE_SIZE  sizeof(gpumem_cuda_handle_t)


/**
 * Writes @a handle's wire form at @a buf, which holds @a max bytes; sets
 * @a length_p. UCS_ERR_BUFFER_TOO_SMALL if it does not fit.
 */
ucs_status_t gpumem_cuda_handle_pack(const gpumem_cuda_handle_t *handle,
                                     void *buf, size_t max, size_t *length_p);


/**
 * Decodes and checks a handle another process sent: length, magic,
 * version, type, reserved bytes, the exporter's user (this process's
 * user), pid, fd, size and granularity. A bad handle is
 * UCS_ERR_INVALID_PARAM, logged with what was wrong; a handle of another
 * user is UCS_ERR_REJECTED, logged too.
 */
ucs_status_t gpumem_cuda_handle_unpack(const void *buf, size_t length,
                                       gpumem_cuda_handle_t *handle);

END_C_DECLS

#endif
