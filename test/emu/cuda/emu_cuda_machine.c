/**
 * gpumem tests: writes the emu driver's built-in machine, its hwloc export
 * and the facts the emu gives its GPUs, so that the plugin's cuda driver
 * on the emulated CUDA sees the machine the library emulates.
 *
 *   emu_cuda_machine XML_FILE FACTS_FILE SHM_DIR
 *
 * Each GPU has the VRAM of UCX_GPUMEM_EMU_VRAM_SIZE where it is set (the
 * facts carry it to every process of the run), else the emu's default.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <emu/machine/emu.h>

#include <ucs/sys/string.h>
#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv)
{
    gpumem_emu_config_t config = {
        .copy_inline_max = GPUMEM_EMU_DEFAULT_COPY_INLINE_MAX
    };
    gpumem_topo_params_t params = {
        .xml_buffer = gpumem_emu_builtin_topology,
        .sysfs_root = "/nonexistent"
    };
    gpumem_driver_t *driver;
    gpumem_topo_t *topo;
    const char *vram = getenv("UCX_GPUMEM_EMU_VRAM_SIZE");
    FILE *xml;

    if (argc != 4) {
        fprintf(stderr, "usage: %s XML_FILE FACTS_FILE SHM_DIR\n", argv[0]);
        return 2;
    }
    if ((vram != NULL) &&
        (ucs_str_to_memunits(vram, &config.vram_size) != UCS_OK)) {
        fprintf(stderr, "%s: UCX_GPUMEM_EMU_VRAM_SIZE=%s is not a size\n",
                argv[0], vram);
        return 2;
    }

    xml = fopen(argv[1], "w");
    if ((xml == NULL) || (fputs(gpumem_emu_builtin_topology, xml) < 0) ||
        (fclose(xml) != 0)) {
        perror(argv[1]);
        return 1;
    }

    /* The emu writes its GPUs' facts into the topology as it opens */
    config.shm_dir = argv[3];
    if ((gpumem_topo_load(&params, &topo) != UCS_OK) ||
        (gpumem_emu_open(&config, topo, &driver) != UCS_OK)) {
        return 1;
    }
    driver->ops->close(driver);
    return (gpumem_topo_save_facts(topo, argv[2]) == UCS_OK) ? 0 : 1;
}
