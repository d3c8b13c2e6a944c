#!/usr/bin/env bash
# gpumem's transports side by side with UCX's own CUDA transports, on the
# same emulated GPUs, in one UCX, in one run: UCX 1.13 built with CUDA
# (contrib/ucx-cuda.sh, configured as the UCX gpumem is built against), its
# cuda_copy and cuda_ipc over the build's emulated libcuda, libcudart and
# NVML, and gpumem's plugin preloaded into it with its cuda driver
# (UCX_GPUMEM_DRIVER=cuda) over the same libcuda, so that the memory
# (ucx_perftest -m cuda: cudaMalloc), the GPUs and UCX are the same and only
# the transports differ:
#   - UCT put zero-copy, device->device, 4 KiB to 4 MiB: gpumemipc against
#     cuda_ipc (-t put_bw), and 8 B put latency (-t put_lat);
#   - UCP tag messages device->device, 4 KiB to 4 MiB (-t tag_bw) and 8 B
#     latency (-t tag_lat): tcp,gpumemcpy,gpumemipc against
#     tcp,cuda_copy,cuda_ipc;
#   - the copy transports alone, through which UCP stages device memory in
#     host memory (UCT's copy transports reach no other process):
#     tcp,gpumemcpy against tcp,cuda_copy, 4 MiB tag_bw and 8 B tag_lat.
# Each figure is the best of GPUMEM_BENCH_REPS runs (default 3). It prints
# gpumem/UCX ratios (bandwidth: higher is better; latency: lower), writes
# OUTDIR/cuda_bench.dat and draws OUTDIR/cuda_bench.png with gnuplot. What
# the emulated GPUs measure is the transports' own cost over the same
# engine, not a real GPU's speed.
#   bench/cuda_bench.sh [BUILDDIR] [OUTDIR]
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
out=$(mkdir -p "${2:-$build/bench}" && cd "${2:-$build/bench}" && pwd)
reps=${GPUMEM_BENCH_REPS:-3}
sizes="4096 16384 65536 262144 1048576 4194304"
srcdir=$(cd "$(dirname "$0")/.." && pwd)

# The UCX with CUDA of the build's configuration (cached in the set-up cache)
. "$srcdir/bench/ucx_cuda.sh"
prefix=$(ucx_cuda_prefix cuda_bench "$build" "$srcdir") || exit 1

# The emulated machine, VRAM and CUDA libraries; UCX with CUDA first
. "$srcdir/test/emu/cuda/machine.sh"
export LD_LIBRARY_PATH=$prefix/lib:$LD_LIBRARY_PATH
export LD_PRELOAD=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export UCX_GPUMEM_DRIVER=cuda UCX_WARN_UNUSED_ENV_VARS=n
perftest=$prefix/bin/ucx_perftest
port=$((20000 + RANDOM % 20000))

info=$("$prefix/bin/ucx_info" -d 2>&1 || true)
for tl in gpumemipc gpumemcpy cuda_ipc cuda_copy; do
    if ! grep -q "Transport: $tl$" <<<"$info"; then
        echo "cuda_bench: no $tl in $prefix's UCX:" >&2
        grep -i "gpumem\|cuda" <<<"$info" >&2 || true
        exit 1
    fi
done

. "$srcdir/bench/figures.sh"

# figure COLUMN max|min [VAR=VALUE...] -- ARGS...: column COLUMN of
# ucx_perftest's Final line (7: MB/s overall, 3: typical latency in us), a
# server and a client of this machine, best of the runs
figure() {
    local column=$1 how=$2 envs=() figures=() i
    shift 2
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    for ((i = 0; i < reps; i++)); do
        port=$((port + 1))
        env ${envs[@]+"${envs[@]}"} timeout -k 5 120 "$perftest" "$@" \
            -p "$port" >/dev/null 2>&1 &
        sleep 1
        figures+=("$(env ${envs[@]+"${envs[@]}"} timeout -k 5 120 \
                         "$perftest" "$@" -p "$port" localhost 2>/dev/null |
                     awk -v c="$column" '/^Final:/ { print $c }')")
        wait || true
    done
    best "$how" "${figures[@]}"
}

gpumem_tls=UCX_TLS=tcp,gpumemcpy,gpumemipc
cuda_tls=UCX_TLS=tcp,cuda_copy,cuda_ipc

echo "# size gpumemipc_put_MBps cuda_ipc_put_MBps gpumem_tag_MBps" \
     "cuda_tag_MBps" >"$out/cuda_bench.dat"
for size in $sizes; do
    n=$((size >= 1048576 ? 200 : 2000))
    ipc=$(figure 7 max -- -t put_bw -x gpumemipc -d gpumem -D zcopy \
              -m cuda -s "$size" -n "$n")
    cuda_ipc=$(figure 7 max -- -t put_bw -x cuda_ipc -d cuda -D zcopy \
                   -m cuda -s "$size" -n "$n")
    tag=$(figure 7 max "$gpumem_tls" -- -t tag_bw -m cuda,cuda -s "$size" \
              -n "$n")
    cuda_tag=$(figure 7 max "$cuda_tls" -- -t tag_bw -m cuda,cuda \
                   -s "$size" -n "$n")
    echo "$size $ipc $cuda_ipc $tag $cuda_tag" >>"$out/cuda_bench.dat"
done
read -r _ ipc4m cuda_ipc4m tag4m cuda_tag4m < <(tail -1 "$out/cuda_bench.dat")

put_lat=$(figure 3 min -- -t put_lat -x gpumemipc -d gpumem -D zcopy \
              -m cuda -s 8 -n 10000)
cuda_put_lat=$(figure 3 min -- -t put_lat -x cuda_ipc -d cuda -D zcopy \
                   -m cuda -s 8 -n 10000)
tag_lat=$(figure 3 min "$gpumem_tls" -- -t tag_lat -m cuda,cuda -s 8 \
              -n 10000)
cuda_tag_lat=$(figure 3 min "$cuda_tls" -- -t tag_lat -m cuda,cuda -s 8 \
                   -n 10000)
copy_bw=$(figure 7 max UCX_TLS=tcp,gpumemcpy -- -t tag_bw -m cuda,cuda \
              -s 4194304 -n 200)
cuda_copy_bw=$(figure 7 max UCX_TLS=tcp,cuda_copy -- -t tag_bw -m cuda,cuda \
                   -s 4194304 -n 200)
copy_lat=$(figure 3 min UCX_TLS=tcp,gpumemcpy -- -t tag_lat -m cuda,cuda \
               -s 8 -n 10000)
cuda_copy_lat=$(figure 3 min UCX_TLS=tcp,cuda_copy -- -t tag_lat \
                    -m cuda,cuda -s 8 -n 10000)

printf "\n%-46s %12s %12s %7s\n" "figure (gpumem vs UCX's cuda)" "gpumem" \
    "cuda" "ratio"
row() { printf "%-46s %12s %12s %7s\n" "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
row "4 MiB put_bw gpumemipc / cuda_ipc (MB/s)" "$ipc4m" "$cuda_ipc4m"
row "8 B put_lat gpumemipc / cuda_ipc (us)" "$put_lat" "$cuda_put_lat"
row "4 MiB tag_bw with the IPC transports (MB/s)" "$tag4m" "$cuda_tag4m"
row "8 B tag_lat with the IPC transports (us)" "$tag_lat" "$cuda_tag_lat"
row "4 MiB tag_bw, copy transports alone (MB/s)" "$copy_bw" "$cuda_copy_bw"
row "8 B tag_lat, copy transports alone (us)" "$copy_lat" "$cuda_copy_lat"

if command -v gnuplot >/dev/null; then
    gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 noenhanced
set output "$out/cuda_bench.png"
set title "The same emulated GPUs, one UCX: gpumem vs UCX's cuda transports"
set xlabel "message size (bytes)"
set ylabel "bandwidth (MB/s, 2^20 bytes)"
set logscale x 2
set format x "%.0b %BB"
set logscale y 10
set key bottom right
set grid
data = "$out/cuda_bench.dat"
plot data using 1:2 with linespoints title "UCT put zcopy, gpumemipc", \
     data using 1:3 with linespoints title "UCT put zcopy, cuda_ipc", \
     data using 1:4 with linespoints title "UCP tag_bw, tcp,gpumemcpy,gpumemipc", \
     data using 1:5 with linespoints title "UCP tag_bw, tcp,cuda_copy,cuda_ipc"
GNUPLOT
    echo "plot: $out/cuda_bench.png"
else
    echo "no gnuplot: no plot (contrib/setup.sh installs gnuplot-nox)"
fi
echo "data: $out/cuda_bench.dat"
