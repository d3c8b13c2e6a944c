/**
 * gpumem topology: fabrics of direct GPU links, from hwloc's distance
 * matrices.
 *
 * NVLink: two GPUs are joined by a direct link, or both link to NVSwitches
 * of the machine (one plane: the trunks between NVSwitch boards are not
 * listed in the matrix, as on DGX-2). Links to CPU packages (POWER's NVLink)
 * join nothing. XGMI: GPUs connected through the links of one hive reach
 * each other. Where the topology has no matrix for a GPU's vendor, its
 * fabric is unknown: a missing matrix is no proof of no fabric.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo_hwloc.h"

#include <ucs/sys/math.h>
#include <hwloc/distances.h>
#include <string.h>


#define GPUMEM_TOPO_VENDOR_NVIDIA 0x10de
#define GPUMEM_TOPO_VENDOR_AMD    0x1002


/* Index of the GPU an object of a matrix stands for, or -1 */
static int gpumem_topo_fabric_gpu(const gpumem_topo_t *topo, hwloc_obj_t obj)
{
    hwloc_obj_t pci = gpumem_topo_hwloc_pci_obj(obj);
    gpumem_pci_addr_t addr;
    unsigned i;

    if (pci == NULL) {
        return -1;
    }

    addr.domain = pci->attr->pcidev.domain;
    addr.bus    = pci->attr->pcidev.bus;
    addr.dev    = pci->attr->pcidev.dev;
    addr.fn     = pci->attr->pcidev.func;
    for (i = 0; i < topo->num_gpus; ++i) {
        if (gpumem_pci_addr_equal(&topo->devs[i].reach.addr, &addr)) {
            return i;
        }
    }
    return -1;
}

static int gpumem_topo_fabric_is_nvswitch(hwloc_obj_t obj)
{
    hwloc_obj_t pci = gpumem_topo_hwloc_pci_obj(obj);

    if ((obj->subtype != NULL) && !strcmp(obj->subtype, "NVSwitch")) {
        return 1;
    }
    /* NVIDIA bridge-class function that is not a GPU (class 0x0680) */
    return (pci != NULL) &&
           (pci->attr->pcidev.vendor_id == GPUMEM_TOPO_VENDOR_NVIDIA) &&
           (pci->attr->pcidev.class_id == 0x0680);
}

static void gpumem_topo_fabric_link(gpumem_topo_reach_t *reach,
                                    const gpumem_pci_addr_t *peer)
{
    unsigned i;

    for (i = 0; i < reach->num_links; ++i) {
        if (gpumem_pci_addr_equal(&reach->links[i], peer)) {
            return;
        }
    }
    if (reach->num_links < GPUMEM_TOPO_LINKS_MAX) {
        reach->links[reach->num_links++] = *peer;
    }
}

/* Marks every GPU of @a vendor as having known fabric facts */
static void gpumem_topo_fabric_known(gpumem_topo_t *topo, uint16_t vendor)
{
    unsigned i;

    for (i = 0; i < topo->num_gpus; ++i) {
        if ((topo->devs[i].vendor == vendor) &&
            (topo->devs[i].reach.fabric == GPUMEM_TOPO_FABRIC_UNKNOWN)) {
            topo->devs[i].reach.fabric = GPUMEM_TOPO_FABRIC_NONE;
        }
    }
}

/* Applies one matrix: direct links, and links to NVSwitches. In a hop
 * count matrix only one hop is a direct link. */
static void gpumem_topo_fabric_matrix(gpumem_topo_t *topo,
                                      const struct hwloc_distances_s *dist,
                                      gpumem_topo_fabric_t fabric,
                                      int is_hops)
{
    uint64_t value;

    gpumem_topo_reach_t *a, *b;
    unsigned i, j;
    int gi, gj;

    for (i = 0; i < dist->nbobjs; ++i) {
        gi = gpumem_topo_fabric_gpu(topo, dist->objs[i]);
        if (gi < 0) {
            continue;
        }
        a = &topo->devs[gi].reach;
        for (j = 0; j < dist->nbobjs; ++j) {
            value = dist->values[i * dist->nbobjs + j];
            if ((i == j) || (value == 0) || (is_hops && (value != 1))) {
                continue;
            }
            gj = gpumem_topo_fabric_gpu(topo, dist->objs[j]);
            if (gj >= 0) {
                b         = &topo->devs[gj].reach;
                a->fabric = fabric;
                gpumem_topo_fabric_link(a, &b->addr);
            } else if ((fabric == GPUMEM_TOPO_FABRIC_NVLINK) &&
                       gpumem_topo_fabric_is_nvswitch(dist->objs[j])) {
                a->fabric        = fabric;
                a->fabric_domain = 0;
            }
        }
    }
}

/* Numbers the XGMI hives: connected components of the links */
static void gpumem_topo_fabric_hives(gpumem_topo_t *topo)
{
    gpumem_topo_reach_t *a, *b;
    unsigned i, j, k;
    int changed;

    for (i = 0; i < topo->num_gpus; ++i) {
        a = &topo->devs[i].reach;
        if (a->fabric == GPUMEM_TOPO_FABRIC_XGMI) {
            a->fabric_domain = i;
        }
    }

    /* Smallest index of the component, spread along the links */
    do {
        changed = 0;
        for (i = 0; i < topo->num_gpus; ++i) {
            a = &topo->devs[i].reach;
            if (a->fabric != GPUMEM_TOPO_FABRIC_XGMI) {
                continue;
            }
            for (k = 0; k < a->num_links; ++k) {
                for (j = 0; j < topo->num_gpus; ++j) {
                    b = &topo->devs[j].reach;
                    if ((b->fabric == GPUMEM_TOPO_FABRIC_XGMI) &&
                        gpumem_pci_addr_equal(&a->links[k], &b->addr) &&
                        (b->fabric_domain != a->fabric_domain)) {
                        b->fabric_domain = a->fabric_domain =
                                ucs_min(a->fabric_domain, b->fabric_domain);
                        changed = 1;
                    }
                }
            }
        }
    } while (changed);
}

static void gpumem_topo_fabric_by_name(hwloc_topology_t hwloc,
                                       gpumem_topo_t *topo, const char *name,
                                       uint16_t vendor,
                                       gpumem_topo_fabric_t fabric,
                                       int is_hops)
{
    struct hwloc_distances_s *dists[4];
    unsigned i, count = ucs_static_array_size(dists);

    if ((hwloc_distances_get_by_name(hwloc, name, &count, dists, 0) != 0) ||
        (count == 0)) {
        return;
    }

    gpumem_topo_fabric_known(topo, vendor);
    count = ucs_min(count, (unsigned)ucs_static_array_size(dists));
    for (i = 0; i < count; ++i) {
        gpumem_topo_fabric_matrix(topo, dists[i], fabric, is_hops);
        hwloc_distances_release(hwloc, dists[i]);
    }
}

void gpumem_topo_fabric_read(hwloc_topology_t hwloc, gpumem_topo_t *topo)
{
    gpumem_topo_fabric_by_name(hwloc, topo, "NVLinkBandwidth",
                               GPUMEM_TOPO_VENDOR_NVIDIA,
                               GPUMEM_TOPO_FABRIC_NVLINK, 0);
    gpumem_topo_fabric_by_name(hwloc, topo, "XGMIBandwidth",
                               GPUMEM_TOPO_VENDOR_AMD,
                               GPUMEM_TOPO_FABRIC_XGMI, 0);
    gpumem_topo_fabric_by_name(hwloc, topo, "XGMIHops",
                               GPUMEM_TOPO_VENDOR_AMD,
                               GPUMEM_TOPO_FABRIC_XGMI, 1);
    gpumem_topo_fabric_hives(topo);
}
