/**
 * gpumem test programs: a watch on munmap() through UCX's memory events
 * (UCM), for a rank that dies with no trace: a call that would unmap the C
 * library's code, the program's or the calling thread's stack is said,
 * with its arguments and the caller's stack, and ends the process before
 * it runs.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TEST_MUNMAP_WATCH_H_
#define GPUMEM_TEST_MUNMAP_WATCH_H_

/* After MPI_Init (which loads UCX): whether the watch is on; each line it
 * writes is led by @a who */
int munmap_watch_start(const char *who);

#endif
