# The plugin's emulated GPUs, for the commands of a test script of the
# build tree (sourced, with $build the top build directory): the build's
# emulator first on LD_LIBRARY_PATH, where the plugin finds its emu driver
# (the emulator's machine alone, not its CUDA libraries, which no process
# of these tests should take for a GPU's), and UCX_GPUMEM_DRIVER=emu. Where
# the caller named another driver (cuda: a real GPU, or the emulated CUDA
# that test/emu/cuda/machine.sh puts on LD_LIBRARY_PATH), nothing changes.
# A build without the emulator (configure --disable-emu) skips the script.
# Commands run on another machine (ssh, mpirun's ranks there) are given
# $emu_env.
case ${UCX_GPUMEM_DRIVER:-emu} in
[Ee][Mm][Uu])
    if [ ! -e "$build/emu/machine/.libs/libgpumem_emu.so.0" ]; then
        echo "SKIP: $(basename "$0"): this build has no emulator" \
             "(configure --disable-emu), whose GPUs it runs on"
        exit 0
    fi
    LD_LIBRARY_PATH=$build/emu/machine/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    UCX_GPUMEM_DRIVER=emu
    export LD_LIBRARY_PATH UCX_GPUMEM_DRIVER
    ;;
esac
emu_env="UCX_GPUMEM_DRIVER=$UCX_GPUMEM_DRIVER LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
