#!/usr/bin/env bash
# Checks the layers of src/uct/gpumem (DESIGN.md), lowest first: utilities
# (UCS's helpers), topology, drivers, memory core, registration, UCT glue. Data flows down: a layer
# calls and includes only itself and the layers below it.
#
#  - link: each layer's convenience library is linked into a shared object
#    with only the layers below it and the outside libraries, with every
#    symbol defined (-z defs), so that a call to a higher layer fails;
#  - cycles: no two files of a driver call each other, directly or around a
#    loop (its ops-table file uses the others, and none uses it);
#  - include: no file of a layer includes a header of a higher one; the
#    memory core and the UCT glue include no driver's own header, only the
#    interface of every driver and the table of drivers.
#
# --self-test first shows that each check fails on a deliberately wrong
# call and include, so that a check that cannot fail is not taken for one
# that passes.
#
#   contrib/check-layers.sh [--self-test] --srcdir DIR --libdir DIR
#                           --cc "CC CFLAGS CPPFLAGS" [--ldflags FLAGS]
#                           --libs "OUTSIDE LIBRARIES"
set -euo pipefail

self_test=0
srcdir= libdir= cc= ldflags= libs=
while [ $# -gt 0 ]; do
    case "$1" in
    --self-test) self_test=1 ;;
    --srcdir)    srcdir=$2; shift ;;
    --libdir)    libdir=$2; shift ;;
    --cc)        cc=$2; shift ;;
    --ldflags)   ldflags=$2; shift ;;
    --libs)      libs=$2; shift ;;
    *) echo "check-layers: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$srcdir" ] || [ -z "$libdir" ] || [ -z "$cc" ]; then
    echo "check-layers: --srcdir, --libdir and --cc are needed" >&2
    exit 2
fi

# The layers below the UCT glue, lowest first, and what each may use
layers="util topo driver mem reg"
declare -A below=(
    [util]=""
    [topo]="util"
    [driver]="topo util"
    [mem]="driver topo util"
    [reg]="util"
)
# What the files of each layer may include of src/uct/gpumem, as paths
# (a prefix ending in / is a directory)
declare -A includes=(
    [util]="util/"
    [topo]="topo/ util/"
    [driver]="driver/ topo/ util/"
    [mem]="mem/ driver/gpumem_driver.h topo/ util/"
    [reg]="reg/ util/"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Links layer $1 from archive $2 (and the objects after it) with the layers
# below it; prints the linker's complaint and fails where a symbol is not
# defined there
link_layer() {
    local layer=$1 archive=$2
    shift 2
    local lower=() dep
    for dep in ${below[$layer]}; do
        lower+=("$libdir/libgpumem_$dep.a")
    done
    # shellcheck disable=SC2086
    $cc -shared -o "$work/$layer.so" \
        -Wl,--whole-archive "$archive" "$@" -Wl,--no-whole-archive \
        ${lower[@]+"${lower[@]}"} $ldflags $libs -Wl,-z,defs \
        > "$work/$layer.log" 2>&1 || {
        grep -o "undefined reference to \`[^']*'" "$work/$layer.log" |
            sort -u | sed "s/^/check-layers: $layer: /"
        return 1
    }
}

# The calls between the objects of archive $1, as "caller callee" lines
object_calls() {
    nm -A "$1" | awk '
        { n = split($1, part, ":"); obj = part[2] }
        $2 == "U"               { used[obj, $3] = 1; next }
        $2 ~ /^[TDBR]$/         { owner[$3] = obj }
        END {
            for (key in used) {
                split(key, k, SUBSEP)
                if ((k[2] in owner) && (owner[k[2]] != k[1])) {
                    print k[1], owner[k[2]]
                }
            }
        }' | sort -u
}

# Whether the objects of archive $1 call each other around a loop; prints
# the loop where they do
check_cycles() {
    local calls
    calls=$(object_calls "$1")
    if [ -z "$calls" ]; then
        echo "check-layers: no calls between the objects of $1"
        return 1
    fi
    if ! echo "$calls" | tsort > /dev/null 2> "$work/tsort.log"; then
        echo "check-layers: objects of $(basename "$1") call each other" \
             "around a loop:"
        sed 's/^tsort: /check-layers:   /' "$work/tsort.log"
        return 1
    fi
}

# The includes of file $2 (under root $1), each as the path under the root
# it names (a quoted one resolved from the file's directory first, as the
# compiler does), or the name as written where it names no file of ours
includes_of() {
    local root=$1 file=$2 dir line inc
    dir=$(dirname "$file")
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^">]*\)[">].*/\1/p' \
        "$file" |
    while IFS= read -r line; do
        inc=${line#?}
        if [ "${line:0:1}" = '"' ] && [ -e "$dir/$inc" ]; then
            realpath -m --relative-to="$root" "$dir/$inc"
        elif [ -e "$root/${inc#uct/gpumem/}" ] && [ "$inc" != "${inc#uct/gpumem/}" ]; then
            echo "${inc#uct/gpumem/}"
        else
            echo "=$inc"   # not ours: a system or UCX header, or config.h
        fi
    done
}

# Whether the includes of the files under $1 keep to their layers; prints
# each that does not
check_includes() {
    local root=$1 layer file path allowed ok bad=0 dir files=0
    for layer in $layers; do
        if [ ! -d "$root/$layer" ]; then
            echo "check-layers: no $root/$layer: not the plugin's sources"
            return 1
        fi
        while IFS= read -r file; do
            files=$((files + 1))
            while IFS= read -r path; do
                case "$path" in =*) continue ;; esac
                ok=0
                for allowed in ${includes[$layer]}; do
                    case "$path" in "$allowed"*) ok=1 ;; esac
                done
                if [ "$ok" -eq 0 ]; then
                    echo "check-layers: ${file#"$root"/} ($layer) includes" \
                         "$path, of a higher layer"
                    bad=1
                fi
            done < <(includes_of "$root" "$file")
        done < <(find "$root/$layer" -name '*.[ch]' | sort)
    done

    # The UCT glue: every other file; it may include all but a driver's own
    while IFS= read -r file; do
        dir=${file#"$root"/}
        dir=${dir%%/*}
        case " $layers " in *" $dir "*) continue ;; esac
        files=$((files + 1))
        while IFS= read -r path; do
            case "$path" in
            driver/*/*)
                echo "check-layers: ${file#"$root"/} (UCT glue) includes" \
                     "$path, a driver's own header"
                bad=1 ;;
            esac
        done < <(includes_of "$root" "$file")
    done < <(find "$root" -name '*.[ch]' | sort)

    if [ "$files" -eq 0 ]; then
        echo "check-layers: no source file under $root"
        return 1
    fi
    return $bad
}

if [ "$self_test" -eq 1 ]; then
    # A call from the topology to the UCT glue, which must not link
    cat > "$work/wrong.c" <<'EOF'
#include <uct/gpumem/gpumem_context.h>
void gpumem_topo_check_layers_wrong(void)
{
    uct_gpumem_context_put(NULL);
}
EOF
    $cc -fPIC -c -o "$work/wrong.o" "$work/wrong.c"
    if link_layer topo "$libdir/libgpumem_topo.a" "$work/wrong.o" \
            > "$work/self.log"; then
        echo "check-layers: self-test: a call from topo to the UCT glue" \
             "linked" >&2
        exit 1
    fi
    grep -q "uct_gpumem_context_put" "$work/self.log" || {
        echo "check-layers: self-test: the wrong call was not named:" >&2
        cat "$work/self.log" >&2
        exit 1
    }

    # The memory core, and a transport, including a driver's own header,
    # by its full name and by a relative one
    for layer in $layers copy driver/emu; do
        mkdir -p "$work/src/$layer"
    done
    touch "$work/src/driver/emu/emu.h" "$work/src/gpumem_context.h"
    printf '#include <uct/gpumem/driver/emu/emu.h>\n' > "$work/src/mem/wrong.c"
    if check_includes "$work/src" > "$work/self.log"; then
        echo "check-layers: self-test: mem including driver/emu/emu.h" \
             "passed" >&2
        exit 1
    fi
    rm "$work/src/mem/wrong.c"
    printf '#include "../driver/emu/emu.h"\n' > "$work/src/copy/wrong.c"
    if check_includes "$work/src" > "$work/self.log"; then
        echo "check-layers: self-test: copy including ../driver/emu/emu.h" \
             "passed" >&2
        exit 1
    fi
    rm "$work/src/copy/wrong.c"
    printf '#include "../gpumem_context.h"\n' > "$work/src/topo/wrong.c"
    if check_includes "$work/src" > "$work/self.log"; then
        echo "check-layers: self-test: topo including ../gpumem_context.h" \
             "passed" >&2
        exit 1
    fi
    # Two objects calling each other
    printf 'void gpumem_check_layers_a(void);\nvoid gpumem_check_layers_b(void) { gpumem_check_layers_a(); }\n' \
        > "$work/b.c"
    printf 'void gpumem_check_layers_b(void);\nvoid gpumem_check_layers_a(void) { gpumem_check_layers_b(); }\n' \
        > "$work/a.c"
    $cc -fPIC -c -o "$work/a.o" "$work/a.c"
    $cc -fPIC -c -o "$work/b.o" "$work/b.c"
    ar rc "$work/loop.a" "$work/a.o" "$work/b.o"
    if check_cycles "$work/loop.a" > "$work/self.log" ||
       ! grep -q "around a loop" "$work/self.log"; then
        echo "check-layers: self-test: two objects calling each other" \
             "were not found:" >&2
        cat "$work/self.log" >&2
        exit 1
    fi
    echo "check-layers: self-test: a wrong call, wrong includes and a loop" \
         "of calls fail"
fi

status=0
for layer in $layers; do
    if link_layer "$layer" "$libdir/libgpumem_$layer.a"; then
        echo "check-layers: $layer links with${below[$layer]:+ }${below[$layer]:- nothing of gpumem} below it"
    else
        status=1
    fi
done
if check_cycles "$libdir/libgpumem_driver.a"; then
    echo "check-layers: the drivers' files call each other around no loop"
else
    status=1
fi
check_includes "$srcdir" || status=1
[ "$status" -eq 0 ] && echo "check-layers: every include keeps to its layer"
exit $status
