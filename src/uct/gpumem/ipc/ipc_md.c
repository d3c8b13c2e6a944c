/**
 * gpumem IPC transport: the gpumem_ipc component and memory domain.
 *
 * Its own component, as cuda_ipc is, because UCP keys remote memory by
 * memory domain: the gpumem domain's keys are empty (the copy transport
 * reaches only its own process), these carry what a peer process needs to
 * map the memory. Registration exports the allocation that holds the range;
 * unpacking checks the key, the owner and the path between the GPUs, then
 * maps the memory through the process's cache.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_md.h"
#include <uct/gpumem/util/gpumem_proc.h>
#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/util/gpumem_config.h>
#include "ipc_reach.h"

#include <uct/gpumem/gpumem_context.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>
#include <unistd.h>


static ucs_config_field_t uct_gpumem_ipc_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_ipc_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"CACHE_MAX_IDLE", "64",
     "Mappings of peers' device memory that the process keeps when no remote\n"
     "key uses them, so that the next key of the same memory maps nothing.\n"
     "Each keeps its memory in use after the owner's free, until the owner\n"
     "reuses the address, exits, or the mapping is the least recently used\n"
     "past this many. Mappings of the process's own memory are not kept.",
     ucs_offsetof(uct_gpumem_ipc_md_config_t, cache_max_idle),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {"CACHE_SWEEP_INTERVAL", "1s",
     "How often UCX's async thread drops the idle mappings of peers'\n"
     "memory whose owner process is gone, giving that memory back soon\n"
     "after the owner's death; \"inf\": only when a key of a new\n"
     "allocation of the same owner comes.",
     ucs_offsetof(uct_gpumem_ipc_md_config_t, cache_sweep),
     UCT_GPUMEM_CONFIG_TYPE_TIME_UNITS},

    {NULL}
};


static uct_gpumem_ipc_cache_t *
uct_gpumem_ipc_component_get_cache(uct_gpumem_ipc_component_t *component)
{
    uct_gpumem_ipc_cache_t *cache;

    pthread_mutex_lock(&component->lock);
    cache = component->cache;
    if (cache != NULL) {
        ++component->users;
    }
    pthread_mutex_unlock(&component->lock);
    return cache;
}

static void
uct_gpumem_ipc_component_put_cache(uct_gpumem_ipc_component_t *component)
{
    uct_gpumem_ipc_cache_t *cache = NULL;

    pthread_mutex_lock(&component->lock);
    ucs_assert(component->users > 0);
    if (--component->users == 0) {
        cache            = component->cache;
        component->cache = NULL;
    }
    pthread_mutex_unlock(&component->lock);

    if (cache != NULL) {
        uct_gpumem_ipc_cache_destroy(cache);
    }
}

static ucs_status_t uct_gpumem_ipc_md_query_attr(uct_md_h uct_md,
                                                 uct_gpumem_md_attr_t *md_attr)
{
    uct_gpumem_ipc_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ipc_md_t);

    /* INVALIDATE: UCP's error handling of peers needs it (mem_dereg) */
    md_attr->flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY |
                                UCT_GPUMEM_MD_FLAG_INVALIDATE;
    /* It allocates nothing (no UCT_MD_FLAG_ALLOC); what one transfer may
     * move is an allocation of the GPU's memory, and UCX's users size
     * transfers by max_alloc */
    md_attr->max_alloc        = gpumem_gpu_vram_size(
            md->context->gpus[md->gpu]);
    md_attr->max_reg          = SIZE_MAX;
    md_attr->reg_mem_types    = UCS_BIT(md->mem_type);
    md_attr->access_mem_types = UCS_BIT(md->mem_type);
    /* UCX 1.13 resolves a remote key for ucp_put/ucp_get
     * (ucp_rkey_resolve_inner) by checking each RMA lane's domain against
     * host memory, whatever the memory of the key: a domain that names no
     * host memory type never carries UCP's RMA, and UCP emulates it with the
     * CPU, which faults on device memory. The domain names host memory here
     * only: without UCT_MD_FLAG_ALLOC, UCT allocates nothing through it, and
     * UCP chooses it for no host memory lane. */
    md_attr->alloc_mem_types  = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->detect_mem_types = 0;
    md_attr->rkey_packed_size = uct_gpumem_ipc_key_packed_size();
    /* An export: a lock and a few words written, nothing pinned */
    md_attr->reg_cost         = ucs_linear_func_make(100e-9, 0);
    return UCS_OK;
}

UCT_GPUMEM_MD_QUERY_DEFINE(uct_gpumem_ipc_md_query,
                           uct_gpumem_ipc_md_query_attr)

static ucs_status_t
uct_gpumem_ipc_md_mem_reg_flags(uct_md_h uct_md, void *address,
                                size_t length, unsigned flags,
                                uct_mem_h *memh_p)
{
    uct_gpumem_ipc_md_t *md   = ucs_derived_of(uct_md, uct_gpumem_ipc_md_t);
    ucs_log_level_t log_level = (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
                                UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR;
    uint64_t start            = (uintptr_t)address;
    uct_gpumem_ipc_memh_t *memh;
    gpumem_region_t *region;
    uint64_t alloc_address;
    ucs_status_t status;
    size_t alloc_size;
    int gpu;

    gpu = uct_gpumem_context_find_gpu(md->context, address);
    if (gpu < 0) {
        ucs_log(log_level, "gpumem_ipc: cannot register %zu bytes at %p: no "
                "device memory allocation holds them", length, address);
        return UCS_ERR_INVALID_ADDR;
    }

    memh = ucs_malloc(sizeof(*memh), "gpumem_ipc_memh");
    if (memh == NULL) {
        ucs_error("gpumem_ipc: failed to allocate a registration");
        return UCS_ERR_NO_MEMORY;
    }

    /* The plugin's own allocation, else the application's (cudaMalloc),
     * where the driver has handles of it */
    region = gpumem_find_region(md->context->gpus[gpu], start);
    if (region != NULL) {
        alloc_address = gpumem_region_address(region);
        alloc_size    = gpumem_region_size(region);
        status        = !gpumem_alloc_holds(alloc_address, alloc_size, start,
                                            length) ?
                        UCS_ERR_INVALID_ADDR :
                        gpumem_export(region, memh->key.handle,
                                      &memh->key.handle_len);
    } else {
        status = gpumem_export_addr(md->context->gpus[gpu], address,
                                    memh->key.handle, &memh->key.handle_len,
                                    &alloc_address, &alloc_size);
    }
    if ((status == UCS_OK) &&
        !gpumem_alloc_holds(alloc_address, alloc_size, start, length)) {
        status = UCS_ERR_INVALID_ADDR;
    }
    if (status != UCS_OK) {
        ucs_log(log_level, "gpumem_ipc: cannot register %zu bytes at %p: no "
                "device memory allocation holds them, or it has no handle "
                "(%s)", length, address, ucs_status_string(status));
        ucs_free(memh);
        return (status == UCS_ERR_UNSUPPORTED) ? UCS_ERR_INVALID_ADDR :
               status;
    }

    memh->key.uid           = gpumem_proc_euid();
    memh->key.pid           = gpumem_proc_pid();
    memh->key.machine       = uct_gpumem_ipc_cache_machine(md->cache);
    memh->key.gpu           = gpumem_gpu_reach(md->context->gpus[gpu])->addr;
    memh->key.alloc_address = alloc_address;
    memh->key.alloc_size    = alloc_size;
    memh->key.address       = start;
    /* The key gives the allocation's bytes only: the rest of its last
     * block, which a rounded registration covers, is no memory to reach */
    memh->key.length        = ucs_min(length,
                                      alloc_address + alloc_size - start);
    *memh_p                 = memh;
    ucs_trace("gpumem_ipc: registered %zu bytes at %p on GPU %d", length,
              address, gpu);
    return UCS_OK;
}

UCT_GPUMEM_MD_MEM_REG_DEFINE(uct_gpumem_ipc_md_mem_reg,
                             uct_gpumem_ipc_md_mem_reg_flags)

static ucs_status_t
uct_gpumem_ipc_md_mem_dereg(uct_md_h UCS_V_UNUSED uct_md,
                            const uct_md_mem_dereg_params_t *params)
{
    uct_completion_t *comp;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 1);

    ucs_free(params->memh);

    /* An invalidation (UCP's, of a failed peer's requests) is done at once:
     * a peer fails by dying, and a dead process reaches no memory. A live
     * peer keeps what it imported until it releases it, as cuda_ipc's do */
    comp = UCT_MD_MEM_DEREG_FIELD_VALUE(params, comp, FIELD_COMPLETION, NULL);
    if ((UCT_MD_MEM_DEREG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0) &
         UCT_MD_MEM_DEREG_FLAG_INVALIDATE) && (comp != NULL)) {
        uct_invoke_completion(comp, UCS_OK);
    }
    return UCS_OK;
}

static ucs_status_t
uct_gpumem_ipc_md_mkey_pack_key(uct_md_h UCS_V_UNUSED uct_md,
                                uct_mem_h uct_memh,
                                void UCS_V_UNUSED *address,
                                size_t UCS_V_UNUSED length,
                                const uct_md_mkey_pack_params_t UCS_V_UNUSED
                                        *params,
                                void *rkey_buffer)
{
    const uct_gpumem_ipc_memh_t *memh = uct_memh;

    uct_gpumem_ipc_key_pack(&memh->key, rkey_buffer);
    return UCS_OK;
}

UCT_GPUMEM_MD_MKEY_PACK_DEFINE(uct_gpumem_ipc_md_mkey_pack,
                               uct_gpumem_ipc_md_mkey_pack_key)

static void uct_gpumem_ipc_md_close(uct_md_h uct_md)
{
    uct_gpumem_ipc_md_t *md = ucs_derived_of(uct_md, uct_gpumem_ipc_md_t);

    uct_gpumem_ipc_component_put_cache(&uct_gpumem_ipc_component);
    ucs_free(md);
}

static uct_md_ops_t uct_gpumem_ipc_md_ops = {
    .close                  = uct_gpumem_ipc_md_close,
    .query                  = uct_gpumem_ipc_md_query,
    .mem_alloc              = uct_gpumem_md_mem_alloc_unsupported,
    .mem_free               = uct_gpumem_md_mem_free_unsupported,
    .mem_advise             = uct_gpumem_md_mem_advise_unsupported,
    .mem_reg                = uct_gpumem_ipc_md_mem_reg,
    .mem_dereg              = uct_gpumem_ipc_md_mem_dereg,
    .mem_query              = uct_gpumem_md_mem_query_unsupported,
    .mkey_pack              = uct_gpumem_ipc_md_mkey_pack,
    .detect_memory_type     = uct_gpumem_md_detect_memory_type_unsupported,
    UCT_GPUMEM_MD_OPS_COMPAT
};

static ucs_status_t
uct_gpumem_ipc_md_open(uct_component_t *uct_component, const char *md_name,
                       const uct_md_config_t *uct_md_config, uct_md_h *md_p)
{
    uct_gpumem_ipc_component_t *component =
            ucs_derived_of(uct_component, uct_gpumem_ipc_component_t);
    const uct_gpumem_ipc_md_config_t *md_config =
            ucs_derived_of(uct_md_config, uct_gpumem_ipc_md_config_t);
    uct_gpumem_settings_t settings;
    uct_gpumem_ipc_md_t *md;
    ucs_status_t status;

    md = ucs_calloc(1, sizeof(*md), "uct_gpumem_ipc_md_t");
    if (md == NULL) {
        ucs_error("gpumem_ipc: failed to allocate memory domain %s", md_name);
        return UCS_ERR_NO_MEMORY;
    }

    /* The first domain opens the process's cache, which maps unpacked keys
     * on its GPU first (UCT unpacks with the component, naming no domain);
     * each domain's own GPU is its settings', for its address and copies */
    status = uct_gpumem_settings_read(&settings);
    if (status != UCS_OK) {
        goto err_free;
    }

    pthread_mutex_lock(&component->lock);
    if (component->cache == NULL) {
        status = uct_gpumem_ipc_cache_create(&settings, settings.alloc_gpu,
                                             md_config->cache_max_idle,
                                             md_config->cache_sweep,
                                             &component->cache);
    }
    if (status == UCS_OK) {
        ++component->users;
        md->cache = component->cache;
    }
    pthread_mutex_unlock(&component->lock);
    md->mem_type = settings.mem_type;
    md->gpu      = settings.alloc_gpu;
    uct_gpumem_settings_release(&settings);
    if (status != UCS_OK) {
        goto err_free;
    }

    md->context = uct_gpumem_ipc_cache_context(md->cache);
    if (md->gpu >= md->context->num_gpus) {
        ucs_error("gpumem_ipc: memory domain %s is for GPU %u "
                  "(UCX_GPUMEM_ALLOC_GPU), but the machine has %u", md_name,
                  md->gpu, md->context->num_gpus);
        status = UCS_ERR_NO_DEVICE;
        goto err_put_cache;
    }

    md->super.ops       = &uct_gpumem_ipc_md_ops;
    md->super.component = uct_component;
    *md_p               = &md->super;
    return UCS_OK;

err_put_cache:
    uct_gpumem_ipc_component_put_cache(component);
err_free:
    ucs_free(md);
    return status;
}

/* A key is bytes from a peer: its form, its owner and the path from this
 * process's GPU to the owner's are checked before anything is mapped */
static ucs_status_t
uct_gpumem_ipc_rkey_unpack_key(uct_component_t *uct_component,
                               const void *rkey_buffer, uct_rkey_t *rkey_p,
                               void **handle_p)
{
    uct_gpumem_ipc_component_t *component =
            ucs_derived_of(uct_component, uct_gpumem_ipc_component_t);
    uct_gpumem_ipc_cache_entry_t *entry;
    uct_gpumem_ipc_cache_t *cache;
    uct_gpumem_ipc_rkey_t *rkey;
    uct_gpumem_ipc_key_t key;
    ucs_status_t status;

    /* UCP (1.13 at least) releases a key whose unpack failed with the keys
     * of the other memory domains: until it succeeds, it is no key */
    *rkey_p = 0;

    cache = uct_gpumem_ipc_component_get_cache(component);
    if (cache == NULL) {
        ucs_error("gpumem_ipc: cannot unpack a remote key: no gpumem_ipc "
                  "memory domain is open in this process");
        return UCS_ERR_NO_DEVICE;
    }

    status = uct_gpumem_ipc_key_unpack(rkey_buffer,
                                       uct_gpumem_ipc_key_packed_size(), &key);
    if (status != UCS_OK) {
        goto err_put_cache;
    }

    status = uct_gpumem_ipc_key_check_owner(&key, gpumem_proc_euid(),
                                            uct_gpumem_ipc_cache_machine(
                                                    cache));
    if (status != UCS_OK) {
        goto err_put_cache;
    }

    rkey = ucs_malloc(sizeof(*rkey), "gpumem_ipc_rkey");
    if (rkey == NULL) {
        ucs_error("gpumem_ipc: failed to allocate a remote key");
        status = UCS_ERR_NO_MEMORY;
        goto err_put_cache;
    }

    /* Memory this process cannot map (the kernel refuses to hand over the
     * owner's descriptor, the owner is gone, the GPUs do not reach) is
     * "unreachable" for UCP, which then moves the data another way: any
     * other status fails the whole remote key, and UCP's rendezvous
     * aborts the process on that. The import said why. A key that is
     * malformed stays an error. */
    status = uct_gpumem_ipc_cache_get(cache, &key, &entry);
    if (status == UCS_ERR_INVALID_PARAM) {
        goto err_free_rkey;
    } else if (status != UCS_OK) {
        ucs_debug("gpumem_ipc: memory of process %d at 0x%lx is not mapped "
                  "here (%s): unreachable", key.pid,
                  (unsigned long)key.alloc_address,
                  ucs_status_string(status));
        status = UCS_ERR_UNREACHABLE;
        goto err_free_rkey;
    }

    rkey->entry         = entry;
    rkey->alloc_address = key.alloc_address;
    rkey->address       = key.address;
    rkey->length        = key.length;
    *rkey_p             = (uintptr_t)rkey;
    *handle_p           = NULL;
    return UCS_OK;

err_free_rkey:
    ucs_free(rkey);
err_put_cache:
    uct_gpumem_ipc_component_put_cache(component);
    return status;
}

UCT_GPUMEM_RKEY_UNPACK_DEFINE(uct_gpumem_ipc_rkey_unpack,
                              uct_gpumem_ipc_rkey_unpack_key)

static ucs_status_t
uct_gpumem_ipc_rkey_release(uct_component_t *uct_component, uct_rkey_t rkey,
                            void UCS_V_UNUSED *handle)
{
    uct_gpumem_ipc_component_t *component =
            ucs_derived_of(uct_component, uct_gpumem_ipc_component_t);
    uct_gpumem_ipc_rkey_t *ipc_rkey       = (uct_gpumem_ipc_rkey_t*)rkey;

    if (ipc_rkey == NULL) {
        /* A key whose unpack failed */
        return UCS_OK;
    }

    uct_gpumem_ipc_cache_put(component->cache, ipc_rkey->entry);
    ucs_free(ipc_rkey);
    uct_gpumem_ipc_component_put_cache(component);
    return UCS_OK;
}

uct_gpumem_ipc_component_t uct_gpumem_ipc_component = {
    .super = {
        .name               = UCT_GPUMEM_IPC_COMPONENT_NAME,
        .query_md_resources = uct_gpumem_context_query_md_resources,
        .md_open            = uct_gpumem_ipc_md_open,
        .cm_open            = uct_gpumem_component_cm_open_unsupported,
        .rkey_unpack        = uct_gpumem_ipc_rkey_unpack,
        .rkey_ptr           = uct_gpumem_component_rkey_ptr_unsupported,
        .rkey_release       = uct_gpumem_ipc_rkey_release,
        .md_config          = {
            .name           = "gpumem IPC memory domain",
            .prefix         = "GPUMEM_IPC_",
            .table          = uct_gpumem_ipc_md_config_table,
            .size           = sizeof(uct_gpumem_ipc_md_config_t),
        },
        .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
        .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                      &uct_gpumem_ipc_component.super),
        .flags              = 0,
        .md_vfs_init        = uct_gpumem_component_md_vfs_init_none,
        UCT_GPUMEM_COMPONENT_COMPAT
    },
    .lock                   = PTHREAD_MUTEX_INITIALIZER,
    .cache                  = NULL,
    .users                  = 0
};
