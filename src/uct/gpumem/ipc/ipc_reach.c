/**
 * gpumem IPC transport: reachability of peers' GPU memory, decided by the
 * topology's reaches() for the pair of GPUs, and the expected performance
 * of each kind of path.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_reach.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/uid.h>
#include <ucs/time/time_def.h>
#include <pthread.h>


/* Refusals logged so far; past that many, refusals are logged at debug
 * level only */
#define UCT_GPUMEM_IPC_LOG_ONCE_MAX  256


/*
 * What a real GPU's copy engine moves on each kind of path, and how long a
 * copy of a few bytes takes (mostly the engine's start). The emu driver's
 * engine is the CPU's memmove on every path; UCX_GPUMEM_IPC_BW and
 * UCX_GPUMEM_IPC_LATENCY replace these.
 *
 * - the same GPU: another process's memory on it, a copy within its memory;
 * - a fabric (NVLink, NVSwitch, XGMI): one or two links of a P100/V100 or
 *   MI200 class part, about 40 GB/s each way;
 * - a PCIe switch above both: PCIe Gen3 x16 peer-to-peer, about 12 GB/s;
 * - one host bridge: peer requests turn in the root complex, a little less;
 *   so too under a switch whose ACS redirects them there (the verdict's
 *   route, not its relation);
 * - two host bridges, two sockets: the CPU forwards peer requests between
 *   its root complexes or across its socket link, the slowest.
 */
static const struct {
    gpumem_topo_relation_t relation;
    uct_gpumem_ipc_path_t  path;
} uct_gpumem_ipc_pci_paths[] = {
    {GPUMEM_TOPO_REL_SAME_GPU,
     {"same GPU",              200000.0 * UCS_MBYTE, 1.0e-6}},
    {GPUMEM_TOPO_REL_SAME_SWITCH,
     {"PCIe switch",           12000.0 * UCS_MBYTE, 2.0e-6}},
    {GPUMEM_TOPO_REL_HOST_BRIDGE,
     {"host bridge",           10000.0 * UCS_MBYTE, 2.5e-6}},
    {GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES,
     {"across host bridges",   6000.0 * UCS_MBYTE, 3.0e-6}},
    {GPUMEM_TOPO_REL_ACROSS_SOCKETS,
     {"across sockets",        3000.0 * UCS_MBYTE, 4.0e-6}}
};

static const uct_gpumem_ipc_path_t uct_gpumem_ipc_fabric_path = {
    "fabric", 40000.0 * UCS_MBYTE, 1.5e-6
};


static pthread_mutex_t uct_gpumem_ipc_log_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t uct_gpumem_ipc_logged[UCT_GPUMEM_IPC_LOG_ONCE_MAX];
static unsigned uct_gpumem_ipc_num_logged = 0;


int uct_gpumem_ipc_log_once(uint64_t key)
{
    int first = 1;
    unsigned i;

    pthread_mutex_lock(&uct_gpumem_ipc_log_lock);
    for (i = 0; i < uct_gpumem_ipc_num_logged; ++i) {
        if (uct_gpumem_ipc_logged[i] == key) {
            first = 0;
            break;
        }
    }
    if (first) {
        if (uct_gpumem_ipc_num_logged < UCT_GPUMEM_IPC_LOG_ONCE_MAX) {
            uct_gpumem_ipc_logged[uct_gpumem_ipc_num_logged++] = key;
        } else {
            first = 0;
        }
    }
    pthread_mutex_unlock(&uct_gpumem_ipc_log_lock);
    return first;
}

void uct_gpumem_ipc_log_reset(void)
{
    pthread_mutex_lock(&uct_gpumem_ipc_log_lock);
    uct_gpumem_ipc_num_logged = 0;
    pthread_mutex_unlock(&uct_gpumem_ipc_log_lock);
}

uint64_t uct_gpumem_ipc_machine_id(uct_gpumem_context_t *context)
{
    uint64_t hash = 0xcbf29ce484222325ul; /* FNV-1a */
    const char *machine;

    if (context->num_gpus > 0) {
        for (machine = gpumem_gpu_reach(context->gpus[0])->machine;
             *machine != '\0'; ++machine) {
            hash = (hash ^ (unsigned char)*machine) * 0x100000001b3ul;
        }
    }
    return hash ^ ucs_get_system_id();
}

static void uct_gpumem_ipc_path_of(const gpumem_topo_verdict_t *verdict,
                                   uct_gpumem_ipc_path_t *path)
{
    unsigned i;

    if ((verdict->fabric == GPUMEM_TOPO_FABRIC_NVLINK) ||
        (verdict->fabric == GPUMEM_TOPO_FABRIC_XGMI)) {
        *path = uct_gpumem_ipc_fabric_path;
        return;
    }

    for (i = 0; i < ucs_static_array_size(uct_gpumem_ipc_pci_paths); ++i) {
        if (uct_gpumem_ipc_pci_paths[i].relation == verdict->route) {
            *path = uct_gpumem_ipc_pci_paths[i].path;
            return;
        }
    }

    /* Other machines are never reached */
    *path = uct_gpumem_ipc_pci_paths[
            ucs_static_array_size(uct_gpumem_ipc_pci_paths) - 1].path;
}

/* The pair's key among the logged refusals: the GPU's index and the peer's
 * PCI address, which fits 32 bits as bus, device and function do */
static uint64_t uct_gpumem_ipc_pair_key(unsigned gpu,
                                        const gpumem_pci_addr_t *peer)
{
    return ((uint64_t)gpu << 32) | ((uint64_t)peer->domain << 16) |
           ((uint64_t)peer->bus << 8) | ((uint64_t)(peer->dev & 0x1f) << 3) |
           (peer->fn & 0x7);
}

static void uct_gpumem_ipc_refusal(unsigned gpu,
                                   const gpumem_topo_reach_t *local,
                                   const gpumem_pci_addr_t *peer,
                                   const char *reason)
{
    char local_name[GPUMEM_TOPO_PCI_STR_MAX];
    char peer_name[GPUMEM_TOPO_PCI_STR_MAX];

    gpumem_pci_addr_str(&local->addr, local_name, sizeof(local_name));
    gpumem_pci_addr_str(peer, peer_name, sizeof(peer_name));
    if (uct_gpumem_ipc_log_once(uct_gpumem_ipc_pair_key(gpu, peer))) {
        ucs_diag("gpumem_ipc: GPU %s does not reach the memory of GPU %s: "
                 "%s; another transport moves the data", local_name,
                 peer_name, reason);
    } else {
        ucs_debug("gpumem_ipc: GPU %s does not reach GPU %s", local_name,
                  peer_name);
    }
}

int uct_gpumem_ipc_gpu_reaches(uct_gpumem_context_t *context, unsigned gpu,
                               const gpumem_pci_addr_t *peer,
                               uct_gpumem_ipc_path_t *path_p)
{
    const gpumem_topo_reach_t *local = gpumem_gpu_reach(context->gpus[gpu]);
    const gpumem_topo_dev_t *dev;
    gpumem_topo_verdict_t verdict;

    /* reaches() is false for a GPU and itself; another process's memory on
     * the same GPU is its own memory to it */
    if (gpumem_pci_addr_equal(&local->addr, peer)) {
        verdict.relation = GPUMEM_TOPO_REL_SAME_GPU;
        verdict.route    = GPUMEM_TOPO_REL_SAME_GPU;
        verdict.fabric   = GPUMEM_TOPO_FABRIC_NONE;
    } else {
        dev = gpumem_topo_find(context->topo, peer);
        if ((dev == NULL) || (dev->type != GPUMEM_TOPO_DEV_GPU)) {
            uct_gpumem_ipc_refusal(gpu, local, peer,
                                   "this machine's topology has no such GPU");
            return 0;
        }

        if (!gpumem_topo_reaches(local, &dev->reach, 0, &verdict)) {
            uct_gpumem_ipc_refusal(gpu, local, peer, verdict.reason);
            return 0;
        }
    }

    if (path_p != NULL) {
        uct_gpumem_ipc_path_of(&verdict, path_p);
    }
    return 1;
}

int uct_gpumem_ipc_gpu_reaching(uct_gpumem_context_t *context, unsigned first,
                                const gpumem_pci_addr_t *peer)
{
    unsigned gpu;

    if (uct_gpumem_ipc_gpu_reaches(context, first, peer, NULL)) {
        return first;
    }
    for (gpu = 0; gpu < context->num_gpus; ++gpu) {
        if ((gpu != first) &&
            uct_gpumem_ipc_gpu_reaches(context, gpu, peer, NULL)) {
            return gpu;
        }
    }
    return -1;
}

void uct_gpumem_ipc_best_path(uct_gpumem_context_t *context, unsigned gpu,
                              uct_gpumem_ipc_path_t *path)
{
    const gpumem_topo_reach_t *local = gpumem_gpu_reach(context->gpus[gpu]);
    gpumem_topo_verdict_t verdict;
    uct_gpumem_ipc_path_t candidate;
    int found = 0;
    unsigned i;

    for (i = 0; i < context->topo->num_gpus; ++i) {
        if (gpumem_pci_addr_equal(&local->addr,
                                  &context->topo->devs[i].reach.addr) ||
            !gpumem_topo_reaches(local, &context->topo->devs[i].reach, 0,
                                 &verdict)) {
            continue;
        }

        uct_gpumem_ipc_path_of(&verdict, &candidate);
        if (!found || (candidate.bandwidth > path->bandwidth)) {
            *path = candidate;
            found = 1;
        }
    }

    if (!found) {
        verdict.relation = GPUMEM_TOPO_REL_SAME_GPU;
        verdict.route    = GPUMEM_TOPO_REL_SAME_GPU;
        verdict.fabric   = GPUMEM_TOPO_FABRIC_NONE;
        uct_gpumem_ipc_path_of(&verdict, path);
    }
}
