/**
 * gpumem utilities: the descriptor broker, which hands the descriptors of
 * this process's exported allocations to processes of the same user that
 * ask for them over a Unix socket (SCM_RIGHTS).
 *
 * pidfd_getfd(2) takes a descriptor by its number and needs the right to
 * trace the exporter, which Yama's ptrace_scope 1, the seccomp profiles of
 * container runtimes and PID namespaces take away. The broker needs
 * neither: the importer names the allocation by its id and size, the
 * exporter checks the importer's user (SO_PEERCRED) and answers from a
 * thread of its own, and a key of an allocation that was freed gets nothing, even
 * where its descriptor's number was given to another.
 *
 * The socket is in the abstract namespace of the network namespace:
 * "gpumem-fd-<uid>-<name>", where the name is a random 64-bit number the
 * keys carry.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_FD_BROKER_H_
#define GPUMEM_FD_BROKER_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

BEGIN_C_DECLS

/**
 * Serves @a fd as allocation @a id of @a size bytes until it is withdrawn;
 * @a fd must stay open until then. Starts the broker at the first offer.
 * Sets @a name_p to the broker's name, which is never 0.
 * UCS_ERR_UNSUPPORTED in the child of a fork of a process that started it,
 * or where no socket can be made (logged at debug level: the importer
 * then takes the descriptor by pidfd_getfd).
 */
ucs_status_t gpumem_fd_broker_offer(uint64_t id, uint64_t size, int fd,
                                    uint64_t *name_p);

/**
 * Serves allocation @a id no more; when it returns, no importer receives
 * its descriptor, which the caller may close. The broker goes on serving
 * (and refusing) to the process's end: a key of a withdrawn allocation
 * is told that it was freed.
 */
void gpumem_fd_broker_withdraw(uint64_t id);

/**
 * Asks the broker @a name of user @a uid for allocation @a id of @a size
 * bytes, and sets @a fd_p to a descriptor of it, which the caller closes.
 * Refusals, with the reason written to @a why of @a max bytes:
 * - UCS_ERR_UNREACHABLE: no socket has that name (the exporter is gone,
 *   or in another network namespace): the only refusal after which the
 *   caller may take the descriptor another way;
 * - UCS_ERR_IO_ERROR: the broker did not answer (in time, or at all);
 * - UCS_ERR_NO_ELEM: the exporter has no such allocation (it was freed);
 * - UCS_ERR_REJECTED: the socket is another user's, or the exporter
 *   refused this process's user;
 * - UCS_ERR_INVALID_PARAM: the allocation is not of that size, or the
 *   answer was malformed.
 */
ucs_status_t gpumem_fd_broker_take(uint64_t name, uid_t uid, uint64_t id,
                                   uint64_t size, int *fd_p, char *why,
                                   size_t max);

END_C_DECLS

#endif
