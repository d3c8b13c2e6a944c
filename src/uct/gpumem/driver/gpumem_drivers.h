/**
 * gpumem drivers: the table of the drivers this build has, each with how
 * it is probed and opened and its own settings, so that the layers above
 * choose and open a driver by name and see none of a driver's types.
 *
 * A row is the plugin's own (cuda), or a library's that the table loads
 * through this interface alone: the emulator's (emu), where it is built,
 * exports its row as GPUMEM_EMU_DRIVER_SYMBOL from GPUMEM_EMU_LIBRARY.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_DRIVERS_H_
#define GPUMEM_DRIVERS_H_

#include <uct/gpumem/driver/gpumem_driver.h>
#include <uct/api/version.h>
#include <ucs/config/parser.h>

BEGIN_C_DECLS

/* The emulator's library, and the name of the row it exports */
#define GPUMEM_EMU_LIBRARY       "libgpumem_emu.so.0"
#define GPUMEM_EMU_DRIVER_SYMBOL "gpumem_emu_driver_desc"

/* The version of this interface: a row and the table agree on it */
#define GPUMEM_DRIVER_INTERFACE_VERSION 1


/**
 * What a row was built against, which the table checks before it takes a
 * row of another library: the same interface, over the same UCX release
 * (whose structs the driver's settings share with UCS)
 */
typedef struct gpumem_driver_build {
    unsigned interface;   /* GPUMEM_DRIVER_INTERFACE_VERSION */
    unsigned ucx_major;   /* UCT_VERNO_MAJOR */
    unsigned ucx_minor;   /* UCT_VERNO_MINOR */
    unsigned desc_size;   /* sizeof(gpumem_driver_desc_t) */
    unsigned ops_size;    /* sizeof(gpumem_driver_ops_t) */
} gpumem_driver_build_t;

#define GPUMEM_DRIVER_BUILD_INITIALIZER \
    { \
        .interface = GPUMEM_DRIVER_INTERFACE_VERSION, \
        .ucx_major = UCT_VERNO_MAJOR, \
        .ucx_minor = UCT_VERNO_MINOR, \
        .desc_size = sizeof(struct gpumem_driver_desc), \
        .ops_size  = sizeof(gpumem_driver_ops_t) \
    }


typedef struct gpumem_driver_desc {
    gpumem_driver_build_t          build;  /* GPUMEM_DRIVER_BUILD_INITIALIZER */
    const char                     *name;   /* As UCX_GPUMEM_DRIVER names it */

    /* Whether its GPUs are software ones: "auto" never takes it, a user
     * asks for it by name */
    int                            emulated;

    /* Whether the driver finds GPUs on this machine: UCS_OK, or a status
     * and why not in @a why_buf, in one phrase; nothing is logged */
    ucs_status_t                   (*probe)(char *why_buf, size_t max);

    /* Opens the driver on @a topo with @a config, its settings (read from
     * config_entry; NULL where it has none) */
    ucs_status_t                   (*open)(const void *config,
                                           gpumem_topo_t *topo,
                                           gpumem_driver_t **driver_p);

    /* The machine it emulates where no topology is given (an hwloc XML
     * document); NULL: the live machine's */
    const char                     *builtin_topology;

    /* Its settings in UCS's global list (UCX_GPUMEM_<NAME>_*), or NULL */
    ucs_config_global_list_entry_t *config_entry;
} gpumem_driver_desc_t;


/* The drivers, in the order "auto" tries them, NULL-terminated: cuda
 * (where cuda.h was found at build time; its probe says so otherwise),
 * then emu where the emulator is built: a row whose probe says why it has
 * no GPU until the emulator's library is loaded, which only a call that
 * names it does (gpumem_driver_find("emu")) */
const gpumem_driver_desc_t *const *gpumem_drivers_list(void);

/* The driver of that name, in any case, or NULL; "emu" loads the
 * emulator's library on the first call */
const gpumem_driver_desc_t *gpumem_driver_find(const char *name);

/* The names of the drivers, and "auto" first, as UCX_GPUMEM_DRIVER takes
 * them: "auto|cuda|emu" */
const char *gpumem_drivers_names(char *buf, size_t max);

END_C_DECLS

#endif
