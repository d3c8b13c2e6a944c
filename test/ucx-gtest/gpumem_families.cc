/**
 * gpumem in UCX's own googletest suite: the families of UCX's UCT tests,
 * from the source tree of the UCX that gpumem runs in, instantiated for
 * gpumem's transports (gpumemcpy, gpumemipc) and memory domains (gpumem,
 * gpumem_ipc). Nothing of UCX's is copied: each family's source is included
 * from that tree at build time, and this file is compiled once per family
 * with GPUMEM_UCX_FAMILY_<name> defined (contrib/ucx-gtest.sh). UCX's own
 * instantiations for its transports come along; the run selects gpumem's.
 *
 * Families left out, and why:
 *  - tag, amo_*, fence: tag matching and atomics, which neither transport
 *    has;
 *  - mm (test_uct_mm): the posix, sysv and xpmem transports' own;
 *  - tcp, ib, cm, sockaddr: those transports' own;
 *  - stats: UCX's statistics, built only with --enable-stats;
 *  - uct_perf, loopback: UCX's perftest library, which is not installed;
 *  - test_md_fork: fork with registered memory, of MDs that register host
 *    memory with the kernel (gpumem registers nothing of the host's).
 *
 * See file LICENSE for terms.
 */

/* The transports and memory domains of gpumem in each family; gpumem_rc
 * and gpumem_ib have tests where a verbs device is (the soft-RoCE VM) */
#define GPUMEM_UCT_INSTANTIATE(_test_case) \
    _UCT_INSTANTIATE_TEST_CASE(_test_case, gpumemcpy) \
    _UCT_INSTANTIATE_TEST_CASE(_test_case, gpumemipc) \
    _UCT_INSTANTIATE_TEST_CASE(_test_case, gpumem_rc)

/* Active messages: gpumemipc's, through its peers' receive FIFOs; the copy
 * transport (as cuda_copy) and gpumem_rc have none */
#define GPUMEM_UCT_AM_INSTANTIATE(_test_case) \
    _UCT_INSTANTIATE_TEST_CASE(_test_case, gpumemipc)

#define GPUMEM_UCT_MD_INSTANTIATE(_test_case) \
    _UCT_MD_INSTANTIATE_TEST_CASE(_test_case, gpumem) \
    _UCT_MD_INSTANTIATE_TEST_CASE(_test_case, gpumem_ipc) \
    _UCT_MD_INSTANTIATE_TEST_CASE(_test_case, gpumem_ib)


#if defined(GPUMEM_UCX_FAMILY_P2P_RMA)
#  include <uct/test_p2p_rma.cc>
GPUMEM_UCT_INSTANTIATE(uct_p2p_rma_test)
GPUMEM_UCT_INSTANTIATE(test_p2p_rma_madvise)

#elif defined(GPUMEM_UCX_FAMILY_P2P_AM)
/* Every transport's interface parameters are checked, active messages or
 * not */
#  include <uct/test_p2p_am.cc>
GPUMEM_UCT_INSTANTIATE(uct_p2p_am_alignment)
GPUMEM_UCT_AM_INSTANTIATE(uct_p2p_am_test)
GPUMEM_UCT_AM_INSTANTIATE(uct_p2p_am_misc)
GPUMEM_UCT_AM_INSTANTIATE(uct_p2p_am_tx_bufs)

#elif defined(GPUMEM_UCX_FAMILY_MANY2ONE_AM)
#  include <uct/test_many2one_am.cc>
GPUMEM_UCT_AM_INSTANTIATE(test_many2one_am)

#elif defined(GPUMEM_UCX_FAMILY_P2P_MIX)
#  include <uct/test_p2p_mix.cc>
GPUMEM_UCT_INSTANTIATE(uct_p2p_mix_test)

#elif defined(GPUMEM_UCX_FAMILY_P2P_ERR)
#  include <uct/test_p2p_err.cc>
GPUMEM_UCT_INSTANTIATE(uct_p2p_err_test)

#elif defined(GPUMEM_UCX_FAMILY_FLUSH)
#  include <uct/test_flush.cc>
GPUMEM_UCT_INSTANTIATE(uct_flush_test)
GPUMEM_UCT_INSTANTIATE(uct_cancel_test)

#elif defined(GPUMEM_UCX_FAMILY_ZCOPY_COMP)
#  include <uct/test_zcopy_comp.cc>
GPUMEM_UCT_INSTANTIATE(test_zcopy_comp)

#elif defined(GPUMEM_UCX_FAMILY_UCT_EP)
#  include <uct/test_uct_ep.cc>
GPUMEM_UCT_INSTANTIATE(test_uct_ep)

#elif defined(GPUMEM_UCX_FAMILY_PROGRESS)
#  include <uct/test_progress.cc>
GPUMEM_UCT_INSTANTIATE(test_uct_progress)

#elif defined(GPUMEM_UCX_FAMILY_EVENT)
#  include <uct/test_event.cc>
GPUMEM_UCT_INSTANTIATE(test_uct_event)

#elif defined(GPUMEM_UCX_FAMILY_PENDING)
#  include <uct/test_pending.cc>
GPUMEM_UCT_INSTANTIATE(test_uct_pending)

#elif defined(GPUMEM_UCX_FAMILY_PEER_FAILURE)
#  include <uct/test_peer_failure.cc>
GPUMEM_UCT_INSTANTIATE(test_uct_peer_failure)
GPUMEM_UCT_INSTANTIATE(test_uct_peer_failure_multiple)
GPUMEM_UCT_INSTANTIATE(test_uct_peer_failure_keepalive)
GPUMEM_UCT_INSTANTIATE(test_uct_peer_failure_rma_zcopy)

#elif defined(GPUMEM_UCX_FAMILY_QUERY)
#  include <uct/v2/test_uct_query.cc>
GPUMEM_UCT_INSTANTIATE(test_uct_query)

#elif defined(GPUMEM_UCX_FAMILY_MD)
#  include <uct/test_md.cc>
GPUMEM_UCT_MD_INSTANTIATE(test_md)

#else
#  error "GPUMEM_UCX_FAMILY_<name> names no family of this file"
#endif
