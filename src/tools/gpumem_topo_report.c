/**
 * gpumem_topo: the report's verdicts and NIC ranks, and the names that every
 * output shows them by.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const char *gpumem_topo_tool_pci(const gpumem_topo_dev_t *dev, char *buf)
{
    return gpumem_pci_addr_str(&dev->reach.addr, buf,
                               GPUMEM_TOPO_PCI_STR_MAX);
}

const char *
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

const char *
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
const char *gpumem_topo_tool_next_assumed(const char *assumed,
                                          const char *item, size_t *len_p)
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

ucs_status_t
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

void gpumem_topo_tool_report_cleanup(gpumem_topo_tool_report_t *report)
{
    free(report->verdicts);
    free(report->ranks);
}

const gpumem_topo_verdict_t *
gpumem_topo_tool_verdict(const gpumem_topo_tool_report_t *report, unsigned a,
                         unsigned b)
{
    return &report->verdicts[(a * report->topo->num_gpus) + b];
}

const gpumem_topo_nic_rank_t *
gpumem_topo_tool_rank(const gpumem_topo_tool_report_t *report, unsigned gpu,
                      unsigned i)
{
    return &report->ranks[(gpu * report->topo->num_nics) + i];
}
