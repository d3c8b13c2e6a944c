# gpumem-emu's machine (sourced by test_gpumem_emu.sh, with $runner, $build,
# $srcdir and $tmp): the GPUs it is asked for, as the emulated CUDA counts
# them; the same machine for every process started the same way, at once
# or under another gpumem-emu; and its refusals, each saying why.

emu() { GPUMEM_EMU_DIR=$build/emu/.libs TMPDIR=$tmp/run "$runner" "$@"; }
mkdir -p "$tmp/run"

# The number of devices the emulated CUDA runtime gives a program
device_count() {
    emu "$@" python3 -c '
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
n = ctypes.c_int(-1)
print(rt.cudaGetDeviceCount(ctypes.byref(n)), n.value)'
}

if [ ! -e "$build/emu/.libs/libcudart.so.13" ] || ! command -v python3 \
        >/dev/null; then
    skip "gpumem-emu's GPUs counted by the emulated CUDA runtime (no\
 emulated libcudart.so.13, or no python3)"
else
    for args in "" "--gpus 1" "--gpus 4" "--gpus 16" \
                "--topology $srcdir/test/topologies/hwloc-nvidiaDGX2-16xV100-nvswitch.xml"; do
        case $args in
        "")          want=2 ;;
        --gpus*)     want=${args#--gpus } ;;
        --topology*) want=16 ;;
        esac
        # shellcheck disable=SC2086
        got=$(device_count $args 2>&1)
        if [ "$got" = "0 $want" ]; then
            pass "gpumem-emu ${args:-(built-in machine)}: $want CUDA devices"
        else
            fail "gpumem-emu ${args:-(built-in machine)}: $want CUDA devices" \
                 "cudaGetDeviceCount gave: $got"
        fi
    done
fi

# One machine for the processes started alike, at once (as mpirun's ranks
# start), and for a gpumem-emu under another
rm -rf "$tmp/run"/gpumem-emu-*
for i in 1 2 3 4; do
    emu --gpus 3 sh -c 'echo "$GPUMEM_EMU_MACHINE"' >"$tmp/rank$i" 2>&1 &
done
wait
dirs=$(cat "$tmp"/rank[1-4] | sort -u)
made=$(ls -d "$tmp/run"/gpumem-emu-*/* 2>/dev/null)
if [ "$(echo "$dirs" | grep -c .)" -eq 1 ] && [ "$dirs" = "$made" ] &&
   [ -f "$dirs/machine.facts" ] && [ -d "$dirs/shm" ]; then
    pass "gpumem-emu started four times at once writes one machine"
else
    fail "gpumem-emu started four times at once writes one machine" \
         "they ran on: $(echo $dirs); written: $(echo $made)"
fi
inner=$(emu --gpus 3 "$runner" sh -c 'echo "$GPUMEM_EMU_MACHINE"' 2>&1)
if [ "$inner" = "$dirs" ]; then
    pass "gpumem-emu under gpumem-emu runs on the outer one's machine"
else
    fail "gpumem-emu under gpumem-emu runs on the outer one's machine" \
         "$inner, not $dirs"
fi
other=$(emu --gpus 2 sh -c 'echo "$GPUMEM_EMU_MACHINE"' 2>&1)
if [ -n "$other" ] && [ "$other" != "$dirs" ]; then
    pass "gpumem-emu with other GPUs runs on another machine"
else
    fail "gpumem-emu with other GPUs runs on another machine" "$other"
fi

# Its refusals: the exit status, and a line saying why
expect_refusal() {
    local what=$1 status=$2 pattern=$3
    shift 3
    emu "$@" true >"$tmp/refusal.out" 2>&1
    rc=$?
    if [ $rc -eq "$status" ] && grep -q -- "$pattern" "$tmp/refusal.out"; then
        pass "gpumem-emu refuses $what"
    else
        fail "gpumem-emu refuses $what" \
             "exit status $rc: $(head -n 1 "$tmp/refusal.out")"
    fi
}
expect_refusal "--gpus 0" 1 "--gpus 0: not a number of GPUs from 1 to 16" \
    --gpus 0
expect_refusal "--gpus 17" 1 "--gpus 17: not a number of GPUs" --gpus 17
expect_refusal "--gpus x" 1 "--gpus x: not a number of GPUs" --gpus x
expect_refusal "two machines" 2 "--gpus and --topology name two machines" \
    --gpus 2 --topology "$srcdir/test/topologies/hwloc-nvidiaDGX2-16xV100-nvswitch.xml"
expect_refusal "a topology that is not a file" 1 "$tmp/none.xml: not a file" \
    --topology "$tmp/none.xml"
mkfifo "$tmp/fifo.xml"
expect_refusal "a FIFO for a topology" 1 "$tmp/fifo.xml: not a file" \
    --topology "$tmp/fifo.xml"
echo "<topology" >"$tmp/bad.xml"
expect_refusal "a topology that is not hwloc XML" 1 \
    "cannot write the emulated machine" --topology "$tmp/bad.xml"
expect_refusal "--driver nvidia" 2 "--driver nvidia: not cuda or emu" \
    --driver nvidia
expect_refusal "an unknown option" 2 "unknown option --cpus" --cpus 2

# Its directory of machines, where another user or a link could have put
# one: refused rather than used
mkdir -p "$tmp/link-target" "$tmp/linked"
ln -s "$tmp/link-target" "$tmp/linked/gpumem-emu-$(id -u)"
GPUMEM_EMU_DIR=$build/emu/.libs TMPDIR=$tmp/linked "$runner" true \
    >"$tmp/refusal.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "is not a directory of this user's" \
        "$tmp/refusal.out" && [ -z "$(ls "$tmp/link-target")" ]; then
    pass "gpumem-emu refuses a directory of machines that is a link"
else
    fail "gpumem-emu refuses a directory of machines that is a link" \
         "exit status $rc: $(head -n 1 "$tmp/refusal.out")"
fi
