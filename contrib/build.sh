#!/usr/bin/env bash
# Builds gpumem in the source tree (autogen, configure, make -j2).
# Extra arguments go to configure; it is rerun only when they change.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=.configure-args
args="$*"
if [ ! -x configure ]; then
    ./autogen.sh
fi
if [ ! -f config.status ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$args" ]; then
    ./configure "$@"
    echo "$args" >"$stamp"
fi
make -j2
