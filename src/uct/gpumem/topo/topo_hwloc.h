/**
 * gpumem topology: the machine's GPUs and RDMA NICs as hwloc sees them.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TOPO_HWLOC_H_
#define GPUMEM_TOPO_HWLOC_H_

#include "topo.h"

#include <hwloc.h>

BEGIN_C_DECLS

/**
 * Load hwloc's topology (XML export or live machine) with every I/O object
 * kept. A missing or malformed XML is an error with a logged reason.
 */
ucs_status_t gpumem_topo_hwloc_open(const char *xml_path,
                                    const char *xml_buffer,
                                    hwloc_topology_t *hwloc_p);

/**
 * Fill @a topo with the GPUs and RDMA NICs of @a hwloc, their PCI paths,
 * host bridges and CPU facts, reading what hwloc lacks under @a sysfs_root.
 */
ucs_status_t gpumem_topo_hwloc_read(hwloc_topology_t hwloc, int is_xml,
                                    const char *sysfs_root,
                                    gpumem_topo_t *topo);

/* The PCI function an I/O object is or belongs to, or NULL */
hwloc_obj_t gpumem_topo_hwloc_pci_obj(hwloc_obj_t obj);

/**
 * Fill the fabric facts of @a topo's GPUs from hwloc's NVLinkBandwidth and
 * XGMIBandwidth/XGMIHops distance matrices.
 */
void gpumem_topo_fabric_read(hwloc_topology_t hwloc, gpumem_topo_t *topo);

END_C_DECLS

#endif
