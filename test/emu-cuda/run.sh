#!/usr/bin/env bash
# gpumem's cuda driver on the emulated CUDA: the build's libcuda.so.1 over
# the emu driver, taken by LD_LIBRARY_PATH, and UCX_GPUMEM_DRIVER=cuda. Both
# see the emu's built-in machine (its export and its GPUs' facts), with the
# emulated VRAM shared in a directory of the run's own. Runs the cuda
# driver's own tests, the memory domain, copy, IPC and API suites, and
# ucx_perftest -m cuda,cuda between two processes through gpumemcpy and
# gpumemipc.
#   run.sh BUILDDIR
set -u
build=$1
work=$(mktemp -d /tmp/gpumem-emu-cuda.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0

mkdir "$work/shm" "$work/machine"
if ! "$build/test/emu-cuda/emu_cuda_machine" "$work/machine.xml" \
         "$work/machine.facts" "$work/machine"; then
    echo "FAIL: cannot write the emulated machine"
    exit 1
fi

export LD_LIBRARY_PATH=$build/src/uct/gpumem/driver/emu/cuda/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUMEM_TEST_DRIVER=cuda UCX_GPUMEM_DRIVER=cuda
export UCX_GPUMEM_TOPO_XML=$work/machine.xml
export UCX_GPUMEM_TOPO_FACTS=$work/machine.facts
export UCX_GPUMEM_SYSFS_ROOT=/nonexistent
export UCX_GPUMEM_EMU_SHM_DIR=$work/shm

suites='cuda*:emu_cuda*:md.*:md_config.*:component.*:api.*:copy_*'
suites+=':*/copy_ucp.*:ipc_*:*/ipc_ucp*'
if timeout -k 5 600 "$build/test/gtest/gtest" --gtest_filter="$suites"; then
    echo "PASS: gtest on the emulated CUDA"
else
    echo "FAIL: gtest on the emulated CUDA"
    failed=1
fi

if ! command -v ucx_perftest >/dev/null; then
    echo "SKIP: ucx_perftest -m cuda,cuda (no ucx_perftest: install ucx-utils)"
    exit $failed
fi

export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export GPUMEM_PERFTEST_LIB=$build/src/tools/.libs/libgpumem_perftest.so
preload=$build/src/tools/gpumem-preload
port=$((20000 + RANDOM % 20000))

perftest() {
    local tls=$1 test=$2 size=$3
    port=$((port + 1))
    UCX_TLS=$tls timeout -k 5 120 "$preload" --perftest ucx_perftest \
        -t "$test" -m cuda,cuda -s "$size" -n 100 -p "$port" \
        >"$work/server" 2>&1 &
    sleep 1
    if UCX_TLS=$tls timeout -k 5 120 "$preload" --perftest ucx_perftest \
           -t "$test" -m cuda,cuda -s "$size" -n 100 -p "$port" localhost \
           >"$work/client" 2>&1 && wait $! && grep -q "^Final:" "$work/client"
    then
        echo "PASS: ucx_perftest $test $size B -m cuda,cuda over $tls"
    else
        wait
        echo "FAIL: ucx_perftest $test $size B -m cuda,cuda over $tls"
        sed 's/^/    client: /' "$work/client"
        sed 's/^/    server: /' "$work/server"
        failed=1
    fi
}

for size in 8 1048576; do
    perftest posix,gpumemcpy,gpumemipc tag_bw "$size"
    perftest posix,gpumemcpy,gpumemipc ucp_put_bw "$size"
    perftest posix,gpumemcpy,gpumemipc ucp_get "$size"
done
exit $failed
