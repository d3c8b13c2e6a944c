# Device buffers between MPI ranks that the kernel refuses each other's
# descriptors, in one of two settings (the second argument):
#   seccomp (the default): pidfd_getfd(2) denied by a seccomp filter, as
#     container runtimes' default profiles deny it (test/denied/deny_syscall
#     runs mpirun, and so both ranks, so);
#   yama: Yama's ptrace_scope 1 (Ubuntu's default), where only an ancestor
#     may take a process's descriptors and sibling ranks may not; the ranks
#     run without CAP_SYS_PTRACE, which lets root past it. Needs a kernel
#     with Yama and root: make check-vm runs it in the soft-RoCE VM.
#   pidns: each rank in a PID namespace of its own (unshare --pid --fork),
#     sharing the rest and /proc: each is process 1 to itself, and known to
#     the other, and to the emulated GPUs' shared state, by its pid in
#     /proc. Then a job without the setting must run on the same state, as
#     the ranks left it. Needs root. (Ranks each with a /proc of its own
#     cannot share the emulated GPUs, whose VRAM a newcomer opens through
#     /proc/<pid>/fd.)
# Two ranks of Open MPI over pml ucx ping-pong device buffers from
# gpumem_device_malloc, every byte checked.
#   - emu driver: the peer's memory is opened by path, not taken by pidfd:
#     gpumemipc moves the large buffers zero-copy as without the setting
#   - cuda driver (on the emulated CUDA: test/emu/cuda/run.sh runs this with
#     its machine set up): the peer's descriptor broker hands its fd over a
#     Unix socket: zero-copy as without the setting, nothing said. Then with
#     the broker's sockets denied too (as between network namespaces): the
#     peer's memory cannot be imported, the buffers are staged, each rank
#     says why once (naming the setting), not once per message, and nothing
#     is fatal
# Both first run without the setting, which must be zero-copy.
#   test_denied.sh BUILDDIR [seccomp|yama]
set -u
build=$1
setting=${2:-seccomp}
deny=$build/test/denied/deny_syscall
work=$(mktemp -d /tmp/gpumem-denied.XXXXXX)
yama=/proc/sys/kernel/yama/ptrace_scope
yama_was=
cleanup() {
    [ -n "$yama_was" ] && echo "$yama_was" >"$yama"
    rm -rf "$work"
}
trap cleanup EXIT
failed=0
# On the build's emulated GPUs, as gpumem-emu runs a program (the cuda
# driver's machine is the caller's)
. "$(dirname "$0")/../emu/emu_env.sh"
driver=$UCX_GPUMEM_DRIVER
what="device buffers under $setting ($driver driver)"

# The setting's commands before mpirun and before each rank, and what a
# rank says of it
unreachable_env=()
rank_tls=posix,gpumemcpy,gpumemipc
setting_tls=$rank_tls
rank_under=()
setting_rank_under=()
case $setting in
seccomp)
    under=("$deny" pidfd_getfd)
    reason="pidfd_getfd: Operation not permitted: a seccomp filter"
    if ! "$deny" pidfd_getfd true 2>"$work/why"; then
        echo "SKIP: $what: no seccomp filter here ($(cat "$work/why"))"
        exit 0
    fi
    ;;
yama)
    under=(setpriv --bounding-set=-sys_ptrace)
    reason="pidfd_getfd: Operation not permitted: .*Yama's ptrace_scope 1"
    # UCX's cma component lets any process trace the ranks under Yama
    # (PR_SET_PTRACER_ANY), which pidfd_getfd then passes: left out
    unreachable_env=(-x UCX_MODULES=^cma)
    if [ ! -w "$yama" ]; then
        echo "SKIP: $what: no Yama here, or not root ($yama)"
        exit 0
    fi
    ;;
pidns)
    under=()
    setting_rank_under=(unshare --pid --fork)
    # UCX's posix transport refuses a peer of another PID namespace (its
    # own rule): tcp carries the messages
    setting_tls=tcp,gpumemcpy,gpumemipc
    if ! unshare --pid --fork true 2>"$work/why"; then
        echo "SKIP: $what: no PID namespace here ($(cat "$work/why"))"
        exit 0
    fi
    ;;
*)
    echo "test_denied.sh: unknown setting $setting" >&2
    exit 2
    ;;
esac

export UCX_GPUMEM_EMU_SHM_DIR=$work/shm UCX_GPUMEM_EMU_VRAM_SIZE=1g
mkdir "$work/shm"

if [ ! -x "$build/examples/gpumem_mpi_pingpong" ]; then
    echo "SKIP: $what: built without Open MPI (install libopenmpi-dev)"
    exit 0
fi

# run NAME [COMMAND...]: the ping-pong under COMMAND, with mpirun's options
# $mpi_env, its output in $work/NAME.log
mpi_env=()
run() {
    local name=$1
    shift
    timeout -k 10 300 "$@" mpirun --allow-run-as-root -np 2 \
        ${mpi_env[@]+"${mpi_env[@]}"} \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self -x UCX_TLS=$rank_tls \
        -x UCX_GPUMEM_EMU_SHM_DIR -x UCX_GPUMEM_EMU_VRAM_SIZE \
        -x UCX_GPUMEM_DRIVER -x LD_LIBRARY_PATH \
        -x LD_PRELOAD="$build/src/uct/gpumem/.libs/libuct_gpumem.so" \
        ${rank_under[@]+"${rank_under[@]}"} \
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

# Without the setting first: where the ranks' UCX is not the one this build
# is for (a UCX of the version matrix beside the system's Open MPI), the
# plugin's version guard refuses it and nothing here can be asserted
name=control-$driver
if ! run "$name"; then
    fail "the ping-pong without the setting ($driver driver)"
    exit 1
elif ! zero_copy; then
    version=$(ucx_info -v 2>/dev/null |
              sed -n -e 's/^# Library version: //p' -e 's/^# Version //p' |
              head -n 1)
    echo "SKIP: $what: gpumemipc moved nothing without the setting either" \
         "(the ranks' UCX does not take this build's plugin; ucx_info" \
         "here is ${version:-unknown})"
    exit 0
fi

if [ "$setting" = yama ]; then
    yama_was=$(cat "$yama")
    echo 1 >"$yama"
fi

name=$setting-$driver
rank_under=(${setting_rank_under[@]+"${setting_rank_under[@]}"})
rank_tls=$setting_tls
if ! run "$name" ${under[@]+"${under[@]}"}; then
    fail "the ping-pong under $setting ($driver driver)"
elif ! zero_copy; then
    fail "gpumemipc moved nothing under $setting ($driver driver)"
elif grep -q "cannot import the memory of process" "$work/$name.log"; then
    fail "a rank could not import although the descriptors are passed" \
         "($driver driver)"
elif [ "$driver" = emu ]; then
    echo "PASS: zero-copy under $setting (emu driver: memory opened by path)"
else
    echo "PASS: zero-copy under $setting ($driver driver: the descriptor" \
         "broker)"
fi

name=unreachable-$setting-$driver
mpi_env=(${unreachable_env[@]+"${unreachable_env[@]}"})
if [ "$setting" = pidns ]; then
    # Each rank is its own namespace's process 1: a job after them, without
    # namespaces, attaches to the emulated GPUs' state they shared
    name=after-$setting-$driver
    mpi_env=()
    rank_under=()
    rank_tls=posix,gpumemcpy,gpumemipc
    if ! run "$name"; then
        fail "a job after the ranks of separate PID namespaces" \
             "($driver driver)"
    elif ! zero_copy; then
        fail "gpumemipc moved nothing in the job after them ($driver driver)"
    else
        echo "PASS: a job after the ranks of separate PID namespaces" \
             "attaches to their GPUs' state ($driver driver)"
    fi
elif [ "$driver" = emu ]; then
    : # Its memory is opened by path: no broker to take away
elif ! run "$name" "${under[@]}" "$deny" unix_seqpacket; then
    fail "the ping-pong under $setting with the descriptor broker denied" \
         "($driver driver)"
else
    # The line of each rank that could not import: "[time]
    # [host:pid:thread] ... cannot import the memory of process N: ..."
    said=$(grep "cannot import the memory of process" "$work/$name.log")
    per_process=$(sed -n 's/^\[[^]]*\] \[[^:]*:\([0-9]*\).*/\1/p' <<<"$said" |
                  sort | uniq -c | awk '$1 > 1')
    if zero_copy; then
        fail "gpumemipc moved bytes it cannot have mapped ($driver driver)"
    elif ! grep -q "$reason" <<<"$said"; then
        fail "no rank said why: '$reason'"
    elif [ -n "$per_process" ]; then
        fail "a rank said why more than once: $per_process"
    elif grep -q "Fatal\|failed to unpack" "$work/$name.log"; then
        fail "a remote key that could not be imported failed UCP"
    else
        echo "PASS: staged under $setting with the descriptor broker denied" \
             "($driver driver), the reason said once per rank"
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
