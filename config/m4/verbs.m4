# GPUMEM_CHECK_VERBS: rdma-core's libibverbs, for registering memory with an
# RDMA NIC and for RC queue pairs.
AC_DEFUN([GPUMEM_CHECK_VERBS], [
    PKG_CHECK_MODULES([VERBS], [libibverbs], [],
        [AC_MSG_ERROR([libibverbs not found ($VERBS_PKG_ERRORS); install libibverbs-dev])])
    VERBS_VERSION=`$PKG_CONFIG --modversion libibverbs`

    gpumem_save_CFLAGS=$CFLAGS
    gpumem_save_LIBS=$LIBS
    CFLAGS="$CFLAGS $VERBS_CFLAGS"
    LIBS="$LIBS $VERBS_LIBS"
    AC_CHECK_DECLS([ibv_reg_dmabuf_mr, IBV_ACCESS_RELAXED_ORDERING], [], [],
                   [[#include <infiniband/verbs.h>]])
    CFLAGS=$gpumem_save_CFLAGS
    LIBS=$gpumem_save_LIBS
    AS_IF([test "x$ac_cv_have_decl_ibv_reg_dmabuf_mr" = xyes],
          [gpumem_have_dmabuf_mr=yes], [gpumem_have_dmabuf_mr=no])
])
