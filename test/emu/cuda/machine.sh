# The emulated CUDA's machine for a test script (sourced, with $build the
# build directory): the emu's built-in machine written to a directory of the
# run's own ($work, removed at exit), its VRAM shared there, and the build's
# emulated libcuda.so.1, libcudart and libnvidia-ml.so.1 first on
# LD_LIBRARY_PATH. Sets failed=0; returns 1 where the machine cannot be
# written.
work=$(mktemp -d /tmp/gpumem-emu-cuda.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0

mkdir "$work/shm" "$work/shm-nvlink" "$work/machine"
if ! "$build/test/emu/cuda/emu_cuda_machine" "$work/machine.xml" \
         "$work/machine.facts" "$work/machine"; then
    echo "FAIL: cannot write the emulated machine"
    return 1
fi

export LD_LIBRARY_PATH=$build/emu/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_GPUMEM_TOPO_XML=$work/machine.xml
export UCX_GPUMEM_TOPO_FACTS=$work/machine.facts
export UCX_GPUMEM_SYSFS_ROOT=/nonexistent
export UCX_GPUMEM_EMU_SHM_DIR=$work/shm
