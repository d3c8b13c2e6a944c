#!/usr/bin/env bash
# Builds UCX's own CUDA transports (cuda_copy, cuda_ipc, UCM's cuda hooks,
# perftest's cuda memory) from a UCX source tree with --with-cuda, against
# the toolkit's headers and NVIDIA's nvml.h, once, into the set-up cache.
# At run time they take the emulated libcuda.so.1, libcudart and
# libnvidia-ml.so.1 of a gpumem build by LD_LIBRARY_PATH.
#
# Usage: contrib/ucx-cuda.sh UCX_SRC_DIR CUDA_DIR NVML_DIR EMU_NVML_LIBDIR
#   NVML_DIR has include/nvml.h; EMU_NVML_LIBDIR has the emulated
#   libnvidia-ml.so that UCX links (the toolkit has no NVML library).
#
# Prints the installation prefix on its last line. The prefix is keyed by
# the tree's version and a hash of its sources, of the flags below and of
# the headers, so that a changed one never reuses a stale build.
set -euo pipefail

GPUMEM_CACHE_DIR=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
JOBS=${GPUMEM_JOBS:-2}
# Configured as Debian's UCX is (its ucx_info -b: threads, assertions and
# parameter checks on, logging up to debug), so that gpumem's plugin, built
# against that UCX, runs in this one too and both sides of a comparison
# pay for the same checks; but for the transports of no use here
FLAGS=(--enable-mt --disable-logging --disable-backtrace-detail
       --enable-devel-headers --enable-cma --without-verbs --without-rdmacm
       --without-knem --without-xpmem --without-rocm --without-java
       --without-go --disable-doxygen-doc)

log() { echo "ucx-cuda: $*" >&2; }

[ $# -eq 4 ] || {
    echo "usage: $0 UCX_SRC_DIR CUDA_DIR NVML_DIR EMU_NVML_LIBDIR" >&2
    exit 2
}
src=$(cd "$1" && pwd)
cuda=$2
nvml=$3
nvml_lib=$4
for f in "$src/configure.ac" "$cuda/include/cuda.h" \
         "$cuda/include/cuda_runtime_api.h" "$nvml/include/nvml.h" \
         "$nvml_lib/libnvidia-ml.so"; do
    [ -e "$f" ] || { log "missing $f"; exit 1; }
done

# GPU-initiated verbs (UCX 1.21 and later) need NVIDIA's DOCA headers, and
# the device code of later UCX (kernels, built by nvcc where configure finds
# it) includes them too: neither is built, the emulated GPU runs no kernel
[ ! -d "$src/src/uct/ib/mlx5/gdaki" ] || FLAGS+=(--without-gda)
! grep -qs "AC_PATH_PROG(\[NVCC\]" "$src/config/m4/cuda.m4" ||
    FLAGS+=(NVCC=/bin/false)

# UCX 1.14 to 1.19 name the typedef of cuMemGetHandleForAddressRange as
# CUDA 11.7 to 12 did; CUDA 13 keeps only its versioned name
compat=
! grep -rqsw "PFN_cuMemGetHandleForAddressRange" "$src/src" ||
    compat="-DPFN_cuMemGetHandleForAddressRange=PFN_cuMemGetHandleForAddressRange_v11070"

version=$(sed -n 's/^define(\[ucx_ver_\(major\|minor\|patch\)\], *\([0-9]*\)).*/\2/p' \
              "$src/configure.ac" | paste -s -d.)
key=$( (cd "$src" && find . -path ./.git -prune -o -type f -print0 |
            LC_ALL=C sort -z | xargs -0 sha256sum;
        echo "${FLAGS[*]}${compat:+ $compat}";
        sha256sum "$cuda/include/cuda.h" "$cuda/include/cuda_runtime_api.h" \
                  "$nvml/include/nvml.h") | sha256sum | cut -c1-12)
prefix=$GPUMEM_CACHE_DIR/ucx-cuda/$version-$key

if [ -f "$prefix/.complete" ]; then
    log "UCX $version with CUDA cached in $prefix"
    echo "$prefix"
    exit 0
fi

work=$prefix.work
rm -rf "$prefix" "$work"
mkdir -p "$work"
log "building UCX $version with CUDA from $src into $prefix (some minutes)"
tar -C "$src" --exclude=.git -cf - . | tar -C "$work" -xf -
(
    cd "$work"
    # Debian's source package keeps upstream's debian/ as debian.upstream,
    # which UCX's configure.ac names
    [ -d debian ] || [ ! -d debian.upstream ] || cp -r debian.upstream debian
    [ -x configure ] || ./autogen.sh >autogen.log 2>&1
    ./configure --prefix="$prefix" "${FLAGS[@]}" --with-cuda="$cuda" \
        CPPFLAGS="-I$nvml/include${compat:+ $compat}" LDFLAGS="-L$nvml_lib" \
        >configure.log 2>&1 ||
        exit 1
    grep -q "^#define HAVE_CUDA 1" config.h || {
        echo "configure found no CUDA" >&2; exit 1; }
    # The modules UCX builds only where CUDA is whole (its headers, libcuda,
    # libcudart, nvml.h and libnvidia-ml)
    grep -q "UCT modules:.* cuda" configure.log || {
        echo "configure builds no cuda transports" >&2; exit 1; }
    # The libraries with their modules, ucx_info and ucx_perftest: not
    # UCX's test programs (one of 1.13's does not compile against CUDA 13)
    for dir in src/ucm src/ucs src/uct src/ucp src/tools/info \
               src/tools/perf; do
        # (errexit does not hold in this subshell, which is in a list)
        make -j"$JOBS" -C "$dir" >>make.log 2>&1 || exit 1
        make -C "$dir" install >>install.log 2>&1 || exit 1
    done
) || {
    log "UCX $version with CUDA failed to build; logs in $work"
    exit 1
}
touch "$prefix/.complete"
rm -rf "$work"
log "UCX $version with CUDA installed in $prefix"
echo "$prefix"
