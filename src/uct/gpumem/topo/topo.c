/**
 * gpumem topology: loading the machine's facts and looking devices up.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo.h"
#include "topo_facts.h"
#include "topo_hwloc.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Two devices at one PCI address would share one GPU's state and memory:
 * not a machine (the devices read, before any is used) */
static ucs_status_t gpumem_topo_check_unique(gpumem_topo_t *topo,
                                             const char *xml_path)
{
    char name[GPUMEM_TOPO_PCI_STR_MAX];
    unsigned i, j;

    for (i = 0; i < topo->num_devs; ++i) {
        for (j = 0; j < i; ++j) {
            if (gpumem_pci_addr_equal(&topo->devs[i].reach.addr,
                                      &topo->devs[j].reach.addr)) {
                ucs_error("gpumem: the topology of %s has two devices at PCI "
                          "address %s (%s and %s): not a machine",
                          (xml_path != NULL) ? xml_path : "this machine",
                          gpumem_pci_addr_str(&topo->devs[i].reach.addr,
                                              name, sizeof(name)),
                          topo->devs[j].name, topo->devs[i].name);
                ucs_free(topo->devs);
                topo->devs     = NULL;
                topo->num_devs = 0;
                return UCS_ERR_INVALID_PARAM;
            }
        }
    }
    return UCS_OK;
}

ucs_status_t gpumem_topo_load(const gpumem_topo_params_t *params,
                              gpumem_topo_t **topo_p)
{
    const char *sysfs_root = (params->sysfs_root != NULL) ?
                             params->sysfs_root : "/sys";
    hwloc_topology_t hwloc;
    gpumem_topo_t *topo;
    ucs_status_t status;

    topo = ucs_calloc(1, sizeof(*topo), "gpumem_topo");
    if (topo == NULL) {
        ucs_error("gpumem: failed to allocate the topology");
        return UCS_ERR_NO_MEMORY;
    }

    status = gpumem_topo_hwloc_open(params->xml_path, params->xml_buffer,
                                    &hwloc);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = gpumem_topo_hwloc_read(hwloc,
                                    (params->xml_path != NULL) ||
                                    (params->xml_buffer != NULL),
                                    sysfs_root, topo);
    if (status == UCS_OK) {
        status = gpumem_topo_check_unique(topo, params->xml_path);
    }
    if (status == UCS_OK) {
        gpumem_topo_fabric_read(hwloc, topo);
    }
    hwloc_topology_destroy(hwloc);
    if (status != UCS_OK) {
        goto err_free;
    }

    if (params->facts_path != NULL) {
        status = gpumem_topo_facts_apply(topo, params->facts_path);
        if (status != UCS_OK) {
            goto err_destroy;
        }
    }

    ucs_debug("gpumem: topology of %s: %u GPUs, %u RDMA NICs",
              (params->xml_path != NULL) ? params->xml_path :
              (params->xml_buffer != NULL) ? "an XML document" : "this machine",
              topo->num_gpus, topo->num_nics);
    *topo_p = topo;
    return UCS_OK;

err_destroy:
    gpumem_topo_destroy(topo);
    return status;
err_free:
    ucs_free(topo);
    return status;
}

void gpumem_topo_destroy(gpumem_topo_t *topo)
{
    ucs_free(topo->devs);
    ucs_free(topo);
}

const gpumem_topo_dev_t *
gpumem_topo_find(const gpumem_topo_t *topo, const gpumem_pci_addr_t *addr)
{
    unsigned i;

    for (i = 0; i < topo->num_devs; ++i) {
        if (gpumem_pci_addr_equal(&topo->devs[i].reach.addr, addr)) {
            return &topo->devs[i];
        }
    }
    return NULL;
}

const gpumem_topo_dev_t *
gpumem_topo_find_by_name(const gpumem_topo_t *topo, const char *name)
{
    gpumem_pci_addr_t addr;
    unsigned i;

    for (i = 0; i < topo->num_devs; ++i) {
        if (!strcmp(topo->devs[i].name, name)) {
            return &topo->devs[i];
        }
    }

    if (gpumem_pci_addr_parse(name, &addr) == UCS_OK) {
        return gpumem_topo_find(topo, &addr);
    }
    return NULL;
}
