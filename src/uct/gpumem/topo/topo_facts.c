/**
 * gpumem topology: the saved facts file, written as root and read by jobs.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo_facts.h"
#include "topo_file.h"
#include "topo_sysfs.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/*
 * One fact a line, "<keyword> <PCI address> <value>":
 *
 *   acs        DDDD:BB:DD.F 0x<ACS control bits>
 *   iommu      DDDD:BB:DD.F 0|1 [group <n>]   1: an IOMMU translates
 *   bar        DDDD:BB:DD.F <bytes>           largest memory BAR
 *   mem        DDDD:BB:DD.F <bytes>           GPU memory
 *   hostbridge DDDD:BB:00.0 0x<vendor << 16 | device>
 *
 * Numbers are decimal, or hexadecimal after "0x". Blank lines and lines
 * starting with '#' are comments.
 */

#define GPUMEM_TOPO_FACTS_LINE_MAX  256  /* Longer is not a facts file */
#define GPUMEM_TOPO_FACTS_TOKENS    5    /* keyword addr value group <n> */

#define GPUMEM_TOPO_FACTS_HEADER \
    "# gpumem topology facts (gpumem_topo --save-facts)\n" \
    "# acs <addr> <ACS control>, iommu <addr> <0|1 translates> group <n>,\n" \
    "# bar <addr> <bytes>, mem <addr> <bytes>, hostbridge <addr> <id>\n"


typedef enum {
    GPUMEM_TOPO_FACTS_ACS,
    GPUMEM_TOPO_FACTS_IOMMU,
    GPUMEM_TOPO_FACTS_BAR,
    GPUMEM_TOPO_FACTS_MEM,
    GPUMEM_TOPO_FACTS_HOSTBRIDGE,
    GPUMEM_TOPO_FACTS_LAST
} gpumem_topo_facts_kind_t;


/* One line of the file, parsed */
typedef struct gpumem_topo_facts_entry {
    gpumem_topo_facts_kind_t kind;
    gpumem_pci_addr_t        addr;
    uint64_t                 value;
    int                      has_group;
    int                      group;
    unsigned                 lineno;    /* Where the file says it */
} gpumem_topo_facts_entry_t;


/* The keyword of each kind, and the largest value it takes */
static const struct {
    const char *name;
    uint64_t   max;
} gpumem_topo_facts_kinds[] = {
    [GPUMEM_TOPO_FACTS_ACS]        = {"acs",        0xffff},
    [GPUMEM_TOPO_FACTS_IOMMU]      = {"iommu",      1},
    [GPUMEM_TOPO_FACTS_BAR]        = {"bar",        UINT64_MAX},
    [GPUMEM_TOPO_FACTS_MEM]        = {"mem",        UINT64_MAX},
    [GPUMEM_TOPO_FACTS_HOSTBRIDGE] = {"hostbridge", 0xffffffff}
};


/* A number, decimal or "0x" hexadecimal, the whole of @a str. strtoull()
 * would take a sign, leading spaces and octal, which nobody means here. */
static int gpumem_topo_facts_parse_u64(const char *str, uint64_t *value_p)
{
    unsigned base     = 10;
    uint64_t value    = 0;
    const char *p     = str;
    unsigned digit;

    if ((p[0] == '0') && ((p[1] == 'x') || (p[1] == 'X'))) {
        base = 16;
        p   += 2;
    }

    if (*p == '\0') {
        return 0;
    }

    for (; *p != '\0'; ++p) {
        if ((*p >= '0') && (*p <= '9')) {
            digit = *p - '0';
        } else if ((base == 16) && (*p >= 'a') && (*p <= 'f')) {
            digit = *p - 'a' + 10;
        } else if ((base == 16) && (*p >= 'A') && (*p <= 'F')) {
            digit = *p - 'A' + 10;
        } else {
            return 0;
        }

        if (value > ((UINT64_MAX - digit) / base)) {
            return 0;
        }
        value = (value * base) + digit;
    }

    *value_p = value;
    return 1;
}

/* Split a line at spaces and tabs, in place; the number of tokens, or more
 * than @a max when there are more */
static unsigned gpumem_topo_facts_split(char *line, char **tokens,
                                        unsigned max)
{
    unsigned count = 0;
    char *p        = line;

    for (;;) {
        while ((*p == ' ') || (*p == '\t') || (*p == '\r')) {
            *(p++) = '\0';
        }
        if (*p == '\0') {
            return count;
        }
        if (count == max) {
            return max + 1;
        }

        tokens[count++] = p;
        while ((*p != '\0') && (*p != ' ') && (*p != '\t') && (*p != '\r')) {
            ++p;
        }
    }
}

/*
 * Parse one line of the file. Returns 1 with an entry, 0 for a blank or
 * comment line, -1 when malformed, with what is wrong in @a error.
 */
static int gpumem_topo_facts_parse_line(char *line,
                                        gpumem_topo_facts_entry_t *entry,
                                        char *error, size_t max)
{
    char *tokens[GPUMEM_TOPO_FACTS_TOKENS];
    gpumem_topo_facts_kind_t kind;
    uint64_t group;
    unsigned count;

    count = gpumem_topo_facts_split(line, tokens,
                                    GPUMEM_TOPO_FACTS_TOKENS);
    if ((count == 0) || (tokens[0][0] == '#')) {
        return 0;
    }

    for (kind = 0; kind < GPUMEM_TOPO_FACTS_LAST; ++kind) {
        if (!strcmp(tokens[0], gpumem_topo_facts_kinds[kind].name)) {
            break;
        }
    }
    if (kind == GPUMEM_TOPO_FACTS_LAST) {
        snprintf(error, max, "unknown fact '%.32s'", tokens[0]);
        return -1;
    }

    if (count < 3) {
        snprintf(error, max, "'%s' needs a PCI address and a value",
                 tokens[0]);
        return -1;
    }

    if (gpumem_pci_addr_parse(tokens[1], &entry->addr) != UCS_OK) {
        snprintf(error, max, "'%.32s' is not a PCI address", tokens[1]);
        return -1;
    }

    /* The host bridge's ID is that of function 0 of its root bus */
    if ((kind == GPUMEM_TOPO_FACTS_HOSTBRIDGE) &&
        ((entry->addr.dev != 0) || (entry->addr.fn != 0))) {
        snprintf(error, max, "a host bridge is function DDDD:BB:00.0, not "
                 "'%s'", tokens[1]);
        return -1;
    }

    if (!gpumem_topo_facts_parse_u64(tokens[2], &entry->value) ||
        (entry->value > gpumem_topo_facts_kinds[kind].max)) {
        snprintf(error, max, "'%.32s' is not a value of '%s'", tokens[2],
                 tokens[0]);
        return -1;
    }

    entry->kind      = kind;
    entry->has_group = 0;
    entry->group     = -1;
    if (count == 3) {
        return 1;
    }

    if ((kind != GPUMEM_TOPO_FACTS_IOMMU) || strcmp(tokens[3], "group")) {
        snprintf(error, max, "trailing '%.32s' after the value", tokens[3]);
        return -1;
    }

    if (count != 5) {
        snprintf(error, max, "'group' needs one IOMMU group number");
        return -1;
    }

    /* -1: the function is in no group */
    if (!strcmp(tokens[4], "-1")) {
        entry->group = -1;
    } else if (gpumem_topo_facts_parse_u64(tokens[4], &group) &&
               (group <= INT_MAX)) {
        entry->group = (int)group;
    } else {
        snprintf(error, max, "'%.32s' is not an IOMMU group", tokens[4]);
        return -1;
    }

    entry->has_group = 1;
    return 1;
}

/*
 * Read one line into @a buf without its newline. Returns 1 with a line, 0 at
 * the end of the file, -1 when it is longer than the buffer or holds a NUL,
 * which no facts file does.
 */
static int gpumem_topo_facts_read_line(FILE *file, char *buf, size_t max)
{
    size_t length = 0;
    int c;

    while ((c = getc(file)) != EOF) {
        if (c == '\n') {
            break;
        }
        if ((c == '\0') || (length == (max - 1))) {
            return -1;
        }
        buf[length++] = (char)c;
    }

    buf[length] = '\0';
    return (c != EOF) || (length > 0);
}

/* Whether two entries say the same of their fact */
static int gpumem_topo_facts_same_value(const gpumem_topo_facts_entry_t *a,
                                        const gpumem_topo_facts_entry_t *b)
{
    return (a->value == b->value) && (a->has_group == b->has_group) &&
           (a->group == b->group);
}

/* The order of the conflict scan: by fact, then device, then line */
static int gpumem_topo_facts_entry_cmp(const void *a_p, const void *b_p)
{
    const gpumem_topo_facts_entry_t *a, *b;
    int cmp;

    a = *(gpumem_topo_facts_entry_t* const*)a_p;
    b = *(gpumem_topo_facts_entry_t* const*)b_p;

    if (a->kind != b->kind) {
        return (a->kind < b->kind) ? -1 : 1;
    }
    cmp = gpumem_pci_addr_cmp(&a->addr, &b->addr);
    if (cmp != 0) {
        return cmp;
    }
    return (a->lineno < b->lineno) ? -1 : (a->lineno > b->lineno);
}

static void gpumem_topo_facts_warn_pair(const char *path,
                                        const gpumem_topo_facts_entry_t *first,
                                        const gpumem_topo_facts_entry_t *later)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX];

    ucs_warn("gpumem: %s:%u and %s:%u say different %s facts of %s: line %u "
             "is applied", path, first->lineno, path, later->lineno,
             gpumem_topo_facts_kinds[later->kind].name,
             gpumem_pci_addr_str(&later->addr, name, sizeof(name)),
             later->lineno);
}

/*
 * A line of a fact of a device that says otherwise than an earlier line of
 * the same: the later one is applied, and a warning names it with the first
 * earlier line that differs. Sorted by fact and device, in O(n log n): a
 * file of a million lines is read at every process's first gpumem call.
 */
static void gpumem_topo_facts_warn_conflicts(const char *path,
                                             gpumem_topo_facts_entry_t *entries,
                                             unsigned num_entries)
{
    const gpumem_topo_facts_entry_t *first, *differing;
    gpumem_topo_facts_entry_t **sorted;
    unsigned i;

    if (num_entries < 2) {
        return;
    }

    sorted = ucs_malloc(num_entries * sizeof(*sorted), "gpumem_topo_facts");
    if (sorted == NULL) {
        ucs_diag("gpumem: no memory to look for conflicting lines in %s",
                 path);
        return;
    }

    for (i = 0; i < num_entries; ++i) {
        sorted[i] = &entries[i];
    }
    qsort(sorted, num_entries, sizeof(*sorted), gpumem_topo_facts_entry_cmp);

    /* In each run of one fact of one device, in line order: @a first and the
     * first line that differs from it */
    first     = sorted[0];
    differing = NULL;
    for (i = 1; i < num_entries; ++i) {
        if ((sorted[i]->kind != first->kind) ||
            !gpumem_pci_addr_equal(&sorted[i]->addr, &first->addr)) {
            first     = sorted[i];
            differing = NULL;
        } else if (!gpumem_topo_facts_same_value(sorted[i], first)) {
            gpumem_topo_facts_warn_pair(path, first, sorted[i]);
            if (differing == NULL) {
                differing = sorted[i];
            }
        } else if (differing != NULL) {
            gpumem_topo_facts_warn_pair(path, differing, sorted[i]);
        }
    }

    ucs_free(sorted);
}

/* Every entry of a facts file, or nothing with an error logged */
static ucs_status_t
gpumem_topo_facts_read(const char *path, gpumem_topo_facts_entry_t **entries_p,
                       unsigned *num_entries_p)
{
    gpumem_topo_facts_entry_t *entries = NULL;
    unsigned num_entries               = 0;
    unsigned max_entries               = 0;
    char error[GPUMEM_TOPO_REASON_MAX];
    char line[GPUMEM_TOPO_FACTS_LINE_MAX + 1];
    gpumem_topo_facts_entry_t entry;
    gpumem_topo_facts_entry_t *grown;
    ucs_status_t status;
    unsigned lineno;
    FILE *file;
    int ret, fd;

    status = gpumem_topo_file_open(path, "topology facts", &fd);
    if (status != UCS_OK) {
        return status;
    }

    file = fdopen(fd, "r");
    if (file == NULL) {
        ucs_error("gpumem: cannot read topology facts %s: %s", path,
                  strerror(errno));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    for (lineno = 1;; ++lineno) {
        ret = gpumem_topo_facts_read_line(file, line, sizeof(line));
        if (ret == 0) {
            break;
        }

        if (ret < 0) {
            ucs_error("gpumem: %s:%u: line longer than %d characters, or "
                      "binary", path, lineno, GPUMEM_TOPO_FACTS_LINE_MAX);
            status = UCS_ERR_INVALID_PARAM;
            goto err_free;
        }

        ret = gpumem_topo_facts_parse_line(line, &entry, error,
                                           sizeof(error));
        if (ret < 0) {
            ucs_error("gpumem: %s:%u: %s", path, lineno, error);
            status = UCS_ERR_INVALID_PARAM;
            goto err_free;
        }
        if (ret == 0) {
            continue;
        }

        if (num_entries == max_entries) {
            max_entries = (max_entries == 0) ? 16 : (max_entries * 2);
            grown       = ucs_realloc(entries, max_entries * sizeof(*entries),
                                      "gpumem_topo_facts");
            if (grown == NULL) {
                ucs_error("gpumem: no memory for the topology facts of %s",
                          path);
                status = UCS_ERR_NO_MEMORY;
                goto err_free;
            }
            entries = grown;
        }
        entry.lineno           = lineno;
        entries[num_entries++] = entry;
    }

    if (ferror(file)) {
        ucs_error("gpumem: cannot read topology facts %s: %s", path,
                  strerror(errno));
        status = UCS_ERR_IO_ERROR;
        goto err_free;
    }

    fclose(file);
    gpumem_topo_facts_warn_conflicts(path, entries, num_entries);
    *entries_p     = entries;
    *num_entries_p = num_entries;
    return UCS_OK;

err_free:
    ucs_free(entries);
    fclose(file);
    return status;
}

/* Set the fact of one device's reach that an entry names */
static void gpumem_topo_facts_apply_entry(gpumem_topo_reach_t *reach,
                                          const gpumem_topo_facts_entry_t *e)
{
    unsigned i;

    switch (e->kind) {
    case GPUMEM_TOPO_FACTS_ACS:
        /* A bridge above several devices is a hop of each */
        for (i = 0; i < reach->path_len; ++i) {
            if (gpumem_pci_addr_equal(&reach->path[i].addr, &e->addr)) {
                gpumem_topo_fact_set(&reach->path[i].acs_ctrl, e->value);
            }
        }
        break;
    case GPUMEM_TOPO_FACTS_HOSTBRIDGE:
        if ((reach->hb_domain == e->addr.domain) &&
            (reach->hb_bus == e->addr.bus)) {
            gpumem_topo_fact_set(&reach->hb_id, e->value);
        }
        break;
    case GPUMEM_TOPO_FACTS_IOMMU:
        if (gpumem_pci_addr_equal(&reach->addr, &e->addr)) {
            gpumem_topo_fact_set(&reach->iommu, e->value);
            if (e->has_group) {
                reach->iommu_group = e->group;
            }
        }
        break;
    case GPUMEM_TOPO_FACTS_BAR:
        if (gpumem_pci_addr_equal(&reach->addr, &e->addr)) {
            gpumem_topo_fact_set(&reach->bar_size, e->value);
        }
        break;
    case GPUMEM_TOPO_FACTS_MEM:
        if (gpumem_pci_addr_equal(&reach->addr, &e->addr)) {
            gpumem_topo_fact_set(&reach->mem_size, e->value);
        }
        break;
    default:
        break;
    }
}

ucs_status_t gpumem_topo_facts_apply(gpumem_topo_t *topo, const char *path)
{
    gpumem_topo_facts_entry_t *entries;
    unsigned num_entries, i, dev;
    ucs_status_t status;

    /* The whole file is checked before any of it is applied, so that a bad
     * line leaves the topology as it was, not half overridden */
    status = gpumem_topo_facts_read(path, &entries, &num_entries);
    if (status != UCS_OK) {
        return status;
    }

    for (i = 0; i < num_entries; ++i) {
        for (dev = 0; dev < topo->num_devs; ++dev) {
            gpumem_topo_facts_apply_entry(&topo->devs[dev].reach,
                                          &entries[i]);
        }
    }

    ucs_debug("gpumem: applied %u topology facts from %s", num_entries, path);
    ucs_free(entries);
    return UCS_OK;
}

/* Whether a hop's ACS was written already, by an earlier hop at its address */
static int gpumem_topo_facts_acs_saved(const gpumem_topo_t *topo,
                                       unsigned dev, unsigned hop)
{
    const gpumem_pci_addr_t *addr = &topo->devs[dev].reach.path[hop].addr;
    const gpumem_topo_reach_t *reach;
    unsigned d, h;

    for (d = 0; d <= dev; ++d) {
        reach = &topo->devs[d].reach;
        for (h = 0; h < ((d == dev) ? hop : reach->path_len); ++h) {
            if (reach->path[h].acs_ctrl.known &&
                gpumem_pci_addr_equal(&reach->path[h].addr, addr)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Whether a device's host bridge ID was written already, by an earlier
 * device under it */
static int gpumem_topo_facts_hb_saved(const gpumem_topo_t *topo, unsigned dev)
{
    const gpumem_topo_reach_t *reach = &topo->devs[dev].reach;
    unsigned d;

    for (d = 0; d < dev; ++d) {
        if (topo->devs[d].reach.hb_id.known &&
            (topo->devs[d].reach.hb_domain == reach->hb_domain) &&
            (topo->devs[d].reach.hb_bus == reach->hb_bus)) {
            return 1;
        }
    }
    return 0;
}

/* The facts of one device that could be read; errors are left to ferror() */
static void gpumem_topo_facts_write_dev(FILE *file, const gpumem_topo_t *topo,
                                       unsigned dev)
{
    const gpumem_topo_reach_t *reach = &topo->devs[dev].reach;
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_pci_addr_t hb_addr;
    unsigned hop;

    gpumem_pci_addr_str(&reach->addr, addr_str, sizeof(addr_str));
    fprintf(file, "# %s\n", topo->devs[dev].name);

    if (reach->iommu.known) {
        fprintf(file, "iommu %s %u group %d\n", addr_str,
                (unsigned)reach->iommu.value, reach->iommu_group);
    }
    if (reach->bar_size.known) {
        fprintf(file, "bar %s %llu\n", addr_str,
                (unsigned long long)reach->bar_size.value);
    }
    if (reach->mem_size.known) {
        fprintf(file, "mem %s %llu\n", addr_str,
                (unsigned long long)reach->mem_size.value);
    }

    for (hop = 0; hop < reach->path_len; ++hop) {
        if (reach->path[hop].acs_ctrl.known &&
            !gpumem_topo_facts_acs_saved(topo, dev, hop)) {
            gpumem_pci_addr_str(&reach->path[hop].addr, addr_str,
                                sizeof(addr_str));
            fprintf(file, "acs %s 0x%04llx\n", addr_str,
                    (unsigned long long)reach->path[hop].acs_ctrl.value);
        }
    }

    if (reach->hb_id.known && !gpumem_topo_facts_hb_saved(topo, dev)) {
        hb_addr.domain = reach->hb_domain;
        hb_addr.bus    = reach->hb_bus;
        hb_addr.dev    = 0;
        hb_addr.fn     = 0;
        gpumem_pci_addr_str(&hb_addr, addr_str, sizeof(addr_str));
        fprintf(file, "hostbridge %s 0x%08llx\n", addr_str,
                (unsigned long long)reach->hb_id.value);
    }
}

ucs_status_t gpumem_topo_save_facts(const gpumem_topo_t *topo,
                                    const char *path)
{
    unsigned dev;
    FILE *file;
    int failed;

    file = fopen(path, "w");
    if (file == NULL) {
        ucs_error("gpumem: cannot create topology facts %s: %s", path,
                  strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    /* Unknown facts are left out: a later load tries them again, perhaps
     * with more privilege, rather than inheriting an "unknown" */
    fputs(GPUMEM_TOPO_FACTS_HEADER, file);
    for (dev = 0; dev < topo->num_devs; ++dev) {
        gpumem_topo_facts_write_dev(file, topo, dev);
    }

    failed = ferror(file);
    if ((fclose(file) != 0) || failed) {
        ucs_error("gpumem: cannot write topology facts %s: %s", path,
                  strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}
