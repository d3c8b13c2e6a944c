/**
 * gpumem drivers: the table of the drivers this build has.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_drivers.h"
#ifdef HAVE_CUDA
#  include "cuda/cuda_driver.h"
#endif

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>


#ifdef HAVE_CUDA
static ucs_status_t gpumem_drivers_cuda_open(const void UCS_V_UNUSED *config,
                                             gpumem_topo_t *topo,
                                             gpumem_driver_t **driver_p)
{
    return gpumem_cuda_open(topo, driver_p);
}
#else
static ucs_status_t gpumem_drivers_cuda_probe(char *why_buf, size_t max)
{
    ucs_strncpy_zero(why_buf, "this build has no cuda driver (cuda.h was not "
                     "found at configure time)", max);
    return UCS_ERR_UNSUPPORTED;
}
#endif

static const gpumem_driver_desc_t gpumem_drivers_cuda = {
    .name             = "cuda",
    .emulated         = 0,
#ifdef HAVE_CUDA
    .probe            = gpumem_cuda_probe,
    .open             = gpumem_drivers_cuda_open,
#else
    .probe            = gpumem_drivers_cuda_probe,
    .open             = NULL,
#endif
    .builtin_topology = NULL,
    .config_entry     = NULL
};

#ifdef GPUMEM_HAVE_EMU
/* Why the emulator's library did not load, for its row's probe */
static char gpumem_drivers_emu_why[512];

static ucs_status_t gpumem_drivers_emu_not_loaded(char *why_buf, size_t max)
{
    ucs_strncpy_zero(why_buf, gpumem_drivers_emu_why, max);
    return UCS_ERR_UNSUPPORTED;
}

static const gpumem_driver_desc_t gpumem_drivers_emu_missing = {
    .name             = "emu",
    .emulated         = 1,
    .probe            = gpumem_drivers_emu_not_loaded,
    .open             = NULL,
    .builtin_topology = NULL,
    .config_entry     = NULL
};

/* The emulator's row, from its library: found by the dynamic loader by
 * name first (a process that has it already, or LD_LIBRARY_PATH, as
 * gpumem-emu sets), else where it is installed. It stays loaded. */
static const gpumem_driver_desc_t *gpumem_drivers_emu_load(void)
{
    static const char *paths[] = {
        GPUMEM_EMU_LIBRARY,
        GPUMEM_EMU_DIR "/" GPUMEM_EMU_LIBRARY
    };
    const gpumem_driver_desc_t *desc;
    const char *error = "";
    void *handle;
    unsigned i;

    for (i = 0; i < (sizeof(paths) / sizeof(paths[0])); ++i) {
        handle = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            error = dlerror();
            continue;
        }

        desc = dlsym(handle, GPUMEM_EMU_DRIVER_SYMBOL);
        if ((desc != NULL) && !strcmp(desc->name, "emu")) {
            ucs_debug("gpumem: the emu driver is %s's", paths[i]);
            return desc;
        }

        ucs_snprintf_zero(gpumem_drivers_emu_why,
                          sizeof(gpumem_drivers_emu_why),
                          "%s is not the emulator's: it has no %s row",
                          paths[i], GPUMEM_EMU_DRIVER_SYMBOL);
        dlclose(handle);
        return &gpumem_drivers_emu_missing;
    }

    ucs_snprintf_zero(gpumem_drivers_emu_why, sizeof(gpumem_drivers_emu_why),
                      "the emulator is not installed in " GPUMEM_EMU_DIR
                      " nor on LD_LIBRARY_PATH (gpumem-emu COMMAND runs a "
                      "program with it): %s", error);
    ucs_debug("gpumem: no emu driver: %s", gpumem_drivers_emu_why);
    return &gpumem_drivers_emu_missing;
}
#endif

static const gpumem_driver_desc_t *gpumem_drivers[] = {
    &gpumem_drivers_cuda,
#ifdef GPUMEM_HAVE_EMU
    NULL, /* emu, when its library is loaded */
#endif
    NULL
};

static void gpumem_drivers_load(void)
{
#ifdef GPUMEM_HAVE_EMU
    gpumem_drivers[1] = gpumem_drivers_emu_load();
#endif
}

const gpumem_driver_desc_t *const *gpumem_drivers_list(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, gpumem_drivers_load);
    return gpumem_drivers;
}

const gpumem_driver_desc_t *gpumem_driver_find(const char *name)
{
    const gpumem_driver_desc_t *const *desc;

    for (desc = gpumem_drivers_list(); *desc != NULL; ++desc) {
        if (!strcasecmp((*desc)->name, name)) {
            return *desc;
        }
    }
    return NULL;
}

const char *gpumem_drivers_names(char *buf, size_t max)
{
    const gpumem_driver_desc_t *const *desc;
    size_t length;

    ucs_strncpy_zero(buf, "auto", max);
    for (desc = gpumem_drivers_list(); *desc != NULL; ++desc) {
        length = strlen(buf);
        ucs_snprintf_zero(buf + length, max - length, "|%s", (*desc)->name);
    }
    return buf;
}
