#!/usr/bin/env bash
# gpumem_rc against UCX's own rc_verbs over soft-RoCE: UCT put and get
# zero-copy bandwidth (64 KiB) and put latency (8 B), of host memory, both
# transports measured in the same VM run, alternating, several rounds; prints
# the median of each and their ratio. Emulated figures: compare them with
# each other only.
#
# Usage: bench/rc_bench.sh [ROUNDS, default 3] [ITERATIONS, default 400]
#   (on the host: boots the VM of test/vm/run; build first)
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
iters=${2:-400}

if [ "${GPUMEM_VM:-}" != 1 ]; then
    exec test/vm/run --timeout 1500 -- bench/rc_bench.sh "$rounds" "$iters"
fi

results=$(mktemp)
for round in $(seq 1 "$rounds"); do
    for tl in gpumem_rc rc_verbs; do
        GPUMEM_TEST_PORT=$((14000 + round * 10 + ${#tl})) \
            test/rc/perftest.sh -t "$tl" -m host -n "$iters" | \
            grep -v '^tl ' >>"$results"
    done
done

# tl mem test size MB/s usec -> one row per test: medians and ratio
awk "$(cat bench/median.awk)"'
{
    key = $3 " " $4
    value = ($3 == "put_lat") ? $6 : $5
    v[$1, key] = v[$1, key] " " value
    if (!(key in seen)) { seen[key] = 1; order[++count] = key }
}
END {
    printf "%-8s %6s %-6s %12s %12s %8s\n", "test", "size", "unit",
           "gpumem_rc", "rc_verbs", "ratio"
    for (i = 1; i <= count; ++i) {
        key = order[i]
        split(key, k, " ")
        unit = (k[1] == "put_lat") ? "usec" : "MB/s"
        g = median(v["gpumem_rc", key])
        r = median(v["rc_verbs", key])
        printf "%-8s %6s %-6s %12.2f %12.2f %8.2f\n", k[1], k[2], unit,
               g, r, (r > 0) ? g / r : 0
    }
}' "$results"
echo "(${rounds} rounds of ${iters} iterations; medians; ratio" \
     "gpumem_rc / rc_verbs: above 1 is better for bandwidth, worse for" \
     "latency)"
rm -f "$results"
