/**
 * gpumem utilities: this process's identity, asked once per process.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


gpumem_proc_self_t gpumem_proc_self_cache;

static pthread_once_t gpumem_proc_atfork_once = PTHREAD_ONCE_INIT;


/* The child of a fork is another process: its first use asks again */
static void gpumem_proc_self_forget(void)
{
    gpumem_proc_self_cache.known = 0;
}

static void gpumem_proc_atfork_register(void)
{
    /* Unregistered by the C library when the plugin is unloaded */
    (void)pthread_atfork(NULL, NULL, gpumem_proc_self_forget);
}

/*
 * This process's pid in /proc's PID namespace and in its own: the first and
 * the last of NSpid in /proc/self/status (Linux 4.1), one pid where the two
 * namespaces are one. Without it (no /proc, an older kernel), getpid() for
 * both. Returns whether /proc's namespace is the process's own.
 */
static int gpumem_proc_self_read_pids(pid_t ns_pid, pid_t *proc_pid_p)
{
    char buf[4096];
    char *line, *p, *end;
    ssize_t length;
    long value, last;
    int fd, count;

    *proc_pid_p = ns_pid;
    fd          = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 1;
    }
    length = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (length <= 0) {
        return 1;
    }
    buf[length] = '\0';

    line = strstr(buf, "\nNSpid:");
    if (line == NULL) {
        return 1;
    }
    p     = line + strlen("\nNSpid:");
    count = 0;
    last  = 0;
    for (;;) {
        value = strtol(p, &end, 10);
        if ((end == p) || (value <= 0) || (value > INT_MAX)) {
            break;
        }
        if (count++ == 0) {
            *proc_pid_p = (pid_t)value;
        }
        last = value;
        p    = end;
    }
    if ((count == 0) || ((pid_t)last != ns_pid)) {
        *proc_pid_p = ns_pid; /* Not this process's line: trust getpid() */
        return 1;
    }
    return count == 1;
}

void gpumem_proc_self_fill(void)
{
    pid_t ns_pid = getpid();
    struct stat st;
    pid_t proc_pid;
    int own_ns;

    pthread_once(&gpumem_proc_atfork_once, gpumem_proc_atfork_register);
    own_ns = gpumem_proc_self_read_pids(ns_pid, &proc_pid);

    /* Threads that fill it at once write the same values */
    gpumem_proc_self_cache.pid            = proc_pid;
    gpumem_proc_self_cache.ns_pid         = ns_pid;
    gpumem_proc_self_cache.proc_is_own_ns = own_ns;
    gpumem_proc_self_cache.proc_dev       = (stat("/proc", &st) == 0) ?
                                            (uint32_t)st.st_dev : 0;
    gpumem_proc_self_cache.euid           = geteuid();
    __atomic_store_n(&gpumem_proc_self_cache.known, 1, __ATOMIC_RELEASE);
}

int gpumem_proc_entry_is_gone(pid_t pid)
{
    char path[32];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    return (stat(path, &st) != 0) && (errno == ENOENT);
}
