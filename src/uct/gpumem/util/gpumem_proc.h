/**
 * gpumem utilities: whether a process of this machine is gone.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_PROC_H_
#define GPUMEM_PROC_H_

#include <errno.h>
#include <signal.h>
#include <sys/types.h>


/* Whether no process has the pid @a pid any more (kill() says ESRCH); a
 * process this one may not signal counts as alive */
static inline int gpumem_proc_is_gone(pid_t pid)
{
    return (kill(pid, 0) != 0) && (errno == ESRCH);
}

#endif
