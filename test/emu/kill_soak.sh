#!/usr/bin/env bash
# The emulated GPU's kill soak: processes that allocate, free and import in
# a loop, each killed at a random moment, while a keeper holds memory; after
# each kill the state must be whole and the keeper's memory untouched.
#
#   test/emu/kill_soak.sh [BUILDDIR] [SECONDS]   (default . and 300)
#
# Runs the disabled googletest case emu_kill_soak.* of BUILDDIR's
# test/gtest/gtest (built by "make check"); prints the kills and the
# invariant failures.
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
seconds=${2:-300}
gtest=$build/test/gtest/gtest

if [ ! -x "$gtest" ]; then
    echo "kill_soak: no $gtest (run make check first)" >&2
    exit 1
fi
cd "$build/test/gtest"
GPUMEM_EMU_SOAK_SECONDS=$seconds "$gtest" --gtest_also_run_disabled_tests \
    --gtest_filter='emu_kill_soak.*'
