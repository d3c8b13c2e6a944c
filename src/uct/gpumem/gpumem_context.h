/**
 * gpumem: the process's GPUs (topology, driver and memory), shared by every
 * gpumem memory domain and the public API, as a GPU driver is per process.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_CONTEXT_H_
#define UCT_GPUMEM_CONTEXT_H_

#include <uct/gpumem/driver/emu/emu.h>
#include <uct/gpumem/mem/gpumem_mem.h>
#include <ucs/sys/topo/base/topo.h>

BEGIN_C_DECLS

/**
 * How the process's GPUs are found: the first user's settings win.
 */
typedef struct uct_gpumem_context_params {
    const char          *topo_xml;    /* NULL: the emu's built-in machine */
    const char          *sysfs_root;
    const char          *topo_facts;
    gpumem_emu_config_t emu;
} uct_gpumem_context_params_t;


typedef struct uct_gpumem_context {
    unsigned         refcount;
    gpumem_topo_t    *topo;
    gpumem_driver_t  *driver;
    unsigned         num_gpus;
    gpumem_gpu_t     **gpus;
    ucs_sys_device_t *sys_devs;   /* UCX system device of each GPU */
} uct_gpumem_context_t;


/* The process's context, opened by the first call */
ucs_status_t uct_gpumem_context_get(const uct_gpumem_context_params_t *params,
                                    uct_gpumem_context_t **context_p);

void uct_gpumem_context_put(uct_gpumem_context_t *context);

/* The GPU whose device addresses hold @a addr, or -1 */
int uct_gpumem_context_find_gpu(uct_gpumem_context_t *context,
                                const void *addr);

END_C_DECLS

#endif
