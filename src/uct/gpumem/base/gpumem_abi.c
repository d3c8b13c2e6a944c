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
#include <dlfcn.h>


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

static const char *uct_gpumem_abi_libuct_path(void)
{
    Dl_info info;

    if (!dladdr(&uct_base_iface_t_class, &info) || (info.dli_fname == NULL)) {
        return "libuct";
    }

    return info.dli_fname;
}

ucs_status_t uct_gpumem_abi_guard(void)
{
    const uct_gpumem_abi_class_t classes[] = {
        {"uct_iface_t",       uct_iface_t_class.size,       sizeof(uct_iface_t)},
        {"uct_base_iface_t",  uct_base_iface_t_class.size,  sizeof(uct_base_iface_t)},
        {"uct_ep_t",          uct_ep_t_class.size,          sizeof(uct_ep_t)},
        {"uct_base_ep_t",     uct_base_ep_t_class.size,     sizeof(uct_base_ep_t)},
        {"uct_priv_worker_t", uct_priv_worker_t_class.size, sizeof(uct_priv_worker_t)}
    };
    ucs_status_t status;
    unsigned mismatch;

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
