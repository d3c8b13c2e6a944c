#!/usr/bin/env bash
# Runs the MPI ping-pong of device buffers (examples/gpumem_mpi_pingpong,
# every byte checked) with two Open MPI ranks in the soft-RoCE VM, over pml
# ucx with gpumem_rc as the only transport between the ranks (ud_verbs for
# wire-up, gpumemcpy for staging). The guest needs Open MPI:
#   GPUMEM_VM_EXTRA_PACKAGES="openmpi-bin libopenmpi3" \
#       test/vm/run -- test/rc/mpi.sh
#
# Usage: test/rc/mpi.sh [max size, default 1m] [iterations, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ ! -x examples/gpumem_mpi_pingpong ]; then
    echo "mpi.sh: skipped: examples/gpumem_mpi_pingpong was not built" \
         "(configure found no MPI)"
    exit 0
fi
if ! command -v mpirun >/dev/null; then
    echo "mpi.sh: no mpirun (Open MPI) here" >&2
    exit 1
fi

export UCX_GPUMEM_EMU_SHM_DIR=${UCX_GPUMEM_EMU_SHM_DIR:-$(mktemp -d)}
plugin=$PWD/src/uct/gpumem/.libs/libuct_gpumem.so
# On the build's emulated GPUs, as gpumem-emu runs a program
build=$PWD
. test/emu/emu_env.sh

timeout -k 5 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
    --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
    --mca btl self --mca osc ^ucx \
    -x UCX_TLS=gpumem_rc,gpumemcpy,ud_verbs -x UCX_NET_DEVICES=rxe0:1 \
    -x UCX_UD_VERBS_ETH_DGID_CHECK=n -x UCX_GPUMEM_EMU_SHM_DIR \
    -x LD_PRELOAD="$plugin" -x UCX_GPUMEM_DRIVER -x LD_LIBRARY_PATH \
    examples/gpumem_mpi_pingpong "${1:-1m}" "${2:-5}"
