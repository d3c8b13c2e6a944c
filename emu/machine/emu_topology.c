/**
 * gpumem emu driver: the emulated machine's topology, built in or given,
 * and the facts of its GPUs.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_int.h"

#include <uct/gpumem/util/gpumem_compat_ucs.h>
#include <ucs/sys/string.h>
#include <stdlib.h>
#include <string.h>


/* The host bridge the emulated machine's root complexes show where the
 * topology names none: Intel Skylake-E (8086:2020), as Linux's p2pdma
 * whitelist lists it, so that GPUs under two host bridges reach each other
 * as on such a server. */
#define GPUMEM_EMU_HOST_BRIDGE_ID  0x80862020ul


/*
 * The built-in machine: one Intel Skylake-SP package, and under its host
 * bridge a PCIe switch (PLX 8747) with two NVIDIA GPUs and a Mellanox
 * ConnectX-6 beside them. Every device is emulated, so the GPUs' OS
 * devices are named emu0 and emu1 (the topology names them by PCI address),
 * and the PCI domain 00e0 keeps this machine's own /sys out of its facts.
 * There is no HostName: the topology then takes this machine's host name,
 * so that every process of the machine sees the same emulated machine. The
 * GPUs carry no memory size: the emu's setting gives it.
 */
const char gpumem_emu_builtin_topology[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\""
    " complete_cpuset=\"0x00000003\" allowed_cpuset=\"0x00000003\""
    " nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\""
    " allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
    "    <info name=\"Backend\" value=\"gpumem emu\"/>\n"
    "    <object type=\"Package\" os_index=\"0\" cpuset=\"0x00000003\""
    " complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\""
    " complete_nodeset=\"0x00000001\" gp_index=\"2\">\n"
    "      <info name=\"CPUVendor\" value=\"GenuineIntel\"/>\n"
    "      <info name=\"CPUFamilyNumber\" value=\"6\"/>\n"
    "      <info name=\"CPUModelNumber\" value=\"85\"/>\n"
    "      <info name=\"CPUModel\""
    " value=\"Intel(R) Xeon(R) Skylake-SP, emulated by gpumem\"/>\n"
    "      <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\""
    " complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\""
    " complete_nodeset=\"0x00000001\" gp_index=\"3\""
    " local_memory=\"17179869184\"/>\n"
    "      <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000001\""
    " complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\""
    " complete_nodeset=\"0x00000001\" gp_index=\"4\">\n"
    "        <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\""
    " complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\""
    " complete_nodeset=\"0x00000001\" gp_index=\"5\"/>\n"
    "      </object>\n"
    "      <object type=\"Core\" os_index=\"1\" cpuset=\"0x00000002\""
    " complete_cpuset=\"0x00000002\" nodeset=\"0x00000001\""
    " complete_nodeset=\"0x00000001\" gp_index=\"6\">\n"
    "        <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\""
    " complete_cpuset=\"0x00000002\" nodeset=\"0x00000001\""
    " complete_nodeset=\"0x00000001\" gp_index=\"7\"/>\n"
    "      </object>\n"
    "      <object type=\"Bridge\" gp_index=\"10\" bridge_type=\"0-1\""
    " depth=\"0\" bridge_pci=\"00e0:[00-05]\">\n"
    "        <object type=\"PCIDev\" gp_index=\"11\""
    " pci_busid=\"00e0:00:00.0\""
    " pci_type=\"0600 [8086:2020] [8086:0000] 04\"/>\n"
    "        <object type=\"Bridge\" gp_index=\"12\" bridge_type=\"1-1\""
    " depth=\"1\" bridge_pci=\"00e0:[01-05]\" pci_busid=\"00e0:00:01.0\""
    " pci_type=\"0604 [8086:2030] [8086:0000] 04\">\n"
    "          <object type=\"Bridge\" gp_index=\"13\" bridge_type=\"1-1\""
    " depth=\"2\" bridge_pci=\"00e0:[02-05]\" pci_busid=\"00e0:01:00.0\""
    " pci_type=\"0604 [10b5:8747] [10b5:8747] ca\">\n"
    "            <object type=\"Bridge\" gp_index=\"14\" bridge_type=\"1-1\""
    " depth=\"3\" bridge_pci=\"00e0:[03-03]\" pci_busid=\"00e0:02:08.0\""
    " pci_type=\"0604 [10b5:8747] [10b5:8747] ca\">\n"
    "              <object type=\"PCIDev\" gp_index=\"20\""
    " pci_busid=\"00e0:03:00.0\""
    " pci_type=\"0302 [10de:20b0] [10de:134f] a1\">\n"
    "                <object type=\"OSDev\" gp_index=\"21\" name=\"emu0\""
    " subtype=\"gpumem-emu\" osdev_type=\"5\">\n"
    "                  <info name=\"Backend\" value=\"gpumem emu\"/>\n"
    "                  <info name=\"GPUVendor\""
    " value=\"NVIDIA Corporation (emulated by gpumem)\"/>\n"
    "                </object>\n"
    "              </object>\n"
    "            </object>\n"
    "            <object type=\"Bridge\" gp_index=\"15\" bridge_type=\"1-1\""
    " depth=\"3\" bridge_pci=\"00e0:[04-04]\" pci_busid=\"00e0:02:10.0\""
    " pci_type=\"0604 [10b5:8747] [10b5:8747] ca\">\n"
    "              <object type=\"PCIDev\" gp_index=\"22\""
    " pci_busid=\"00e0:04:00.0\""
    " pci_type=\"0302 [10de:20b0] [10de:134f] a1\">\n"
    "                <object type=\"OSDev\" gp_index=\"23\" name=\"emu1\""
    " subtype=\"gpumem-emu\" osdev_type=\"5\">\n"
    "                  <info name=\"Backend\" value=\"gpumem emu\"/>\n"
    "                  <info name=\"GPUVendor\""
    " value=\"NVIDIA Corporation (emulated by gpumem)\"/>\n"
    "                </object>\n"
    "              </object>\n"
    "            </object>\n"
    "            <object type=\"Bridge\" gp_index=\"16\" bridge_type=\"1-1\""
    " depth=\"3\" bridge_pci=\"00e0:[05-05]\" pci_busid=\"00e0:02:18.0\""
    " pci_type=\"0604 [10b5:8747] [10b5:8747] ca\">\n"
    "              <object type=\"PCIDev\" gp_index=\"24\""
    " pci_busid=\"00e0:05:00.0\""
    " pci_type=\"0207 [15b3:101b] [15b3:0007] 00\">\n"
    "                <object type=\"OSDev\" gp_index=\"25\" name=\"mlx5_0\""
    " osdev_type=\"3\">\n"
    "                  <info name=\"Backend\" value=\"gpumem emu\"/>\n"
    "                </object>\n"
    "              </object>\n"
    "            </object>\n"
    "          </object>\n"
    "        </object>\n"
    "      </object>\n"
    "    </object>\n"
    "  </object>\n"
    "</topology>\n";


static void gpumem_emu_fact_known(gpumem_topo_fact_t *fact, uint64_t value)
{
    fact->known  = 1;
    fact->value  = value;
    fact->why[0] = '\0';
}

static void gpumem_emu_fact_default(gpumem_topo_fact_t *fact, uint64_t value)
{
    if (!fact->known) {
        gpumem_emu_fact_known(fact, value);
    }
}

/* The bus of the emulated machine: bridges without ACS redirect and the
 * Skylake-E host bridge, where the topology and sysfs say nothing else */
static void gpumem_emu_topology_bus_facts(gpumem_topo_reach_t *reach)
{
    unsigned i;

    for (i = 0; i < reach->path_len; ++i) {
        gpumem_emu_fact_default(&reach->path[i].acs_ctrl, 0);
    }
    gpumem_emu_fact_default(&reach->hb_id, GPUMEM_EMU_HOST_BRIDGE_ID);
}

/* An emulated GPU: its BAR and memory are the emu's, and it has no fabric
 * links unless the topology gives them. An IOMMU translates its requests
 * where the topology says so (a facts file of the machine it emulates):
 * what the machine would refuse, the emulated one refuses too. */
static void gpumem_emu_topology_gpu_facts(gpumem_topo_reach_t *reach,
                                          size_t vram_size, size_t bar_size)
{
    if (!reach->iommu.known) {
        gpumem_emu_fact_known(&reach->iommu, 0);
        reach->iommu_group = -1;
    }
    gpumem_emu_fact_known(&reach->bar_size, bar_size);
    gpumem_emu_fact_known(&reach->mem_size, vram_size);
    if (reach->fabric == GPUMEM_TOPO_FABRIC_UNKNOWN) {
        reach->fabric = GPUMEM_TOPO_FABRIC_NONE;
    }
    gpumem_emu_topology_bus_facts(reach);
}

/* VRAM of a GPU: the topology's memory size, else the setting; whole large
 * pages, so that 2 MiB pages tile it */
static size_t gpumem_emu_topology_vram_size(const gpumem_emu_config_t *config,
                                            const gpumem_topo_reach_t *reach)
{
    if (reach->mem_size.known) {
        return ucs_align_down_pow2(reach->mem_size.value,
                                   GPUMEM_EMU_LARGE_PAGE_SIZE);
    }
    return ucs_align_up_pow2((config->vram_size != 0) ? config->vram_size :
                             GPUMEM_EMU_DEFAULT_VRAM_SIZE,
                             GPUMEM_EMU_LARGE_PAGE_SIZE);
}

/* BAR of a GPU: the topology's (a facts file of the emulated machine), else
 * the setting, else all of its VRAM; never more than the VRAM */
static size_t gpumem_emu_topology_bar_size(const gpumem_emu_config_t *config,
                                           const gpumem_topo_reach_t *reach,
                                           size_t vram_size)
{
    uint64_t bar_size = reach->bar_size.known ? reach->bar_size.value :
                        config->bar_size;

    if (bar_size == 0) {
        return vram_size;
    }
    return ucs_min(ucs_align_up_pow2(bar_size, GPUMEM_EMU_PAGE_SIZE),
                   vram_size);
}

ucs_status_t gpumem_emu_topology_apply(const gpumem_emu_config_t *config,
                                       gpumem_topo_t *topo,
                                       gpumem_emu_driver_t *driver)
{
    gpumem_topo_dev_t *dev;
    gpumem_emu_gpu_t *gpu;
    size_t vram_size, bar_size;
    unsigned i;

    for (i = 0; i < topo->num_devs; ++i) {
        dev = &topo->devs[i];
        if (dev->type != GPUMEM_TOPO_DEV_GPU) {
            /* The NICs sit on the emulated bus too */
            if (!dev->reach.iommu.known) {
                gpumem_emu_fact_known(&dev->reach.iommu, 0);
                dev->reach.iommu_group = -1;
            }
            gpumem_emu_topology_bus_facts(&dev->reach);
            continue;
        }

        ucs_assert(i < driver->num_gpus);
        gpu       = &driver->gpus[i];
        vram_size = gpumem_emu_topology_vram_size(config, &dev->reach);
        bar_size  = gpumem_emu_topology_bar_size(config, &dev->reach,
                                                 vram_size);
        gpumem_pci_addr_str(&dev->reach.addr, gpu->name, sizeof(gpu->name));
        if (vram_size == 0) {
            ucs_error("gpumem_emu: GPU %s: its %lu bytes of memory are less "
                      "than one %lu-byte page", gpu->name,
                      (unsigned long)dev->reach.mem_size.value,
                      GPUMEM_EMU_LARGE_PAGE_SIZE);
            return UCS_ERR_INVALID_PARAM;
        }

        gpumem_emu_topology_gpu_facts(&dev->reach, vram_size, bar_size);
        gpu->driver    = driver;
        gpu->index     = i;
        gpu->reach     = dev->reach;
        gpu->vram_size = vram_size;
        gpu->bar_size  = bar_size;
    }

    return UCS_OK;
}

/* A path setting, where set and not empty */
static const char *gpumem_emu_topology_setting(const char *name)
{
    const char *value = getenv(name);

    return ((value == NULL) || (value[0] == '\0')) ? NULL : value;
}

ucs_status_t gpumem_emu_topology_from_env(gpumem_topo_t **topo_p)
{
    gpumem_topo_params_t params = {};

    params.xml_path   = gpumem_emu_topology_setting("UCX_GPUMEM_TOPO_XML");
    params.xml_buffer = (params.xml_path == NULL) ?
                        gpumem_emu_builtin_topology : NULL;
    params.sysfs_root = gpumem_emu_topology_setting("UCX_GPUMEM_SYSFS_ROOT");
    params.facts_path = gpumem_emu_topology_setting("UCX_GPUMEM_TOPO_FACTS");
    return gpumem_topo_load(&params, topo_p);
}
