#!/bin/sh
# The plugin on a machine without GPU, and on emulated GPUs: UCX sees no
# gpumem GPU memory domain where UCX_GPUMEM_DRIVER=auto finds no GPU (as
# UCX's own CUDA transports), and says at info level how to ask for
# emulated ones; gpumem-emu runs a program on the emulator's GPUs; the emu
# driver asked for where the emulator is not found says why.
#
# Usage: test_gpumem_emu.sh BUILDDIR SRCDIR
#
# See file LICENSE for terms.

build=$1
srcdir=$2
preload=$build/src/tools/gpumem-preload
runner=$build/emu/gpumem-emu
. "$srcdir/test/tools/test_report.sh"

if ! command -v ucx_info >/dev/null; then
    skip "gpumem-emu (no ucx_info: install ucx-utils)"
    exit 0
fi
if [ -e /dev/nvidiactl ]; then
    skip "gpumem-emu against a machine without GPU (this one has one)"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem_emu_test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
for var in UCX_GPUMEM_DRIVER UCX_GPUMEM_TOPO_XML GPUMEM_EMU_DIR \
           LD_LIBRARY_PATH; do
    unset "$var"
done
export GPUMEM_PLUGIN=$build/src/uct/gpumem/.libs/libuct_gpumem.so
export UCX_GPUMEM_EMU_SHM_DIR=$tmp UCX_WARN_UNUSED_ENV_VARS=n

# ucx_info -d's memory domains and transports of gpumem's GPUs
gpu_resources() {
    grep -E '^# (Memory domain: gpumem$| +Transport: gpumem(cpy|ipc))' "$1"
}

# Without GPU: the network's memory domains only, and why at info level
UCX_LOG_LEVEL=info "$preload" ucx_info -d >"$tmp/auto.out" 2>&1
if [ -n "$(gpu_resources "$tmp/auto.out")" ]; then
    fail "auto without GPU offers no GPU memory domain" \
         "$(gpu_resources "$tmp/auto.out" | head -n 1)"
elif ! grep -q "no GPU (cuda: .*UCX_GPUMEM_DRIVER=emu, or 'gpumem-emu COMMAND'" \
        "$tmp/auto.out"; then
    fail "auto without GPU says how to ask for emulated GPUs" \
         "$(grep gpumem "$tmp/auto.out" | head -n 1)"
else
    pass "auto without GPU offers no GPU memory domain, saying why"
fi

# gpumem-emu: the emulated GPUs, and the emulator's settings
GPUMEM_EMU_DIR=$build/emu/.libs "$runner" "$preload" ucx_info -d \
    >"$tmp/emu.out" 2>&1
if [ "$(gpu_resources "$tmp/emu.out" | grep -c .)" -lt 3 ]; then
    fail "gpumem-emu gives the plugin emulated GPUs" \
         "$(head -n 1 "$tmp/emu.out")"
else
    pass "gpumem-emu gives the plugin emulated GPUs (gpumemcpy, gpumemipc)"
fi
GPUMEM_EMU_DIR=$build/emu/.libs "$runner" --driver emu "$preload" \
    ucx_info -c >"$tmp/config.out" 2>&1
if grep -q '^UCX_GPUMEM_EMU_VRAM_SIZE=' "$tmp/config.out" &&
   grep -q '^UCX_GPUMEM_DRIVER=emu' "$tmp/config.out"; then
    pass "ucx_info -c under gpumem-emu --driver emu lists the emulator's settings"
else
    fail "ucx_info -c under gpumem-emu --driver emu lists the emulator's settings"
fi

# The driver: cuda where the emulated libcuda.so.1 is built, so that what a
# CUDA program allocates is what the plugin's driver knows
GPUMEM_EMU_DIR=$build/emu/.libs "$runner" "$preload" ucx_info -c \
    >"$tmp/config.out" 2>&1
if [ -e "$build/emu/.libs/libcuda.so.1" ]; then
    want=cuda
else
    want=emu
fi
if grep -q "^UCX_GPUMEM_DRIVER=$want\$" "$tmp/config.out"; then
    pass "gpumem-emu runs the plugin's $want driver by default"
else
    fail "gpumem-emu runs the plugin's $want driver by default" \
         "$(grep '^UCX_GPUMEM_DRIVER=' "$tmp/config.out")"
fi

. "$srcdir/test/emu/test_gpumem_emu_machine.sh"

# The emulator's machine is loaded where it is asked for only: not where
# auto runs, though it is on LD_LIBRARY_PATH
UCX_GPUMEM_DRIVER=auto LD_LIBRARY_PATH=$build/emu/machine/.libs \
    LD_DEBUG=libs "$preload" ucx_info -d >"$tmp/loaded.out" 2>&1
if grep -q 'calling init: .*libgpumem_emu' "$tmp/loaded.out"; then
    fail "auto loads no emulator" "$(grep -m 1 libgpumem_emu "$tmp/loaded.out")"
elif ! grep -q 'calling init: .*libuct_gpumem' "$tmp/loaded.out"; then
    fail "auto loads no emulator" "the plugin was not loaded either"
else
    pass "auto loads no emulator, though it is on LD_LIBRARY_PATH"
fi

# The emu driver asked for where its library is not found (unless it is
# installed where the plugin looks)
installed=$(sed -n 's/^emudir=\${GPUMEM_EMU_DIR:-\(.*\)}$/\1/p' "$runner")
UCX_GPUMEM_DRIVER=emu "$preload" ucx_info -d >"$tmp/missing.out" 2>&1
if [ -e "$installed/libgpumem_emu.so.0" ]; then
    skip "the emu driver without the emulator (installed in $installed)"
elif [ -z "$(gpu_resources "$tmp/missing.out")" ] &&
   grep -q "UCX_GPUMEM_DRIVER=emu: no GPU: the emulator is not installed" \
       "$tmp/missing.out"; then
    pass "the emu driver without the emulator is an error saying why"
else
    fail "the emu driver without the emulator is an error saying why" \
         "$(grep -m 1 gpumem "$tmp/missing.out")"
fi

# The runner's own errors
"$runner" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] && pass "gpumem-emu without a command exits 2" ||
    fail "gpumem-emu without a command exits 2" "exit status $rc"
GPUMEM_EMU_DIR=$tmp/none "$runner" true 2>"$tmp/none.err"
rc=$?
if [ $rc -eq 1 ] && grep -q "no emulator in $tmp/none" "$tmp/none.err"; then
    pass "gpumem-emu without the emulator exits 1 naming where it looked"
else
    fail "gpumem-emu without the emulator exits 1 naming where it looked" \
         "exit status $rc"
fi
exit $failed
