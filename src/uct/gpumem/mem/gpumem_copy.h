/**
 * gpumem memory core: copies by a GPU's copy engine, for the transports and
 * the public calls, which reach the engine through the core and not the
 * driver.
 *
 * A copy moves bytes between the GPU's device addresses (its own memory,
 * and what it maps of others') and host memory. It takes no lock of the
 * core: copies run beside the calls that change the tables, as a GPU's
 * engine runs beside its driver, and one that reaches an address being
 * unmapped faults.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_COPY_H_
#define GPUMEM_COPY_H_

#include "gpumem_mem.h"

BEGIN_C_DECLS

/**
 * A copy in flight on a GPU's engine.
 */
typedef struct gpumem_copy {
    gpumem_driver_copy_t      driver;
    const gpumem_driver_ops_t *ops;
} gpumem_copy_t;


/**
 * What the copy engine of @a gpu is expected to move (its driver's
 * figures): bytes a second, the seconds a copy of a few bytes takes, and
 * whether the machine's processes share the engine.
 */
typedef struct gpumem_copy_perf {
    double bandwidth;
    double latency;
    int    shared;
} gpumem_copy_perf_t;

void gpumem_copy_engine_perf(const gpumem_gpu_t *gpu, gpumem_copy_perf_t *perf);

/**
 * Whether the engine of @a gpu catches a copy past the end of an allocation
 * itself. Where it does not (CUDA's: a copy that faults ends the context),
 * the transports check each copy's bounds before they give it.
 */
int gpumem_copy_engine_checks_bounds(const gpumem_gpu_t *gpu);


/**
 * Gives @a size bytes from @a src to @a dst to the engine of @a gpu; a side
 * with @a dst_dev (@a src_dev) set is a device address of the GPU, the
 * other a host address. UCS_OK: the bytes landed; UCS_INPROGRESS: poll
 * @a copy with gpumem_copy_poll() to the end; another status, logged by the
 * driver: nothing moved, or the copy faulted.
 */
ucs_status_t gpumem_copy(gpumem_gpu_t *gpu, uint64_t dst, int dst_dev,
                         uint64_t src, int src_dev, size_t size,
                         gpumem_copy_t *copy);

/* One step of a copy gpumem_copy() left in progress: UCS_INPROGRESS until
 * its bytes landed (UCS_OK) or it failed */
ucs_status_t gpumem_copy_poll(gpumem_copy_t *copy);

/* Polls a copy to its end */
ucs_status_t gpumem_copy_wait(gpumem_copy_t *copy, ucs_status_t status);

/* A copy of @a size bytes, returning when they landed */
ucs_status_t gpumem_copy_sync(gpumem_gpu_t *gpu, uint64_t dst, int dst_dev,
                              uint64_t src, int src_dev, size_t size);

END_C_DECLS

#endif
