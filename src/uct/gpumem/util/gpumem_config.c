/**
 * gpumem: configuration types that refuse what UCS's own take in silence.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_config.h"
#include "gpumem_compat_ucs.h"

#include <ucs/config/types.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>


/* The first character that is not blank */
static const char *uct_gpumem_config_skip_blanks(const char *buf)
{
    while (isspace((unsigned char)*buf)) {
        ++buf;
    }
    return buf;
}

int uct_gpumem_config_sscanf_count(const char *buf, void *dest,
                                   const void UCS_V_UNUSED *arg)
{
    const char *start = uct_gpumem_config_skip_blanks(buf);
    unsigned long value;
    char *end;

    if (!isdigit((unsigned char)*start)) {
        return 0;
    }

    errno = 0;
    value = strtoul(start, &end, 10);
    if ((errno != 0) || (value > UINT_MAX) ||
        (*uct_gpumem_config_skip_blanks(end) != '\0')) {
        return 0;
    }

    *(unsigned*)dest = value;
    return 1;
}

/* Whether @a buf starts with "nan" or "inf", which strtod() takes */
static int uct_gpumem_config_is_not_finite(const char *buf)
{
    const char *start = uct_gpumem_config_skip_blanks(buf);

    return !strncasecmp(start, "nan", 3) || !strncasecmp(start, "inf", 3);
}

int uct_gpumem_config_sscanf_time(const char *buf, void *dest,
                                  const void *arg)
{
    return ucs_config_sscanf_time(buf, dest, arg) &&
           isfinite(*(double*)dest) && (*(double*)dest >= 0);
}

int uct_gpumem_config_sscanf_bw(const char *buf, void *dest, const void *arg)
{
    double bw;

    if ((*uct_gpumem_config_skip_blanks(buf) == '-') ||
        uct_gpumem_config_is_not_finite(buf) ||
        !ucs_config_sscanf_bw(buf, &bw, arg)) {
        return 0;
    }

    if (!UCS_CONFIG_DBL_IS_AUTO(bw) && (!isfinite(bw) || (bw <= 0))) {
        return 0;
    }

    *(double*)dest = bw;
    return 1;
}

int uct_gpumem_config_sscanf_time_units(const char *buf, void *dest,
                                        const void *arg)
{
    /* ucs_time_t is unsigned: a negative time would wrap */
    return (*uct_gpumem_config_skip_blanks(buf) != '-') &&
           ucs_config_sscanf_time_units(buf, dest, arg);
}

int uct_gpumem_config_sscanf_latency(const char *buf, void *dest,
                                     const void *arg)
{
    return !uct_gpumem_config_is_not_finite(buf) &&
           uct_gpumem_config_sscanf_time_units(buf, dest, arg);
}

int uct_gpumem_config_sscanf_size(const char *buf, void *dest,
                                  const void *arg)
{
    const char *start = uct_gpumem_config_skip_blanks(buf);

    return (*start != '-') && strncasecmp(start, "inf", 3) &&
           strncasecmp(start, "auto", 4) &&
           ucs_config_sscanf_memunits(buf, dest, arg);
}
