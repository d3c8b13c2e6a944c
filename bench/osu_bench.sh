#!/usr/bin/env bash
# The OSU micro-benchmarks 7.4 on device buffers (-d cuda D D) through a
# CUDA-aware Open MPI over UCX: gpumem's transports side by side with UCX's
# own CUDA transports, on the same emulated GPUs, in one UCX, in one run.
# Both stacks run in UCX 1.13 built with CUDA (contrib/ucx-cuda.sh,
# configured as the UCX gpumem is built against), first on the ranks'
# LD_LIBRARY_PATH, over the build's emulated libcuda, libcudart and NVML
# (gpumem-emu --gpus 2), with gpumem's plugin preloaded (gpumem-preload);
# they differ only by UCX_TLS:
#   gpumem  sm,gpumemcpy,gpumemipc
#   ucx     sm,cuda_copy,cuda_ipc
# and a third line, host buffers (-d cuda H H; no -d for osu_allreduce)
# with gpumem's transports. A first tiny run of each stack, with UCX's info
# lines, must show the ranks loading that UCX's libucp and their endpoints
# using the stack's transports; a run where UCX went without the plugin or
# a transport gives no figures. Two ranks, bound to a core each:
#   pt2pt/osu_latency, pt2pt/osu_bw, pt2pt/osu_bibw   1 B to 4 MiB
#   collective/osu_allreduce -T mpi_float             4 B to 4 MiB
# Each figure is the best of GPUMEM_BENCH_REPS runs (default 3): the least
# latency, the most bandwidth. The runs of the two stacks alternate
# (gpumem, ucx, host, gpumem, ucx, host, ...), so that what else the
# machine does weighs on both alike. It prints a table per benchmark (size,
# gpumem, ucx, host, gpumem/ucx), writes OUTDIR/osu_<benchmark>.dat and
# draws OUTDIR/osu_bench.png with gnuplot. What the emulated GPUs measure
# is the transports' own cost over the same engine, not a real GPU's speed.
#
# Exit status 0 where every goal holds: gpumem/ucx <= 1 at every size of
# osu_latency and osu_allreduce, >= 1 at every size of osu_bw and osu_bibw
# (a size missing from a stack's runs is a miss); 1 with the sizes that
# miss; 2 where it cannot run (no CUDA, no Open MPI, no OSU, bad settings).
#
#   bench/osu_bench.sh [BUILDDIR] [OUTDIR]
#   GPUMEM_BENCH_REPS  runs per stack (default 3)
#   OSU_BENCH_MAX      the largest size (default 4194304)
#   OSU_BENCH_ITERS    OSU's -i (default: OSU's own, by size)
#   OSU_BENCH_WARMUP   OSU's -x (default: OSU's own, by size)
#   OSU_BENCH_LIST     the benchmarks (default: osu_latency osu_bw osu_bibw
#                      osu_allreduce)
#   OSU_TARBALL, GPUMEM_CACHE_DIR: as for test/osu/check_osu.sh
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
out=$(mkdir -p "${2:-$build/bench}" && cd "${2:-$build/bench}" && pwd)
reps=${GPUMEM_BENCH_REPS:-3}
max=${OSU_BENCH_MAX:-4194304}
iters=${OSU_BENCH_ITERS:-}
warmup=${OSU_BENCH_WARMUP:-}
read -r -a names <<<"${OSU_BENCH_LIST-osu_latency osu_bw osu_bibw osu_allreduce}"
srcdir=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "osu_bench: $*" >&2; exit 2; }
integer() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
integer "$reps" || die "GPUMEM_BENCH_REPS=$reps: not a positive integer"
integer "$max" || die "OSU_BENCH_MAX=$max: not a positive integer"
[ -z "$iters" ] || integer "$iters" ||
    die "OSU_BENCH_ITERS=$iters: not a positive integer"
[ -z "$warmup" ] || [[ $warmup =~ ^[0-9]+$ ]] ||
    die "OSU_BENCH_WARMUP=$warmup: not an integer"
[ ${#names[@]} -gt 0 ] || die "OSU_BENCH_LIST is empty"
for b in "${names[@]}"; do
    case $b in
    osu_latency|osu_bw|osu_bibw) ;;
    osu_allreduce) [ "$max" -ge 4 ] || die "osu_allreduce: OSU_BENCH_MAX < 4" ;;
    *) die "OSU_BENCH_LIST: $b is not osu_latency, osu_bw, osu_bibw or" \
           "osu_allreduce" ;;
    esac
done

# The UCX with CUDA of the build's configuration (cached in the set-up cache)
. "$srcdir/bench/ucx_cuda.sh"
prefix=$(ucx_cuda_prefix osu_bench "$build" "$srcdir") || exit 2
cuda_dir=$(sed -n 's/^CUDA_DIR = //p' "$build/Makefile")

# The CUDA-aware Open MPI and OSU, built once into the set-up cache: sets
# $ompi and $bin
ompi='' bin=''
# shellcheck source=SCRIPTDIR/../test/osu/osu_env.sh
. "$srcdir/test/osu/osu_env.sh"
setup=0
osu_env_setup "$build" "$srcdir" "$cuda_dir" || setup=$?
[ "$setup" -eq 0 ] || die "no CUDA-aware Open MPI and OSU (see above)"

for f in "$build/emu/gpumem-emu" "$build/src/tools/gpumem-preload"; do
    [ -x "$f" ] || die "no $f"
done
export GPUMEM_EMU_DIR=$build/emu/.libs
export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export UCX_WARN_UNUSED_ENV_VARS=n
unset UCX_GPUMEM_DRIVER UCX_TLS GPUMEM_EMU_MACHINE
[ -r "$GPUMEM_PLUGIN" ] || die "no plugin at $GPUMEM_PLUGIN"

# shellcheck source=SCRIPTDIR/figures.sh
. "$srcdir/bench/figures.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-osu-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

gpumem_tls=sm,gpumemcpy,gpumemipc
ucx_tls=sm,cuda_copy,cuda_ipc
osu_opts=()
[ -z "$iters" ] || osu_opts+=(-i "$iters")
[ -z "$warmup" ] || osu_opts+=(-x "$warmup")

# osu TLS BENCH ARG...: one run of 2 ranks on 2 emulated GPUs, the UCX with
# CUDA first on the ranks' LD_LIBRARY_PATH (gpumem-emu puts its own
# libraries first, none of them UCX's); prints "SIZE FIGURE" lines, none
# where the plugin or a transport of TLS was missing (UCX then runs on the
# others, which is not the comparison). The run's output stays in
# $work/run.log; $osu_env: more "-x VAR=VALUE" for the ranks
osu_env=()
osu() {
    local tls=$1 bench=$2 log=$work/run.log rc=0
    shift 2
    # shellcheck disable=SC2016 # the inner shell expands them
    timeout -k 10 300 "$build/emu/gpumem-emu" --gpus 2 -- \
        /bin/sh -c 'LD_LIBRARY_PATH=$0:$LD_LIBRARY_PATH
                    export LD_LIBRARY_PATH
                    exec "$@"' "$prefix/lib" \
        "$ompi/bin/mpirun" --allow-run-as-root --oversubscribe \
            --bind-to core -np 2 \
            --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
            --mca osc ucx --mca btl self,vader \
            -x LD_LIBRARY_PATH -x "UCX_TLS=$tls" ${osu_env[@]+"${osu_env[@]}"} \
            "$build/src/tools/gpumem-preload" \
            "$bin/$bench" "$@" >"$log" 2>&1 || rc=$?
    if grep -Eq "are not available|cannot be preloaded|^gpumem-preload:" \
            "$log"; then
        echo "osu_bench: UCX_TLS=$tls $bench $*: not these transports:" >&2
        grep -E "are not available|cannot be preloaded|^gpumem-preload:" \
            "$log" | sort -u | sed 's/^/    /' >&2
        return 0
    fi
    if [ "$rc" -ne 0 ]; then
        echo "osu_bench: UCX_TLS=$tls $bench $*: exit status $rc" >&2
        tail -n 15 "$log" | sed 's/^/    /' >&2
    fi
    awk '/^[0-9]+[ \t]/ { print $1, $2 }' "$log"
}

# Once: the ranks load UCX from the UCX with CUDA, and its endpoints to the
# peer move device memory with the transports of each stack (UCX's info
# lines "ep_cfg[N]: tag(... TL/MD ...)")
osu_env=(-x UCX_LOG_LEVEL=info)
for stack in "$gpumem_tls gpumemcpy gpumemipc" "$ucx_tls cuda_copy cuda_ipc"
do
    read -r tls tl1 tl2 <<<"$stack"
    osu "$tls" pt2pt/osu_latency -m 1:1 -i 1 -x 0 -d cuda D D >/dev/null
    log=$work/run.log
    grep -q "loaded from $prefix/lib/libucp.so.0" "$log" ||
        die "UCX_TLS=$tls: the ranks do not load $prefix/lib/libucp.so.0:" \
            "$(grep -m 1 "loaded from" "$log" || tail -n 5 "$log")"
    for tl in "$tl1" "$tl2"; do
        grep -Eq "ep_cfg\[[0-9]+\]: tag\((.* )?$tl/" "$log" ||
            die "UCX_TLS=$tls: no endpoint with $tl:" \
                "$(grep "ep_cfg" "$log" | sort -u || tail -n 5 "$log")"
    done
done
osu_env=()

# column FILE SIZE: the figures of SIZE in the runs' FILE.*
column() {
    awk -v s="$2" '$1 == s { print $2 }' "$1".*
}

# rel A B: A / B, two decimals; nan where either is missing
rel() {
    if [ "$1" = nan ] || [ "$2" = nan ]; then
        echo nan
    else
        ratio "$1" "$2"
    fi
}

# meets A B le|ge: whether A <= B (or >= B), neither missing
meets() {
    [ "$1" != nan ] && [ "$2" != nan ] &&
        awk -v a="$1" -v b="$2" -v how="$3" \
            'BEGIN { exit !(how == "le" ? a <= b : a >= b) }'
}

status=0
misses=()
for name in "${names[@]}"; do
    case $name in
    osu_allreduce)
        bench=collective/$name min=4 how=min goal=le unit="us"
        dev=(-d cuda -T mpi_float) host=(-T mpi_float) ;;
    osu_latency)
        bench=pt2pt/$name min=1 how=min goal=le unit="us"
        dev=(-d cuda D D) host=(-d cuda H H) ;;
    *)
        bench=pt2pt/$name min=1 how=max goal=ge unit="MB/s"
        dev=(-d cuda D D) host=(-d cuda H H) ;;
    esac
    sizes=()
    for ((s = min; s <= max; s *= 2)); do sizes+=("$s"); done
    args=(-m "$min:$max" ${osu_opts[@]+"${osu_opts[@]}"})

    echo "$name: $reps runs each of gpumem, ucx and host, alternating" >&2
    for ((i = 0; i < reps; i++)); do
        osu "$gpumem_tls" "$bench" "${args[@]}" "${dev[@]}" \
            >"$work/$name.gpumem.$i"
        osu "$ucx_tls" "$bench" "${args[@]}" "${dev[@]}" \
            >"$work/$name.ucx.$i"
        osu "$gpumem_tls" "$bench" "${args[@]}" "${host[@]}" \
            >"$work/$name.host.$i"
    done

    dat=$out/$name.dat
    echo "# $name ($unit, best of $reps): size gpumem ucx host gpumem/ucx" \
        >"$dat"
    printf "\n%s (%s, best of %d; goal gpumem/ucx %s 1)\n" "$name" "$unit" \
        "$reps" "$([ $goal = le ] && echo "<=" || echo ">=")"
    printf "%10s %12s %12s %12s %7s\n" size gpumem ucx host ratio
    missed=()
    for s in "${sizes[@]}"; do
        # shellcheck disable=SC2046
        g=$(best "$how" $(column "$work/$name.gpumem" "$s"))
        # shellcheck disable=SC2046
        u=$(best "$how" $(column "$work/$name.ucx" "$s"))
        # shellcheck disable=SC2046
        h=$(best "$how" $(column "$work/$name.host" "$s"))
        r=$(rel "$g" "$u")
        mark=
        if ! meets "$g" "$u" "$goal"; then
            missed+=("$s")
            mark="  miss"
        fi
        echo "$s $g $u $h $r" >>"$dat"
        printf "%10s %12s %12s %12s %7s%s\n" "$s" "$g" "$u" "$h" "$r" "$mark"
    done
    if [ ${#missed[@]} -gt 0 ]; then
        status=1
        misses+=("$name: gpumem/ucx $([ $goal = le ] && echo "> 1" ||
                 echo "< 1") (or missing) at sizes ${missed[*]}")
    fi
done

if command -v gnuplot >/dev/null; then
    case ${#names[@]} in
    1) layout="1,1" size="900,560" ;;
    2) layout="1,2" size="1400,560" ;;
    *) layout="2,2" size="1400,1000" ;;
    esac
    {
        cat <<GNUPLOT
set terminal pngcairo size $size noenhanced
set output "$out/osu_bench.png"
set datafile missing "nan"
set multiplot layout $layout title "OSU 7.4, 2 ranks on the same emulated GPUs, one UCX: gpumem vs UCX's cuda transports"
set xlabel "message size (bytes)"
set logscale x 2
set format x "%.0b %BB"
set logscale y 10
set grid
GNUPLOT
        for name in "${names[@]}"; do
            ylabel="latency (us)" dbuf="D D" hbuf="H H"
            case $name in
            osu_bw|osu_bibw) ylabel="bandwidth (MB/s)" ;;
            osu_allreduce) dbuf="device" hbuf="host" ;;
            esac
            cat <<GNUPLOT
set title "$name"
set ylabel "$ylabel"
set key below
plot "$out/$name.dat" using 1:2 with linespoints title "gpumem: $gpumem_tls, $dbuf", \
     "$out/$name.dat" using 1:3 with linespoints title "ucx: $ucx_tls, $dbuf", \
     "$out/$name.dat" using 1:4 with linespoints title "host: $gpumem_tls, $hbuf"
GNUPLOT
        done
        echo "unset multiplot"
    } | gnuplot
    echo "plot: $out/osu_bench.png"
else
    echo "no gnuplot: no plot (contrib/setup.sh installs gnuplot-nox)"
fi
for name in "${names[@]}"; do echo "data: $out/$name.dat"; done

if [ "$status" -ne 0 ]; then
    echo
    printf "missed: %s\n" "${misses[@]}"
fi
exit "$status"
