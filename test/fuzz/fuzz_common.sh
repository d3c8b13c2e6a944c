# Sourced by the fuzz scripts: the repository, the configured build tree,
# the compiler, the arguments "[--build-only] [SECONDS]", and the checks
# every target needs. The caller sets OUT (its output folder) first.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
TOP=$(cd "$HERE/../.." && pwd -P)
BUILD=${GPUMEM_BUILD_DIR:-$TOP}
CORPUS=$OUT/corpus
CC=${CC_FUZZ:-clang}

build_only=0
if [ "${1:-}" = "--build-only" ]; then
    build_only=1
    shift
fi
seconds=${1:-600}

# A variable of the configured Makefile: the same flags "make" uses
makevar() {
    sed -n "s/^$1 = //p" "$BUILD/src/uct/gpumem/Makefile"
}

if [ ! -f "$BUILD/config.h" ] || [ ! -f "$BUILD/src/uct/gpumem/Makefile" ]; then
    echo "fuzz: no configured tree in $BUILD (run ./configure)" >&2
    exit 1
fi
if ! command -v "$CC" >/dev/null; then
    echo "fuzz: no $CC: apt-get install clang libclang-rt-14-dev" >&2
    exit 1
fi

mkdir -p "$OUT" "$CORPUS"
