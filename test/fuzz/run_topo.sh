#!/usr/bin/env bash
# Builds the libFuzzer targets of the topology's inputs and runs each: the
# XML front end (fuzz_topo_xml) and the facts file parser
# (fuzz_topo_facts); not part of "make". Seeded with the real machines'
# exports of test/topologies and facts the library saves.
#
#   test/fuzz/run_topo.sh [--build-only] [SECONDS]  (default 600 s each)
#
# Needs clang and libclang-rt-14-dev and a configured build tree
# ($GPUMEM_BUILD_DIR, default the repository). Output in
# test/fuzz/build/topo_{xml,facts}/. Exits non-zero when a fuzzer found
# something.
set -euo pipefail
args=("$@")
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
rc=0

topo_sources() {
    local f
    for f in topo.c topo_facts.c topo_fabric.c topo_file.c topo_hwloc.c \
             topo_nic.c topo_pci.c topo_reach.c topo_sysfs.c; do
        echo "$TOP/src/uct/gpumem/topo/$f"
    done
}

for target in xml facts; do
    OUT=$dir/build/topo_$target
    set -- "${args[@]}"
    # shellcheck source=test/fuzz/fuzz_common.sh
    . "$dir/fuzz_common.sh"
    # shellcheck disable=SC2046
    FUZZ_LIBS=$(makevar HWLOC_LIBS) fuzz_build fuzz_topo_$target \
        $(topo_sources)

    if [ "$target" = xml ]; then
        # Small exports whole, and a deep nesting
        cp "$TOP"/test/topologies/hwloc-power8-minsky-4xP100-nvlink.xml \
           "$TOP"/test/topologies/hwloc-nvidiaDGX2-16xV100-nvswitch.xml \
           "$CORPUS/"
        printf '<topology>%.0s' $(seq 300) >"$CORPUS/deep.xml"
        # hwloc 2.9 leaks the objects of a document it refuses midway:
        # its own, which no caller can free
        echo "leak:libhwloc.so" >"$OUT/lsan.supp"
        export LSAN_OPTIONS=suppressions=$OUT/lsan.supp
    else
        unset LSAN_OPTIONS
        export GPUMEM_FUZZ_XML=$TOP/test/topologies/hwloc-nvidiaDGX2-16xV100-nvswitch.xml
        cat >"$CORPUS/facts" <<'FACTS'
# gpumem topology facts
iommu 0000:34:00.0 0 group -1
bar 0000:34:00.0 34359738368
mem 0000:34:00.0 34359738368
acs 0000:33:00.0 0x0000
hostbridge 0000:30:00.0 0x20208086
FACTS
    fi
    [ "$build_only" = 1 ] && continue
    fuzz_run fuzz_topo_$target || rc=1
done
exit $rc
