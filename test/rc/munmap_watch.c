/**
 * gpumem test programs: a watch on munmap() through UCM's events.
 *
 * See file LICENSE for terms.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "munmap_watch.h"

#include <ucm/api/ucm.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/* Status of a process the watch ended */
#define MUNMAP_WATCH_STATUS  97

typedef ucs_status_t (*set_handler_t)(int, int, ucm_event_callback_t, void*);

static char munmap_watch_who[64];
static uintptr_t munmap_watch_libc, munmap_watch_code;

static int munmap_watch_covers(uintptr_t start, uintptr_t end, uintptr_t at)
{
    return (at >= start) && (at < end);
}

/* The words of the stack above @a from that name code of a function:
 * return addresses among them, where the unwinder stops (code that UCX's
 * memory hooks patched has no unwinding information) */
static void munmap_watch_scan(uintptr_t from)
{
    const volatile uintptr_t *word = (const volatile uintptr_t*)from;
    char line[320];
    unsigned i, found = 0;
    Dl_info dl;
    int len;

    /* Not past the words of the frames below main() */
    for (i = 0; (i < 200) && (found < 40); ++i) {
        if (!dladdr((void*)word[i], &dl) || (dl.dli_sname == NULL) ||
            (dl.dli_saddr == NULL) ||
            ((word[i] - (uintptr_t)dl.dli_saddr) > 0x10000)) {
            continue;
        }
        len = snprintf(line, sizeof(line), "%s:   stack word %u: %s+0x%lx "
                       "(%s)\n", munmap_watch_who, i, dl.dli_sname,
                       (unsigned long)(word[i] - (uintptr_t)dl.dli_saddr),
                       dl.dli_fname);
        if (write(2, line, (size_t)len) < 0) {
            return;
        }
        ++found;
    }
}

/* Whether unmapping [@a address, + @a size) takes what the process cannot
 * run without; said, with the caller's stack, and the process ends */
static void munmap_watch_check(const char *how, const void *address,
                               size_t size)
{
    uintptr_t start = (uintptr_t)address;
    uintptr_t end   = start + size;
    void *frames[32];
    char line[256];
    int len, stack;

    if ((munmap_watch_libc == 0) ||
        ((end >= start) &&
         !munmap_watch_covers(start, end, munmap_watch_libc) &&
         !munmap_watch_covers(start, end, munmap_watch_code) &&
         !munmap_watch_covers(start, end, (uintptr_t)&stack))) {
        return;
    }

    len = snprintf(line, sizeof(line), "%s: %s munmap(%p, 0x%zx) would "
                   "unmap the C library's code, the program's or this "
                   "stack; called from:\n", munmap_watch_who, how, address,
                   size);
    if (write(2, line, (size_t)len) < 0) {
        /* Nothing more to say */
    }
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    munmap_watch_scan((uintptr_t)__builtin_frame_address(0));
    _exit(MUNMAP_WATCH_STATUS);
}

#if defined(__x86_64__)
/* The C library's syscall(), which UCX's memory hooks call for the
 * original munmap(), taken over by the program: a munmap is checked first */
long syscall(long number, ...)
{
    register long r10 __asm__("r10");
    register long r8 __asm__("r8");
    register long r9 __asm__("r9");
    long a1, a2, a3, ret;
    va_list ap;

    va_start(ap, number);
    a1  = va_arg(ap, long);
    a2  = va_arg(ap, long);
    a3  = va_arg(ap, long);
    r10 = va_arg(ap, long);
    r8  = va_arg(ap, long);
    r9  = va_arg(ap, long);
    va_end(ap);

    if (number == SYS_munmap) {
        munmap_watch_check("syscall(SYS_munmap):", (void*)a1, (size_t)a2);
    }

    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
                       "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if ((ret < 0) && (ret > -4096)) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}
#endif

static void munmap_watch_event(ucm_event_type_t event_type UCS_V_UNUSED,
                               ucm_event_t *event, void *arg UCS_V_UNUSED)
{
    munmap_watch_check("munmap() event:", event->munmap.address,
                       event->munmap.size);
}

int munmap_watch_start(const char *who)
{
    set_handler_t set_handler;

    set_handler = (set_handler_t)dlsym(RTLD_DEFAULT, "ucm_set_event_handler");
    if (set_handler == NULL) {
        return 0; /* No UCM in the process */
    }

    snprintf(munmap_watch_who, sizeof(munmap_watch_who), "%s", who);
    munmap_watch_libc = (uintptr_t)dlsym(RTLD_DEFAULT, "write");
    munmap_watch_code = (uintptr_t)munmap_watch_event;
    /* Before the call itself (priorities below 0) */
    return set_handler(UCM_EVENT_MUNMAP, -1000, munmap_watch_event,
                       NULL) == UCS_OK;
}
