/**
 * gpumem emulated NVML: libnvidia-ml.so.1 over the emu driver's machine.
 *
 * What UCX's cuda transports ask NVML is the machine's shape: how many
 * GPUs, where each sits on PCI, and to whom its NVLinks go. The library
 * reads the topology the emulated libcuda.so.1 reads (the plugin's
 * settings UCX_GPUMEM_TOPO_XML, UCX_GPUMEM_SYSFS_ROOT and
 * UCX_GPUMEM_TOPO_FACTS, else the emu driver's built-in machine), so that
 * NVML's device i is CUDA's device i. An entry point it does not have
 * does not link: only what is below exists.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/* Both the versioned names and the first ones, which older programs (and
 * configure checks) link, are defined here */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <emu/machine/emu.h>
#include <uct/gpumem/topo/topo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A device handle: a GPU of the topology */
struct nvmlDevice_st {
    unsigned                index;
    const gpumem_topo_dev_t *dev;
};

static struct {
    pthread_mutex_t      lock;
    unsigned             refs;      /* nvmlInit calls not yet shut down */
    gpumem_topo_t        *topo;
    struct nvmlDevice_st *devices;
} gpumem_emu_nvml = {
    .lock = PTHREAD_MUTEX_INITIALIZER
};


static nvmlReturn_t gpumem_emu_nvml_open(void)
{
    unsigned i;

    if (gpumem_emu_topology_from_env(&gpumem_emu_nvml.topo) != UCS_OK) {
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }

    gpumem_emu_nvml.devices = calloc(gpumem_emu_nvml.topo->num_gpus + 1,
                                     sizeof(*gpumem_emu_nvml.devices));
    if (gpumem_emu_nvml.devices == NULL) {
        gpumem_topo_destroy(gpumem_emu_nvml.topo);
        return NVML_ERROR_MEMORY;
    }
    for (i = 0; i < gpumem_emu_nvml.topo->num_gpus; ++i) {
        gpumem_emu_nvml.devices[i].index = i;
        gpumem_emu_nvml.devices[i].dev   = &gpumem_emu_nvml.topo->devs[i];
    }
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlInitWithFlags(unsigned int flags)
{
    nvmlReturn_t ret = NVML_SUCCESS;

    (void)flags;
    pthread_mutex_lock(&gpumem_emu_nvml.lock);
    if (gpumem_emu_nvml.refs == 0) {
        ret = gpumem_emu_nvml_open();
    }
    if (ret == NVML_SUCCESS) {
        ++gpumem_emu_nvml.refs;
    }
    pthread_mutex_unlock(&gpumem_emu_nvml.lock);
    return ret;
}

nvmlReturn_t DECLDIR nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}


nvmlReturn_t DECLDIR nvmlShutdown(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;

    pthread_mutex_lock(&gpumem_emu_nvml.lock);
    if (gpumem_emu_nvml.refs == 0) {
        ret = NVML_ERROR_UNINITIALIZED;
    } else if (--gpumem_emu_nvml.refs == 0) {
        free(gpumem_emu_nvml.devices);
        gpumem_topo_destroy(gpumem_emu_nvml.topo);
        gpumem_emu_nvml.devices = NULL;
        gpumem_emu_nvml.topo    = NULL;
    }
    pthread_mutex_unlock(&gpumem_emu_nvml.lock);
    return ret;
}

/* What the calls below check first: initialized, and a handle of ours */
static nvmlReturn_t gpumem_emu_nvml_check(nvmlDevice_t device)
{
    unsigned refs;

    pthread_mutex_lock(&gpumem_emu_nvml.lock);
    refs = gpumem_emu_nvml.refs;
    pthread_mutex_unlock(&gpumem_emu_nvml.lock);
    if (refs == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if ((device != NULL) &&
        ((device < gpumem_emu_nvml.devices) ||
         (device >= gpumem_emu_nvml.devices +
                    gpumem_emu_nvml.topo->num_gpus))) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetCount_v2(unsigned int *count)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(NULL);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if (count == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *count = gpumem_emu_nvml.topo->num_gpus;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                   nvmlDevice_t *device)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(NULL);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if ((device == NULL) || (index >= gpumem_emu_nvml.topo->num_gpus)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = &gpumem_emu_nvml.devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id,
                                                      nvmlDevice_t *device)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(NULL);
    unsigned i, domain, bus, dev, fn;
    gpumem_pci_addr_t addr;
    char end;

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    /* NVML's form (domain of 8 digits) and the legacy one (4) */
    if ((bus_id == NULL) || (device == NULL) ||
        (sscanf(bus_id, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &end) !=
         4) || (domain > 0xffff) || (bus > 0xff) || (dev > 0x1f) ||
        (fn > 7)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    addr.domain = domain;
    addr.bus    = bus;
    addr.dev    = dev;
    addr.fn     = fn;
    for (i = 0; i < gpumem_emu_nvml.topo->num_gpus; ++i) {
        if (gpumem_pci_addr_equal(&gpumem_emu_nvml.devices[i].dev->reach.addr,
                                  &addr)) {
            *device = &gpumem_emu_nvml.devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t DECLDIR nvmlDeviceGetIndex(nvmlDevice_t device,
                                        unsigned int *index)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(device);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if ((device == NULL) || (index == NULL)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *index = device->index;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetName(nvmlDevice_t device, char *name,
                                       unsigned int length)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(device);
    int needed;

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if ((device == NULL) || (name == NULL)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    needed = snprintf(name, length, "gpumem emulated GPU %u", device->index);
    return ((unsigned)needed >= length) ? NVML_ERROR_INSUFFICIENT_SIZE :
                                          NVML_SUCCESS;
}

/* The BAR the topology gives the GPU (the emu writes it into the facts of
 * its machine): all of it free, as NVML tells of a GPU whose BAR no
 * process maps; NVML_ERROR_NOT_SUPPORTED where the topology has no size */
nvmlReturn_t DECLDIR nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device,
                                                 nvmlBAR1Memory_t *bar1Memory)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(device);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if ((device == NULL) || (bar1Memory == NULL)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!device->dev->reach.bar_size.known) {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    bar1Memory->bar1Total = device->dev->reach.bar_size.value;
    bar1Memory->bar1Free  = bar1Memory->bar1Total;
    bar1Memory->bar1Used  = 0;
    return NVML_SUCCESS;
}

static void gpumem_emu_nvml_pci_info(const gpumem_pci_addr_t *addr,
                                     uint16_t vendor, uint16_t device_id,
                                     nvmlPciInfo_t *pci)
{
    memset(pci, 0, sizeof(*pci));
    pci->domain      = addr->domain;
    pci->bus         = addr->bus;
    pci->device      = addr->dev;
    pci->pciDeviceId = ((unsigned)device_id << 16) | vendor;
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.%x",
             addr->domain, addr->bus, addr->dev, addr->fn);
    snprintf(pci->busId, sizeof(pci->busId), "%08x:%02x:%02x.%x",
             addr->domain, addr->bus, addr->dev, addr->fn);
}

nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
                                             nvmlPciInfo_t *pci)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(device);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if ((device == NULL) || (pci == NULL)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    gpumem_emu_nvml_pci_info(&device->dev->reach.addr, device->dev->vendor,
                             device->dev->device, pci);
    return NVML_SUCCESS;
}

/* The NVLinks of @a device: those of the topology's NVLink matrix */
static unsigned gpumem_emu_nvml_num_links(nvmlDevice_t device)
{
    return (device->dev->reach.fabric == GPUMEM_TOPO_FABRIC_NVLINK) ?
           device->dev->reach.num_links : 0;
}

static nvmlReturn_t gpumem_emu_nvml_check_link(nvmlDevice_t device,
                                               unsigned link)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(device);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if (device == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (gpumem_emu_nvml_num_links(device) == 0) {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return (link < gpumem_emu_nvml_num_links(device)) ?
           NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkState(nvmlDevice_t device,
                                              unsigned int link,
                                              nvmlEnableState_t *is_active)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check_link(device, link);

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if (is_active == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *is_active = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                         unsigned int link,
                                                         nvmlPciInfo_t *pci)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check_link(device, link);
    const gpumem_pci_addr_t *remote;
    const gpumem_topo_dev_t *peer;

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if (pci == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    remote = &device->dev->reach.links[link];
    peer   = gpumem_topo_find(gpumem_emu_nvml.topo, remote);
    gpumem_emu_nvml_pci_info(remote, (peer != NULL) ? peer->vendor : 0x10de,
                             (peer != NULL) ? peer->device : 0, pci);
    return NVML_SUCCESS;
}

/* Of the fields, the NVLink count; each other one is not supported */
nvmlReturn_t DECLDIR nvmlDeviceGetFieldValues(nvmlDevice_t device,
                                              int count,
                                              nvmlFieldValue_t *values)
{
    nvmlReturn_t ret = gpumem_emu_nvml_check(device);
    int i;

    if (ret != NVML_SUCCESS) {
        return ret;
    }
    if ((device == NULL) || (count < 0) || ((count > 0) && (values == NULL))) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (i = 0; i < count; ++i) {
        if (values[i].fieldId == NVML_FI_DEV_NVLINK_LINK_COUNT) {
            values[i].valueType   = NVML_VALUE_TYPE_UNSIGNED_INT;
            values[i].value.uiVal = gpumem_emu_nvml_num_links(device);
            values[i].nvmlReturn  = NVML_SUCCESS;
        } else {
            values[i].nvmlReturn  = NVML_ERROR_NOT_SUPPORTED;
        }
        values[i].latencyUsec = 0;
        values[i].timestamp   = 0;
    }
    return NVML_SUCCESS;
}

const DECLDIR char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS:                  return "Success";
    case NVML_ERROR_UNINITIALIZED:      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:   return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:      return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE:  return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:  return "Driver Not Loaded";
    case NVML_ERROR_NOT_FOUND:          return "Not Found";
    case NVML_ERROR_MEMORY:             return "Insufficient Memory";
    default:                            return "Unknown Error";
    }
}

/* The first versions of the calls above, of the same arguments */
nvmlReturn_t DECLDIR nvmlInit(void)
        __attribute__((alias("nvmlInit_v2")));
nvmlReturn_t DECLDIR nvmlDeviceGetCount(unsigned int *count)
        __attribute__((alias("nvmlDeviceGetCount_v2")));
nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex(unsigned int index,
                                                nvmlDevice_t *device)
        __attribute__((alias("nvmlDeviceGetHandleByIndex_v2")));
nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo(nvmlDevice_t device,
                                          nvmlPciInfo_t *pci)
        __attribute__((alias("nvmlDeviceGetPciInfo_v3")));
nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v2(nvmlDevice_t device,
                                             nvmlPciInfo_t *pci)
        __attribute__((alias("nvmlDeviceGetPciInfo_v3")));
nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device,
                                                      unsigned int link,
                                                      nvmlPciInfo_t *pci)
        __attribute__((alias("nvmlDeviceGetNvLinkRemotePciInfo_v2")));
