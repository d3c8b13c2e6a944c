# GPUMEM_CHECK_CUDA: the CUDA driver API header, optional. The CUDA backend
# opens libcuda.so.1 at run time, so only cuda.h is needed to build it.
AC_DEFUN([GPUMEM_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda=DIR],
            [CUDA toolkit with include/cuda.h (default: /usr/local/cuda when
             present; --without-cuda leaves the CUDA backend out)])],
        [], [with_cuda=check])

    gpumem_have_cuda=no
    AS_CASE([$with_cuda],
        [no],    [gpumem_cuda_summary="no (--without-cuda)"],
        [check], [cuda_dir=/usr/local/cuda],
        [yes],   [cuda_dir=/usr/local/cuda],
                 [cuda_dir=$with_cuda])

    AS_IF([test "x$with_cuda" != xno], [
        gpumem_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS -I$cuda_dir/include"
        AC_CHECK_HEADER([cuda.h], [gpumem_have_cuda=yes], [], [;])
        CPPFLAGS=$gpumem_save_CPPFLAGS
        $as_unset ac_cv_header_cuda_h
        AS_IF([test $gpumem_have_cuda = yes],
              [CUDA_CPPFLAGS="-isystem $cuda_dir/include"
               CUDA_LIBDIR="$cuda_dir/lib64"
               gpumem_cuda_summary="yes ($cuda_dir/include/cuda.h)"
               AC_DEFINE([HAVE_CUDA], [1], [Build the CUDA driver backend])],
              [test "x$with_cuda" = xcheck],
              [gpumem_cuda_summary="no (no cuda.h in $cuda_dir/include)"],
              [AC_MSG_ERROR([--with-cuda=$with_cuda: no cuda.h in $cuda_dir/include])])
    ])
    AC_SUBST([CUDA_CPPFLAGS])
    # The toolkit's libraries, for the device checks' programs only: the
    # plugin links none of them
    AC_SUBST([CUDA_LIBDIR])
    AM_CONDITIONAL([HAVE_CUDA], [test $gpumem_have_cuda = yes])
])
