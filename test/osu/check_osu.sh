#!/usr/bin/env bash
# The OSU micro-benchmarks on device buffers, through a CUDA-aware Open MPI
# over UCX with gpumem, on emulated GPUs (gpumem-emu, the plugin's cuda
# driver on the emulated CUDA): point-to-point (D D, D H, H D), collectives
# and one-sided with device windows; 2 ranks on 2 GPUs, 4 on 4, 4 sharing
# 2; UCX's default transports, gpumemcpy alone beside shared memory, and
# GPUs that do not reach each other (staged through host memory). Where
# UCX or Open MPI 4.1 cannot do a run on any GPU, it is skipped saying
# why. gpumemipc alone, and the emu driver under a CUDA program, must be
# refused with a line saying why, never end by a signal.
#
# Every benchmark that offers validation (-c) runs with it, and every size
# it reports must say "Pass"; the others must report every size. Each run
# must exit 0 within its time limit.
#
# Usage: check_osu.sh BUILDDIR SRCDIR CUDA_DIR
#   OSU_TARBALL: the OSU 7.4 archive (default: ../shared/osu/ beside the
#   source tree, else the copy contrib/setup.sh made); GPUMEM_CACHE_DIR:
#   the set-up cache, where Open MPI and OSU are built once; OSU_FILTER: an
#   extended regular expression, runs whose names do not match are left
#   out; OSU_REAL_GPU=1: on the machine's own GPUs (test/device/run), the
#   runs of emulated machines left out.
#
# See file LICENSE for terms.
set -u

build=$1
srcdir=$2
cuda=$3
. "$srcdir/test/tools/test_report.sh"

filter=${OSU_FILTER:-.}

# $ompi, $osu and $bin, built once into the set-up cache, or a skip
. "$srcdir/test/osu/osu_env.sh"
osu_env_setup "$build" "$srcdir" "$cuda"
case $? in
1) exit 0 ;;
2) exit 1 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-osu.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export GPUMEM_EMU_DIR=$build/emu/.libs
export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export UCX_WARN_UNUSED_ENV_VARS=n
unset UCX_GPUMEM_DRIVER UCX_TLS GPUMEM_EMU_MACHINE

# The sizes a benchmark must report, from MIN to MAX by powers of two
sizes() {
    local size=$1
    while [ "$size" -le "$2" ]; do
        echo "$size"
        size=$((size * 2))
    done
}

# osu NAME NP EMU_OPTIONS TLS BENCH MIN MAX ARG...: one run, judged (and,
# where $expect_line is set, its output must have that line)
osu() {
    local name=$1 np=$2 machine=$3 tls=$4 bench=$5 min=$6 max=$7
    local out=$work/run.out validate=no want got bad rc
    shift 7
    echo "$name" | grep -Eq -- "$filter" || return 0

    # shellcheck disable=SC2046
    if $(gpus "") "$bin/$bench" --help 2>/dev/null |
            grep -q -- '--validation'; then
        validate=yes
        set -- -c "$@"
    fi
    # shellcheck disable=SC2086
    timeout -k 10 180 $(gpus "$machine") \
        "$ompi/bin/mpirun" --allow-run-as-root --oversubscribe \
            --bind-to none -np "$np" \
            --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
            --mca osc ucx --mca btl self,vader \
            ${tls:+-x UCX_TLS=$tls} \
            "$build/src/tools/gpumem-preload" \
            "$bin/$bench" -m "$min:$max" "$@" >"$out" 2>&1
    rc=$?

    want=$(sizes "$min" "$max" | paste -s -d' ')
    got=$(awk '/^[0-9]+[ \t]/ { print $1 }' "$out" | paste -s -d' ')
    bad=$(awk -v v=$validate '/^[0-9]+[ \t]/ &&
              ((v == "yes" && tolower($NF) !~ /^pass(ed)?$/) ||
               (v == "no" && $2 !~ /^[0-9.]+$/)) { print $1 }' "$out" |
          paste -s -d' ')
    if [ $rc -ne 0 ]; then
        fail "$name" "exit status $rc"
    elif [ "$got" != "$want" ]; then
        fail "$name" "sizes reported: '$got', wanted '$want'"
    elif [ -n "$bad" ]; then
        fail "$name" "not validated at sizes $bad"
    elif [ -n "${expect_line:-}" ] && ! grep -q -- "$expect_line" "$out"; then
        fail "$name" "no line saying '$expect_line'"
    else
        pass "$name ($(echo "$want" | wc -w) sizes$([ $validate = yes ] &&
              echo ", each validated"))"
        return 0
    fi
    sed 's/^/    /' "$out" | tail -n 25
}

# The command that gives a run its GPUs: gpumem-emu with EMU_OPTIONS, or,
# with OSU_REAL_GPU set (test/device/run on a GPU machine), the machine's
# own through the cuda driver
gpus() {
    if [ -n "${OSU_REAL_GPU:-}" ]; then
        echo env UCX_GPUMEM_DRIVER=cuda
    else
        echo "$build/emu/gpumem-emu $1 --"
    fi
}

# emulated_only WHAT: whether a run of emulated machines is to be run; on
# a real GPU, a SKIP line saying so
emulated_only() {
    [ -n "${OSU_REAL_GPU:-}" ] || return 0
    skip "$1: emulated machines only"
    return 1
}

# osu_refused NAME EMU_OPTIONS TLS PATTERN BENCH ARG...: a run that must
# fail, saying PATTERN, and not by a signal
osu_refused() {
    local name=$1 machine=$2 tls=$3 pattern=$4 bench=$5 out=$work/run.out rc
    shift 5
    echo "$name" | grep -Eq -- "$filter" || return 0
    # shellcheck disable=SC2086
    timeout -k 10 180 $(gpus "$machine") \
        "$ompi/bin/mpirun" --allow-run-as-root --oversubscribe \
            --bind-to none -np 2 \
            --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
            --mca btl self,vader ${tls:+-x UCX_TLS=$tls} \
            "$build/src/tools/gpumem-preload" "$bin/$bench" "$@" \
            >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 124 ] ||
       grep -Eq "Caught signal|Segmentation fault|signal [0-9]" "$out"; then
        fail "$name is refused" "exit status $rc: $(grep -m 1 -E \
                                  'signal|Segm' "$out")"
    elif ! grep -q -- "$pattern" "$out"; then
        fail "$name is refused" "no line saying '$pattern'"
        sed 's/^/    /' "$out" | tail -n 10
    else
        pass "$name is refused, saying '$pattern'"
    fi
}

PT2PT="osu_latency osu_bw osu_bibw osu_multi_lat osu_mbw_mr"
# Reductions validate floats: OSU 7.4's check of MPI_CHAR sums fails at 16
# bytes whatever the transport and buffers. A non-blocking reduction of
# device buffers is not Open MPI 4.1's to do (below); osu_ialltoall moves
# device buffers through a non-blocking collective instead
COLL_REDUCE="osu_allreduce osu_reduce osu_reduce_scatter"
COLL_MOVE="osu_bcast osu_allgather osu_alltoall osu_gather osu_scatter"
COLL_MOVE+=" osu_ialltoall"
ONE_SIDED="osu_put_latency osu_get_bw osu_put_bw osu_acc_latency"
PT2PT_MAX=$((1 << 20))
COLL_MAX=$((1 << 18))

# pt2pt NAME NP EMU_OPTIONS TLS BUFFERS...
pt2pt() {
    local name=$1 np=$2 machine=$3 tls=$4 bench buffers
    shift 4
    for bench in $PT2PT; do
        for buffers in "$@"; do
            # shellcheck disable=SC2086
            osu "$name: $bench -d cuda $buffers" "$np" "$machine" "$tls" \
                "pt2pt/$bench" 1 "$PT2PT_MAX" -i 10 -x 2 -d cuda $buffers
        done
    done
}

# collectives NAME NP EMU_OPTIONS TLS
collectives() {
    local name=$1 np=$2 machine=$3 tls=$4 bench
    for bench in $COLL_REDUCE; do
        osu "$name: $bench -d cuda -T mpi_float" "$np" "$machine" "$tls" \
            "collective/$bench" 4 "$COLL_MAX" -i 5 -x 2 -d cuda -T mpi_float
    done
    for bench in $COLL_MOVE; do
        osu "$name: $bench -d cuda" "$np" "$machine" "$tls" \
            "collective/$bench" 1 "$COLL_MAX" -i 5 -x 2 -d cuda
    done
}

# one_sided NAME EMU_OPTIONS TLS: two ranks, windows of device memory
# (MPI_Win_create of cudaMalloc'd memory: MPI_Win_allocate, OSU's default,
# gives host memory). An accumulate's origin is host memory: Open MPI 4.1's
# osc ucx computes it with the CPU, which cannot read a device origin
one_sided() {
    local name=$1 machine=$2 tls=$3 bench buffers
    for bench in $ONE_SIDED; do
        buffers="D D"
        [ "$bench" != osu_acc_latency ] || buffers="H D"
        # shellcheck disable=SC2086
        osu "$name: $bench -w create -d cuda $buffers" 2 "$machine" "$tls" \
            "one-sided/$bench" 1 "$PT2PT_MAX" -i 10 -x 2 -w create -d cuda \
            $buffers
    done
}

skip "osu_iallreduce -d cuda: Open MPI 4.1 reduces a non-blocking\
 collective (coll libnbc) with the CPU, which cannot read device memory;\
 its coll cuda stages blocking reductions only (a real GPU faults as the\
 emulated one does)"

# 2 ranks on 2 GPUs, UCX's default transports: everything
pt2pt "2 ranks, 2 GPUs" 2 "--gpus 2" "" "D D" "D H" "H D"
collectives "2 ranks, 2 GPUs" 2 "--gpus 2" ""
one_sided "2 ranks, 2 GPUs" "--gpus 2" ""

# 4 ranks on 4 GPUs, and 4 sharing 2 (on a real GPU machine, 4 ranks on
# its GPUs)
machines=("--gpus 4" "--gpus 2")
[ -z "${OSU_REAL_GPU:-}" ] || machines=("--gpus 2")
for machine in "${machines[@]}"; do
    name="4 ranks, ${machine#--gpus } GPUs"
    collectives "$name" 4 "$machine" ""
    osu "$name: osu_multi_lat -d cuda D D" 4 "$machine" "" \
        pt2pt/osu_multi_lat 1 "$PT2PT_MAX" -i 10 -x 2 -d cuda D D
    osu "$name: osu_mbw_mr -d cuda D D" 4 "$machine" "" \
        pt2pt/osu_mbw_mr 1 "$PT2PT_MAX" -i 10 -x 2 -d cuda D D
done

# gpumemcpy alone beside shared memory: device buffers staged through host
# memory. UCP 1.13 emulates a put to a device window of a peer that no
# transport reaches with the CPU, which faults (UCX's cuda_copy alone does
# the same): no one-sided run here
tls=sm,self,gpumemcpy
for bench in osu_latency osu_bw; do
    osu "UCX_TLS=$tls: $bench -d cuda D D" 2 "--gpus 2" "$tls" \
        "pt2pt/$bench" 1 "$PT2PT_MAX" -i 10 -x 2 -d cuda D D
done
osu "UCX_TLS=$tls: osu_allreduce -d cuda -T mpi_float" 2 "--gpus 2" "$tls" \
    collective/osu_allreduce 4 "$COLL_MAX" -i 5 -x 2 -d cuda -T mpi_float
skip "UCX_TLS=$tls: one-sided to device windows: UCP 1.13 emulates a put\
 that no transport reaches with the CPU, which faults on device memory, as\
 with UCX's cuda_copy alone"

# gpumemipc alone beside shared memory: UCP has no transport to copy across
# memory types, and refuses device buffers saying so (as with UCX's
# cuda_ipc without cuda_copy), never a signal
osu_refused "UCX_TLS=sm,self,gpumemipc: osu_latency -d cuda D D" "--gpus 2" \
    sm,self,gpumemipc "no copy across memory types transport" \
    pt2pt/osu_latency -d cuda D D

# The emu driver under a CUDA program: the buffers of the emulated
# cudaMalloc are no memory of the driver's GPUs, which UCP hands it by their
# type; each copy is an error naming the addresses and the driver, and the
# validation fails, never a signal
emulated_only "the emu driver under a CUDA program" &&
osu_refused "UCX_GPUMEM_DRIVER=emu: osu_latency -c -d cuda D D" \
    "--gpus 2 --driver emu" "" \
    "neither is device memory of the emu driver's GPUs" \
    pt2pt/osu_latency -c -d cuda -m 1:64 -i 2 -x 1 D D

# GPUs that do not reach each other (the IOMMU translates the peer requests
# of one; gpumem_ipc says so at diag level): the data is staged through host
# memory, nothing is lost
if emulated_only "GPUs that do not reach each other"; then
    unreachable="--topology $srcdir/test/topologies/mpibind-pascal-2xBDW-2xP100-1xIB.xml"
    unreachable+=" --facts $srcdir/test/topologies/mpibind-pascal-iommu.facts"
    name="GPUs that do not reach each other"
    export UCX_LOG_LEVEL=diag
    expect_line="does not reach the memory of GPU"
    for bench in osu_latency osu_bw osu_bibw; do
        osu "$name: $bench -d cuda D D" 2 "$unreachable" "" \
            "pt2pt/$bench" 1 "$PT2PT_MAX" -i 10 -x 2 -d cuda D D
    done
    osu "$name: osu_put_latency -w create -d cuda D D" 2 "$unreachable" "" \
        one-sided/osu_put_latency 1 "$PT2PT_MAX" -i 10 -x 2 -w create \
        -d cuda D D
    # Open MPI's coll cuda reduces in host memory: no device transfer
    unset UCX_LOG_LEVEL expect_line
    osu "$name: osu_allreduce -d cuda -T mpi_float" 2 "$unreachable" "" \
        collective/osu_allreduce 4 "$COLL_MAX" -i 5 -x 2 -d cuda -T mpi_float
fi

exit $failed
