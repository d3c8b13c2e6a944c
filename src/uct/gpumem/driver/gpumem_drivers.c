/**
 * gpumem drivers: the table of the drivers this build has.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_drivers.h"
#include "emu/emu.h"
#ifdef HAVE_CUDA
#  include "cuda/cuda_driver.h"
#endif

#include <ucs/sys/string.h>
#include <string.h>


#ifdef HAVE_CUDA
static ucs_status_t gpumem_drivers_cuda_open(const void UCS_V_UNUSED *config,
                                             gpumem_topo_t *topo,
                                             gpumem_driver_t **driver_p)
{
    return gpumem_cuda_open(topo, driver_p);
}
#else
static ucs_status_t gpumem_drivers_cuda_probe(char *why_buf, size_t max)
{
    ucs_strncpy_zero(why_buf, "this build has no cuda driver (cuda.h was not "
                     "found at configure time)", max);
    return UCS_ERR_UNSUPPORTED;
}
#endif

static const gpumem_driver_desc_t gpumem_drivers_cuda = {
    .name             = "cuda",
#ifdef HAVE_CUDA
    .probe            = gpumem_cuda_probe,
    .open             = gpumem_drivers_cuda_open,
#else
    .probe            = gpumem_drivers_cuda_probe,
    .open             = NULL,
#endif
    .builtin_topology = NULL,
    .config_entry     = NULL
};

static ucs_status_t gpumem_drivers_emu_open(const void *config,
                                            gpumem_topo_t *topo,
                                            gpumem_driver_t **driver_p)
{
    return gpumem_emu_open(config, topo, driver_p);
}

static const gpumem_driver_desc_t gpumem_drivers_emu = {
    .name             = "emu",
    .probe            = NULL,
    .open             = gpumem_drivers_emu_open,
    .builtin_topology = gpumem_emu_builtin_topology,
    .config_entry     = &gpumem_emu_config_entry
};

const gpumem_driver_desc_t *const gpumem_drivers[] = {
    &gpumem_drivers_cuda,
    &gpumem_drivers_emu,
    NULL
};

const gpumem_driver_desc_t *gpumem_driver_find(const char *name)
{
    const gpumem_driver_desc_t *const *desc;

    for (desc = gpumem_drivers; *desc != NULL; ++desc) {
        if (!strcmp((*desc)->name, name)) {
            return *desc;
        }
    }
    return NULL;
}
