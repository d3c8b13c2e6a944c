#!/usr/bin/env bash
# Builds the libFuzzer target for the descriptor broker's request and
# answer decoders and runs it; not part of "make". Seeded with a request
# and with an answer that hands a descriptor over and one that refuses.
#
#   test/fuzz/run_fd_wire.sh [--build-only] [SECONDS]   (default 600 s)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/fd_wire/ (corpus, fuzz.log, crash inputs). Exits
# non-zero when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/fd_wire
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_fd_wire "$TOP/src/uct/gpumem/util/gpumem_fd_wire.c"

# gpumem_fd_request_t and gpumem_fd_reply_t, in this machine's byte order
python3 - "$CORPUS" <<'PY'
import struct, sys
magic = 0x44464d47
seeds = {
    'seed-request': struct.pack('=IHHQQ', magic, 1, 0, 42, 2 << 20),
    'seed-reply-fd': struct.pack('=IHHiIQ', magic, 1, 0, 0, 0, 42),
    'seed-reply-enoent': struct.pack('=IHHiIQ', magic, 1, 0, 2, 0, 42),
}
for name, data in seeds.items():
    with open(sys.argv[1] + '/' + name, 'wb') as f:
        f.write(data)
PY
[ "$build_only" = 1 ] && exit 0
fuzz_run fuzz_fd_wire
