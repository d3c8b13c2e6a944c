#!/usr/bin/env bash
# Device-buffer transfers through UCX against host buffers, measured in the
# same run with ucx_perftest (two processes on this machine):
#   tag_bw of 4 MiB and tag_lat of 8 B, -m cuda,cuda vs -m host,host.
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

# Prints column COLUMN of the test's final line: MB/s for bandwidth, usec
# for latency
perftest() {
    local test=$1 mem=$2 size=$3 column=$4
    port=$((port + 1))
    timeout -k 5 120 "$preload" --perftest ucx_perftest -t "$test" -m "$mem" \
        -s "$size" -n 200 -p "$port" >/dev/null 2>&1 &
    sleep 1
    timeout -k 5 120 "$preload" --perftest ucx_perftest -t "$test" -m "$mem" \
        -s "$size" -n 200 -p "$port" localhost 2>/dev/null |
        awk -v c="$column" '/^Final:/ { print $c }'
    wait
}

printf "%-22s %14s %14s %8s\n" "test ($tls)" "host" "device" "ratio"
# Bandwidth: the overall figure; latency: the median of the iterations,
# which the preemptions of a busy 2-core machine do not move
for spec in "tag_bw 4194304 7 MB/s" "tag_lat 8 3 usec"; do
    set -- $spec
    host=$(perftest "$1" host,host "$2" "$3")
    dev=$(perftest "$1" cuda,cuda "$2" "$3")
    printf "%-22s %10s %-3s %10s %-3s %8s\n" "$1 $2 B" "$host" "$4" "$dev" \
        "$4" "$(awk -v d="$dev" -v h="$host" 'BEGIN { printf "%.2f", d / h }')"
done
