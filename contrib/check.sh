#!/usr/bin/env bash
# The whole test suite: sets up a fresh machine, builds gpumem, runs the
# googletest suite ("make check") and checks the source distribution
# ("make distcheck").
set -euo pipefail
cd "$(dirname "$0")/.."

./contrib/setup.sh
./contrib/build.sh
make -j2 check
make -j2 distcheck
