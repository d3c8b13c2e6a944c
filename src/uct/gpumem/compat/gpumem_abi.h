/**
 * gpumem: the load-time guard on the UCX structs the plugin shares with libuct.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_ABI_H_
#define UCT_GPUMEM_ABI_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>

BEGIN_C_DECLS

/**
 * One UCX class whose layout the plugin and libuct must agree on: the size
 * libuct was built with (its ucs_class_t) and the size this plugin was
 * compiled with (sizeof the struct in the UCX internal headers).
 */
typedef struct uct_gpumem_abi_class {
    const char *name;         /* Class name, e.g. "uct_base_iface_t" */
    size_t     library_size;  /* Size as libuct has it */
    size_t     built_size;    /* Size as this plugin was compiled */
} uct_gpumem_abi_class_t;


/**
 * Decide whether the plugin may register with the running libuct.
 *
 * @param [in]  classes      Classes to compare.
 * @param [in]  count        Number of entries in @a classes.
 * @param [out] mismatch_p   Index of the first class whose sizes differ,
 *                           set only on failure.
 *
 * @return UCS_OK when every size agrees, UCS_ERR_UNSUPPORTED otherwise.
 */
ucs_status_t uct_gpumem_abi_check(const uct_gpumem_abi_class_t *classes,
                                  unsigned count, unsigned *mismatch_p);


/**
 * Decide whether a plugin built against UCX @a built_major.@a built_minor may
 * run in UCX @a major.@a minor: only in the same release series, whose
 * internal structs are the ones it was compiled with (UCX changes them
 * between minor releases, e.g. ucs_config_field_t in 1.17, without a change
 * of soname or of the sizes the class guard compares).
 *
 * @return UCS_OK when the major and minor versions are equal,
 *         UCS_ERR_UNSUPPORTED otherwise.
 */
ucs_status_t uct_gpumem_abi_check_version(unsigned built_major,
                                          unsigned built_minor,
                                          unsigned major, unsigned minor);


/**
 * Compare the running libuct's version and classes with this build, and log an error
 * naming the UCX version and the sizes on a mismatch.
 *
 * @return UCS_OK when the plugin may register its components.
 */
ucs_status_t uct_gpumem_abi_guard(void);


/**
 * What the guard said when the plugin was loaded: UCS_OK (also where it has
 * not run), or its refusal, after which no call of the plugin may run: UCX's
 * structs are not the ones it was compiled with.
 */
ucs_status_t uct_gpumem_abi_status(void);

END_C_DECLS

#endif
