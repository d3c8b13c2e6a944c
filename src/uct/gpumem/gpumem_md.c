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
#include <ucs/sys/string.h>
#include <string.h>


static ucs_config_field_t uct_gpumem_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gpumem_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

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

static ucs_status_t
uct_gpumem_md_open(uct_component_t *component, const char *md_name,
                   const uct_md_config_t UCS_V_UNUSED *md_config,
                   uct_md_h *md_p)
{
    uct_gpumem_md_t *md;

    md = ucs_malloc(sizeof(*md), "uct_gpumem_md_t");
    if (md == NULL) {
        ucs_error("gpumem: failed to allocate memory domain %s", md_name);
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_gpumem_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;
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
