# What gpumem-emu gives a program, for the commands of a test script of the
# build tree (sourced, with $build the top build directory): the build's
# emulator first on LD_LIBRARY_PATH, where the plugin finds its emu driver,
# and UCX_GPUMEM_DRIVER=emu. Where the caller named another driver (cuda:
# a real GPU, or the emulated CUDA that test/emu/cuda/machine.sh puts on
# LD_LIBRARY_PATH), nothing changes. Commands run on another machine (ssh,
# mpirun's ranks there) are given $emu_env.
if [ "${UCX_GPUMEM_DRIVER:-emu}" = emu ]; then
    GPUMEM_EMU_DIR=$build/emu/.libs
    LD_LIBRARY_PATH=$GPUMEM_EMU_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    UCX_GPUMEM_DRIVER=emu
    export GPUMEM_EMU_DIR LD_LIBRARY_PATH UCX_GPUMEM_DRIVER
fi
emu_env="UCX_GPUMEM_DRIVER=$UCX_GPUMEM_DRIVER LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
