/**
 * gpumem utilities: this process's identity, and whether a process of this
 * machine is gone.
 *
 * A process is known to its peers by its pid as /proc names it, which is
 * also what /proc/<pid> of a peer's descriptors and state takes: in a PID
 * namespace of its own under a shared /proc (unshare --pid --fork), that is
 * its pid in /proc's namespace, not getpid(), and peers in other namespaces
 * tell it from theirs.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_PROC_H_
#define GPUMEM_PROC_H_

#include <ucs/sys/compiler_def.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>


typedef struct gpumem_proc_self {
    pid_t    pid;     /* As /proc names it */
    pid_t    ns_pid;  /* getpid(): in the process's own PID namespace */
    int      proc_is_own_ns; /* /proc's PID namespace is the process's: pids
                                it names are kill()'s */
    uint32_t proc_dev; /* The device of /proc (the kernel's 32-bit code of
                          it), which tells one /proc from another (a PID
                          namespace's own); 0 without it */
    uid_t    euid;
    int      known;
} gpumem_proc_self_t;


extern gpumem_proc_self_t gpumem_proc_self_cache;

/* Fills the cache, once per process: a fork's child asks again */
void gpumem_proc_self_fill(void);


/*
 * This process's pid as /proc names it and its effective uid, which the keys
 * and addresses of every message carry: a system call each is a
 * microsecond in a virtual machine, so they are asked once, and again in a
 * child of a fork. A process that changes its effective uid after gpumem
 * started keeps being known by the uid it had.
 */
static UCS_F_ALWAYS_INLINE pid_t gpumem_proc_pid(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.pid;
}

/* The device of the /proc whose pids gpumem_proc_pid() and peers' are: a
 * peer of another one is known by a pid that says nothing here */
static UCS_F_ALWAYS_INLINE uint32_t gpumem_proc_dev(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.proc_dev;
}

/* getpid(), for the system calls about this process itself */
static UCS_F_ALWAYS_INLINE pid_t gpumem_proc_ns_pid(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.ns_pid;
}

static UCS_F_ALWAYS_INLINE uid_t gpumem_proc_euid(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.euid;
}


/* Whether /proc's PID namespace is this process's own: then the pids /proc
 * names are those that kill() and pidfd_open() take */
static UCS_F_ALWAYS_INLINE int gpumem_proc_ns_is_procs(void)
{
    if (ucs_unlikely(!gpumem_proc_self_cache.known)) {
        gpumem_proc_self_fill();
    }
    return gpumem_proc_self_cache.proc_is_own_ns;
}

/* Whether /proc has no entry of @a pid (ENOENT) */
int gpumem_proc_entry_is_gone(pid_t pid);

/* Whether no process has the pid @a pid (as /proc names it) any more:
 * kill() says ESRCH where /proc's namespace is this process's, else /proc
 * has no entry of it; a process this one may not signal counts as alive */
static inline int gpumem_proc_is_gone(pid_t pid)
{
    if (ucs_likely(gpumem_proc_ns_is_procs())) {
        return (kill(pid, 0) != 0) && (errno == ESRCH);
    }
    return gpumem_proc_entry_is_gone(pid);
}

#endif
