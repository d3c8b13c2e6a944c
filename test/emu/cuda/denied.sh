# test/denied/test_denied.sh on the emulated CUDA's machine, for one
# setting: make check-vm runs it for Yama in the soft-RoCE VM, whose kernel
# has Yama (test/emu/cuda/run.sh runs the seccomp setting).
#   test/emu/cuda/denied.sh BUILDDIR seccomp|yama
set -u
build=$1
. "$(dirname "$0")/machine.sh" || exit 1
export GPUMEM_TEST_DRIVER=cuda UCX_GPUMEM_DRIVER=cuda
bash "$(dirname "$0")/../../denied/test_denied.sh" "$build" "$2"
