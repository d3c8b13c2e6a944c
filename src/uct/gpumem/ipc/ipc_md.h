/**
 * gpumem IPC transport: its component and memory domain, "gpumem_ipc", which
 * registers device memory for peers of the machine and unpacks their keys.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_MD_H_
#define UCT_GPUMEM_IPC_MD_H_

#include "ipc_cache.h"

#include <uct/base/uct_md.h>
#include <pthread.h>


#define UCT_GPUMEM_IPC_COMPONENT_NAME  "gpumem_ipc"


/**
 * gpumem_ipc memory domain configuration. The GPUs and which one is the
 * process's are the gpumem domain's settings (UCX_GPUMEM_*).
 */
typedef struct uct_gpumem_ipc_md_config {
    uct_md_config_t super;
    unsigned        cache_max_idle;  /* Idle mappings kept for reuse */
    ucs_time_t      cache_sweep;     /* Time between sweeps of the idle
                                        mappings of processes gone */
} uct_gpumem_ipc_md_config_t;


/**
 * The component: it keeps the process's cache of peers' memory while a
 * memory domain or an unpacked key needs it, since UCT unpacks keys with the
 * component and no memory domain.
 */
typedef struct uct_gpumem_ipc_component {
    uct_component_t        super;
    pthread_mutex_t        lock;   /* Guards cache and users */
    uct_gpumem_ipc_cache_t *cache;
    unsigned               users;  /* Memory domains and keys */
} uct_gpumem_ipc_component_t;


typedef struct uct_gpumem_ipc_md {
    uct_md_t               super;
    uct_gpumem_ipc_cache_t *cache;
    uct_gpumem_context_t   *context;
    unsigned               gpu;        /* The domain's GPU (its settings'
                                          UCX_GPUMEM_ALLOC_GPU): two UCP
                                          contexts of one process may each
                                          have their own */
    ucs_memory_type_t      mem_type;   /* Of device memory, as UCX sees it */
} uct_gpumem_ipc_md_t;


/**
 * A registration: the key its mkey_pack gives, made at registration.
 */
typedef struct uct_gpumem_ipc_memh {
    uct_gpumem_ipc_key_t key;
} uct_gpumem_ipc_memh_t;


/**
 * An unpacked key: the mapping of the owner's allocation, shared with every
 * key of it, and the range of it this key gives access to.
 */
typedef struct uct_gpumem_ipc_rkey {
    uct_gpumem_ipc_cache_entry_t *entry;
    uint64_t                     alloc_address; /* The owner's addresses */
    uint64_t                     address;
    size_t                       length;
} uct_gpumem_ipc_rkey_t;


extern uct_gpumem_ipc_component_t uct_gpumem_ipc_component;

#endif
