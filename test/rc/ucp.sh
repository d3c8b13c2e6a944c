#!/usr/bin/env bash
# Runs test/rc/rc_ucp_test in the soft-RoCE VM: two processes move device
# buffers through UCP with gpumem_rc as the only transport between them
# (ud_verbs for wire-up, gpumemcpy for staging; no transport of one
# machine), tag and RMA with every byte checked, then the remote access
# error from host and from device memory. Prints the lanes and fails unless
# the data lanes are gpumem_rc's.
#
# Usage: test/rc/ucp.sh [max size, default 4m]
set -uo pipefail
cd "$(dirname "$0")/../.."
# On the build's emulated GPUs, as gpumem-emu runs a program
build=$PWD
. test/emu/emu_env.sh

max=${1:-4m}
export UCX_TLS=gpumem_rc,gpumemcpy,ud_verbs
export UCX_NET_DEVICES=rxe0:1
export UCX_UD_VERBS_ETH_DGID_CHECK=n
export UCX_GPUMEM_EMU_SHM_DIR=${UCX_GPUMEM_EMU_SHM_DIR:-$(mktemp -d)}

status=0
run() {
    local name=$1 out rc
    shift
    out=$(env "$@" 2>&1)
    rc=$?
    echo "$out" | grep -v "refuses to register dma-bufs"
    if [ $rc -ne 0 ]; then
        echo "ucp.sh: $name failed ($rc)" >&2
        status=1
        return
    fi
    # Data lanes: rma_bw (rendezvous zero-copy) and rma on gpumem_rc
    if ! echo "$out" | grep -q "gpumem_rc/rxe0:1.* rma_bw"; then
        echo "ucp.sh: $name: no rma_bw lane on gpumem_rc" >&2
        status=1
    fi
}

run tag timeout -k 5 180 test/rc/rc_ucp_test tag "$max"
# UCX 1.13's first protocols put short and bcopy with the CPU whatever the
# memory; its new protocols ask the memory type (and print their choice).
run rma UCX_PROTO_ENABLE=y UCX_PROTO_INFO=y \
    timeout -k 5 180 test/rc/rc_ucp_test rma "$max"
# The remote access error, with peer failure handling, of a key whose
# memory the peer unmapped and freed (the domain's cache keeps what is only
# unmapped; a free takes it from the device): from host memory
# with the first protocols, and from device memory with the new ones, which
# put 64 KiB zero-copy on gpumem_rc (smaller device puts they emulate with
# active messages, which no key guards: README, gpumem_rc)
run access timeout -k 5 180 test/rc/rc_ucp_test access 64k
run access-device UCX_PROTO_ENABLE=y \
    timeout -k 5 180 test/rc/rc_ucp_test access-device 64k
exit $status
