/**
 * gpumem: the UCX compatibility shim's former place, for the files of the
 * context that still name it here; the shim is compat/gpumem_compat.h, below
 * the context, and this header goes once they name that.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_BASE_COMPAT_H_
#define UCT_GPUMEM_BASE_COMPAT_H_

#include <uct/gpumem/compat/gpumem_compat.h>

#endif
