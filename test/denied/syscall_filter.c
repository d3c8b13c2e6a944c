/**
 * gpumem tests: a system call that the kernel refuses to a process, as a
 * container runtime's seccomp profile refuses it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "syscall_filter.h"

#include <uct/gpumem/util/gpumem_pidfd.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#  define GPUMEM_TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#  define GPUMEM_TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif


/* As a container runtime does: no privilege gained by exec, which a filter
 * of an unprivileged process requires */
static int gpumem_test_filter_install(struct sock_filter *code, size_t len,
                                      char *why, size_t max)
{
    struct sock_fprog prog = {
        .len    = len,
        .filter = code
    };

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(why, max, "prctl(PR_SET_NO_NEW_PRIVS): %m");
        return -1;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
        snprintf(why, max, "prctl(PR_SET_SECCOMP): %m");
        return -1;
    }
    return 0;
}

int gpumem_test_deny_syscall(long nr, int err, char *why, size_t max)
{
#ifdef GPUMEM_TEST_AUDIT_ARCH
    /* Another architecture's system calls pass: the filter knows this
     * one's numbers only */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GPUMEM_TEST_AUDIT_ARCH, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };

    return gpumem_test_filter_install(code, sizeof(code) / sizeof(code[0]),
                                      why, max);
#else
    (void)nr;
    (void)err;
    snprintf(why, max, "the tests have no seccomp filter for this "
             "architecture");
    return -1;
#endif
}

int gpumem_test_deny_socket(int domain, int type, int err, char *why,
                            size_t max)
{
#ifdef GPUMEM_TEST_AUDIT_ARCH
    /* The arguments' low words: both architectures are little-endian */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GPUMEM_TEST_AUDIT_ARCH, 0, 8),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 6),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)domain, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[1])),
        /* Without SOCK_NONBLOCK and SOCK_CLOEXEC */
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)type, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };

    return gpumem_test_filter_install(code, sizeof(code) / sizeof(code[0]),
                                      why, max);
#else
    (void)domain;
    (void)type;
    (void)err;
    snprintf(why, max, "the tests have no seccomp filter for this "
             "architecture");
    return -1;
#endif
}

int gpumem_test_syscall_filter_works(char *why, size_t max)
{
    int pipe_fds[2], status;
    ssize_t length;
    pid_t pid;

    if (pipe(pipe_fds) != 0) {
        snprintf(why, max, "pipe: %m");
        return -1;
    }

    pid = fork();
    if (pid == 0) {
        char reason[256];

        close(pipe_fds[0]);
        if (gpumem_test_deny_syscall(SYS_pidfd_getfd, EPERM, reason,
                                     sizeof(reason)) != 0) {
            (void)!write(pipe_fds[1], reason, strlen(reason));
            _exit(1);
        }
        /* Without the filter: EBADF (or ENOSYS before Linux 5.6) */
        if ((syscall(SYS_pidfd_getfd, -1, 0, 0) != -1) || (errno != EPERM)) {
            snprintf(reason, sizeof(reason), "the filter did not refuse "
                     "pidfd_getfd");
            (void)!write(pipe_fds[1], reason, strlen(reason));
            _exit(1);
        }
        _exit(0);
    }

    close(pipe_fds[1]);
    if (pid < 0) {
        snprintf(why, max, "fork: %m");
        close(pipe_fds[0]);
        return -1;
    }
    length = read(pipe_fds[0], why, max - 1);
    close(pipe_fds[0]);
    why[(length > 0) ? length : 0] = '\0';
    if ((waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        if (length <= 0) {
            snprintf(why, max, "the child that tried failed");
        }
        return -1;
    }
    return 0;
}
