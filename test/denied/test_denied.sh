# Device buffers between MPI ranks that the kernel refuses each other's
# descriptors: pidfd_getfd(2) denied by a seccomp filter, as container
# runtimes' default profiles deny it (test/denied/deny_syscall runs mpirun,
# and so both ranks, so). Two ranks of Open MPI over pml ucx ping-pong
# device buffers from gpumem_device_malloc, every byte checked.
#   - emu driver: the peer's memory is opened by path, not taken by pidfd:
#     gpumemipc moves the large buffers zero-copy as without the filter
#   - cuda driver (on the emulated CUDA: test/emu/cuda/run.sh runs this with
#     its machine set up): the peer's descriptor broker hands its fd over a
#     Unix socket: zero-copy as without the filter, nothing said. Then with
#     the broker's sockets denied too (as between network namespaces): the
#     peer's memory cannot be imported, the buffers are staged, each rank
#     says why once (the seccomp filter), not once per message, and nothing
#     is fatal
# Both first run without the filter, which must be zero-copy.
#   test_denied.sh BUILDDIR
set -u
build=$1
deny=$build/test/denied/deny_syscall
work=$(mktemp -d /tmp/gpumem-denied.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
# On the build's emulated GPUs, as gpumem-emu runs a program (the cuda
# driver's machine is the caller's)
. "$(dirname "$0")/../emu/emu_env.sh"
driver=$UCX_GPUMEM_DRIVER

if ! "$deny" pidfd_getfd true 2>"$work/why"; then
    echo "SKIP: device buffers where pidfd_getfd is denied: no seccomp" \
         "filter here ($(cat "$work/why"))"
    exit 0
fi

export UCX_GPUMEM_EMU_SHM_DIR=$work/shm UCX_GPUMEM_EMU_VRAM_SIZE=1g
mkdir "$work/shm"

if [ ! -x "$build/examples/gpumem_mpi_pingpong" ]; then
    echo "SKIP: device buffers where pidfd_getfd is denied: built without" \
         "Open MPI (install libopenmpi-dev)"
    exit 0
fi

# run NAME [deny_syscall pidfd_getfd]: the ping-pong, its output in
# $work/NAME.log
run() {
    local name=$1
    shift
    timeout -k 10 180 "$@" mpirun --allow-run-as-root -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self -x UCX_TLS=posix,gpumemcpy,gpumemipc \
        -x UCX_GPUMEM_EMU_SHM_DIR -x UCX_GPUMEM_EMU_VRAM_SIZE \
        -x UCX_GPUMEM_DRIVER -x LD_LIBRARY_PATH \
        -x LD_PRELOAD="$build/src/uct/gpumem/.libs/libuct_gpumem.so" \
        "$build/examples/gpumem_mpi_pingpong" 4m 4 >"$work/$name.log" 2>&1 &&
        grep -q "gpumem_mpi_pingpong: passed, every byte checked" \
            "$work/$name.log"
}
fail() {
    echo "FAIL: $*"
    sed 's/^/    /' "$work/$name.log"
    failed=1
}
zero_copy() {
    grep -q "gpumemipc moved [1-9][0-9]* bytes zero-copy" "$work/$name.log"
}

# Without the filter first: where the ranks' UCX is not the one this build
# is for (a UCX of the version matrix beside the system's Open MPI), the
# plugin's version guard refuses it and nothing here can be asserted
name=control-$driver
if ! run "$name"; then
    fail "the ping-pong without a filter ($driver driver)"
    exit 1
elif ! zero_copy; then
    version=$(ucx_info -v 2>/dev/null |
              sed -n -e 's/^# Library version: //p' -e 's/^# Version //p' |
              head -n 1)
    echo "SKIP: device buffers where pidfd_getfd is denied ($driver driver):" \
         "gpumemipc moved nothing without the filter either (the ranks'" \
         "UCX does not take this build's plugin; ucx_info here is" \
         "${version:-unknown})"
    exit 0
fi

name=denied-$driver
if ! run "$name" "$deny" pidfd_getfd; then
    fail "the ping-pong under a filter that denies pidfd_getfd" \
         "($driver driver)"
elif ! zero_copy; then
    fail "gpumemipc moved nothing where pidfd_getfd is denied ($driver" \
         "driver)"
elif grep -q "cannot import the memory of process" "$work/$name.log"; then
    fail "a rank could not import although the descriptors are passed" \
         "($driver driver)"
elif [ "$driver" = emu ]; then
    echo "PASS: zero-copy where pidfd_getfd is denied (emu driver:" \
         "memory opened by path)"
else
    echo "PASS: zero-copy where pidfd_getfd is denied ($driver driver:" \
         "the descriptor broker)"
fi

name=unreachable-$driver
if [ "$driver" = emu ]; then
    : # Its memory is opened by path: no broker to take away
elif ! run "$name" "$deny" pidfd_getfd "$deny" unix_seqpacket; then
    fail "the ping-pong under filters that deny pidfd_getfd and the" \
         "descriptor broker ($driver driver)"
else
    # The line of each rank that could not import: "[time]
    # [host:pid:thread] ... cannot import the memory of process N: ..."
    said=$(grep "cannot import the memory of process" "$work/$name.log")
    per_process=$(sed -n 's/^\[[^]]*\] \[[^:]*:\([0-9]*\).*/\1/p' <<<"$said" |
                  sort | uniq -c | awk '$1 > 1')
    if zero_copy; then
        fail "gpumemipc moved bytes it cannot have mapped ($driver driver)"
    elif ! grep -q "pidfd_getfd: Operation not permitted: a seccomp filter" \
            <<<"$said"; then
        fail "no rank said that a seccomp filter denies pidfd_getfd"
    elif [ -n "$per_process" ]; then
        fail "a rank said why more than once: $per_process"
    elif grep -q "Fatal\|failed to unpack" "$work/$name.log"; then
        fail "a remote key that could not be imported failed UCP"
    else
        echo "PASS: staged where neither pidfd_getfd nor the descriptor" \
             "broker is allowed ($driver driver), the reason said once per" \
             "rank"
    fi
fi

# Both ranks gone: nothing of the emu driver's GPUs is left shared (the
# emulated CUDA, like CUDA, keeps its GPUs until the process ends, and the
# next process takes over what an ended one left)
if [ "$driver" = emu ] && [ -n "$(ls -A "$work/shm")" ]; then
    echo "FAIL: emulated-GPU state left in $work/shm: $(ls "$work/shm")"
    failed=1
fi
exit $failed
