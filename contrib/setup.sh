#!/usr/bin/env bash
# Prepares a Debian 12 machine to build, test and run gpumem (run as root).
#
# Installs the Debian packages the build, tests, demo and benchmarks need,
# and unpacks the UCX source package matching the installed UCX, whose
# internal headers the plugin compiles against, and Open MPI's, which the
# OSU tests build with CUDA. Running it again does nothing when everything
# is in place.
set -euo pipefail

GPUMEM_CACHE_DIR=${GPUMEM_CACHE_DIR:-/var/cache/gpumem}
SRC_LIST=/etc/apt/sources.list.d/gpumem-deb-src.sources

PACKAGES=(
    build-essential autoconf automake libtool pkg-config
    libucx-dev ucx-utils
    libhwloc-dev hwloc bzip2
    libibverbs-dev rdma-core ibverbs-utils
    libgtest-dev
    openmpi-bin libopenmpi-dev libpmix-dev libevent-dev
    dpkg-dev xz-utils
    graphviz python3 gnuplot-nox
    qemu-system-x86 debootstrap cpio kmod zstd
    clang libclang-rt-14-dev
)

log() { echo "setup: $*"; }

missing_packages() {
    local pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
            grep -q '^install ok installed$' || echo "$pkg"
    done
}

# Print "URI SUITE SIGNED_BY" of the machine's main Debian "deb" entry,
# from deb822 sources or the one-line sources.list format.
debian_deb_entry() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        awk '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && comps ~ /(^| )main( |$)/ &&
                    uri != "" && suite != "" && !done) {
                    print uri, suite, (sig == "" ? "-" : sig); done = 1
                }
                types = uri = suite = comps = sig = ""
            }
            /^[[:space:]]*#/ { next }
            /^[[:space:]]*$/ { flush(); next }
            /^Types:/      { $1 = ""; types = substr($0, 2) }
            /^URIs:/       { uri = $2 }
            /^Suites:/     { for (i = 2; i <= NF; i++)
                                 if ($i !~ /-(updates|security|backports)$/) {
                                     suite = $i; break
                                 } }
            /^Components:/ { $1 = ""; comps = $0 }
            /^Signed-By:/  { sig = $2 }
            END { flush() }
        ' "$f" | head -n 1
    done
    if [ -r /etc/apt/sources.list ]; then
        awk '$1 == "deb" && $0 ~ / main/ {
                 for (i = 2; i <= NF; i++) if ($i !~ /^\[/) break
                 if ($(i + 1) !~ /-(updates|security|backports)$/) {
                     print $i, $(i + 1), "-"; exit
                 }
             }' /etc/apt/sources.list
    fi
}

ensure_deb_src() {
    local entry uri suite sig
    if [ -e "$SRC_LIST" ] || grep -rqsE '^(deb-src|Types:.*deb-src)' \
            /etc/apt/sources.list /etc/apt/sources.list.d/; then
        return 1
    fi
    entry=$(debian_deb_entry | head -n 1)
    if [ -z "$entry" ]; then
        log "no Debian 'deb' entry with component main found in apt sources" >&2
        exit 1
    fi
    read -r uri suite sig <<<"$entry"
    log "adding deb-src entry: $uri $suite main"
    {
        echo "Types: deb-src"
        echo "URIs: $uri"
        echo "Suites: $suite"
        echo "Components: main"
        [ "$sig" = "-" ] || echo "Signed-By: $sig"
    } >"$SRC_LIST"
    return 0
}

install_packages() {
    local missing
    missing=$(missing_packages)
    [ -n "$missing" ] || return 0
    log "installing:" $missing
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# The upstream version of an installed package
upstream_version() {
    local version
    version=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || return 1
    version=${version%-*}
    echo "${version#*:}"
}

# Unpacks <source>_<upstream>.orig.tar.* of the installed version of the
# binary package BINARY into $GPUMEM_CACHE_DIR/<source>-<upstream>, unless
# the file MARKER is there already.
#   fetch_source SOURCE BINARY MARKER
fetch_source() {
    local source=$1 binary=$2 marker=$3 version upstream dest tmp orig
    version=$(dpkg-query -W -f='${source:Version}' "$binary")
    upstream=$(upstream_version "$binary")
    dest=$GPUMEM_CACHE_DIR/$source-$upstream
    if [ -f "$dest/$marker" ]; then
        log "$source $upstream source present in $dest"
        return 0
    fi
    if ensure_deb_src ||
       ! apt-cache showsrc "$source=$version" >/dev/null 2>&1; then
        apt-get update -q
    fi
    tmp=$(mktemp -d)
    chmod 755 "$tmp"  # apt fetches as _apt
    trap 'rm -rf "$tmp"' RETURN
    (cd "$tmp" && apt-get source -q --download-only "$source=$version")
    orig=$(ls "$tmp"/"$source"_*.orig.tar.* | head -n 1)
    mkdir -p "$tmp/x"
    tar -xf "$orig" -C "$tmp/x"
    mkdir -p "$GPUMEM_CACHE_DIR"
    rm -rf "$dest"
    mv "$tmp"/x/* "$dest"
    log "$source $upstream source unpacked into $dest"
}

# The OSU micro-benchmarks' archive, where the project's machine keeps it
# (../shared/osu beside the source tree), checked against its SHA256SUMS
# and copied into $GPUMEM_CACHE_DIR/osu-src for the tests; without it,
# make check-osu skips saying why.
OSU_DIR=$(cd "$(dirname "$0")/../.." && pwd)/shared/osu
OSU_ARCHIVE=osu-micro-benchmarks-7.4.tar.gz

fetch_osu_archive() {
    local dest=$GPUMEM_CACHE_DIR/osu-src
    [ ! -f "$dest/$OSU_ARCHIVE" ] || return 0
    if [ ! -f "$OSU_DIR/$OSU_ARCHIVE" ]; then
        log "no OSU archive in $OSU_DIR: make check-osu skips"
        return 0
    fi
    if ! (cd "$OSU_DIR" && grep " $OSU_ARCHIVE\$" SHA256SUMS |
              sha256sum -c --quiet -); then
        log "$OSU_DIR/$OSU_ARCHIVE does not match its SHA256SUMS: not used"
        return 0
    fi
    mkdir -p "$dest"
    cp "$OSU_DIR/$OSU_ARCHIVE" "$dest/$OSU_ARCHIVE.tmp"
    mv "$dest/$OSU_ARCHIVE.tmp" "$dest/$OSU_ARCHIVE"
    log "OSU archive copied into $dest"
}

# NVIDIA's nvml.h, from Debian's libnvidia-ml-dev (component non-free),
# into $GPUMEM_CACHE_DIR/nvml/include: the header alone, for the emulated
# libnvidia-ml.so.1 and UCX's cuda transports built against it. The
# package is downloaded through a private apt state, so that neither the
# machine's sources nor its installed packages change (the package itself
# would pull NVIDIA's driver library). Without it, the emulated NVML is
# left out.
NVML_DIR=$GPUMEM_CACHE_DIR/nvml

fetch_nvml_header() {
    local entry uri suite sig tmp deb
    [ ! -f "$NVML_DIR/include/nvml.h" ] || return 0
    entry=$(debian_deb_entry | head -n 1)
    [ -n "$entry" ] || { log "nvml.h: no Debian 'deb' entry"; return 0; }
    read -r uri suite sig <<<"$entry"
    tmp=$(mktemp -d)
    chmod 755 "$tmp"  # apt fetches as _apt
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp/lists/partial"
    {
        echo "Types: deb"
        echo "URIs: $uri"
        echo "Suites: $suite"
        echo "Components: non-free"
        [ "$sig" = "-" ] || echo "Signed-By: $sig"
    } >"$tmp/non-free.sources"
    local apt_opts=(-o "Dir::Etc::SourceList=$tmp/non-free.sources"
                    -o Dir::Etc::SourceParts=/dev/null
                    -o "Dir::State::Lists=$tmp/lists")
    if ! apt-get "${apt_opts[@]}" update -q >"$tmp/apt.log" 2>&1 ||
       ! (cd "$tmp" && apt-get "${apt_opts[@]}" download -q \
              libnvidia-ml-dev >>"$tmp/apt.log" 2>&1); then
        log "nvml.h: cannot download libnvidia-ml-dev from $uri $suite" \
            "non-free; the emulated NVML is left out"
        return 0
    fi
    deb=$(ls "$tmp"/libnvidia-ml-dev_*.deb | head -n 1)
    dpkg-deb -x "$deb" "$tmp/x"
    mkdir -p "$NVML_DIR/include"
    cp "$tmp/x/usr/include/nvml.h" "$NVML_DIR/include/nvml.h"
    basename "$deb" >"$NVML_DIR/SOURCE"
    log "nvml.h of $(basename "$deb") in $NVML_DIR/include"
}

sources_present() {
    local ucx ompi
    ucx=$(upstream_version libucx-dev) || return 1
    ompi=$(upstream_version libopenmpi-dev) || return 1
    [ -f "$GPUMEM_CACHE_DIR/ucx-$ucx/src/uct/base/uct_md.h" ] &&
    [ -f "$GPUMEM_CACHE_DIR/openmpi-$ompi/configure" ]
}

fetch_osu_archive
if [ -z "$(missing_packages)" ] && sources_present &&
   [ -f "$NVML_DIR/include/nvml.h" ]; then
    log "ready (nothing to do)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    log "must run as root to install:" $(missing_packages) >&2
    exit 1
fi
install_packages
fetch_source ucx libucx-dev src/uct/base/uct_md.h
# Open MPI's, for the CUDA-aware Open MPI of make check-osu
# (contrib/ompi-cuda.sh)
fetch_source openmpi libopenmpi-dev configure
fetch_nvml_header
log "ready"
