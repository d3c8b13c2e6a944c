#!/usr/bin/env bash
# Builds the committed tree with sanitizers in a scratch directory and runs
# the googletest suite there.
#   contrib/sanitize.sh [gtest arguments]         AddressSanitizer and
#                                                 UndefinedBehaviorSanitizer
#   contrib/sanitize.sh --tsan [gtest arguments]  ThreadSanitizer, on the
#                                                 suites of the memory core,
#                                                 the drivers and gpumem.h
#                                                 unless a filter is given
# UCX itself is not instrumented: what the sanitizers judge is gpumem's
# code, and the calls UCX makes into it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=asan
if [ "${1:-}" = "--tsan" ]; then
    mode=tsan
    shift
fi

dir=$(mktemp -d /tmp/gpumem-sanitize.XXXXXX)
trap 'rm -rf "$dir"' EXIT

case $mode in
asan)
    sanitizers=address,undefined
    ;;
tsan)
    sanitizers=thread
    # The core (mem_*), its stress tests, the drivers (emu_*, driver_*)
    # and the public calls (api)
    [ $# -gt 0 ] || set -- --gtest_filter='mem_*:emu_*:driver_*:api.*'
    # UCM's madvise hook runs in a thread's exit (glibc frees its stack),
    # after ThreadSanitizer has let go of the thread: off, not under test
    export UCX_MEM_MMAP_HOOK_MODE=none
    ;;
esac

flags="-g -O1 -fsanitize=$sanitizers -fno-omit-frame-pointer"
git clone -q "$top" "$dir/src"
cd "$dir/src"
./autogen.sh >/dev/null
./configure -q CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="-fsanitize=$sanitizers"
make -s -j2
make -s -C test/gtest gtest
cd test/gtest
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ./gtest "$@"
