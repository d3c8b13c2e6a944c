/**
 * gpumem: configuration types that refuse what UCS's own take in silence:
 * "1.5" or "-1" as a count, a negative or endless time, "inf" or a
 * negative size, a bandwidth that is not positive.
 * A refused value fails the configuration read, and UCS's parser logs the
 * variable, the value and what is expected.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_CONFIG_H_
#define UCT_GPUMEM_CONFIG_H_

#include <ucs/config/parser.h>

BEGIN_C_DECLS

/* A count or an index: decimal digits only, within an unsigned int */
int uct_gpumem_config_sscanf_count(const char *buf, void *dest,
                                   const void *arg);

/* A time (double, seconds), not negative */
int uct_gpumem_config_sscanf_time(const char *buf, void *dest,
                                  const void *arg);

/* A time (ucs_time_t), not negative; "auto" and "inf" as UCS reads them */
int uct_gpumem_config_sscanf_time_units(const char *buf, void *dest,
                                        const void *arg);

/* A time (ucs_time_t), finite and not negative, or "auto": what UCP
 * expects an operation to take */
int uct_gpumem_config_sscanf_latency(const char *buf, void *dest,
                                     const void *arg);

/* A bandwidth (double, bytes per second), finite and positive, or "auto" */
int uct_gpumem_config_sscanf_bw(const char *buf, void *dest,
                                const void *arg);

/* A size in memory units, finite and not negative */
int uct_gpumem_config_sscanf_size(const char *buf, void *dest,
                                  const void *arg);


/* A parser from a reader and UCS's writer, clone and release of the same
 * representation */
#ifdef HAVE_UCS_CONFIG_PARSER_DOC
#  define UCT_GPUMEM_CONFIG_PARSER(_read, _write, _clone, _doc) \
    {_read, _write, _clone, ucs_config_release_nop, ucs_config_help_generic, \
     ucs_config_doc_nop, _doc}
#else
#  define UCT_GPUMEM_CONFIG_PARSER(_read, _write, _clone, _doc) \
    {_read, _write, _clone, ucs_config_release_nop, ucs_config_help_generic, \
     _doc}
#endif

#define UCT_GPUMEM_CONFIG_TYPE_COUNT \
    UCT_GPUMEM_CONFIG_PARSER(uct_gpumem_config_sscanf_count, \
                             ucs_config_sprintf_uint, ucs_config_clone_uint, \
                             "unsigned integer (decimal digits)")

#define UCT_GPUMEM_CONFIG_TYPE_TIME \
    UCT_GPUMEM_CONFIG_PARSER(uct_gpumem_config_sscanf_time, \
                             ucs_config_sprintf_time, \
                             ucs_config_clone_double, \
                             "time value, not negative: " \
                             "<number>[m|s|ms|us|ns]")

#define UCT_GPUMEM_CONFIG_TYPE_TIME_UNITS \
    UCT_GPUMEM_CONFIG_PARSER(uct_gpumem_config_sscanf_time_units, \
                             ucs_config_sprintf_time_units, \
                             ucs_config_clone_ulong, \
                             "time value, not negative: " \
                             "<number>[m|s|ms|us|ns], \"inf\", or \"auto\"")

#define UCT_GPUMEM_CONFIG_TYPE_LATENCY \
    UCT_GPUMEM_CONFIG_PARSER(uct_gpumem_config_sscanf_latency, \
                             ucs_config_sprintf_time_units, \
                             ucs_config_clone_ulong, \
                             "time value, finite and not negative: " \
                             "<number>[m|s|ms|us|ns], or \"auto\"")

#define UCT_GPUMEM_CONFIG_TYPE_BW \
    UCT_GPUMEM_CONFIG_PARSER(uct_gpumem_config_sscanf_bw, \
                             ucs_config_sprintf_bw, \
                             ucs_config_clone_double, \
                             "bandwidth value, finite and positive: " \
                             "<number>[T|G|M|K]B|b[[p|/]s], or \"auto\"")

#define UCT_GPUMEM_CONFIG_TYPE_SIZE \
    UCT_GPUMEM_CONFIG_PARSER(uct_gpumem_config_sscanf_size, \
                             ucs_config_sprintf_memunits, \
                             ucs_config_clone_ulong, \
                             "memory units, finite: <number>[b|kb|mb|gb]")

END_C_DECLS

#endif
