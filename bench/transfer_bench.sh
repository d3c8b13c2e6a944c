#!/usr/bin/env bash
# Device-buffer transfers through UCX against host buffers, measured in the
# same run with ucx_perftest (two processes on this machine):
#   tag_bw of 4 MiB and tag_lat of 8 B, -m cuda,cuda vs -m host,host, and
#   tag_lat of 8 B against host memory that UCP sends by copy (-D iov), and
#   that copy against short on host memory: the floor of the 8 B ratio.
# The ratio is what to read: these machines are noisy.
#   bench/transfer_bench.sh [BUILDDIR] [UCX_TLS]
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
tls=${2:-posix,gpumemcpy}
shm=$(mktemp -d /tmp/gpumem-bench.XXXXXX)
port=$((20000 + RANDOM % 20000))
trap 'rm -rf "$shm"' EXIT

export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export GPUMEM_PERFTEST_LIB=$build/src/tools/.libs/libgpumem_perftest.so
export UCX_GPUMEM_EMU_SHM_DIR=$shm UCX_TLS=$tls
preload=$build/src/tools/gpumem-preload
# On the build's emulated GPUs, as gpumem-emu runs a program
. "$(dirname "$0")/../test/emu/emu_env.sh"

# Prints column COLUMN of the test's final line: MB/s for bandwidth, usec
# for latency; the rest are ucx_perftest's options (-n, -D)
perftest() {
    local test=$1 mem=$2 size=$3 column=$4
    shift 4
    port=$((port + 1))
    timeout -k 5 120 "$preload" --perftest ucx_perftest -t "$test" -m "$mem" \
        -s "$size" "$@" -p "$port" >/dev/null 2>&1 &
    sleep 1
    timeout -k 5 120 "$preload" --perftest ucx_perftest -t "$test" -m "$mem" \
        -s "$size" "$@" -p "$port" localhost 2>/dev/null |
        awk -v c="$column" '/^Final:/ { print $c }'
    wait
}

row() {
    local name=$1 host=$2 dev=$3 unit=$4

    printf "%-26s %10s %-4s %10s %-4s %6s\n" "$name" "$host" "$unit" "$dev" \
        "$unit" "$(awk -v d="$dev" -v h="$host" 'BEGIN { printf "%.2f", d / h }')"
}

printf "%-26s %15s %15s %6s\n" "test ($tls)" "host" "device" "ratio"
# Bandwidth: the overall figure; latency: the median of the iterations,
# which the preemptions of a busy 2-core machine do not move
host=$(perftest tag_bw host,host 4194304 7 -n 200)
dev=$(perftest tag_bw cuda,cuda 4194304 7 -n 200)
row "tag_bw 4194304 B" "$host" "$dev" MB/s

short=$(perftest tag_lat host,host 8 3 -n 20000)
dev=$(perftest tag_lat cuda,cuda 8 3 -n 20000)
row "tag_lat 8 B" "$short" "$dev" usec

# The same device figure against host memory sent as UCP sends device
# memory: an iov buffer is not sent short, it is packed into a copy (bcopy)
# descriptor and unpacked from it, as memory-type copies pack and unpack
host=$(perftest tag_lat host,host 8 3 -n 20000 -D iov)
row "tag_lat 8 B (host by copy)" "$host" "$dev" usec

# What the copy protocol itself costs against short, on host memory alone:
# UCP sends memory it may not read (device memory, CUDA's as gpumem's) by
# copy only, so no device transport's 8 B device/host ratio is below this
row "tag_lat 8 B (copy / short)" "$short" "$host" usec
