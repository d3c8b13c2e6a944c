/**
 * gpumem_topo: shows which GPUs reach each other's memory and which NIC each
 * GPU should use, and why, as text, JSON or a Graphviz graph.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gpumem/driver/emu/emu.h>
#include <uct/gpumem/topo/topo.h>

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define GPUMEM_TOPO_TOOL_NAME       "gpumem_topo"
#define GPUMEM_TOPO_TOOL_EXIT_FAIL  1
#define GPUMEM_TOPO_TOOL_EXIT_USAGE 2
#define GPUMEM_TOPO_TOOL_CELL_WIDTH 6   /* "OK XHB" */

/* Each assumption of a verdict begins so (see topo_reach.c) */
#define GPUMEM_TOPO_TOOL_ASSUMPTION "unknown: "


typedef enum {
    GPUMEM_TOPO_TOOL_TEXT,
    GPUMEM_TOPO_TOOL_JSON,
    GPUMEM_TOPO_TOOL_DOT
} gpumem_topo_tool_format_t;


/* What the command line asks for */
typedef struct gpumem_topo_tool_opts {
    gpumem_topo_params_t      params;
    const char                *save_facts_path;
    gpumem_topo_tool_format_t format;
    unsigned                  flags;
    int                       emu;   /* The emu driver's machine */
} gpumem_topo_tool_opts_t;


/* Every verdict the outputs show, decided once */
typedef struct gpumem_topo_tool_report {
    const gpumem_topo_t    *topo;
    unsigned               flags;
    gpumem_topo_verdict_t  *verdicts; /* [a * num_gpus + b]: a maps b */
    gpumem_topo_nic_rank_t *ranks;    /* [gpu * num_nics + i], nearest first */
} gpumem_topo_tool_report_t;


/* Whether the library reported an error, so that the tool does not repeat
 * it with less detail */
static int gpumem_topo_tool_error_logged = 0;


static void gpumem_topo_tool_usage(FILE *stream)
{
    fprintf(stream,
            "Usage: " GPUMEM_TOPO_TOOL_NAME " [OPTION]...\n"
            "Show which GPUs map each other's memory, and which NIC each GPU "
            "should use.\n"
            "\n"
            "  --xml FILE         hwloc XML export to read (default: this "
            "machine)\n"
            "  --sysfs DIR        root of sysfs (default: /sys)\n"
            "  --facts FILE       apply facts saved by --save-facts\n"
            "  --save-facts FILE  save the sysfs facts of every device to "
            "FILE and exit\n"
            "  --json             print one JSON object\n"
            "  --dot              print a Graphviz digraph of the PCI tree "
            "and P2P paths\n"
            "  --assume           count facts that cannot be read as "
            "favourable, and\n"
            "                     list each such assumption\n"
            "  --emu              the emu driver's machine (a software GPU):"
            " its built-in\n"
            "                     machine, or the GPUs of --xml, with the "
            "emulated facts\n"
            "  --help             print this help and exit\n"
            "\n"
            "Exit status: 0 on success, 1 when the topology cannot be "
            "loaded or saved,\n"
            "2 on a usage error.\n");
}

/*
 * UCS prints to stdout by default, which would mix the library's messages
 * into the JSON or Graphviz output: they all go to stderr here, under the
 * tool's name.
 */
static ucs_log_func_rc_t
gpumem_topo_tool_log(const char *file, unsigned line,
                     const char *function, ucs_log_level_t level,
                     const ucs_log_component_config_t *comp_conf,
                     const char *format, va_list ap)
{
    static const char prefix[] = "gpumem: ";
    char message[512];
    const char *text;

    /* Where the message comes from is for UCX's log, not for the user */
    (void)file;
    (void)line;
    (void)function;
    (void)comp_conf;

    vsnprintf(message, sizeof(message), format, ap);
    /* The prefix names the plugin among UCX's messages; here the tool's
     * name does */
    text = strncmp(message, prefix, strlen(prefix)) ? message :
           (message + strlen(prefix));

    if (level <= UCS_LOG_LEVEL_ERROR) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": %s\n", text);
        gpumem_topo_tool_error_logged = 1;
    } else {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": %s: %s\n",
                ucs_log_level_names[level], text);
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/* Parses the command line; returns -1 to go on, or the exit status */
static int gpumem_topo_tool_parse(int argc, char **argv,
                                  gpumem_topo_tool_opts_t *opts)
{
    enum {
        OPT_XML = 256,
        OPT_SYSFS,
        OPT_FACTS,
        OPT_SAVE_FACTS,
        OPT_JSON,
        OPT_DOT,
        OPT_ASSUME,
        OPT_EMU,
        OPT_HELP
    };
    static const struct option long_opts[] = {
        {"xml",        required_argument, NULL, OPT_XML},
        {"sysfs",      required_argument, NULL, OPT_SYSFS},
        {"facts",      required_argument, NULL, OPT_FACTS},
        {"save-facts", required_argument, NULL, OPT_SAVE_FACTS},
        {"json",       no_argument,       NULL, OPT_JSON},
        {"dot",        no_argument,       NULL, OPT_DOT},
        {"assume",     no_argument,       NULL, OPT_ASSUME},
        {"emu",        no_argument,       NULL, OPT_EMU},
        {"help",       no_argument,       NULL, OPT_HELP},
        {NULL,         0,                 NULL, 0}
    };
    int formats = 0;
    int c;

    memset(opts, 0, sizeof(*opts));
    opts->format = GPUMEM_TOPO_TOOL_TEXT;

    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_XML:
            opts->params.xml_path = optarg;
            break;
        case OPT_SYSFS:
            opts->params.sysfs_root = optarg;
            break;
        case OPT_FACTS:
            opts->params.facts_path = optarg;
            break;
        case OPT_SAVE_FACTS:
            opts->save_facts_path = optarg;
            break;
        case OPT_JSON:
            opts->format = GPUMEM_TOPO_TOOL_JSON;
            ++formats;
            break;
        case OPT_DOT:
            opts->format = GPUMEM_TOPO_TOOL_DOT;
            ++formats;
            break;
        case OPT_ASSUME:
            opts->flags |= GPUMEM_TOPO_ASSUME;
            break;
        case OPT_EMU:
            opts->emu = 1;
            break;
        case OPT_HELP:
            gpumem_topo_tool_usage(stdout);
            return 0;
        default:
            /* getopt_long() has named the option already */
            fprintf(stderr, "Try '" GPUMEM_TOPO_TOOL_NAME " --help'.\n");
            return GPUMEM_TOPO_TOOL_EXIT_USAGE;
        }
    }

    if (optind < argc) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": unexpected argument '%s'\n"
                "Try '" GPUMEM_TOPO_TOOL_NAME " --help'.\n", argv[optind]);
        return GPUMEM_TOPO_TOOL_EXIT_USAGE;
    }

    if (formats > 1) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": --json and --dot exclude "
                "each other\n");
        return GPUMEM_TOPO_TOOL_EXIT_USAGE;
    }

    return -1;
}

static const char *gpumem_topo_tool_pci(const gpumem_topo_dev_t *dev,
                                        char *buf)
{
    return gpumem_pci_addr_str(&dev->reach.addr, buf,
                               GPUMEM_TOPO_PCI_STR_MAX);
}

/* A short code of the relation, as nvidia-smi topo -m has them */
static const char *
gpumem_topo_tool_relation_code(gpumem_topo_relation_t relation)
{
    switch (relation) {
    case GPUMEM_TOPO_REL_SAME_GPU:
        return "-";
    case GPUMEM_TOPO_REL_SAME_SWITCH:
        return "SW";
    case GPUMEM_TOPO_REL_HOST_BRIDGE:
        return "HB";
    case GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES:
        return "XHB";
    case GPUMEM_TOPO_REL_ACROSS_SOCKETS:
        return "SYS";
    default:
        return "XM";
    }
}

/* The fabric that joins a pair, or NULL when none does */
static const char *
gpumem_topo_tool_fabric(const gpumem_topo_verdict_t *verdict)
{
    if ((verdict->fabric == GPUMEM_TOPO_FABRIC_NONE) ||
        (verdict->fabric == GPUMEM_TOPO_FABRIC_UNKNOWN)) {
        return NULL;
    }
    return gpumem_topo_fabric_name(verdict->fabric);
}

/*
 * The next assumption of a verdict's list after @a item (NULL for the
 * first), with its length in @a len_p; NULL after the last. The list joins
 * them with "; ", which a fact's own text may hold too, so only a "; " that
 * starts another "unknown: ..." separates two.
 */
static const char *gpumem_topo_tool_next_assumed(const char *assumed,
                                                 const char *item,
                                                 size_t *len_p)
{
    static const char separator[] = "; " GPUMEM_TOPO_TOOL_ASSUMPTION;
    const char *start, *end;

    if (item == NULL) {
        start = assumed;
    } else {
        start = item + *len_p;
        if (*start == '\0') {
            return NULL;
        }
        start += 2; /* "; " */
    }

    if (*start == '\0') {
        return NULL;
    }

    end    = strstr(start + 1, separator);
    *len_p = (end != NULL) ? (size_t)(end - start) : strlen(start);
    return start;
}

static ucs_status_t
gpumem_topo_tool_report_init(const gpumem_topo_t *topo, unsigned flags,
                             gpumem_topo_tool_report_t *report)
{
    unsigned num_gpus = topo->num_gpus;
    unsigned a, b;

    report->topo     = topo;
    report->flags    = flags;
    report->verdicts = calloc((size_t)num_gpus * num_gpus + 1,
                              sizeof(*report->verdicts));
    report->ranks    = calloc((size_t)num_gpus * topo->num_nics + 1,
                              sizeof(*report->ranks));
    if ((report->verdicts == NULL) || (report->ranks == NULL)) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": no memory for the verdicts "
                "of %u GPUs and %u NICs\n", num_gpus, topo->num_nics);
        free(report->verdicts);
        free(report->ranks);
        return UCS_ERR_NO_MEMORY;
    }

    /* GPUs come first in devs[], so a GPU's index is its device index */
    for (a = 0; a < num_gpus; ++a) {
        for (b = 0; b < num_gpus; ++b) {
            gpumem_topo_reaches(&topo->devs[a].reach, &topo->devs[b].reach,
                                flags, &report->verdicts[(a * num_gpus) + b]);
        }
        if (topo->num_nics > 0) {
            gpumem_topo_rank_nics(topo, a, flags,
                                  &report->ranks[a * topo->num_nics]);
        }
    }
    return UCS_OK;
}

static void gpumem_topo_tool_report_cleanup(gpumem_topo_tool_report_t *report)
{
    free(report->verdicts);
    free(report->ranks);
}

static const gpumem_topo_verdict_t *
gpumem_topo_tool_verdict(const gpumem_topo_tool_report_t *report, unsigned a,
                         unsigned b)
{
    return &report->verdicts[(a * report->topo->num_gpus) + b];
}

static const gpumem_topo_nic_rank_t *
gpumem_topo_tool_rank(const gpumem_topo_tool_report_t *report, unsigned gpu,
                      unsigned i)
{
    return &report->ranks[(gpu * report->topo->num_nics) + i];
}


/* Text output */

static void gpumem_topo_tool_text_devs(const gpumem_topo_t *topo,
                                       gpumem_topo_dev_type_t type,
                                       const char *title, unsigned count)
{
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_dev_t *dev;
    unsigned i;

    printf("%s (%u):\n", title, count);
    if (count == 0) {
        printf("  (none)\n");
    }
    for (i = 0; i < topo->num_devs; ++i) {
        dev = &topo->devs[i];
        if (dev->type != type) {
            continue;
        }
        printf("  %-14s %s  %04x:%04x", dev->name,
               gpumem_topo_tool_pci(dev, pci), dev->vendor, dev->device);
        if (dev->numa_node >= 0) {
            printf("  numa %d", dev->numa_node);
        }
        printf("\n");
    }
}

/* Column width of the matrix: the longest GPU name, or a cell */
static int gpumem_topo_tool_text_width(const gpumem_topo_t *topo)
{
    int width = GPUMEM_TOPO_TOOL_CELL_WIDTH;
    unsigned i;

    for (i = 0; i < topo->num_gpus; ++i) {
        width = ucs_max(width, (int)strlen(topo->devs[i].name));
    }
    return width;
}

static void
gpumem_topo_tool_text_matrix(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    int width                 = gpumem_topo_tool_text_width(topo);
    const gpumem_topo_verdict_t *verdict;
    const char *fabric;
    char cell[32];
    unsigned a, b;

    printf("\nReachability (does the row GPU map the column GPU's memory?):"
           "\n");
    if (topo->num_gpus == 0) {
        printf("  (no GPU)\n");
        return;
    }

    printf("%-*s", width + 2, "");
    for (b = 0; b < topo->num_gpus; ++b) {
        printf(" %-*s", (b + 1 < topo->num_gpus) ? width : 0,
               topo->devs[b].name);
    }
    printf("\n");

    for (a = 0; a < topo->num_gpus; ++a) {
        printf("  %-*s", width, topo->devs[a].name);
        for (b = 0; b < topo->num_gpus; ++b) {
            verdict = gpumem_topo_tool_verdict(report, a, b);
            fabric  = gpumem_topo_tool_fabric(verdict);
            if (a == b) {
                snprintf(cell, sizeof(cell), "-");
            } else {
                snprintf(cell, sizeof(cell), "%s %s",
                         verdict->reaches ? "OK" : "X",
                         (fabric == NULL) ?
                         gpumem_topo_tool_relation_code(verdict->relation) :
                         (verdict->fabric == GPUMEM_TOPO_FABRIC_XGMI) ?
                         "XG" : "NV");
            }
            /* No padding after the last column */
            printf(" %-*s", (b + 1 < topo->num_gpus) ? width : 0, cell);
        }
        printf("\n");
    }

    printf("\nLegend:\n"
           "  OK  = reaches: the row GPU maps the column GPU's memory\n"
           "  X   = does not reach (the reason is below)\n"
           "  NV  = joined by NVLink          XG  = joined by XGMI\n"
           "  SW  = a PCI switch above both   HB  = only their host bridge\n"
           "  XHB = across host bridges       SYS = across CPU sockets\n"
           "  XM  = on other machines\n");
}

static void
gpumem_topo_tool_text_assumed(const gpumem_topo_verdict_t *verdict,
                              const char *indent)
{
    const char *item = NULL;
    size_t len       = 0;

    while ((item = gpumem_topo_tool_next_assumed(verdict->assumed, item,
                                                 &len)) != NULL) {
        printf("%sassumed: %.*s\n", indent, (int)len, item);
    }
}

static void gpumem_topo_tool_text_where(const gpumem_topo_verdict_t *verdict)
{
    const char *fabric = gpumem_topo_tool_fabric(verdict);

    printf("%s", gpumem_topo_relation_name(verdict->relation));
    if (verdict->hops > 0) {
        printf(", %u hops", verdict->hops);
    }
    if (fabric != NULL) {
        printf(", %s", fabric);
    }
}

static void
gpumem_topo_tool_text_verdicts(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    const gpumem_topo_verdict_t *verdict;
    unsigned a, b;

    printf("\nVerdicts (A -> B: whether A maps B's memory):\n");
    if (topo->num_gpus < 2) {
        printf("  (fewer than two GPUs)\n");
    }
    for (a = 0; a < topo->num_gpus; ++a) {
        for (b = 0; b < topo->num_gpus; ++b) {
            if (a == b) {
                continue;
            }
            verdict = gpumem_topo_tool_verdict(report, a, b);
            printf("  %s -> %s: %s (", topo->devs[a].name, topo->devs[b].name,
                   verdict->reaches ? "yes" : "no");
            gpumem_topo_tool_text_where(verdict);
            printf("): %s\n", verdict->reason);
            gpumem_topo_tool_text_assumed(verdict, "      ");
        }
    }
}

static void gpumem_topo_tool_text_nics(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_nic_rank_t *rank;
    const gpumem_topo_dev_t *nic;
    unsigned gpu, i;

    printf("\nNICs of each GPU, nearest first (GDR: GPUDirect RDMA):\n");
    if (topo->num_nics == 0) {
        printf("  (no RDMA NIC)\n");
        return;
    }
    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        printf("  %s (%s):\n", topo->devs[gpu].name,
               gpumem_topo_tool_pci(&topo->devs[gpu], pci));
        for (i = 0; i < topo->num_nics; ++i) {
            rank = gpumem_topo_tool_rank(report, gpu, i);
            nic  = &topo->devs[rank->nic];
            printf("    %u. %s %s, %s", i + 1, nic->name,
                   gpumem_topo_tool_pci(nic, pci),
                   gpumem_topo_relation_name(rank->relation));
            if (rank->hops > 0) {
                printf(", %u hops", rank->hops);
            }
            printf(", GDR %s: %s\n", rank->gdr.reaches ? "yes" : "no",
                   rank->gdr.reason);
            gpumem_topo_tool_text_assumed(&rank->gdr, "         ");
        }
    }
}

static void gpumem_topo_tool_text(const gpumem_topo_tool_report_t *report)
{
    gpumem_topo_tool_text_devs(report->topo, GPUMEM_TOPO_DEV_GPU, "GPUs",
                               report->topo->num_gpus);
    gpumem_topo_tool_text_devs(report->topo, GPUMEM_TOPO_DEV_NIC, "RDMA NICs",
                               report->topo->num_nics);
    gpumem_topo_tool_text_matrix(report);
    gpumem_topo_tool_text_verdicts(report);
    gpumem_topo_tool_text_nics(report);
}


/* JSON output */

static void gpumem_topo_tool_json_str_n(const char *str, size_t len)
{
    unsigned char c;
    size_t i;

    putchar('"');
    for (i = 0; i < len; ++i) {
        c = (unsigned char)str[i];
        switch (c) {
        case '"':
            fputs("\\\"", stdout);
            break;
        case '\\':
            fputs("\\\\", stdout);
            break;
        case '\n':
            fputs("\\n", stdout);
            break;
        case '\r':
            fputs("\\r", stdout);
            break;
        case '\t':
            fputs("\\t", stdout);
            break;
        default:
            if ((c < 0x20) || (c == 0x7f)) {
                printf("\\u%04x", c);
            } else {
                putchar(c);
            }
            break;
        }
    }
    putchar('"');
}

static void gpumem_topo_tool_json_str(const char *str)
{
    gpumem_topo_tool_json_str_n(str, strlen(str));
}

static void gpumem_topo_tool_json_devs(const gpumem_topo_t *topo,
                                       gpumem_topo_dev_type_t type)
{
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_dev_t *dev;
    const char *sep = "";
    unsigned i;

    printf("[");
    for (i = 0; i < topo->num_devs; ++i) {
        dev = &topo->devs[i];
        if (dev->type != type) {
            continue;
        }
        printf("%s\n    {\"pci\": \"%s\", \"name\": ", sep,
               gpumem_topo_tool_pci(dev, pci));
        gpumem_topo_tool_json_str(dev->name);
        printf(", \"vendor\": \"%04x\", \"device\": \"%04x\", "
               "\"numa_node\": %d}", dev->vendor, dev->device,
               dev->numa_node);
        sep = ",";
    }
    printf("%s]", (*sep != '\0') ? "\n  " : "");
}

/* A verdict's placement, answer, reason and assumptions; a NIC's DMA takes
 * no fabric, so only pairs of GPUs show one */
static void
gpumem_topo_tool_json_verdict(const gpumem_topo_verdict_t *verdict,
                              gpumem_topo_relation_t relation, unsigned hops,
                              const char *reaches_key, int with_fabric,
                              const char *indent)
{
    const char *fabric = gpumem_topo_tool_fabric(verdict);
    const char *item   = NULL;
    const char *sep    = "";
    size_t len         = 0;

    printf("\"path\": \"%s\", \"hops\": %u, \"%s\": %s",
           gpumem_topo_relation_name(relation), hops, reaches_key,
           verdict->reaches ? "true" : "false");
    if (with_fabric) {
        printf(", \"fabric\": ");
        if (fabric != NULL) {
            gpumem_topo_tool_json_str(fabric);
        } else {
            printf("null");
        }
    }

    printf(",\n%s \"reason\": ", indent);
    gpumem_topo_tool_json_str(verdict->reason);
    printf(",\n%s \"assumed\": [", indent);
    while ((item = gpumem_topo_tool_next_assumed(verdict->assumed, item,
                                                 &len)) != NULL) {
        printf("%s", sep);
        gpumem_topo_tool_json_str_n(item, len);
        sep = ", ";
    }
    printf("]}");
}

static void gpumem_topo_tool_json_pairs(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    char pci_a[GPUMEM_TOPO_PCI_STR_MAX], pci_b[GPUMEM_TOPO_PCI_STR_MAX];
    const char *sep           = "";
    const gpumem_topo_verdict_t *verdict;
    unsigned a, b;

    printf("[");
    for (a = 0; a < topo->num_gpus; ++a) {
        for (b = 0; b < topo->num_gpus; ++b) {
            if (a == b) {
                continue;
            }
            printf("%s\n    {\"a\": \"%s\", \"b\": \"%s\", ", sep,
                   gpumem_topo_tool_pci(&topo->devs[a], pci_a),
                   gpumem_topo_tool_pci(&topo->devs[b], pci_b));
            verdict = gpumem_topo_tool_verdict(report, a, b);
            gpumem_topo_tool_json_verdict(verdict, verdict->relation,
                                          verdict->hops, "reaches", 1, "    ");
            sep = ",";
        }
    }
    printf("%s]", (*sep != '\0') ? "\n  " : "");
}

static void
gpumem_topo_tool_json_nic_rank(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_nic_rank_t *rank;
    const gpumem_topo_dev_t *nic;
    unsigned gpu, i;

    printf("{");
    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        printf("%s\n    \"%s\": [", (gpu > 0) ? "," : "",
               gpumem_topo_tool_pci(&topo->devs[gpu], pci));
        for (i = 0; i < topo->num_nics; ++i) {
            rank = gpumem_topo_tool_rank(report, gpu, i);
            nic  = &topo->devs[rank->nic];
            printf("%s\n      {\"pci\": \"%s\", \"name\": ", (i > 0) ? "," : "",
                   gpumem_topo_tool_pci(nic, pci));
            gpumem_topo_tool_json_str(nic->name);
            printf(", ");
            gpumem_topo_tool_json_verdict(&rank->gdr, rank->relation,
                                          rank->hops, "gdr", 0, "      ");
        }
        printf("%s]", (topo->num_nics > 0) ? "\n    " : "");
    }
    printf("%s}", (topo->num_gpus > 0) ? "\n  " : "");
}

static void gpumem_topo_tool_json(const gpumem_topo_tool_report_t *report)
{
    printf("{\n  \"assume\": %s,\n  \"gpus\": ",
           (report->flags & GPUMEM_TOPO_ASSUME) ? "true" : "false");
    gpumem_topo_tool_json_devs(report->topo, GPUMEM_TOPO_DEV_GPU);
    printf(",\n  \"nics\": ");
    gpumem_topo_tool_json_devs(report->topo, GPUMEM_TOPO_DEV_NIC);
    printf(",\n  \"pairs\": ");
    gpumem_topo_tool_json_pairs(report);
    printf(",\n  \"nic_rank\": ");
    gpumem_topo_tool_json_nic_rank(report);
    printf("\n}\n");
}


/* Graphviz output */

/* Text inside a quoted DOT string: names come from the topology file */
static void gpumem_topo_tool_dot_text(const char *str)
{
    for (; *str != '\0'; ++str) {
        if ((*str == '"') || (*str == '\\')) {
            putchar('\\');
        }
        putchar(((unsigned char)*str < 0x20) ? ' ' : *str);
    }
}

static void gpumem_topo_tool_dot_id(const gpumem_pci_addr_t *addr)
{
    printf("pci_%04x_%02x_%02x_%x", addr->domain, addr->bus, addr->dev,
           addr->fn);
}

/* Whether a bridge or host bridge appears in an earlier device's path, and
 * so was drawn already (a machine has few devices) */
static int gpumem_topo_tool_dot_drawn(const gpumem_topo_t *topo, unsigned dev,
                                      unsigned hop, int host_bridge)
{
    const gpumem_topo_reach_t *reach = &topo->devs[dev].reach;
    const gpumem_topo_reach_t *other;
    unsigned d, h;

    for (d = 0; d < dev; ++d) {
        other = &topo->devs[d].reach;
        if (host_bridge) {
            if ((other->hb_domain == reach->hb_domain) &&
                (other->hb_bus == reach->hb_bus)) {
                return 1;
            }
            continue;
        }
        for (h = 0; h < other->path_len; ++h) {
            if (gpumem_pci_addr_equal(&other->path[h].addr,
                                      &reach->path[hop].addr)) {
                return 1;
            }
        }
    }
    return 0;
}

/* A device, the bridges above it and the host bridge, each drawn once */
static void gpumem_topo_tool_dot_dev(const gpumem_topo_t *topo, unsigned dev)
{
    const gpumem_topo_dev_t *d       = &topo->devs[dev];
    const gpumem_topo_reach_t *reach = &d->reach;
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    unsigned hop;

    printf("    ");
    gpumem_topo_tool_dot_id(&reach->addr);
    printf(" [shape=box, style=filled, fillcolor=%s, label=\"",
           (d->type == GPUMEM_TOPO_DEV_GPU) ? "palegreen" : "lightblue");
    gpumem_topo_tool_dot_text(d->name);
    printf("\\n%s\\n%04x:%04x\"];\n", gpumem_topo_tool_pci(d, pci),
           d->vendor, d->device);

    for (hop = 0; hop < reach->path_len; ++hop) {
        if (gpumem_topo_tool_dot_drawn(topo, dev, hop, 0)) {
            continue;
        }
        printf("    ");
        gpumem_topo_tool_dot_id(&reach->path[hop].addr);
        printf(" [shape=ellipse, label=\"bridge\\n%s\"];\n",
               gpumem_pci_addr_str(&reach->path[hop].addr, pci, sizeof(pci)));
    }

    if (!gpumem_topo_tool_dot_drawn(topo, dev, 0, 1)) {
        printf("    hb_%04x_%02x [shape=house, style=filled, "
               "fillcolor=lightgrey, label=\"host bridge\\n%04x:%02x",
               reach->hb_domain, reach->hb_bus, reach->hb_domain,
               reach->hb_bus);
        if (reach->package >= 0) {
            printf("\\npackage %d", reach->package);
        }
        printf("\"];\n");
    }
}

/* The edges from a device up to its host bridge; a bridge above several
 * devices has its edge up drawn once */
static void gpumem_topo_tool_dot_tree(const gpumem_topo_t *topo, unsigned dev)
{
    const gpumem_topo_reach_t *reach = &topo->devs[dev].reach;
    unsigned hop;

    for (hop = 0; hop <= reach->path_len; ++hop) {
        if ((hop > 0) && gpumem_topo_tool_dot_drawn(topo, dev, hop - 1, 0)) {
            return;
        }
        printf("    ");
        if (hop == reach->path_len) {
            printf("hb_%04x_%02x", reach->hb_domain, reach->hb_bus);
        } else {
            gpumem_topo_tool_dot_id(&reach->path[hop].addr);
        }
        printf(" -> ");
        gpumem_topo_tool_dot_id((hop == 0) ? &reach->addr :
                                &reach->path[hop - 1].addr);
        printf(";\n");
    }
}

/* One edge per pair that reaches either way, both ways where both do */
static void gpumem_topo_tool_dot_p2p(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    const gpumem_topo_verdict_t *ab, *ba;
    unsigned a, b, from, to;

    for (a = 0; a < topo->num_gpus; ++a) {
        for (b = a + 1; b < topo->num_gpus; ++b) {
            ab = gpumem_topo_tool_verdict(report, a, b);
            ba = gpumem_topo_tool_verdict(report, b, a);
            if (!ab->reaches && !ba->reaches) {
                continue;
            }

            from = ab->reaches ? a : b;
            to   = ab->reaches ? b : a;
            printf("    ");
            gpumem_topo_tool_dot_id(&topo->devs[from].reach.addr);
            printf(" -> ");
            gpumem_topo_tool_dot_id(&topo->devs[to].reach.addr);
            /* P2P edges must not pull the PCI tree's layout about */
            printf(" [constraint=false, dir=%s, %s];\n",
                   (ab->reaches && ba->reaches) ? "both" : "forward",
                   (gpumem_topo_tool_fabric(ab->reaches ? ab : ba) != NULL) ?
                   "color=darkgreen, penwidth=2" :
                   "color=blue, style=dashed");
        }
    }
}

static void gpumem_topo_tool_dot(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    unsigned dev;

    printf("digraph gpumem_topo {\n"
           "    rankdir=TB;\n"
           "    node [fontname=\"Helvetica\", fontsize=10];\n"
           "    edge [arrowsize=0.6];\n"
           "    /* The PCI tree: host bridges, bridges, GPUs and NICs */\n");
    for (dev = 0; dev < topo->num_devs; ++dev) {
        gpumem_topo_tool_dot_dev(topo, dev);
    }
    for (dev = 0; dev < topo->num_devs; ++dev) {
        gpumem_topo_tool_dot_tree(topo, dev);
    }
    printf("    /* P2P: green over a fabric, dashed blue over PCI */\n");
    gpumem_topo_tool_dot_p2p(report);
    printf("}\n");
}


static int gpumem_topo_tool_load(const gpumem_topo_tool_opts_t *opts,
                                 gpumem_topo_t **topo_p)
{
    gpumem_topo_params_t params = opts->params;
    gpumem_emu_config_t emu_config;
    gpumem_driver_t *emu;
    ucs_status_t status;

    if (opts->emu && (params.xml_path == NULL)) {
        params.xml_buffer = gpumem_emu_builtin_topology;
    }

    status = gpumem_topo_load(&params, topo_p);
    if ((status == UCS_OK) && opts->emu) {
        /* The emulated GPUs' facts are the emu driver's to set */
        memset(&emu_config, 0, sizeof(emu_config));
        status = gpumem_emu_open(&emu_config, *topo_p, &emu);
        if (status == UCS_OK) {
            emu->ops->close(emu);
        } else {
            gpumem_topo_destroy(*topo_p);
        }
    }
    if (status == UCS_OK) {
        return 0;
    }

    if (!gpumem_topo_tool_error_logged) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": cannot load the topology "
                "of %s%s%s: %s\n",
                (params.xml_path != NULL) ? params.xml_path :
                opts->emu ? "the emu driver's machine" : "this machine",
                (params.facts_path != NULL) ? " with facts " : "",
                (params.facts_path != NULL) ? params.facts_path : "",
                ucs_status_string(status));
    }
    return GPUMEM_TOPO_TOOL_EXIT_FAIL;
}

int main(int argc, char **argv)
{
    gpumem_topo_tool_report_t report;
    gpumem_topo_tool_opts_t opts;
    gpumem_topo_t *topo;
    int ret;

    ret = gpumem_topo_tool_parse(argc, argv, &opts);
    if (ret >= 0) {
        return ret;
    }

    ucs_log_push_handler(gpumem_topo_tool_log);

    ret = gpumem_topo_tool_load(&opts, &topo);
    if (ret != 0) {
        return ret;
    }

    if (opts.save_facts_path != NULL) {
        ret = (gpumem_topo_save_facts(topo, opts.save_facts_path) == UCS_OK) ?
              0 : GPUMEM_TOPO_TOOL_EXIT_FAIL;
        goto out_destroy;
    }

    if (gpumem_topo_tool_report_init(topo, opts.flags, &report) != UCS_OK) {
        ret = GPUMEM_TOPO_TOOL_EXIT_FAIL;
        goto out_destroy;
    }

    switch (opts.format) {
    case GPUMEM_TOPO_TOOL_JSON:
        gpumem_topo_tool_json(&report);
        break;
    case GPUMEM_TOPO_TOOL_DOT:
        gpumem_topo_tool_dot(&report);
        break;
    default:
        gpumem_topo_tool_text(&report);
        break;
    }
    gpumem_topo_tool_report_cleanup(&report);

    /* A full disk or a closed pipe must not pass for a complete report */
    if ((fflush(stdout) != 0) || ferror(stdout)) {
        perror(GPUMEM_TOPO_TOOL_NAME ": cannot write the output");
        ret = GPUMEM_TOPO_TOOL_EXIT_FAIL;
    }

out_destroy:
    gpumem_topo_destroy(topo);
    return ret;
}
