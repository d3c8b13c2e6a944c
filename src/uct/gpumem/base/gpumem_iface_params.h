/**
 * gpumem: the interface parameters every gpumem transport checks at open.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IFACE_PARAMS_H_
#define UCT_GPUMEM_IFACE_PARAMS_H_

#include <uct/api/uct.h>

BEGIN_C_DECLS

/**
 * Whether @a params ask for an active message alignment that UCT takes (a
 * power of two, an offset below it, no offset without it), as every UCT
 * transport checks them, though gpumem's send no active messages.
 *
 * @return UCS_ERR_INVALID_PARAM, logged, for a bad alignment.
 */
ucs_status_t
uct_gpumem_iface_check_am_alignment(const uct_iface_params_t *params,
                                    const char *tl_name);

/**
 * Whether @a params open an interface of the transport @a tl_name on its one
 * device @a dev_name, with an active message alignment that UCT takes
 * (uct_gpumem_iface_check_am_alignment).
 *
 * @return UCS_ERR_NO_DEVICE for another device or open mode,
 *         UCS_ERR_INVALID_PARAM for a bad alignment; each logged.
 */
ucs_status_t uct_gpumem_iface_check_params(const uct_iface_params_t *params,
                                           const char *tl_name,
                                           const char *dev_name);

END_C_DECLS

#endif
