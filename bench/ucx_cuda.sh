# shellcheck shell=bash
# The UCX with CUDA a benchmark compares gpumem with (sourced).

# ucx_cuda_prefix NAME BUILDDIR SRCDIR: the prefix of UCX built with CUDA
# as the build's UCX is configured (contrib/ucx-cuda.sh, cached in the
# set-up cache), over the build's emulated CUDA, the build made first;
# returns 1 with NAME's line saying why where there is none
ucx_cuda_prefix() {
    local name=$1 build=$2 srcdir=$3 ucx_src cuda_dir nvml_dir prefix

    if [ ! -f "$build/Makefile" ]; then
        echo "$name: $build is no configured build" >&2
        return 1
    fi
    ucx_src=$(sed -n 's/^UCX_SRC_DIR = //p' "$build/Makefile")
    cuda_dir=$(sed -n 's/^CUDA_DIR = //p' "$build/Makefile")
    nvml_dir=$(sed -n 's/^NVML_DIR = //p' "$build/Makefile")
    if [ -z "$cuda_dir" ] || [ -z "$nvml_dir" ] ||
       [ ! -f "$nvml_dir/include/nvml.h" ]; then
        echo "$name: $build was configured without CUDA or nvml.h" >&2
        return 1
    fi
    if ! make -s -C "$build" all >/dev/null; then
        echo "$name: the build fails" >&2
        return 1
    fi
    prefix=$("$srcdir/contrib/ucx-cuda.sh" "$ucx_src" "$cuda_dir" \
                 "$nvml_dir" "$build/emu/.libs" | tail -n 1)
    if [ ! -f "$prefix/lib/libucp.so.0" ]; then
        echo "$name: no UCX with CUDA (contrib/ucx-cuda.sh)" >&2
        return 1
    fi
    echo "$prefix"
}
