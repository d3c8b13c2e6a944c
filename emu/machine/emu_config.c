/**
 * gpumem emu driver: its settings (UCX_GPUMEM_EMU_*), a table of UCS's
 * global list, which ucx_info -c shows with their help. Each field carries
 * the EMU_ of its name, so that UCS's parser names a bad value's variable
 * whole.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu.h"

#include <uct/gpumem/util/gpumem_config.h>
#include <ucs/sys/compiler_def.h>


static ucs_config_field_t gpumem_emu_config_table[] = {
    {"EMU_VRAM_SIZE", "1g",
     "emu driver (a software GPU): memory of each emulated GPU where the\n"
     "topology gives none. Shared by the processes of the machine; an\n"
     "untouched byte costs no memory.",
     ucs_offsetof(gpumem_emu_config_t, vram_size),
     UCT_GPUMEM_CONFIG_TYPE_SIZE},

    {"EMU_BAR_SIZE", "0",
     "emu driver: size of each emulated GPU's memory BAR, through which the\n"
     "process and other PCI functions reach its memory, where the topology\n"
     "gives none (UCX_GPUMEM_TOPO_FACTS); 0: as large as its memory.",
     ucs_offsetof(gpumem_emu_config_t, bar_size),
     UCT_GPUMEM_CONFIG_TYPE_SIZE},

    {"EMU_SHM_DIR", GPUMEM_EMU_DEFAULT_SHM_DIR,
     "emu driver: directory of the shared state of the emulated GPUs, which\n"
     "every process of the machine (same user) opens.",
     ucs_offsetof(gpumem_emu_config_t, shm_dir),
     UCS_CONFIG_TYPE_STRING},

    {"EMU_COPY_INLINE_MAX", "8k",
     "emu driver: copies of up to this size complete inline; larger ones\n"
     "complete asynchronously, as a copy engine's do.",
     ucs_offsetof(gpumem_emu_config_t, copy_inline_max),
     UCT_GPUMEM_CONFIG_TYPE_SIZE},

    {NULL}
};

ucs_config_global_list_entry_t gpumem_emu_config_entry = {
    .name   = "gpumem emu driver",
    .prefix = "GPUMEM_",
    .table  = gpumem_emu_config_table,
    .size   = sizeof(gpumem_emu_config_t)
};
