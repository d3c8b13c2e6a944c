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

    # The toolkit's runtime header: the emulated CUDA gains a runtime of
    # its own, under the toolkit's soname (libcudart.so.<major>)
    gpumem_have_cudart=no
    AS_IF([test $gpumem_have_cuda = yes], [
        gpumem_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
        AC_CHECK_HEADER([cuda_runtime_api.h],
            [AC_COMPUTE_INT([CUDART_SOVERSION], [CUDART_VERSION / 1000],
                            [#include <cuda_runtime_api.h>],
                            [CUDART_SOVERSION=])])
        CPPFLAGS=$gpumem_save_CPPFLAGS
        $as_unset ac_cv_header_cuda_runtime_api_h
        AS_IF([test -n "$CUDART_SOVERSION"],
              [gpumem_have_cudart=yes
               gpumem_cuda_summary="$gpumem_cuda_summary, runtime libcudart.so.$CUDART_SOVERSION"])
    ])
    AC_SUBST([CUDART_SOVERSION])
    AM_CONDITIONAL([HAVE_CUDART], [test $gpumem_have_cudart = yes])

    # NVIDIA's nvml.h (contrib/setup.sh keeps it in the set-up cache): the
    # emulated CUDA gains libnvidia-ml.so.1
    AC_ARG_WITH([nvml],
        [AS_HELP_STRING([--with-nvml=DIR],
            [directory with include/nvml.h, for the emulated NVML (default:
             $GPUMEM_CACHE_DIR/nvml, i.e. /var/cache/gpumem/nvml, where
             present; --without-nvml leaves it out)])],
        [], [with_nvml=check])
    gpumem_have_nvml=no
    NVML_CPPFLAGS=
    AS_CASE([$with_nvml],
        [no],        [nvml_dir=],
        [check|yes], [nvml_dir=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}/nvml],
                     [nvml_dir=$with_nvml])
    AS_IF([test $gpumem_have_cuda = yes && test -n "$nvml_dir"], [
        gpumem_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS -I$nvml_dir/include"
        AC_CHECK_HEADER([nvml.h], [gpumem_have_nvml=yes], [], [;])
        CPPFLAGS=$gpumem_save_CPPFLAGS
        $as_unset ac_cv_header_nvml_h
        AS_IF([test $gpumem_have_nvml = yes],
              [NVML_CPPFLAGS="-isystem $nvml_dir/include"
               gpumem_cuda_summary="$gpumem_cuda_summary, NVML ($nvml_dir/include/nvml.h)"],
              [test "x$with_nvml" != xcheck],
              [AC_MSG_ERROR([--with-nvml=$with_nvml: no nvml.h in $nvml_dir/include])])
    ])
    AS_IF([test $gpumem_have_nvml = yes], [NVML_DIR=$nvml_dir], [NVML_DIR=])
    AC_SUBST([NVML_DIR])
    AS_IF([test $gpumem_have_cuda = yes], [CUDA_DIR=$cuda_dir], [CUDA_DIR=])
    AC_SUBST([CUDA_DIR])
    AC_SUBST([NVML_CPPFLAGS])
    AM_CONDITIONAL([HAVE_NVML], [test $gpumem_have_nvml = yes])

    AC_SUBST([CUDA_CPPFLAGS])
    # The toolkit's libraries, for the device checks' programs only: the
    # plugin links none of them
    AC_SUBST([CUDA_LIBDIR])
    AM_CONDITIONAL([HAVE_CUDA], [test $gpumem_have_cuda = yes])
])
