/**
 * gpumem: the GPU memory domain.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_MD_H_
#define UCT_GPUMEM_MD_H_

#include "gpumem_context.h"

#include <uct/base/uct_md.h>


/**
 * gpumem memory domain configuration.
 */
typedef struct uct_gpumem_md_config {
    uct_md_config_t   super;
    uct_gpumem_driver_select_t driver; /* UCX_GPUMEM_DRIVER */
    char              *topo_xml;    /* hwloc XML export, "" for the emu's
                                       built-in machine */
    char              *sysfs_root;  /* Root of sysfs for the facts hwloc
                                       lacks */
    char              *topo_facts;  /* Facts saved by gpumem_topo
                                       --save-facts */
    ucs_memory_type_t mem_type;     /* The memory type UCX sees */
    unsigned          alloc_gpu;    /* GPU of mem_alloc */
    struct {
        size_t        vram_size;
        size_t        bar_size;
        char          *shm_dir;
        size_t        copy_inline_max;
    } emu;
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


/* The process's GPUs as the memory domain's settings select them */
void uct_gpumem_md_context_params(const uct_gpumem_md_config_t *md_config,
                                  uct_gpumem_context_params_t *params);

#endif
