/**
 * gpumem: the interface parameters every gpumem transport checks at open.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_iface_params.h"

#include <uct/base/uct_iface.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>


ucs_status_t
uct_gpumem_iface_check_am_alignment(const uct_iface_params_t *params,
                                    const char *tl_name)
{
    size_t align, align_offset;
    ucs_status_t status;

    /* UCT's own check of an offset without an alignment, then what a
     * memory pool of aligned elements would refuse */
    status = uct_iface_param_am_alignment(params, SIZE_MAX, 0, 0, &align,
                                          &align_offset);
    if (status != UCS_OK) {
        return status;
    }

    if ((align == 0) || !ucs_is_pow2(align)) {
        ucs_error("%s: active message alignment %zu is not a power of two",
                  tl_name, align);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) &&
        (align_offset >= align)) {
        ucs_error("%s: active message alignment offset %zu is not below "
                  "the alignment %zu", tl_name, align_offset, align);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t uct_gpumem_iface_check_params(const uct_iface_params_t *params,
                                           const char *tl_name,
                                           const char *dev_name)
{
    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE) ||
        strcmp(params->mode.device.dev_name, dev_name)) {
        ucs_error("%s: opens on device '%s' only", tl_name, dev_name);
        return UCS_ERR_NO_DEVICE;
    }

    return uct_gpumem_iface_check_am_alignment(params, tl_name);
}
