#!/usr/bin/env bash
# Builds the OSU micro-benchmarks from their release archive with an MPI's
# compiler wrappers and CUDA buffers (--enable-cuda=basic: device buffers
# through the CUDA runtime, no CUDA kernels), once, into the set-up cache.
# The archive is never unpacked into, or patched in, the project.
#
# Usage: contrib/osu-build.sh OSU_TARBALL MPI_PREFIX CUDA_DIR
#   MPI_PREFIX has bin/mpicc and bin/mpicxx (contrib/ompi-cuda.sh's prefix,
#   or /usr for Debian's Open MPI).
#
# The benchmarks link the toolkit's libcudart and libcuda.so.1; at run time
# they take the emulated ones (gpumem-emu) or a GPU machine's.
#
# Prints the installation prefix on its last line; the benchmarks are under
# its libexec/osu-micro-benchmarks/mpi/{pt2pt,collective,one-sided}. The
# prefix is keyed by the archive, the MPI's wrappers, the flags and the CUDA
# headers, so that a changed one never reuses a stale build.
set -euo pipefail

GPUMEM_CACHE_DIR=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
JOBS=${GPUMEM_JOBS:-2}

log() { echo "osu-build: $*" >&2; }

[ $# -eq 3 ] || {
    echo "usage: $0 OSU_TARBALL MPI_PREFIX CUDA_DIR" >&2
    exit 2
}
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mpi=$2
cuda=$3
for f in "$tarball" "$mpi/bin/mpicc" "$mpi/bin/mpicxx" \
         "$cuda/include/cuda_runtime_api.h"; do
    [ -e "$f" ] || { log "missing $f"; exit 1; }
done
cudalib=$cuda/lib64
[ -d "$cudalib" ] || cudalib=$cuda/lib
# The toolkit's libcuda.so is a link-time stub
cudastubs=$cudalib/stubs

flags=(--enable-cuda=basic "--with-cuda-include=$cuda/include"
       "--with-cuda-libpath=$cudalib")
version=$(tar -xzOf "$tarball" --wildcards '*/configure.ac' 2>/dev/null |
          sed -n 's/^AC_INIT(\[[^]]*\], *\[\([0-9.]*\)\].*/\1/p' | head -n 1)
key=$( (sha256sum <"$tarball";
        echo "${flags[*]}";
        "$mpi/bin/mpicc" -showme 2>/dev/null || "$mpi/bin/mpicc" -show;
        sha256sum "$mpi/bin/mpicc" "$cuda/include/cuda_runtime_api.h") |
      sha256sum | cut -c1-12)
prefix=$GPUMEM_CACHE_DIR/osu/${version:-unknown}-$key

if [ -f "$prefix/.complete" ]; then
    log "OSU ${version:-?} cached in $prefix"
    echo "$prefix"
    exit 0
fi

work=$prefix.work
rm -rf "$prefix" "$work"
mkdir -p "$work"
log "building OSU ${version:-?} with $mpi/bin/mpicc and CUDA into $prefix"
(
    cd "$work"
    tar -xzf "$tarball" --strip-components=1
    ./configure --prefix="$prefix" CC="$mpi/bin/mpicc" \
        CXX="$mpi/bin/mpicxx" "${flags[@]}" LDFLAGS="-L$cudastubs" \
        >configure.log 2>&1 || exit 1
    grep -q "^#define _ENABLE_CUDA_ 1" config.log || {
        echo "configure enabled no CUDA buffers" >&2; exit 1; }
    make -j"$JOBS" >make.log 2>&1 || exit 1
    make install >install.log 2>&1 || exit 1
) || {
    log "OSU failed to build; logs in $work"
    exit 1
}
touch "$prefix/.complete"
rm -rf "$work"
log "OSU ${version:-?} installed in $prefix"
echo "$prefix"
