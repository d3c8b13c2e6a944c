# GPUMEM_CHECK_HWLOC: hwloc, the source of the machine's PCI tree, GPUs, NICs
# and fabric distance matrices.
AC_DEFUN([GPUMEM_CHECK_HWLOC], [
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
        [AC_MSG_ERROR([hwloc >= 2.0 not found ($HWLOC_PKG_ERRORS); install libhwloc-dev])])
    HWLOC_VERSION=`$PKG_CONFIG --modversion hwloc`
])
