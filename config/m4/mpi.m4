# GPUMEM_CHECK_MPI: Open MPI, for the MPI example (optional).
AC_DEFUN([GPUMEM_CHECK_MPI], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [gpumem_have_mpi=yes],
        [gpumem_have_mpi=no
         AC_MSG_WARN([Open MPI not found ($MPI_PKG_ERRORS): the MPI example is not built; install libopenmpi-dev])])
    AM_CONDITIONAL([HAVE_MPI], [test $gpumem_have_mpi = yes])
])
