# The emulated CUDA's machine for a test script (sourced, with $build the
# build directory), as gpumem-emu sets it up: the emu's built-in machine
# written to a directory of the run's own ($work, removed at exit), its
# VRAM shared there, the build's emulated libcuda.so.1, libcudart and
# libnvidia-ml.so.1 first on LD_LIBRARY_PATH, and UCX_GPUMEM_DRIVER=cuda.
# Sets failed=0; returns 1 where the machine cannot be written.
work=$(mktemp -d /tmp/gpumem-emu-cuda.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0

mkdir "$work/shm-nvlink"
if ! GPUMEM_EMU_DIR=$build/emu/.libs "$build/emu/gpumem-emu" \
         --dir "$work/machine" --driver cuda -- env >"$work/env"; then
    echo "FAIL: cannot write the emulated machine"
    return 1
fi
while IFS= read -r setting; do
    export "$setting"
done <<EOF_ENV
$(grep -E '^(LD_LIBRARY_PATH|UCX_GPUMEM_[A-Z_]+|GPUMEM_EMU_MACHINE)=' "$work/env")
EOF_ENV
