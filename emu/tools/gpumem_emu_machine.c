/**
 * gpumem emulator: writes the emulated machine that a process's CUDA
 * libraries and the plugin's cuda driver see alike, into a directory:
 *
 *   machine.xml    its hwloc export: the topology given, or the built-in
 *                  machine with N GPUs
 *   machine.facts  the facts the emulator gives its GPUs (memory, BAR, peer
 *                  reach), which the plugin reads beside the export
 *
 *   gpumem-emu-machine [--gpus N | --topology XML [--facts FACTS]] DIR
 *
 * Each GPU has the VRAM of UCX_GPUMEM_EMU_VRAM_SIZE where it is set (the
 * facts carry it to every process of the run), else the emulator's default.
 * gpumem-emu runs it; it is not meant to be run alone.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <emu/machine/emu.h>

#include <ucs/sys/string.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* GPUs of the built-in machine: behind one PCIe switch, whose downstream
 * ports (at most 31 on its bus) take them and the NIC */
#define GPUMEM_EMU_MACHINE_MAX_GPUS 16


static void usage(FILE *stream, const char *prog)
{
    fprintf(stream,
            "usage: %s [--gpus N | --topology XML [--facts FACTS]] DIR\n"
            "  writes DIR/machine.xml and DIR/machine.facts: the built-in\n"
            "  machine (2 GPUs), with N GPUs (1 to %d), or the machine of\n"
            "  the hwloc export XML (with the facts FACTS, if given)\n",
            prog, GPUMEM_EMU_MACHINE_MAX_GPUS);
}

/* A switch downstream port of the built-in machine, and what is behind it */
static void write_port(FILE *xml, unsigned port, const char *device)
{
    unsigned bus = 3 + port;

    fprintf(xml,
            "            <object type=\"Bridge\" gp_index=\"%u\""
            " bridge_type=\"1-1\" depth=\"3\""
            " bridge_pci=\"00e0:[%02x-%02x]\" pci_busid=\"00e0:02:%02x.0\""
            " pci_type=\"0604 [10b5:8747] [10b5:8747] ca\">\n%s"
            "            </object>\n",
            100 + (3 * port), bus, bus, port + 1, device);
}

/*
 * The built-in machine of the emulator (one socket, a PCIe switch with the
 * GPUs and a ConnectX-6 NIC under it), with num_gpus GPUs.
 */
static int write_builtin(FILE *xml, unsigned num_gpus)
{
    const char *builtin = gpumem_emu_builtin_topology;
    /* The built-in export up to its switch's first downstream port, and
     * from after its last one */
    const char *head_end = strstr(builtin, "            <object type=\"Bridge\""
                                           " gp_index=\"14\"");
    const char *tail     = strstr(builtin, "          </object>\n"
                                           "        </object>\n"
                                           "      </object>\n"
                                           "    </object>\n"
                                           "  </object>\n"
                                           "</topology>");
    unsigned last_bus    = 3 + num_gpus;
    char device[1024];
    const char *p;
    unsigned gpu;

    if ((head_end == NULL) || (tail == NULL)) {
        fprintf(stderr, "gpumem-emu-machine: the built-in machine has no "
                "PCIe switch to put GPUs under\n");
        return -1;
    }

    /* The bridges above the switch's ports cover every bus below them */
    for (p = builtin; p < head_end; ++p) {
        if (!strncmp(p, "-05]", 4)) {
            fprintf(xml, "-%02x]", last_bus);
            p += 3;
        } else {
            fputc(*p, xml);
        }
    }

    for (gpu = 0; gpu < num_gpus; ++gpu) {
        snprintf(device, sizeof(device),
                 "              <object type=\"PCIDev\" gp_index=\"%u\""
                 " pci_busid=\"00e0:%02x:00.0\""
                 " pci_type=\"0302 [10de:20b0] [10de:134f] a1\">\n"
                 "                <object type=\"OSDev\" gp_index=\"%u\""
                 " name=\"emu%u\" subtype=\"gpumem-emu\" osdev_type=\"5\">\n"
                 "                  <info name=\"Backend\""
                 " value=\"gpumem emu\"/>\n"
                 "                  <info name=\"GPUVendor\""
                 " value=\"NVIDIA Corporation (emulated by gpumem)\"/>\n"
                 "                </object>\n"
                 "              </object>\n",
                 101 + (3 * gpu), 3 + gpu, 102 + (3 * gpu), gpu);
        write_port(xml, gpu, device);
    }

    snprintf(device, sizeof(device),
             "              <object type=\"PCIDev\" gp_index=\"%u\""
             " pci_busid=\"00e0:%02x:00.0\""
             " pci_type=\"0207 [15b3:101b] [15b3:0007] 00\">\n"
             "                <object type=\"OSDev\" gp_index=\"%u\""
             " name=\"mlx5_0\" osdev_type=\"3\">\n"
             "                  <info name=\"Backend\" value=\"gpumem emu\"/>\n"
             "                </object>\n"
             "              </object>\n",
             101 + (3 * num_gpus), last_bus, 102 + (3 * num_gpus));
    write_port(xml, num_gpus, device);
    fputs(tail, xml);
    return 0;
}

static int copy_file(const char *from, FILE *to)
{
    char buf[65536];
    size_t length;
    FILE *in;
    int ret;

    in = fopen(from, "r");
    if (in == NULL) {
        fprintf(stderr, "gpumem-emu-machine: %s: %s\n", from, strerror(errno));
        return -1;
    }
    while ((length = fread(buf, 1, sizeof(buf), in)) > 0) {
        if (fwrite(buf, 1, length, to) != length) {
            break;
        }
    }
    ret = (ferror(in) || ferror(to)) ? -1 : 0;
    if (ret != 0) {
        fprintf(stderr, "gpumem-emu-machine: cannot copy %s\n", from);
    }
    fclose(in);
    return ret;
}

static int remove_entry(const char *path, const struct stat *st UCS_V_UNUSED,
                        int flag UCS_V_UNUSED, struct FTW *ftw UCS_V_UNUSED)
{
    return remove(path);
}

/* The emulator writes its GPUs' facts into the topology as it opens; its
 * shared state goes to a directory of its own, removed after */
static int write_facts(const char *xml_path, const char *facts_in,
                       const char *facts_out, const char *dir)
{
    gpumem_emu_config_t config = {
        .copy_inline_max = GPUMEM_EMU_DEFAULT_COPY_INLINE_MAX
    };
    gpumem_topo_params_t params = {
        .xml_path   = xml_path,
        .sysfs_root = "/nonexistent",
        .facts_path = facts_in
    };
    const char *vram = getenv("UCX_GPUMEM_EMU_VRAM_SIZE");
    char shm_dir[PATH_MAX];
    gpumem_driver_t *driver;
    gpumem_topo_t *topo;
    ucs_status_t status;

    if ((vram != NULL) &&
        (ucs_str_to_memunits(vram, &config.vram_size) != UCS_OK)) {
        fprintf(stderr, "gpumem-emu-machine: UCX_GPUMEM_EMU_VRAM_SIZE=%s is "
                "not a size\n", vram);
        return -1;
    }

    snprintf(shm_dir, sizeof(shm_dir), "%s/.facts.XXXXXX", dir);
    if (mkdtemp(shm_dir) == NULL) {
        fprintf(stderr, "gpumem-emu-machine: %s: %s\n", shm_dir,
                strerror(errno));
        return -1;
    }
    config.shm_dir = shm_dir;

    status = gpumem_topo_load(&params, &topo);
    if (status != UCS_OK) {
        fprintf(stderr, "gpumem-emu-machine: cannot load the machine of "
                "%s: %s\n", xml_path, ucs_status_string(status));
    } else {
        status = gpumem_emu_open(&config, topo, &driver);
        if (status != UCS_OK) {
            fprintf(stderr, "gpumem-emu-machine: the emulator cannot open "
                    "the machine of %s: %s\n", xml_path,
                    ucs_status_string(status));
        } else {
            driver->ops->close(driver);
            status = gpumem_topo_save_facts(topo, facts_out);
        }
        gpumem_topo_destroy(topo);
    }

    nftw(shm_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return (status == UCS_OK) ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"gpus",     required_argument, NULL, 'g'},
        {"topology", required_argument, NULL, 't'},
        {"facts",    required_argument, NULL, 'f'},
        {"help",     no_argument,       NULL, 'h'},
        {NULL,       0,                 NULL, 0}
    };
    const char *topology = NULL;
    const char *facts    = NULL;
    long num_gpus        = 0; /* The built-in machine as it is */
    char xml_path[PATH_MAX], facts_path[PATH_MAX];
    char *end;
    FILE *xml;
    int opt, ret;

    while ((opt = getopt_long(argc, argv, "g:t:f:h", options, NULL)) != -1) {
        switch (opt) {
        case 'g':
            errno    = 0;
            num_gpus = strtol(optarg, &end, 10);
            if ((errno != 0) || (*end != '\0') || (num_gpus < 1) ||
                (num_gpus > GPUMEM_EMU_MACHINE_MAX_GPUS)) {
                fprintf(stderr, "gpumem-emu-machine: --gpus %s: not a "
                        "number of GPUs from 1 to %d\n", optarg,
                        GPUMEM_EMU_MACHINE_MAX_GPUS);
                return 2;
            }
            break;
        case 't':
            topology = optarg;
            break;
        case 'f':
            facts = optarg;
            break;
        case 'h':
            usage(stdout, argv[0]);
            return 0;
        default:
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if ((optind != argc - 1) || ((facts != NULL) && (topology == NULL))) {
        usage(stderr, argv[0]);
        return 2;
    }

    if ((snprintf(xml_path, sizeof(xml_path), "%s/machine.xml",
                  argv[optind]) >= (int)sizeof(xml_path)) ||
        (snprintf(facts_path, sizeof(facts_path), "%s/machine.facts",
                  argv[optind]) >= (int)sizeof(facts_path))) {
        fprintf(stderr, "gpumem-emu-machine: %s: path too long\n",
                argv[optind]);
        return 2;
    }

    xml = fopen(xml_path, "w");
    if (xml == NULL) {
        fprintf(stderr, "gpumem-emu-machine: %s: %s\n", xml_path,
                strerror(errno));
        return 1;
    }
    if (topology != NULL) {
        ret = copy_file(topology, xml);
    } else if (num_gpus == 0) {
        ret = (fputs(gpumem_emu_builtin_topology, xml) < 0) ? -1 : 0;
    } else {
        ret = write_builtin(xml, num_gpus);
    }
    if ((fclose(xml) != 0) || (ret != 0)) {
        fprintf(stderr, "gpumem-emu-machine: cannot write %s\n", xml_path);
        return 1;
    }

    return (write_facts(xml_path, facts, facts_path, argv[optind]) == 0) ?
           0 : 1;
}
