#!/usr/bin/env bash
# The examples as users run them: the demo (two processes exchanging GPU
# buffers through UCX), between GPUs that reach each other and, on a machine
# whose GPUs do not, staged, saying why; and, where Open MPI is built in, the
# MPI ping-pong over pml ucx. Each checks every byte it receives.
#   test_examples.sh BUILDDIR [SRCDIR]
set -u
build=$1
topologies=${2:-$(dirname "$0")/../..}/test/topologies
plugin=$build/src/uct/gpumem/.libs/libuct_gpumem.so
shm=$(mktemp -d /tmp/gpumem-examples.XXXXXX)
failed=0
# On the build's emulated GPUs, as gpumem-emu runs a program
. "$(dirname "$0")/../emu/emu_env.sh"

# check NAME 'LINE1|LINE2...' COMMAND...: the command succeeds and prints
# each of the lines (fixed strings, '|' between them) and "passed"
check() {
    local name=$1 expect=$2 ok=1 line
    shift 2
    timeout -k 10 180 "$@" >"$shm.log" 2>&1 || ok=0
    IFS='|' read -ra lines <<<"$expect|passed"
    for line in "${lines[@]}"; do
        grep -qF -- "$line" "$shm.log" || { ok=0; echo "    missing: $line"; }
    done
    if [ $ok = 1 ]; then
        echo "PASS: $name"
    else
        echo "FAIL: $name"
        sed 's/^/    /' "$shm.log"
        failed=1
    fi
}

export UCX_GPUMEM_EMU_SHM_DIR=$shm
# UCP of UCX 1.16 and later stages rendezvous in fragments of device memory
# allocated 128 at a time (512 MiB of 4 MiB fragments); an untouched byte of
# the emulated VRAM costs nothing
export UCX_GPUMEM_EMU_VRAM_SIZE=1g

for tls in posix,gpumemcpy posix,gpumemcpy,gpumemipc posix,cma,gpumemcpy \
           tcp,gpumemcpy,gpumemipc; do
    check "demo over $tls" "verified: every byte|maps GPU 1's memory" \
        env UCX_TLS=$tls "$build/examples/gpumem_demo" 4m 3
done

# The GPUs reach each other: gpumemipc carries the large buffers
lines="GPU 0 maps GPU 1's memory: through bridge|gpumemipc (rma_bw"
lines+="|gpumemipc moved|bandwidth|verified: every byte"
check "demo with gpumemipc between GPUs that reach each other" "$lines" \
    env UCX_TLS=posix,gpumemcpy,gpumemipc "$build/examples/gpumem_demo" 4m 3

# Device memory that UCX sees as ROCm's (a documented value): UCP asks the
# plugin the buffers' type, and the memory-type copies go by that type
check "demo with UCX_GPUMEM_MEM_TYPE=rocm" "gpumemipc moved|verified: every byte" \
    env UCX_TLS=posix,gpumemcpy,gpumemipc UCX_GPUMEM_MEM_TYPE=rocm \
        "$build/examples/gpumem_demo" 4m 3

# GPU 0 and GPU 3 of a POWER8 machine sit under two sockets: gpumemipc
# cannot map across, the demo says why, and the buffers are staged
lines="GPU 0 does not map GPU 3's memory: no PCI bridge above both"
lines+="|gpumemipc moved nothing|staged|bandwidth|verified: every byte"
minsky=$topologies/hwloc-power8-minsky-4xP100-nvlink.xml
check "demo staged between GPUs that do not reach each other" "$lines" \
    env UCX_TLS=posix,gpumemcpy,gpumemipc UCX_GPUMEM_TOPO_XML="$minsky" \
        "$build/examples/gpumem_demo" 4m 3

if [ -x "$build/examples/gpumem_mpi_pingpong" ]; then
    check "MPI ping-pong over pml ucx" "" \
        env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any \
            --mca pml_ucx_devices any --mca btl ^openib \
            -x UCX_TLS=posix,gpumemcpy,gpumemipc -x UCX_GPUMEM_EMU_SHM_DIR \
            -x UCX_GPUMEM_EMU_VRAM_SIZE -x LD_PRELOAD="$plugin" \
            "$build/examples/gpumem_mpi_pingpong" 1m 5
else
    echo "SKIP: MPI ping-pong (built without Open MPI: install libopenmpi-dev)"
fi

# Both processes gone: nothing of the emulated GPUs is left shared
if [ -n "$(ls -A "$shm")" ]; then
    echo "FAIL: emu state left in $shm: $(ls "$shm")"
    failed=1
fi
rm -rf "$shm" "$shm.log"
exit $failed
