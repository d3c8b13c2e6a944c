/**
 * gpumem: the load-time guard on the UCX structs the plugin shares with libuct.
 *
 * UCX's internal structs are unversioned and the soname of libuct does not
 * change between releases, so a plugin built against another UCX (or the
 * same UCX configured differently: statistics, assertions) would corrupt
 * memory silently. Each shared class's size in libuct is compared with the
 * size this plugin was compiled with before anything is registered.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_abi.h"

#include <uct/api/version.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <ucs/debug/log.h>
#include <ucs/type/class.h>
#include <ucs/sys/string.h>
#include <dlfcn.h>
#include <limits.h>
#include <string.h>


/* Exported by libuct but declared in none of its headers */
extern ucs_class_t uct_iface_t_class;
extern ucs_class_t uct_priv_worker_t_class;


ucs_status_t uct_gpumem_abi_check(const uct_gpumem_abi_class_t *classes,
                                  unsigned count, unsigned *mismatch_p)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (classes[i].library_size != classes[i].built_size) {
            *mismatch_p = i;
            return UCS_ERR_UNSUPPORTED;
        }
    }

    return UCS_OK;
}

ucs_status_t uct_gpumem_abi_check_version(unsigned built_major,
                                          unsigned built_minor,
                                          unsigned major, unsigned minor)
{
    return ((built_major == major) && (built_minor == minor)) ?
           UCS_OK : UCS_ERR_UNSUPPORTED;
}

static const char *uct_gpumem_abi_libuct_path(void)
{
    Dl_info info;

    if (!dladdr(&uct_base_iface_t_class, &info) || (info.dli_fname == NULL)) {
        return "libuct";
    }

    return info.dli_fname;
}

typedef void (*uct_gpumem_abi_get_version_func_t)(unsigned *major,
                                                  unsigned *minor,
                                                  unsigned *release);

/* The version of the running UCX, which of its libraries only libucp tells:
 * the process's own libucp, else the one beside the libuct in use */
static ucs_status_t uct_gpumem_abi_running_version(unsigned *major,
                                                   unsigned *minor,
                                                   unsigned *release)
{
    uct_gpumem_abi_get_version_func_t get_version;
    const char *libuct, *slash;
    char path[PATH_MAX];
    void *handle;

    get_version = (uct_gpumem_abi_get_version_func_t)
                          dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (get_version == NULL) {
        libuct = uct_gpumem_abi_libuct_path();
        slash  = strrchr(libuct, '/');
        if (slash == NULL) {
            return UCS_ERR_NO_ELEM;
        }
        ucs_snprintf_zero(path, sizeof(path), "%.*s/libucp.so.0",
                          (int)(slash - libuct), libuct);
        /* Only if the process has it already: loading libucp into a
         * process of UCT alone would run its constructors there */
        handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (handle == NULL) {
            return UCS_ERR_NO_ELEM;
        }
        get_version = (uct_gpumem_abi_get_version_func_t)
                              dlsym(handle, "ucp_get_version");
        if (get_version != NULL) {
            get_version(major, minor, release);
        }
        dlclose(handle);
        return (get_version != NULL) ? UCS_OK : UCS_ERR_NO_ELEM;
    }

    get_version(major, minor, release);
    return UCS_OK;
}

/* The guard's last answer */
static ucs_status_t uct_gpumem_abi_guard_status = UCS_OK;


ucs_status_t uct_gpumem_abi_status(void)
{
    return uct_gpumem_abi_guard_status;
}

static ucs_status_t uct_gpumem_abi_compare(void)
{
    const uct_gpumem_abi_class_t classes[] = {
        {"uct_iface_t",       uct_iface_t_class.size,       sizeof(uct_iface_t)},
        {"uct_base_iface_t",  uct_base_iface_t_class.size,  sizeof(uct_base_iface_t)},
        {"uct_ep_t",          uct_ep_t_class.size,          sizeof(uct_ep_t)},
        {"uct_base_ep_t",     uct_base_ep_t_class.size,     sizeof(uct_base_ep_t)},
        {"uct_priv_worker_t", uct_priv_worker_t_class.size, sizeof(uct_priv_worker_t)}
    };
    unsigned major, minor, release, mismatch;
    ucs_status_t status;

    if (uct_gpumem_abi_running_version(&major, &minor, &release) != UCS_OK) {
        ucs_debug("gpumem: no libucp in the process tells the version of "
                  "UCX; checking its class sizes only");
    } else if (uct_gpumem_abi_check_version(UCT_VERNO_MAJOR, UCT_VERNO_MINOR,
                                            major, minor) != UCS_OK) {
        ucs_error("gpumem: not registering: built against UCX %s but running "
                  "in UCX %u.%u.%u (%s); a plugin runs only in the UCX "
                  "release it was built against: rebuild gpumem against the "
                  "source of UCX %u.%u", UCT_VERNO_STRING, major, minor,
                  release, uct_gpumem_abi_libuct_path(), major, minor);
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_gpumem_abi_check(classes, ucs_static_array_size(classes),
                                  &mismatch);
    if (status != UCS_OK) {
        ucs_error("gpumem: not registering: built against UCX %s but %s has "
                  "%s of %zu bytes where this plugin expects %zu; rebuild "
                  "gpumem against the source of the UCX it runs in",
                  UCT_VERNO_STRING, uct_gpumem_abi_libuct_path(),
                  classes[mismatch].name, classes[mismatch].library_size,
                  classes[mismatch].built_size);
    }

    return status;
}

ucs_status_t uct_gpumem_abi_guard(void)
{
    uct_gpumem_abi_guard_status = uct_gpumem_abi_compare();
    return uct_gpumem_abi_guard_status;
}
