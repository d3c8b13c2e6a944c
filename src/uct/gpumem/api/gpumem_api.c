/**
 * gpumem: device memory calls for applications (gpumem.h), on the process's
 * GPUs that the plugin's memory domain also uses.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_api_range.h"

#include <gpumem/gpumem.h>

#include <uct/api/version.h>
#include <uct/gpumem/compat/gpumem_abi.h>
#include <uct/gpumem/gpumem_context.h>
#include <uct/gpumem/ipc/ipc_stats.h>
#include <uct/gpumem/rc/rc_stats.h>
#include <uct/gpumem/mem/gpumem_copy.h>
#include <ucm/gpumem/ucm_gpumem.h>
#include <ucs/arch/atomic.h>
#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <pthread.h>
#include <string.h>


/* An allocation gpumem_device_malloc gave, and the reference it holds */
typedef struct gpumem_api_alloc {
    gpumem_region_t      *region;
    uct_gpumem_context_t *context;
} gpumem_api_alloc_t;

/* What gpumem_device_malloc gave, by address: only that is freed by
 * gpumem_device_free */
KHASH_MAP_INIT_INT64(gpumem_api_allocs, gpumem_api_alloc_t)


/* Recursive, as the context's: a fork while it is held takes it again */
static pthread_mutex_t gpumem_api_lock        =
        PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static uct_gpumem_context_t *gpumem_api_open  = NULL; /* The calls' hold */
static khash_t(gpumem_api_allocs) gpumem_api_allocs;   /* Under the lock */
static ucs_memory_type_t gpumem_api_mem_type  = UCS_MEMORY_TYPE_CUDA;
static __thread int gpumem_api_device         = 0;
static pthread_once_t gpumem_api_atfork_once  = PTHREAD_ONCE_INIT;


#define GPUMEM_API_CHECK_ARG(_arg, _call) \
    do { \
        if ((_arg) == NULL) { \
            ucs_error("gpumem: %s: " #_arg " is NULL", _call); \
            return UCS_ERR_INVALID_PARAM; \
        } \
    } while (0)


static void gpumem_api_atfork_prepare(void)
{
    pthread_mutex_lock(&gpumem_api_lock);
}

static void gpumem_api_atfork_parent(void)
{
    pthread_mutex_unlock(&gpumem_api_lock);
}

/* The child of a fork leaves its parent's GPUs and allocations alone (the
 * context does as well): its first call opens its own */
static void gpumem_api_atfork_child(void)
{
    gpumem_api_open = NULL;
    kh_clear(gpumem_api_allocs, &gpumem_api_allocs);
    /* Anew, not unlocked: its owner was a thread of the parent */
    gpumem_api_lock = (pthread_mutex_t)PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
}

static void gpumem_api_atfork_register(void)
{
    uct_gpumem_context_init_atfork();
    pthread_atfork(gpumem_api_atfork_prepare, gpumem_api_atfork_parent,
                   gpumem_api_atfork_child);
}

/* Opens the process's GPUs with the UCX_GPUMEM_* settings, if no memory
 * domain has them open, for the calls to hold (api lock held) */
static ucs_status_t gpumem_api_context_open(void)
{
    static volatile uint32_t refusal_said = 0;
    uct_gpumem_settings_t settings;
    ucs_status_t status;

    /* A plugin built against another UCX must not run: UCX's internal
     * structs are not the ones it was compiled with */
    status = uct_gpumem_abi_status();
    if (status != UCS_OK) {
        ucs_log((ucs_atomic_cswap32(&refusal_said, 0, 1) == 0) ?
                UCS_LOG_LEVEL_ERROR : UCS_LOG_LEVEL_DEBUG,
                "gpumem: gpumem.h's calls are refused: the plugin does not "
                "run in this UCX (it was built against UCX %s; see the line "
                "that said why when it was loaded)", UCT_VERNO_STRING);
        return status;
    }

    status = uct_gpumem_settings_read(&settings);
    if (status != UCS_OK) {
        return status;
    }

    gpumem_api_mem_type = settings.mem_type;
    status              = uct_gpumem_context_get(&settings, &gpumem_api_open);
    uct_gpumem_settings_release(&settings);
    return status;
}

/*
 * A reference on the process's GPUs for one call, or for one allocation
 * until its free. The calls hold them open from the first call on, until
 * gpumem_device_reset() or the process's exit.
 */
static ucs_status_t gpumem_api_context_get(uct_gpumem_context_t **context_p)
{
    ucs_status_t status = UCS_OK;

    pthread_once(&gpumem_api_atfork_once, gpumem_api_atfork_register);
    pthread_mutex_lock(&gpumem_api_lock);
    if (gpumem_api_open == NULL) {
        status = gpumem_api_context_open();
    }
    if (status == UCS_OK) {
        uct_gpumem_context_ref(gpumem_api_open);
        *context_p = gpumem_api_open;
    }
    pthread_mutex_unlock(&gpumem_api_lock);
    return status;
}

gpumem_result_t gpumem_device_reset(void)
{
    pthread_mutex_lock(&gpumem_api_lock);
    if (gpumem_api_open != NULL) {
        uct_gpumem_context_put(gpumem_api_open);
        gpumem_api_open = NULL;
    }
    pthread_mutex_unlock(&gpumem_api_lock);
    return UCS_OK;
}

static void UCS_F_DTOR gpumem_api_cleanup(void)
{
    gpumem_device_reset();
    kh_destroy_inplace(gpumem_api_allocs, &gpumem_api_allocs);
}

gpumem_result_t gpumem_device_count(int *count)
{
    uct_gpumem_context_t *context;
    ucs_status_t status;

    GPUMEM_API_CHECK_ARG(count, "gpumem_device_count");
    status = gpumem_api_context_get(&context);
    if (status == UCS_OK) {
        *count = context->num_gpus;
        uct_gpumem_context_put(context);
    }
    return status;
}

gpumem_result_t gpumem_device_set(int device)
{
    uct_gpumem_context_t *context;
    ucs_status_t status;

    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    if ((device < 0) || ((unsigned)device >= context->num_gpus)) {
        ucs_error("gpumem: no GPU %d: the machine has %u", device,
                  context->num_gpus);
        status = UCS_ERR_INVALID_PARAM;
    } else {
        gpumem_api_device = device;
    }
    uct_gpumem_context_put(context);
    return status;
}

gpumem_result_t gpumem_device_get(int *device)
{
    GPUMEM_API_CHECK_ARG(device, "gpumem_device_get");
    *device = gpumem_api_device;
    return UCS_OK;
}

/* Records an allocation for its free; UCS_ERR_NO_MEMORY if it cannot */
static ucs_status_t gpumem_api_record(void *ptr,
                                      const gpumem_api_alloc_t *alloc)
{
    khiter_t iter;
    int ret;

    pthread_mutex_lock(&gpumem_api_lock);
    iter = kh_put(gpumem_api_allocs, &gpumem_api_allocs, (uintptr_t)ptr,
                  &ret);
    if (ret >= 0) {
        kh_val(&gpumem_api_allocs, iter) = *alloc;
    }
    pthread_mutex_unlock(&gpumem_api_lock);
    return (ret >= 0) ? UCS_OK : UCS_ERR_NO_MEMORY;
}

/* Takes an allocation off the record: 0 if gpumem_device_malloc did not
 * give @a ptr, or it was freed */
static int gpumem_api_forget(void *ptr, gpumem_api_alloc_t *alloc)
{
    khiter_t iter;
    int found;

    pthread_mutex_lock(&gpumem_api_lock);
    iter  = kh_get(gpumem_api_allocs, &gpumem_api_allocs, (uintptr_t)ptr);
    found = (iter != kh_end(&gpumem_api_allocs));
    if (found) {
        *alloc = kh_val(&gpumem_api_allocs, iter);
        kh_del(gpumem_api_allocs, &gpumem_api_allocs, iter);
    }
    pthread_mutex_unlock(&gpumem_api_lock);
    return found;
}

gpumem_result_t gpumem_device_malloc(void **ptr, size_t size)
{
    int device = gpumem_api_device;
    uct_gpumem_context_t *context;
    gpumem_api_alloc_t alloc;
    gpumem_region_t *region;
    ucs_status_t status;
    char free_str[64];

    GPUMEM_API_CHECK_ARG(ptr, "gpumem_device_malloc");
    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    if ((unsigned)device >= context->num_gpus) {
        ucs_error("gpumem: the thread's GPU %d is not one of the %u GPUs",
                  device, context->num_gpus);
        status = UCS_ERR_INVALID_PARAM;
        goto err_put;
    }

    status = gpumem_alloc(context->gpus[device], GPUMEM_KIND_GPU, size, 0,
                          &region);
    if (status == UCS_ERR_NO_MEMORY) {
        ucs_error("gpumem: gpumem_device_malloc of %zu bytes on GPU %d: no "
                  "room now, %s", size, device,
                  gpumem_gpu_vram_free_str(context->gpus[device], free_str,
                                           sizeof(free_str)));
    }
    if (status != UCS_OK) {
        goto err_put;
    }

    alloc.region  = region;
    alloc.context = context;
    status        = gpumem_api_record((void*)gpumem_region_address(region),
                                      &alloc);
    if (status != UCS_OK) {
        ucs_error("gpumem: gpumem_device_malloc: failed to record an "
                  "allocation");
        gpumem_free(context->gpus[device], region);
        goto err_put;
    }

    /* The allocation keeps the reference until its free */
    *ptr = (void*)gpumem_region_address(region);
    ucm_gpumem_dispatch_alloc(*ptr, gpumem_region_size(region),
                              gpumem_api_mem_type, context->sys_devs[device]);
    return UCS_OK;

err_put:
    uct_gpumem_context_put(context);
    return status;
}

/* The allocation that holds @a ptr on its GPU */
static ucs_status_t gpumem_api_find(uct_gpumem_context_t *context,
                                    const void *ptr, int *gpu_p,
                                    uint64_t *base_p, size_t *size_p)
{
    int gpu = uct_gpumem_context_find_gpu(context, ptr);

    if (gpu < 0) {
        return UCS_ERR_INVALID_ADDR;
    }

    *gpu_p = gpu;
    return (gpumem_find_range(context->gpus[gpu], (uintptr_t)ptr, base_p,
                              size_p) == UCS_OK) ? UCS_OK :
                                                   UCS_ERR_INVALID_ADDR;
}

gpumem_result_t gpumem_device_free(void *ptr)
{
    gpumem_api_alloc_t alloc;
    ucs_status_t status;

    if (ptr == NULL) {
        return UCS_OK;
    }

    /* Off the record first: of two frees of one pointer, one frees it */
    if (!gpumem_api_forget(ptr, &alloc)) {
        ucs_error("gpumem: free of %p, which no gpumem_device_malloc gave, "
                  "or which was freed", ptr);
        return UCS_ERR_INVALID_ADDR;
    }

    ucm_gpumem_dispatch_free(ptr, gpumem_region_size(alloc.region),
                             gpumem_api_mem_type);
    status = gpumem_free(gpumem_region_gpu(alloc.region), alloc.region);
    uct_gpumem_context_put(alloc.context);
    return status;
}

/* Moves @a size bytes whose ranges were checked: @a dst_gpu and @a src_gpu
 * are the GPUs that hold them, or -1 for host memory */
static ucs_status_t gpumem_api_copy(uct_gpumem_context_t *context,
                                    void *dst, int dst_gpu, const void *src,
                                    int src_gpu, size_t size)
{
    gpumem_region_t *src_region, *peer;
    ucs_status_t status;
    uint64_t peer_src;

    if ((dst_gpu < 0) && (src_gpu < 0)) {
        memcpy(dst, src, size);
        return UCS_OK;
    } else if ((dst_gpu < 0) || (src_gpu < 0) || (dst_gpu == src_gpu)) {
        return gpumem_copy_sync(context->gpus[(dst_gpu >= 0) ? dst_gpu :
                                                               src_gpu],
                                (uintptr_t)dst, dst_gpu >= 0,
                                (uintptr_t)src, src_gpu >= 0, size);
    }

    src_region = gpumem_find_region(context->gpus[src_gpu], (uintptr_t)src);
    if (src_region == NULL) {
        /* Freed by another thread since the check */
        ucs_error("gpumem: memcpy from %p, which no allocation holds", src);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Between two GPUs: the destination's engine, through a peer mapping
     * of the source */
    status = gpumem_map_peer(context->gpus[dst_gpu], src_region, &peer);
    if (status == UCS_OK) {
        peer_src = gpumem_region_address(peer) +
                   ((uintptr_t)src - gpumem_region_address(src_region));
        status   = gpumem_copy_sync(context->gpus[dst_gpu], (uintptr_t)dst,
                                    1, peer_src, 1, size);
        gpumem_free(context->gpus[dst_gpu], peer);
    }
    return status;
}

gpumem_result_t gpumem_device_memcpy(void *dst, const void *src, size_t size)
{
    uct_gpumem_context_t *context;
    int dst_gpu, src_gpu;
    ucs_status_t status;

    if (size == 0) {
        return UCS_OK;
    }

    GPUMEM_API_CHECK_ARG(dst, "gpumem_device_memcpy");
    GPUMEM_API_CHECK_ARG(src, "gpumem_device_memcpy");
    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_api_range_check(context, src, size,
                                    "gpumem_device_memcpy", "src", 0,
                                    &src_gpu);
    if (status == UCS_OK) {
        status = gpumem_api_range_check(context, dst, size,
                                        "gpumem_device_memcpy", "dst", 1,
                                        &dst_gpu);
    }
    if (status == UCS_OK) {
        status = gpumem_api_copy(context, dst, dst_gpu, src, src_gpu, size);
    }

    uct_gpumem_context_put(context);
    return status;
}

gpumem_result_t gpumem_device_memset(void *ptr, int value, size_t size)
{
    char chunk[4096];
    uct_gpumem_context_t *context;
    size_t offset, length;
    ucs_status_t status;
    int gpu;

    if (size == 0) {
        return UCS_OK;
    }

    /* The whole range first, once: a set that runs past its allocation
     * writes nothing */
    GPUMEM_API_CHECK_ARG(ptr, "gpumem_device_memset");
    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }
    status = gpumem_api_range_check(context, ptr, size,
                                    "gpumem_device_memset", "ptr", 1, &gpu);

    memset(chunk, value, sizeof(chunk));
    for (offset = 0; (status == UCS_OK) && (offset < size);
         offset += length) {
        length = ucs_min(sizeof(chunk), size - offset);
        status = gpumem_api_copy(context, UCS_PTR_BYTE_OFFSET(ptr, offset),
                                 gpu, chunk, -1, length);
    }

    uct_gpumem_context_put(context);
    return status;
}

gpumem_result_t gpumem_device_query(const void *ptr,
                                    gpumem_pointer_attr_t *attr)
{
    uct_gpumem_context_t *context;
    ucs_status_t status;
    uint64_t base;
    size_t size;
    int gpu;

    GPUMEM_API_CHECK_ARG(attr, "gpumem_device_query");
    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    memset(attr, 0, sizeof(*attr));
    attr->device = -1;
    if (gpumem_api_find(context, ptr, &gpu, &base, &size) == UCS_OK) {
        attr->is_device = 1;
        attr->device    = gpu;
        attr->base      = (void*)(uintptr_t)base;
        attr->size      = size;
    }
    uct_gpumem_context_put(context);
    return UCS_OK;
}

gpumem_result_t gpumem_device_mem_get_info(size_t *free, size_t *total)
{
    uct_gpumem_context_t *context;
    size_t vram_free;
    ucs_status_t status;
    int device;

    GPUMEM_API_CHECK_ARG(free, "gpumem_device_mem_get_info");
    GPUMEM_API_CHECK_ARG(total, "gpumem_device_mem_get_info");
    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    device = gpumem_api_device;
    if ((unsigned)device >= context->num_gpus) {
        ucs_error("gpumem: the thread's GPU %d is not one of the %u GPUs",
                  device, context->num_gpus);
        status = UCS_ERR_INVALID_PARAM;
    } else {
        status = gpumem_gpu_vram_free(context->gpus[device], &vram_free);
    }
    if (status == UCS_OK) {
        *free  = vram_free;
        *total = gpumem_gpu_vram_size(context->gpus[device]);
    }
    uct_gpumem_context_put(context);
    return status;
}

gpumem_result_t gpumem_device_can_access_peer(int *can_access, int device,
                                              int peer_device, char *reason,
                                              size_t max_reason)
{
    uct_gpumem_context_t *context;
    gpumem_topo_verdict_t verdict;
    ucs_status_t status;
    int reaches;

    GPUMEM_API_CHECK_ARG(can_access, "gpumem_device_can_access_peer");
    status = gpumem_api_context_get(&context);
    if (status != UCS_OK) {
        return status;
    }

    if ((device < 0) || (peer_device < 0) ||
        ((unsigned)device >= context->num_gpus) ||
        ((unsigned)peer_device >= context->num_gpus)) {
        ucs_error("gpumem: GPUs %d and %d are not both of the %u GPUs",
                  device, peer_device, context->num_gpus);
        uct_gpumem_context_put(context);
        return UCS_ERR_INVALID_PARAM;
    }

    if (device == peer_device) {
        reaches = 1;
        ucs_strncpy_zero(verdict.reason, "the same GPU",
                         sizeof(verdict.reason));
    } else {
        reaches = gpumem_topo_reaches(gpumem_gpu_reach(context->gpus[device]),
                                      gpumem_gpu_reach(
                                              context->gpus[peer_device]),
                                      0, &verdict);
    }
    uct_gpumem_context_put(context);

    if ((reason != NULL) && (max_reason > 0)) {
        ucs_strncpy_zero(reason, verdict.reason, max_reason);
    }
    *can_access = reaches;
    return UCS_OK;
}

gpumem_result_t gpumem_ipc_bytes(unsigned long long *bytes)
{
    uct_gpumem_ipc_stats_t stats;

    GPUMEM_API_CHECK_ARG(bytes, "gpumem_ipc_bytes");
    uct_gpumem_ipc_stats(&stats);
    *bytes = stats.bytes;
    return UCS_OK;
}

gpumem_result_t gpumem_rc_bytes(unsigned long long *bytes)
{
    GPUMEM_API_CHECK_ARG(bytes, "gpumem_rc_bytes");
    *bytes = uct_gpumem_rc_bytes();
    return UCS_OK;
}

/* Whether @a result is a status UCS names: its own string for an unknown
 * one begins "Unknown error" */
static int gpumem_api_is_status(gpumem_result_t result)
{
    static const char unknown[] = "Unknown error";

    return (result <= UCS_INPROGRESS) && (result > UCS_ERR_LAST) &&
           (strncmp(ucs_status_string((ucs_status_t)result), unknown,
                    sizeof(unknown) - 1) != 0);
}

const char *gpumem_result_string(gpumem_result_t result)
{
    if (!gpumem_api_is_status(result)) {
        return "not a gpumem result";
    }
    return ucs_status_string((ucs_status_t)result);
}
