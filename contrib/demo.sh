#!/usr/bin/env bash
# The main job: sets up a fresh machine, builds gpumem and shows its component
# loaded into the installed UCX.
set -euo pipefail
cd "$(dirname "$0")/.."

./contrib/setup.sh
./contrib/build.sh

plugin=$PWD/src/uct/gpumem/.libs/libuct_gpumem.so
echo
echo "== ucx_info -d with the gpumem plugin loaded =="
GPUMEM_PLUGIN=$plugin ./src/tools/gpumem-preload ucx_info -d |
    awk '/^# Memory domain: gpumem/ { show = 1 } show && /^#$|connection manager/ { exit } show'
echo
echo "== gpumem configuration (ucx_info -c) =="
GPUMEM_PLUGIN=$plugin ./src/tools/gpumem-preload ucx_info -c -f |
    grep -B1 -A0 '^UCX_GPUMEM_' || echo "(no UCX_GPUMEM_ variables)"
