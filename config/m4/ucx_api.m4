# GPUMEM_CHECK_UCX_API: what the internal UCX API the plugin is built against
# looks like, probed from its headers (what the API is, not which version
# number it carries). Each answer is a HAVE_* define that only
# src/uct/gpumem/compat/gpumem_compat.{h,c} reads.

# GPUMEM_UCX_PROBE(DEFINE, WHAT, INCLUDES, BODY): compiles BODY after
# INCLUDES against UCX's headers; defines DEFINE when it compiles.
AC_DEFUN([GPUMEM_UCX_PROBE], [
    AC_CACHE_CHECK([whether UCX $2], [gpumem_cv_$1],
        [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include "ucx_config.h"
$3
]], [[$4]])], [gpumem_cv_$1=yes], [gpumem_cv_$1=no])])
    AS_IF([test "x$gpumem_cv_$1" = xyes],
          [AC_DEFINE([$1], [1], [UCX $2])])
])

# GPUMEM_UCX_PROBE_TYPE(DEFINE, WHAT, INCLUDES, TYPE, EXPECTED): whether the
# function pointer type TYPE is EXPECTED.
AC_DEFUN([GPUMEM_UCX_PROBE_TYPE], [
    GPUMEM_UCX_PROBE([$1], [$2], [$3],
        [_Static_assert(__builtin_types_compatible_p($4, $5), "");])
])

# GPUMEM_UCX_PROBE_MEMBER(DEFINE, WHAT, INCLUDES, STRUCT, MEMBER)
AC_DEFUN([GPUMEM_UCX_PROBE_MEMBER], [
    GPUMEM_UCX_PROBE([$1], [$2], [$3],
        [$4 s; (void)sizeof(s.$5);])
])

AC_DEFUN([GPUMEM_CHECK_UCX_API], [
    AC_REQUIRE([GPUMEM_CHECK_UCX_SRC])
    AC_LANG_PUSH([C])
    gpumem_ucx_api_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="-I. $UCX_SRC_CPPFLAGS $UCX_CFLAGS $CPPFLAGS"

    m4_define([gpumem_md_h], [[#include <uct/base/uct_md.h>]])
    m4_define([gpumem_iface_h], [[#include <uct/base/uct_iface.h>]])
    m4_define([gpumem_component_h], [[#include <uct/base/uct_component.h>]])

    dnl Configuration parsers
    m4_define([gpumem_parser_h], [[#include <ucs/config/parser.h>]])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCS_CONFIG_PARSER_DOC],
        [configuration parsers have a doc function], gpumem_parser_h,
        [ucs_config_parser_t], [doc])

    dnl Memory domain flags
    GPUMEM_UCX_PROBE([HAVE_UCT_MD_FLAG_INVALIDATE_RMA],
        [names invalidation of RMA access (UCT_MD_FLAG_INVALIDATE_RMA)],
        gpumem_md_h, [(void)UCT_MD_FLAG_INVALIDATE_RMA;])

    dnl Memory domain ops
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_MD_QUERY_V2],
        [MD query takes uct_md_attr_v2_t], gpumem_md_h,
        [uct_md_query_func_t],
        [ucs_status_t (*)(uct_md_h, uct_md_attr_v2_t*)])
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_MD_MEM_REG_PARAMS],
        [MD mem_reg takes uct_md_mem_reg_params_t], gpumem_md_h,
        [uct_md_mem_reg_func_t],
        [ucs_status_t (*)(uct_md_h, void*, size_t,
                          const uct_md_mem_reg_params_t*, uct_mem_h*)])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_MD_OPS_MEM_ATTACH],
        [MD ops have mem_attach], gpumem_md_h, [uct_md_ops_t], [mem_attach])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_MD_OPS_IS_SOCKADDR_ACCESSIBLE],
        [MD ops have is_sockaddr_accessible], gpumem_md_h, [uct_md_ops_t],
        [is_sockaddr_accessible])
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_MD_MKEY_PACK_ADDRESS],
        [MD mkey_pack takes the address and length], gpumem_md_h,
        [uct_md_mkey_pack_func_t],
        [ucs_status_t (*)(uct_md_h, uct_mem_h, void*, size_t,
                          const uct_md_mkey_pack_params_t*, void*)])
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_MD_MEM_ALLOC_SYS_DEV],
        [MD mem_alloc takes a system device], gpumem_md_h,
        [uct_md_mem_alloc_func_t],
        [ucs_status_t (*)(uct_md_h, size_t*, void**, ucs_memory_type_t,
                          ucs_sys_device_t, unsigned, const char*,
                          uct_mem_h*)])
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_MD_MEM_QUERY_V2],
        [MD mem_query takes uct_md_mem_attr_v2_t], gpumem_md_h,
        [uct_md_mem_query_func_t],
        [ucs_status_t (*)(uct_md_h, const void*, size_t,
                          uct_md_mem_attr_v2_t*)])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_MD_OPS_MEM_ELEM_PACK],
        [MD ops have mem_elem_pack], gpumem_md_h, [uct_md_ops_t],
        [mem_elem_pack])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_MD_OPS_MEM_ELEM_RELEASE],
        [MD ops have mem_elem_release], gpumem_md_h, [uct_md_ops_t],
        [mem_elem_release])
    GPUMEM_UCX_PROBE([HAVE_UCT_MD_BASE_MD_QUERY],
        [has uct_md_base_md_query], gpumem_md_h,
        [void (*f)(uct_md_attr_v2_t*) = uct_md_base_md_query; (void)f;])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_MD_ATTR_V2_REG_ALIGNMENT],
        [MD attributes have reg_alignment], gpumem_md_h, [uct_md_attr_v2_t],
        [reg_alignment])
    GPUMEM_UCX_PROBE([HAVE_UCT_MD_MEM_ATTR_FIELD_DMABUF],
        [memory attributes carry a dma-buf], gpumem_md_h,
        [int f = UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                  UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET; (void)f;])

    dnl Component ops
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_RKEY_UNPACK_PARAMS],
        [rkey_unpack takes uct_rkey_unpack_params_t], gpumem_component_h,
        [uct_component_rkey_unpack_func_t],
        [ucs_status_t (*)(uct_component_t*, const void*,
                          const uct_rkey_unpack_params_t*, uct_rkey_t*,
                          void**)])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_COMPONENT_RKEY_COMPARE],
        [components have rkey_compare], gpumem_component_h,
        [uct_component_t], [rkey_compare])

    GPUMEM_UCX_PROBE_TYPE([HAVE_UCT_EP_INVALIDATE_PARAMS],
        [ep_invalidate takes uct_ep_invalidate_params_t], gpumem_iface_h,
        [uct_ep_invalidate_func_t],
        [ucs_status_t (*)(uct_ep_h, const uct_ep_invalidate_params_t*)])

    GPUMEM_UCX_PROBE([HAVE_UCT_IFACE_SCOPE_IS_REACHABLE],
        [has uct_iface_scope_is_reachable], gpumem_iface_h,
        [int (*f)(const uct_iface_h, const uct_iface_is_reachable_params_t*) =
             uct_iface_scope_is_reachable; (void)f;])

    dnl Performance estimates
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_PERF_ATTR_PATH_BANDWIDTH],
        [estimates have the bandwidth of one path],
        [#include <uct/api/v2/uct_v2.h>], [uct_perf_attr_t],
        [path_bandwidth])

    dnl Interface memory pools
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCT_IFACE_MPOOL_CONFIG_MAX_CHUNK_SIZE],
        [interface memory pools are configured with a chunk size and growth],
        gpumem_iface_h, [uct_iface_mpool_config_t], [max_chunk_size])

    dnl Interface internal ops UCP calls without a NULL check
    m4_foreach([gpumem_op], [[iface_query_v2], [ep_connect_to_ep_v2],
                             [iface_is_reachable_v2], [ep_is_connected],
                             [ep_get_device_ep], [ep_put_sgl_zcopy],
                             [ep_get_sgl_zcopy], [ep_outstanding_purge],
                             [iface_mem_element_pack]], [
        GPUMEM_UCX_PROBE_MEMBER(
            [HAVE_UCT_IFACE_INTERNAL_OPS_]m4_toupper(gpumem_op),
            [interfaces have the internal op ]gpumem_op, gpumem_iface_h,
            [uct_iface_internal_ops_t], gpumem_op)
    ])

    dnl UCS
    GPUMEM_UCX_PROBE([HAVE_UCS_MPOOL_PARAMS],
        [memory pools take ucs_mpool_params_t],
        [#include <ucs/datastruct/mpool.h>],
        [ucs_mpool_params_t p; ucs_mpool_params_reset(&p);])
    GPUMEM_UCX_PROBE([HAVE_UCS_CONFIG_DBL_AUTO],
        [configuration has UCS_CONFIG_DBL_AUTO],
        [#include <ucs/config/parser.h>],
        [double d = UCS_CONFIG_DBL_AUTO; (void)d;])
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCS_CONFIG_PARSER_FILL_OPTS_ENTRY],
        [configuration tables are filled from their global list entry],
        [#include <ucs/config/parser.h>],
        [__typeof__(&ucs_config_parser_fill_opts)],
        [ucs_status_t (*)(void*, ucs_config_global_list_entry_t*,
                          const char*, int)])
    GPUMEM_UCX_PROBE([HAVE_UCS_TOPO_SYS_DEVICE_SET_NAME_PRIORITY],
        [ucs_topo_sys_device_set_name takes a priority],
        [#include <ucs/sys/topo/base/topo.h>],
        [(void)ucs_topo_sys_device_set_name(0, "", 0);])
    GPUMEM_UCX_PROBE([HAVE_UCS_SYS_PTR_ARITH_H],
        [has ucs/sys/ptr_arith.h],
        [#include <ucs/sys/ptr_arith.h>], [])

    dnl Registration cache
    m4_define([gpumem_rcache_h], [[#include <ucs/memory/rcache.h>]])
    GPUMEM_UCX_PROBE_TYPE([HAVE_UCS_RCACHE_GET_ALIGNMENT],
        [ucs_rcache_get takes an alignment], gpumem_rcache_h,
        [__typeof__(&ucs_rcache_get)],
        [ucs_status_t (*)(ucs_rcache_t*, void*, size_t, size_t, int, void*,
                          ucs_rcache_region_t**)])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCS_RCACHE_PARAMS_ALIGNMENT],
        [registration caches are created with an alignment], gpumem_rcache_h,
        [ucs_rcache_params_t], [max_alignment])
    GPUMEM_UCX_PROBE_MEMBER([HAVE_UCS_RCACHE_OPS_MERGE],
        [registration caches call a merge op], gpumem_rcache_h,
        [ucs_rcache_ops_t], [merge])
    GPUMEM_UCX_PROBE([HAVE_UCS_CONFIG_RCACHE_TABLE],
        [has UCS's table of registration cache settings], gpumem_rcache_h,
        [ucs_rcache_config_t c; (void)ucs_config_rcache_table; (void)c;])

    dnl UCM memory type events
    GPUMEM_UCX_PROBE([HAVE_UCM_MEM_TYPE_EVENT_SYS_DEV],
        [memory type events carry a system device and flags],
        [#include <ucm/api/ucm.h>],
        [ucm_event_t e; e.mem_type.sys_dev = 0; e.mem_type.mem_flags = 0;])

    CPPFLAGS=$gpumem_ucx_api_save_CPPFLAGS
    AC_LANG_POP([C])

    dnl UCX 1.22 and later load lib<framework>_<name><libucs suffix> from
    dnl UCX_PLUGIN_PATH and their module directory (src/ucs/sys/module.c)
    AC_MSG_CHECKING([whether UCX loads plugins from UCX_PLUGIN_PATH])
    AS_IF([grep -q '"PLUGIN_PATH"' "$UCX_SRC_DIR/src/ucs/config/global_opts.c" \
               2>/dev/null],
          [ucx_loads_plugins=yes], [ucx_loads_plugins=no])
    AC_MSG_RESULT([$ucx_loads_plugins])
    AC_SUBST([ucx_loads_plugins])
])
