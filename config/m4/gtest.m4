# GPUMEM_CHECK_GTEST: googletest, for "make check".
AC_DEFUN([GPUMEM_CHECK_GTEST], [
    PKG_CHECK_MODULES([GTEST], [gtest_main], [gpumem_have_gtest=yes],
        [gpumem_have_gtest=no
         AC_MSG_WARN([googletest not found ($GTEST_PKG_ERRORS): "make check" cannot run; install libgtest-dev])])
    AS_IF([test $gpumem_have_gtest = yes],
          [GTEST_VERSION=`$PKG_CONFIG --modversion gtest_main`],
          [GTEST_VERSION=no])
    AM_CONDITIONAL([HAVE_GTEST], [test $gpumem_have_gtest = yes])
])
