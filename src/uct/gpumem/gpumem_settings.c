/**
 * gpumem: the plugin-wide settings of the process's GPUs.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_settings.h"
#include "compat/gpumem_compat.h"

#include <uct/gpumem/driver/gpumem_drivers.h>
#include <uct/gpumem/util/gpumem_config.h>
#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>


static ucs_config_field_t uct_gpumem_settings_table[] = {
    {"DRIVER", UCT_GPUMEM_DRIVER_AUTO,
     "The driver of the GPUs, one of the drivers of this build by name:\n"
     " auto - the first driver of real GPUs whose GPUs answer (cuda); where\n"
     "        none does, no device, as UCX's own CUDA transports (why is\n"
     "        logged at info level).\n"
     " cuda - NVIDIA GPUs through the CUDA driver API; an error where none.\n"
     " emu  - the emulator's software GPUs, emulating the machine of\n"
     "        TOPO_XML, where the emulator is installed ('gpumem-emu COMMAND'\n"
     "        runs a program on them).",
     ucs_offsetof(uct_gpumem_settings_t, driver), UCS_CONFIG_TYPE_STRING},

    {"TOPO_XML", "",
     "hwloc XML export of the machine whose GPUs and NICs to use (as written\n"
     "by 'lstopo file.xml'); the emu driver emulates its GPUs. Empty: the emu\n"
     "driver's built-in machine, two GPUs under one PCIe switch and a NIC;\n"
     "the cuda driver's live machine.",
     ucs_offsetof(uct_gpumem_settings_t, topo_xml), UCS_CONFIG_TYPE_STRING},

    {"SYSFS_ROOT", "/sys",
     "Root of the sysfs tree from which the facts that hwloc does not carry\n"
     "are read: PCI ACS control bits, IOMMU groups and BAR sizes.",
     ucs_offsetof(uct_gpumem_settings_t, sysfs_root),
     UCS_CONFIG_TYPE_STRING},

    {"TOPO_FACTS", "",
     "Topology facts saved once by an administrator with\n"
     "'gpumem_topo --save-facts FILE' (run as root, who can read the PCI\n"
     "configuration space), applied over what this process can read.",
     ucs_offsetof(uct_gpumem_settings_t, topo_facts),
     UCS_CONFIG_TYPE_STRING},

    {"MEM_TYPE", "cuda",
     "The memory type UCX sees for gpumem device memory, so that UCX's GPU\n"
     "protocols and 'ucx_perftest -m' apply to it: cuda or rocm.",
     ucs_offsetof(uct_gpumem_settings_t, mem_type),
     UCS_CONFIG_TYPE_ENUM(ucs_memory_type_names)},

    {"ALLOC_GPU", "0",
     "Index of the GPU (in PCI address order) on which the memory domains\n"
     "allocate device memory, and whose memory the IPC transport's address\n"
     "names.",
     ucs_offsetof(uct_gpumem_settings_t, alloc_gpu),
     UCT_GPUMEM_CONFIG_TYPE_COUNT},

    {NULL}
};

static ucs_config_global_list_entry_t uct_gpumem_settings_entry = {
    .name   = "gpumem",
    .prefix = "GPUMEM_",
    .table  = uct_gpumem_settings_table,
    .size   = sizeof(uct_gpumem_settings_t)
};

static int uct_gpumem_settings_registered = 0;

/* The most drivers whose settings are listed */
#define UCT_GPUMEM_SETTINGS_MAX_DRIVERS 4


ucs_status_t uct_gpumem_settings_read(uct_gpumem_settings_t *settings)
{
    ucs_status_t status;
    char names[64];

    status = uct_gpumem_config_fill(settings, &uct_gpumem_settings_entry);
    if (status != UCS_OK) {
        return status;
    }

    if (strcasecmp(settings->driver, UCT_GPUMEM_DRIVER_AUTO) &&
        (gpumem_driver_find(settings->driver) == NULL)) {
        ucs_error("gpumem: UCX_GPUMEM_DRIVER=%s: no such driver in this "
                  "build (%s)", settings->driver,
                  gpumem_drivers_names(names, sizeof(names)));
        uct_gpumem_settings_release(settings);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((settings->mem_type != UCS_MEMORY_TYPE_CUDA) &&
        (settings->mem_type != UCS_MEMORY_TYPE_ROCM)) {
        ucs_error("gpumem: UCX_GPUMEM_MEM_TYPE=%s: device memory is seen as "
                  "cuda or rocm", ucs_memory_type_names[settings->mem_type]);
        uct_gpumem_settings_release(settings);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

void uct_gpumem_settings_release(uct_gpumem_settings_t *settings)
{
    ucs_config_parser_release_opts(settings, uct_gpumem_settings_table);
}

const char *uct_gpumem_settings_path(const char *value)
{
    return ((value == NULL) || (value[0] == '\0')) ? NULL : value;
}

/* The drivers' settings put into UCS's global list, to take out */
static ucs_config_global_list_entry_t
        *uct_gpumem_settings_drivers[UCT_GPUMEM_SETTINGS_MAX_DRIVERS];
static unsigned uct_gpumem_settings_num_drivers = 0;

void uct_gpumem_settings_register(void)
{
    const gpumem_driver_desc_t *const *desc;
    const char *driver;

    if (uct_gpumem_settings_registered) {
        return;
    }

    /* The emulator's library is loaded where it is asked for, so that its
     * settings are listed there (gpumem-emu ucx_info -c), and nowhere else */
    driver = getenv("UCX_GPUMEM_DRIVER");
    if (driver != NULL) {
        (void)gpumem_driver_find(driver);
    }

    ucs_list_add_tail(&ucs_config_global_list,
                      &uct_gpumem_settings_entry.list);
    for (desc = gpumem_drivers_list(); *desc != NULL; ++desc) {
        if (((*desc)->config_entry != NULL) &&
            (uct_gpumem_settings_num_drivers <
             UCT_GPUMEM_SETTINGS_MAX_DRIVERS)) {
            ucs_list_add_tail(&ucs_config_global_list,
                              &(*desc)->config_entry->list);
            uct_gpumem_settings_drivers[uct_gpumem_settings_num_drivers++] =
                    (*desc)->config_entry;
        }
    }
    uct_gpumem_settings_registered = 1;
}

void uct_gpumem_settings_unregister(void)
{
    if (!uct_gpumem_settings_registered) {
        return;
    }

    while (uct_gpumem_settings_num_drivers > 0) {
        ucs_list_del(&uct_gpumem_settings_drivers[
                             --uct_gpumem_settings_num_drivers]->list);
    }
    ucs_list_del(&uct_gpumem_settings_entry.list);
    uct_gpumem_settings_registered = 0;
}
