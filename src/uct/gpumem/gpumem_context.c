/**
 * gpumem: the process's GPUs, shared by every gpumem memory domain.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_context.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <pthread.h>


static pthread_mutex_t uct_gpumem_context_lock = PTHREAD_MUTEX_INITIALIZER;
static uct_gpumem_context_t *uct_gpumem_context_instance = NULL;


/* Makes each GPU a UCX system device, named as the topology names it, so
 * that UCX's own topology code and ucx_info see it */
static void uct_gpumem_context_register_gpus(uct_gpumem_context_t *context)
{
    const gpumem_topo_reach_t *reach;
    ucs_sys_bus_id_t bus_id;
    unsigned i;

    for (i = 0; i < context->num_gpus; ++i) {
        reach           = gpumem_gpu_reach(context->gpus[i]);
        bus_id.domain   = reach->addr.domain;
        bus_id.bus      = reach->addr.bus;
        bus_id.slot     = reach->addr.dev;
        bus_id.function = reach->addr.fn;
        if (ucs_topo_find_device_by_bus_id(&bus_id, &context->sys_devs[i]) !=
            UCS_OK) {
            context->sys_devs[i] = UCS_SYS_DEVICE_ID_UNKNOWN;
            continue;
        }
        ucs_topo_sys_device_set_name(context->sys_devs[i],
                                     context->topo->devs[i].name);
    }
}

static void uct_gpumem_context_destroy(uct_gpumem_context_t *context)
{
    unsigned i;

    for (i = 0; i < context->num_gpus; ++i) {
        if (context->gpus[i] != NULL) {
            gpumem_gpu_destroy(context->gpus[i]);
        }
    }
    if (context->driver != NULL) {
        context->driver->ops->close(context->driver);
    }
    if (context->topo != NULL) {
        gpumem_topo_destroy(context->topo);
    }
    ucs_free(context->sys_devs);
    ucs_free(context->gpus);
    ucs_free(context);
}

static ucs_status_t
uct_gpumem_context_open(const uct_gpumem_context_params_t *params,
                        uct_gpumem_context_t **context_p)
{
    gpumem_topo_params_t topo_params;
    uct_gpumem_context_t *context;
    ucs_status_t status;
    unsigned i;

    context = ucs_calloc(1, sizeof(*context), "uct_gpumem_context");
    if (context == NULL) {
        ucs_error("gpumem: failed to allocate the GPU context");
        return UCS_ERR_NO_MEMORY;
    }

    topo_params.xml_path   = params->topo_xml;
    topo_params.xml_buffer = (params->topo_xml == NULL) ?
                             gpumem_emu_builtin_topology : NULL;
    topo_params.sysfs_root = params->sysfs_root;
    topo_params.facts_path = params->topo_facts;
    status = gpumem_topo_load(&topo_params, &context->topo);
    if (status != UCS_OK) {
        goto err;
    }

    status = gpumem_emu_open(&params->emu, context->topo, &context->driver);
    if (status != UCS_OK) {
        goto err;
    }

    context->num_gpus = context->driver->ops->num_gpus(context->driver);
    context->gpus     = ucs_calloc(ucs_max(context->num_gpus, 1),
                                   sizeof(*context->gpus), "gpumem_gpus");
    context->sys_devs = ucs_calloc(ucs_max(context->num_gpus, 1),
                                   sizeof(*context->sys_devs),
                                   "gpumem_sys_devs");
    if ((context->gpus == NULL) || (context->sys_devs == NULL)) {
        ucs_error("gpumem: failed to allocate %u GPUs", context->num_gpus);
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    for (i = 0; i < context->num_gpus; ++i) {
        status = gpumem_gpu_create(context->driver, i, &context->gpus[i]);
        if (status != UCS_OK) {
            goto err;
        }
    }

    uct_gpumem_context_register_gpus(context);
    ucs_debug("gpumem: %u GPUs of the %s driver", context->num_gpus,
              context->driver->ops->name);
    *context_p = context;
    return UCS_OK;

err:
    uct_gpumem_context_destroy(context);
    return status;
}

ucs_status_t uct_gpumem_context_get(const uct_gpumem_context_params_t *params,
                                    uct_gpumem_context_t **context_p)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gpumem_context_lock);
    if (uct_gpumem_context_instance == NULL) {
        status = uct_gpumem_context_open(params,
                                         &uct_gpumem_context_instance);
    }
    if (status == UCS_OK) {
        ++uct_gpumem_context_instance->refcount;
        *context_p = uct_gpumem_context_instance;
    }
    pthread_mutex_unlock(&uct_gpumem_context_lock);
    return status;
}

void uct_gpumem_context_put(uct_gpumem_context_t *context)
{
    pthread_mutex_lock(&uct_gpumem_context_lock);
    ucs_assert(context == uct_gpumem_context_instance);
    if (--context->refcount == 0) {
        uct_gpumem_context_destroy(context);
        uct_gpumem_context_instance = NULL;
    }
    pthread_mutex_unlock(&uct_gpumem_context_lock);
}

int uct_gpumem_context_find_gpu(uct_gpumem_context_t *context,
                                const void *addr)
{
    unsigned index;

    if (!context->driver->ops->is_device_addr(context->driver, addr,
                                              &index)) {
        return -1;
    }
    return index;
}
