#!/usr/bin/env bash
# The examples as users run them: the demo (two processes exchanging GPU
# buffers through UCX) and, where Open MPI is built in, the MPI ping-pong
# over pml ucx. Each checks every byte it receives.
#   test_examples.sh BUILDDIR
set -u
build=$1
plugin=$build/src/uct/gpumem/.libs/libuct_gpumem.so
shm=$(mktemp -d /tmp/gpumem-examples.XXXXXX)
failed=0

check() {
    local name=$1
    shift
    if timeout -k 10 180 "$@" >"$shm.log" 2>&1 && grep -q "passed" "$shm.log"; then
        echo "PASS: $name"
    else
        echo "FAIL: $name"
        sed 's/^/    /' "$shm.log"
        failed=1
    fi
}

export UCX_GPUMEM_EMU_SHM_DIR=$shm
export UCX_GPUMEM_EMU_VRAM_SIZE=256m

for tls in posix,gpumemcpy posix,gpumemcpy,gpumemipc posix,cma,gpumemcpy \
           tcp,gpumemcpy,gpumemipc; do
    check "demo over $tls" env UCX_TLS=$tls "$build/examples/gpumem_demo" 4m 3
done

if [ -x "$build/examples/gpumem_mpi_pingpong" ]; then
    check "MPI ping-pong over pml ucx" \
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
