#!/usr/bin/env bash
# gpumemipc's active messages against UCX's posix transport's, measured in
# the same run with ucx_perftest through UCP (two processes on this
# machine, host buffers): tag_lat of 8 B (eager short) and tag_bw of 4 KiB
# (eager bcopy), with UCX_TLS=posix and with UCX_TLS=gpumemcpy,gpumemipc,
# where UCP's messages go through gpumemipc's receive FIFO. (ucx_perftest's
# UCT tests refuse host buffers on gpumem_ipc, which registers device
# memory only.) The ratio (gpumemipc / posix) is what to read: these
# machines are noisy.
#   bench/am_bench.sh [BUILDDIR]
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
shm=$(mktemp -d /tmp/gpumem-bench.XXXXXX)
port=$((20000 + RANDOM % 20000))
trap 'rm -rf "$shm"' EXIT

export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export UCX_GPUMEM_EMU_SHM_DIR=$shm
preload=$build/src/tools/gpumem-preload
# On the build's emulated GPUs, as gpumem-emu runs a program
. "$(dirname "$0")/../test/emu/emu_env.sh"

# Prints column COLUMN of the test's final line: MB/s for bandwidth, usec
# for latency; the rest are ucx_perftest's options
perftest() {
    local test=$1 tls=$2 size=$3 column=$4
    shift 4
    port=$((port + 1))
    UCX_TLS=$tls timeout -k 5 120 "$preload" ucx_perftest -t "$test" \
        -s "$size" "$@" -p "$port" >/dev/null 2>&1 &
    sleep 1
    UCX_TLS=$tls timeout -k 5 120 "$preload" ucx_perftest -t "$test" \
        -s "$size" "$@" -p "$port" localhost 2>/dev/null |
        awk -v c="$column" '/^Final:/ { print $c }'
    wait
}

row() {
    local name=$1 peer=$2 ours=$3 unit=$4

    printf "%-22s %10s %-4s %10s %-4s %6s\n" "$name" "$peer" "$unit" \
        "$ours" "$unit" \
        "$(awk -v o="$ours" -v p="$peer" 'BEGIN { printf "%.2f", o / p }')"
}

printf "%-22s %15s %15s %6s\n" "test (host buffers)" "posix" "gpumemipc" "ratio"
# Latency: the median of the iterations, which the preemptions of a busy
# 2-core machine do not move; bandwidth: the overall figure
posix=$(perftest tag_lat posix 8 3 -n 100000)
ipc=$(perftest tag_lat gpumemcpy,gpumemipc 8 3 -n 100000)
row "tag_lat 8 B" "$posix" "$ipc" usec

posix=$(perftest tag_bw posix 4096 7 -n 200000)
ipc=$(perftest tag_bw gpumemcpy,gpumemipc 4096 7 -n 200000)
row "tag_bw 4096 B" "$posix" "$ipc" MB/s
