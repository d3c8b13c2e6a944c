#!/usr/bin/env bash
# Builds the libFuzzer target for the gpumem_rc address decoders and runs
# it; not part of "make". Seeded with a RoCE and an InfiniBand address.
#
#   test/fuzz/run_rc_addr.sh [--build-only] [SECONDS]   (default 600 seconds)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/rc_addr/ (corpus, fuzz.log, crash inputs). Exits non-zero
# when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/rc_addr
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_rc_addr "$TOP/src/uct/gpumem/rc/rc_addr.c"

# Device address (version, flags, LID, GID), then endpoint address (QP
# number in 3 bytes, path MTU), as rc_addr.h lays them out
python3 - "$CORPUS" <<'PY'
import struct, sys
roce = bytes([1, 1]) + struct.pack('<H', 0) + \
       bytes(10) + b'\xff\xff' + bytes([10, 11, 0, 1])
ib = bytes([1, 0]) + struct.pack('<H', 7) + bytes(16)
qp = struct.pack('<I', 0x11 | (3 << 24))
for name, dev in (('seed-roce', roce), ('seed-ib', ib)):
    with open(sys.argv[1] + '/' + name, 'wb') as f:
        f.write(dev + qp)
PY
[ "$build_only" = 1 ] && exit 0
fuzz_run fuzz_rc_addr
