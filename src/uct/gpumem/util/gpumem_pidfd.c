/**
 * gpumem utilities: why this process may not take another's descriptors,
 * and which processes it has said so of.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_pidfd.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>


/* The processes whose descriptors were refused, said of once each: the
 * first GPUMEM_PIDFD_MAX_TOLD; after them, none is said of again */
#define GPUMEM_PIDFD_MAX_TOLD 1024

static pthread_mutex_t gpumem_pidfd_told_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t gpumem_pidfd_told[GPUMEM_PIDFD_MAX_TOLD];
static unsigned gpumem_pidfd_num_told;


/* The number in the first line of @a path that starts with @a prefix (the
 * whole file when @a prefix is empty); -1 when there is none */
static long gpumem_pidfd_read_number(const char *path, const char *prefix)
{
    size_t prefix_len = strlen(prefix);
    char line[256];
    long value = -1;
    FILE *file;

    file = fopen(path, "r");
    if (file == NULL) {
        return -1;
    }

    while (fgets(line, sizeof(line), file) != NULL) {
        if ((strncmp(line, prefix, prefix_len) == 0) &&
            (sscanf(line + prefix_len, "%ld", &value) == 1)) {
            break;
        }
    }
    fclose(file);
    return value;
}

static const char *gpumem_pidfd_yama_rule(long scope)
{
    switch (scope) {
    case 1:
        return "only an ancestor may take another process's descriptors";
    case 2:
        return "only a process with CAP_SYS_PTRACE may take another's "
               "descriptors";
    default:
        return "no process may take another's descriptors";
    }
}

const char *gpumem_pidfd_denial(int err, char *buf, size_t max)
{
    long seccomp, yama;

    switch (err) {
    case ESRCH:
        snprintf(buf, max, "no process of this PID namespace has that pid "
                 "(the process is in another PID namespace, or has ended)");
        break;
    case ENOSYS:
        snprintf(buf, max, "this kernel has no pidfd_getfd (Linux 5.6 and "
                 "later have it), or a seccomp filter of this process hides "
                 "it");
        break;
    case EPERM:
    case EACCES:
        /* The kernel says no more than EPERM: the rules that could have
         * refused, as this process sees them */
        seccomp = gpumem_pidfd_read_number("/proc/self/status", "Seccomp:");
        yama    = gpumem_pidfd_read_number("/proc/sys/kernel/yama/ptrace_scope",
                                           "");
        if ((seccomp == 2) && (yama >= 1)) {
            snprintf(buf, max, "a seccomp filter of this process denies "
                     "pidfd_getfd (as container runtimes' default profiles "
                     "do), or Yama's ptrace_scope %ld: %s", yama,
                     gpumem_pidfd_yama_rule(yama));
        } else if (seccomp == 2) {
            snprintf(buf, max, "a seccomp filter of this process denies "
                     "pidfd_getfd (as container runtimes' default profiles "
                     "do)");
        } else if (yama >= 1) {
            snprintf(buf, max, "Yama's ptrace_scope is %ld: %s", yama,
                     gpumem_pidfd_yama_rule(yama));
        } else {
            snprintf(buf, max, "this process may not trace that one (it is "
                     "another user's, or has more privileges)");
        }
        break;
    default:
        snprintf(buf, max, "%s", strerror(err));
        break;
    }
    return buf;
}

int gpumem_pidfd_denial_is_new(pid_t pid)
{
    int is_new = 0;
    unsigned i;

    pthread_mutex_lock(&gpumem_pidfd_told_lock);
    for (i = 0; i < gpumem_pidfd_num_told; ++i) {
        if (gpumem_pidfd_told[i] == pid) {
            goto out;
        }
    }
    if (gpumem_pidfd_num_told < GPUMEM_PIDFD_MAX_TOLD) {
        gpumem_pidfd_told[gpumem_pidfd_num_told++] = pid;
        is_new = 1;
    }
out:
    pthread_mutex_unlock(&gpumem_pidfd_told_lock);
    return is_new;
}
