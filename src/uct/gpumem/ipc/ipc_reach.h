/**
 * gpumem IPC transport: which peers' GPU memory this process maps, by the
 * topology, and what the path to it is expected to give.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_REACH_H_
#define UCT_GPUMEM_IPC_REACH_H_

#include <uct/gpumem/gpumem_context.h>

BEGIN_C_DECLS

/**
 * Bandwidth and latency UCP is told to expect of copies over one path.
 */
typedef struct uct_gpumem_ipc_path {
    const char *name;       /* The path's kind, for logs */
    double     bandwidth;   /* Bytes per second */
    double     latency;     /* Seconds */
} uct_gpumem_ipc_path_t;


/**
 * This machine's identity as peers compare it: the topology's machine (an
 * hwloc export names one machine) and the running system's boot, so that
 * two hosts loading one export differ.
 */
uint64_t uct_gpumem_ipc_machine_id(uct_gpumem_context_t *context);

/**
 * Whether the process's GPU @a gpu maps the memory of the machine's GPU at
 * @a peer (which may be itself: another process's memory on the same GPU).
 * A refusal's reason is logged once per pair of GPUs in the process, at
 * diagnostic level: UCP asks again at every endpoint and moves the data
 * another way.
 *
 * @param [out] path_p  The path, when it reaches; may be NULL.
 */
int uct_gpumem_ipc_gpu_reaches(uct_gpumem_context_t *context, unsigned gpu,
                               const gpumem_pci_addr_t *peer,
                               uct_gpumem_ipc_path_t *path_p);

/* The GPU of the process that reaches the memory of @a peer: @a first if
 * it does, else the first other that does (each refusal said once at diag
 * level), or -1 */
int uct_gpumem_ipc_gpu_reaching(uct_gpumem_context_t *context, unsigned first,
                                const gpumem_pci_addr_t *peer);

/**
 * The path UCP most likely uses from the process's GPU @a gpu: the best
 * one to another GPU that it reaches, or to its own memory where it reaches
 * none.
 */
void uct_gpumem_ipc_best_path(uct_gpumem_context_t *context, unsigned gpu,
                              uct_gpumem_ipc_path_t *path);

/**
 * Log @a key's refusal? True the first time the process asks for @a key
 * since the transport was opened.
 */
int uct_gpumem_ipc_log_once(uint64_t key);

/* The transport is closed: refusals are logged again once it reopens */
void uct_gpumem_ipc_log_reset(void);

END_C_DECLS

#endif
