#!/usr/bin/env bash
# UCX's own CUDA transports on the emulated CUDA: a UCX built with CUDA
# (contrib/ucx-cuda.sh), its cuda_copy and cuda_ipc over the build's
# emulated libcuda.so.1, libcudart and libnvidia-ml.so.1, on the emu's
# built-in machine. ucx_info must list both transports; ucx_perftest runs
# between two processes to its end: cuda_ipc's UCT put zero-copy (4 MiB
# bandwidth, 8 B latency) and UCP tag messages of device memory, eager and
# rendezvous (get and put), through tcp,cuda_copy,cuda_ipc. Then UCX's own
# googletest families of its CUDA transports, memory domains and memory
# hooks (contrib/ucx-gtest.sh --cuda), built from UCX_SRC_DIR against
# CUDA_DIR. Where UCX's transports, written against real CUDA, misbehave
# here, the emulation is what is wrong.
#   ucx_cuda_run.sh BUILDDIR UCX_PREFIX UCX_SRC_DIR CUDA_DIR NVML_DIR
set -u
build=$1
prefix=$2
ucx_src=$3
cuda_dir=$4
nvml_dir=$5
# UCX's tests size their buffers by the host's memory (a sixteenth of it)
# and put two on one GPU, as a real GPU has room for: the emulated GPUs get
# that much VRAM (a sparse file, an untouched byte costs nothing)
UCX_GPUMEM_EMU_VRAM_SIZE=$(( ($(free -b | awk '/^Mem:/ { print $2 }') / 8 +
                             (1 << 30)) >> 20 ))m
export UCX_GPUMEM_EMU_VRAM_SIZE
. "$(dirname "$0")/machine.sh" || exit 1
export LD_LIBRARY_PATH=$prefix/lib:$LD_LIBRARY_PATH
# UCX's cuda transports alone: gpumem's plugin is not loaded in this UCX
export UCX_WARN_UNUSED_ENV_VARS=n
perftest=$prefix/bin/ucx_perftest
port=$((20000 + RANDOM % 20000))

info=$(timeout -k 5 60 "$prefix/bin/ucx_info" -d 2>&1)
for tl in cuda_copy cuda_ipc; do
    if grep -q "Transport: $tl$" <<<"$info"; then
        echo "PASS: ucx_info -d lists $tl on the emulated CUDA"
    else
        echo "FAIL: ucx_info -d does not list $tl on the emulated CUDA"
        echo "$info" | sed 's/^/    /'
        failed=1
    fi
done

#   run NAME ENV... -- PERFTEST_ARGS...
run() {
    local name=$1 envs=() server
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    port=$((port + 1))
    env "${envs[@]}" timeout -k 5 120 "$perftest" "$@" -p "$port" \
        >"$work/server" 2>&1 &
    server=$!
    sleep 1
    if env "${envs[@]}" timeout -k 5 120 "$perftest" "$@" -p "$port" \
           localhost >"$work/client" 2>&1 && wait $server &&
       grep -q "^Final:" "$work/client"; then
        echo "PASS: $name"
    else
        wait $server
        echo "FAIL: $name"
        sed 's/^/    client: /' "$work/client"
        sed 's/^/    server: /' "$work/server"
        failed=1
    fi
}

#   refused NAME -- PERFTEST_ARGS...: the test fails as on a GPU, the client
#   naming cuIpcGetMemHandle
refused() {
    local name=$1 server
    shift 2
    port=$((port + 1))
    timeout -k 5 120 "$perftest" "$@" -p "$port" >"$work/server" 2>&1 &
    server=$!
    sleep 1
    if ! timeout -k 5 120 "$perftest" "$@" -p "$port" localhost \
             >"$work/client" 2>&1 &&
       grep -q "cuIpcGetMemHandle.*invalid argument" "$work/client"; then
        echo "PASS: $name"
    else
        echo "FAIL: $name"
        sed 's/^/    client: /' "$work/client"
        failed=1
    fi
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
}

cuda_ipc_uct=(-x cuda_ipc -d cuda -m cuda -D zcopy)
if grep -q 'uct_md_mkey_pack(perf' "$ucx_src/src/tools/perf/lib/libperf.c" &&
   grep -q 'uct_cuda_ipc_mem_add_reg(address' \
        "$ucx_src/src/uct/cuda/cuda_ipc/cuda_ipc_md.c"; then
    # This UCX's ucx_perftest packs its key by the legacy call, without the
    # buffer's address, and its cuda_ipc makes the IPC handle at the pack, of
    # that address (NULL): on a GPU as here, CUDA refuses it (1.16; its
    # perftest packs by address from 1.18 on, and 1.13's cuda_ipc makes the
    # handle at registration)
    refused "cuda_ipc put_bw refused as on a GPU (a key without its address)" \
        -- -t put_bw "${cuda_ipc_uct[@]}" -s 4194304 -n 50
else
    run "cuda_ipc put_bw zcopy 4 MiB" -- -t put_bw "${cuda_ipc_uct[@]}" \
        -s 4194304 -n 50
    run "cuda_ipc put_lat zcopy 8 B" -- -t put_lat "${cuda_ipc_uct[@]}" \
        -s 8 -n 1000
fi
for size in 8 100000 4194304; do
    run "tag_bw $size B -m cuda,cuda over tcp,cuda_copy,cuda_ipc" \
        UCX_TLS=tcp,cuda_copy,cuda_ipc -- -t tag_bw -m cuda,cuda -s "$size" \
        -n 50
done
for scheme in get_zcopy put_zcopy; do
    run "tag_bw 4 MiB -m cuda,cuda, rendezvous $scheme" \
        UCX_TLS=tcp,cuda_copy,cuda_ipc UCX_RNDV_SCHEME=$scheme -- \
        -t tag_bw -m cuda,cuda -s 4194304 -n 50
done

top=$(cd "$(dirname "$0")/../../.." && pwd)
if (cd "$work" &&
    "$top/contrib/ucx-gtest.sh" --cuda "$cuda_dir" \
        --nvml "$nvml_dir" \
        --nvml-lib "$build/emu/.libs" "$ucx_src" "$prefix/bin/ucx_info" "$prefix/lib" none \
        "$build/test/ucx-cuda-gtest"); then
    echo "PASS: UCX's googletest families of its CUDA transports"
else
    echo "FAIL: UCX's googletest families of its CUDA transports"
    failed=1
fi
exit $failed
