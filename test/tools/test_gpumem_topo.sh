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
lassen=$topologies/mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml
xe8640=$topologies/fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml

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

. "$srcdir/test/tools/test_report.sh"

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

# pascal --verbose: every verdict with every rule's reason, each unknown
# fact with why it cannot be read
run pascal_verbose --xml "$pascal" --sysfs $sysfs --verbose
check_status pascal_verbose "pascal --verbose runs" 0
check_golden pascal_verbose pascal-verbose.txt

# check_short NAME DESCRIPTION [COLUMNS]: the text output of run NAME fits
# a screen: at most 60 lines of at most COLUMNS (80), the reason the facts
# are unknown said once, and no verdict repeating it
check_short() {
    lines=$(wc -l <"$1.out")
    wide=$(awk -v max="${3:-80}" 'length($0) > max' "$1.out" | wc -l)
    hints=$(grep -c -- "--save-facts FILE" "$1.out")
    repeats=$(grep -c "cannot find .* in sysfs" "$1.out")
    if [ "$lines" -le 60 ] && [ "$wide" -eq 0 ] && [ "$hints" -eq 1 ] &&
       [ "$repeats" -eq 0 ]; then
        pass "$2"
    else
        fail "$2" "$lines lines, $wide over 80 columns, the hint $hints" \
             "times, sysfs's absence $repeats times"
    fi
}

# An export read without its machine's sysfs: the missing facts said once,
# with what to do; each reason once with the pairs it decides
for topo in lassen xe8640 dgx2 pascal; do
    eval xml=\$$topo
    run ${topo}_short --xml "$xml" --sysfs $sysfs
    # 16 GPUs take 16 columns of 7 in the matrix
    [ $topo = dgx2 ] && width=120 || width=80
    check_short ${topo}_short "$topo text fits a screen and says why once" \
        $width
done
check_golden lassen_short lassen.txt
if grep -q "no entry for 4 GPUs, 4 NICs and 10 bridges" lassen_short.out &&
   grep -q "^    cuda0 <-> cuda1, cuda2 <-> cuda3$" lassen_short.out &&
   grep -q "^  no: host bridge 0004:00 (1014:04c1) is not on" \
        lassen_short.out; then
    pass "lassen groups the pairs by their deciding reason"
else
    fail "lassen groups the pairs by their deciding reason"
fi
run lassen_verbose --xml "$lassen" --sysfs $sysfs --verbose
if [ "$(grep -c "^      rules: " lassen_verbose.out)" -eq 12 ] &&
   grep -q "rules: unknown: IOMMU of 0004:04:00.0: cannot find" \
        lassen_verbose.out; then
    pass "lassen --verbose gives every rule's reason of the 12 verdicts"
else
    fail "lassen --verbose gives every rule's reason of the 12 verdicts"
fi

run lassen_json --xml "$lassen" --sysfs $sysfs --json
check_py lassen_json "lassen --json gives each verdict's deciding reason" '
for p in d["pairs"]:
    if p["path"] == "same_switch":
        want = ["fabric links", "IOMMU", "BAR size", "ACS"]
        if p["unknown"] != want or p["brief"] != "unknown: " + \
                "fabric links, IOMMU, BAR size and ACS":
            print("%s -> %s: %s %s" % (p["a"], p["b"], p["brief"],
                                       p["unknown"]))
    elif (not p["brief"].endswith("not on Linux'"'"'s p2pdma whitelist") or
          p["unknown"] != ["fabric links"] or
          p["brief"] not in p["reason"]):
        print("%s -> %s: %s %s" % (p["a"], p["b"], p["brief"], p["unknown"]))'

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
check_py pascal_acs "pascal ACS redirect refuses, the bridge its brief" '
for p in d["pairs"]:
    if (p["reaches"] or not p["reason"].startswith("ACS redirects") or
        p["brief"] != "ACS redirects peer requests to the root complex on "
                      "bridge 0000:02:00.0 (control 0x001d)"):
        print("%s -> %s: %s / %s" % (p["a"], p["b"], p["reason"],
                                     p["brief"]))'

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

# --bind: one NIC for each GPU, distinct where there are enough. On the
# XE8640 two H100s rank mlx5_3 first, on Lassen two V100s rank the first
# port of their socket's CX-5 first: the binding parts them.
for topo in xe8640 lassen; do
    eval xml=\$$topo
    run ${topo}_bind_text --xml "$xml" --sysfs $sysfs --bind
    check_status ${topo}_bind_text "$topo --bind runs" 0
    check_golden ${topo}_bind_text $topo-bind.txt

    run ${topo}_bind_json --xml "$xml" --sysfs $sysfs --bind --json
    check_status ${topo}_bind_json "$topo --bind --json runs" 0
    check_golden ${topo}_bind_json $topo-bind.json
    check_json ${topo}_bind_json \
        "$topo --bind --json parses with python3 -m json.tool"
done

# bind_values NAME: the UCX_NET_DEVICES column of run NAME's table
bind_values() {
    awk 'NR > 2 { print $3 }' "$1.out"
}

for topo in xe8640 lassen; do
    values=$(bind_values ${topo}_bind_text | sort -u | grep -c ':1$')
    if [ "$values" -eq 4 ]; then
        pass "$topo --bind gives its 4 GPUs 4 distinct NIC ports"
    else
        fail "$topo --bind gives its 4 GPUs 4 distinct NIC ports" \
             "$(bind_values ${topo}_bind_text | tr '\n' ' ')"
    fi
done

check_py xe8640_bind_json "xe8640 --bind binds each H100 to its own NIC" '
b = d["bind"]
nics = set(x["nic"]["pci"] for x in b)
if len(b) != 4 or len(nics) != 4 or any(x["sharers"] != 1 for x in b):
    print([(x["name"], x["net_devices"]) for x in b])
elif [x["net_devices"] for x in b if x["rank"] == 0] != \
        ["mlx5_0:1", "mlx5_2:1", "mlx5_3:1"]:
    print("not the nearest NICs under the switches: %s" % b)'

check_py lassen_bind_json "lassen --bind binds each V100 to its own port" '
b = d["bind"]
ports = set(x["net_devices"] for x in b)
adapters = [x["nic"]["pci"][:7] for x in b]
if len(b) != 4 or len(ports) != 4:
    print([(x["name"], x["net_devices"]) for x in b])
elif adapters[0] != adapters[1] or adapters[2] != adapters[3]:
    print("a pair of GPUs is not on its socket'"'"'s CX-5: %s" % adapters)'

# One NIC for two GPUs: shared, and said so
run pascal_bind --xml "$pascal" --sysfs $sysfs --bind
check_status pascal_bind "pascal --bind runs" 0
if [ "$(bind_values pascal_bind | tr '\n' ' ')" = "mlx5_0:1 mlx5_0:1 " ] &&
   grep -q "shared by 2 GPUs" pascal_bind.out; then
    pass "pascal --bind shares its one NIC between both GPUs"
else
    fail "pascal --bind shares its one NIC between both GPUs" \
         "$(cat pascal_bind.out)"
fi

run dgx2_bind --xml "$dgx2" --sysfs $sysfs --bind
check_status dgx2_bind "dgx2 --bind runs" 0
if [ "$(bind_values dgx2_bind | grep -c '^-$')" -eq 16 ] &&
   [ "$(grep -c "no RDMA NIC in the topology: no binding" dgx2_bind.out)" \
     -eq 16 ]; then
    pass "dgx2 --bind says each of its 16 GPUs has no NIC to bind"
else
    fail "dgx2 --bind says each of its 16 GPUs has no NIC to bind" \
         "$(head -n 4 dgx2_bind.out)"
fi

# A NIC known only by its PCI address has no name for UCX_NET_DEVICES:
# the XE8640 without its OS devices
sed -e '/<object type="OSDev"/,/<\/object>/d' \
    -e '/<distances2 type="OSDev"/,/<\/distances2>/d' "$xe8640" \
    >xe8640-no-osdev.xml
run bare_bind --xml xe8640-no-osdev.xml --sysfs $sysfs --bind
check_status bare_bind "xe8640 without OS devices --bind runs" 0
unnamed='no device name: the topology knows this NIC only by its PCI address'
if [ "$(bind_values bare_bind | tr '\n' ' ')" = "- - - - " ] &&
   [ "$(grep -c "$unnamed" bare_bind.out)" -eq 4 ]; then
    pass "a NIC without device name is no UCX_NET_DEVICES value"
else
    fail "a NIC without device name is no UCX_NET_DEVICES value" \
         "$(cat bare_bind.out)"
fi

run bind_dot --xml "$pascal" --bind --dot
check_status bind_dot "--bind with --dot exits 2" 2 "--bind"

# A server whose InfiniBand adapters the export has as PCI functions only,
# without an OpenFabrics OS device: hwloc's own test machine of eight NEC
# vector engines and two ConnectX-4 (a Linux sysfs tree, which lstopo reads
# as that machine and exports)
nec_tree=$topologies/hwloc-nec-32intel64-2p8co2t+8ve.tar.bz2
if ! command -v lstopo-no-graphics >/dev/null 2>&1; then
    skip "nec lists its two InfiniBand adapters (lstopo-no-graphics of" \
         "Debian's hwloc not installed)"
elif ! tar -xjf "$nec_tree" 2>nec_tar.err; then
    fail "nec lists its two InfiniBand adapters" \
         "cannot unpack $nec_tree: $(head -n 1 nec_tar.err)"
elif ! HWLOC_THISSYSTEM=0 lstopo-no-graphics --whole-io \
           --input 32intel64-2p8co2t+8ve --of xml nec.xml 2>nec_lstopo.err; then
    fail "nec lists its two InfiniBand adapters" \
         "lstopo cannot read the tree: $(head -n 1 nec_lstopo.err)"
else
    run nec --xml nec.xml --sysfs $sysfs
    if [ "$rc" -eq 0 ] && grep -q "^RDMA NICs (2):$" nec.out &&
       grep -q "^  0000:1a:00.0  .* 15b3:1013 " nec.out &&
       grep -q "^  0000:3e:00.0  .* 15b3:1013 " nec.out &&
       grep -q "^GPUs (0):$" nec.out; then
        pass "nec lists its two InfiniBand adapters by PCI address"
    else
        fail "nec lists its two InfiniBand adapters by PCI address" \
             "exit status $rc: $(grep -A 3 "RDMA NICs" nec.out)"
    fi
    run nec_json --xml nec.xml --sysfs $sysfs --json
    check_py nec_json "nec --json names both adapters by PCI address" '
nics = d["nics"]
assert [n["pci"] for n in nics] == ["0000:1a:00.0", "0000:3e:00.0"], nics
assert all(n["name"] == n["pci"] and n["vendor"] == "15b3" for n in nics), nics
'
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

run svg_json --xml "$pascal" --json --svg x.svg
check_status svg_json "--json with --svg exits 2" 2

run svg_no_arg --xml "$pascal" --svg
check_status svg_no_arg "--svg without a file exits 2" 2 "svg"

run svg_empty --xml "$pascal" --svg ""
check_status svg_empty "--svg with an empty file name exits 2" 2 \
    "--svg needs a file name"

run help --help
if [ "$rc" -eq 0 ] && grep -q -- '--save-facts' help.out &&
   grep -q -- '--bind' help.out; then
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

    # --svg: the PCI tree and every pair coloured by verdict, the reasons of
    # both ways on hover (SVG's <title>) and refusals numbered in a legend
    run lassen_svg --xml "$lassen" --sysfs $sysfs --svg lassen.svg
    check_status lassen_svg "lassen --svg runs" 0
    if [ -s lassen_svg.out ]; then
        fail "lassen --svg prints nothing on stdout"
    elif ! grep -q "<svg" lassen.svg; then
        fail "lassen --svg writes an SVG drawing" "$(head -c 200 lassen.svg)"
    elif [ "$(grep -c "class=\"edge\"" lassen.svg)" -ne 24 ]; then
        fail "lassen --svg writes an SVG drawing" \
             "$(grep -c "class=\"edge\"" lassen.svg) edges, expected 24: 18 of" \
             "the PCI tree and 6 of GPU pairs"
    elif ! grep -q "cuda0 &#45;&gt; cuda2: no: host bridge 0004:00" \
              lassen.svg ||
         ! grep -q "cuda2 &#45;&gt; cuda0: no: host bridge 0035:00" \
              lassen.svg ||
         ! grep -q "stroke=\"red\"" lassen.svg ||
         ! grep -q "stroke=\"orange\"" lassen.svg ||
         ! grep -q ">1: unknown: fabric links, IOMMU, BAR size and ACS<" \
              lassen.svg; then
        fail "lassen --svg colours each pair by verdict, reasons on hover" \
             "and in the legend"
    else
        pass "lassen --svg colours each pair by verdict, reasons on hover" \
             "and in the legend"
    fi

    run dgx2_svg --xml "$dgx2" --sysfs $sysfs --svg dgx2.svg
    if [ "$rc" -eq 0 ] && grep -q "stroke=\"darkgreen\"" dgx2.svg &&
       ! grep -q "stroke=\"red\"" dgx2.svg; then
        pass "dgx2 --svg draws every pair joined by NVLink in green"
    else
        fail "dgx2 --svg draws every pair joined by NVLink in green" \
             "exit status $rc"
    fi

    run svg_bad_dir --xml "$pascal" --sysfs $sysfs --svg no-such-dir/x.svg
    check_status svg_bad_dir "--svg into a missing directory exits 1" 1 \
        "no-such-dir/x.svg"
else
    skip "dot (graphviz) not installed"
fi

# Without Graphviz, --svg says what to install
mkdir nodot
ln -s "$tool" nodot/gpumem_topo
PATH=$tmp/nodot run svg_no_dot --xml "$pascal" --sysfs $sysfs --svg x.svg
check_status svg_no_dot "--svg without dot exits 1 naming graphviz" 1 \
    "graphviz"

exit $failed
