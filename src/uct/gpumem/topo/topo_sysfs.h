/**
 * gpumem topology: facts read from sysfs, which hwloc does not carry.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TOPO_SYSFS_H_
#define GPUMEM_TOPO_SYSFS_H_

#include "topo.h"

BEGIN_C_DECLS

/**
 * ACS control register bits of a PCI function, from the extended capability
 * 0x000D of <root>/bus/pci/devices/<addr>/config. Known 0 if the function
 * has no ACS capability; unknown when the extended configuration space
 * cannot be read (unprivileged reads stop at 64 bytes).
 */
void gpumem_topo_sysfs_acs_ctrl(const char *root, const gpumem_pci_addr_t *addr,
                                gpumem_topo_fact_t *fact);

/**
 * Whether an IOMMU translates the function's requests: known 0 when its
 * group's type is "identity" or the machine has no IOMMU, 1 for a DMA
 * domain. @a group_p is the IOMMU group number, -1 if none or unknown.
 */
void gpumem_topo_sysfs_iommu(const char *root, const gpumem_pci_addr_t *addr,
                             gpumem_topo_fact_t *fact, int *group_p);

/* Size in bytes of the function's largest memory BAR, from its "resource" */
void gpumem_topo_sysfs_bar_size(const char *root, const gpumem_pci_addr_t *addr,
                                gpumem_topo_fact_t *fact);

/* GPU memory size in bytes where the driver exposes it (amdgpu's
 * mem_info_vram_total); unknown otherwise */
void gpumem_topo_sysfs_mem_size(const char *root, const gpumem_pci_addr_t *addr,
                                gpumem_topo_fact_t *fact);

/* vendor << 16 | device of a PCI function, from "vendor" and "device" */
void gpumem_topo_sysfs_pci_id(const char *root, const gpumem_pci_addr_t *addr,
                              gpumem_topo_fact_t *fact);

/* Fact helpers, shared by every source of facts */
void gpumem_topo_fact_set(gpumem_topo_fact_t *fact, uint64_t value);
void gpumem_topo_fact_unknown(gpumem_topo_fact_t *fact, const char *fmt, ...)
        UCS_F_PRINTF(2, 3);

END_C_DECLS

#endif
