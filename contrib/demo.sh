#!/usr/bin/env bash
# The main job: sets up a fresh machine, builds gpumem, shows it loaded into
# the installed UCX, and runs the demo: two processes exchanging GPU buffers
# through UCX on emulated GPUs (gpumem-emu), every byte checked, saying
# which transports carried them and why; then the same on a machine whose
# two GPUs do not reach each other, staged; then with Open MPI's pml ucx.
set -euo pipefail
cd "$(dirname "$0")/.."

./contrib/setup.sh
./contrib/build.sh

plugin=$PWD/src/uct/gpumem/.libs/libuct_gpumem.so
export GPUMEM_PLUGIN=$plugin
preload=./src/tools/gpumem-preload
# The build's emulator: gpumem-emu runs a program on its GPUs, here with the
# plugin's emu driver (the demo's processes are a fork's, where a CUDA
# driver does not run)
emu() { GPUMEM_EMU_DIR=$PWD/emu/.libs ./emu/gpumem-emu --driver emu "$@"; }

echo
echo "== UCX's memory domains with gpumem on a machine without GPU =="
echo "   (UCX_GPUMEM_DRIVER=auto takes no emulated GPU: no gpumem domain"
echo "   of GPU memory, as UCX's own CUDA transports; UCX_LOG_LEVEL=info"
echo "   says why)"
UCX_LOG_LEVEL=info "$preload" ucx_info -d 2>&1 |
    grep -E '^# Memory domain:|gpumem: no GPU'

echo
echo "== gpumem in UCX on emulated GPUs (gpumem-emu ucx_info -d) =="
emu "$preload" ucx_info -d |
    awk '/^# Memory domain: gpumem/ { show = 1 }
         /^# Memory domain:/ && !/gpumem/ { show = 0 }
         /connection manager/ { next }
         show'

echo
echo "== the emulated GPUs, who reaches whom and why (gpumem_topo --emu) =="
emu ./src/tools/gpumem_topo --emu

echo
echo "== two processes exchange GPU buffers through UCX =="
UCX_TLS=posix,gpumemcpy,gpumemipc emu ./examples/gpumem_demo 4m 5

echo
echo "== the same between GPUs that do not reach each other (GPU 0 and 3 of"
echo "   a two-socket POWER8 machine, emulated from its hwloc export) =="
UCX_TLS=posix,gpumemcpy,gpumemipc \
    UCX_GPUMEM_TOPO_XML=test/topologies/hwloc-power8-minsky-4xP100-nvlink.xml \
    emu ./examples/gpumem_demo 4m 5

if [ -x examples/gpumem_mpi_pingpong ]; then
    echo
    echo "== the same with Open MPI (pml ucx), 2 ranks =="
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        emu mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any \
        --mca pml_ucx_devices any --mca btl ^openib \
        -x UCX_TLS=posix,gpumemcpy,gpumemipc -x LD_PRELOAD="$plugin" \
        -x UCX_GPUMEM_DRIVER -x LD_LIBRARY_PATH \
        ./examples/gpumem_mpi_pingpong 4m 10
fi
