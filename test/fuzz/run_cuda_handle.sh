#!/usr/bin/env bash
# Builds the libFuzzer target for the cuda driver's memory handle decoder
# and runs it; not part of "make". Needs no GPU and no CUDA: the wire form
# is the driver's own. Seeded with a VMM handle and a legacy IPC handle of
# this user.
#
#   test/fuzz/run_cuda_handle.sh [--build-only] [SECONDS]   (default 600 s)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/cuda_handle/ (corpus, fuzz.log, crash inputs). Exits
# non-zero when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/cuda_handle
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_cuda_handle "$TOP/src/uct/gpumem/driver/cuda/cuda_handle.c" \
    "$TOP/src/uct/gpumem/util/gpumem_proc.c"

# gpumem_cuda_handle_t's fields in order, in this machine's byte order
python3 - "$CORPUS" "$(id -u)" <<'PY'
import struct, sys
fmt = '=IHHIiiIQQQQ64s'
magic, uid, mib2 = 0x43474d55, int(sys.argv[2]), 2 << 20
seeds = {
    'seed-vmm': struct.pack(fmt, magic, 3, 1, uid, 4242, 17, 0, 4 * mib2,
                            mib2, 1, 0x0123456789abcdef, bytes(64)),
    'seed-ipc': struct.pack(fmt, magic, 3, 2, uid, 4242, -1, 0, 1 << 20, 0,
                            99, 0, bytes(range(64))),
}
for name, data in seeds.items():
    with open(sys.argv[1] + '/' + name, 'wb') as f:
        f.write(data)
PY
[ "$build_only" = 1 ] && exit 0
fuzz_run fuzz_cuda_handle
