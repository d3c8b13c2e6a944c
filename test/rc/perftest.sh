#!/usr/bin/env bash
# Runs UCX's ucx_perftest at UCT level over one RDMA transport on soft-RoCE:
# put and get zero-copy bandwidth and put latency, server and client on one
# machine (the VM's rxe0), and prints one line per test:
#
#   TL MEM TEST SIZE MB/s usec
#
# Usage: test/rc/perftest.sh [-t TL] [-m host|cuda]... [-d DEV] [-n ITERS]
#   -t  transport (default gpumem_rc; rc_verbs for UCX's own)
#   -m  memory of both sides (default host; cuda: device memory of the
#       plugin's GPUs through libgpumem_perftest); may be repeated
#   -d  device (default rxe0:1)
#   -n  iterations of each test (default 200)
# Exits non-zero when a run fails. Run from the top of a built tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
# On the build's emulated GPUs, as gpumem-emu runs a program
build=$PWD
. test/emu/emu_env.sh

tl=gpumem_rc
dev=rxe0:1
iters=200
mems=()
while getopts "t:m:d:n:" opt; do
    case $opt in
    t) tl=$OPTARG ;;
    n) iters=$OPTARG ;;
    m) mems+=("$OPTARG") ;;
    d) dev=$OPTARG ;;
    *) exit 2 ;;
    esac
done
[ ${#mems[@]} -gt 0 ] || mems=(host)

top=$PWD
export GPUMEM_PLUGIN=$top/src/uct/gpumem/.libs/libuct_gpumem.so
export GPUMEM_PERFTEST_LIB=$top/src/tools/.libs/libgpumem_perftest.so
export UCX_GPUMEM_EMU_SHM_DIR=${UCX_GPUMEM_EMU_SHM_DIR:-$(mktemp -d)}
server_addr=${GPUMEM_TEST_SERVER_ADDR:-10.11.0.1}
port=${GPUMEM_TEST_PORT:-13337}
preload=(src/tools/gpumem-preload --perftest)

# One test: TEST SIZE ITERS [ucx_perftest options]; prints the result line
run_one() {
    local mem=$1 test=$2 size=$3 iters=$4
    shift 4
    local args=(-x "$tl" -d "$dev" -t "$test" -s "$size" -n "$iters"
                -m "$mem,$mem" -p "$port" "$@")
    local out rc line

    timeout -k 5 120 "${preload[@]}" ucx_perftest "${args[@]}" \
        >/dev/null 2>&1 &
    local server=$!
    local try
    set +e
    # The server listens once it has started, which a busy machine's VM
    # takes seconds for: a refused connection is tried again
    for try in 1 2 3 4 5 6 7 8 9 10; do
        sleep 1
        out=$(timeout -k 5 120 "${preload[@]}" ucx_perftest "${args[@]}" \
              "$server_addr" 2>&1)
        rc=$?
        [ $rc -ne 0 ] && grep -q "connect() failed: Connection refused" \
            <<<"$out" && kill -0 "$server" 2>/dev/null || break
    done
    wait "$server"
    local server_rc=$?
    set -e
    port=$((port + 1))
    if [ $rc -ne 0 ] || [ $server_rc -ne 0 ]; then
        echo "$out" >&2
        echo "perftest: $tl $mem $test $size failed (client $rc, server" \
             "$server_rc)" >&2
        return 1
    fi

    # The "Final:" line: iterations, latency (typical, average, overall),
    # bandwidth (average, overall), message rate
    line=$(echo "$out" | awk '/Final:/ {print; exit}')
    if [ -z "$line" ]; then
        echo "$out" >&2
        echo "perftest: $tl $mem $test $size printed no result" >&2
        return 1
    fi
    echo "$line" | awk -v tl="$tl" -v mem="$mem" -v test="$test" \
        -v size="$size" '{printf "%-9s %-4s %-8s %8d %10.2f %10.2f\n",
                          tl, mem, test, size, $7, $5}'
}

status=0
printf "%-9s %-4s %-8s %8s %10s %10s\n" tl mem test size MB/s usec
for mem in "${mems[@]}"; do
    run_one "$mem" put_bw  65536 "$iters" -D zcopy || status=1
    run_one "$mem" get     65536 "$iters" -D zcopy || status=1
    run_one "$mem" put_lat 8     "$iters" -D zcopy || status=1
done
exit $status
