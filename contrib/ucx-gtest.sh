#!/usr/bin/env bash
# UCX's own googletest families on gpumem's transports and memory domains
# (test/ucx-gtest/gpumem_families.cc): builds UCX's test framework and the
# families from the source tree of the UCX gpumem is built against, links
# them against that UCX's libraries, runs gpumem's instantiations with the
# plugin loaded, and prints the counts. Fails if any test fails.
#
#   contrib/ucx-gtest.sh [--build-only | --run PATTERN]
#       [--cuda CUDA_DIR [--nvml NVML_DIR] [--nvml-lib NVML_LIBDIR]]
#       UCX_SRC_DIR UCX_INFO UCX_LIBDIR PLUGIN [WORK_DIR]
#
# --build-only builds WORK_DIR/gtest and runs nothing; --run runs the tests
# of gpumem's instantiations that PATTERN (a gtest filter) selects with the
# binary built before, where the sources need not be (the soft-RoCE VM runs
# gpumem_rc's and gpumem_ib's this way, "make check-vm"); by default
# everything is built and gpumem's instantiations run.
#
# --cuda runs UCX's own CUDA families instead, in a UCX built with CUDA
# (contrib/ucx-cuda.sh) on the emulated CUDA of the caller's environment
# (test/emu/cuda/machine.sh): the same families, whose instantiations for
# cuda_copy, cuda_ipc and their memory domains come along, UCM's cuda hooks
# and the CUDA transports' own tests where the tree has them (UCX 1.19 and
# later), built against CUDA_DIR's headers and runtime, NVML_DIR's
# include/nvml.h, that UCX's libuct_cuda and NVML_LIBDIR's libnvidia-ml,
# and run with no plugin loaded (PLUGIN is "none").
#
# UCX_INFO and UCX_LIBDIR are that UCX's ucx_info and libraries (as
# configure found them: `make check-ucx-gtest` passes them), PLUGIN the
# built libuct_gpumem.so. The framework's objects are cached
# under $GPUMEM_CACHE_DIR/ucx-gtest, keyed by the UCX version, its build
# configuration (ucx_info -b) and the compiler; the families' objects by
# this file and the families file too. Nothing of UCX's is copied into
# gpumem: its sources are compiled where they are.
set -euo pipefail

usage() {
    echo "usage: $0 [--build-only | --run PATTERN] UCX_SRC_DIR UCX_INFO" \
         "UCX_LIBDIR PLUGIN [WORK_DIR]" >&2
    exit 2
}

mode=all
pattern="gpumem*"
cuda=
nvml=
nvml_lib=
while [ $# -gt 0 ]; do
    case $1 in
    --build-only) mode=build; shift ;;
    --run)        mode=run; pattern=${2:?}; shift 2 ;;
    --cuda)       cuda=${2:?}; [ "$mode" = run ] || pattern="*cuda*"; shift 2 ;;
    --nvml)       nvml=${2:?}; shift 2 ;;
    --nvml-lib)   nvml_lib=${2:?}; shift 2 ;;
    *)            break ;;
    esac
done
[ $# -ge 4 ] || usage
src=$1
ucx_info=$2
libdir=$3
plugin=
[ "$4" = none ] || plugin=$(readlink -f "$4")
top=$(cd "$(dirname "$0")/.." && pwd)
work=${5:-$PWD/ucx-gtest}
families=$top/test/ucx-gtest/gpumem_families.cc
jobs=${GPUMEM_JOBS:-2}

build() {
    [ -f "$src/test/gtest/uct/uct_test.h" ] ||
        { echo "ucx-gtest: no UCX googletest sources in $src" >&2; exit 1; }
    src=$(cd "$src" && pwd)
    [ -z "$plugin" ] || [ -f "$plugin" ] ||
        { echo "ucx-gtest: no plugin $plugin" >&2; exit 1; }

    [ -x "$ucx_info" ] || { echo "ucx-gtest: no ucx_info $ucx_info" >&2; exit 1; }
    [ -e "$libdir/libucs.so" ] ||
        { echo "ucx-gtest: no UCX libraries in $libdir" >&2; exit 1; }
    includedir=$(cd "$libdir/.." && pwd)/include
    [ -f "$includedir/uct/api/uct.h" ] || includedir=
    mkdir -p "$work"

    # The installed UCX's own configuration is the framework's config.h, so
    # that its structures are those of the libraries it links with
    "$ucx_info" -b > "$work/config.h.new"
    cmp -s "$work/config.h.new" "$work/config.h" ||
        mv "$work/config.h.new" "$work/config.h"
    rm -f "$work/config.h.new"

    version=$("$ucx_info" -v |
              sed -n 's/^# \(Library \)\{0,1\}[Vv]ersion:\{0,1\} *\([0-9][0-9.]*\).*/\2/p' |
              head -1)
    [ -n "$version" ] || { echo "ucx-gtest: $ucx_info says no version" >&2; exit 1; }
    cxx=${CXX:-g++}
    cxxflags="-O1 -g -std=c++11 -DHAVE_CONFIG_H -DTOP_SRCDIR=\"$src\"
              -I$work -I$src/src -I$src/test -I$src/test/gtest
              -Wno-deprecated-declarations ${includedir:+-isystem $includedir}
              ${cuda:+-isystem $cuda/include} ${nvml:+-isystem $nvml/include}"
    # UCX's tests of before CUDA 13 call cuCtxCreate by its old prototype
    if [ -n "$cuda" ] && ! grep -rqs CUctxCreateParams "$src/test/gtest"; then
        cxxflags+=" -include $top/test/ucx-gtest/cuda_compat.h"
    fi
    # The key: the UCX (its revision too: master's version stays), its
    # configuration, its headers and tests, the compiler and this recipe
    # (but for the list of tests left out, which changes no object)
    key=$({ cat "$work/config.h"; "$ucx_info" -v; $cxx --version;
            echo "$cxxflags"; sed '/^excluded=(/,/^)/d' "$0";
            find "$src/src" "$src/test/gtest/common" "$src/test/gtest/uct" \
                 "$src/test/gtest/ucm" \
                 \( -name '*.h' -o -name '*.inl' -o -name '*.cc' \) \
                 -print0 | sort -z | xargs -0 cat;
            [ -z "$cuda" ] || cat "$cuda/include/cuda.h" \
                                  "$cuda/include/cuda_runtime_api.h" \
                                  "$top/test/ucx-gtest/cuda_compat.h";
            [ -z "$nvml" ] || cat "$nvml/include/nvml.h"; } |
          sha256sum | cut -c1-12)
    cache=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}/ucx-gtest/$version-$key
    mkdir -p "$cache"
    trap 'rm -f "$cache"/*.tmp.$$' EXIT

    # UCX's framework: what every UCT family needs
    framework="common/googletest/gtest.cc common/googletest/gtest-death-test.cc
               common/googletest/gtest-filepath.cc common/googletest/gtest-port.cc
               common/googletest/gtest-printers.cc
               common/googletest/gtest-test-part.cc
               common/googletest/gtest-typed-test.cc
               common/googletest/gtest-matchers.cc
               common/main.cc common/test.cc common/test_helpers.cc
               common/mem_buffer.cc common/test_watchdog.cc
               uct/uct_test.cc uct/uct_p2p_test.cc"
    # UCM's hooks of the CUDA allocation calls, and the CUDA transports'
    # own tests, with what they link: the toolkit's runtime and driver (its
    # stub), as UCX's own gtest links them (at run time the emulated ones
    # come first), NVML and that UCX's cuda module. Left out of UCX's CUDA
    # tests: those of kernels (test_kernels*.cu, test_device.cc,
    # test_cuda_ipc_device.cc: the emulated GPU runs no code), UCP's (its
    # own test framework, ucp_test.cc, is not built here: the UCT families
    # and UCX's perftest over UCP, test/emu/cuda/ucx_cuda_run.sh, stand
    # for it), uct_perf's (UCX's perftest library, not installed) and
    # test_mem's allocation methods (of every memory domain in the process
    # at once, not of one transport)
    cuda_libs=()
    if [ -n "$cuda" ]; then
        framework+=" common/cuda_context.cc ucm/cuda_hooks.cc
                     uct/cuda/test_cuda_ctx_cleanup.cc
                     uct/cuda/test_switch_cuda_device.cc
                     uct/cuda/test_cuda_ipc_md.cc uct/cuda/test_cuda_nvml.cc"
        cuda_libs=(-L"$cuda/lib64" -L"$cuda/lib64/stubs" -lcudart -lcuda
                   -L"$libdir/ucx" -Wl,-rpath,"$libdir/ucx" -luct_cuda)
        [ -z "$nvml_lib" ] || cuda_libs+=(-L"$nvml_lib" -lnvidia-ml)
    fi
    # The families of gpumem_families.cc
    family_names=$(sed -n 's/^#.*defined(GPUMEM_UCX_FAMILY_\([A-Z0-9_]*\)).*/\1/p' \
                   "$families")
    fam_key=$(cat "$families" | sha256sum | cut -c1-12)

    compile() {
        local out=$1; shift
        [ -f "$out" ] && return 0
        # shellcheck disable=SC2086
        $cxx $cxxflags "$@" -c -o "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
    }

    objects=()
    pids=()
    run_job() {
        compile "$@" &
        pids+=($!)
        if [ ${#pids[@]} -ge "$jobs" ]; then
            wait "${pids[0]}"
            pids=("${pids[@]:1}")
        fi
    }

    started=$(date +%s)
    for f in $framework; do
        [ -f "$src/test/gtest/$f" ] || continue   # gtest-matchers is 1.14+
        o=$cache/$(echo "$f" | tr / _ | sed 's/\.cc$/.o/')
        objects+=("$o")
        run_job "$o" "$src/test/gtest/$f"
    done
    for fam in $family_names; do
        o=$cache/family_${fam}_$fam_key.o
        objects+=("$o")
        run_job "$o" "-DGPUMEM_UCX_FAMILY_$fam" "$families"
    done
    for pid in ${pids[@]+"${pids[@]}"}; do
        wait "$pid"
    done

    $cxx -o "$work/gtest" "${objects[@]}" -L"$libdir" -Wl,-rpath,"$libdir" \
        -lucp -luct -lucs -lucm ${cuda_libs[@]+"${cuda_libs[@]}"} \
        -lpthread -ldl
    echo "ucx-gtest: UCX $version googletest families built in $(( $(date +%s) - started )) s"
}


# Tests of the families that do not apply to one of gpumem's transports,
# and why (the families themselves are chosen in gpumem_families.cc)
excluded=(
    # The receiver's buffer is host memory, which gpumem_ipc does not
    # register: gpumemipc reaches a peer's device memory only
    "gpumemipc/uct_flush_test.put_*"
    "gpumemipc/test_p2p_rma_madvise.*"
    # Every interface of one process is connected to gpumemcpy's endpoints,
    # whose addresses do not tell one interface of it from another, as
    # cma's and cuda_ipc's are to those of one machine; UCX 1.19 and later
    # simulate a disconnected peer by changing the address only for the
    # transports they name
    "gpumemcpy/test_uct_ep.is_connected/*"
    # The peer's failure is simulated by an invalid remote address and no
    # key, which gpumemipc and gpumem_rc refuse at once (their keys are the
    # peer's registrations) rather than failing later, as cma's
    # process_vm_writev does
    "gpumemipc/test_uct_peer_failure_rma_zcopy.*"
    "gpumem_rc/test_uct_peer_failure_rma_zcopy.*"
    # Invalidation and comparison of host memory registrations, which
    # gpumem_ipc does not make (device memory only); UCX leaves them out
    # for cuda_ipc by name
    "gpumem_ipc/test_md.invalidate/*"
    "gpumem_ipc/test_md.rkey_compare/*"
    # A reset of the primary context, which the emulated CUDA does not
    # have (cuDevicePrimaryCtxReset: it would free every allocation and
    # stream of the context under UCX's feet)
    "test_cuda_ctx_cleanup.*_after_primary_ctx_reset"
    # Memory pools, which the emulated CUDA does not have (their calls are
    # stubs, and CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0): UCX
    # 1.18's tests of pool memory ask no attribute first
    "cuda_ipc/test_cuda_ipc_md.multiple_mds_mempool/*"
    # From UCX 1.18 on, each of the 10000 operations moves the transport's
    # largest size (max_short UINT_MAX and max_zcopy SIZE_MAX, as
    # cuda_copy's): terabytes through the emulated engine, past any time
    # limit. mix1000_last_byte_offset runs the mix on 8 bytes
    "gpumem*/uct_p2p_mix_test.mix_10000/*"
)
if [ "$mode" = run ]; then
    [ -x "$work/gtest" ] || { echo "ucx-gtest: no $work/gtest" >&2; exit 1; }
    version=$("$ucx_info" -v |
              sed -n 's/^# \(Library \)\{0,1\}[Vv]ersion:\{0,1\} *\([0-9][0-9.]*\).*/\2/p' |
              head -1)
else
    build
    [ "$mode" = all ] || exit 0
fi
case $version in
1.18.*|1.19.*|1.20.*)
    # This UCX's cuda_copy flush synchronizes its streams and returns, its
    # completions dispatched at a later progress only: this test counts on
    # its 10 MiB copy being done at the one progress call between the put
    # and the flush, as a GPU's copy is within microseconds; the emulated
    # engine's (a memmove) takes milliseconds (later UCX flushes otherwise,
    # and the test passes there)
    excluded+=("cuda_copy/uct_flush_test.put_zcopy_flush_ep_remote/*")
    ;;
esac
filter="$pattern-$(IFS=:; echo "${excluded[*]}")"

shm=$(mktemp -d)
trap 'rm -rf "$shm"' EXIT
log=$work/gtest.log
status=0
if [ -n "$plugin" ] && [ "${UCX_GPUMEM_DRIVER:-emu}" = emu ]; then
    # The plugin's GPUs are the emulated ones of its build tree's emulator
    # (GPUMEM_EMU_DIR names another), as gpumem-emu gives them, unless the
    # caller named another driver
    emu_dir=${GPUMEM_EMU_DIR:-$(cd "$(dirname "$plugin")/../../../.." &&
                                pwd)/emu/.libs}
    export UCX_GPUMEM_DRIVER=${UCX_GPUMEM_DRIVER:-emu}
    export LD_LIBRARY_PATH=$emu_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
( cd "$work" &&
  UCX_GPUMEM_EMU_SHM_DIR=$shm UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn \
  LD_PRELOAD=$plugin timeout 900 ./gtest --gtest_filter="$filter" ) \
    > "$log" 2>&1 || status=$?

ran=$(grep -c '^\[ RUN      \]' "$log" || true)
ok=$(grep -c '^\[       OK \]' "$log" || true)
skipped=$(grep -c '^\[     SKIP \]' "$log" || true)
failed=$(grep -c '^\[  FAILED  \].*ms)$' "$log" || true)
echo "ucx-gtest: UCX $version: $ran ran, $((ok - skipped)) passed," \
     "$failed failed, $skipped skipped (log: $log)"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$ran" -eq 0 ]; then
    grep '^\[  FAILED  \].*ms)$' "$log" || tail -20 "$log"
    exit 1
fi
