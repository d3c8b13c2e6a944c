/**
 * gpumem emulated CUDA: the thread that moves the streams' work on.
 *
 * On a GPU, a stream's copies go on while its application does other
 * things, and its host functions are called by a thread of the driver.
 * Here one thread of the library's own does both: it sleeps while no
 * stream has work, and steps every stream while one has. Started at the
 * first work queued, it lives as long as the process (a child of a fork
 * has none, and no CUDA either), and stops when the library is unloaded:
 * the calls made after, at a process's exit, move their work themselves.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_cuda.h"

#include <ucs/debug/log.h>
#include <sched.h>
#include <signal.h>
#include <string.h>


/* Moves every stream on by a step; whether a host function was called
 * (with the lock let go, so the lists walked may have changed) */
static int gpumem_emu_cuda_progress_all(void)
{
    CUstream stream;
    CUcontext ctx;
    int device;

    for (device = 0; device < gpumem_emu_cuda.num_devices; ++device) {
        ucs_list_for_each(stream, &gpumem_emu_cuda.primary[device].streams,
                          list) {
            if (gpumem_emu_cuda_stream_run(stream)) {
                return 1;
            }
        }
    }

    ucs_list_for_each(ctx, &gpumem_emu_cuda.contexts, list) {
        ucs_list_for_each(stream, &ctx->streams, list) {
            if (gpumem_emu_cuda_stream_run(stream)) {
                return 1;
            }
        }
    }
    return 0;
}

static void *gpumem_emu_cuda_progress_main(void *arg UCS_V_UNUSED)
{
    gpumem_emu_cuda_lock();
    for (;;) {
        if ((gpumem_emu_cuda.queued == 0) || gpumem_emu_cuda.stopping) {
            /* The lock is held once here, which the wait lets go */
            pthread_cond_wait(&gpumem_emu_cuda.work, &gpumem_emu_cuda.lock);
            continue;
        }

        if (!gpumem_emu_cuda_progress_all()) {
            /* The engine's step done: the application's calls go on */
            gpumem_emu_cuda_yield();
        }
    }
    return NULL;
}

/* With the signals sent to the process blocked, so that the
 * application's and UCX's handlers run in threads of their own; a fault of
 * its own (a copy into memory freed under it) is not */
static int gpumem_emu_cuda_progress_start(void)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP,
                                 SIGSYS};
    pthread_attr_t attr;
    sigset_t all, saved;
    pthread_t thread;
    unsigned i;
    int ret;

    sigfillset(&all);
    for (i = 0; i < sizeof(faults) / sizeof(faults[0]); ++i) {
        sigdelset(&all, faults[i]);
    }
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    ret = pthread_create(&thread, &attr, gpumem_emu_cuda_progress_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (ret != 0) {
        ucs_warn("gpumem emulated CUDA: no progress thread (%s): the "
                 "streams' work moves only in calls that ask for it",
                 strerror(ret));
        return 0;
    }
    return 1;
}

/* Whether the thread was started, or failed to be */
static int gpumem_emu_cuda_progress_tried;


void gpumem_emu_cuda_progress_wake(void)
{
    if (!gpumem_emu_cuda_progress_tried && !gpumem_emu_cuda.stopping) {
        gpumem_emu_cuda_progress_tried = 1;
        gpumem_emu_cuda.progress       = gpumem_emu_cuda_progress_start();
    }
    pthread_cond_signal(&gpumem_emu_cuda.work);
}

int gpumem_emu_cuda_can_yield(void)
{
    return gpumem_emu_cuda.progress && (gpumem_emu_cuda_lock_depth == 1);
}

void gpumem_emu_cuda_yield(void)
{
    pthread_mutex_unlock(&gpumem_emu_cuda.lock);
    sched_yield();
    pthread_mutex_lock(&gpumem_emu_cuda.lock);
}

void gpumem_emu_cuda_progress_forget(void)
{
    gpumem_emu_cuda_progress_tried = 0;
    gpumem_emu_cuda.progress       = 0;
    gpumem_emu_cuda.queued         = 0;
}

/* At the library's unload (a process's exit): the thread stops touching
 * what the process's other destructors free */
static void UCS_F_DTOR gpumem_emu_cuda_progress_stop(void)
{
    gpumem_emu_cuda_lock();
    gpumem_emu_cuda.stopping = 1;
    gpumem_emu_cuda.progress = 0;
    gpumem_emu_cuda_unlock();
}
