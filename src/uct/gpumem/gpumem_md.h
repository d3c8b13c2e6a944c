/**
 * gpumem: the GPU memory domain.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_MD_H_
#define UCT_GPUMEM_MD_H_

#include <uct/base/uct_md.h>
#include <uct/gpumem/topo/topo.h>
#include <ucs/sys/topo/base/topo.h>


/**
 * gpumem memory domain configuration.
 */
typedef struct uct_gpumem_md_config {
    uct_md_config_t super;
    char            *topo_xml;    /* hwloc XML export, "" for this machine */
    char            *sysfs_root;  /* Root of sysfs for the facts hwloc lacks */
    char            *topo_facts;  /* Facts saved by gpumem_topo --save-facts */
} uct_gpumem_md_config_t;


/**
 * gpumem memory domain.
 */
typedef struct uct_gpumem_md {
    uct_md_t         super;
    gpumem_topo_t    *topo;          /* The machine's GPUs and NICs */
    ucs_sys_device_t *gpu_sys_devs;  /* UCX system device of each GPU */
} uct_gpumem_md_t;


extern uct_component_t uct_gpumem_component;

#endif
