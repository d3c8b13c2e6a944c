/**
 * gpumem emulated CUDA: cuInit, the library's lock, and what a fork leaves
 * the child.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <emu/machine/emu.h>
#include <ucs/config/parser.h>
#include <ucs/debug/memtrack_int.h>
#include <stdlib.h>


gpumem_emu_cuda_t gpumem_emu_cuda = {
    .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .work = PTHREAD_COND_INITIALIZER
};

__thread unsigned gpumem_emu_cuda_lock_depth;
__thread int gpumem_emu_cuda_in_host_fn;

static pthread_once_t gpumem_emu_cuda_atfork_once = PTHREAD_ONCE_INIT;


/* As with NVIDIA's driver, the child of a fork of a process that
 * initialized the library cannot use it: every call, cuInit too, is
 * CUDA_ERROR_NOT_INITIALIZED there. What the parent's state points to is
 * the parent's, and is not freed here. */
static void gpumem_emu_cuda_atfork_child(void)
{
    pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_cond_t work  = PTHREAD_COND_INITIALIZER;

    gpumem_emu_cuda.lock        = lock;
    gpumem_emu_cuda.work        = work;
    gpumem_emu_cuda_lock_depth  = 0;
    gpumem_emu_cuda_in_host_fn  = 0;
    gpumem_emu_cuda_progress_forget();
    gpumem_emu_cuda.forked      = gpumem_emu_cuda.initialized;
    gpumem_emu_cuda.initialized = 0;
    gpumem_emu_cuda.emu         = NULL;
    gpumem_emu_cuda.topo        = NULL;
    gpumem_emu_cuda.primary     = NULL;
    gpumem_emu_cuda.num_devices = 0;
}

/* The fork takes the lock, so that the child's copy of the emu driver's
 * state is not one the progress thread was changing */
static void gpumem_emu_cuda_atfork_prepare(void)
{
    pthread_mutex_lock(&gpumem_emu_cuda.lock);
}

static void gpumem_emu_cuda_atfork_parent(void)
{
    pthread_mutex_unlock(&gpumem_emu_cuda.lock);
}

static void gpumem_emu_cuda_atfork_init(void)
{
    pthread_atfork(gpumem_emu_cuda_atfork_prepare,
                   gpumem_emu_cuda_atfork_parent,
                   gpumem_emu_cuda_atfork_child);
}

void gpumem_emu_cuda_lock(void)
{
    pthread_mutex_lock(&gpumem_emu_cuda.lock);
    ++gpumem_emu_cuda_lock_depth;
}

void gpumem_emu_cuda_unlock(void)
{
    --gpumem_emu_cuda_lock_depth;
    pthread_mutex_unlock(&gpumem_emu_cuda.lock);
}

CUresult gpumem_emu_cuda_enter(void)
{
    if (gpumem_emu_cuda_in_host_fn) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    gpumem_emu_cuda_lock();
    if (!gpumem_emu_cuda.initialized) {
        gpumem_emu_cuda_unlock();
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return CUDA_SUCCESS;
}

void gpumem_emu_cuda_leave(void)
{
    gpumem_emu_cuda_unlock();
}

CUresult gpumem_emu_cuda_result(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return CUDA_SUCCESS;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
        return CUDA_ERROR_OUT_OF_MEMORY;
    case UCS_ERR_UNSUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED;
    case UCS_ERR_UNREACHABLE:
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    case UCS_ERR_INVALID_ADDR:
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    case UCS_ERR_NO_DEVICE:
        return CUDA_ERROR_NO_DEVICE;
    case UCS_ERR_INVALID_PARAM:
        return CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

gpumem_driver_gpu_t *gpumem_emu_cuda_gpu(int device)
{
    if ((device < 0) || (device >= gpumem_emu_cuda.num_devices)) {
        return NULL;
    }
    return gpumem_emu_cuda.emu->ops->gpu(gpumem_emu_cuda.emu, device);
}

int gpumem_emu_cuda_device_of(const gpumem_pci_addr_t *addr)
{
    const gpumem_topo_reach_t *reach;
    int device;

    for (device = 0; device < gpumem_emu_cuda.num_devices; ++device) {
        reach = gpumem_emu_cuda.emu->ops->reach(gpumem_emu_cuda_gpu(device));
        if (gpumem_pci_addr_equal(&reach->addr, addr)) {
            return device;
        }
    }
    return -1;
}

/* The emu driver's settings (UCX_GPUMEM_EMU_*), as UCS parses them */
static ucs_status_t gpumem_emu_cuda_config(gpumem_emu_config_t *config)
{
#ifdef HAVE_UCS_CONFIG_PARSER_FILL_OPTS_ENTRY
    return ucs_config_parser_fill_opts(config, &gpumem_emu_config_entry,
                                       UCS_DEFAULT_ENV_PREFIX, 0);
#else
    return ucs_config_parser_fill_opts(config, gpumem_emu_config_entry.table,
                                       UCS_DEFAULT_ENV_PREFIX,
                                       gpumem_emu_config_entry.prefix, 0);
#endif
}

static CUresult gpumem_emu_cuda_open(void)
{
    gpumem_emu_config_t config;
    ucs_status_t status;
    int device;

    /* The machine the plugin's emu driver emulates */
    status = gpumem_emu_topology_from_env(&gpumem_emu_cuda.topo);
    if (status != UCS_OK) {
        return CUDA_ERROR_NO_DEVICE;
    }

    status = gpumem_emu_cuda_config(&config);
    if (status != UCS_OK) {
        goto err_topo;
    }

    status = gpumem_emu_open(&config, gpumem_emu_cuda.topo,
                             &gpumem_emu_cuda.emu);
    ucs_config_parser_release_opts(&config, gpumem_emu_config_entry.table);
    if (status != UCS_OK) {
        goto err_topo;
    }

    gpumem_emu_cuda.num_devices = gpumem_emu_cuda.emu->ops->num_gpus(
            gpumem_emu_cuda.emu);
    gpumem_emu_cuda.primary     = ucs_calloc(gpumem_emu_cuda.num_devices,
                                             sizeof(*gpumem_emu_cuda.primary),
                                             "gpumem_emu_cuda_ctx");
    if (gpumem_emu_cuda.primary == NULL) {
        gpumem_emu_cuda.emu->ops->close(gpumem_emu_cuda.emu);
        goto err_topo;
    }

    for (device = 0; device < gpumem_emu_cuda.num_devices; ++device) {
        gpumem_emu_cuda.primary[device].device = device;
        ucs_list_head_init(&gpumem_emu_cuda.primary[device].streams);
    }
    ucs_list_head_init(&gpumem_emu_cuda.contexts);
    ucs_list_head_init(&gpumem_emu_cuda.ranges);
    ucs_list_head_init(&gpumem_emu_cuda.vmms);
    ucs_list_head_init(&gpumem_emu_cuda.reservations);
    ucs_debug("gpumem emulated CUDA: %d devices of the emu driver",
              gpumem_emu_cuda.num_devices);
    return CUDA_SUCCESS;

err_topo:
    gpumem_topo_destroy(gpumem_emu_cuda.topo);
    gpumem_emu_cuda.topo = NULL;
    gpumem_emu_cuda.emu  = NULL;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuInit(unsigned int flags)
{
    CUresult res;

    if (flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (gpumem_emu_cuda_in_host_fn) {
        return CUDA_ERROR_NOT_PERMITTED;
    }

    pthread_once(&gpumem_emu_cuda_atfork_once, gpumem_emu_cuda_atfork_init);
    gpumem_emu_cuda_lock();
    res = gpumem_emu_cuda.initialized ? CUDA_SUCCESS :
          gpumem_emu_cuda.forked      ? CUDA_ERROR_NOT_INITIALIZED :
                                        gpumem_emu_cuda_open();
    if (res == CUDA_SUCCESS) {
        gpumem_emu_cuda.initialized = 1;
    }
    gpumem_emu_cuda_unlock();
    return res;
}

/* Answers before cuInit too, as NVIDIA's does */
CUresult CUDAAPI cuDriverGetVersion(int *version)
{
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = GPUMEM_EMU_CUDA_VERSION;
    return CUDA_SUCCESS;
}
