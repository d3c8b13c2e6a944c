/**
 * gpumem IPC transport: the cache of peers' memory mapped by this process,
 * keyed by export handle, so that the keys of one allocation share one
 * mapping per GPU and a reused address never finds another allocation's.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_cache.h"
#include "ipc_reach.h"

#include <uct/gpumem/util/gpumem_proc.h>

#include <ucs/arch/atomic.h>
#include <ucs/async/async.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>


/* An export handle as the cache's key */
typedef struct {
    size_t        length;
    const uint8_t *bytes;
} uct_gpumem_ipc_handle_ref_t;


struct uct_gpumem_ipc_cache_entry {
    ucs_list_link_t   list;          /* In the cache's entries */
    ucs_list_link_t   idle_list;     /* In the cache's idle ones, if idle */
    unsigned          refcount;      /* Keys and copies that use it */
    int               stale;         /* Out of the handles: goes when idle */
    pid_t             owner;
    gpumem_pci_addr_t gpu;           /* The owner's GPU */
    unsigned          home;          /* The process's GPU it was mapped on
                                        first, which reaches it */
    uint64_t          alloc_address; /* At the owner's addresses */
    size_t            alloc_size;
    size_t            handle_len;
    uint8_t           handle[GPUMEM_EXPORT_MAX];
    gpumem_region_t   *regions[];    /* Mapping of each GPU, or NULL */
};


static khint32_t uct_gpumem_ipc_handle_hash(uct_gpumem_ipc_handle_ref_t key)
{
    khint32_t hash = 2166136261u; /* FNV-1a */
    size_t i;

    for (i = 0; i < key.length; ++i) {
        hash = (hash ^ key.bytes[i]) * 16777619u;
    }
    return hash;
}

static int uct_gpumem_ipc_handle_equal(uct_gpumem_ipc_handle_ref_t a,
                                       uct_gpumem_ipc_handle_ref_t b)
{
    return (a.length == b.length) && !memcmp(a.bytes, b.bytes, a.length);
}

KHASH_INIT(uct_gpumem_ipc_handles, uct_gpumem_ipc_handle_ref_t,
           uct_gpumem_ipc_cache_entry_t*, 1, uct_gpumem_ipc_handle_hash,
           uct_gpumem_ipc_handle_equal);


struct uct_gpumem_ipc_cache {
    pthread_mutex_t                 lock;
    uct_gpumem_context_t            *context;
    unsigned                        gpu;
    unsigned                        max_idle;
    uint64_t                        machine;
    khash_t(uct_gpumem_ipc_handles) handles;
    ucs_list_link_t                 entries;
    ucs_list_link_t                 idle;     /* Oldest first */
    unsigned                        num_idle;
    int                             sweep_timer; /* Async timer id, or -1 */
};


/* Counters of the process: the cache's under its lock (there is one cache
 * at a time), the operations' atomic */
static uct_gpumem_ipc_stats_t uct_gpumem_ipc_counters;


static uct_gpumem_ipc_handle_ref_t
uct_gpumem_ipc_entry_handle(const uct_gpumem_ipc_cache_entry_t *entry)
{
    uct_gpumem_ipc_handle_ref_t ref = {entry->handle_len, entry->handle};

    return ref;
}

static void uct_gpumem_ipc_entry_set_stale(uct_gpumem_ipc_cache_t *cache,
                                           uct_gpumem_ipc_cache_entry_t *entry,
                                           const char *why);
static int uct_gpumem_ipc_owner_is_gone(pid_t owner);

/* Idle entries of owners that are gone go (lock held) */
static void uct_gpumem_ipc_cache_sweep_gone(uct_gpumem_ipc_cache_t *cache)
{
    uct_gpumem_ipc_cache_entry_t *entry, *tmp;

    ucs_list_for_each_safe(entry, tmp, &cache->idle, idle_list) {
        if (!entry->stale && uct_gpumem_ipc_owner_is_gone(entry->owner)) {
            uct_gpumem_ipc_entry_set_stale(cache, entry, "its owner is gone");
        }
    }
}

/* UCX's async thread, every sweep interval */
static void
uct_gpumem_ipc_cache_sweep_timer(int UCS_V_UNUSED id,
                                 ucs_event_set_types_t UCS_V_UNUSED events,
                                 void *arg)
{
    uct_gpumem_ipc_cache_t *cache = arg;

    pthread_mutex_lock(&cache->lock);
    uct_gpumem_ipc_cache_sweep_gone(cache);
    pthread_mutex_unlock(&cache->lock);
}

static void uct_gpumem_ipc_cache_start_sweep(uct_gpumem_ipc_cache_t *cache,
                                             ucs_time_t interval)
{
    ucs_status_t status;

    cache->sweep_timer = -1;
    if ((interval == 0) || (interval == UCS_TIME_INFINITY)) {
        return;
    }

    status = ucs_async_add_timer(UCS_ASYNC_MODE_THREAD_SPINLOCK, interval,
                                 uct_gpumem_ipc_cache_sweep_timer, cache,
                                 NULL, &cache->sweep_timer);
    if (status != UCS_OK) {
        /* The next key of a new allocation still finds them */
        ucs_diag("gpumem_ipc: no async timer to sweep the mappings of "
                 "processes gone: %s", ucs_status_string(status));
        cache->sweep_timer = -1;
    }
}

ucs_status_t uct_gpumem_ipc_cache_create(
        const uct_gpumem_settings_t *settings, unsigned gpu,
        unsigned max_idle, ucs_time_t sweep_interval,
        uct_gpumem_ipc_cache_t **cache_p)
{
    uct_gpumem_ipc_cache_t *cache;
    ucs_status_t status;

    cache = ucs_calloc(1, sizeof(*cache), "gpumem_ipc_cache");
    if (cache == NULL) {
        ucs_error("gpumem_ipc: failed to allocate the mapping cache");
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_context_get(settings, &cache->context);
    if (status != UCS_OK) {
        goto err_free;
    }

    if (gpu >= cache->context->num_gpus) {
        ucs_error("gpumem_ipc: the process's GPU is GPU %u "
                  "(UCX_GPUMEM_ALLOC_GPU), but the machine has %u", gpu,
                  cache->context->num_gpus);
        status = UCS_ERR_NO_DEVICE;
        goto err_put;
    }

    pthread_mutex_init(&cache->lock, NULL);
    cache->gpu      = gpu;
    cache->max_idle = max_idle;
    cache->machine  = uct_gpumem_ipc_machine_id(cache->context);
    kh_init_inplace(uct_gpumem_ipc_handles, &cache->handles);
    ucs_list_head_init(&cache->entries);
    ucs_list_head_init(&cache->idle);
    uct_gpumem_ipc_cache_start_sweep(cache, sweep_interval);
    *cache_p = cache;
    return UCS_OK;

err_put:
    uct_gpumem_context_put(cache->context);
err_free:
    ucs_free(cache);
    return status;
}

/* Unmaps the entry's memory on every GPU (lock held) */
static void uct_gpumem_ipc_entry_destroy(uct_gpumem_ipc_cache_t *cache,
                                         uct_gpumem_ipc_cache_entry_t *entry)
{
    khiter_t iter;
    unsigned i;

    ucs_assert(entry->refcount == 0);
    if (!entry->stale) {
        iter = kh_get(uct_gpumem_ipc_handles, &cache->handles,
                      uct_gpumem_ipc_entry_handle(entry));
        ucs_assert(iter != kh_end(&cache->handles));
        kh_del(uct_gpumem_ipc_handles, &cache->handles, iter);
    }

    for (i = 0; i < cache->context->num_gpus; ++i) {
        if (entry->regions[i] != NULL) {
            gpumem_free(cache->context->gpus[i], entry->regions[i]);
        }
    }

    ucs_list_del(&entry->idle_list);
    --cache->num_idle;
    ucs_list_del(&entry->list);
    --uct_gpumem_ipc_counters.entries;
    --uct_gpumem_ipc_counters.idle;
    ucs_free(entry);
}

void uct_gpumem_ipc_cache_destroy(uct_gpumem_ipc_cache_t *cache)
{
    uct_gpumem_ipc_cache_entry_t *entry, *tmp;

    /* Waits for a sweep in progress */
    if (cache->sweep_timer >= 0) {
        ucs_async_remove_handler(cache->sweep_timer, 1);
    }

    pthread_mutex_lock(&cache->lock);
    ucs_list_for_each_safe(entry, tmp, &cache->entries, list) {
        if (entry->refcount != 0) {
            /* A key not released: its mapping goes all the same */
            ucs_warn("gpumem_ipc: memory of process %d still used by %u "
                     "keys at close", entry->owner, entry->refcount);
            entry->refcount = 0;
            ucs_list_add_tail(&cache->idle, &entry->idle_list);
            ++cache->num_idle;
            ++uct_gpumem_ipc_counters.idle;
        }
        uct_gpumem_ipc_entry_destroy(cache, entry);
    }
    pthread_mutex_unlock(&cache->lock);

    kh_destroy_inplace(uct_gpumem_ipc_handles, &cache->handles);
    pthread_mutex_destroy(&cache->lock);
    uct_gpumem_ipc_log_reset();
    uct_gpumem_context_put(cache->context);
    ucs_free(cache);
}

uct_gpumem_context_t *
uct_gpumem_ipc_cache_context(const uct_gpumem_ipc_cache_t *cache)
{
    return cache->context;
}

unsigned uct_gpumem_ipc_cache_gpu(const uct_gpumem_ipc_cache_t *cache)
{
    return cache->gpu;
}

uint64_t uct_gpumem_ipc_cache_machine(const uct_gpumem_ipc_cache_t *cache)
{
    return cache->machine;
}

const gpumem_pci_addr_t *
uct_gpumem_ipc_cache_entry_gpu(const uct_gpumem_ipc_cache_entry_t *entry)
{
    return &entry->gpu;
}

/* Takes the entry out of the handles: no key finds it again, and it goes
 * once nothing uses it (lock held) */
static void uct_gpumem_ipc_entry_set_stale(uct_gpumem_ipc_cache_t *cache,
                                           uct_gpumem_ipc_cache_entry_t *entry,
                                           const char *why)
{
    khiter_t iter;

    ucs_debug("gpumem_ipc: dropping the mapping of %zu bytes at 0x%lx of "
              "process %d: %s", entry->alloc_size,
              (unsigned long)entry->alloc_address, entry->owner, why);
    iter = kh_get(uct_gpumem_ipc_handles, &cache->handles,
                  uct_gpumem_ipc_entry_handle(entry));
    ucs_assert(iter != kh_end(&cache->handles));
    kh_del(uct_gpumem_ipc_handles, &cache->handles, iter);
    entry->stale = 1;
    ++uct_gpumem_ipc_counters.stale;
    if (entry->refcount == 0) {
        uct_gpumem_ipc_entry_destroy(cache, entry);
    }
}

static int uct_gpumem_ipc_owner_is_gone(pid_t owner)
{
    return (owner != gpumem_proc_pid()) && gpumem_proc_is_gone(owner);
}

/*
 * Before a new allocation of @a key's owner is mapped: the owner's live
 * allocations never overlap, so an entry of the same owner that overlaps
 * the new one is of memory the owner freed. Idle entries of owners that are
 * gone go too. (lock held)
 */
static void uct_gpumem_ipc_cache_sweep(uct_gpumem_ipc_cache_t *cache,
                                       const uct_gpumem_ipc_key_t *key)
{
    uct_gpumem_ipc_cache_entry_t *entry, *tmp;

    ucs_list_for_each_safe(entry, tmp, &cache->entries, list) {
        if (entry->stale) {
            continue;
        }

        if ((entry->owner == key->pid) &&
            (entry->alloc_address < key->alloc_address + key->alloc_size) &&
            (key->alloc_address < entry->alloc_address + entry->alloc_size)) {
            uct_gpumem_ipc_entry_set_stale(cache, entry,
                                           "its address holds a new "
                                           "allocation");
        } else if ((entry->refcount == 0) &&
                   uct_gpumem_ipc_owner_is_gone(entry->owner)) {
            uct_gpumem_ipc_entry_set_stale(cache, entry,
                                           "its owner is gone");
        }
    }
}

static ucs_status_t
uct_gpumem_ipc_cache_import(uct_gpumem_ipc_cache_t *cache,
                            uct_gpumem_ipc_cache_entry_t *entry, unsigned gpu)
{
    gpumem_region_t *region;
    ucs_status_t status;

    status = gpumem_import(cache->context->gpus[gpu], entry->handle,
                           entry->handle_len, &region);
    if (status != UCS_OK) {
        return status;
    }

    /* The key's claim of the allocation's size bounds every copy: it must
     * be the size of the memory the handle maps */
    if (gpumem_region_size(region) != entry->alloc_size) {
        ucs_error("gpumem_ipc: refused a remote key of process %d: it "
                  "claims an allocation of %zu bytes, its handle maps %zu",
                  entry->owner, entry->alloc_size,
                  gpumem_region_size(region));
        gpumem_free(cache->context->gpus[gpu], region);
        return UCS_ERR_INVALID_PARAM;
    }

    entry->regions[gpu] = region;
    ++uct_gpumem_ipc_counters.imports;
    return UCS_OK;
}

/* The least recently used idle entries go past the limit (lock held) */
static void uct_gpumem_ipc_cache_trim(uct_gpumem_ipc_cache_t *cache)
{
    uct_gpumem_ipc_cache_entry_t *oldest;

    while (cache->num_idle > cache->max_idle) {
        oldest = ucs_list_head(&cache->idle, uct_gpumem_ipc_cache_entry_t,
                               idle_list);
        ++uct_gpumem_ipc_counters.evicted;
        uct_gpumem_ipc_entry_destroy(cache, oldest);
    }
}

static void uct_gpumem_ipc_entry_hold(uct_gpumem_ipc_cache_t *cache,
                                      uct_gpumem_ipc_cache_entry_t *entry)
{
    if (entry->refcount++ == 0) {
        ucs_list_del(&entry->idle_list);
        --cache->num_idle;
        --uct_gpumem_ipc_counters.idle;
    }
}

ucs_status_t uct_gpumem_ipc_cache_get(uct_gpumem_ipc_cache_t *cache,
                                      const uct_gpumem_ipc_key_t *key,
                                      uct_gpumem_ipc_cache_entry_t **entry_p)
{
    uct_gpumem_ipc_handle_ref_t ref = {key->handle_len, key->handle};
    uct_gpumem_ipc_cache_entry_t *entry;
    ucs_status_t status;
    khiter_t iter;
    int ret, home;

    pthread_mutex_lock(&cache->lock);
    ++uct_gpumem_ipc_counters.unpacks;

    iter = kh_get(uct_gpumem_ipc_handles, &cache->handles, ref);
    if (iter != kh_end(&cache->handles)) {
        entry = kh_val(&cache->handles, iter);
        /* The mapping is reused only while it maps what the handle named;
         * else it leaves the cache and the handle is imported anew */
        if (gpumem_region_check(entry->regions[entry->home]) == UCS_OK) {
            uct_gpumem_ipc_entry_hold(cache, entry);
            ++uct_gpumem_ipc_counters.hits;
            goto out;
        }
        uct_gpumem_ipc_entry_set_stale(cache, entry,
                                       "it no longer maps its memory");
    }

    uct_gpumem_ipc_cache_sweep(cache, key);

    entry = ucs_calloc(1, sizeof(*entry) + (cache->context->num_gpus *
                                            sizeof(entry->regions[0])),
                       "gpumem_ipc_cache_entry");
    if (entry == NULL) {
        ucs_error("gpumem_ipc: failed to allocate a mapping cache entry");
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    entry->refcount      = 1;
    entry->owner         = key->pid;
    entry->gpu           = key->gpu;
    entry->alloc_address = key->alloc_address;
    entry->alloc_size    = key->alloc_size;
    entry->handle_len    = key->handle_len;
    memcpy(entry->handle, key->handle, key->handle_len);

    /* Mapped first on the cache's GPU, else on one of the process's GPUs
     * that reaches the memory (a copy of another is staged through it);
     * UCP takes "unreachable" for "not this way" and moves the data
     * another way */
    home = uct_gpumem_ipc_gpu_reaching(cache->context, cache->gpu, &key->gpu);
    if (home < 0) {
        status = UCS_ERR_UNREACHABLE;
        goto err_free;
    }
    entry->home = home;
    status      = uct_gpumem_ipc_cache_import(cache, entry, entry->home);
    if (status != UCS_OK) {
        goto err_free;
    }

    iter = kh_put(uct_gpumem_ipc_handles, &cache->handles,
                  uct_gpumem_ipc_entry_handle(entry), &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        ucs_error("gpumem_ipc: failed to add to the mapping cache");
        gpumem_free(cache->context->gpus[entry->home],
                    entry->regions[entry->home]);
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    kh_val(&cache->handles, iter) = entry;
    ucs_list_add_tail(&cache->entries, &entry->list);
    ++uct_gpumem_ipc_counters.entries;
    ucs_trace("gpumem_ipc: mapped %zu bytes at 0x%lx of process %d",
              entry->alloc_size, (unsigned long)entry->alloc_address,
              entry->owner);

out:
    pthread_mutex_unlock(&cache->lock);
    *entry_p = entry;
    return UCS_OK;

err_free:
    ucs_free(entry);
err:
    pthread_mutex_unlock(&cache->lock);
    return status;
}

void uct_gpumem_ipc_cache_hold(uct_gpumem_ipc_cache_t *cache,
                               uct_gpumem_ipc_cache_entry_t *entry)
{
    pthread_mutex_lock(&cache->lock);
    ucs_assert(entry->refcount > 0);
    uct_gpumem_ipc_entry_hold(cache, entry);
    pthread_mutex_unlock(&cache->lock);
}

void uct_gpumem_ipc_cache_put(uct_gpumem_ipc_cache_t *cache,
                              uct_gpumem_ipc_cache_entry_t *entry)
{
    pthread_mutex_lock(&cache->lock);
    ucs_assert(entry->refcount > 0);
    if (--entry->refcount == 0) {
        ucs_list_add_tail(&cache->idle, &entry->idle_list);
        ++cache->num_idle;
        ++uct_gpumem_ipc_counters.idle;
        /* The process's own memory (another UCP context of it, on another
         * GPU) is not kept idle: the mapping would hold the VRAM past the
         * process's free, which no key of a new allocation may ever come to
         * tell, and the next key maps it again for an import's cost */
        if (entry->stale || (entry->owner == gpumem_proc_pid())) {
            uct_gpumem_ipc_entry_destroy(cache, entry);
        } else {
            uct_gpumem_ipc_cache_trim(cache);
        }
    }
    pthread_mutex_unlock(&cache->lock);
}

ucs_status_t uct_gpumem_ipc_cache_map(uct_gpumem_ipc_cache_t *cache,
                                      uct_gpumem_ipc_cache_entry_t *entry,
                                      unsigned gpu,
                                      gpumem_region_t **region_p)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&cache->lock);
    if (entry->regions[gpu] == NULL) {
        status = uct_gpumem_ipc_gpu_reaches(cache->context, gpu, &entry->gpu,
                                            NULL) ?
                 uct_gpumem_ipc_cache_import(cache, entry, gpu) :
                 UCS_ERR_UNREACHABLE;
    }
    if (status == UCS_OK) {
        *region_p = entry->regions[gpu];
    }
    pthread_mutex_unlock(&cache->lock);
    return status;
}

void uct_gpumem_ipc_stats_count_op(int is_put, size_t length)
{
    ucs_atomic_add64(is_put ? &uct_gpumem_ipc_counters.puts :
                              &uct_gpumem_ipc_counters.gets, 1);
    ucs_atomic_add64(&uct_gpumem_ipc_counters.bytes, length);
}

void uct_gpumem_ipc_stats(uct_gpumem_ipc_stats_t *stats)
{
    *stats = uct_gpumem_ipc_counters;
}
