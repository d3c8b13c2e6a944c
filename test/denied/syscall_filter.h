/**
 * gpumem tests: a system call that the kernel refuses to a process, as a
 * container runtime's seccomp profile refuses it.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TEST_SYSCALL_FILTER_H_
#define GPUMEM_TEST_SYSCALL_FILTER_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * From now on, system call @a nr of this process and of its children fails
 * with errno @a err: a seccomp filter, which no process can take off (so
 * only a child of a test, or a program it runs, installs one). Returns 0, or
 * -1 with the reason in @a why (@a max bytes) where this kernel or machine
 * cannot.
 */
int gpumem_test_deny_syscall(long nr, int err, char *why, size_t max);

/*
 * From now on, socket(2) of @a domain and @a type (whatever its flags)
 * fails with errno @a err in this process and its children, as it would
 * where a policy forbids such sockets. Returns as
 * gpumem_test_deny_syscall().
 */
int gpumem_test_deny_socket(int domain, int type, int err, char *why,
                            size_t max);

/*
 * Whether gpumem_test_deny_syscall() refuses pidfd_getfd(2) here, tried in
 * a child process: 0, or -1 with the reason in @a why
 */
int gpumem_test_syscall_filter_works(char *why, size_t max);

#ifdef __cplusplus
}
#endif

#endif
