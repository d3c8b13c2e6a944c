# The CUDA-aware Open MPI and the OSU micro-benchmarks of the tests
# (sourced): osu_env_setup BUILDDIR SRCDIR CUDA_DIR sets $ompi (Open MPI's
# prefix), $osu (OSU's) and $bin (its benchmarks), building each once into
# the set-up cache. Returns 0; 1 with a SKIP line where something they need
# is absent, 2 with a FAIL line where a build fails. The OSU archive is
# OSU_TARBALL, else ../shared/osu/ beside the source tree, else the copy
# contrib/setup.sh made.
#
# See file LICENSE for terms.

osu_env_setup() {
    local build=$1 srcdir=$2 cuda=$3 archive tarball version ompi_src
    local cache=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}

    archive=osu-micro-benchmarks-7.4.tar.gz
    tarball=${OSU_TARBALL:-$srcdir/../shared/osu/$archive}
    [ -n "${OSU_TARBALL:-}" ] || [ -r "$tarball" ] ||
        tarball=$cache/osu-src/$archive
    if [ ! -r "$tarball" ]; then
        echo "SKIP: OSU micro-benchmarks (no archive at $tarball; set OSU_TARBALL)"
        return 1
    fi
    if [ ! -e "$build/emu/.libs/libcuda.so.1" ] ||
       ! ls "$build"/emu/.libs/libcudart.so.* >/dev/null 2>&1; then
        echo "SKIP: OSU micro-benchmarks (this build has no emulated CUDA runtime)"
        return 1
    fi
    version=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev \
                  2>/dev/null | sed 's/-[^-]*$//; s/^[0-9]*://')
    ompi_src=$cache/openmpi-$version
    if [ -z "$version" ] || [ ! -f "$ompi_src/configure" ]; then
        echo "SKIP: OSU micro-benchmarks (no Open MPI source in $cache:" \
             "contrib/setup.sh unpacks it)"
        return 1
    fi

    ompi=$("$srcdir/contrib/ompi-cuda.sh" "$ompi_src" "$cuda" | tail -n 1)
    if [ ! -x "$ompi/bin/mpirun" ]; then
        echo "FAIL: a CUDA-aware Open MPI builds"
        return 2
    fi
    osu=$("$srcdir/contrib/osu-build.sh" "$tarball" "$ompi" "$cuda" |
          tail -n 1)
    bin=$osu/libexec/osu-micro-benchmarks/mpi
    if [ ! -d "$bin" ]; then
        echo "FAIL: the OSU micro-benchmarks build"
        return 2
    fi
    return 0
}
