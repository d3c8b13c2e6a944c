/**
 * gpumem: the process's GPUs, shared by every gpumem memory domain.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_context.h"
#include "compat/gpumem_compat.h"

#include <uct/gpumem/driver/gpumem_drivers.h>

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>


/* Recursive: a fork while it is held (the topology tries a user's XML in a
 * child) takes it again in the fork handlers */
static pthread_mutex_t uct_gpumem_context_lock =
        PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static uct_gpumem_context_t *uct_gpumem_context_instance = NULL;
static pthread_once_t uct_gpumem_context_atfork_once = PTHREAD_ONCE_INIT;

/* A driver, and its machine, that stay open until the process exits */
static struct {
    gpumem_driver_t *driver;
    gpumem_topo_t   *topo;
} uct_gpumem_context_kept[4];


static void uct_gpumem_context_atfork_prepare(void)
{
    pthread_mutex_lock(&uct_gpumem_context_lock);
}

static void uct_gpumem_context_atfork_parent(void)
{
    pthread_mutex_unlock(&uct_gpumem_context_lock);
}

/* The GPUs open at the fork are the parent's (its emu process slot, its
 * CUDA context): the child leaves them alone, and opens its own at its
 * first use */
static void uct_gpumem_context_atfork_child(void)
{
    uct_gpumem_context_instance = NULL;
    /* Anew, not unlocked: its owner was a thread of the parent */
    uct_gpumem_context_lock =
            (pthread_mutex_t)PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
}

static void uct_gpumem_context_atfork_register(void)
{
    pthread_atfork(uct_gpumem_context_atfork_prepare,
                   uct_gpumem_context_atfork_parent,
                   uct_gpumem_context_atfork_child);
}

void uct_gpumem_context_init_atfork(void)
{
    pthread_once(&uct_gpumem_context_atfork_once,
                 uct_gpumem_context_atfork_register);
}


/* The topology's name of a GPU (cuda0), or its PCI address where the
 * topology does not list it */
static const char *
uct_gpumem_context_gpu_name(uct_gpumem_context_t *context,
                            const gpumem_topo_reach_t *reach)
{
    static char name[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_dev_t *dev;

    dev = gpumem_topo_find(context->topo, &reach->addr);
    if (dev != NULL) {
        return dev->name;
    }
    /* UCX's topology keeps its own copy of the name */
    return gpumem_pci_addr_str(&reach->addr, name, sizeof(name));
}

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
        uct_gpumem_topo_set_device_name(
                context->sys_devs[i],
                uct_gpumem_context_gpu_name(context, reach));
    }
}

/* The context's driver and machine stay open until the process exits */
static void uct_gpumem_context_keep(uct_gpumem_context_t *context)
{
    unsigned i;

    for (i = 0; i < ucs_static_array_size(uct_gpumem_context_kept); ++i) {
        if (uct_gpumem_context_kept[i].driver == NULL) {
            uct_gpumem_context_kept[i].driver = context->driver;
            uct_gpumem_context_kept[i].topo   = context->topo;
            break;
        }
    }
    /* Past the slots, the process's exit ends them all the same */
    context->driver = NULL;
    context->topo   = NULL;
}

static void uct_gpumem_context_destroy(uct_gpumem_context_t *context)
{
    int bus_given = 0;
    unsigned i;

    for (i = 0; i < context->num_gpus; ++i) {
        if (context->gpus[i] != NULL) {
            bus_given |= gpumem_gpu_is_reserved(context->gpus[i]);
            gpumem_gpu_destroy(context->gpus[i]);
        }
    }
    if (bus_given) {
        /* A bus client may still write memory it was given: the driver
         * keeps it, and its machine, until the process exits */
        ucs_debug("gpumem: the %s driver stays open until the process "
                  "exits: a bus client was given memory of its GPUs",
                  context->driver->ops->name);
        uct_gpumem_context_keep(context);
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

/* What a user without GPU who wants emulated ones does */
#define UCT_GPUMEM_CONTEXT_EMU_HINT \
    "; UCX_GPUMEM_DRIVER=emu, or 'gpumem-emu COMMAND', for emulated GPUs"

ucs_status_t uct_gpumem_context_choose_driver(
        const char *name, const gpumem_driver_desc_t **desc_p, char *why_buf,
        size_t max)
{
    const gpumem_driver_desc_t *const *desc;
    char no_gpu[1024];
    size_t length;

    if (strcasecmp(name, UCT_GPUMEM_DRIVER_AUTO)) {
        *desc_p = gpumem_driver_find(name);
        if (*desc_p == NULL) {
            ucs_error("gpumem: UCX_GPUMEM_DRIVER=%s: no such driver", name);
            return UCS_ERR_INVALID_PARAM;
        }

        if (((*desc_p)->probe != NULL) &&
            ((*desc_p)->probe(no_gpu, sizeof(no_gpu)) != UCS_OK)) {
            ucs_error("gpumem: UCX_GPUMEM_DRIVER=%s: no GPU: %s", name,
                      no_gpu);
            return UCS_ERR_NO_DEVICE;
        }

        ucs_snprintf_zero(why_buf, max, "UCX_GPUMEM_DRIVER=%s", name);
        return UCS_OK;
    }

    /* The drivers of real GPUs, in the table's order; why each has none */
    why_buf[0] = '\0';
    for (desc = gpumem_drivers_list(); *desc != NULL; ++desc) {
        if ((*desc)->emulated) {
            continue;
        }

        if (((*desc)->probe == NULL) ||
            ((*desc)->probe(no_gpu, sizeof(no_gpu)) == UCS_OK)) {
            ucs_snprintf_zero(why_buf, max, "UCX_GPUMEM_DRIVER=auto: the "
                              "GPUs of the %s driver answer", (*desc)->name);
            *desc_p = *desc;
            return UCS_OK;
        }

        length = strlen(why_buf);
        ucs_snprintf_zero(why_buf + length, max - length, "%s%s: %s",
                          (length > 0) ? "; " : "", (*desc)->name, no_gpu);
    }

    return UCS_ERR_NO_DEVICE;
}

ucs_status_t uct_gpumem_context_query_md_resources(
        uct_component_t *component, uct_md_resource_desc_t **resources_p,
        unsigned *num_resources_p)
{
    static int no_gpu_said = 0;
    const gpumem_driver_desc_t *desc;
    uct_gpumem_settings_t settings;
    ucs_status_t status;
    char why[1024];

    status = uct_gpumem_settings_read(&settings);
    if (status == UCS_OK) {
        status = uct_gpumem_context_choose_driver(settings.driver, &desc, why,
                                                  sizeof(why));
        if ((status == UCS_ERR_NO_DEVICE) &&
            !strcasecmp(settings.driver, UCT_GPUMEM_DRIVER_AUTO) &&
            !no_gpu_said) {
            ucs_info("gpumem: no GPU (%s)" UCT_GPUMEM_CONTEXT_EMU_HINT, why);
            no_gpu_said = 1;
        }
        uct_gpumem_settings_release(&settings);
    }

    if (status != UCS_OK) {
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }
    return uct_md_query_single_md_resource(component, resources_p,
                                           num_resources_p);
}

/* Opens @a desc on the context's machine with its own settings, read from
 * the environment for the open and released after it (the driver keeps
 * what it needs of them) */
static ucs_status_t
uct_gpumem_context_open_driver(uct_gpumem_context_t *context,
                               const gpumem_driver_desc_t *desc)
{
    ucs_config_global_list_entry_t *entry = desc->config_entry;
    void *config                          = NULL;
    ucs_status_t status;

    if (entry != NULL) {
        config = ucs_malloc(entry->size, "gpumem_driver_config");
        if (config == NULL) {
            ucs_error("gpumem: failed to allocate the settings of the %s "
                      "driver", desc->name);
            return UCS_ERR_NO_MEMORY;
        }

        status = uct_gpumem_config_fill(config, entry);
        if (status != UCS_OK) {
            ucs_free(config);
            return status;
        }
    }

    status = desc->open(config, context->topo, &context->driver);
    if (entry != NULL) {
        ucs_config_parser_release_opts(config, entry->table);
        ucs_free(config);
    }
    return status;
}

static ucs_status_t
uct_gpumem_context_open(const uct_gpumem_settings_t *settings,
                        uct_gpumem_context_t **context_p)
{
    const gpumem_driver_desc_t *desc;
    gpumem_topo_params_t topo_params;
    uct_gpumem_context_t *context;
    ucs_status_t status;
    unsigned i;

    context = ucs_calloc(1, sizeof(*context), "uct_gpumem_context");
    if (context == NULL) {
        ucs_error("gpumem: failed to allocate the GPU context");
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gpumem_context_choose_driver(settings->driver, &desc,
                                              context->driver_why,
                                              sizeof(context->driver_why));
    if (status != UCS_OK) {
        if ((status == UCS_ERR_NO_DEVICE) &&
            !strcasecmp(settings->driver, UCT_GPUMEM_DRIVER_AUTO)) {
            ucs_diag("gpumem: no GPU (%s)" UCT_GPUMEM_CONTEXT_EMU_HINT,
                     context->driver_why);
        }
        goto err;
    }

    /* A driver emulates the machine it is given, or its own built in; the
     * others' GPUs are those of the live machine */
    topo_params.xml_path   = uct_gpumem_settings_path(settings->topo_xml);
    topo_params.xml_buffer = (topo_params.xml_path == NULL) ?
                             desc->builtin_topology : NULL;
    topo_params.sysfs_root = uct_gpumem_settings_path(settings->sysfs_root);
    topo_params.facts_path = uct_gpumem_settings_path(settings->topo_facts);
    status = gpumem_topo_load(&topo_params, &context->topo);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_gpumem_context_open_driver(context, desc);
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
    ucs_debug("gpumem: %u GPUs of the %s driver (%s)", context->num_gpus,
              context->driver->ops->name, context->driver_why);
    *context_p = context;
    return UCS_OK;

err:
    uct_gpumem_context_destroy(context);
    return status;
}

ucs_status_t uct_gpumem_context_get(const uct_gpumem_settings_t *settings,
                                    uct_gpumem_context_t **context_p)
{
    ucs_status_t status = UCS_OK;

    uct_gpumem_context_init_atfork();
    pthread_mutex_lock(&uct_gpumem_context_lock);
    if (uct_gpumem_context_instance == NULL) {
        status = uct_gpumem_context_open(settings,
                                         &uct_gpumem_context_instance);
    }
    if (status == UCS_OK) {
        ++uct_gpumem_context_instance->refcount;
        *context_p = uct_gpumem_context_instance;
    }
    pthread_mutex_unlock(&uct_gpumem_context_lock);
    return status;
}

void uct_gpumem_context_ref(uct_gpumem_context_t *context)
{
    pthread_mutex_lock(&uct_gpumem_context_lock);
    ucs_assert(context == uct_gpumem_context_instance);
    ++context->refcount;
    pthread_mutex_unlock(&uct_gpumem_context_lock);
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
