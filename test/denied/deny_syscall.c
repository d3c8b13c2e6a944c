/**
 * gpumem tests: runs a command whose processes the kernel refuses a system
 * call, as a container runtime's default seccomp profile refuses
 * pidfd_getfd(2):
 *
 *   deny_syscall pidfd_getfd|pidfd_open|unix_seqpacket COMMAND [ARG...]
 *
 * The call fails with EPERM in the command and in every process it starts.
 * "unix_seqpacket" is socket(AF_UNIX, SOCK_SEQPACKET), the kind of socket
 * gpumem's descriptor broker listens on: the broker cannot be reached, as
 * between network namespaces.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "syscall_filter.h"

#include <uct/gpumem/util/gpumem_pidfd.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


int main(int argc, char **argv)
{
    char why[256];
    long nr;

    if (argc < 3) {
        fprintf(stderr, "usage: deny_syscall pidfd_getfd|pidfd_open|"
                "unix_seqpacket COMMAND [ARG...]\n");
        return 125;
    }

    if (!strcmp(argv[1], "unix_seqpacket")) {
        nr = -1;
    } else if (!strcmp(argv[1], "pidfd_getfd")) {
        nr = SYS_pidfd_getfd;
    } else if (!strcmp(argv[1], "pidfd_open")) {
        nr = SYS_pidfd_open;
    } else {
        fprintf(stderr, "deny_syscall: no such system call here: %s\n",
                argv[1]);
        return 125;
    }

    if (((nr < 0) ?
         gpumem_test_deny_socket(AF_UNIX, SOCK_SEQPACKET, EPERM, why,
                                 sizeof(why)) :
         gpumem_test_deny_syscall(nr, EPERM, why, sizeof(why))) != 0) {
        fprintf(stderr, "deny_syscall: %s\n", why);
        return 125;
    }

    execvp(argv[2], argv + 2);
    fprintf(stderr, "deny_syscall: %s: %s\n", argv[2], strerror(errno));
    return 127;
}
