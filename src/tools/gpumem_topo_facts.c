/**
 * gpumem_topo: the facts that cannot be read, said once each, grouped by
 * why, so that the verdicts they leave "no" need only name their kinds.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* Objects named in one line before "and N more" */
#define GPUMEM_TOPO_TOOL_FACTS_NAMED 6


/* What a fact is of: its device, or a bridge on some device's way up */
typedef enum {
    GPUMEM_TOPO_TOOL_OBJ_GPU,
    GPUMEM_TOPO_TOOL_OBJ_NIC,
    GPUMEM_TOPO_TOOL_OBJ_BRIDGE,
    GPUMEM_TOPO_TOOL_OBJ_HOST_BRIDGE,
    GPUMEM_TOPO_TOOL_OBJ_LAST
} gpumem_topo_tool_obj_t;


/* One fact that cannot be read */
typedef struct {
    unsigned               kind;     /* GPUMEM_TOPO_FACT_* */
    gpumem_topo_tool_obj_t obj;
    char                   name[GPUMEM_TOPO_NAME_MAX]; /* cuda0, 0000:00:01.0 */
    char                   pci[GPUMEM_TOPO_PCI_STR_MAX]; /* Its sysfs entry */
    const char             *why;
    int                    in_sysfs;
    int                    shown;
} gpumem_topo_tool_fact_t;


typedef struct {
    gpumem_topo_tool_fact_t *facts;
    unsigned                count;
    unsigned                max;
    const char              *sysfs_root;
} gpumem_topo_tool_facts_t;


static int gpumem_topo_tool_facts_in_sysfs(const char *root, const char *pci)
{
    char path[PATH_MAX];
    struct stat st;
    int ret;

    ret = snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", root, pci);
    return (ret > 0) && ((size_t)ret < sizeof(path)) && (stat(path, &st) == 0);
}

/* Adds a fact once: a bridge is on the way of several devices */
static void gpumem_topo_tool_facts_add(gpumem_topo_tool_facts_t *facts,
                                       unsigned kind,
                                       gpumem_topo_tool_obj_t obj,
                                       const char *name, const char *pci,
                                       const char *why)
{
    gpumem_topo_tool_fact_t *fact;
    unsigned i;

    for (i = 0; i < facts->count; ++i) {
        if ((facts->facts[i].kind == kind) &&
            (strcmp(facts->facts[i].name, name) == 0)) {
            return;
        }
    }
    if (facts->count == facts->max) {
        return;
    }

    fact           = &facts->facts[facts->count++];
    fact->kind     = kind;
    fact->obj      = obj;
    fact->why      = why;
    fact->shown    = 0;
    snprintf(fact->name, sizeof(fact->name), "%s", name);
    snprintf(fact->pci, sizeof(fact->pci), "%s", pci);
    fact->in_sysfs = gpumem_topo_tool_facts_in_sysfs(facts->sysfs_root, pci);
}

/* The unknown facts of one device and of the bridges above it */
static void gpumem_topo_tool_facts_of(gpumem_topo_tool_facts_t *facts,
                                      const gpumem_topo_dev_t *dev)
{
    const gpumem_topo_reach_t *reach = &dev->reach;
    int is_gpu                       = (dev->type == GPUMEM_TOPO_DEV_GPU);
    gpumem_topo_tool_obj_t obj       = is_gpu ? GPUMEM_TOPO_TOOL_OBJ_GPU :
                                       GPUMEM_TOPO_TOOL_OBJ_NIC;
    char pci[GPUMEM_TOPO_PCI_STR_MAX], hb[GPUMEM_TOPO_NAME_MAX];
    unsigned hop;

    gpumem_topo_tool_pci(dev, pci);
    if (!reach->iommu.known) {
        gpumem_topo_tool_facts_add(facts, GPUMEM_TOPO_FACT_IOMMU, obj,
                                   dev->name, pci, reach->iommu.why);
    }
    /* Only a GPU's memory is reached through its BAR */
    if (is_gpu && !reach->bar_size.known) {
        gpumem_topo_tool_facts_add(facts, GPUMEM_TOPO_FACT_BAR_SIZE, obj,
                                   dev->name, pci, reach->bar_size.why);
    }
    if (is_gpu && !reach->mem_size.known) {
        gpumem_topo_tool_facts_add(facts, GPUMEM_TOPO_FACT_MEM_SIZE, obj,
                                   dev->name, pci, reach->mem_size.why);
    }

    for (hop = 0; hop < reach->path_len; ++hop) {
        if (!reach->path[hop].acs_ctrl.known) {
            gpumem_pci_addr_str(&reach->path[hop].addr, pci, sizeof(pci));
            gpumem_topo_tool_facts_add(facts, GPUMEM_TOPO_FACT_ACS,
                                       GPUMEM_TOPO_TOOL_OBJ_BRIDGE, pci, pci,
                                       reach->path[hop].acs_ctrl.why);
        }
    }

    if (!reach->hb_id.known) {
        snprintf(hb, sizeof(hb), "%04x:%02x", reach->hb_domain,
                 reach->hb_bus);
        snprintf(pci, sizeof(pci), "%04x:%02x:00.0", reach->hb_domain,
                 reach->hb_bus);
        gpumem_topo_tool_facts_add(facts, GPUMEM_TOPO_FACT_HOST_BRIDGE,
                                   GPUMEM_TOPO_TOOL_OBJ_HOST_BRIDGE, hb, pci,
                                   reach->hb_id.why);
    }
}

/* "4 GPUs, 4 NICs and 6 bridges": the objects of the facts not in sysfs,
 * each once, into @a buf; their kinds of facts in @a kinds_p */
static void gpumem_topo_tool_facts_missing(const gpumem_topo_tool_facts_t *facts,
                                           char *buf, size_t max,
                                           unsigned *kinds_p)
{
    static const char *names[][2] = {
        [GPUMEM_TOPO_TOOL_OBJ_GPU]         = {"GPU", "GPUs"},
        [GPUMEM_TOPO_TOOL_OBJ_NIC]         = {"NIC", "NICs"},
        [GPUMEM_TOPO_TOOL_OBJ_BRIDGE]      = {"bridge", "bridges"},
        [GPUMEM_TOPO_TOOL_OBJ_HOST_BRIDGE] = {"host bridge", "host bridges"}
    };
    unsigned counts[GPUMEM_TOPO_TOOL_OBJ_LAST] = {0};
    unsigned classes = 0, printed = 0;
    size_t len       = 0;
    unsigned i, j;

    *kinds_p = 0;
    for (i = 0; i < facts->count; ++i) {
        if (facts->facts[i].in_sysfs) {
            continue;
        }
        *kinds_p |= facts->facts[i].kind;
        /* Each object once, though several of its facts are unknown */
        for (j = 0; j < i; ++j) {
            if (!facts->facts[j].in_sysfs &&
                (strcmp(facts->facts[j].pci, facts->facts[i].pci) == 0)) {
                break;
            }
        }
        if (j == i) {
            ++counts[facts->facts[i].obj];
        }
    }

    buf[0] = '\0';
    for (i = 0; i < GPUMEM_TOPO_TOOL_OBJ_LAST; ++i) {
        classes += (counts[i] > 0);
    }
    for (i = 0; (i < GPUMEM_TOPO_TOOL_OBJ_LAST) && (len < max); ++i) {
        if (counts[i] == 0) {
            continue;
        }
        len += snprintf(buf + len, max - len, "%s%u %s",
                        (printed == 0) ? "" :
                        (printed + 1 == classes) ? " and " : ", ",
                        counts[i], names[i][counts[i] == 1 ? 0 : 1]);
        ++printed;
    }
}

/* The devices that sysfs does not have: one cause for all their facts */
static void
gpumem_topo_tool_facts_not_in_sysfs(const gpumem_topo_tool_report_t *report,
                                    const gpumem_topo_tool_facts_t *facts)
{
    char kinds_str[GPUMEM_TOPO_BRIEF_MAX], objects[GPUMEM_TOPO_BRIEF_MAX];
    unsigned i, kinds, missing = 0;

    for (i = 0; i < facts->count; ++i) {
        missing += !facts->facts[i].in_sysfs;
    }
    if (missing == 0) {
        return;
    }

    gpumem_topo_tool_facts_missing(facts, objects, sizeof(objects), &kinds);
    gpumem_topo_tool_text_wrap("  ", "  ", "The sysfs at %s has no entry "
                               "for %s of the topology, so their %s cannot "
                               "be read.%s", report->sysfs_root, objects,
                               gpumem_topo_fact_kinds_str(kinds, kinds_str,
                                                          sizeof(kinds_str)),
                               (report->xml_path != NULL) ?
                               " The export is of another machine: there, "
                               "run '" GPUMEM_TOPO_TOOL_NAME " --save-facts "
                               "FILE' as root; here, add '--facts FILE'." :
                               " Is it this machine's sysfs?");
}

/* A fact's why with its own object's name and address as "*", so that the
 * same cause on two objects reads the same */
static void gpumem_topo_tool_facts_norm(const gpumem_topo_tool_fact_t *fact,
                                        char *buf, size_t max)
{
    const char *why = fact->why;
    size_t len      = 0;
    size_t skip;

    while ((*why != '\0') && (len + 1 < max)) {
        skip = 0;
        if (strncmp(why, fact->pci, strlen(fact->pci)) == 0) {
            skip = strlen(fact->pci);
        } else if (strncmp(why, fact->name, strlen(fact->name)) == 0) {
            skip = strlen(fact->name);
        }
        if (skip > 0) {
            buf[len++] = '*';
            why       += skip;
        } else {
            buf[len++] = *why++;
        }
    }
    buf[len] = '\0';
}

/* Names the objects of the facts of @a first's kind and cause into @a buf,
 * marking them shown */
static void gpumem_topo_tool_facts_names(gpumem_topo_tool_facts_t *facts,
                                         unsigned first, char *buf,
                                         size_t max)
{
    char key[GPUMEM_TOPO_WHY_MAX], norm[GPUMEM_TOPO_WHY_MAX];
    unsigned i, named = 0, more = 0;
    gpumem_topo_tool_fact_t *fact;
    size_t len = 0;

    buf[0] = '\0';
    gpumem_topo_tool_facts_norm(&facts->facts[first], key, sizeof(key));
    for (i = first; i < facts->count; ++i) {
        fact = &facts->facts[i];
        if (fact->shown || !fact->in_sysfs ||
            (fact->kind != facts->facts[first].kind)) {
            continue;
        }
        gpumem_topo_tool_facts_norm(fact, norm, sizeof(norm));
        if (strcmp(norm, key) != 0) {
            continue;
        }

        fact->shown = 1;
        if ((named < GPUMEM_TOPO_TOOL_FACTS_NAMED) && (len < max)) {
            len += snprintf(buf + len, max - len, "%s%s",
                            (named > 0) ? ", " : "", fact->name);
            ++named;
        } else {
            ++more;
        }
    }
    if ((more > 0) && (len < max)) {
        snprintf(buf + len, max - len, " and %u more", more);
    }
}

/* Facts of devices that sysfs has, grouped by kind and cause; the first's
 * why is shown whole, the others' differ only by the object they name */
static void gpumem_topo_tool_facts_others(gpumem_topo_tool_facts_t *facts)
{
    char kind[GPUMEM_TOPO_BRIEF_MAX], names[GPUMEM_TOPO_BRIEF_MAX];
    gpumem_topo_tool_fact_t *fact;
    unsigned i;

    for (i = 0; i < facts->count; ++i) {
        fact = &facts->facts[i];
        if (fact->shown || !fact->in_sysfs) {
            continue;
        }
        gpumem_topo_tool_facts_names(facts, i, names, sizeof(names));
        gpumem_topo_tool_text_wrap("  ", "    ", "%s of %s: %s",
                                   gpumem_topo_fact_kinds_str(fact->kind, kind,
                                                              sizeof(kind)),
                                   names, fact->why);
    }
}

/* GPUs of which the topology has no fabric matrix */
static void gpumem_topo_tool_facts_fabric(const gpumem_topo_t *topo)
{
    unsigned i, count = 0;

    for (i = 0; i < topo->num_gpus; ++i) {
        count += (topo->devs[i].reach.fabric == GPUMEM_TOPO_FABRIC_UNKNOWN);
    }
    if (count == 0) {
        return;
    }

    gpumem_topo_tool_text_wrap("  ", "  ", "The topology has no NVLink or "
                               "XGMI matrix of %s GPUs (a missing matrix is "
                               "no proof of no fabric): a pair that the bus "
                               "does not join is \"no\".",
                               (count == topo->num_gpus) ? "its" : "some");
}

void gpumem_topo_tool_text_facts(const gpumem_topo_tool_report_t *report)
{
    const gpumem_topo_t *topo = report->topo;
    gpumem_topo_tool_facts_t facts;
    unsigned i, fabric = 0;

    facts.count      = 0;
    facts.sysfs_root = report->sysfs_root;
    /* Each device: IOMMU, BAR and memory size, host bridge, and its way up */
    facts.max        = topo->num_devs * (4 + GPUMEM_TOPO_PATH_MAX);
    facts.facts      = calloc(facts.max + 1, sizeof(*facts.facts));
    if (facts.facts == NULL) {
        printf("\nFacts that cannot be read: (no memory to list them)\n");
        return;
    }

    for (i = 0; i < topo->num_devs; ++i) {
        gpumem_topo_tool_facts_of(&facts, &topo->devs[i]);
        fabric += (i < topo->num_gpus) &&
                  (topo->devs[i].reach.fabric == GPUMEM_TOPO_FABRIC_UNKNOWN);
    }

    printf("\n");
    gpumem_topo_tool_text_wrap("", "  ", "Facts that cannot be read (a "
                               "verdict that needs one is %s):",
                               (report->flags & GPUMEM_TOPO_ASSUME) ?
                               "\"yes\" by --assume" : "\"no\"");
    if ((facts.count == 0) && (fabric == 0)) {
        printf("  (none)\n");
    }
    gpumem_topo_tool_facts_not_in_sysfs(report, &facts);
    gpumem_topo_tool_facts_others(&facts);
    gpumem_topo_tool_facts_fabric(topo);
    free(facts.facts);
}
