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
#include <ucs/sys/topo/base/topo.h>

BEGIN_C_DECLS

typedef struct uct_gpumem_context {
    unsigned         refcount;
    gpumem_topo_t    *topo;
    gpumem_driver_t  *driver;
    unsigned         num_gpus;
    gpumem_gpu_t     **gpus;
    ucs_sys_device_t *sys_devs;   /* UCX system device of each GPU */
    char             driver_why[256]; /* Why this driver, in one phrase */
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

/* Which driver @a select comes to on this machine, and why in @a why_buf;
 * UCS_ERR_NO_DEVICE (logged) if cuda was asked for and none answers */
ucs_status_t uct_gpumem_context_choose_driver(
        uct_gpumem_driver_select_t select,
        uct_gpumem_driver_select_t *driver_p, char *why_buf, size_t max);

/* The GPU whose device addresses hold @a addr, or -1: on the path of every
 * short copy, hence inline */
static UCS_F_ALWAYS_INLINE int
uct_gpumem_context_find_gpu(uct_gpumem_context_t *context, const void *addr)
{
    return gpumem_device_addr_gpu(context->driver, addr);
}

END_C_DECLS

#endif
