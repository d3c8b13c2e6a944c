/**
 * gpumem test programs: what a fault says of itself, for a crash that no
 * core file keeps (a test VM's): the signal's origin and address, where the
 * thread was, its alternate signal stack and whether that is still mapped,
 * and the handlers that would run on such a stack. A signal whose frame
 * the kernel cannot write is told as SIGSEGV of SI_KERNEL, and these say
 * which stack it was.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TEST_FAULT_REPORT_H_
#define GPUMEM_TEST_FAULT_REPORT_H_

#include <signal.h>

/* Writes the report to standard error, each line led by @a who */
void fault_report(const char *who, int signo, const siginfo_t *info,
                  const void *ucontext);

#endif
