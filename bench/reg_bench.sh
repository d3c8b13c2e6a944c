#!/usr/bin/env bash
# A zero-copy put of a 1 MiB buffer with its registration, as an
# application that does not keep registrations sends (bench/reg_bench.c):
# gpumem_rc with device memory of the emulated GPUs and with host memory,
# and UCX's own rc_verbs with host memory, reused and fresh buffers, in one
# process on the soft-RoCE VM's rxe0. Emulated figures: compare the lines
# with each other only.
#
# Usage: bench/reg_bench.sh [ROUNDS, default 5] [ITERATIONS, default 50]
#                           [SIZE, default 1048576]
#   (on the host: builds bench/reg_bench, boots the VM of test/vm/run)
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-5}
iters=${2:-50}
size=${3:-1048576}

if [ "${GPUMEM_VM:-}" != 1 ]; then
    make -s bench/reg_bench
    exec test/vm/run --timeout 1500 -- \
        bench/reg_bench.sh "$rounds" "$iters" "$size"
fi

# On the build's emulated GPUs, as gpumem-emu runs a program
build=$PWD
. test/emu/emu_env.sh
export UCX_GPUMEM_EMU_SHM_DIR=${UCX_GPUMEM_EMU_SHM_DIR:-$(mktemp -d)}
bench/reg_bench "$rounds" "$iters" "$size" rxe0:1
