/**
 * gpumem utilities: this process's identity, asked once per process.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_proc.h"

#include <pthread.h>
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

void gpumem_proc_self_fill(void)
{
    pthread_once(&gpumem_proc_atfork_once, gpumem_proc_atfork_register);

    /* Threads that fill it at once write the same values */
    gpumem_proc_self_cache.pid  = getpid();
    gpumem_proc_self_cache.euid = geteuid();
    __atomic_store_n(&gpumem_proc_self_cache.known, 1, __ATOMIC_RELEASE);
}
