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
    .build            = GPUMEM_DRIVER_BUILD_INITIALIZER,
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
static char gpumem_drivers_emu_why[1024] = "the emulator's library is not "
                                           "loaded";

static ucs_status_t gpumem_drivers_emu_not_loaded(char *why_buf, size_t max)
{
    ucs_strncpy_zero(why_buf, gpumem_drivers_emu_why, max);
    return UCS_ERR_UNSUPPORTED;
}

/* The emu row until the emulator's library is loaded, and where it cannot
 * be */
static const gpumem_driver_desc_t gpumem_drivers_emu_missing = {
    .build            = GPUMEM_DRIVER_BUILD_INITIALIZER,
    .name             = "emu",
    .emulated         = 1,
    .probe            = gpumem_drivers_emu_not_loaded,
    .open             = NULL,
    .builtin_topology = NULL,
    .config_entry     = NULL
};

/* Whether @a desc, a row of another library, was built as this table */
static int gpumem_drivers_same_build(const gpumem_driver_desc_t *desc)
{
    static const gpumem_driver_build_t ours = GPUMEM_DRIVER_BUILD_INITIALIZER;

    return !memcmp(&desc->build, &ours, sizeof(ours));
}

/* The emu row of the library at @a path, or NULL with why appended */
static const gpumem_driver_desc_t *
gpumem_drivers_emu_open(const char *path, char *why, size_t max)
{
    const gpumem_driver_desc_t *desc;
    Dl_info info;
    void *handle;

    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        ucs_snprintf_zero(why, max, "%s", dlerror());
        return NULL;
    }

    (void)dlerror();
    desc = dlsym(handle, GPUMEM_EMU_DRIVER_SYMBOL);
    if (desc == NULL) {
        ucs_snprintf_zero(why, max, "%s has no emu row (%s)", path,
                          GPUMEM_EMU_DRIVER_SYMBOL);
    } else if (!gpumem_drivers_same_build(desc)) {
        /* Nothing else of the row is read: its layout may be another's */
        ucs_snprintf_zero(why, max, "%s was built for UCX %u.%u and driver "
                          "interface %u, the plugin for UCX %u.%u and %u",
                          path, desc->build.ucx_major, desc->build.ucx_minor,
                          desc->build.interface, UCT_VERNO_MAJOR,
                          UCT_VERNO_MINOR, GPUMEM_DRIVER_INTERFACE_VERSION);
    } else if (strcmp(desc->name, "emu")) {
        ucs_snprintf_zero(why, max, "%s's row %s is named %s", path,
                          GPUMEM_EMU_DRIVER_SYMBOL, desc->name);
    } else {
        ucs_debug("gpumem: the emu driver is %s's",
                  (dladdr(desc, &info) && (info.dli_fname != NULL)) ?
                  info.dli_fname : path);
        return desc;
    }

    dlclose(handle);
    return NULL;
}

/* The emulator's row, from its library: found by the dynamic loader by
 * name first (a process that has it already, or LD_LIBRARY_PATH, as
 * gpumem-emu sets), else where it is installed. It stays loaded. */
static const gpumem_driver_desc_t *gpumem_drivers_emu_load(void)
{
    static const char installed[] = GPUMEM_EMU_DIR "/" GPUMEM_EMU_LIBRARY;
    char by_name[512], by_path[512];
    const gpumem_driver_desc_t *desc;

    desc = gpumem_drivers_emu_open(GPUMEM_EMU_LIBRARY, by_name,
                                   sizeof(by_name));
    if (desc == NULL) {
        desc = gpumem_drivers_emu_open(installed, by_path, sizeof(by_path));
    }
    if (desc != NULL) {
        return desc;
    }

    ucs_snprintf_zero(gpumem_drivers_emu_why, sizeof(gpumem_drivers_emu_why),
                      "the emulator is not installed in " GPUMEM_EMU_DIR
                      " nor on LD_LIBRARY_PATH (gpumem-emu COMMAND runs a "
                      "program with it): %s; %s", by_name, by_path);
    ucs_debug("gpumem: no emu driver: %s", gpumem_drivers_emu_why);
    return &gpumem_drivers_emu_missing;
}
#endif

/* The rows; the emu row is replaced by the emulator's once it is loaded,
 * and a reader that sees the one before sees a row of the same name */
static const gpumem_driver_desc_t *gpumem_drivers[] = {
    &gpumem_drivers_cuda,
#ifdef GPUMEM_HAVE_EMU
    &gpumem_drivers_emu_missing,
#endif
    NULL
};

#ifdef GPUMEM_HAVE_EMU
static void gpumem_drivers_load_emu(void)
{
    __atomic_store_n(&gpumem_drivers[1], gpumem_drivers_emu_load(),
                     __ATOMIC_RELEASE);
}
#endif

const gpumem_driver_desc_t *const *gpumem_drivers_list(void)
{
    return gpumem_drivers;
}

const gpumem_driver_desc_t *gpumem_driver_find(const char *name)
{
#ifdef GPUMEM_HAVE_EMU
    static pthread_once_t emu_once = PTHREAD_ONCE_INIT;
#endif
    const gpumem_driver_desc_t *const *desc;

#ifdef GPUMEM_HAVE_EMU
    if (!strcasecmp(name, "emu")) {
        pthread_once(&emu_once, gpumem_drivers_load_emu);
    }
#endif

    for (desc = gpumem_drivers_list(); *desc != NULL; ++desc) {
        if (!strcasecmp(__atomic_load_n(desc, __ATOMIC_ACQUIRE)->name,
                        name)) {
            return __atomic_load_n(desc, __ATOMIC_ACQUIRE);
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
