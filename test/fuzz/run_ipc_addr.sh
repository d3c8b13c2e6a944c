#!/usr/bin/env bash
# Builds the libFuzzer target for the gpumemipc interface address decoder
# and runs it; not part of "make". Seeded with an address of a process on
# GPU 0000:03:00.0.
#
#   test/fuzz/run_ipc_addr.sh [--build-only] [SECONDS]   (default 600 seconds)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/ipc_addr/ (corpus, fuzz.log, crash inputs). Exits non-zero
# when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/ipc_addr
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_ipc_addr "$TOP/src/uct/gpumem/ipc/ipc_addr.c"

# pid, uid, interface id, PCI domain (little-endian, as on x86_64), bus,
# device and function, the receive FIFO's descriptor, the device of /proc,
# as ipc_addr.h lays them out
python3 - "$CORPUS" <<'PY'
import struct, sys
addr = struct.pack('<iIIHBBiI', 4242, 1000, 7, 0, 3, 0 << 3 | 0, 12, 0x17)
with open(sys.argv[1] + '/seed-addr', 'wb') as f:
    f.write(addr)
PY
[ "$build_only" = 1 ] && exit 0
fuzz_run fuzz_ipc_addr
