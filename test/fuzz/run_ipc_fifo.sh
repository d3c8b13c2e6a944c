#!/usr/bin/env bash
# Builds the libFuzzer target for the gpumemipc receive FIFO's readers of
# what a peer wrote into shared memory (its control block, a slot's
# header) and runs it; not part of "make". Seeded with a FIFO of 64 slots
# and a slot of a 24-byte message of id 3.
#
#   test/fuzz/run_ipc_fifo.sh [--build-only] [SECONDS]   (default 600 seconds)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/ipc_fifo/ (corpus, fuzz.log, crash inputs). Exits non-zero
# when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/ipc_fifo
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_ipc_fifo "$TOP/src/uct/gpumem/ipc/ipc_fifo.c" \
    "$TOP/src/uct/gpumem/util/gpumem_proc.c"

# The mapping's size, then the control block and a slot's header as
# ipc_fifo.h lays them out on x86_64 (cache lines of 64 bytes)
python3 - "$CORPUS" <<'PY'
import struct, sys
slots, elem = 64, 8192
mapped = 4096 + slots * elem
ctl = bytearray(320)
struct.pack_into('<QIIiI', ctl, 128, 0x6770756d69706331, slots, elem, 4242, 8)
struct.pack_into('<H5s', ctl, 152, 1, b'\0a1b2')
hdr = struct.pack('<QIBBH', 1, 24, 3, 0, 0)
with open(sys.argv[1] + '/seed-fifo', 'wb') as f:
    f.write(struct.pack('<I', mapped) + bytes(ctl) + hdr)
PY
[ "$build_only" = 1 ] && exit 0
fuzz_run fuzz_ipc_fifo
