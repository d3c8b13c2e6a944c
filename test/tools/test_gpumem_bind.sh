#!/bin/sh
# Tests of gpumem-bind: the GPU and NIC it gives a rank for each launcher's
# local-rank variable, what it leaves alone, its errors, and four ranks of
# mpirun on the XE8640 and Lassen exports (skipped without mpirun).
#
# Usage: test_gpumem_bind.sh BUILDDIR SRCDIR
#   BUILDDIR  the top build directory (src/tools/gpumem-bind, gpumem_topo)
#   SRCDIR    the top source directory (with test/topologies)
#
# See file LICENSE for terms.

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILDDIR SRCDIR" >&2
    exit 2
fi

case $1 in
/*) build=$1 ;;
*)  build=$(pwd)/$1 ;;
esac
case $2 in
/*) srcdir=$2 ;;
*)  srcdir=$(pwd)/$2 ;;
esac

bind=$build/src/tools/gpumem-bind
topologies=$srcdir/test/topologies
xe8640=$topologies/fluxcore-ipa20-dellXE8640-4xH100-2xCX7-1xCX6dual.xml
lassen=$topologies/mpibind-lassen-2xPOWER9-4xV100-2xCX5dual.xml
rank_vars="OMPI_COMM_WORLD_LOCAL_RANK SLURM_LOCALID MPI_LOCALRANKID"
rank_vars="$rank_vars PMIX_LOCAL_RANK PALS_LOCAL_RANKID"

if [ ! -x "$bind" ]; then
    echo "FAIL: $bind is not an executable" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem_bind_test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
cd "$tmp" || exit 1
mkdir sysfs

# Nothing of the caller's environment decides what is bound; no fact of
# this machine's sysfs is read
for var in $rank_vars UCX_NET_DEVICES UCX_GPUMEM_ALLOC_GPU \
           UCX_GPUMEM_DRIVER UCX_GPUMEM_TOPO_XML UCX_GPUMEM_TOPO_FACTS \
           GPUMEM_TOPO; do
    unset "$var"
done
UCX_GPUMEM_SYSFS_ROOT=$tmp/sysfs
UCX_LOG_LEVEL=warn
export UCX_GPUMEM_SYSFS_ROOT UCX_LOG_LEVEL

# What the bound command sees
show='echo "${UCX_GPUMEM_ALLOC_GPU-unset} ${UCX_NET_DEVICES-unset}"'

. "$srcdir/test/tools/test_report.sh"

# run NAME VAR=VALUE... -- ARGS...: gpumem-bind ARGS in an environment with
# the variables given, stdout to NAME.out, stderr to NAME.err, the exit
# status to $rc
run() {
    run_name=$1
    shift
    # The first "--" becomes gpumem-bind: "env VAR=VALUE... gpumem-bind ARGS"
    run_seen=0
    for run_arg; do
        shift
        if [ "$run_arg" = -- ] && [ $run_seen = 0 ]; then
            set -- "$@" "$bind"
            run_seen=1
        else
            set -- "$@" "$run_arg"
        fi
    done
    env "$@" >"$run_name.out" 2>"$run_name.err"
    rc=$?
}

# expect NAME DESCRIPTION RC STDOUT [STDERR]: run NAME's exit status, its
# whole stdout, and a text of its stderr ("" for none at all)
expect() {
    if [ "$rc" -ne "$3" ]; then
        fail "$2" "exit status $rc, expected $3: $(head -n 1 "$1.err")"
    elif [ "$(cat "$1.out")" != "$4" ]; then
        fail "$2" "printed '$(cat "$1.out")', expected '$4'"
    elif [ $# -ge 5 ] && [ -z "$5" ] && [ -s "$1.err" ]; then
        fail "$2" "said '$(head -n 1 "$1.err")'"
    elif [ $# -ge 5 ] && [ -n "$5" ] && ! grep -F -q -- "$5" "$1.err"; then
        fail "$2" "stderr does not say '$5': $(head -n 1 "$1.err")"
    else
        pass "$2"
    fi
}


# Each launcher's variable: local rank 1 is Lassen's second V100, bound to
# the second port of its socket's CX-5
for var in $rank_vars; do
    run $var UCX_GPUMEM_TOPO_XML="$lassen" $var=1 -- sh -c "$show"
    expect $var "$var=1 binds GPU 1 to mlx5_1:1" 0 "1 mlx5_1:1" ""
done

# The first variable set is the one read
run order UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=3 \
    OMPI_COMM_WORLD_LOCAL_RANK=2 PALS_LOCAL_RANKID=1 -- sh -c "$show"
expect order "OMPI_COMM_WORLD_LOCAL_RANK goes before SLURM_LOCALID" 0 \
    "2 mlx5_2:1"

# Ranks and GPU indices with leading zeros are decimal, not octal; a
# number past 9 digits is no local rank
run leading_zero UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=09 \
    -- sh -c "$show"
expect leading_zero "local rank 09 is rank 9, GPU 1" 0 "1 mlx5_1:1"
run long_rank UCX_GPUMEM_TOPO_XML="$lassen" \
    SLURM_LOCALID=12345678901234567890 -- true
expect long_rank "a 20-digit local rank exits 1" 1 "" "is not a local rank"

# CUDA_VISIBLE_DEVICES (a task of srun --gpus-per-task): the process sees
# only those GPUs, the first of which is its GPU 0, with the NIC of the
# machine's GPU it is
run visible UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=0 \
    CUDA_VISIBLE_DEVICES=2 -- sh -c "$show"
expect visible "CUDA_VISIBLE_DEVICES=2 binds GPU 0 to GPU 2's NIC" 0 \
    "0 mlx5_2:1"
run visible_two UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=1 \
    CUDA_VISIBLE_DEVICES=3,1 -- sh -c "$show"
expect visible_two "CUDA_VISIBLE_DEVICES=3,1 binds rank 1 to GPU 1's NIC" 0 \
    "1 mlx5_1:1"
run visible_uuid UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=0 \
    CUDA_VISIBLE_DEVICES=GPU-8c5e -- sh -c "$show"
expect visible_uuid "CUDA_VISIBLE_DEVICES by UUID binds nothing, saying so" \
    0 "unset unset" "names GPUs other than by their index"

# More ranks than GPUs: the local rank modulo the GPUs
run modulo UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=7 -- sh -c "$show"
expect modulo "local rank 7 of 4 GPUs takes GPU 3" 0 "3 mlx5_3:1"

# The XE8640's four H100s on four NICs, mlx5_3 not twice
for rank in 0 1 2 3; do
    run xe8640_$rank UCX_GPUMEM_TOPO_XML="$xe8640" MPI_LOCALRANKID=$rank \
        -- sh -c "$show"
done
expect xe8640_2 "XE8640 cuda2 takes the CX-6's second port" 0 "2 mlx5_1:1"
values=$(cat xe8640_0.out xe8640_1.out xe8640_2.out xe8640_3.out |
         awk '{ print $2 }' | sort -u | tr '\n' ' ')
if [ "$values" = "mlx5_0:1 mlx5_1:1 mlx5_2:1 mlx5_3:1 " ]; then
    pass "XE8640 local ranks 0-3 get 4 distinct NICs"
else
    fail "XE8640 local ranks 0-3 get 4 distinct NICs" "$values"
fi

# What is set already stays, said only with --verbose; a GPU set already
# takes its own NIC
run preset_nic UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=1 \
    UCX_NET_DEVICES=mlx5_0:1 -- sh -c "$show"
expect preset_nic "UCX_NET_DEVICES set already is left quietly" 0 \
    "1 mlx5_0:1" ""
run preset_verbose UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=1 \
    UCX_NET_DEVICES=mlx5_0:1 -- --verbose -- sh -c "$show"
expect preset_verbose "--verbose says UCX_NET_DEVICES was set already" 0 \
    "1 mlx5_0:1" "UCX_NET_DEVICES is set already (mlx5_0:1), not to mlx5_1:1"
run preset_gpu UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=0 \
    UCX_GPUMEM_ALLOC_GPU=2 -- sh -c "$show"
expect preset_gpu "UCX_GPUMEM_ALLOC_GPU set already takes its own NIC" 0 \
    "2 mlx5_2:1"
run preset_empty UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=1 \
    UCX_NET_DEVICES= -- sh -c "$show"
expect preset_empty "UCX_NET_DEVICES set empty is left as it is" 0 "1 "
run bad_gpu UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=0 \
    UCX_GPUMEM_ALLOC_GPU=4 -- sh -c "$show"
expect bad_gpu "UCX_GPUMEM_ALLOC_GPU past the GPUs exits 1" 1 "" \
    "the machine has 4 GPUs"

# The plugin's machine: the emu driver's built-in one has two GPUs and one
# NIC that its export gives no port of (the emulator's library found as the
# plugin finds it, on LD_LIBRARY_PATH); without the emulator, it says so
installed=$(sed -n 's/^emudir=\${GPUMEM_EMU_DIR:-\(.*\)}$/\1/p' \
                "$build/emu/gpumem-emu" 2>/dev/null)
if [ ! -e "$build/emu/gpumem-emu" ]; then
    echo "SKIP: UCX_GPUMEM_DRIVER=emu (this build has no emulator:" \
         "configure --disable-emu)"
else
    run emu UCX_GPUMEM_DRIVER=EMU LD_LIBRARY_PATH="$build/emu/.libs" \
        PMIX_LOCAL_RANK=1 -- sh -c "$show"
    expect emu "UCX_GPUMEM_DRIVER=emu binds as the emu's built-in machine" \
        0 "1 mlx5_0:1"
fi
if [ ! -e "$build/emu/gpumem-emu" ] ||
   [ -e "$installed/libgpumem_emu.so.0" ]; then
    echo "SKIP: UCX_GPUMEM_DRIVER=emu without the emulator (installed in" \
         "$installed)"
else
    run no_emu UCX_GPUMEM_DRIVER=emu PMIX_LOCAL_RANK=1 -- true
    expect no_emu "UCX_GPUMEM_DRIVER=emu without the emulator exits 1" 1 "" \
        "the emulator is not installed"
fi
# auto takes no emulated GPU: on a machine of none, nothing is bound
run auto_no_gpu UCX_GPUMEM_SYSFS_ROOT=/nonexistent \
    UCX_GPUMEM_TOPO_XML= PMIX_LOCAL_RANK=1 -- sh -c "$show"
if [ -z "$("$build/src/tools/gpumem_topo" --bind 2>/dev/null |
           awk 'NR > 2' | grep .)" ]; then
    expect auto_no_gpu "auto on a machine without GPU binds nothing" 0 \
        "unset unset" "no GPU on this machine"
else
    echo "SKIP: auto on a machine without GPU (this one has GPUs)"
fi
run bad_driver UCX_GPUMEM_DRIVER=rocm PMIX_LOCAL_RANK=1 -- true
expect bad_driver "an unknown UCX_GPUMEM_DRIVER exits 1" 1 "" \
    "UCX_GPUMEM_DRIVER=rocm"

# A NIC known only by its PCI address: the GPU is set, UCX_NET_DEVICES is
# not, and the reason is said
sed -e '/<object type="OSDev"/,/<\/object>/d' \
    -e '/<distances2 type="OSDev"/,/<\/distances2>/d' "$xe8640" \
    >xe8640-no-osdev.xml
run unnamed UCX_GPUMEM_TOPO_XML=$tmp/xe8640-no-osdev.xml SLURM_LOCALID=1 \
    -- sh -c "$show"
expect unnamed "a NIC without device name leaves UCX_NET_DEVICES unset" 0 \
    "1 unset" "only by its PCI address"

# No local rank: the command runs unbound, and the variables looked for
# are named
run no_rank UCX_GPUMEM_TOPO_XML="$lassen" -- sh -c "$show"
expect no_rank "without a local rank the command runs unbound" 0 \
    "unset unset" "none of $rank_vars"

# The command's exit status is the wrapper's
run status UCX_GPUMEM_TOPO_XML="$lassen" SLURM_LOCALID=0 -- sh -c 'exit 7'
expect status "the command's exit status comes back" 7 ""

# Errors: the reason, and exit 1; usage errors exit 2
run no_topo GPUMEM_TOPO=$tmp/no-such-tool SLURM_LOCALID=0 -- true
expect no_topo "no gpumem_topo exits 1 naming it" 1 "" "$tmp/no-such-tool"
run bad_xml UCX_GPUMEM_TOPO_XML=$tmp/no-such.xml SLURM_LOCALID=0 -- true
expect bad_xml "a topology that cannot be read exits 1" 1 "" \
    "cannot read the topology"
run bad_rank SLURM_LOCALID=one -- true
expect bad_rank "a local rank that is no number exits 1" 1 "" \
    "SLURM_LOCALID=one"
run no_command SLURM_LOCALID=0 --
expect no_command "no command exits 2" 2 "" "no command"
run bad_option SLURM_LOCALID=0 -- --no-such-option true
expect bad_option "an unknown option exits 2" 2 "" "no-such-option"
run help -- --help
if [ "$rc" -eq 0 ] && grep -q "mpirun -np 4 gpumem-bind -- ./app" help.out &&
   grep -q "PALS_LOCAL_RANKID" help.out; then
    pass "--help says how to run it and the variables it reads"
else
    fail "--help says how to run it and the variables it reads" \
         "exit status $rc"
fi


# Four ranks of mpirun: GPUs 0-3, each on a NIC of its own
# mpi_check NAME MACHINE XML: mpirun -np 4 of the command
mpi_check() {
    # Open MPI refuses root without both, and the test's own machine may
    # have fewer cores than ranks
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        UCX_GPUMEM_TOPO_XML=$3 timeout -k 5 120 \
        mpirun -np 4 --oversubscribe -x UCX_GPUMEM_TOPO_XML \
        -x UCX_GPUMEM_SYSFS_ROOT "$bind" -- \
        sh -c 'echo $OMPI_COMM_WORLD_LOCAL_RANK $UCX_GPUMEM_ALLOC_GPU \
                    $UCX_NET_DEVICES' >$1.out 2>$1.err
    rc=$?
    ranks=$(awk '$1 == $2 { print $2 }' $1.out | sort | tr '\n' ' ')
    nics=$(awk '{ print $3 }' $1.out | grep . | sort -u | wc -l | tr -d ' ')
    if [ "$rc" -ne 0 ]; then
        fail "$2: mpirun -np 4 binds 4 GPUs to 4 NICs" \
             "exit status $rc: $(head -n 1 $1.err)"
    elif [ "$ranks" != "0 1 2 3 " ] || [ "$nics" -ne 4 ]; then
        fail "$2: mpirun -np 4 binds 4 GPUs to 4 NICs" \
             "$(tr '\n' ';' <$1.out)"
    else
        pass "$2: mpirun -np 4 binds 4 GPUs to 4 NICs"
    fi
}

if command -v mpirun >/dev/null 2>&1; then
    mpi_check mpi_xe8640 XE8640 "$xe8640"
    mpi_check mpi_lassen Lassen "$lassen"
else
    skip "mpirun -np 4 of gpumem-bind: no mpirun (install openmpi-bin)"
fi

exit $failed
