#!/usr/bin/env bash
# gpumem's cuda driver on the emulated CUDA: the build's libcuda.so.1 over
# the emu driver, taken by LD_LIBRARY_PATH, and UCX_GPUMEM_DRIVER=cuda. Both
# see the emu's built-in machine (its export and its GPUs' facts), with the
# emulated VRAM shared in a directory of the run's own. Runs the cuda
# driver's own tests, the memory core, memory domain, copy, IPC and API
# suites (the memory core's cases that the driver cannot run skip, saying
# why), and
# ucx_perftest -m cuda,cuda between two processes through gpumemcpy and
# gpumemipc (test/tools/test_perftest_rma.sh), and MPI ranks whose kernel
# denies pidfd_getfd, and ranks in PID namespaces of their own
# (test/denied/test_denied.sh).
#   run.sh BUILDDIR
set -u
build=$1
. "$(dirname "$0")/machine.sh" || exit 1
export GPUMEM_TEST_DRIVER=cuda UCX_GPUMEM_DRIVER=cuda

suites='cuda*:emu_cuda*:md.*:md_config.*:component.*:api.*:copy_*'
suites+=':*/copy_ucp.*:ipc_*:*/ipc_ucp*:mem*:*/mem_core*'
if timeout -k 5 600 "$build/test/gtest/gtest" --gtest_filter="$suites"; then
    echo "PASS: gtest on the emulated CUDA"
else
    echo "FAIL: gtest on the emulated CUDA"
    failed=1
fi

# The emulated runtime under a program built against the toolkit's, and
# the emulated NVML against the emulated CUDA: on the run's machine, and
# on one whose GPUs pair by NVLink
if [ -x "$build/test/emu/cuda/emu_cudart_test" ]; then
    "$build/test/emu/cuda/emu_cudart_test" || failed=1
    # Like CUDA, the emulated one keeps its GPUs to the process's end; the
    # last process to end leaves no shared state behind
    left=$(ls -A "$UCX_GPUMEM_EMU_SHM_DIR")
    if [ -n "$left" ]; then
        echo "FAIL: the emulated CUDA's programs left shared state:" $left
        failed=1
    else
        echo "PASS: the emulated CUDA's programs ended leaving nothing shared"
    fi
else
    echo "SKIP: the emulated CUDA runtime (no cuda_runtime_api.h at configure time)"
fi
if [ -x "$build/test/emu/cuda/emu_nvml_test" ]; then
    "$build/test/emu/cuda/emu_nvml_test" 0 || failed=1
    UCX_GPUMEM_TOPO_XML=$(dirname "$0")/../../topologies/hwloc-power8-minsky-4xP100-nvlink.xml \
    UCX_GPUMEM_TOPO_FACTS= UCX_GPUMEM_EMU_SHM_DIR=$work/shm-nvlink \
        "$build/test/emu/cuda/emu_nvml_test" 1 || failed=1
else
    echo "SKIP: the emulated NVML (no nvml.h at configure time: contrib/setup.sh fetches it)"
fi

# ucx_perftest's RMA between two processes, on the same GPUs
if ! bash "$(dirname "$0")/../../tools/test_perftest_rma.sh" "$build"; then
    failed=1
fi

for setting in seccomp pidns; do
    if ! bash "$(dirname "$0")/../../denied/test_denied.sh" "$build" \
             "$setting"; then
        failed=1
    fi
done
exit $failed
