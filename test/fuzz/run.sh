#!/usr/bin/env bash
# Builds the libFuzzer target for the wire-form unpacker (packed remote keys
# from peers) and runs it; not part of "make".
#
#   test/fuzz/run.sh [--build-only] [SECONDS]      (default 600 seconds)
#
# Needs clang and libclang-rt-14-dev (Debian) and a configured build tree,
# whose config.h and UCX paths it uses ($GPUMEM_BUILD_DIR, default the
# repository). Builds into test/fuzz/build/, keeps the corpus it grows in
# test/fuzz/build/corpus (seeded with valid keys), and leaves libFuzzer's
# report in test/fuzz/build/fuzz.log; a crash input lands in test/fuzz/build/.
# Exits non-zero when the fuzzer found something.
set -euo pipefail

OUT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/build
# shellcheck source=test/fuzz/fuzz_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_reg_wire \
    "$TOP/src/uct/gpumem/reg/reg_wire.c" \
    "$TOP/src/uct/gpumem/reg/reg_view.c" \
    "$TOP/src/uct/gpumem/reg/reg_domain.c"
[ "$build_only" = 1 ] && exit 0

# Seeds: valid keys, little-endian (see src/uct/gpumem/reg/reg_wire.c)
le() {  # VALUE BYTES
    local v=$1 i
    for ((i = 0; i < $2; ++i)); do
        printf "\\x$(printf %02x $(((v >> (8 * i)) & 255)))"
    done
}
seed() {  # FILE RKEY ADDRESS SIZE DEVICE
    {
        printf '\x01'
        le "$2" 4
        le "$3" 8
        le "$4" 8
        printf '%s' "$5"
        head -c $((64 - ${#5})) /dev/zero
    } >"$CORPUS/$1"
}
seed seed-mlx5 0x1234 0x7f0000001000 65536 mlx5_0
seed seed-rxe 0xabcdef 0x4000 4096 rxe0
seed seed-empty 1 0 0 a
seed seed-top 7 -4096 4095 rocep65s0f0
seed seed-longname 9 0x1000 1 "$(printf 'n%.0s' $(seq 63))"

fuzz_run fuzz_reg_wire
