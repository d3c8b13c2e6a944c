/**
 * gpumem: the UCS helpers as every supported UCX (1.13 to master) has them,
 * for the layers below UCT (memory core, drivers) too.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_COMPAT_UCS_H_
#define UCT_GPUMEM_COMPAT_UCS_H_

#include <ucs/sys/math.h>
/* The alignment helpers moved out of math.h in UCX 1.17 */
#ifdef HAVE_UCS_SYS_PTR_ARITH_H
#  include <ucs/sys/ptr_arith.h>
#endif

#include <ucs/config/parser.h>
/* Renamed in UCX 1.14 */
#ifndef HAVE_UCS_CONFIG_DBL_AUTO
#  define UCS_CONFIG_DBL_AUTO    UCS_CONFIG_BW_AUTO
#  define UCS_CONFIG_DBL_IS_AUTO UCS_CONFIG_BW_IS_AUTO
#endif

#endif
