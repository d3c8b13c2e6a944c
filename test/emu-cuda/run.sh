#!/usr/bin/env bash
# gpumem's cuda driver on the emulated CUDA: the build's libcuda.so.1 over
# the emu driver, taken by LD_LIBRARY_PATH, and UCX_GPUMEM_DRIVER=cuda. Both
# see the emu's built-in machine (its export and its GPUs' facts), with the
# emulated VRAM shared in a directory of the run's own. Runs the cuda
# driver's own tests, the memory domain, copy, IPC and API suites, and
# ucx_perftest -m cuda,cuda between two processes through gpumemcpy and
# gpumemipc (test/tools/test_perftest_rma.sh).
#   run.sh BUILDDIR
set -u
build=$1
work=$(mktemp -d /tmp/gpumem-emu-cuda.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0

mkdir "$work/shm" "$work/machine"
if ! "$build/test/emu-cuda/emu_cuda_machine" "$work/machine.xml" \
         "$work/machine.facts" "$work/machine"; then
    echo "FAIL: cannot write the emulated machine"
    exit 1
fi

export LD_LIBRARY_PATH=$build/src/uct/gpumem/driver/emu/cuda/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUMEM_TEST_DRIVER=cuda UCX_GPUMEM_DRIVER=cuda
export UCX_GPUMEM_TOPO_XML=$work/machine.xml
export UCX_GPUMEM_TOPO_FACTS=$work/machine.facts
export UCX_GPUMEM_SYSFS_ROOT=/nonexistent
export UCX_GPUMEM_EMU_SHM_DIR=$work/shm

suites='cuda*:emu_cuda*:md.*:md_config.*:component.*:api.*:copy_*'
suites+=':*/copy_ucp.*:ipc_*:*/ipc_ucp*'
# Not yet passing on the cuda driver: since gpumemipc maps between two GPUs
# of one process, a key of the process's own memory unpacks there as
# unreachable (UCS_ERR_UNREACHABLE) on the cuda driver, and the cuda driver
# has no count of the VRAM free (gpumem_device_mem_get_info)
not_yet='api.mem_get_info_tells_the_vram_an_allocation_takes'
not_yet+=':ipc_test.tag_between_two_contexts_of_one_process_keeps_vram_flat'
for case in address_reused_by_a_new_allocation_gets_a_fresh_mapping \
            bad_keys_are_refused_with_a_reason_and_map_nothing \
            ep_destroyed_with_copies_in_flight_still_lands_them \
            estimate_under_a_switch_follows_the_path_the_requests_take \
            fence_makes_short_put_land_after_earlier_zcopy \
            fence_orders_copies_that_overlap \
            idle_mappings_past_the_limit_go_oldest_first \
            iface_closed_with_copies_in_flight_is_clean \
            iface_flush_waits_for_every_ep \
            large_zcopy_completes_through_progress_and_flush_waits \
            mapping_of_the_processs_own_memory_goes_when_idle \
            put_get_bcopy_move_host_bytes_to_and_from_device_memory \
            put_get_zcopy_between_two_gpus_of_one_process \
            put_get_zcopy_of_host_memory_and_a_peers_device_memory \
            put_short_of_device_and_host_memory_lands_at_once \
            short_and_bcopy_leave_nothing_to_flush \
            unpacking_the_same_memory_twice_shares_one_mapping \
            zcopy_outside_the_keys_range_is_refused \
            zero_length_operations_are_done_at_once; do
    not_yet+=":ipc_uct.$case"
done
echo "SKIP: on the emulated CUDA, not yet passing: ${not_yet//:/ }"
suites+="-$not_yet"
if timeout -k 5 600 "$build/test/gtest/gtest" --gtest_filter="$suites"; then
    echo "PASS: gtest on the emulated CUDA"
else
    echo "FAIL: gtest on the emulated CUDA"
    failed=1
fi

# ucx_perftest's RMA between two processes, on the same GPUs
if ! bash "$(dirname "$0")/../tools/test_perftest_rma.sh" "$build"; then
    failed=1
fi
exit $failed
