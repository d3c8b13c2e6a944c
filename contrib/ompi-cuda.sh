#!/usr/bin/env bash
# Builds a CUDA-aware Open MPI from the source of Debian's own Open MPI (the
# upstream archive of its source package, which contrib/setup.sh unpacks),
# configured --with-cuda against the toolkit's headers and Debian's UCX,
# PMIx, libevent and hwloc, once, into the set-up cache. Debian's binary
# Open MPI stays as it is.
#
# Only what an MPI job on GPU buffers needs is built: the C bindings, pml
# ucx, osc ucx, coll cuda and the usual collectives, shared memory and TCP;
# no Fortran, C++, OpenSHMEM, Java, MPI-IO or other networks.
#
# Its CUDA support opens libcuda.so.1 at run time: the emulated one of a
# gpumem build (gpumem-emu puts it first on the library path), or the real
# one on a GPU machine.
#
# Usage: contrib/ompi-cuda.sh OMPI_SRC_DIR CUDA_DIR
#
# Prints the installation prefix on its last line. The prefix is keyed by
# the version, a hash of the sources, the flags below, the CUDA headers
# and the versions of the Debian libraries it links, so that a changed one
# never reuses a stale build.
set -euo pipefail

GPUMEM_CACHE_DIR=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
JOBS=${GPUMEM_JOBS:-2}
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
NO_BUILD=io,fs,fbtl,fcoll,sharedfp,mtl,vprotocol,btl-openib,btl-usnic
NO_BUILD+=,btl-ofi,btl-uct,btl-smcuda,btl-portals4,btl-ugni,btl-scif
NO_BUILD+=,coll-hcoll,coll-fca,coll-portals4,coll-ucc,coll-monitoring
NO_BUILD+=,pml-monitoring,pml-crcpw,pml-v,pml-yalla,osc-monitoring
NO_BUILD+=,osc-portals4,topo-treematch
FLAGS=(--disable-mpi-fortran --disable-mpi-cxx --disable-oshmem
       --disable-mpi-java --disable-io-romio --disable-io-ompio
       --without-verbs --without-ofi --without-psm --without-psm2
       --without-tm --without-slurm --without-sge --without-lsf
       --with-ucx=/usr --with-pmix=/usr/lib/$MULTIARCH/pmix2
       --with-libevent=external --with-hwloc=external
       --enable-mca-no-build=$NO_BUILD --disable-silent-rules)
DEBIAN_LIBS=(libucx-dev libpmix-dev libevent-dev libhwloc-dev)

log() { echo "ompi-cuda: $*" >&2; }

[ $# -eq 2 ] || { echo "usage: $0 OMPI_SRC_DIR CUDA_DIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
cuda=$2
for f in "$src/configure" "$src/VERSION" "$cuda/include/cuda.h"; do
    [ -e "$f" ] || { log "missing $f"; exit 1; }
done

version=$(sed -n 's/^\(major\|minor\|release\)=\([0-9]*\)$/\2/p' \
              "$src/VERSION" | paste -s -d.)
key=$( (cd "$src" && find . -path ./.git -prune -o -type f -print0 |
            LC_ALL=C sort -z | xargs -0 sha256sum;
        echo "${FLAGS[*]}";
        dpkg-query -W "${DEBIAN_LIBS[@]}" 2>/dev/null;
        sha256sum "$cuda/include/cuda.h") | sha256sum | cut -c1-12)
prefix=$GPUMEM_CACHE_DIR/ompi-cuda/$version-$key

if [ -f "$prefix/.complete" ]; then
    log "Open MPI $version with CUDA cached in $prefix"
    echo "$prefix"
    exit 0
fi

work=$prefix.work
rm -rf "$prefix" "$work"
mkdir -p "$work"
log "building Open MPI $version with CUDA from $src into $prefix" \
    "(many minutes)"
(
    cd "$work"
    "$src/configure" --prefix="$prefix" "${FLAGS[@]}" --with-cuda="$cuda" \
        >configure.log 2>&1 || exit 1
    grep -q "^#define OPAL_CUDA_SUPPORT 1" opal/include/opal_config.h || {
        echo "configure found no CUDA" >&2; exit 1; }
    make -j"$JOBS" >make.log 2>&1 || exit 1
    make install >install.log 2>&1 || exit 1
) || {
    log "Open MPI $version with CUDA failed to build; logs in $work"
    exit 1
}
"$prefix/bin/ompi_info" --parsable --all 2>/dev/null |
    grep -q "^mca:mpi:base:param:mpi_built_with_cuda_support:value:true" || {
    log "the Open MPI built in $prefix says it has no CUDA support"
    exit 1
}
touch "$prefix/.complete"
rm -rf "$work"
log "Open MPI $version with CUDA installed in $prefix"
echo "$prefix"
