#!/usr/bin/env bash
# The tests across two machines, run on gpumem-a by "make check-vm2"
# (test/vm/run --two; gpumem-b is reached by ssh):
#   identity  test/rc/reach_test between the machines both ways:
#             gpumemipc and gpumemcpy do not reach the other machine's
#             addresses, gpumem_rc does (and two processes of one machine:
#             gpumemipc and gpumem_rc reach, gpumemcpy only its own process)
#   p2p       test/rc/mpi_hosts_test with 4 ranks, 2 a host: device buffers
#             both ways between every pair, every byte checked, each pair's
#             bytes on gpumemipc within a host and gpumem_rc between hosts
#   refused-read
#             a read that the peer's device refuses (sent again after a
#             20 ms time-out, it comes after the memory's deregistration)
#             ends the job with gpumem_rc's reason within a bound
#   osc       one-sided put and get on windows of device memory (osc ucx)
#   osu       osu_latency and osu_bw -c -d cuda D D, one rank a machine,
#             through a CUDA-aware Open MPI on emulated CUDA (gpumem-emu,
#             the cuda driver) over gpumem_rc: every size validated. Only
#             where GPUMEM_OSU_MPI (its prefix) and GPUMEM_OSU_BIN (OSU's
#             libexec/osu-micro-benchmarks/mpi) are given, shared at the same
#             paths on both machines (make check-vm2 does)
#   dead-peer gpumem-b is killed (kill -9 of its qemu) while the ranks
#             stream to it: the job must end with an error within a bound,
#             leaving no process on gpumem-a, and the killed ranks'
#             emulated-GPU state must be taken over and unlinked by the
#             next job there
# After each test but dead-peer and osu, the link between the machines must
# have dropped no packet (link_check).
# Run from the top of a built tree (the build directory); the tree must be
# at the same path on both machines.
#
# Usage: test/rc/hosts.sh [TEST...]   (default: all, dead-peer last)
set -uo pipefail

top=$PWD
peer=${GPUMEM_VM_PEER:-gpumem-b}
plugin=$top/src/uct/gpumem/.libs/libuct_gpumem.so
# On the build's emulated GPUs, as gpumem-emu runs a program, on both
# machines ($emu_env through ssh, and mpirun's -x)
build=$top
. "$(dirname "$0")/../emu/emu_env.sh"
tests=("$@")
# After the one-sided and refused-read jobs, soft-RoCE's kernel code has
# taken gpumem-b's kernel down under the next heavy traffic (OSU's, in
# test/vm/README.md): they come after the others, before dead-peer, which
# kills gpumem-b anyway (make check-vm2 runs each on machines of its own)
[ ${#tests[@]} -gt 0 ] || tests=(identity p2p osu osc refused-read dead-peer)

say() { echo "hosts.sh: $*"; }
failed=()
reasons=()
# A failure of the test running now: said, and said again at the end (a
# long log's tail is what a reader sees first)
fault() { say "$*"; reasons+=("$*"); }
# The lines of a job's output that say why it failed: the first few
causes() {
    local line lines
    lines=$(grep -m 4 -E "ssh:|Permission denied|Host key|No route|Connection (refused|timed out|closed|reset)|unable to reliably start|lost communication|stalled, ending|exited on signal|stopped by signal (7|11)|FAIL|WRONG|arrived wrong|ERROR|error:" <<<"$1" |
                cut -c1-200)
    while read -r line; do
        [ -z "$line" ] || fault "  $line"
    done <<<"$lines"
}
# What gpumem-b says of itself after a failure: whether it still answers,
# its memory and the end of its kernel's log
peer_state() {
    if [ -e "$GPUMEM_VM_CTL/peer-gone" ]; then
        fault "$1: $peer had ended by itself (test/vm/run saw its qemu end)"
        return
    fi
    if ! timeout -k 5 30 ssh -o ConnectTimeout=10 -o BatchMode=yes \
            -o ServerAliveInterval=5 -o ServerAliveCountMax=2 "$peer" \
            'uptime; free -m | sed -n 2p; pgrep -a "orted|mpi_hosts_test";
             dmesg | tail -n 8' 2>&1 | sed "s/^/  $peer: /"; then
        fault "$1: $peer does not answer ssh"
    fi
}

if [ -z "${GPUMEM_VM_CTL:-}" ]; then
    say "skipped: not on the main machine of test/vm/run --two"
    exit 0
fi

# The emulated GPUs' state: the default directory (/dev/shm), each
# machine's own. The last process to leave a GPU unlinks its state: nothing
# may stay there after a job.
shm_state() { ls -A /dev/shm; }
shm_state >/tmp/hosts-shm-before
shm_left() {
    shm_state >/tmp/hosts-shm-after
    comm -13 /tmp/hosts-shm-before /tmp/hosts-shm-after
}
shm_clean() {
    local left
    left=$(shm_left)
    [ -z "$left" ] && return 0
    fault "$1: emulated-GPU state left in /dev/shm:" $left
    return 1
}
have_mpi() {
    [ -x test/rc/mpi_hosts_test ] && return 0
    say "$1 skipped: test/rc/mpi_hosts_test was not built (configure found" \
        "no MPI)"
    return 1
}

# What every rank needs, and what a user on real hardware would set too:
# pml ucx on any NIC (Open MPI 4.1 takes mlx5 devices only by default), the
# plugin, one GPU per local rank (mpi_hosts_test sets UCX_GPUMEM_ALLOC_GPU).
# UCX_UD_VERBS_ETH_DGID_CHECK=n is soft-RoCE's (test/vm/README.md).
# UCX_GPUMEM_RC_TIMEOUT: soft-RoCE under emulation now and then answers a
# large RDMA READ so slowly that, after the default 1 s, the reader's device
# sends the read again. When the first answer then completes the read, UCX
# deregisters the memory once told, and the copy that reaches the peer
# after that is refused by its device, which fails the queue pair (gpumem_rc
# fails the endpoint and says "moved to the error state by the device").
# Devices answer in microseconds: 8 s keeps such reads rare here.
#   mpirun_hosts SECONDS [HOSTS NP] ARGS...   (default gpumem-a:2,PEER:2 4)
mpirun_hosts() {
    local seconds=$1 hosts=gpumem-a:2,$peer:2 np=4; shift
    if [[ $1 == gpumem-* ]]; then hosts=$1 np=$2; shift 2; fi
    timeout -k 10 "$seconds" mpirun --allow-run-as-root \
        --host "$hosts" -np "$np" \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self --mca oob_tcp_if_include eth0 \
        --mca plm_rsh_args "-o ServerAliveInterval=5 -o ServerAliveCountMax=4" \
        --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 \
        --mca oob_tcp_keepalive_probes 5 \
        -x LD_PRELOAD="$plugin" -x UCX_UD_VERBS_ETH_DGID_CHECK=n \
        -x UCX_GPUMEM_DRIVER -x LD_LIBRARY_PATH \
        -x UCX_NET_DEVICES="${UCX_NET_DEVICES:-rxe0:1}" \
        -x UCX_GPUMEM_RC_TIMEOUT="${UCX_GPUMEM_RC_TIMEOUT:-8s}" \
        "$@"
}

test_identity() {
    local port=$((20000 + RANDOM % 10000)) out rc=0
    # Across: the server on the peer, the client here; each checks.
    ssh "$peer" "cd '$top' && $emu_env UCX_LOG_LEVEL=diag timeout -k 5 60 \
        test/rc/reach_test server $port other" >/tmp/reach-b.log 2>&1 &
    local server=$!
    sleep 3
    out=$(UCX_LOG_LEVEL=diag timeout -k 5 60 \
              test/rc/reach_test client "$peer" $port other 2>&1) ||
        { fault "identity: reach_test's client to $peer failed"; rc=1; }
    wait $server ||
        { fault "identity: reach_test's server on $peer failed"; rc=1; }
    echo "$out"
    cat /tmp/reach-b.log
    # Each side says why gpumemipc refuses
    grep -q "gpumem_ipc: a peer on another machine" <<<"$out" ||
        { fault "identity: gpumem-a logged no 'another machine' reason"; rc=1; }
    grep -q "gpumem_ipc: a peer on another machine" /tmp/reach-b.log ||
        { fault "identity: $peer logged no 'another machine' reason"; rc=1; }
    # The same test between two processes of one machine must see them
    # reach: the test tells the two cases apart.
    port=$((port + 1))
    timeout -k 5 60 test/rc/reach_test server $port same &
    server=$!
    sleep 2
    timeout -k 5 60 test/rc/reach_test client gpumem-a $port same ||
        { fault "identity: reach_test's client on one machine failed"; rc=1; }
    wait $server ||
        { fault "identity: reach_test's server on one machine failed"; rc=1; }
    return $rc
}

# OSU's point-to-point benchmarks between the machines, as a user runs them
# on GPU nodes: a CUDA-aware Open MPI, a rank a machine on its emulated
# GPUs (gpumem-emu, which each rank runs on its own machine), gpumem_rc
# between them
test_osu() {
    local bench out rc=0 bad status
    if [ -z "${GPUMEM_OSU_MPI:-}" ] || [ -z "${GPUMEM_OSU_BIN:-}" ]; then
        say "osu skipped: no CUDA-aware Open MPI and OSU given" \
            "(GPUMEM_OSU_MPI, GPUMEM_OSU_BIN; make check-vm2 gives them)"
        return 0
    fi
    # Over the kernel's default queue, which drops packets that wait, as
    # before the lossless one (test/vm/init): over that, rxe's kernel code
    # took a kernel down in three of four OSU runs (test/vm/README.md)
    link_queue fq_codel
    # Few iterations: soft-RoCE under emulation moves a few MB/s
    local -A iters=([osu_latency]="-i 4 -x 1" [osu_bw]="-i 2 -x 1 -W 4")
    for bench in osu_latency osu_bw; do
        status=0
        out=$(osu_run "$bench" "${iters[$bench]}") || status=$?
        # A rank that died by a signal (its process's memory found
        # corrupted, UCX's own structures: not understood yet) runs once
        # more, said; the second run must pass whole
        if grep -q "exited on signal\|Caught signal" <<<"$out"; then
            echo "$out" | grep -A 8 "Caught signal" | head -n 12
            say "osu: BUG: a rank of $bench died by a signal (above):" \
                "once more"
            status=0
            out=$(osu_run "$bench" "${iters[$bench]}") || status=$?
        fi
        [ "$status" -eq 0 ] || { fault "osu: $bench exited $status"; rc=1; }
        echo "$out" | tail -n 25
        bad=$(awk '/^[0-9]+[ \t]/ && $NF != "Pass" { print $1 }' <<<"$out")
        if [ "$(grep -cE '^[0-9]+[ \t].*Pass$' <<<"$out")" -ne 21 ] ||
           [ -n "$bad" ]; then
            fault "osu: $bench did not validate every size from 1 B to" \
                "1 MiB${bad:+ (not at $bad)}"
            causes "$out"
            rc=1
        fi
    done
    link_queue "$LINK_QUEUE"
    return $rc
}

# One OSU point-to-point benchmark BENCH with its ITERATIONS options, a rank
# a machine, its output on stdout:   osu_run BENCH ITERATIONS
osu_run() {
    # shellcheck disable=SC2086
    timeout -k 10 300 "$GPUMEM_OSU_MPI/bin/mpirun" \
        --allow-run-as-root --host "gpumem-a:1,$peer:1" -np 2 \
        --mca pml ucx --mca pml_ucx_tls any \
        --mca pml_ucx_devices any --mca btl self \
        --mca oob_tcp_if_include eth0 \
        -x UCX_UD_VERBS_ETH_DGID_CHECK=n \
        -x GPUMEM_EMU_DIR="$top/emu/.libs" \
        -x GPUMEM_PLUGIN="$plugin" \
        -x UCX_TLS="${GPUMEM_OSU_TLS:-gpumem_rc,gpumemcpy,ud_verbs,self,sm}" \
        -x UCX_NET_DEVICES="${UCX_NET_DEVICES:-rxe0:1}" \
        -x UCX_GPUMEM_RC_TIMEOUT="${UCX_GPUMEM_RC_TIMEOUT:-8s}" \
        "$top/emu/gpumem-emu" --driver cuda -- \
        "$top/src/tools/gpumem-preload" \
        "$GPUMEM_OSU_BIN/pt2pt/$1" -c -d cuda -m 1:1048576 \
        $2 D D 2>&1
}

# Seconds the four-rank job may take (2 to 5 minutes on the 2-core
# machine, 7 when the machine is busy besides); a job stopped at the limit
# says where each rank was
P2P_LIMIT=${P2P_LIMIT:-600}

test_p2p() {
    local out rc=0 status=0
    have_mpi p2p || return 0
    out=$(mpirun_hosts "$P2P_LIMIT" test/rc/mpi_hosts_test p2p 16m 2>&1) ||
        status=$?
    echo "$out" | grep -v "refuses to register dma-bufs"
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        fault "p2p: the job did not end within $P2P_LIMIT s"; rc=1
    elif [ "$status" -ne 0 ]; then
        fault "p2p: mpirun exited $status"; rc=1
    fi
    # 6 pairs, each with its transport asserted by the program
    [ "$(grep -c "^pair .*: gpumem" <<<"$out")" -eq 6 ] ||
        { fault "p2p: not every pair reported its transport"; rc=1; }
    [ "$rc" -eq 0 ] || causes "$out"
    shm_clean p2p || rc=1
    return $rc
}

test_osc() {
    local out rc=0 status=0
    have_mpi osc || return 0
    # UCX 1.13's first protocols put short messages with the CPU whatever
    # the memory (a fault on device memory): its new ones ask the memory.
    out=$(mpirun_hosts 300 --mca osc ucx -x UCX_PROTO_ENABLE=y \
              test/rc/mpi_hosts_test osc 1m 2>&1) || status=$?
    echo "$out" | grep -v "refuses to register dma-bufs"
    [ "$status" -eq 0 ] ||
        { fault "osc: mpirun exited $status"; causes "$out"; rc=1; }
    shm_clean osc || rc=1
    return $rc
}

# Seconds within which a job whose read was refused must end
REFUSED_BOUND=${REFUSED_BOUND:-120}

# A read that the peer's device refuses ends the job with the reason, at
# once, not a receive taken for done and a sender that waits for ever: a
# retransmission time-out of 20 ms makes soft-RoCE send large reads again,
# and copies come after the memory's deregistration (mpirun_hosts above).
# Without the domains' registration cache: a cached registration stays
# after its deregistration, by design, and no read is refused.
test_refused_read() {
    local out status=0 t0 elapsed rc=0
    have_mpi refused-read || return 0
    t0=$(date +%s)
    out=$(UCX_GPUMEM_RC_TIMEOUT=20ms \
          mpirun_hosts $((REFUSED_BOUND + 60)) gpumem-a:1,$peer:1 2 \
              -x GPUMEM_PINGPONG_ITERS=200 -x UCX_GPUMEM_IB_RCACHE=no \
              test/rc/mpi_hosts_test pingpong 4m 2>&1) || status=$?
    elapsed=$(( $(date +%s) - t0 ))
    grep -v "refuses to register dma-bufs" <<<"$out" | grep -v "^/" |
        tail -n 15
    say "refused-read: mpirun exited $status after $elapsed s" \
        "(bound $REFUSED_BOUND s)"
    if [ "$status" -eq 0 ]; then
        # Every copy came while the memory was still registered: nothing
        # was refused, and nothing is asserted
        say "refused-read: skipped: no read was refused in 200 round trips"
    elif ! grep -q "moved to the error state by the device" <<<"$out"; then
        fault "refused-read: the job failed, but not with a refused read"
        causes "$out"; rc=1
    elif grep -q "stalled, ending the job\|no progress for" <<<"$out" ||
         [ "$elapsed" -gt "$REFUSED_BOUND" ]; then
        fault "refused-read: the job did not end within $REFUSED_BOUND s"
        rc=1
    fi
    # The aborted ranks' GPU state: taken over and unlinked by a job on
    # both machines
    mpirun_hosts 120 gpumem-a:1,$peer:1 2 test/rc/mpi_hosts_test p2p 64k 2>&1 |
        grep "pair\|passed\|FAIL"
    [ "${PIPESTATUS[0]}" -eq 0 ] ||
        { fault "refused-read: the job after it failed"; rc=1; }
    shm_clean refused-read || rc=1
    return $rc
}

# Seconds within which the job must end once the peer has died
DEAD_PEER_BOUND=${DEAD_PEER_BOUND:-120}

test_dead_peer() {
    local log=/tmp/dead-peer.log t0 t1 elapsed status rc=0 left i
    have_mpi dead-peer || return 0
    rm -f "$GPUMEM_VM_CTL/kill-peer"
    mpirun_hosts $((DEAD_PEER_BOUND + 120)) \
        test/rc/mpi_hosts_test stream 1m >"$log" 2>&1 &
    local job=$!
    # Once both of this host's ranks say their data flows, the peer dies.
    for ((i = 0; i < 900; i++)); do
        [ "$(grep -c "streaming to" "$log")" -lt 2 ] || break
        kill -0 $job 2>/dev/null || break
        sleep 0.2
    done
    if [ "$(grep -c "streaming to" "$log")" -lt 2 ]; then
        cat "$log"
        fault "dead-peer: the job did not start streaming"
        causes "$(cat "$log")"
        wait $job
        return 1
    fi
    touch "$GPUMEM_VM_CTL/kill-peer"
    for ((i = 0; i < 100; i++)); do
        [ ! -e "$GPUMEM_VM_CTL/peer-killed" ] || break
        sleep 0.1
    done
    t0=$(date +%s.%N)
    wait $job
    status=$?
    t1=$(date +%s.%N)
    elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
    grep -v "refuses to register dma-bufs" "$log" | tail -n 25
    say "dead-peer: mpirun exited $status $elapsed s after $peer died" \
        "(bound $DEAD_PEER_BOUND s)"
    if [ "$status" -eq 0 ]; then
        fault "dead-peer: the job succeeded without its peer"; rc=1
    elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ] ||
         [ "$elapsed" -gt "$DEAD_PEER_BOUND" ]; then
        fault "dead-peer: the job did not end within $DEAD_PEER_BOUND s"; rc=1
    fi
    # Who noticed: a rank's MPI call, or mpirun losing the peer's daemon
    grep -h "MPI error after\|lost communication\|ORTE has lost\|daemon" \
        "$log" | head -n 5
    sleep 2
    left=$(pgrep -a -f "mpi_hosts_test|orted|mpirun" || true)
    if [ -n "$left" ]; then
        fault "dead-peer: processes left behind:"; echo "$left"; rc=1
        kill -9 $(pgrep -f "mpi_hosts_test|orted|mpirun") 2>/dev/null
    fi
    # Ranks that mpirun kills do not leave their GPUs: their state stays
    # until the next process of the machine takes it over, and the last of
    # those to leave unlinks it.
    left=$(shm_left)
    if [ -n "$left" ]; then
        say "dead-peer: the killed ranks left their GPUs' state:" $left
        say "dead-peer: a job on gpumem-a alone takes it over"
        mpirun_hosts 120 gpumem-a:2 2 test/rc/mpi_hosts_test p2p 64k 2>&1 |
            grep -v "refuses to register dma-bufs" | grep "pair\|passed\|FAIL"
        [ "${PIPESTATUS[0]}" -eq 0 ] || { fault "dead-peer: that job failed"; rc=1; }
    fi
    shm_clean dead-peer || rc=1
    return $rc
}

# eth0's queue on both machines: the lossless one test/vm/init sets, or
# another for a test that needs it (osu)
LINK_QUEUE="pfifo limit 100000"
#   link_queue QDISC...
link_queue() {
    # shellcheck disable=SC2068
    tc qdisc replace dev eth0 root $@ &&
        timeout -k 5 30 ssh -o BatchMode=yes "$peer" \
            "tc qdisc replace dev eth0 root $*" ||
        say "cannot give eth0 the queue '$*' on both machines"
}

# This machine's link counters, "DROPPED RETRIES": the packets its eth0
# dropped (its queue and its device) and the times its rxe sent packets
# again (a gap in the answers, or a retransmission time-out)
link_counters() {
    local stats=/sys/class/net/eth0/statistics queued
    queued=$(tc -s qdisc show dev eth0 |
                 awk '/dropped/ { sub(",", "", $7); print $7; exit }')
    echo "$(( ${queued:-0} + $(cat $stats/rx_dropped) +
              $(cat $stats/tx_dropped) ))" \
         "$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/completer_retry_err)"
}
# Both machines': "DROPPED_A RETRIES_A DROPPED_B RETRIES_B"
link_counters_both() {
    echo "$(link_counters)" \
         "$(timeout -k 5 30 ssh -o BatchMode=yes "$peer" \
                "$(declare -f link_counters); link_counters" 2>/dev/null)"
}
# The link between the machines must drop nothing while a test runs: a
# RoCE fabric does not, and rxe finds a packet lost at the end of a burst
# only when its retransmission time-out fires (8 s, mpirun_hosts above),
# which once stopped a job's transfers for minutes (test/vm/init).
#   link_check TEST "COUNTERS BEFORE"
link_check() {
    local -a before after
    read -ra before <<<"$2"
    read -ra after <<<"$(link_counters_both)"
    if [ "${#before[@]}" -ne 4 ] || [ "${#after[@]}" -ne 4 ]; then
        say "$1: the link's counters could not be read (${after[*]})"
        return 0
    fi
    say "$1: rxe sent packets again $((after[1] - before[1])) times on" \
        "gpumem-a, $((after[3] - before[3])) on $peer"
    local dropped=$((after[0] - before[0] + after[2] - before[2]))
    [ "$dropped" -eq 0 ] && return 0
    fault "$1: the link between the machines dropped $dropped packets" \
        "(gpumem-a $((after[0] - before[0])), $peer" \
        "$((after[2] - before[2])))"
    return 1
}

# GPUMEM_HOSTS_PASSED: a file that lists the tests passed by an earlier
# pair of machines, whose gpumem-b's kernel died under a later test
# (make check-vm2 runs the rest on two new machines); each test that
# passes is added to it
passed_before() {
    [ -n "${GPUMEM_HOSTS_PASSED:-}" ] && [ -f "$GPUMEM_HOSTS_PASSED" ] &&
        grep -qxF "$1" "$GPUMEM_HOSTS_PASSED"
}

for t in "${tests[@]}"; do
    t0=$(date +%s)
    say "--- $t"
    if passed_before "$t"; then
        say "$t passed on the machines before these"
        continue
    fi
    if [ -e "$GPUMEM_VM_CTL/peer-gone" ]; then
        fault "$t: not run: $peer had ended by itself"
        failed+=("$t")
        continue
    fi
    # Named to test/vm/run, which says it where a kernel dies under it
    echo "hosts.sh $t" >"$GPUMEM_VM_CTL/step"
    link_before=$(link_counters_both)
    if "test_${t//-/_}" &&
       # gpumem-b is dead on purpose after dead-peer; osu runs over a queue
       # that drops
       { [ "$t" = dead-peer ] || [ "$t" = osu ] ||
         link_check "$t" "$link_before"; }; then
        say "$t passed ($(( $(date +%s) - t0 )) s)"
        [ -z "${GPUMEM_HOSTS_PASSED:-}" ] || echo "$t" >>"$GPUMEM_HOSTS_PASSED"
    else
        say "$t FAILED ($(( $(date +%s) - t0 )) s)"
        failed+=("$t")
        # gpumem-b is dead on purpose after dead-peer
        [ "$t" = dead-peer ] || peer_state "$t"
    fi
    echo "hosts.sh, after $t" >"$GPUMEM_VM_CTL/step"
done
if [ ${#failed[@]} -gt 0 ]; then
    say "why, in short:"
    printf '  %s\n' ${reasons[@]+"${reasons[@]}"}
    say "failed: ${failed[*]}"
    exit 1
fi
say "all passed: ${tests[*]}"
