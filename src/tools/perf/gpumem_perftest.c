/**
 * gpumem: device memory for ucx_perftest's "-m cuda" (or rocm), on the
 * plugin's GPUs. Preload it with the plugin into ucx_perftest:
 *
 *   gpumem-preload --perftest ucx_perftest -m cuda,cuda ...
 *
 * ucx_perftest exports its table of allocators per memory type; this library
 * fills the entry of gpumem's memory type at load and empties it at unload.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <gpumem/gpumem.h>
#include <tools/perf/lib/libperf_int.h>
#include <ucs/debug/log.h>
#include <stdlib.h>
#include <string.h>


/* ucx_perftest's table; absent (NULL) in any other program */
extern const ucx_perf_allocator_t *ucx_perf_mem_type_allocators[]
        __attribute__((weak));

static ucs_memory_type_t gpumem_perftest_mem_type = UCS_MEMORY_TYPE_CUDA;


/* Each rank of a test uses its own GPU, as ucx_perftest does with CUDA */
static ucs_status_t gpumem_perftest_init(ucx_perf_context_t *perf)
{
    int count;
    ucs_status_t status;

    status = gpumem_device_count(&count);
    if ((status != UCS_OK) || (count == 0)) {
        return UCS_ERR_NO_DEVICE;
    }

    return gpumem_device_set(rte_call(perf, group_index) % count);
}

static ucs_status_t
gpumem_perftest_uct_alloc(const ucx_perf_context_t *perf, size_t length,
                          unsigned flags, uct_allocated_memory_t *alloc_mem)
{
    ucs_status_t status;

    status = gpumem_device_malloc(&alloc_mem->address, length);
    if (status != UCS_OK) {
        ucs_error("gpumem: failed to allocate %zu bytes of device memory: %s",
                  length, ucs_status_string(status));
        return status;
    }

    status = uct_md_mem_reg(perf->uct.md, alloc_mem->address, length, flags,
                            &alloc_mem->memh);
    if (status != UCS_OK) {
        ucs_error("gpumem: the memory domain of the test did not register "
                  "%zu bytes of device memory: %s", length,
                  ucs_status_string(status));
        gpumem_device_free(alloc_mem->address);
        return status;
    }

    alloc_mem->length   = length;
    alloc_mem->mem_type = gpumem_perftest_mem_type;
    alloc_mem->md       = perf->uct.md;
    alloc_mem->method   = UCT_ALLOC_METHOD_LAST;
    return UCS_OK;
}

static void gpumem_perftest_uct_free(const ucx_perf_context_t *perf,
                                     uct_allocated_memory_t *alloc_mem)
{
    if (uct_md_mem_dereg(perf->uct.md, alloc_mem->memh) != UCS_OK) {
        ucs_error("gpumem: failed to deregister device memory %p",
                  alloc_mem->address);
    }
    gpumem_device_free(alloc_mem->address);
}

static void gpumem_perftest_memcpy(void *dst,
                                   ucs_memory_type_t UCS_V_UNUSED dst_type,
                                   const void *src,
                                   ucs_memory_type_t UCS_V_UNUSED src_type,
                                   size_t count)
{
    ucs_status_t status = gpumem_device_memcpy(dst, src, count);

    if (status != UCS_OK) {
        ucs_error("gpumem: failed to copy %zu bytes: %s", count,
                  ucs_status_string(status));
    }
}

static void *gpumem_perftest_memset(void *dst, int value, size_t count)
{
    ucs_status_t status = gpumem_device_memset(dst, value, count);

    if (status != UCS_OK) {
        ucs_error("gpumem: failed to set %zu bytes: %s", count,
                  ucs_status_string(status));
    }
    return dst;
}

static ucx_perf_allocator_t gpumem_perftest_allocator = {
    .init      = gpumem_perftest_init,
    .uct_alloc = gpumem_perftest_uct_alloc,
    .uct_free  = gpumem_perftest_uct_free,
    .memcpy    = gpumem_perftest_memcpy,
    .memset    = gpumem_perftest_memset
};

UCS_STATIC_INIT {
    const char *mem_type = getenv("UCX_GPUMEM_MEM_TYPE");

    if (ucx_perf_mem_type_allocators == NULL) {
        return; /* Not ucx_perftest */
    }

    if ((mem_type != NULL) && !strcasecmp(mem_type, "rocm")) {
        gpumem_perftest_mem_type = UCS_MEMORY_TYPE_ROCM;
    }

    gpumem_perftest_allocator.mem_type = gpumem_perftest_mem_type;
    ucx_perf_mem_type_allocators[gpumem_perftest_mem_type] =
            &gpumem_perftest_allocator;
}

UCS_STATIC_CLEANUP {
    if (ucx_perf_mem_type_allocators != NULL) {
        ucx_perf_mem_type_allocators[gpumem_perftest_mem_type] = NULL;
    }
}
