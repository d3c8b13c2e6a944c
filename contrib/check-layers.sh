#!/usr/bin/env bash
# Checks the layers of src/uct/gpumem (DESIGN.md), lowest first: utilities
# (UCS's helpers), topology, drivers, memory core, registration, the UCX
# compatibility shim, the context (the process's GPUs and their settings),
# the interface base, the transports and their domains (copy, ipc, ib, rc),
# the public calls and the component. Data flows down: a layer calls and
# includes only itself and the layers below it, and every file of the
# plugin is in one layer.
#
#  - link: each layer's convenience library is linked into a shared object
#    with only the layers below it and the outside libraries, with every
#    symbol defined (-z defs), so that a call to a higher layer, or from a
#    transport to another, fails;
#  - cycles: no two files of a driver call each other, directly or around a
#    loop (its ops-table file uses the others, and none uses it);
#  - include: no file of a layer includes a header of a higher one; above
#    the memory core no file includes a driver's own header, only the
#    context the interface of every driver and the table of drivers, and the
#    transports no driver header at all; a transport includes of another
#    only the header meant for it (rc the domains of ib, the public calls
#    the counters); an internal header (*_int.h) is its directory's own.
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

# The layers with a convenience library, lowest first, and what each may
# link with, highest first; the component, the top, is libuct_gpumem itself,
# which its build links with every symbol defined
layers="util topo driver mem reg compat context base copy ipc ib rc api"
declare -A below=(
    [util]=""
    [topo]="util"
    [driver]="topo util"
    [mem]="driver topo util"
    [reg]="util"
    [compat]="util"
    [context]="compat mem driver topo util"
    [base]="context compat mem driver topo util"
    [copy]="base context compat mem driver topo util"
    [ipc]="base context compat mem driver topo util"
    [ib]="context compat reg mem driver topo util"
    [rc]="ib base context compat reg mem driver topo util"
    [api]="ipc rc ib base context compat reg mem driver topo util"
)
all_layers="$layers component"

# The files of a layer: its directory, but for the layers at the top of
# src/uct/gpumem, named here
declare -A layer_files=(
    [context]="gpumem_context.c gpumem_context.h gpumem_settings.c
               gpumem_settings.h"
    [component]="gpumem_component.c gpumem_component.h"
)

# What the files of each layer may include of src/uct/gpumem, as paths
# (a prefix ending in / is a directory). The memory core and the layers it
# stands on are the glue's to include, but no driver: the context alone
# opens one, through the table of drivers. No file includes the emulator's
# (emu/), which is made over the plugin: the table loads it by name.
context_h="gpumem_context.h gpumem_settings.h"
declare -A includes=(
    [util]="util/"
    [topo]="topo/ util/"
    [driver]="driver/ topo/ util/"
    [mem]="mem/ driver/gpumem_driver.h topo/ util/"
    [reg]="reg/ util/"
    [compat]="compat/ util/"
    [context]="$context_h compat/ mem/
               driver/gpumem_driver.h driver/gpumem_drivers.h topo/ util/"
    [base]="base/ $context_h compat/ mem/ topo/ util/"
    [copy]="copy/ base/ $context_h compat/ mem/ topo/ util/"
    [ipc]="ipc/ base/ $context_h compat/ mem/ topo/ util/"
    [ib]="ib/ $context_h compat/ reg/ mem/ topo/ util/"
    [rc]="rc/ ib/ib_md.h base/ $context_h compat/ reg/ mem/ topo/ util/"
    [api]="api/ ipc/ipc_stats.h rc/rc_stats.h $context_h compat/ mem/ topo/
           util/"
    [component]="gpumem_component.h copy/ ipc/ ib/ rc/ base/ $context_h
                 compat/ reg/ mem/ topo/ util/"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The self-test's wrong includes: the file, its include line, what it is
cat > "$work/wrong-includes" <<'EOF'
mem/wrong.c|<uct/gpumem/driver/cuda/cuda_driver.h>|mem including a driver's own header
copy/wrong.c|"../driver/cuda/cuda_driver.h"|copy including a driver's own header
topo/wrong.c|"../gpumem_context.h"|topo including the context
mem/wrong.c|<uct/gpumem/copy/copy_ep.h>|mem including the copy transport
compat/wrong.c|<uct/gpumem/gpumem_context.h>|compat including the context
gpumem_settings.c|<uct/gpumem/base/gpumem_iface.h>|the context including base
base/wrong.c|<uct/gpumem/copy/copy_iface.h>|base including a transport
copy/wrong.c|<uct/gpumem/driver/gpumem_driver.h>|copy including the driver
copy/wrong.c|<uct/gpumem/ipc/ipc_iface.h>|copy including ipc's own header
ipc/wrong.c|<uct/gpumem/rc/rc_ep.h>|ipc including rc's own header
ib/wrong.c|<uct/gpumem/rc/rc_iface.h>|ib including the rc transport
rc/wrong.c|<uct/gpumem/ib/ib_device.h>|rc including ib's own header
api/wrong.c|<uct/gpumem/ipc/ipc_cache.h>|api including ipc's own header
ipc/wrong.c|<uct/gpumem/mem/gpumem_mem_int.h>|ipc including mem's _int.h
gpumem_component.c|"driver/cuda/cuda_driver.h"|the component including a driver's own header
driver/wrong.c|<emu/machine/emu.h>|the table of drivers including the emulator
gpumem_context.c|<emu/machine/emu.h>|the context including the emulator
wrong/wrong.c|<stddef.h>|a file in no layer
EOF

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
    if [ -z "$calls" ] && [ "$(ar t "$1" | grep -c '\.o$')" -ge 2 ]; then
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
        elif [ "$inc" != "${inc#emu/}" ]; then
            echo "!$inc"   # the emulator's, which depends on the plugin
        else
            echo "=$inc"   # not ours: a system or UCX header, or config.h
        fi
    done
}

# The layer of file $1, a path under src/uct/gpumem; nothing where it is
# in none
layer_of() {
    local file=$1 layer name
    for layer in $all_layers; do
        if [ -z "${layer_files[$layer]+set}" ]; then
            case "$file" in "$layer"/*) echo "$layer"; return ;; esac
        else
            for name in ${layer_files[$layer]}; do
                [ "$file" = "$name" ] && { echo "$layer"; return; }
            done
        fi
    done
}

# Whether the includes of the files under $1 keep to their layers; prints
# each that does not
check_includes() {
    local root=$1 layer file rel path allowed ok bad=0 files=0
    for layer in $all_layers; do
        if [ -z "${layer_files[$layer]+set}" ] && [ ! -d "$root/$layer" ]; then
            echo "check-layers: no $root/$layer: not the plugin's sources"
            return 1
        fi
    done

    while IFS= read -r file; do
        rel=${file#"$root"/}
        files=$((files + 1))
        layer=$(layer_of "$rel")
        if [ -z "$layer" ]; then
            echo "check-layers: $rel is in no layer"
            bad=1
            continue
        fi
        while IFS= read -r path; do
            case "$path" in
            =*) continue ;;
            !*)
                echo "check-layers: $rel ($layer) includes the emulator's" \
                     "${path#!}: the plugin takes the emulator through its" \
                     "table of drivers alone"
                bad=1
                continue ;;
            esac
            ok=0
            for allowed in ${includes[$layer]}; do
                case "$path" in "$allowed"*) ok=1 ;; esac
            done
            if [ "$ok" -eq 0 ]; then
                echo "check-layers: $rel ($layer) includes $path, which" \
                     "$layer may not"
                bad=1
            fi
            # What a directory keeps to itself
            case "$path" in
            *_int.h)
                if [ "$(dirname "$path")" != "$(dirname "$rel")" ]; then
                    echo "check-layers: $rel ($layer) includes $path, the" \
                         "internal header of another directory"
                    bad=1
                fi ;;
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
    # Calls up the layers or across the transports, which must not link:
    # the layer that calls, the function it calls, and what that is
    while IFS='|' read -r layer func what; do
        printf '%s\n' "void $func(void);" \
               "void gpumem_check_layers_wrong(void)" "{" "    $func();" "}" \
               > "$work/wrong.c"
        $cc -fPIC -c -o "$work/wrong.o" "$work/wrong.c"
        if link_layer "$layer" "$libdir/libgpumem_$layer.a" "$work/wrong.o" \
                > "$work/self.log"; then
            echo "check-layers: self-test: $what linked" >&2
            exit 1
        fi
        grep -q "$func" "$work/self.log" || {
            echo "check-layers: self-test: $what: the wrong call was not" \
                 "named:" >&2
            cat "$work/self.log" >&2
            exit 1
        }
        echo "check-layers: self-test: $what fails to link"
    done <<'EOF'
topo|uct_gpumem_context_put|a call from topo to the context
compat|uct_gpumem_context_put|a call from compat to the context
context|uct_gpumem_ep_fence|a call from the context to base
base|uct_gpumem_copy_ep_put_short|a call from base to the copy transport
copy|uct_gpumem_ipc_stats|a call from the copy transport to ipc
ib|uct_gpumem_rc_bytes|a call from the ib domains to the rc transport
api|uct_gpumem_copy_ep_put_short|a call from api to the copy transport
EOF

    # Wrong includes, each in a tree of the layers' directories that passes
    # without it; a quoted name is resolved from the file's directory, as
    # the compiler does
    for layer in $all_layers driver/cuda; do
        [ -n "${layer_files[$layer]+set}" ] || mkdir -p "$work/src/$layer"
    done
    while IFS='|' read -r file inc what; do
        target=${inc#?}
        target=${target%?}
        target=${target#uct/gpumem/}
        target=${target#../}
        case "$target" in
        emu/*) ;;   # the emulator's, outside the plugin's tree
        */*|gpumem_*) touch "$work/src/$target" ;;
        esac
    done < "$work/wrong-includes"
    if ! check_includes "$work/src" > "$work/self.log"; then
        echo "check-layers: self-test: the tree without a wrong include" \
             "fails:" >&2
        cat "$work/self.log" >&2
        exit 1
    fi
    while IFS='|' read -r file inc what; do
        mkdir -p "$(dirname "$work/src/$file")"
        printf '#include %s\n' "$inc" > "$work/src/$file"
        if check_includes "$work/src" > "$work/self.log" ||
           ! grep -qF "$file" "$work/self.log"; then
            echo "check-layers: self-test: $what ($file: #include $inc)" \
                 "passed:" >&2
            cat "$work/self.log" >&2
            exit 1
        fi
        echo "check-layers: self-test: $what fails"
        rm "$work/src/$file"
    done < "$work/wrong-includes"

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
    echo "check-layers: self-test: two objects calling each other fail"
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
