/**
 * gpumem: registration of the plugin's components with UCT.
 *
 * UCX before 1.22 loads modules only from a list fixed at its build, so the
 * plugin is brought in by LD_PRELOAD or by linking; UCX 1.22 and later load
 * it from their module directory or UCX_PLUGIN_PATH (as libuct_gpumem.so.0).
 * Either way its constructor registers the components. The destructor removes them, since a
 * list entry pointing into an unmapped library would crash the next
 * uct_query_components().
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_component.h"
#include "copy/copy_md.h"
#include "gpumem_settings.h"
#include "ib/ib_md.h"
#include "copy/copy_iface.h"
#include "ipc/ipc_iface.h"
#include "rc/rc_iface.h"
#include "compat/gpumem_abi.h"

#include <uct/base/uct_component.h>
#include <ucs/debug/log.h>
#include <string.h>


static uct_component_t *uct_gpumem_components[] = {
    &uct_gpumem_component,
    &uct_gpumem_ib_component,
    &uct_gpumem_ipc_component.super
};

/* The transports of the components, registered after them and removed
 * before them */
static const struct {
    uct_component_t *component;
    uct_tl_t        *tl;
} uct_gpumem_tls[] = {
    {&uct_gpumem_component, &uct_gpumem_copy_tl},
    {&uct_gpumem_ipc_component.super, &uct_gpumem_ipc_tl},
    {&uct_gpumem_ib_component, &uct_gpumem_rc_tl}
};

static int uct_gpumem_components_registered = 0;


/* The registered component of that name, another copy's or this one's */
static uct_component_t *uct_gpumem_components_find(const char *name)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, name)) {
            return component;
        }
    }

    return NULL;
}


ucs_status_t uct_gpumem_components_register(void)
{
    ucs_status_t status;
    unsigned i;

    if (uct_gpumem_components_registered) {
        return UCS_OK;
    }

    /* A second copy of the plugin in the process (preloaded from one place
     * and loaded by UCX from its module directory) leaves the first one's
     * components in place */
    if (uct_gpumem_components_find(uct_gpumem_component.name) != NULL) {
        ucs_debug("gpumem: the components are registered by another copy of "
                  "the plugin; this copy registers none");
        return UCS_ERR_ALREADY_EXISTS;
    }

    status = uct_gpumem_abi_guard();
    if (status != UCS_OK) {
        return status;
    }

    uct_gpumem_settings_register();
    for (i = 0; i < ucs_static_array_size(uct_gpumem_components); ++i) {
        uct_component_register(uct_gpumem_components[i]);
        ucs_debug("gpumem: registered component '%s'",
                  uct_gpumem_components[i]->name);
    }

    for (i = 0; i < ucs_static_array_size(uct_gpumem_tls); ++i) {
        uct_tl_register(uct_gpumem_tls[i].component, uct_gpumem_tls[i].tl);
        ucs_debug("gpumem: registered transport '%s'",
                  uct_gpumem_tls[i].tl->name);
    }

    uct_gpumem_components_registered = 1;
    return UCS_OK;
}

void uct_gpumem_components_unregister(void)
{
    unsigned i;

    if (!uct_gpumem_components_registered) {
        return;
    }

    for (i = ucs_static_array_size(uct_gpumem_tls); i-- > 0;) {
        /* uct_tl_unregister() leaves the component's transport list alone */
        uct_tl_unregister(uct_gpumem_tls[i].tl);
        ucs_list_del(&uct_gpumem_tls[i].tl->list);
    }

    for (i = 0; i < ucs_static_array_size(uct_gpumem_components); ++i) {
        /* uct_component_unregister() leaves the components list alone */
        ucs_list_del(&uct_gpumem_components[i]->list);
        uct_component_unregister(uct_gpumem_components[i]);
    }
    uct_gpumem_settings_unregister();

    uct_gpumem_components_registered = 0;
}

UCS_STATIC_INIT {
    (void)uct_gpumem_components_register();
}

UCS_STATIC_CLEANUP {
    uct_gpumem_components_unregister();
}
