/**
 * gpumem copy transport: its memory domain, the gpumem component's, which
 * allocates and detects device memory.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_COPY_MD_H_
#define UCT_GPUMEM_COPY_MD_H_

#include <uct/gpumem/gpumem_context.h>

#include <uct/base/uct_md.h>


/**
 * gpumem memory domain configuration: UCT's own. The GPUs' settings are the
 * plugin's (gpumem_settings.h), the same for every memory domain.
 */
typedef struct uct_gpumem_md_config {
    uct_md_config_t super;
} uct_gpumem_md_config_t;


/**
 * gpumem memory domain.
 */
typedef struct uct_gpumem_md {
    uct_md_t             super;
    uct_gpumem_context_t *context;   /* The process's GPUs */
    ucs_memory_type_t    mem_type;
    unsigned             alloc_gpu;
} uct_gpumem_md_t;


extern uct_component_t uct_gpumem_component;


#endif
