#!/usr/bin/env bash
# gpumem's cuda driver on the emulated CUDA: the build's libcuda.so.1 over
# the emu driver, taken by LD_LIBRARY_PATH, and UCX_GPUMEM_DRIVER=cuda. Both
# see the emu's built-in machine (its export and its GPUs' facts), with the
# emulated VRAM shared in a directory of the run's own. Runs the cuda
# driver's own tests, the memory domain, copy, IPC and API suites, and
# ucx_perftest -m cuda,cuda between two processes through gpumemcpy and
# gpumemipc (test/tools/test_perftest_rma.sh).
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

# ucx_perftest's RMA between two processes, on the same GPUs
if ! bash "$(dirname "$0")/../tools/test_perftest_rma.sh" "$build"; then
    failed=1
fi
exit $failed
