#!/usr/bin/env bash
# ucx_perftest's UCP RMA tests on device memory (-m cuda,cuda), two
# processes: UCX 1.13 must carry ucp_put and ucp_get with gpumemipc, since
# its CPU emulation of RMA faults on device memory. The bytes themselves are
# checked by the gtest ipc_ucp_rma; here the tool runs to its end. So does
# tag_bw of 4 MiB device buffers, whose rendezvous goes zero-copy through
# gpumemipc or pipelined through device fragments as the UCX selects.
#   test_perftest_rma.sh BUILDDIR
set -u
build=$1
# On the build's emulated GPUs, as gpumem-emu runs a program
. "$(dirname "$0")/../emu/emu_env.sh"
shm=$(mktemp -d /tmp/gpumem-perftest.XXXXXX)
port=$((20000 + RANDOM % 20000))
failed=0

if ! command -v ucx_perftest >/dev/null; then
    echo "SKIP: ucx_perftest RMA (no ucx_perftest: install ucx-utils)"
    exit 0
fi

export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export GPUMEM_PERFTEST_LIB=$build/src/tools/.libs/libgpumem_perftest.so
export UCX_GPUMEM_EMU_SHM_DIR=$shm UCX_GPUMEM_EMU_VRAM_SIZE=256m
preload=$build/src/tools/gpumem-preload

run() {
    local tls=$1 test=$2 size=$3
    port=$((port + 1))
    UCX_TLS=$tls timeout -k 5 120 "$preload" --perftest ucx_perftest \
        -t "$test" -m cuda,cuda -s "$size" -n 100 -p "$port" \
        >"$shm.server" 2>&1 &
    sleep 1
    if UCX_TLS=$tls timeout -k 5 120 "$preload" --perftest ucx_perftest \
           -t "$test" -m cuda,cuda -s "$size" -n 100 -p "$port" localhost \
           >"$shm.client" 2>&1 && wait $! && grep -q "^Final:" "$shm.client"
    then
        echo "PASS: $test $size B -m cuda,cuda over $tls"
    else
        wait
        echo "FAIL: $test $size B -m cuda,cuda over $tls"
        sed 's/^/    client: /' "$shm.client"
        sed 's/^/    server: /' "$shm.server"
        failed=1
    fi
}

for tls in posix,gpumemcpy,gpumemipc sm,gpumemcpy,gpumemipc \
           tcp,gpumemcpy,gpumemipc; do
    for size in 8 20000 4194304; do
        run "$tls" ucp_put_bw "$size"
        run "$tls" ucp_get "$size"
    done
    run "$tls" tag_bw 4194304
done

rm -rf "$shm" "$shm.server" "$shm.client"
exit $failed
