/**
 * gpumem: the GPU memory domain.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_MD_H_
#define UCT_GPUMEM_MD_H_

#include <uct/base/uct_md.h>


/**
 * gpumem memory domain configuration.
 */
typedef struct uct_gpumem_md_config {
    uct_md_config_t super;
} uct_gpumem_md_config_t;


/**
 * gpumem memory domain.
 */
typedef struct uct_gpumem_md {
    uct_md_t super;
} uct_gpumem_md_t;


extern uct_component_t uct_gpumem_component;

#endif
