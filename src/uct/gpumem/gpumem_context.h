/**
 * gpumem: the process's GPUs (topology, driver and memory), shared by every
 * gpumem memory domain and the public API, as a GPU driver is per process.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_CONTEXT_H_
#define UCT_GPUMEM_CONTEXT_H_

#include "gpumem_settings.h"

#include <uct/gpumem/mem/gpumem_mem.h>
#include <uct/gpumem/driver/gpumem_drivers.h>
#include <uct/base/uct_md.h>
#include <ucs/sys/topo/base/topo.h>

BEGIN_C_DECLS

typedef struct uct_gpumem_context {
    unsigned         refcount;
    gpumem_topo_t    *topo;
    gpumem_driver_t  *driver;
    unsigned         num_gpus;
    gpumem_gpu_t     **gpus;
    ucs_sys_device_t *sys_devs;   /* UCX system device of each GPU */
    char             driver_why[1024]; /* Why this driver, in one phrase */
} uct_gpumem_context_t;


/* The process's context, opened by the first call with @a settings (the
 * first user's settings win) */
ucs_status_t uct_gpumem_context_get(const uct_gpumem_settings_t *settings,
                                    uct_gpumem_context_t **context_p);

/* Makes the child of a fork leave its parent's context alone. A layer
 * whose lock is taken before the context's calls this before it registers
 * its own fork handlers, so that the fork takes the locks in that order */
void uct_gpumem_context_init_atfork(void);

/* Another reference on a context one holds already */
void uct_gpumem_context_ref(uct_gpumem_context_t *context);

void uct_gpumem_context_put(uct_gpumem_context_t *context);

/* Which driver the setting @a name (UCX_GPUMEM_DRIVER) comes to on this
 * machine, and why in @a why_buf. "auto" takes the first driver of real
 * GPUs whose GPUs answer; where none does, UCS_ERR_NO_DEVICE, not logged
 * (no GPU is no error), with why each has none in @a why_buf. A driver
 * named whose GPUs do not answer is UCS_ERR_NO_DEVICE, logged. */
ucs_status_t uct_gpumem_context_choose_driver(
        const char *name, const gpumem_driver_desc_t **desc_p, char *why_buf,
        size_t max);

/* The memory domain resources of a component of the GPUs (copy, IPC): one,
 * or none where the process has no GPU (UCX_GPUMEM_DRIVER=auto on a
 * machine without one, said at info level with how to ask for emulated
 * GPUs), as UCX's own CUDA components */
ucs_status_t uct_gpumem_context_query_md_resources(
        uct_component_t *component, uct_md_resource_desc_t **resources_p,
        unsigned *num_resources_p);

/* The GPU whose device addresses hold @a addr, or -1: on the path of every
 * short copy, hence inline */
static UCS_F_ALWAYS_INLINE int
uct_gpumem_context_find_gpu(uct_gpumem_context_t *context, const void *addr)
{
    return gpumem_device_addr_gpu(context->driver, addr);
}

END_C_DECLS

#endif
