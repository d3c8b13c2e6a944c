/**
 * gpumem_topo: the report as text for a screen: the devices, the matrix of
 * verdicts, the unknown facts once, each deciding reason with its pairs and
 * each GPU's NICs; --verbose adds every rule's reason.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define GPUMEM_TOPO_TOOL_CELL_WIDTH 6   /* "OK XHB" */
#define GPUMEM_TOPO_TOOL_TEXT_WIDTH 79  /* Columns of a wrapped line */


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

    printf("  OK: maps it; X: does not (why: below). NV, XG: joined by NVLink, "
           "XGMI;\n"
           "  SW: a PCI switch above both; HB: only their host bridge; XHB: "
           "across host\n"
           "  bridges; SYS: across CPU sockets; XM: on other machines\n");
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


void gpumem_topo_tool_text_wrap(const char *indent, const char *hang,
                                const char *fmt, ...)
{
    char text[2 * GPUMEM_TOPO_REASON_MAX];
    const char *word, *end;
    int column, len;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);

    column = printf("%s", indent);
    for (word = text; *word != '\0'; word = end) {
        while (*word == ' ') {
            ++word;
        }
        end = strchr(word, ' ');
        if (end == NULL) {
            end = word + strlen(word);
        }
        len = (int)(end - word);
        if (len == 0) {
            break;
        }
        if ((column > (int)strlen(indent)) &&
            ((column + 1 + len) > GPUMEM_TOPO_TOOL_TEXT_WIDTH)) {
            column = printf("\n%s", hang) - 1;
        } else if (column > (int)strlen(indent)) {
            column += printf(" ");
        }
        column += printf("%.*s", len, word);
    }
    printf("\n");
}

/* Prints items separated by ", ", starting new lines of @a indent before
 * the line would pass the width */
typedef struct {
    int        column;
    int        count;
    const char *indent;
} gpumem_topo_tool_wrap_t;

static void gpumem_topo_tool_wrap_init(gpumem_topo_tool_wrap_t *wrap,
                                       int column, const char *indent)
{
    wrap->column = column;
    wrap->count  = 0;
    wrap->indent = indent;
}

static void UCS_F_PRINTF(2, 3)
gpumem_topo_tool_wrap_item(gpumem_topo_tool_wrap_t *wrap, const char *fmt,
                           ...)
{
    char item[128];
    va_list ap;
    int len;

    va_start(ap, fmt);
    len = vsnprintf(item, sizeof(item), fmt, ap);
    va_end(ap);
    if (len < 0) {
        return;
    }

    if (wrap->count > 0) {
        printf(",");
        ++wrap->column;
    }
    if ((wrap->count > 0) &&
        ((wrap->column + 1 + len) > GPUMEM_TOPO_TOOL_TEXT_WIDTH)) {
        printf("\n%s", wrap->indent);
        wrap->column = (int)strlen(wrap->indent);
    } else {
        printf(" ");
        ++wrap->column;
    }
    printf("%s", item);
    wrap->column += len;
    ++wrap->count;
}

/* Whether two verdicts fall under one reason of the summary */
static int gpumem_topo_tool_same_reason(const gpumem_topo_verdict_t *v1,
                                        const gpumem_topo_verdict_t *v2)
{
    return (v1->reaches == v2->reaches) && (strcmp(v1->brief, v2->brief) == 0);
}

/* The pairs that one reason decides, A <-> B where it decides both ways;
 * marks their verdicts in @a shown */
static void
gpumem_topo_tool_text_pairs(const gpumem_topo_tool_report_t *report,
                            const gpumem_topo_verdict_t *reason, char *shown,
                            gpumem_topo_tool_wrap_t *wrap)
{
    const gpumem_topo_t *topo = report->topo;
    unsigned num_gpus         = topo->num_gpus;
    unsigned count            = 0;
    unsigned a, b;

    for (a = 0; a < num_gpus; ++a) {
        for (b = 0; b < num_gpus; ++b) {
            count += (a != b) &&
                     gpumem_topo_tool_same_reason(
                             reason, gpumem_topo_tool_verdict(report, a, b));
        }
    }
    if ((num_gpus > 2) && (count == num_gpus * (num_gpus - 1))) {
        memset(shown, 1, (size_t)num_gpus * num_gpus);
        gpumem_topo_tool_wrap_item(wrap, "all %u pairs", count);
        return;
    }

    for (a = 0; a < num_gpus; ++a) {
        for (b = 0; b < num_gpus; ++b) {
            if ((a == b) || shown[(a * num_gpus) + b] ||
                !gpumem_topo_tool_same_reason(
                        reason, gpumem_topo_tool_verdict(report, a, b))) {
                continue;
            }

            shown[(a * num_gpus) + b] = 1;
            if (gpumem_topo_tool_same_reason(
                        reason, gpumem_topo_tool_verdict(report, b, a))) {
                shown[(b * num_gpus) + a] = 1;
                gpumem_topo_tool_wrap_item(wrap, "%s <-> %s",
                                           topo->devs[a].name,
                                           topo->devs[b].name);
            } else {
                gpumem_topo_tool_wrap_item(wrap, "%s -> %s",
                                           topo->devs[a].name,
                                           topo->devs[b].name);
            }
        }
    }
}

/* Each deciding reason once, with the pairs it decides */
static void
gpumem_topo_tool_text_reasons(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    unsigned num_gpus         = topo->num_gpus;
    const gpumem_topo_verdict_t *verdict;
    gpumem_topo_tool_wrap_t wrap;
    unsigned a, b;
    char *shown;

    printf("\nWhy (each deciding reason and the pairs A -> B it decides; "
           "<->: both ways):\n");
    if (num_gpus < 2) {
        printf("  (fewer than two GPUs)\n");
        return;
    }

    shown = calloc((size_t)num_gpus * num_gpus, 1);
    if (shown == NULL) {
        printf("  (no memory to group the verdicts)\n");
        return;
    }

    for (a = 0; a < num_gpus; ++a) {
        for (b = 0; b < num_gpus; ++b) {
            verdict = gpumem_topo_tool_verdict(report, a, b);
            if ((a == b) || shown[(a * num_gpus) + b]) {
                continue;
            }
            gpumem_topo_tool_text_wrap("  ", "    ", "%s: %s:",
                                       verdict->reaches ? "yes" : "no",
                                       verdict->brief);
            printf("   ");
            gpumem_topo_tool_wrap_init(&wrap, 3, "    ");
            gpumem_topo_tool_text_pairs(report, verdict, shown, &wrap);
            printf("\n");
        }
    }
    free(shown);
}

/* Every verdict with every rule's reason */
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
            printf("): %s\n      rules: %s\n", verdict->brief,
                   verdict->reason);
            gpumem_topo_tool_text_assumed(verdict, "      ");
        }
    }
}

/* Every NIC's verdict for one GPU, with every rule's reason */
static void
gpumem_topo_tool_text_nic_ranks(const gpumem_topo_tool_report_t *report,
                                unsigned gpu)
{
    const gpumem_topo_t *topo = report->topo;
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_nic_rank_t *rank;
    const gpumem_topo_dev_t *nic;
    unsigned i;

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

/* GPUDirect RDMA between each GPU and its nearest NIC, by deciding reason */
static void gpumem_topo_tool_text_gdr(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    const gpumem_topo_nic_rank_t *rank, *other;
    gpumem_topo_tool_wrap_t wrap;
    unsigned gpu, g;
    char *shown;

    shown = calloc(topo->num_gpus + 1, 1);
    if (shown == NULL) {
        return;
    }

    printf("\nGPUDirect RDMA (GDR) between each GPU and its nearest NIC:\n");
    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        if (shown[gpu]) {
            continue;
        }
        rank = gpumem_topo_tool_rank(report, gpu, 0);
        gpumem_topo_tool_text_wrap("  ", "    ", "%s: %s:",
                                   rank->gdr.reaches ? "yes" : "no",
                                   rank->gdr.brief);
        printf("   ");
        gpumem_topo_tool_wrap_init(&wrap, 3, "    ");
        for (g = gpu; g < topo->num_gpus; ++g) {
            other = gpumem_topo_tool_rank(report, g, 0);
            if (!shown[g] &&
                gpumem_topo_tool_same_reason(&rank->gdr, &other->gdr)) {
                shown[g] = 1;
                gpumem_topo_tool_wrap_item(&wrap, "%s (%s)",
                                           topo->devs[g].name,
                                           topo->devs[other->nic].name);
            }
        }
        printf("\n");
    }
    free(shown);
}

/* Each GPU's NICs nearest first on a line, then GPUDirect RDMA with the
 * nearest; every NIC's verdict with --verbose */
static void gpumem_topo_tool_text_nics(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    const gpumem_topo_nic_rank_t *rank;
    gpumem_topo_tool_wrap_t wrap;
    unsigned gpu, i;

    printf("\nNICs of each GPU, nearest first (relation/PCI links):\n");
    if (topo->num_nics == 0) {
        printf("  (no RDMA NIC)\n");
        return;
    }
    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        gpumem_topo_tool_wrap_init(&wrap, printf("  %s:",
                                                 topo->devs[gpu].name),
                                   "    ");
        for (i = 0; i < topo->num_nics; ++i) {
            rank = gpumem_topo_tool_rank(report, gpu, i);
            gpumem_topo_tool_wrap_item(&wrap, "%s %s/%u",
                                       topo->devs[rank->nic].name,
                                       gpumem_topo_tool_relation_code(
                                               rank->relation),
                                       rank->hops);
        }
        printf("\n");
    }

    gpumem_topo_tool_text_gdr(report);
    if (!report->verbose) {
        return;
    }

    printf("\nNICs of each GPU, every rule's reason:\n");
    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        gpumem_topo_tool_text_nic_ranks(report, gpu);
    }
}

void gpumem_topo_tool_text(const gpumem_topo_tool_report_t *report)
{
    gpumem_topo_tool_text_devs(report->topo, GPUMEM_TOPO_DEV_GPU, "GPUs",
                               report->topo->num_gpus);
    gpumem_topo_tool_text_devs(report->topo, GPUMEM_TOPO_DEV_NIC, "RDMA NICs",
                               report->topo->num_nics);
    gpumem_topo_tool_text_matrix(report);
    gpumem_topo_tool_text_facts(report);
    gpumem_topo_tool_text_reasons(report);
    if (report->verbose) {
        gpumem_topo_tool_text_verdicts(report);
    }
    gpumem_topo_tool_text_nics(report);
}
