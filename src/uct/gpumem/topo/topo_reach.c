/**
 * gpumem topology: whether one GPU maps another's memory (seed 003, reaches).
 *
 * reaches(r, o) holds iff both GPUs are on one machine, their page tables
 * share a space, and either links of one fabric join them, or neither is
 * behind a translating IOMMU, o's memory BAR reaches all of o's memory and
 * the bus carries r's requests to it. The bus carries them as Linux's
 * p2pdma decides (drivers/pci/p2pdma.c): through a bridge above both, where
 * no bridge on the way redirects peer requests to the root complex by ACS;
 * or else through the root complex where the CPU is AMD's from Zen on, or
 * where both host bridges are on Linux's whitelist (some entries only for
 * functions under one host bridge). It is false for a GPU and itself.
 *
 * Each rule is one function answering yes, no or unknown with a reason that
 * names the object that decided. Unknown is "no" unless the caller asks what
 * would be if unreadable facts were favourable (GPUMEM_TOPO_ASSUME), and
 * then each such assumption is listed.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo.h"

#include <ucs/sys/compiler_def.h>
#include <ucs/sys/string.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>


typedef enum {
    GPUMEM_TOPO_ANSWER_NO,
    GPUMEM_TOPO_ANSWER_YES,
    GPUMEM_TOPO_ANSWER_UNKNOWN
} gpumem_topo_answer_t;


/* One rule's answer, its reason, and the facts it could not read (which the
 * what-if answer assumes favourable); the brief is the reason that decides
 * (see gpumem_topo_verdict_t), "" where only unknown facts do */
typedef struct {
    gpumem_topo_answer_t answer;
    unsigned             unknown;  /* GPUMEM_TOPO_FACT_* of the unknowns */
    char                 reason[GPUMEM_TOPO_REASON_MAX];
    char                 unknowns[GPUMEM_TOPO_REASON_MAX];
    char                 brief[GPUMEM_TOPO_BRIEF_MAX];
} gpumem_topo_rule_t;


/* Linux's p2pdma host bridge whitelist: the function at 00.0 of the root
 * bus (or the root port that is the root bus's first function). */
#define GPUMEM_TOPO_ANY_DEVICE      0xffff
#define GPUMEM_TOPO_SAME_HOST_BRIDGE UCS_BIT(0)

static const struct {
    uint16_t vendor;
    uint16_t device;
    unsigned flags;
} gpumem_topo_host_bridge_whitelist[] = {
    /* Intel Xeon E5 / Core i7 */
    {0x8086, 0x3c00, GPUMEM_TOPO_SAME_HOST_BRIDGE},
    {0x8086, 0x3c01, GPUMEM_TOPO_SAME_HOST_BRIDGE},
    /* Intel Xeon E7 v3 / Xeon E5 v3 / Core i7 */
    {0x8086, 0x2f00, GPUMEM_TOPO_SAME_HOST_BRIDGE},
    {0x8086, 0x2f01, GPUMEM_TOPO_SAME_HOST_BRIDGE},
    /* Intel Skylake-E */
    {0x8086, 0x2030, 0},
    {0x8086, 0x2031, 0},
    {0x8086, 0x2032, 0},
    {0x8086, 0x2033, 0},
    {0x8086, 0x2020, 0},
    /* Intel Ice Lake-SP */
    {0x8086, 0x09a2, 0},
    /* Google SoCs */
    {0x1ae0, GPUMEM_TOPO_ANY_DEVICE, 0}
};


static void gpumem_topo_rule_vset(gpumem_topo_rule_t *rule,
                                  gpumem_topo_answer_t answer,
                                  unsigned unknown, const char *fmt,
                                  va_list ap)
{
    int is_unknown = (answer == GPUMEM_TOPO_ANSWER_UNKNOWN);

    rule->answer  = answer;
    rule->unknown = is_unknown ? unknown : 0;
    vsnprintf(rule->reason, sizeof(rule->reason), fmt, ap);
    ucs_strncpy_zero(rule->unknowns, is_unknown ? rule->reason : "",
                     sizeof(rule->unknowns));
    /* A rule's own reason is one clause: it is its brief, but for a fact
     * that cannot be read, whose kind the brief names at the end */
    ucs_strncpy_zero(rule->brief, is_unknown ? "" : rule->reason,
                     sizeof(rule->brief));
}

static void UCS_F_PRINTF(3, 4)
gpumem_topo_rule_set(gpumem_topo_rule_t *rule, gpumem_topo_answer_t answer,
                     const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    gpumem_topo_rule_vset(rule, answer, 0, fmt, ap);
    va_end(ap);
}

/* An answer that a fact of this kind, which cannot be read, leaves open */
static void UCS_F_PRINTF(3, 4)
gpumem_topo_rule_unknown(gpumem_topo_rule_t *rule, unsigned kind,
                         const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    gpumem_topo_rule_vset(rule, GPUMEM_TOPO_ANSWER_UNKNOWN, kind, fmt, ap);
    va_end(ap);
}

static const char *gpumem_topo_pci_str(const gpumem_pci_addr_t *addr,
                                       char *buf)
{
    return gpumem_pci_addr_str(addr, buf, GPUMEM_TOPO_PCI_STR_MAX);
}

/* Appends "; text" (or "text" to an empty string); a reason cut short
 * ends with "..." */
static void UCS_F_PRINTF(2, 3)
gpumem_topo_append(char *str, const char *fmt, ...)
{
    static const char cut[] = "...";
    size_t len              = strlen(str);
    va_list ap;
    int ret;

    if ((len + 2 + sizeof(cut)) >= GPUMEM_TOPO_REASON_MAX) {
        return;
    }
    if (len > 0) {
        strcpy(str + len, "; ");
        len += 2;
    }
    va_start(ap, fmt);
    ret = vsnprintf(str + len, GPUMEM_TOPO_REASON_MAX - len, fmt, ap);
    va_end(ap);
    if ((ret > 0) && ((size_t)ret >= (GPUMEM_TOPO_REASON_MAX - len))) {
        strcpy(str + GPUMEM_TOPO_REASON_MAX - sizeof(cut), cut);
    }
}

static int gpumem_topo_same_machine(const gpumem_topo_reach_t *a,
                                    const gpumem_topo_reach_t *b)
{
    return strncmp(a->machine, b->machine, sizeof(a->machine)) == 0;
}

/* Index in a's path of the lowest bridge above both, or -1; *b_index_p is
 * its index in b's path. */
static int gpumem_topo_common_bridge(const gpumem_topo_reach_t *a,
                                     const gpumem_topo_reach_t *b,
                                     unsigned *b_index_p)
{
    unsigned i, j;

    for (i = 0; i < a->path_len; ++i) {
        for (j = 0; j < b->path_len; ++j) {
            if (gpumem_pci_addr_equal(&a->path[i].addr, &b->path[j].addr)) {
                *b_index_p = j;
                return i;
            }
        }
    }
    return -1;
}

static int gpumem_topo_same_host_bridge(const gpumem_topo_reach_t *a,
                                        const gpumem_topo_reach_t *b)
{
    return (a->hb_domain == b->hb_domain) && (a->hb_bus == b->hb_bus);
}

gpumem_topo_relation_t
gpumem_topo_relation(const gpumem_topo_reach_t *a,
                     const gpumem_topo_reach_t *b, unsigned *hops_p)
{
    unsigned hops = 0;
    gpumem_topo_relation_t relation;
    unsigned j;
    int i;

    if (!gpumem_topo_same_machine(a, b)) {
        relation = GPUMEM_TOPO_REL_OTHER_MACHINE;
    } else if (gpumem_pci_addr_equal(&a->addr, &b->addr)) {
        relation = GPUMEM_TOPO_REL_SAME_GPU;
    } else if ((i = gpumem_topo_common_bridge(a, b, &j)) >= 0) {
        relation = GPUMEM_TOPO_REL_SAME_SWITCH;
        hops     = i + j + 2;
    } else if (gpumem_topo_same_host_bridge(a, b)) {
        /* The way through the root complex counts as one link */
        relation = GPUMEM_TOPO_REL_HOST_BRIDGE;
        hops     = a->path_len + b->path_len + 2;
    } else if ((a->package >= 0) && (a->package == b->package)) {
        relation = GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES;
        hops     = a->path_len + b->path_len + 3;
    } else {
        /* Also where a package is unknown: ranked as the farthest */
        relation = GPUMEM_TOPO_REL_ACROSS_SOCKETS;
        hops     = a->path_len + b->path_len + 4;
    }

    if (hops_p != NULL) {
        *hops_p = hops;
    }
    return relation;
}

/* Rule: both GPUs are on one machine */
static void gpumem_topo_rule_same_machine(const gpumem_topo_reach_t *r,
                                          const gpumem_topo_reach_t *o,
                                          gpumem_topo_rule_t *rule)
{
    if (!gpumem_topo_same_machine(r, o)) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "different machines: '%s' and '%s'", r->machine,
                             o->machine);
        return;
    }
    gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES, "one machine");
}

/* Rule: a GPU does not map its own memory as a peer's */
static void gpumem_topo_rule_distinct(const gpumem_topo_reach_t *r,
                                      const gpumem_topo_reach_t *o,
                                      gpumem_topo_rule_t *rule)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];

    if (gpumem_pci_addr_equal(&r->addr, &o->addr)) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "same GPU: %s maps its own memory already",
                             gpumem_topo_pci_str(&r->addr, addr));
        return;
    }
    gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES, "two GPUs");
}

/* Rule: their page tables take addresses from one space */
static void gpumem_topo_rule_same_space(const gpumem_topo_reach_t *r,
                                        const gpumem_topo_reach_t *o,
                                        gpumem_topo_rule_t *rule)
{
    char r_addr[GPUMEM_TOPO_PCI_STR_MAX], o_addr[GPUMEM_TOPO_PCI_STR_MAX];

    if (r->space != o->space) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "page tables of %s and %s take addresses from "
                             "different spaces (0x%lx and 0x%lx)",
                             gpumem_topo_pci_str(&r->addr, r_addr),
                             gpumem_topo_pci_str(&o->addr, o_addr),
                             (unsigned long)r->space,
                             (unsigned long)o->space);
        return;
    }
    gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES, "one address space");
}

static int gpumem_topo_links_to(const gpumem_topo_reach_t *r,
                                const gpumem_topo_reach_t *o)
{
    unsigned i;

    for (i = 0; i < r->num_links; ++i) {
        if (gpumem_pci_addr_equal(&r->links[i], &o->addr)) {
            return 1;
        }
    }
    return 0;
}

/* Rule: links of one fabric join them */
static void gpumem_topo_rule_fabric(const gpumem_topo_reach_t *r,
                                    const gpumem_topo_reach_t *o,
                                    gpumem_topo_rule_t *rule)
{
    char r_addr[GPUMEM_TOPO_PCI_STR_MAX], o_addr[GPUMEM_TOPO_PCI_STR_MAX];
    const char *name = gpumem_topo_fabric_name(r->fabric);

    gpumem_topo_pci_str(&r->addr, r_addr);
    gpumem_topo_pci_str(&o->addr, o_addr);

    if ((r->fabric == GPUMEM_TOPO_FABRIC_UNKNOWN) ||
        (o->fabric == GPUMEM_TOPO_FABRIC_UNKNOWN)) {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_FABRIC,
                             "unknown: the topology has no fabric links of "
                             "%s (a missing matrix is no proof of no fabric)",
                             (r->fabric == GPUMEM_TOPO_FABRIC_UNKNOWN) ?
                             r_addr : o_addr);
    } else if ((r->fabric != o->fabric) ||
               (r->fabric == GPUMEM_TOPO_FABRIC_NONE)) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "no fabric joins %s (%s) and %s (%s)", r_addr,
                             name, o_addr, gpumem_topo_fabric_name(o->fabric));
    } else if ((r->fabric_domain >= 0) &&
               (r->fabric_domain == o->fabric_domain)) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES,
                             "joined by %s (fabric %d)", name,
                             r->fabric_domain);
    } else if (gpumem_topo_links_to(r, o) || gpumem_topo_links_to(o, r)) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES,
                             "joined by a direct %s link", name);
    } else {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "no %s link joins %s and %s", name, r_addr,
                             o_addr);
    }
}

/* Rule: the device is not behind an IOMMU that translates its requests */
static void gpumem_topo_rule_no_iommu(const gpumem_topo_reach_t *dev,
                                      gpumem_topo_rule_t *rule)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];

    gpumem_topo_pci_str(&dev->addr, addr);
    if (!dev->iommu.known) {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_IOMMU,
                                 "unknown: IOMMU of %s: %s", addr,
                                 dev->iommu.why);
    } else if (dev->iommu.value) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "IOMMU group %d translates the requests of %s",
                             dev->iommu_group, addr);
    } else {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES,
                             "no IOMMU translates %s", addr);
    }
}

/* Rule: the memory BAR reaches all of the GPU's memory */
static void gpumem_topo_rule_bar_covers(const gpumem_topo_reach_t *o,
                                        gpumem_topo_rule_t *rule)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];

    gpumem_topo_pci_str(&o->addr, addr);
    if (!o->bar_size.known) {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_BAR_SIZE,
                                 "unknown: BAR size of %s: %s", addr,
                                 o->bar_size.why);
    } else if (!o->mem_size.known) {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_MEM_SIZE,
                                 "unknown: memory size of %s: %s", addr,
                                 o->mem_size.why);
    } else if (o->bar_size.value < o->mem_size.value) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "BAR of %s is %lu bytes, smaller than its %lu "
                             "bytes of memory", addr,
                             (unsigned long)o->bar_size.value,
                             (unsigned long)o->mem_size.value);
    } else {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES,
                             "BAR of %s reaches all its memory", addr);
    }
}

/* Checks the ACS bits of path[0..last] of one device: a redirect refuses,
 * and every bridge whose bits cannot be read is listed */
static void gpumem_topo_check_acs(const gpumem_topo_reach_t *dev, int last,
                                  gpumem_topo_rule_t *rule)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];
    const gpumem_topo_hop_t *hop;
    int i;

    for (i = 0; i <= last; ++i) {
        hop = &dev->path[i];
        gpumem_topo_pci_str(&hop->addr, addr);
        if (!hop->acs_ctrl.known) {
            if (rule->answer == GPUMEM_TOPO_ANSWER_YES) {
                rule->answer      = GPUMEM_TOPO_ANSWER_UNKNOWN;
                rule->reason[0]   = '\0';
                rule->unknowns[0] = '\0';
                rule->brief[0]    = '\0';
            }
            rule->unknown |= GPUMEM_TOPO_FACT_ACS;
            gpumem_topo_append(rule->reason, "unknown: ACS of bridge %s: %s",
                               addr, hop->acs_ctrl.why);
            gpumem_topo_append(rule->unknowns, "unknown: ACS of bridge %s: %s",
                               addr, hop->acs_ctrl.why);
        } else if (hop->acs_ctrl.value & GPUMEM_TOPO_ACS_REDIRECT) {
            gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                                 "ACS redirects peer requests to the root "
                                 "complex on bridge %s (control 0x%04lx)",
                                 addr, (unsigned long)hop->acs_ctrl.value);
            return;
        }
    }
}

/* Rule: a bridge above both carries the requests, no ACS redirect on the
 * way to it. NO also where no bridge is above both. */
static void gpumem_topo_rule_common_bridge(const gpumem_topo_reach_t *r,
                                           const gpumem_topo_reach_t *o,
                                           gpumem_topo_rule_t *rule)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];
    unsigned j;
    int i;

    i = gpumem_topo_common_bridge(r, o, &j);
    if (i < 0) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "no PCI bridge above both");
        return;
    }

    gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES, "through bridge %s",
                         gpumem_topo_pci_str(&r->path[i].addr, addr));
    /* The common bridge itself is on r's way; o's way ends below it */
    gpumem_topo_check_acs(r, i, rule);
    if (rule->answer != GPUMEM_TOPO_ANSWER_NO) {
        gpumem_topo_check_acs(o, (int)j - 1, rule);
    }
}

/* Rule: the CPU is AMD's from Zen (family 0x17) on */
static void gpumem_topo_rule_amd_zen(const gpumem_topo_reach_t *r,
                                     gpumem_topo_rule_t *rule)
{
    if (r->cpu_vendor[0] == '\0') {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_CPU,
                                 "unknown: the topology names no CPU vendor");
    } else if (strcmp(r->cpu_vendor, "AuthenticAMD") != 0) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "CPU is %s, not AMD Zen", r->cpu_vendor);
    } else if (!r->cpu_family.known) {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_CPU,
                                 "unknown: AMD CPU family: %s",
                                 r->cpu_family.why);
    } else if (r->cpu_family.value < 0x17) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "AMD CPU family 0x%lx is older than Zen (0x17)",
                             (unsigned long)r->cpu_family.value);
    } else {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES,
                             "through the root complex of an AMD Zen CPU "
                             "(family 0x%lx)",
                             (unsigned long)r->cpu_family.value);
    }
}

/* Whitelist flags of a host bridge id, or -1 if not listed */
static int gpumem_topo_whitelist_flags(uint64_t id)
{
    uint16_t vendor = id >> 16;
    uint16_t device = id & 0xffff;
    unsigned i;

    for (i = 0; i < ucs_static_array_size(gpumem_topo_host_bridge_whitelist);
         ++i) {
        if ((gpumem_topo_host_bridge_whitelist[i].vendor == vendor) &&
            ((gpumem_topo_host_bridge_whitelist[i].device == device) ||
             (gpumem_topo_host_bridge_whitelist[i].device ==
              GPUMEM_TOPO_ANY_DEVICE))) {
            return gpumem_topo_host_bridge_whitelist[i].flags;
        }
    }
    return -1;
}

/* One host bridge's standing on the whitelist */
static void gpumem_topo_check_whitelist(const gpumem_topo_reach_t *dev,
                                        int same_host_bridge,
                                        gpumem_topo_rule_t *rule)
{
    int flags;

    if (!dev->hb_id.known) {
        gpumem_topo_rule_unknown(rule, GPUMEM_TOPO_FACT_HOST_BRIDGE,
                                 "unknown: host bridge %04x:%02x: %s",
                                 dev->hb_domain, dev->hb_bus,
                                 dev->hb_id.why);
        return;
    }

    flags = gpumem_topo_whitelist_flags(dev->hb_id.value);
    if (flags < 0) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "host bridge %04x:%02x (%04lx:%04lx) is not on "
                             "Linux's p2pdma whitelist", dev->hb_domain,
                             dev->hb_bus,
                             (unsigned long)(dev->hb_id.value >> 16),
                             (unsigned long)(dev->hb_id.value & 0xffff));
    } else if ((flags & GPUMEM_TOPO_SAME_HOST_BRIDGE) && !same_host_bridge) {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_NO,
                             "host bridge %04x:%02x (%04lx:%04lx) is "
                             "whitelisted only for functions under one host "
                             "bridge", dev->hb_domain, dev->hb_bus,
                             (unsigned long)(dev->hb_id.value >> 16),
                             (unsigned long)(dev->hb_id.value & 0xffff));
    } else {
        gpumem_topo_rule_set(rule, GPUMEM_TOPO_ANSWER_YES,
                             "through the root complex: host bridge "
                             "%04x:%02x (%04lx:%04lx) is whitelisted",
                             dev->hb_domain, dev->hb_bus,
                             (unsigned long)(dev->hb_id.value >> 16),
                             (unsigned long)(dev->hb_id.value & 0xffff));
    }
}

/* Rule: Linux lists both host bridges */
static void gpumem_topo_rule_whitelist(const gpumem_topo_reach_t *r,
                                       const gpumem_topo_reach_t *o,
                                       gpumem_topo_rule_t *rule)
{
    int same = gpumem_topo_same_host_bridge(r, o);
    gpumem_topo_rule_t other;

    gpumem_topo_check_whitelist(r, same, rule);
    if ((rule->answer == GPUMEM_TOPO_ANSWER_NO) || same) {
        return;
    }

    gpumem_topo_check_whitelist(o, same, &other);
    if ((other.answer == GPUMEM_TOPO_ANSWER_NO) ||
        (rule->answer == GPUMEM_TOPO_ANSWER_YES)) {
        *rule = other;
    }
}

/* Combines alternatives: yes if any is yes, else unknown if any is unknown,
 * else no; the reason is the deciding one's, or else every alternative's
 * refusal or unknown, so that the user sees each way that is closed. Where
 * all are closed, the brief is the refusal of the way that this pair of
 * devices would take (@a decisive), or "" where that way's facts are
 * unknown. */
static void gpumem_topo_rule_any(gpumem_topo_rule_t *result,
                                 const gpumem_topo_rule_t *alternatives,
                                 unsigned count, unsigned decisive)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (alternatives[i].answer == GPUMEM_TOPO_ANSWER_YES) {
            *result = alternatives[i];
            return;
        }
    }

    result->answer      = GPUMEM_TOPO_ANSWER_NO;
    result->unknown     = 0;
    result->reason[0]   = '\0';
    result->unknowns[0] = '\0';
    ucs_strncpy_zero(result->brief,
                     (alternatives[decisive].answer == GPUMEM_TOPO_ANSWER_NO) ?
                     alternatives[decisive].brief : "",
                     sizeof(result->brief));
    for (i = 0; i < count; ++i) {
        /* Assuming the first open way's facts is enough for a what-if */
        if ((alternatives[i].answer == GPUMEM_TOPO_ANSWER_UNKNOWN) &&
            (result->answer != GPUMEM_TOPO_ANSWER_UNKNOWN)) {
            result->answer  = GPUMEM_TOPO_ANSWER_UNKNOWN;
            result->unknown = alternatives[i].unknown;
            gpumem_topo_append(result->unknowns, "%s",
                               alternatives[i].unknowns);
        }
        gpumem_topo_append(result->reason, "%s", alternatives[i].reason);
    }
}

/* Rule: the bus carries r's requests to o; @a root_complex_p: it does
 * through the root complex, not a bridge above both */
static void gpumem_topo_rule_bus_carries(const gpumem_topo_reach_t *r,
                                         const gpumem_topo_reach_t *o,
                                         gpumem_topo_rule_t *rule,
                                         int *root_complex_p)
{
    gpumem_topo_rule_t ways[3];
    unsigned decisive, j;

    gpumem_topo_rule_common_bridge(r, o, &ways[0]);
    gpumem_topo_rule_amd_zen(r, &ways[1]);
    gpumem_topo_rule_whitelist(r, o, &ways[2]);

    /* Where a bridge is above both, it decides; else the root complex does,
     * by AMD's rule on AMD CPUs (and on a CPU of no known vendor, which may
     * be AMD's) and by the whitelist on others */
    if (gpumem_topo_common_bridge(r, o, &j) >= 0) {
        decisive = 0;
    } else if ((r->cpu_vendor[0] == '\0') ||
               (strcmp(r->cpu_vendor, "AuthenticAMD") == 0)) {
        decisive = 1;
    } else {
        decisive = 2;
    }
    gpumem_topo_rule_any(rule, ways, ucs_static_array_size(ways), decisive);
    *root_complex_p = (rule->answer == GPUMEM_TOPO_ANSWER_YES) &&
                      (ways[0].answer != GPUMEM_TOPO_ANSWER_YES);
}

/*
 * Requires every rule: no if any is no (the first refusal's reason), else
 * unknown if any is unknown (all unknowns listed), else yes with the last
 * rule's reason (the way the requests take).
 */
static void gpumem_topo_rule_all(gpumem_topo_rule_t *result,
                                 const gpumem_topo_rule_t *rules,
                                 unsigned count)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (rules[i].answer == GPUMEM_TOPO_ANSWER_NO) {
            *result = rules[i];
            return;
        }
    }

    result->answer      = GPUMEM_TOPO_ANSWER_YES;
    result->unknown     = 0;
    result->reason[0]   = '\0';
    result->unknowns[0] = '\0';
    result->brief[0]    = '\0';
    for (i = 0; i < count; ++i) {
        if (rules[i].answer == GPUMEM_TOPO_ANSWER_UNKNOWN) {
            /* A refusal that only unknown facts could get around is what
             * the user can act on */
            if (result->brief[0] == '\0') {
                ucs_strncpy_zero(result->brief, rules[i].brief,
                                 sizeof(result->brief));
            }
            result->answer   = GPUMEM_TOPO_ANSWER_UNKNOWN;
            result->unknown |= rules[i].unknown;
            gpumem_topo_append(result->reason, "%s", rules[i].reason);
            gpumem_topo_append(result->unknowns, "%s", rules[i].unknowns);
        }
    }
    if (result->answer == GPUMEM_TOPO_ANSWER_YES) {
        ucs_strncpy_zero(result->reason, rules[count - 1].reason,
                         sizeof(result->reason));
        ucs_strncpy_zero(result->brief, rules[count - 1].brief,
                         sizeof(result->brief));
    }
}

/* The bus rules: requester and owner not behind a translating IOMMU, the
 * owner's BAR reaches its memory, the bus carries the requests. Where it
 * carries them through the root complex although a switch is above both,
 * the verdict's route says so: that way is the slower. */
static void gpumem_topo_rule_bus(const gpumem_topo_reach_t *r,
                                 const gpumem_topo_reach_t *o,
                                 gpumem_topo_rule_t *rule,
                                 gpumem_topo_verdict_t *verdict)
{
    gpumem_topo_rule_t rules[4];
    int root_complex;

    gpumem_topo_rule_no_iommu(r, &rules[0]);
    gpumem_topo_rule_no_iommu(o, &rules[1]);
    gpumem_topo_rule_bar_covers(o, &rules[2]);
    gpumem_topo_rule_bus_carries(r, o, &rules[3], &root_complex);
    gpumem_topo_rule_all(rule, rules, ucs_static_array_size(rules));
    if (root_complex && (verdict->relation == GPUMEM_TOPO_REL_SAME_SWITCH)) {
        verdict->route = GPUMEM_TOPO_REL_HOST_BRIDGE;
    }
}

static void gpumem_topo_verdict_init(const gpumem_topo_reach_t *r,
                                     const gpumem_topo_reach_t *o,
                                     gpumem_topo_verdict_t *verdict)
{
    verdict->reaches    = 0;
    verdict->relation   = gpumem_topo_relation(r, o, &verdict->hops);
    verdict->route      = verdict->relation;
    verdict->fabric     = GPUMEM_TOPO_FABRIC_NONE;
    verdict->unknown    = 0;
    verdict->reason[0]  = '\0';
    verdict->brief[0]   = '\0';
    verdict->assumed[0] = '\0';
}

/* The brief of an answer that unknown facts leave open: their kinds */
static void gpumem_topo_verdict_brief_unknown(gpumem_topo_verdict_t *verdict,
                                              const char *prefix)
{
    char kinds[GPUMEM_TOPO_BRIEF_MAX];

    ucs_snprintf_zero(verdict->brief, sizeof(verdict->brief), "%s%s",
                      prefix, gpumem_topo_fact_kinds_str(verdict->unknown,
                                                         kinds,
                                                         sizeof(kinds)));
}

/* Sets the verdict from a rule's answer: unknown is no, or yes with the
 * assumption listed where the caller asked for what-if answers */
static int gpumem_topo_verdict_set(gpumem_topo_verdict_t *verdict,
                                   const gpumem_topo_rule_t *rule,
                                   unsigned flags)
{
    verdict->unknown = rule->unknown;
    switch (rule->answer) {
    case GPUMEM_TOPO_ANSWER_YES:
        verdict->reaches = 1;
        ucs_strncpy_zero(verdict->reason, rule->reason,
                         sizeof(verdict->reason));
        ucs_strncpy_zero(verdict->brief, rule->brief,
                         sizeof(verdict->brief));
        break;
    case GPUMEM_TOPO_ANSWER_UNKNOWN:
        if (flags & GPUMEM_TOPO_ASSUME) {
            verdict->reaches = 1;
            ucs_strncpy_zero(verdict->reason, "assumed: facts that cannot "
                             "be read count as favourable",
                             sizeof(verdict->reason));
            gpumem_topo_append(verdict->assumed, "%s", rule->unknowns);
            gpumem_topo_verdict_brief_unknown(verdict, "assumed: ");
            break;
        }
        /* fall through */
    default:
        verdict->reaches = 0;
        ucs_strncpy_zero(verdict->reason, rule->reason,
                         sizeof(verdict->reason));
        if (rule->brief[0] != '\0') {
            ucs_strncpy_zero(verdict->brief, rule->brief,
                             sizeof(verdict->brief));
        } else {
            gpumem_topo_verdict_brief_unknown(verdict, "unknown: ");
        }
        break;
    }
    return verdict->reaches;
}

int gpumem_topo_reaches(const gpumem_topo_reach_t *r,
                        const gpumem_topo_reach_t *o, unsigned flags,
                        gpumem_topo_verdict_t *verdict)
{
    gpumem_topo_rule_t rule, fabric, bus, ways[2];

    gpumem_topo_verdict_init(r, o, verdict);

    gpumem_topo_rule_same_machine(r, o, &rule);
    if (rule.answer == GPUMEM_TOPO_ANSWER_YES) {
        gpumem_topo_rule_distinct(r, o, &rule);
    }
    if (rule.answer == GPUMEM_TOPO_ANSWER_YES) {
        gpumem_topo_rule_same_space(r, o, &rule);
    }
    if (rule.answer != GPUMEM_TOPO_ANSWER_YES) {
        return gpumem_topo_verdict_set(verdict, &rule, 0);
    }

    gpumem_topo_rule_fabric(r, o, &fabric);
    if (fabric.answer == GPUMEM_TOPO_ANSWER_YES) {
        verdict->fabric = r->fabric;
        return gpumem_topo_verdict_set(verdict, &fabric, flags);
    }

    gpumem_topo_rule_bus(r, o, &bus, verdict);
    if ((bus.answer == GPUMEM_TOPO_ANSWER_NO) &&
        (fabric.answer == GPUMEM_TOPO_ANSWER_UNKNOWN)) {
        /* The bus refuses: only the unknown fabric could still join them.
         * Lead with the bus's refusal: it is what the user can act on. */
        ways[0] = bus;
        ways[1] = fabric;
        gpumem_topo_rule_any(&rule, ways, 2, 0);
        return gpumem_topo_verdict_set(verdict, &rule, flags);
    }

    if ((bus.answer == GPUMEM_TOPO_ANSWER_UNKNOWN) &&
        (fabric.answer == GPUMEM_TOPO_ANSWER_UNKNOWN)) {
        /* Either could join them: both are named */
        gpumem_topo_append(bus.reason, "%s", fabric.reason);
        bus.unknown |= fabric.unknown;
    }
    return gpumem_topo_verdict_set(verdict, &bus, flags);
}

int gpumem_topo_dma_reaches(const gpumem_topo_reach_t *client,
                            const gpumem_topo_reach_t *gpu, unsigned flags,
                            gpumem_topo_verdict_t *verdict)
{
    gpumem_topo_rule_t rule;

    gpumem_topo_verdict_init(client, gpu, verdict);

    gpumem_topo_rule_same_machine(client, gpu, &rule);
    if (rule.answer == GPUMEM_TOPO_ANSWER_YES) {
        gpumem_topo_rule_distinct(client, gpu, &rule);
    }
    if (rule.answer != GPUMEM_TOPO_ANSWER_YES) {
        return gpumem_topo_verdict_set(verdict, &rule, 0);
    }

    gpumem_topo_rule_bus(client, gpu, &rule, verdict);
    return gpumem_topo_verdict_set(verdict, &rule, flags);
}

int gpumem_topo_dma_reaches_system(const gpumem_topo_reach_t *client,
                                   const gpumem_topo_reach_t *gpu,
                                   unsigned flags,
                                   gpumem_topo_verdict_t *verdict)
{
    gpumem_topo_rule_t rule, rules[2];

    gpumem_topo_verdict_init(client, gpu, verdict);

    gpumem_topo_rule_same_machine(client, gpu, &rule);
    if (rule.answer != GPUMEM_TOPO_ANSWER_YES) {
        return gpumem_topo_verdict_set(verdict, &rule, 0);
    }

    /* Physical addresses are bus addresses where no IOMMU translates */
    gpumem_topo_rule_no_iommu(client, &rules[0]);
    gpumem_topo_rule_no_iommu(gpu, &rules[1]);
    gpumem_topo_rule_all(&rule, rules, ucs_static_array_size(rules));
    return gpumem_topo_verdict_set(verdict, &rule, flags);
}
