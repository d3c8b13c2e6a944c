/**
 * gpumem topology: PCI addresses, and the names of relations, fabrics and
 * kinds of facts.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo.h"

#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>


ucs_status_t gpumem_pci_addr_parse(const char *str, gpumem_pci_addr_t *addr_p)
{
    unsigned domain = 0, bus, dev, fn;
    int end        = -1;

    /* Widths keep "0x" prefixes, signs and extra digits out */
    if (!isxdigit((unsigned char)str[0])) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((sscanf(str, "%4x:%2x:%2x.%1x%n", &domain, &bus, &dev, &fn,
                &end) != 4) ||
        (end < 0) || (str[end] != '\0')) {
        domain = 0;
        end    = -1;
        if ((sscanf(str, "%2x:%2x.%1x%n", &bus, &dev, &fn, &end) != 3) ||
            (end < 0) || (str[end] != '\0')) {
            return UCS_ERR_INVALID_PARAM;
        }
    }

    if ((domain > 0xffff) || (bus > 0xff) || (dev > 0x1f) || (fn > 7)) {
        return UCS_ERR_INVALID_PARAM;
    }

    addr_p->domain = domain;
    addr_p->bus    = bus;
    addr_p->dev    = dev;
    addr_p->fn     = fn;
    return UCS_OK;
}

const char *gpumem_pci_addr_str(const gpumem_pci_addr_t *addr, char *buf,
                                size_t max)
{
    snprintf(buf, max, "%04x:%02x:%02x.%x", addr->domain, addr->bus,
             addr->dev, addr->fn);
    return buf;
}

int gpumem_pci_addr_cmp(const gpumem_pci_addr_t *a, const gpumem_pci_addr_t *b)
{
    if (a->domain != b->domain) {
        return (a->domain < b->domain) ? -1 : 1;
    }
    if (a->bus != b->bus) {
        return (a->bus < b->bus) ? -1 : 1;
    }
    if (a->dev != b->dev) {
        return (a->dev < b->dev) ? -1 : 1;
    }
    if (a->fn != b->fn) {
        return (a->fn < b->fn) ? -1 : 1;
    }
    return 0;
}

int gpumem_pci_addr_equal(const gpumem_pci_addr_t *a,
                          const gpumem_pci_addr_t *b)
{
    return gpumem_pci_addr_cmp(a, b) == 0;
}

const char *gpumem_topo_relation_name(gpumem_topo_relation_t relation)
{
    static const char *names[] = {
        [GPUMEM_TOPO_REL_SAME_GPU]            = "same_gpu",
        [GPUMEM_TOPO_REL_SAME_SWITCH]         = "same_switch",
        [GPUMEM_TOPO_REL_HOST_BRIDGE]         = "host_bridge",
        [GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES] = "across_host_bridges",
        [GPUMEM_TOPO_REL_ACROSS_SOCKETS]      = "across_sockets",
        [GPUMEM_TOPO_REL_OTHER_MACHINE]       = "other_machine"
    };

    if ((unsigned)relation >= ucs_static_array_size(names)) {
        return "invalid";
    }
    return names[relation];
}

const char *gpumem_topo_fabric_name(gpumem_topo_fabric_t fabric)
{
    static const char *names[] = {
        [GPUMEM_TOPO_FABRIC_UNKNOWN] = "unknown",
        [GPUMEM_TOPO_FABRIC_NONE]    = "none",
        [GPUMEM_TOPO_FABRIC_NVLINK]  = "nvlink",
        [GPUMEM_TOPO_FABRIC_XGMI]    = "xgmi"
    };

    if ((unsigned)fabric >= ucs_static_array_size(names)) {
        return "invalid";
    }
    return names[fabric];
}

const char *gpumem_topo_fact_kinds_str(unsigned kinds, char *buf, size_t max)
{
    static const char *names[] = {
        "fabric links", "IOMMU", "BAR size", "memory size", "ACS",
        "host bridge ID", "CPU"
    };
    unsigned count = ucs_popcount(kinds & (GPUMEM_TOPO_FACT_LAST - 1));
    size_t len     = 0;
    unsigned i, n  = 0;
    int ret;

    UCS_STATIC_ASSERT(GPUMEM_TOPO_FACT_LAST ==
                      UCS_BIT(ucs_static_array_size(names)));

    if (max > 0) {
        buf[0] = '\0';
    }
    for (i = 0; (i < ucs_static_array_size(names)) && (len < max); ++i) {
        if (!(kinds & UCS_BIT(i))) {
            continue;
        }
        ret = snprintf(buf + len, max - len, "%s%s",
                       (n == 0) ? "" : (n + 1 == count) ? " and " : ", ",
                       names[i]);
        ++n;
        if (ret < 0) {
            break;
        }
        len += ret;
    }
    return buf;
}
