#!/usr/bin/env bash
# gpumem_rc between two machines against UCX's own rc_verbs over the same
# two soft-RoCE devices: UCT put zero-copy bandwidth at 1 MiB and put
# latency at 8 B, gpumem_rc device to device (the plugin's GPUs) and
# rc_verbs host to host, the server on gpumem-b and the client on gpumem-a,
# both transports measured in the same run, alternating, several rounds;
# prints the median of each and their ratio. Emulated figures (TCG,
# soft-RoCE): compare them with each other only.
#
# Usage: bench/rc_hosts_bench.sh [ROUNDS, default 3] [ITERATIONS, default 200]
#   (on the host, from the top of a built tree, in-tree or VPATH: boots the
#   two VMs of test/vm/run --two)
set -euo pipefail

rounds=${1:-3}
iters=${2:-200}
src=$(cd "$(dirname "$0")/.." && pwd -P)
top=$(pwd -P)

if [ "${GPUMEM_VM:-}" != 1 ]; then
    share=()
    [ "$top" = "$src" ] || share=(--share "$top")
    exec "$src/test/vm/run" --two --timeout 1500 "${share[@]}" -- \
        "cd '$top' && '$src/bench/rc_hosts_bench.sh' $rounds $iters"
fi

peer=${GPUMEM_VM_PEER:?not on the main machine of test/vm/run --two}
# On the build's emulated GPUs, as gpumem-emu runs a program, on both
# machines
build=$top
. "$src/test/emu/emu_env.sh"
env=(GPUMEM_PLUGIN="$top/src/uct/gpumem/.libs/libuct_gpumem.so"
     GPUMEM_PERFTEST_LIB="$top/src/tools/.libs/libgpumem_perftest.so"
     $emu_env)
port=15000

# One test: TL MEM TEST SIZE; prints "TL TEST SIZE MB/s usec"
run_one() {
    local tl=$1 mem=$2 test=$3 size=$4 out rc=0 server_rc=0
    local args="-x $tl -d rxe0:1 -t $test -s $size -n $iters -m $mem,$mem"
    # At most 8 puts in flight: a flood of them (hundreds of 1 MiB writes,
    # thousands of packets) overflows the receiving kernel's stack in rxe
    # between two VMs (test/vm/README.md)
    args+=" -p $port -D zcopy -O 8"
    port=$((port + 1))
    ssh "$peer" "cd '$top' && env ${env[*]} timeout -k 5 120 \
        src/tools/gpumem-preload --perftest ucx_perftest $args" \
        >/dev/null 2>&1 &
    local server=$!
    # The server needs seconds to start (ssh, emulated CPU): the client
    # tries again while it is refused, for a minute
    local tries
    for ((tries = 0; tries < 30; tries++)); do
        sleep 2
        rc=0
        out=$(env "${env[@]}" timeout -k 5 120 src/tools/gpumem-preload \
                  --perftest ucx_perftest $args "$peer" 2>&1) || rc=$?
        grep -q "Connection refused" <<<"$out" || break
    done
    wait $server || server_rc=$?
    if [ $rc -ne 0 ] || [ $server_rc -ne 0 ]; then
        echo "$out" >&2
        echo "rc_hosts_bench: $tl $test $size failed (client $rc, server" \
             "$server_rc)" >&2
        return 1
    fi
    echo "$out" | awk -v tl="$tl" -v test="$test" -v size="$size" \
        '/Final:/ { printf "%s %s %s %.2f %.2f\n", tl, test, size, $7, $5;
                    exit }'
}

results=$(mktemp)
for round in $(seq 1 "$rounds"); do
    for pair in "gpumem_rc cuda" "rc_verbs host"; do
        read -r tl mem <<<"$pair"
        run_one "$tl" "$mem" put_bw 1048576 >>"$results"
        run_one "$tl" "$mem" put_lat 8 >>"$results"
    done
done

awk "$(cat "$src"/bench/median.awk)"'
{
    key = $2 " " $3
    v[$1, key] = v[$1, key] " " (($2 == "put_lat") ? $5 : $4)
    if (!(key in seen)) { seen[key] = 1; order[++count] = key }
}
END {
    printf "%-8s %8s %-5s %16s %16s %7s\n", "test", "size", "unit",
           "gpumem_rc(dev)", "rc_verbs(host)", "ratio"
    for (i = 1; i <= count; ++i) {
        split(order[i], k, " ")
        g = median(v["gpumem_rc", order[i]])
        r = median(v["rc_verbs", order[i]])
        printf "%-8s %8s %-5s %16.2f %16.2f %7.2f\n", k[1], k[2],
               (k[1] == "put_lat") ? "usec" : "MB/s", g, r,
               (r > 0) ? g / r : 0
    }
}' "$results"
echo "(gpumem-a to gpumem-b; ${rounds} rounds of ${iters} iterations;" \
     "medians; ratio gpumem_rc / rc_verbs: above 1 is better for bandwidth," \
     "worse for latency)"
rm -f "$results"
