/**
 * gpumem utilities: the pidfd system calls, by number where the C library
 * has no name for them, with which a process takes another's fd; and why
 * the kernel refused one.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_PIDFD_H_
#define GPUMEM_PIDFD_H_

#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Linux 5.6; the numbers are the same on every architecture */
#ifndef SYS_pidfd_open
#  define SYS_pidfd_open  434
#endif
#ifndef SYS_pidfd_getfd
#  define SYS_pidfd_getfd 438
#endif


/*
 * Why this process may not take another's descriptors, in words, from the
 * errno @a err of pidfd_open(2) or pidfd_getfd(2): a seccomp filter (as
 * containers have), Yama's ptrace_scope, a PID namespace, another user.
 * Written to @a buf of @a max bytes, which it returns.
 */
const char *gpumem_pidfd_denial(int err, char *buf, size_t max);

/*
 * Whether process @a pid is refused for the first time in this process: a
 * reason is said once per peer, not once per message.
 */
int gpumem_pidfd_denial_is_new(pid_t pid);

#endif
