# shellcheck shell=bash
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

# Builds the fuzz target NAME from $HERE/NAME.c and the library SOURCES,
# with the flags "make" uses, under ASan and UBSan
fuzz_build() {  # NAME SOURCE...
    local name=$1
    shift
    # shellcheck disable=SC2046
    "$CC" -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all \
        -DHAVE_CONFIG_H -I"$TOP/src" -I"$TOP/include" -I"$BUILD" \
        $(makevar UCX_SRC_CPPFLAGS) $(makevar UCX_CFLAGS) \
        $(makevar HWLOC_CFLAGS) \
        -o "$OUT/$name" "$HERE/$name.c" "$@" $(makevar UCX_LIBS) \
        ${FUZZ_LIBS:-} -lpthread
    echo "fuzz: built $OUT/$name"
}

# Runs the fuzz target NAME over the corpus for $seconds and prints its
# statistics and findings; returns the fuzzer's status. Each refusal is
# logged as an error: the log is kept quiet, the speed up.
fuzz_run() {  # NAME
    local rc

    echo "fuzz: running $1 for $seconds s, corpus $CORPUS"
    cd "$OUT"
    set +e
    UCX_LOG_LEVEL=fatal "./$1" -max_total_time="$seconds" \
        -print_final_stats=1 -rss_limit_mb=2048 -artifact_prefix="$OUT/" \
        "$CORPUS" >"$OUT/fuzz.log" 2>&1
    rc=$?
    set -e
    grep -E '^stat::|ERROR|SUMMARY|does not hold' "$OUT/fuzz.log" || true
    return $rc
}
