/**
 * gpumem utilities: this process's identity, and whether a process of this
 * machine is gone.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_PROC_H_
#define GPUMEM_PROC_H_

#include <ucs/sys/compiler_def.h>
#include <errno.h>
#include <signal.h>
#include <sys/types.h>


typedef struct gpumem_proc_self {
    pid_t pid;
    uid_t euid;
    int   known;
} gpumem_proc_self_t;


extern gpumem_proc_self_t gpumem_proc_self_cache;

/* Fills the cache, once per process: a fork's child asks again */
void gpumem_proc_self_fill(void);


/*
 * This process's pid and effective uid, which the keys and addresses of
 * every message carry: a system call each is a microsecond in a virtual
 * machine, so they are asked once, and again in a child of a fork. A
 * process that changes its effective uid after gpumem started keeps being
 * known by the uid it had.
 */
static UCS_F_ALWAYS_INLINE pid_t gpumem_proc_pid(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.pid;
}

static UCS_F_ALWAYS_INLINE uid_t gpumem_proc_euid(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.euid;
}


/* Whether no process has the pid @a pid any more (kill() says ESRCH); a
 * process this one may not signal counts as alive */
static inline int gpumem_proc_is_gone(pid_t pid)
{
    return (kill(pid, 0) != 0) && (errno == ESRCH);
}

#endif
