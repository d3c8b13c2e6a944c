#!/usr/bin/env bash
# Builds and checks gpumem against each UCX source tree given, one summary
# line per version.
#
# Usage: contrib/ucx-matrix.sh [--no-bench] [--no-vm] [--no-cuda] UCX_SRC_DIR...
#
# For each tree: UCX is built and installed once into the set-up cache
# (contrib/ucx-build.sh, keyed by its commit), gpumem is built against it
# with -Werror from a copy of this checkout (uncommitted changes included),
# then "make check", UCX's own googletest families ("make
# check-ucx-gtest"), those of gpumem_rc and gpumem_ib in the soft-RoCE VM
# ("make check-vm-ucx-gtest"; --no-vm leaves them out), UCX's own CUDA
# transports built from the same tree on the emulated CUDA ("make
# check-ucx-cuda"; --no-cuda leaves them out: they run without gpumem's
# plugin), the demo, native loading
# through UCX_PLUGIN_PATH (where UCX has it), twice, the device/host
# ratios of bench/transfer_bench.sh and, where UCX built with CUDA,
# bench/osu_bench.sh's goals.
# Last, the plugin of each version is loaded into the next version's UCX,
# which its guard must refuse. Logs are under $GPUMEM_MATRIX_DIR
# (default $GPUMEM_CACHE_DIR/matrix). Exits non-zero if any version fails.
#
# The UCX trees come from the UCX repository, e.g. the tags v1.16.0,
# v1.18.1, v1.20.1, v1.22.0 and master; the installed UCX (Debian's) is the
# embedded default and is not part of the matrix (contrib/check.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD

GPUMEM_CACHE_DIR=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
GPUMEM_MATRIX_DIR=${GPUMEM_MATRIX_DIR:-$GPUMEM_CACHE_DIR/matrix}
JOBS=${GPUMEM_JOBS:-2}
bench=1
vm=1
cuda=1

log() { echo "ucx-matrix: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
    --no-bench) bench=0; shift ;;
    --no-vm)    vm=0; shift ;;
    --no-cuda)  cuda=0; shift ;;
    *)          break ;;
    esac
done
if [ $# -eq 0 ]; then
    echo "usage: $0 [--no-bench] [--no-vm] [--no-cuda] UCX_SRC_DIR..." >&2
    exit 2
fi

# The sources of this checkout, as git sees them (tracked and untracked,
# not ignored), copied so that an in-tree build does not get in the way
copy_sources() {
    local dest=$1
    rm -rf "$dest"
    mkdir -p "$dest"
    if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$top" ls-files -z --cached --others --exclude-standard |
            (cd "$top" && xargs -0 tar -cf - --no-recursion 2>/dev/null) |
            tar -C "$dest" -xf -
    else
        tar -C "$top" -cf - . | tar -C "$dest" -xf -
    fi
}

# The counts line of a "make check-ucx-gtest" log
ucx_gtest_counts() {
    sed -n 's/^ucx-gtest: UCX [^:]*: \(.*\) (log: .*/\1/p' "$1" | tail -n 1
}

# The checks and UCX's googletest counts of a "make check-ucx-cuda" log
ucx_cuda_counts() {
    echo "$(grep -c '^PASS: ' "$1") checks passed, $(grep -c '^FAIL: ' "$1")" \
         "failed; gtest $(ucx_gtest_counts "$1")"
}

# gtest's counts and the scripts' PASS/FAIL lines of a "make check" log
check_counts() {
    local log=$1 passed failed skipped scripts_pass scripts_fail
    passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$log" |
             tail -n 1)
    skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?,.*/\1/p' "$log" |
              tail -n 1)
    failed=$(sed -n 's/^ *\([0-9]*\) FAILED TESTS\?$/\1/p' "$log" | tail -n 1)
    scripts_pass=$(grep -c '^PASS: ' "$log")
    scripts_fail=$(grep -c '^FAIL: ' "$log")
    echo "gtest ${passed:-0} passed, ${failed:-0} failed," \
         "${skipped:-0} skipped; scripts $scripts_pass passed," \
         "$scripts_fail failed"
}

# Whether bench/osu_bench.sh's goals hold for a build, and where not
osu_bench_result() {
    local build=$1 rc
    GPUMEM_BENCH_REPS=2 bash "$build/src-copy/bench/osu_bench.sh" \
        "$build/gpumem" "$build/osu-bench" >"$build/osu-bench.log" 2>&1
    rc=$?
    case $rc in
    0) echo "every goal met" ;;
    1) echo "$(grep -c '^missed:' "$build/osu-bench.log") benchmark(s)" \
            "short of UCX's at some size (osu-bench.log)" ;;
    *) echo "FAILED to run ($(grep -m 1 'osu_bench:' "$build/osu-bench.log"))" ;;
    esac
}

# The device/host ratios of one transfer_bench run over the copy transport
# alone and of the bandwidth with gpumemipc too, and the 8 B floor that
# UCP's copy protocol sets (copy / short, host memory): "lat R (R against
# host by copy, floor R), bw R, with gpumemipc R"
bench_ratios() {
    local build=$1 out ipc
    out=$(bash "$build/src-copy/bench/transfer_bench.sh" "$build/gpumem" \
              posix,gpumemcpy 2>&1) || { echo "bench failed"; return 1; }
    ipc=$(bash "$build/src-copy/bench/transfer_bench.sh" "$build/gpumem" \
              posix,gpumemcpy,gpumemipc 2>&1) || { echo "bench failed"; return 1; }
    { echo "$out"; echo "$ipc" | sed -n 's/^tag_bw/ipc_bw/p'; } |
        awk '/^tag_lat 8 B +[0-9]/ { lat = $NF }
             /^tag_lat 8 B \(host/ { cp = $NF }
             /^tag_lat 8 B \(copy/ { fl = $NF }
             /^tag_bw/ { bw = $NF }
             /^ipc_bw/ { ipc = $NF }
             END { printf "tag_lat 8 B %s (%s against host by copy, floor " \
                          "%s), tag_bw 4 MiB %s, with gpumemipc %s", \
                          lat, cp, fl, bw, ipc }'
}

# ucx_env PREFIX: this shell runs the UCX of PREFIX from now on
ucx_env() {
    export PATH=$1/bin:$PATH
    export LD_LIBRARY_PATH=$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# ucx_version PREFIX: the version its ucx_info prints, in either format
ucx_version() {
    "$1/bin/ucx_info" -v |
        sed -n -e 's/^# Library version: //p' -e 's/^# Version //p' |
        head -n 1
}

# run_version SRC PREFIX_FILE: builds and checks one version (in a
# subshell: it changes the environment); prints its summary line, and the
# UCX prefix into PREFIX_FILE once UCX is built
run_version() {
    local src=$1 prefix_file=$2 prefix version build gpumem result=""
    local loads r1 r2 cuda_status

    if ! prefix=$("$top/contrib/ucx-build.sh" "$src" | tail -n 1) ||
       [ ! -d "$prefix" ]; then
        echo "UCX from $src: UCX build FAILED"
        return
    fi
    echo "$prefix" >"$prefix_file"
    version=$(ucx_version "$prefix")
    build=$GPUMEM_MATRIX_DIR/$(basename "$prefix")
    gpumem=$build/gpumem
    rm -rf "$build"
    mkdir -p "$gpumem"
    log "UCX $version: gpumem in $build"

    copy_sources "$build/src-copy"

    if ! (cd "$build/src-copy" && ./autogen.sh) >"$build/autogen.log" 2>&1 ||
       ! (cd "$gpumem" && "$build/src-copy/configure" --with-ucx="$prefix" \
              --with-ucx-src="$src") >"$build/configure.log" 2>&1; then
        echo "UCX $version: configure FAILED (see $build/configure.log)"
        return
    fi
    if ! make -C "$gpumem" -j"$JOBS" >"$build/make.log" 2>&1; then
        echo "UCX $version: build with -Werror FAILED (see $build/make.log)"
        return
    fi
    result="build ok"

    ucx_env "$prefix"

    if make -C "$gpumem" -j"$JOBS" check \
            >"$build/check.log" 2>&1; then
        result+="; check ok ($(check_counts "$build/check.log"))"
    else
        result+="; check FAILED ($(check_counts "$build/check.log"))"
    fi

    # UCX's own googletest families, from the same source tree
    if make -C "$gpumem" check-ucx-gtest >"$build/ucx-gtest.log" 2>&1; then
        result+="; UCX gtest ok ($(ucx_gtest_counts "$build/ucx-gtest.log"))"
    else
        result+="; UCX gtest FAILED ($(ucx_gtest_counts "$build/ucx-gtest.log"))"
    fi

    # gpumem_rc's and gpumem_ib's families in the soft-RoCE VM, this UCX
    # shared into it (--no-vm leaves them out)
    if [ $vm = 1 ]; then
        if make -C "$gpumem" check-vm-ucx-gtest \
                >"$build/vm-ucx-gtest.log" 2>&1; then
            result+="; UCX gtest in the VM ok ($(ucx_gtest_counts \
                                                 "$build/vm-ucx-gtest.log"))"
        else
            result+="; UCX gtest in the VM FAILED ($(ucx_gtest_counts \
                                                     "$build/vm-ucx-gtest.log"))"
        fi
    fi

    # UCX's own CUDA transports on the emulated CUDA: this UCX built with
    # CUDA (contrib/ucx-cuda.sh, cached), its perftests and googletest
    # (a skip, for want of the toolkit's runtime or nvml.h, says so)
    cuda_status=0
    if [ $cuda = 0 ]; then
        result+="; UCX cuda not run (--no-cuda)"
    elif ! make -C "$gpumem" check-ucx-cuda >"$build/ucx-cuda.log" 2>&1; then
        cuda_status=1
    fi
    if [ $cuda = 0 ]; then
        :
    elif [ "$cuda_status" = 0 ] && grep -q "^SKIP: " "$build/ucx-cuda.log"; then
        result+="; UCX cuda skipped ($(sed -n 's/^SKIP: //p' \
                                          "$build/ucx-cuda.log" | head -n 1))"
    elif [ "$cuda_status" = 0 ]; then
        result+="; UCX cuda ok ($(ucx_cuda_counts "$build/ucx-cuda.log"))"
    else
        result+="; UCX cuda FAILED ($(ucx_cuda_counts "$build/ucx-cuda.log"))"
    fi

    # On the build's emulated GPUs, through gpumem-emu, with the emu driver
    # (the demo's processes are a fork's, where a CUDA driver does not run)
    local emu=(env GPUMEM_EMU_DIR="$gpumem/emu/.libs" "$gpumem/emu/gpumem-emu"
               --driver emu)
    if (cd "$gpumem" && shm=$(mktemp -d) &&
        UCX_TLS=posix,gpumemcpy,gpumemipc \
            timeout 180 "${emu[@]}" --dir "$shm/machine" -- \
            ./examples/gpumem_demo 4m 5; rc=$?;
        rm -rf "$shm"; exit $rc) >"$build/demo.log" 2>&1 &&
       grep -q "passed" "$build/demo.log"; then
        result+="; demo ok"
    else
        result+="; demo FAILED"
    fi

    loads=$(sed -n 's/^ucx_loads_plugins=\([a-z]*\).*/\1/p' \
                "$gpumem/src/tools/gpumem-preload")
    if [ "$loads" = yes ]; then
        if (shm=$(mktemp -d); unset LD_PRELOAD;
            UCX_PLUGIN_PATH="$gpumem/src/uct/gpumem/.libs" \
                "${emu[@]}" --dir "$shm/machine" -- ucx_info -d;
            rm -rf "$shm") >"$build/native.log" 2>&1 &&
           grep -q "^# Memory domain: gpumem$" "$build/native.log" &&
           grep -q "Transport: gpumemipc" "$build/native.log"; then
            result+="; native load ok"
        else
            result+="; native load FAILED"
        fi
    else
        result+="; loaded by LD_PRELOAD (no native loading in this UCX)"
    fi

    if [ $bench = 1 ]; then
        r1=$(bench_ratios "$build")
        r2=$(bench_ratios "$build")
        result+="; device/host: $r1 | $r2"
    fi

    # OSU through gpumem and through this UCX's own CUDA transports, where
    # the UCX with CUDA built
    if [ $bench = 1 ] && [ $cuda = 1 ] && [ "$cuda_status" = 0 ] &&
       ! grep -q "^SKIP: " "$build/ucx-cuda.log"; then
        result+="; osu_bench: $(osu_bench_result "$build")"
    fi

    echo "UCX $version ($(cut -d' ' -f2 "$prefix/.source" | cut -c1-12)): $result"
}

# guard_check OLD_BUILD OLD_VERSION PREFIX VERSION: the plugin built against
# one UCX, preloaded into another, registers nothing and says why; a
# program of gpumem.h's calls linked against it is refused too
guard_check() {
    local old=$1 old_version=$2 prefix=$3 version=$4 out api
    out=$(shm=$(mktemp -d); UCX_GPUMEM_EMU_SHM_DIR=$shm \
          LD_LIBRARY_PATH=$prefix/lib \
          LD_PRELOAD=$old/src/uct/gpumem/.libs/libuct_gpumem.so \
          "$prefix/bin/ucx_info" -d 2>&1; rm -rf "$shm")
    # The program itself, not libtool's wrapper, which puts the UCX it was
    # built against first on LD_LIBRARY_PATH
    api=$(shm=$(mktemp -d); UCX_GPUMEM_EMU_SHM_DIR=$shm \
          LD_LIBRARY_PATH=$prefix/lib:$old/src/uct/gpumem/.libs \
          "$old/test/abi/.libs/api_refused" 2>&1 &&
          echo "api: refused"; rm -rf "$shm")
    if echo "$out" | grep -q "not registering: built against UCX $old_version" &&
       ! echo "$out" | grep -q "^# Memory domain: gpumem$"; then
        if ! echo "$api" | grep -q "^api: refused$"; then
            echo "guard: the $old_version plugin in UCX $version is refused," \
                 "but gpumem.h's calls are NOT: $(echo "$api" | tail -n 2 |
                                                   tr '\n' ' ')"
            return 1
        fi
        echo "guard: the $old_version plugin in UCX $version is refused," \
             "saying why, and so are gpumem.h's calls"
        return 0
    fi
    echo "guard: the $old_version plugin in UCX $version is NOT refused"
    return 1
}

summary=()
failed=0
prev_build="" prev_version=""
prefix_file=$(mktemp)
trap 'rm -f "$prefix_file"' EXIT
for src in "$@"; do
    : >"$prefix_file"
    line=$(run_version "$(cd "$src" && pwd)" "$prefix_file")
    summary+=("$line")
    echo "$line"
    case $line in
        *FAILED*) failed=1 ;;
    esac
    prefix=$(cat "$prefix_file")
    [ -n "$prefix" ] && [ -d "$prefix" ] || continue
    build=$GPUMEM_MATRIX_DIR/$(basename "$prefix")/gpumem
    version=$(ucx_version "$prefix")
    # The guard refuses another release series only
    if [ -n "$prev_build" ] && [ -f "$build/Makefile" ] &&
       [ "${prev_version%.*}" != "${version%.*}" ]; then
        line=$(guard_check "$prev_build" "$prev_version" "$prefix" "$version")
        [ $? = 0 ] || failed=1
        summary+=("$line")
        echo "$line"
    fi
    if [ -f "$build/src/uct/gpumem/.libs/libuct_gpumem.so" ]; then
        prev_build=$build prev_version=$version
    fi
done

echo
echo "== gpumem UCX matrix =="
printf '%s\n' "${summary[@]}"
exit $failed
