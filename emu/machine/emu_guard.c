/**
 * gpumem emu driver: the guards of the emulated GPUs' operations: whether
 * the GPU is still live, the faults a test injected, and the steps of a
 * change of the shared state at which a test has the process die.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_int.h"

#include <ucs/debug/log.h>
#include <signal.h>
#include <string.h>


gpumem_emu_point_t gpumem_emu_die_point = GPUMEM_EMU_POINT_NONE;

static const char *gpumem_emu_point_names[] = {
    [GPUMEM_EMU_POINT_NONE]          = "",
    [GPUMEM_EMU_POINT_ALLOC_PLACED]  = "alloc-placed",
    [GPUMEM_EMU_POINT_ALLOC_LISTED]  = "alloc-listed",
    [GPUMEM_EMU_POINT_ALLOC_HELD]    = "alloc-held",
    [GPUMEM_EMU_POINT_FREE_UNLISTED] = "free-unlisted",
    [GPUMEM_EMU_POINT_FREE_PUNCHED]  = "free-punched",
    [GPUMEM_EMU_POINT_IMPORT_HELD]   = "import-held"
};

void gpumem_emu_die(gpumem_emu_point_t point)
{
    ucs_debug("gpumem_emu: dying at %s, as the test asked",
              gpumem_emu_point_names[point]);
    raise(SIGKILL);
}

ucs_status_t gpumem_emu_test_die_at(const char *point)
{
    unsigned i;

    for (i = 0; i < GPUMEM_EMU_POINT_LAST; ++i) {
        if (!strcmp((point != NULL) ? point : "", gpumem_emu_point_names[i])) {
            gpumem_emu_die_point = (gpumem_emu_point_t)i;
            return UCS_OK;
        }
    }
    ucs_error("gpumem_emu: no step '%s' to die at", point);
    return UCS_ERR_INVALID_PARAM;
}

int gpumem_emu_fault_take(gpumem_emu_gpu_t *gpu, gpumem_driver_fault_t fault)
{
    if (gpu->faults[fault] == 0) {
        return 0;
    }
    --gpu->faults[fault];
    return 1;
}

ucs_status_t gpumem_emu_check_live(gpumem_emu_gpu_t *gpu, const char *what)
{
    if (gpu->released) {
        gpumem_emu_gpu_error(gpu, "cannot %s: the GPU was released, its bus "
                             "mastering is off", what);
        return UCS_ERR_NOT_CONNECTED;
    }
    return UCS_OK;
}
