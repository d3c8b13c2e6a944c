/**
 * gpumem: the plugin-wide settings of the process's GPUs (UCX_GPUMEM_*):
 * which driver, which machine, which GPU the memory domains allocate on and
 * what memory type UCX sees. One table in UCS's global list, read in one
 * place by every memory domain and the public API; each driver's own
 * settings are its table (driver/gpumem_drivers.h).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_SETTINGS_H_
#define UCT_GPUMEM_SETTINGS_H_

#include <ucs/config/parser.h>
#include <ucs/memory/memory_type.h>

BEGIN_C_DECLS

/* UCX_GPUMEM_DRIVER's value that takes the first real GPUs that answer */
#define UCT_GPUMEM_DRIVER_AUTO "auto"


typedef struct uct_gpumem_settings {
    char              *driver;      /* UCT_GPUMEM_DRIVER_AUTO, or the name
                                       of a driver of the table */
    char              *topo_xml;    /* hwloc XML export, "" for the driver's
                                       own machine */
    char              *sysfs_root;  /* Root of sysfs for the facts hwloc
                                       lacks */
    char              *topo_facts;  /* Facts saved by gpumem_topo
                                       --save-facts, or "" */
    ucs_memory_type_t mem_type;     /* The memory type UCX sees */
    unsigned          alloc_gpu;    /* GPU the memory domains allocate on */
} uct_gpumem_settings_t;


/**
 * The settings as the environment gives them now. A bad value is
 * UCS_ERR_INVALID_PARAM, and the log names the variable and the value.
 * Released with uct_gpumem_settings_release().
 */
ucs_status_t uct_gpumem_settings_read(uct_gpumem_settings_t *settings);

void uct_gpumem_settings_release(uct_gpumem_settings_t *settings);

/* A path setting, NULL where it is empty (not given) */
const char *uct_gpumem_settings_path(const char *value);

/* Puts the tables of the plugin's settings and of its drivers' into UCS's
 * global list, where ucx_info -c finds them, and takes them out */
void uct_gpumem_settings_register(void);
void uct_gpumem_settings_unregister(void);

END_C_DECLS

#endif
