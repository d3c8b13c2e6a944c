/**
 * gpumem topology: PCI facts read from sysfs (ACS, IOMMU, BARs, IDs).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo_sysfs.h"

#include <ucs/sys/compiler_def.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Configuration space: the 256 bytes every function has, then the PCI
 * Express extended space up to 4096 (PCIe base spec, 7.5 and 7.6) */
#define GPUMEM_TOPO_SYSFS_CFG_SIZE       256
#define GPUMEM_TOPO_SYSFS_CFG_EXP_SIZE   4096

#define GPUMEM_TOPO_SYSFS_CFG_STATUS     0x06    /* Status register */
#define GPUMEM_TOPO_SYSFS_STATUS_CAPS    0x0010  /* Capabilities list */
#define GPUMEM_TOPO_SYSFS_CFG_CAP_PTR    0x34    /* First capability */
#define GPUMEM_TOPO_SYSFS_CAP_FIRST      0x40    /* Below: the header */
#define GPUMEM_TOPO_SYSFS_CAP_ID_EXP     0x10    /* PCI Express */

#define GPUMEM_TOPO_SYSFS_EXT_CAP_ID_ACS 0x000d
#define GPUMEM_TOPO_SYSFS_ACS_CTRL       6       /* Offset in the capability */

#define GPUMEM_TOPO_SYSFS_IORESOURCE_MEM 0x00000200 /* linux/ioport.h */
#define GPUMEM_TOPO_SYSFS_NUM_BARS       6

/* Text attributes hold a line or a few: anything longer is not one */
#define GPUMEM_TOPO_SYSFS_TEXT_MAX       4096


void gpumem_topo_fact_set(gpumem_topo_fact_t *fact, uint64_t value)
{
    fact->known  = 1;
    fact->value  = value;
    fact->why[0] = '\0';
}

void gpumem_topo_fact_unknown(gpumem_topo_fact_t *fact, const char *fmt, ...)
{
    va_list ap;

    fact->known = 0;
    fact->value = 0;
    va_start(ap, fmt);
    vsnprintf(fact->why, sizeof(fact->why), fmt, ap);
    va_end(ap);
}

/* <root>/bus/pci/devices/<addr>/<file>; "" for the device's directory.
 * Returns 0, or ENAMETOOLONG when it does not fit. */
static int gpumem_topo_sysfs_dev_path(const char *root,
                                      const gpumem_pci_addr_t *addr,
                                      const char *file, char *buf, size_t max)
{
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    int ret;

    gpumem_pci_addr_str(addr, addr_str, sizeof(addr_str));
    ret = snprintf(buf, max, "%s/bus/pci/devices/%s%s%s", root, addr_str,
                   (*file == '\0') ? "" : "/", file);
    return ((ret < 0) || ((size_t)ret >= max)) ? ENAMETOOLONG : 0;
}

/* Read at most @a max bytes from the start of a file. Returns 0 or the errno
 * of the failed call, so that the caller's reason names it. */
static int gpumem_topo_sysfs_read(const char *path, void *buf, size_t max,
                                  size_t *length_p)
{
    size_t length = 0;
    struct stat st;
    ssize_t ret;
    int fd, err;

    /* Non-blocking, and a regular file only: a FIFO or device put in a
     * sysfs root given for tests never blocks the load */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        return errno;
    }
    if ((fstat(fd, &st) != 0) || !S_ISREG(st.st_mode)) {
        close(fd);
        return EINVAL;
    }

    while (length < max) {
        ret = read(fd, UCS_PTR_BYTE_OFFSET(buf, length), max - length);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = errno;
            close(fd);
            return err;
        }
        if (ret == 0) {
            break;
        }
        length += ret;
    }

    close(fd);
    *length_p = length;
    return 0;
}

/* A text attribute as a string. A file that fills the buffer is refused
 * rather than cut, since what was cut might have changed its meaning. */
static int gpumem_topo_sysfs_read_text(const char *path, char *buf,
                                       size_t max)
{
    size_t length;
    int err;

    err = gpumem_topo_sysfs_read(path, buf, max - 1, &length);
    if (err != 0) {
        return err;
    }
    if (length == (max - 1)) {
        return EFBIG;
    }

    buf[length] = '\0';
    return 0;
}

/* Whether nothing but white space is left of a string */
static int gpumem_topo_sysfs_is_blank(const char *str)
{
    while ((*str == ' ') || (*str == '\t') || (*str == '\n')) {
        ++str;
    }
    return *str == '\0';
}

/* A number written "0x<hex>", at most @a max_digits digits; sets *end_p past
 * it. The kernel writes sysfs numbers so; strtoull() would also take a sign,
 * spaces and overflow, which no attribute has. */
static int gpumem_topo_sysfs_parse_hex(const char *str, unsigned max_digits,
                                       uint64_t *value_p, const char **end_p)
{
    uint64_t value = 0;
    unsigned digits;
    int c;

    if ((str[0] != '0') || ((str[1] != 'x') && (str[1] != 'X'))) {
        return 0;
    }

    str += 2;
    for (digits = 0; digits < max_digits; ++digits) {
        c = str[digits];
        if ((c >= '0') && (c <= '9')) {
            value = (value << 4) | (uint64_t)(c - '0');
        } else if ((c >= 'a') && (c <= 'f')) {
            value = (value << 4) | (uint64_t)(c - 'a' + 10);
        } else if ((c >= 'A') && (c <= 'F')) {
            value = (value << 4) | (uint64_t)(c - 'A' + 10);
        } else {
            break;
        }
    }

    if (digits == 0) {
        return 0;
    }

    *value_p = value;
    *end_p   = str + digits;
    return 1;
}

/* 16-bit and 32-bit registers: configuration space is little endian */
static uint16_t gpumem_topo_sysfs_cfg16(const uint8_t *cfg, size_t offset)
{
    return (uint16_t)(cfg[offset] | (cfg[offset + 1] << 8));
}

static uint32_t gpumem_topo_sysfs_cfg32(const uint8_t *cfg, size_t offset)
{
    return (uint32_t)gpumem_topo_sysfs_cfg16(cfg, offset) |
           ((uint32_t)gpumem_topo_sysfs_cfg16(cfg, offset + 2) << 16);
}

/*
 * Whether a function is PCI Express, by the capability 0x10 in its standard
 * list: 1 if it is, 0 if the list ends without it, -1 if the list cannot be
 * followed (it loops or leaves the first 256 bytes), when neither can be
 * told.
 */
static int gpumem_topo_sysfs_is_express(const uint8_t *cfg)
{
    /* Capabilities are dword aligned in 0x40..0xff: no more than this many
     * can be visited without one being visited twice */
    unsigned ttl = (GPUMEM_TOPO_SYSFS_CFG_SIZE -
                    GPUMEM_TOPO_SYSFS_CAP_FIRST) / 4;
    unsigned pos;

    if (!(gpumem_topo_sysfs_cfg16(cfg, GPUMEM_TOPO_SYSFS_CFG_STATUS) &
          GPUMEM_TOPO_SYSFS_STATUS_CAPS)) {
        return 0;
    }

    /* The two low bits of each pointer are reserved (PCI spec 6.7) */
    pos = cfg[GPUMEM_TOPO_SYSFS_CFG_CAP_PTR] & 0xfc;
    while (pos != 0) {
        if ((pos < GPUMEM_TOPO_SYSFS_CAP_FIRST) || (ttl-- == 0)) {
            return -1;
        }
        if (cfg[pos] == GPUMEM_TOPO_SYSFS_CAP_ID_EXP) {
            return 1;
        }
        pos = cfg[pos + 1] & 0xfc;
    }

    return 0;
}

/*
 * The offset of an extended capability, 0 if the list ends without it, or
 * -1 with a reason in @a fact when the list cannot be followed. @a length is
 * at least 256.
 */
static int gpumem_topo_sysfs_find_ext_cap(const uint8_t *cfg, size_t length,
                                          unsigned id, const char *addr_str,
                                          gpumem_topo_fact_t *fact)
{
    /* One bit per dword of the extended space, to tell a loop from a long
     * list */
    uint8_t visited[(GPUMEM_TOPO_SYSFS_CFG_EXP_SIZE -
                     GPUMEM_TOPO_SYSFS_CFG_SIZE) / 4 / 8];
    unsigned pos = GPUMEM_TOPO_SYSFS_CFG_SIZE;
    unsigned bit;
    uint32_t header;

    memset(visited, 0, sizeof(visited));
    for (;;) {
        if ((pos < GPUMEM_TOPO_SYSFS_CFG_SIZE) || ((pos + 4) > length)) {
            gpumem_topo_fact_unknown(fact, "the extended capability list of "
                                     "%s points to 0x%x, outside its "
                                     "extended configuration space",
                                     addr_str, pos);
            return -1;
        }

        bit = (pos - GPUMEM_TOPO_SYSFS_CFG_SIZE) / 4;
        if (visited[bit / 8] & UCS_BIT(bit % 8)) {
            gpumem_topo_fact_unknown(fact, "the extended capability list of "
                                     "%s loops at 0x%x", addr_str, pos);
            return -1;
        }
        visited[bit / 8] |= UCS_BIT(bit % 8);

        /* No extended capabilities at all reads as 0 (or all ones from a
         * function that is gone) at the first header */
        header = gpumem_topo_sysfs_cfg32(cfg, pos);
        if ((header == 0) || (header == 0xffffffffu)) {
            return 0;
        }

        if ((header & 0xffff) == id) {
            return (int)pos;
        }

        /* The two low bits of the next offset are reserved (PCIe 7.6.3) */
        pos = (header >> 20) & 0xffc;
        if (pos == 0) {
            return 0;
        }
    }
}

void gpumem_topo_sysfs_acs_ctrl(const char *root, const gpumem_pci_addr_t *addr,
                                gpumem_topo_fact_t *fact)
{
    uint8_t cfg[GPUMEM_TOPO_SYSFS_CFG_EXP_SIZE];
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    char path[PATH_MAX];
    size_t length;
    int err, express, pos;

    gpumem_pci_addr_str(addr, addr_str, sizeof(addr_str));
    err = gpumem_topo_sysfs_dev_path(root, addr, "config", path, sizeof(path));
    if (err == 0) {
        err = gpumem_topo_sysfs_read(path, cfg, sizeof(cfg), &length);
    }
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "cannot read the configuration space "
                                 "of %s: %s: %s", addr_str, path,
                                 strerror(err));
        return;
    }

    /* The kernel gives unprivileged readers the first 64 bytes only */
    if (length < GPUMEM_TOPO_SYSFS_CFG_SIZE) {
        gpumem_topo_fact_unknown(fact, "cannot read the extended "
                                 "configuration space of %s: %s has %zu "
                                 "bytes (needs root)", addr_str, path,
                                 length);
        return;
    }

    if (length < GPUMEM_TOPO_SYSFS_CFG_EXP_SIZE) {
        /* A conventional PCI function has no extended space, so no ACS.
         * A PCI Express function whose extended space the kernel cannot
         * reach (no ECAM) may have one that nobody can read. */
        express = gpumem_topo_sysfs_is_express(cfg);
        if (express == 0) {
            gpumem_topo_fact_set(fact, 0);
        } else if (express > 0) {
            gpumem_topo_fact_unknown(fact, "cannot read the extended "
                                     "configuration space of %s: %s has "
                                     "%zu bytes, though it is PCI Express",
                                     addr_str, path, length);
        } else {
            gpumem_topo_fact_unknown(fact, "cannot read the extended "
                                     "configuration space of %s: %s has "
                                     "%zu bytes, and its capability list "
                                     "is broken", addr_str, path, length);
        }
        return;
    }

    pos = gpumem_topo_sysfs_find_ext_cap(cfg, length,
                                         GPUMEM_TOPO_SYSFS_EXT_CAP_ID_ACS,
                                         addr_str, fact);
    if (pos < 0) {
        return;
    }

    if (pos == 0) {
        gpumem_topo_fact_set(fact, 0);
        return;
    }

    if ((pos + GPUMEM_TOPO_SYSFS_ACS_CTRL + 2) > (int)length) {
        gpumem_topo_fact_unknown(fact, "the ACS capability of %s at 0x%x "
                                 "runs past the end of its configuration "
                                 "space", addr_str, pos);
        return;
    }

    gpumem_topo_fact_set(fact, gpumem_topo_sysfs_cfg16(cfg, pos +
                                                   GPUMEM_TOPO_SYSFS_ACS_CTRL));
}

/* Whether a directory has an entry other than "." and "..": 0 if it does
 * not or does not exist, 1 if it does, -1 with errno otherwise */
static int gpumem_topo_sysfs_dir_has_entries(const char *path)
{
    struct dirent *entry;
    int found = 0;
    DIR *dir;

    dir = opendir(path);
    if (dir == NULL) {
        return (errno == ENOENT) ? 0 : -1;
    }

    while (!found && ((entry = readdir(dir)) != NULL)) {
        found = strcmp(entry->d_name, ".") && strcmp(entry->d_name, "..");
    }

    closedir(dir);
    return found;
}

/*
 * A function without an IOMMU group: known 0 when the machine has no IOMMU
 * at all; unknown when it has one, which should have placed the function in
 * a group, or when the function itself is not there.
 */
static void gpumem_topo_sysfs_iommu_no_group(const char *root,
                                             const gpumem_pci_addr_t *addr,
                                             const char *addr_str,
                                             const char *link,
                                             gpumem_topo_fact_t *fact)
{
    char dev_dir[PATH_MAX];
    char path[PATH_MAX];
    struct stat st;
    int err, ret;

    err = gpumem_topo_sysfs_dev_path(root, addr, "", dev_dir,
                                     sizeof(dev_dir));
    if ((err == 0) && (stat(dev_dir, &st) != 0)) {
        err = errno;
    }
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "cannot find %s in sysfs: %s: %s",
                                 addr_str, dev_dir, strerror(err));
        return;
    }

    ret = snprintf(path, sizeof(path), "%s/class/iommu", root);
    if ((ret < 0) || ((size_t)ret >= sizeof(path))) {
        gpumem_topo_fact_unknown(fact, "cannot tell whether the machine of "
                                 "%s has an IOMMU: %s", addr_str,
                                 strerror(ENAMETOOLONG));
        return;
    }

    ret = gpumem_topo_sysfs_dir_has_entries(path);
    if (ret == 0) {
        gpumem_topo_fact_set(fact, 0);
    } else if (ret > 0) {
        gpumem_topo_fact_unknown(fact, "%s has no IOMMU group though the "
                                 "machine has an IOMMU (%s: %s)", addr_str,
                                 link, strerror(ENOENT));
    } else {
        gpumem_topo_fact_unknown(fact, "cannot tell whether the machine of "
                                 "%s has an IOMMU: %s: %s", addr_str, path,
                                 strerror(errno));
    }
}

/* The group number at the end of an iommu_group link, or -1 */
static int gpumem_topo_sysfs_parse_group(const char *target)
{
    const char *name = strrchr(target, '/');
    long group       = 0;

    name = (name == NULL) ? target : (name + 1);
    if (*name == '\0') {
        return -1;
    }

    for (; *name != '\0'; ++name) {
        if ((*name < '0') || (*name > '9')) {
            return -1;
        }
        group = (group * 10) + (*name - '0');
        if (group > INT_MAX) {
            return -1;
        }
    }

    return (int)group;
}

void gpumem_topo_sysfs_iommu(const char *root, const gpumem_pci_addr_t *addr,
                             gpumem_topo_fact_t *fact, int *group_p)
{
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    char link[PATH_MAX];
    char target[PATH_MAX];
    char path[PATH_MAX];
    char type[64];
    ssize_t length;
    int err, group, ret;

    *group_p = -1;
    gpumem_pci_addr_str(addr, addr_str, sizeof(addr_str));

    err = gpumem_topo_sysfs_dev_path(root, addr, "iommu_group", link,
                                     sizeof(link));
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "cannot read the IOMMU group of %s: "
                                 "%s", addr_str, strerror(err));
        return;
    }

    length = readlink(link, target, sizeof(target) - 1);
    if (length < 0) {
        if (errno == ENOENT) {
            gpumem_topo_sysfs_iommu_no_group(root, addr, addr_str, link,
                                                 fact);
        } else {
            gpumem_topo_fact_unknown(fact, "cannot read the IOMMU group of "
                                     "%s: %s: %s", addr_str, link,
                                     strerror(errno));
        }
        return;
    }
    target[length] = '\0';

    group = gpumem_topo_sysfs_parse_group(target);
    if (group < 0) {
        gpumem_topo_fact_unknown(fact, "%s points to %s, not to an IOMMU "
                                 "group", link, target);
        return;
    }
    *group_p = group;

    ret = snprintf(path, sizeof(path), "%s/kernel/iommu_groups/%d/type", root,
                   group);
    err = ((ret < 0) || ((size_t)ret >= sizeof(path))) ? ENAMETOOLONG :
          gpumem_topo_sysfs_read_text(path, type, sizeof(type));
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "cannot read the type of IOMMU group "
                                 "%d of %s: %s: %s", group, addr_str, path,
                                 strerror(err));
        return;
    }

    type[strcspn(type, "\n")] = '\0';
    if (type[0] == '\0') {
        gpumem_topo_fact_unknown(fact, "the type of IOMMU group %d of %s is "
                                 "empty (%s)", group, addr_str, path);
        return;
    }

    /* Only an identity domain passes bus addresses through untranslated;
     * DMA, DMA-FQ, unmanaged (VFIO) and blocked domains all remap them */
    gpumem_topo_fact_set(fact, strcmp(type, "identity") != 0);
}

/* One line of "resource": "0x<start> 0x<end> 0x<flags>", as the kernel
 * writes it, nothing else */
static int gpumem_topo_sysfs_parse_resource(const char *line, uint64_t *start_p,
                                            uint64_t *end_p, uint64_t *flags_p)
{
    uint64_t *fields[] = {start_p, end_p, flags_p};
    const char *p      = line;
    unsigned i;

    for (i = 0; i < ucs_static_array_size(fields); ++i) {
        while ((*p == ' ') || (*p == '\t')) {
            ++p;
        }
        if (!gpumem_topo_sysfs_parse_hex(p, 16, fields[i], &p) ||
            ((*p != ' ') && (*p != '\t') && (*p != '\n') && (*p != '\0'))) {
            return 0;
        }
    }

    while ((*p == ' ') || (*p == '\t')) {
        ++p;
    }
    return (*p == '\n') || (*p == '\0');
}

void gpumem_topo_sysfs_bar_size(const char *root, const gpumem_pci_addr_t *addr,
                                gpumem_topo_fact_t *fact)
{
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    char text[GPUMEM_TOPO_SYSFS_TEXT_MAX];
    char path[PATH_MAX];
    uint64_t start, end, flags, size, largest;
    const char *line;
    unsigned bar;
    int err;

    gpumem_pci_addr_str(addr, addr_str, sizeof(addr_str));
    err = gpumem_topo_sysfs_dev_path(root, addr, "resource", path,
                                     sizeof(path));
    if (err == 0) {
        err = gpumem_topo_sysfs_read_text(path, text, sizeof(text));
    }
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "cannot read the BARs of %s: %s: %s",
                                 addr_str, path, strerror(err));
        return;
    }

    /* The kernel writes a line for every resource, BARs first, then the ROM
     * and a bridge's windows; fewer than the BARs is not its file */
    largest = 0;
    line    = text;
    for (bar = 0; bar < GPUMEM_TOPO_SYSFS_NUM_BARS; ++bar) {
        if (*line == '\0') {
            gpumem_topo_fact_unknown(fact, "%s ends before line %u, of BAR "
                                     "%u", path, bar + 1, bar);
            return;
        }

        if (!gpumem_topo_sysfs_parse_resource(line, &start, &end, &flags) ||
            (end < start) || ((end - start) == UINT64_MAX)) {
            gpumem_topo_fact_unknown(fact, "%s: line %u, of BAR %u, is not "
                                     "\"0x<start> 0x<end> 0x<flags>\"", path,
                                     bar + 1, bar);
            return;
        }

        /* An unused BAR reads as zeros; an I/O BAR is no window on memory */
        if (((start != 0) || (end != 0)) &&
            (flags & GPUMEM_TOPO_SYSFS_IORESOURCE_MEM)) {
            size    = end - start + 1;
            largest = (size > largest) ? size : largest;
        }

        line += strcspn(line, "\n");
        if (*line == '\n') {
            ++line;
        }
    }

    gpumem_topo_fact_set(fact, largest);
}

void gpumem_topo_sysfs_mem_size(const char *root, const gpumem_pci_addr_t *addr,
                                gpumem_topo_fact_t *fact)
{
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    char text[64];
    char path[PATH_MAX];
    uint64_t size;
    const char *p;
    int err;

    gpumem_pci_addr_str(addr, addr_str, sizeof(addr_str));
    err = gpumem_topo_sysfs_dev_path(root, addr, "mem_info_vram_total", path,
                                     sizeof(path));
    if (err == 0) {
        err = gpumem_topo_sysfs_read_text(path, text, sizeof(text));
    }
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "no GPU memory size in sysfs for %s "
                                 "(%s: %s)", addr_str, path, strerror(err));
        return;
    }

    size = 0;
    for (p = text; (*p >= '0') && (*p <= '9'); ++p) {
        if (size > ((UINT64_MAX - (uint64_t)(*p - '0')) / 10)) {
            break;
        }
        size = (size * 10) + (uint64_t)(*p - '0');
    }

    if ((p == text) || !gpumem_topo_sysfs_is_blank(p)) {
        gpumem_topo_fact_unknown(fact, "the GPU memory size of %s in %s is "
                                 "not a number of bytes", addr_str, path);
        return;
    }

    gpumem_topo_fact_set(fact, size);
}

/* A 16-bit ID attribute, "0x10de\n"; 0 with a reason in @a fact if not */
static int gpumem_topo_sysfs_read_id(const char *root,
                                     const gpumem_pci_addr_t *addr,
                                     const char *addr_str, const char *file,
                                     uint16_t *id_p, gpumem_topo_fact_t *fact)
{
    char text[64];
    char path[PATH_MAX];
    const char *end;
    uint64_t id;
    int err;

    err = gpumem_topo_sysfs_dev_path(root, addr, file, path, sizeof(path));
    if (err == 0) {
        err = gpumem_topo_sysfs_read_text(path, text, sizeof(text));
    }
    if (err != 0) {
        gpumem_topo_fact_unknown(fact, "cannot read the %s ID of %s: %s: %s",
                                 file, addr_str, path, strerror(err));
        return 0;
    }

    if (!gpumem_topo_sysfs_parse_hex(text, 4, &id, &end) ||
        !gpumem_topo_sysfs_is_blank(end)) {
        gpumem_topo_fact_unknown(fact, "the %s ID of %s in %s is not "
                                 "\"0x<hex>\"", file, addr_str, path);
        return 0;
    }

    *id_p = (uint16_t)id;
    return 1;
}

void gpumem_topo_sysfs_pci_id(const char *root, const gpumem_pci_addr_t *addr,
                              gpumem_topo_fact_t *fact)
{
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    uint16_t vendor, device;

    gpumem_pci_addr_str(addr, addr_str, sizeof(addr_str));
    if (!gpumem_topo_sysfs_read_id(root, addr, addr_str, "vendor", &vendor,
                                   fact) ||
        !gpumem_topo_sysfs_read_id(root, addr, addr_str, "device", &device,
                                   fact)) {
        return;
    }

    gpumem_topo_fact_set(fact, ((uint64_t)vendor << 16) | device);
}
