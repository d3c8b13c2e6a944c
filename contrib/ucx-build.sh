#!/usr/bin/env bash
# Builds and installs one UCX source tree into the set-up cache, once.
#
# Usage: contrib/ucx-build.sh UCX_SRC_DIR
#
# Prints the installation prefix on its last line. The prefix is keyed by
# the tree's version and commit (or, outside git, a hash of its sources),
# and by the configure flags below, so a changed tree or a changed recipe
# never reuses a stale build. The build is the release configuration a
# user makes (contrib/configure-release) with the headers a component
# needs, multi-threading and verbs, and without CUDA/ROCm (gpumem brings
# its own GPU memory).
set -euo pipefail

GPUMEM_CACHE_DIR=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
UCX_BUILD_FLAGS=(--enable-devel-headers --enable-mt --with-verbs
                 --without-cuda --without-rocm --without-java --without-go
                 --disable-doxygen-doc)
JOBS=${GPUMEM_JOBS:-2}

log() { echo "ucx-build: $*" >&2; }

[ $# -eq 1 ] || { echo "usage: $0 UCX_SRC_DIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
[ -f "$src/configure.ac" ] && [ -f "$src/src/uct/base/uct_md.h" ] || {
    log "$src is not a UCX source tree (no configure.ac, src/uct/base/uct_md.h)"
    exit 1
}

# configure.ac: define([ucx_ver_major], 1) and so on
version=$(sed -n 's/^define(\[ucx_ver_\(major\|minor\|patch\)\], *\([0-9]*\)).*/\2/p' \
              "$src/configure.ac" | paste -s -d.)
[ -n "$version" ] || { log "no version in $src/configure.ac"; exit 1; }

# The commit, where the tree is a clean git checkout of its own; else a
# hash of every file UCX's build reads
if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ] &&
   [ -z "$(git -C "$src" status --porcelain 2>/dev/null)" ]; then
    tree_id=$(git -C "$src" rev-parse HEAD)
else
    tree_id=$(cd "$src" && find . -path ./.git -prune -o -type f \
                  -not -name '*.o' -not -name '*.lo' -not -name '*.la' \
                  -not -name '*.so*' -print0 | LC_ALL=C sort -z |
                  xargs -0 sha256sum | sha256sum | cut -c1-40)
fi
recipe_id=$(echo "${UCX_BUILD_FLAGS[*]}" | sha256sum | cut -c1-8)
prefix=$GPUMEM_CACHE_DIR/ucx-build/$version-${tree_id:0:12}-$recipe_id

if [ -f "$prefix/.complete" ]; then
    log "UCX $version (${tree_id:0:12}) cached in $prefix"
    echo "$prefix"
    exit 0
fi

# Build in a private copy, so that the given tree stays as it was.
work=$prefix.work
rm -rf "$prefix" "$work"
mkdir -p "$work"
log "building UCX $version (${tree_id:0:12}) from $src into $prefix"
tar -C "$src" --exclude=.git -cf - . | tar -C "$work" -xf -
(
    cd "$work"
    [ -x configure ] || ./autogen.sh >autogen.log 2>&1
    ./contrib/configure-release --prefix="$prefix" "${UCX_BUILD_FLAGS[@]}" \
        >configure.log 2>&1
    make -j"$JOBS" >make.log 2>&1
    make install >install.log 2>&1
) || {
    log "UCX $version failed to build; logs in $work"
    exit 1
}
echo "$src ${tree_id}" >"$prefix/.source"
touch "$prefix/.complete"
rm -rf "$work"
log "UCX $version installed in $prefix"
echo "$prefix"
