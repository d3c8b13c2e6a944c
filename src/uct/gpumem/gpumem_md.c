/**
 * gpumem: the GPU memory domain: open, query, close.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_md.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>


static ucs_config_field_t uct_gpumem_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"TOPO_XML", "",
     "hwloc XML export of the machine whose GPUs and NICs to use, instead of\n"
     "the machine the process runs on (as written by 'lstopo file.xml').",
     ucs_offsetof(uct_gpumem_md_config_t, topo_xml), UCS_CONFIG_TYPE_STRING},

    {"SYSFS_ROOT", "/sys",
     "Root of the sysfs tree from which the facts that hwloc does not carry\n"
     "are read: PCI ACS control bits, IOMMU groups and BAR sizes.",
     ucs_offsetof(uct_gpumem_md_config_t, sysfs_root),
     UCS_CONFIG_TYPE_STRING},

    {"TOPO_FACTS", "",
     "Topology facts saved once by an administrator with\n"
     "'gpumem_topo --save-facts FILE' (run as root, who can read the PCI\n"
     "configuration space), applied over what this process can read.",
     ucs_offsetof(uct_gpumem_md_config_t, topo_facts),
     UCS_CONFIG_TYPE_STRING},

    {NULL}
};

static ucs_status_t
uct_gpumem_md_query(uct_md_h UCS_V_UNUSED md, uct_md_attr_t *md_attr)
{
    /* Nothing is advertised that this build cannot do: no allocation,
     * registration or detection of memory yet. */
    md_attr->cap.flags            = 0;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = 0;
    md_attr->cap.reg_mem_types    = 0;
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = 0;
    md_attr->rkey_packed_size     = 0;
    md_attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}

static void uct_gpumem_md_close(uct_md_h uct_md)
{
    uct_gpumem_md_t *md = ucs_derived_of(uct_md, uct_gpumem_md_t);

    ucs_free(md->gpu_sys_devs);
    gpumem_topo_destroy(md->topo);
    ucs_free(md);
}

static uct_md_ops_t uct_gpumem_md_ops = {
    .close                  = uct_gpumem_md_close,
    .query                  = uct_gpumem_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_reg                = (uct_md_mem_reg_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_dereg              = (uct_md_mem_dereg_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_query              = (uct_md_mem_query_func_t)
                                      ucs_empty_function_return_unsupported,
    .mkey_pack              = (uct_md_mkey_pack_func_t)
                                      ucs_empty_function_return_unsupported,
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)
                                      ucs_empty_function_return_zero_int,
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)
                                      ucs_empty_function_return_unsupported
};

static const char *uct_gpumem_md_config_path(const char *value)
{
    return (value[0] == '\0') ? NULL : value;
}

/* Makes each GPU a UCX system device, named as the topology names it, so
 * that UCX's own topology code and ucx_info see it */
static ucs_status_t uct_gpumem_md_register_gpus(uct_gpumem_md_t *md)
{
    const gpumem_topo_reach_t *reach;
    ucs_sys_bus_id_t bus_id;
    ucs_status_t status;
    unsigned i;

    md->gpu_sys_devs = ucs_calloc(ucs_max(md->topo->num_gpus, 1),
                                  sizeof(*md->gpu_sys_devs),
                                  "gpumem_gpu_sys_devs");
    if (md->gpu_sys_devs == NULL) {
        ucs_error("gpumem: failed to allocate %u system devices",
                  md->topo->num_gpus);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < md->topo->num_gpus; ++i) {
        reach           = &md->topo->devs[i].reach;
        bus_id.domain   = reach->addr.domain;
        bus_id.bus      = reach->addr.bus;
        bus_id.slot     = reach->addr.dev;
        bus_id.function = reach->addr.fn;
        status = ucs_topo_find_device_by_bus_id(&bus_id,
                                                &md->gpu_sys_devs[i]);
        if (status != UCS_OK) {
            md->gpu_sys_devs[i] = UCS_SYS_DEVICE_ID_UNKNOWN;
            continue;
        }
        ucs_topo_sys_device_set_name(md->gpu_sys_devs[i],
                                     md->topo->devs[i].name);
    }

    return UCS_OK;
}

static ucs_status_t
uct_gpumem_md_open(uct_component_t *component, const char *md_name,
                   const uct_md_config_t *uct_md_config, uct_md_h *md_p)
{
    const uct_gpumem_md_config_t *md_config =
            ucs_derived_of(uct_md_config, uct_gpumem_md_config_t);
    gpumem_topo_params_t topo_params;
    uct_gpumem_md_t *md;
    ucs_status_t status;

    md = ucs_calloc(1, sizeof(*md), "uct_gpumem_md_t");
    if (md == NULL) {
        ucs_error("gpumem: failed to allocate memory domain %s", md_name);
        return UCS_ERR_NO_MEMORY;
    }

    topo_params.xml_path   = uct_gpumem_md_config_path(md_config->topo_xml);
    topo_params.xml_buffer = NULL;
    topo_params.sysfs_root = uct_gpumem_md_config_path(md_config->sysfs_root);
    topo_params.facts_path = uct_gpumem_md_config_path(md_config->topo_facts);
    status = gpumem_topo_load(&topo_params, &md->topo);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_gpumem_md_register_gpus(md);
    if (status != UCS_OK) {
        goto err_topo;
    }

    md->super.ops       = &uct_gpumem_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;

err_topo:
    gpumem_topo_destroy(md->topo);
err_free:
    ucs_free(md);
    return status;
}

uct_component_t uct_gpumem_component = {
    .name               = "gpumem",
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = uct_gpumem_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                                  ucs_empty_function_return_unsupported,
    .rkey_unpack        = (uct_component_rkey_unpack_func_t)
                                  ucs_empty_function_return_unsupported,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                                  ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
                                  ucs_empty_function_return_success,
    .md_config          = {
        .name           = "gpumem memory domain",
        .prefix         = "GPUMEM_",
        .table          = uct_gpumem_md_config_table,
        .size           = sizeof(uct_gpumem_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_gpumem_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
