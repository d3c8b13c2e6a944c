# GPUMEM_CHECK_UCX_SRC: the UCX source tree whose internal headers (uct/base,
# ucs/datastruct, ...) a component compiles against. Its version must equal
# the installed libraries' version, since the structs it shares with libuct
# are unversioned.
AC_DEFUN([GPUMEM_CHECK_UCX_SRC], [
    AC_REQUIRE([GPUMEM_CHECK_UCX])
    gpumem_cache_dir=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
            [UCX source tree matching the installed UCX (default:
             $GPUMEM_CACHE_DIR/ucx-<version>, or /var/cache/gpumem/ucx-<version>,
             as contrib/setup.sh unpacks it)])],
        [UCX_SRC_DIR=$withval],
        [UCX_SRC_DIR=$gpumem_cache_dir/ucx-$UCX_VERSION])

    AC_MSG_CHECKING([for the UCX source tree])
    AS_IF([test ! -f "$UCX_SRC_DIR/src/uct/base/uct_md.h" ||
           test ! -f "$UCX_SRC_DIR/configure.ac"],
          [AC_MSG_RESULT([no])
           AC_MSG_ERROR([no UCX source tree in $UCX_SRC_DIR (expected src/uct/base/uct_md.h); run contrib/setup.sh or give --with-ucx-src=DIR])])
    UCX_SRC_DIR=`cd "$UCX_SRC_DIR" && pwd`
    AC_MSG_RESULT([$UCX_SRC_DIR])

    AC_MSG_CHECKING([the UCX source tree version])
    # configure.ac of UCX: define([ucx_ver_major], 1) and so on
    ucx_src_version=`sed -n 's/^.efine(.ucx_ver_\(major\|minor\|patch\)., *\(@<:@0-9@:>@*\)).*/\2/p' \
                         "$UCX_SRC_DIR/configure.ac" | paste -s -d.`
    AC_MSG_RESULT([$ucx_src_version])
    AS_IF([test "x$ucx_src_version" != "x$UCX_VERSION"],
          [AC_MSG_ERROR([UCX source tree $UCX_SRC_DIR is version ${ucx_src_version:-unknown} but the installed UCX libraries are version $UCX_VERSION; the plugin must be built against the source of the UCX it runs in])])

    AC_SUBST([UCX_SRC_DIR])
    AC_SUBST([UCX_SRC_CPPFLAGS], ["-isystem $UCX_SRC_DIR/src"])
])
