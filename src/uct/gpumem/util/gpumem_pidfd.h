/**
 * gpumem utilities: the pidfd system calls, by number where the C library
 * has no name for them, with which a process takes another's fd.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_PIDFD_H_
#define GPUMEM_PIDFD_H_

#include <sys/syscall.h>
#include <unistd.h>

/* Linux 5.6; the numbers are the same on every architecture */
#ifndef SYS_pidfd_open
#  define SYS_pidfd_open  434
#endif
#ifndef SYS_pidfd_getfd
#  define SYS_pidfd_getfd 438
#endif

#endif
