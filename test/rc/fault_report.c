/**
 * gpumem test programs: what a fault says of itself.
 *
 * See file LICENSE for terms.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "fault_report.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>


static void say(const char *who, const char *fmt, ...)
{
    char line[320];
    va_list ap;
    int len;

    len = snprintf(line, sizeof(line), "%s: ", who);
    va_start(ap, fmt);
    len += vsnprintf(line + len, sizeof(line) - len, fmt, ap);
    va_end(ap);
    if (len >= (int)sizeof(line)) {
        len = sizeof(line) - 1;
    }
    line[len++] = '\n';
    if (write(2, line, (size_t)len) < 0) {
        /* Nothing more to say */
    }
}

/* The library and symbol of @a address */
static void say_code(const char *who, const char *what, const void *address)
{
    Dl_info dl;

    if ((address != NULL) && dladdr(address, &dl) && (dl.dli_fname != NULL)) {
        say(who, "%s %p: %s+0x%lx in %s", what, address,
            (dl.dli_sname != NULL) ? dl.dli_sname : "?",
            (unsigned long)((const char*)address -
                            (const char*)((dl.dli_saddr != NULL) ?
                                          dl.dli_saddr : dl.dli_fbase)),
            dl.dli_fname);
    } else {
        say(who, "%s %p", what, address);
    }
}

/* Whether every page of [address, address + size) is mapped */
static const char *mapped(const void *address, size_t size)
{
    long page        = sysconf(_SC_PAGESIZE);
    uintptr_t start  = (uintptr_t)address & ~(uintptr_t)(page - 1);
    uintptr_t end    = ((uintptr_t)address + size + page - 1) &
                       ~(uintptr_t)(page - 1);
    unsigned char vec[64];
    uintptr_t at;
    size_t pages;

    for (at = start; at < end; at += pages * page) {
        pages = (end - at) / page;
        if (pages > sizeof(vec)) {
            pages = sizeof(vec);
        }
        if (mincore((void*)at, pages * page, vec) != 0) {
            return (errno == ENOMEM) ? "NOT mapped" : "unknown";
        }
    }
    return "mapped";
}

void fault_report(const char *who, int signo, const siginfo_t *info,
                  const void *ucontext)
{
    const ucontext_t *uc = ucontext;
    struct sigaction action;
    stack_t stack;
    int sig;

    say(who, "signal %d, si_code %d%s, si_addr %p", signo, info->si_code,
        (info->si_code == SI_KERNEL) ? " (SI_KERNEL: sent by the kernel, as "
        "for a signal frame it could not write)" : "", info->si_addr);
#if defined(__x86_64__)
    say_code(who, "at", (const void*)uc->uc_mcontext.gregs[REG_RIP]);
    say(who, "rsp %p, rax 0x%llx, rdi 0x%llx, rsi 0x%llx, rdx 0x%llx",
        (void*)uc->uc_mcontext.gregs[REG_RSP],
        (unsigned long long)uc->uc_mcontext.gregs[REG_RAX],
        (unsigned long long)uc->uc_mcontext.gregs[REG_RDI],
        (unsigned long long)uc->uc_mcontext.gregs[REG_RSI],
        (unsigned long long)uc->uc_mcontext.gregs[REG_RDX]);
#else
    (void)uc;
#endif

    if (sigaltstack(NULL, &stack) == 0) {
        if (stack.ss_flags & SS_DISABLE) {
            say(who, "no alternate signal stack");
        } else {
            say(who, "alternate signal stack %p, %zu bytes, flags 0x%x: %s",
                stack.ss_sp, stack.ss_size, stack.ss_flags,
                mapped(stack.ss_sp, stack.ss_size));
        }
    }

    for (sig = 1; sig < NSIG; ++sig) {
        if ((sigaction(sig, NULL, &action) == 0) &&
            (action.sa_flags & SA_ONSTACK) &&
            (action.sa_handler != SIG_DFL) && (action.sa_handler != SIG_IGN)) {
            char what[48];

            snprintf(what, sizeof(what), "signal %d runs on that stack:",
                     sig);
            say_code(who, what, (const void*)action.sa_handler);
        }
    }
}
