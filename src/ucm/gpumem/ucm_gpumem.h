/**
 * gpumem UCM: memory-type events for device allocations, so that UCX's
 * memory type cache and registration caches never hold a stale range.
 *
 * See file LICENSE for terms.
 */

#ifndef UCM_GPUMEM_H_
#define UCM_GPUMEM_H_

#include <ucs/memory/memory_type.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>
#include <stddef.h>

BEGIN_C_DECLS

/* Device memory of @a mem_type now lives at [address, address + size), on
 * the GPU @a sys_dev (UCS_SYS_DEVICE_ID_UNKNOWN: for UCX to detect) */
void ucm_gpumem_dispatch_alloc(void *address, size_t size,
                               ucs_memory_type_t mem_type,
                               ucs_sys_device_t sys_dev);

/* The device memory at [address, address + size) is about to go */
void ucm_gpumem_dispatch_free(void *address, size_t size,
                              ucs_memory_type_t mem_type);

/* The device memory at @a address, which an allocation event reported, is
 * about to go: its size is the one the event gave. Nothing for an address
 * no event reported. */
void ucm_gpumem_dispatch_free_known(void *address);

/* The application's CUDA allocation and free calls raise the events from
 * now on (where the backend is built: UCS_ERR_UNSUPPORTED otherwise) */
ucs_status_t ucm_gpumem_cuda_install(void);

END_C_DECLS

#endif
