#!/bin/sh
# Golden-file and error tests of the gpumem_topo tool on real topologies.
#
# Usage: test_gpumem_topo.sh TOOL SRCDIR
#   TOOL    the built gpumem_topo binary
#   SRCDIR  the top source directory (with test/topologies and test/tools)
#
# GPUMEM_UPDATE_GOLDEN=1 writes the tool's output over the golden files in
# SRCDIR/test/tools/golden instead of comparing; read "git diff" of them,
# verdict by verdict, before keeping it.
#
# The topologies are read with --sysfs pointing to an empty directory, so
# that no fact comes from the machine running the test: every fact hwloc
# does not carry is "unknown", the same everywhere.
#
# See file LICENSE for terms.

if [ $# -ne 2 ]; then
    echo "usage: $0 GPUMEM_TOPO SRCDIR" >&2
    exit 2
fi

tool=$1
srcdir=$2
case $tool in
/*) ;;
*)  tool=$(pwd)/$tool ;;
esac
case $srcdir in
/*) ;;
*)  srcdir=$(pwd)/$srcdir ;;
esac

topologies=$srcdir/test/topologies
golden=$srcdir/test/tools/golden
dgx2=$topologies/hwloc-nvidiaDGX2-16xV100-nvswitch.xml
pascal=$topologies/mpibind-pascal-2xBDW-2xP100-1xIB.xml

if [ ! -x "$tool" ]; then
    echo "FAIL: $tool is not an executable" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem_topo_test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# The reasons name the sysfs paths tried: a relative root keeps them the
# same wherever the test runs
cd "$tmp" || exit 1
mkdir sysfs
sysfs=sysfs

# UCX's own messages must not depend on the caller's environment
UCX_LOG_LEVEL=warn
export UCX_LOG_LEVEL

failed=0

pass() {
    echo "PASS: $1"
}

fail() {
    echo "FAIL: $1${2:+ ($2)}"
    failed=1
}

skip() {
    echo "SKIP: $1"
}

have_python=0
if command -v python3 >/dev/null 2>&1; then
    have_python=1
fi

# run NAME ARGS...: runs the tool, stdout to NAME.out, stderr to NAME.err,
# the exit status to $rc
run() {
    run_name=$1
    shift
    "$tool" "$@" >"$run_name.out" 2>"$run_name.err"
    rc=$?
}

# check_golden NAME GOLDEN_FILE: the output of run NAME against the golden
check_golden() {
    if [ "${GPUMEM_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$1.out" "$golden/$2" && echo "UPDATED: golden/$2" ||
            fail "golden $2" "cannot write $golden/$2"
    elif diff -u "$golden/$2" "$1.out" >"$1.diff" 2>&1; then
        pass "golden $2"
    else
        fail "golden $2" "output differs; first lines of the diff follow"
        head -n 40 "$1.diff"
    fi
}

# check_json NAME DESCRIPTION: the output of run NAME parses as JSON
check_json() {
    if [ $have_python = 0 ]; then
        skip "$2: python3 not installed"
    elif python3 -m json.tool "$1.out" >/dev/null 2>"$1.json_err"; then
        pass "$2"
    else
        fail "$2" "$(head -n 1 "$1.json_err")"
    fi
}

# check_py NAME DESCRIPTION CODE: CODE (Python, the JSON in "d") holds on
# the output of run NAME; it prints what is wrong, if anything
check_py() {
    if [ $have_python = 0 ]; then
        skip "$2: python3 not installed"
        return
    fi
    why=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
$3" "$1.out" 2>&1)
    if [ -z "$why" ]; then
        pass "$2"
    else
        fail "$2" "$why"
    fi
}

# check_status NAME DESCRIPTION RC [TEXT]: the exit status of run NAME, and
# TEXT in its stderr
check_status() {
    if [ "$rc" -ne "$3" ]; then
        fail "$2" "exit status $rc, expected $3: $(head -n 1 "$1.err")"
    elif [ -n "$4" ] && ! grep -F -q -- "$4" "$1.err"; then
        fail "$2" "stderr does not name '$4': $(head -n 1 "$1.err")"
    else
        pass "$2"
    fi
}


# DGX-2: every pair of the 16 V100s is joined by NVLink through NVSwitches
run dgx2_text --xml "$dgx2" --sysfs $sysfs
check_status dgx2_text "dgx2 text runs" 0
check_golden dgx2_text dgx2.txt

run dgx2_json --xml "$dgx2" --sysfs $sysfs --json
check_status dgx2_json "dgx2 json runs" 0
check_golden dgx2_json dgx2.json
check_json dgx2_json "dgx2 --json parses with python3 -m json.tool"
check_py dgx2_json "dgx2 every pair reaches by nvlink" '
pairs = d["pairs"]
if len(d["gpus"]) != 16 or len(pairs) != 16 * 15:
    print("%d GPUs, %d pairs" % (len(d["gpus"]), len(pairs)))
for p in pairs:
    if not p["reaches"] or p["fabric"] != "nvlink" or p["assumed"]:
        print("%s -> %s: %s" % (p["a"], p["b"], p["reason"]))
        break'

# pascal: both P100s and the HCA behind one PLX switch; without sysfs facts
# the bus rules cannot be decided, so "no" with an "unknown: ..." reason
run pascal_text --xml "$pascal" --sysfs $sysfs
check_status pascal_text "pascal text runs" 0
check_golden pascal_text pascal.txt

run pascal_json --xml "$pascal" --sysfs $sysfs --json
check_status pascal_json "pascal json runs" 0
check_golden pascal_json pascal.json
check_json pascal_json "pascal --json parses with python3 -m json.tool"
check_py pascal_json "pascal unknown facts refuse" '
if len(d["pairs"]) != 2:
    print("%d pairs" % len(d["pairs"]))
for p in d["pairs"]:
    if (p["reaches"] or p["path"] != "same_switch" or
        not p["reason"].startswith("unknown: ") or p["assumed"]):
        print("%s -> %s: %s" % (p["a"], p["b"], p["reason"]))
for gpu, ranks in d["nic_rank"].items():
    if ([r["name"] for r in ranks] != ["mlx5_0"] or
        ranks[0]["path"] != "same_switch" or ranks[0]["gdr"]):
        print("NICs of %s: %s" % (gpu, ranks))'

# pascal, what if: yes, with each assumption listed
run pascal_assume_text --xml "$pascal" --sysfs $sysfs --assume
check_status pascal_assume_text "pascal --assume text runs" 0
check_golden pascal_assume_text pascal-assume.txt

run pascal_assume_json --xml "$pascal" --sysfs $sysfs --assume --json
check_status pascal_assume_json "pascal --assume json runs" 0
check_golden pascal_assume_json pascal-assume.json
check_json pascal_assume_json \
    "pascal --assume --json parses with python3 -m json.tool"
check_py pascal_assume_json "pascal --assume reaches with assumptions" '
for p in d["pairs"]:
    if (not p["reaches"] or p["fabric"] is not None or not p["assumed"] or
        not all(a.startswith("unknown: ") for a in p["assumed"])):
        print("%s -> %s: %s %s" % (p["a"], p["b"], p["reason"], p["assumed"]))
for gpu, ranks in d["nic_rank"].items():
    if not ranks[0]["gdr"] or not ranks[0]["assumed"]:
        print("NICs of %s: %s" % (gpu, ranks))'

# pascal with the facts sysfs would give: nothing is left unknown on the bus
cat >good.facts <<EOF
# pascal: no IOMMU, BARs of 32 GiB, no ACS redirect up to the PLX switch
iommu 0000:04:00.0 0
iommu 0000:07:00.0 0
bar   0000:04:00.0 0x800000000
bar   0000:07:00.0 0x800000000
acs   0000:03:04.0 0
acs   0000:03:10.0 0
acs   0000:02:00.0 0
EOF
run pascal_facts --xml "$pascal" --sysfs $sysfs --facts good.facts --json
check_status pascal_facts "pascal --facts runs" 0
check_py pascal_facts "pascal facts reach through the switch" '
for p in d["pairs"]:
    if not p["reaches"] or "0000:02:00.0" not in p["reason"]:
        print("%s -> %s: %s" % (p["a"], p["b"], p["reason"]))'

sed -e 's/^acs   0000:02:00.0 0$/acs 0000:02:00.0 0x001d/' good.facts \
    >acs.facts
run pascal_acs --xml "$pascal" --sysfs $sysfs --facts acs.facts --json
check_status pascal_acs "pascal --facts with ACS runs" 0
check_py pascal_acs "pascal ACS redirect refuses" '
for p in d["pairs"]:
    if p["reaches"] or not p["reason"].startswith("ACS redirects"):
        print("%s -> %s: %s" % (p["a"], p["b"], p["reason"]))'

# Saved facts load back to the same verdicts
run save --xml "$pascal" --sysfs $sysfs --facts good.facts \
    --save-facts saved.facts
check_status save "--save-facts writes the facts" 0
run saved --xml "$pascal" --sysfs $sysfs --facts saved.facts --json
if [ "$rc" -eq 0 ] && cmp -s pascal_facts.out saved.out; then
    pass "saved facts give the same verdicts"
else
    fail "saved facts give the same verdicts" "exit status $rc"
fi

# Bad input: a message naming the problem, exit 1; usage errors exit 2
run missing --xml "$tmp/no-such.xml" --sysfs $sysfs --json
check_status missing "missing XML exits 1 naming it" 1 "$tmp/no-such.xml"
if [ -s missing.out ]; then
    fail "missing XML prints nothing on stdout"
else
    pass "missing XML prints nothing on stdout"
fi

printf '<?xml version="1.0"?>\n<topology version="2.0">\n<object type=\n' \
    >malformed.xml
run malformed --xml malformed.xml --sysfs $sysfs
check_status malformed "malformed XML exits 1 naming it" 1 malformed.xml

printf 'acs 0000:02:00.0 0\nbar 0000:04:00.0 lots\n' >bad.facts
run bad_facts --xml "$pascal" --sysfs $sysfs --facts bad.facts
check_status bad_facts "bad facts file exits 1 naming the line" 1 \
    "bad.facts:2"

run missing_facts --xml "$pascal" --sysfs $sysfs --facts no-such.facts
check_status missing_facts "missing facts file exits 1 naming it" 1 \
    no-such.facts

run unknown_opt --xml "$pascal" --no-such-option
check_status unknown_opt "unknown option exits 2" 2 "no-such-option"

run extra_arg --xml "$pascal" stray
check_status extra_arg "stray argument exits 2" 2 stray

run two_formats --xml "$pascal" --json --dot
check_status two_formats "--json with --dot exits 2" 2

run help --help
if [ "$rc" -eq 0 ] && grep -q -- '--save-facts' help.out; then
    pass "--help prints the options"
else
    fail "--help prints the options" "exit status $rc"
fi

# Graphviz renders the PCI tree and the P2P paths
if command -v dot >/dev/null 2>&1; then
    for topo in dgx2 pascal; do
        eval xml=\$$topo
        run ${topo}_dot --xml "$xml" --sysfs $sysfs --dot --assume
        if [ "$rc" -eq 0 ] &&
           dot -Tpng -o $topo.png ${topo}_dot.out 2>$topo.dot_err &&
           [ -s $topo.png ]; then
            pass "$topo --dot renders with dot -Tpng"
        else
            fail "$topo --dot renders with dot -Tpng" \
                 "exit status $rc: $(head -n 1 $topo.dot_err)"
        fi
    done
else
    skip "dot (graphviz) not installed"
fi

exit $failed
