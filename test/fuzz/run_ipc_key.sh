#!/usr/bin/env bash
# Builds the libFuzzer target for the gpumemipc remote key decoder and runs
# it; not part of "make". Seeded with keys the test suite's packer makes.
#
#   test/fuzz/run_ipc_key.sh [--build-only] [SECONDS]   (default 600 seconds)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/ipc_key/ (corpus, fuzz.log, crash inputs). Exits non-zero
# when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build/ipc_key
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_ipc_key "$TOP/src/uct/gpumem/ipc/ipc_key.c"

# Seeds: a key packed by the library itself, via a tiny program
cat >"$OUT/seed.c" <<'C'
#include "config.h"
#include <uct/gpumem/ipc/ipc_key.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    static unsigned char buf[512];
    uct_gpumem_ipc_key_t key;
    FILE *f;
    memset(&key, 0, sizeof(key));
    key.uid = 1000; key.pid = 4242; key.machine = 0x1234567890abcdefull;
    key.gpu.bus = 3;
    key.alloc_address = 0x7f0000000000ull; key.alloc_size = 1 << 20;
    key.address = key.alloc_address + 4096; key.length = 65536;
    key.handle_len = 96; memset(key.handle, 0x5a, key.handle_len);
    uct_gpumem_ipc_key_pack(&key, buf);
    f = fopen(argv[argc - 1], "wb");
    fwrite(buf, 1, uct_gpumem_ipc_key_packed_size(), f);
    return fclose(f);
}
C
# shellcheck disable=SC2046
"$CC" -DHAVE_CONFIG_H -I"$TOP/src" -I"$TOP/include" -I"$BUILD" \
    $(makevar UCX_SRC_CPPFLAGS) $(makevar UCX_CFLAGS) \
    -o "$OUT/seed" "$OUT/seed.c" "$TOP/src/uct/gpumem/ipc/ipc_key.c" \
    $(makevar UCX_LIBS)
"$OUT/seed" "$CORPUS/seed-key"
[ "$build_only" = 1 ] && exit 0

fuzz_run fuzz_ipc_key
