#!/usr/bin/env bash
# Builds the committed tree with AddressSanitizer and UndefinedBehaviorSanitizer
# in a scratch directory and runs the googletest suite there.
#   contrib/sanitize.sh [gtest arguments]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/gpumem-sanitize.XXXXXX)
trap 'rm -rf "$dir"' EXIT

flags="-g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer"
git clone -q "$top" "$dir/src"
cd "$dir/src"
./autogen.sh >/dev/null
./configure -q CFLAGS="$flags" CXXFLAGS="$flags" \
    LDFLAGS="-fsanitize=address,undefined"
make -s -j2
make -s -C test/gtest gtest
cd test/gtest
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ./gtest "$@"
