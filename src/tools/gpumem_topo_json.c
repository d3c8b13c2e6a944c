/**
 * gpumem_topo: the report as one JSON object, with every rule's reason.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <stdio.h>
#include <string.h>


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

void gpumem_topo_tool_json_str(const char *str)
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
    char name[32];
    unsigned kind;

    printf("\"path\": \"%s\", \"route\": \"%s\", \"hops\": %u, "
           "\"%s\": %s", gpumem_topo_relation_name(relation),
           gpumem_topo_relation_name(verdict->route), hops, reaches_key,
           verdict->reaches ? "true" : "false");
    if (with_fabric) {
        printf(", \"fabric\": ");
        if (fabric != NULL) {
            gpumem_topo_tool_json_str(fabric);
        } else {
            printf("null");
        }
    }

    printf(",\n%s \"brief\": ", indent);
    gpumem_topo_tool_json_str(verdict->brief);
    printf(",\n%s \"unknown\": [", indent);
    for (kind = 1; kind < GPUMEM_TOPO_FACT_LAST; kind <<= 1) {
        if (verdict->unknown & kind) {
            printf("%s\"%s\"", sep,
                   gpumem_topo_fact_kinds_str(kind, name, sizeof(name)));
            sep = ", ";
        }
    }
    sep = "";
    printf("],\n%s \"reason\": ", indent);
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

void gpumem_topo_tool_json(const gpumem_topo_tool_report_t *report)
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
