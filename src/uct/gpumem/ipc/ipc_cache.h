/**
 * gpumem IPC transport: the process's mappings of peers' device memory,
 * shared by every key that names the same allocation.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_CACHE_H_
#define UCT_GPUMEM_IPC_CACHE_H_

#include "ipc_key.h"
#include "ipc_stats.h"

#include <uct/gpumem/gpumem_context.h>
#include <ucs/time/time.h>

BEGIN_C_DECLS

/*
 * The cache of one process. An entry maps one peer allocation, named by its
 * export handle (never reused: the memory core's handles carry a
 * generation), on the process's GPU when a key is unpacked and on any other
 * GPU of the process at its first copy there. It stays, idle, once no key
 * or copy uses it, so that the next key of that memory maps nothing. An
 * entry goes:
 * - when a key of a new allocation of the same owner overlaps its
 *   addresses: the owner freed it and the address was reused;
 * - when its owner process is gone: idle, at the next sweep of UCX's async
 *   thread or the next key of a new allocation; in use, at the next key
 *   after its last user;
 * - past the limit of idle entries, the oldest first;
 * - at once when idle, where the owner is this process.
 * Until then, the owner's free leaves the memory to this process's mapping.
 */
typedef struct uct_gpumem_ipc_cache       uct_gpumem_ipc_cache_t;
typedef struct uct_gpumem_ipc_cache_entry uct_gpumem_ipc_cache_entry_t;


/**
 * The cache, mapping peers' memory for the process's GPU @a gpu first, on
 * the GPUs the parameters open. Every @a sweep_interval (a ucs_time_t; 0 or
 * UCS_TIME_INFINITY: never) UCX's async thread drops the idle entries
 * whose owner is gone.
 */
ucs_status_t uct_gpumem_ipc_cache_create(
        const uct_gpumem_settings_t *settings, unsigned gpu,
        unsigned max_idle, ucs_time_t sweep_interval,
        uct_gpumem_ipc_cache_t **cache_p);

/* Unmaps every entry; none is in use */
void uct_gpumem_ipc_cache_destroy(uct_gpumem_ipc_cache_t *cache);

uct_gpumem_context_t *uct_gpumem_ipc_cache_context(
        const uct_gpumem_ipc_cache_t *cache);

/* The process's GPU, where keys are mapped first */
unsigned uct_gpumem_ipc_cache_gpu(const uct_gpumem_ipc_cache_t *cache);

/* The machine's identity (uct_gpumem_ipc_machine_id) */
uint64_t uct_gpumem_ipc_cache_machine(const uct_gpumem_ipc_cache_t *cache);

/* The owner's GPU of the entry's memory */
const gpumem_pci_addr_t *
uct_gpumem_ipc_cache_entry_gpu(const uct_gpumem_ipc_cache_entry_t *entry);

/**
 * The entry of the memory @a key names, mapped on the process's GPU: an
 * existing one, or a new one mapped now. The caller holds it until
 * uct_gpumem_ipc_cache_put(). The memory core logs why an import fails.
 */
ucs_status_t uct_gpumem_ipc_cache_get(uct_gpumem_ipc_cache_t *cache,
                                      const uct_gpumem_ipc_key_t *key,
                                      uct_gpumem_ipc_cache_entry_t **entry_p);

/* One more holder of an entry the caller holds */
void uct_gpumem_ipc_cache_hold(uct_gpumem_ipc_cache_t *cache,
                               uct_gpumem_ipc_cache_entry_t *entry);

void uct_gpumem_ipc_cache_put(uct_gpumem_ipc_cache_t *cache,
                              uct_gpumem_ipc_cache_entry_t *entry);

/**
 * The entry's memory as the process's GPU @a gpu maps it, mapped now if it
 * is not yet: UCS_ERR_UNREACHABLE, with the reason logged once, where that
 * GPU does not reach the owner's.
 */
ucs_status_t uct_gpumem_ipc_cache_map(uct_gpumem_ipc_cache_t *cache,
                                      uct_gpumem_ipc_cache_entry_t *entry,
                                      unsigned gpu,
                                      gpumem_region_t **region_p);

/* Counts an operation of @a length bytes */
void uct_gpumem_ipc_stats_count_op(int is_put, size_t length);

END_C_DECLS

#endif
