#!/usr/bin/env bash
# Builds the libFuzzer target for the page map decoder (the physical ranges
# of system memory that bus gives) and runs it; not part of "make". Seeded
# with present pages of 4 KiB, contiguous and not.
#
#   test/fuzz/run_pagemap.sh [--build-only] [SECONDS]   (default 600 seconds)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/pagemap/ (corpus, fuzz.log, crash inputs). Exits non-zero
# when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/pagemap
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_pagemap "$TOP/src/uct/gpumem/mem/gpumem_phys.c"

# A page size exponent, then 64-bit entries: bit 63 present, frame in 0-54
python3 - "$CORPUS" <<'PY'
import struct, sys
present = 1 << 63
seeds = {
    'seed-contiguous': [present | 0x100, present | 0x101, present | 0x102],
    'seed-scattered': [present | 0x200, present | 0x100, present | 0x300],
    'seed-absent': [present | 0x100, 0x101],
}
for name, entries in seeds.items():
    with open(sys.argv[1] + '/' + name, 'wb') as f:
        f.write(bytes([12]) + b''.join(struct.pack('<Q', e) for e in entries))
PY
[ "$build_only" = 1 ] && exit 0
fuzz_run fuzz_pagemap
