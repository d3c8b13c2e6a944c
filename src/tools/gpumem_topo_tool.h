/**
 * gpumem_topo: the report that every output of the tool shows, decided once.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TOPO_TOOL_H_
#define GPUMEM_TOPO_TOOL_H_

#include <uct/gpumem/topo/topo.h>

#include <ucs/sys/compiler_def.h>

#include <stddef.h>
#include <stdio.h>


#define GPUMEM_TOPO_TOOL_NAME       "gpumem_topo"
#define GPUMEM_TOPO_TOOL_EXIT_FAIL  1
#define GPUMEM_TOPO_TOOL_EXIT_USAGE 2

/* Each assumption of a verdict begins so (see topo_reach.c) */
#define GPUMEM_TOPO_TOOL_ASSUMPTION "unknown: "


/* Every verdict the outputs show, and where the facts came from */
typedef struct gpumem_topo_tool_report {
    const gpumem_topo_t    *topo;
    unsigned               flags;
    const char             *xml_path;   /* NULL: this machine */
    const char             *sysfs_root; /* Never NULL */
    const char             *facts_path; /* NULL: none given */
    int                    verbose;     /* Every rule's reason */
    gpumem_topo_verdict_t  *verdicts; /* [a * num_gpus + b]: a maps b */
    gpumem_topo_nic_rank_t *ranks;    /* [gpu * num_nics + i], nearest first */
} gpumem_topo_tool_report_t;


ucs_status_t
gpumem_topo_tool_report_init(const gpumem_topo_t *topo, unsigned flags,
                             gpumem_topo_tool_report_t *report);

void gpumem_topo_tool_report_cleanup(gpumem_topo_tool_report_t *report);

const gpumem_topo_verdict_t *
gpumem_topo_tool_verdict(const gpumem_topo_tool_report_t *report, unsigned a,
                         unsigned b);

const gpumem_topo_nic_rank_t *
gpumem_topo_tool_rank(const gpumem_topo_tool_report_t *report, unsigned gpu,
                      unsigned i);

/* The device's PCI address in @a buf of GPUMEM_TOPO_PCI_STR_MAX */
const char *gpumem_topo_tool_pci(const gpumem_topo_dev_t *dev, char *buf);

/* A short code of the relation, as nvidia-smi topo -m has them */
const char *gpumem_topo_tool_relation_code(gpumem_topo_relation_t relation);

/* The fabric that joins a pair, or NULL when none does */
const char *gpumem_topo_tool_fabric(const gpumem_topo_verdict_t *verdict);

/* The next assumption of a verdict's list after @a item (NULL for the
 * first), with its length in @a len_p; NULL after the last */
const char *gpumem_topo_tool_next_assumed(const char *assumed,
                                          const char *item, size_t *len_p);


/* The outputs */
void gpumem_topo_tool_text(const gpumem_topo_tool_report_t *report);

/* Prints a paragraph: @a indent, then words wrapped to the screen's width
 * on lines that begin with @a hang */
void gpumem_topo_tool_text_wrap(const char *indent, const char *hang,
                                const char *fmt, ...) UCS_F_PRINTF(3, 4);

/* Unknown facts, once each, grouped by why they cannot be read */
void gpumem_topo_tool_text_facts(const gpumem_topo_tool_report_t *report);

void gpumem_topo_tool_json(const gpumem_topo_tool_report_t *report);

/* @a str as a JSON string, quoted and escaped */
void gpumem_topo_tool_json_str(const char *str);

void gpumem_topo_tool_dot(const gpumem_topo_tool_report_t *report,
                          FILE *stream);

/* The Graphviz drawing rendered by dot(1) into an SVG file; 0 or the
 * tool's exit status */
int gpumem_topo_tool_svg(const gpumem_topo_tool_report_t *report,
                         const char *path);

/**
 * --bind: for each GPU of @a topo the NIC gpumem_topo_bind_nics() gives it,
 * as the UCX_NET_DEVICES value of a process on it, as text or, with
 * @a json, one JSON object.
 *
 * @return UCS_ERR_NO_MEMORY, said on stderr, where the binding cannot be
 *         made; UCS_OK otherwise, also for a topology without NIC.
 */
ucs_status_t gpumem_topo_tool_bind(const gpumem_topo_t *topo, unsigned flags,
                                   int json);

#endif
