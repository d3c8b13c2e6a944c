/**
 * gpumem topology: the machine's GPUs and RDMA NICs as hwloc sees them, with
 * the sysfs facts hwloc does not carry.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo_hwloc.h"
#include "topo_file.h"
#include "topo_sysfs.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#define GPUMEM_TOPO_CLASS_DISPLAY     0x03
#define GPUMEM_TOPO_CLASS_ACCELERATOR 0x12  /* "processing accelerator" */
#define GPUMEM_TOPO_CLASS_ETHERNET    0x0200
#define GPUMEM_TOPO_CLASS_INFINIBAND  0x0207

#define GPUMEM_TOPO_PORT_ACTIVE       4  /* IBV_PORT_ACTIVE */

/* Vendors whose every Ethernet adapter does RDMA (RoCE, iWARP, EFA) */
static const uint16_t gpumem_topo_rdma_ethernet_vendors[] = {
    0x15b3,  /* Mellanox, NVIDIA: ConnectX, BlueField */
    0x1425,  /* Chelsio: iWARP */
    0x1d0f   /* Amazon: EFA */
};


/* What an XML document may be before hwloc parses it: hwloc's own parser
 * recurses per element, so depth overflows its stack; real machines' exports
 * are a few MiB and some 20 levels deep */
#define GPUMEM_TOPO_XML_MAX_SIZE   (64ul << 20)
#define GPUMEM_TOPO_XML_MAX_DEPTH  256


/* Preferred OS device names of a GPU, best first */
static const char *gpumem_topo_gpu_osdev_prefixes[] = {
    "cuda", "rsmi", "nvml", "ze", "opencl"
};


/* How deep the elements of an XML document nest, at most @a max: a scan of
 * the markup that needs no parser (comments, declarations and
 * processing instructions open nothing; "/>" closes what it opened) */
static int gpumem_topo_xml_depth_ok(const char *doc, unsigned max)
{
    unsigned depth = 0;
    const char *p;

    for (p = doc; *p != '\0'; ++p) {
        if (*p == '<') {
            if (p[1] == '/') {
                depth -= (depth > 0);
            } else if ((p[1] != '?') && (p[1] != '!') && (++depth > max)) {
                return 0;
            }
        } else if ((*p == '/') && (p[1] == '>')) {
            depth -= (depth > 0);
        }
    }
    return 1;
}

/* The document in hwloc's hands (set, loaded): 0 if hwloc refuses it */
static int gpumem_topo_hwloc_parse(hwloc_topology_t hwloc, const char *doc)
{
    hwloc_topology_set_io_types_filter(hwloc, HWLOC_TYPE_FILTER_KEEP_ALL);
    return (hwloc_topology_set_xmlbuffer(hwloc, doc, strlen(doc) + 1) == 0) &&
           (hwloc_topology_load(hwloc) == 0);
}

/*
 * hwloc (2.9) crashes on some malformed documents, such as an object with
 * a cpuset and no complete_cpuset: a child process parses a file it is
 * given first, so that hwloc's crash is a refusal of the file and not this
 * process's death. A refusal without a crash is left to the real parse,
 * which says it.
 */
static ucs_status_t gpumem_topo_hwloc_try_in_child(const char *doc,
                                                   const char *path)
{
    hwloc_topology_t hwloc;
    int status = 0;
    pid_t pid;

    pid = fork();
    if (pid < 0) {
        /* No child to try in: the parse goes on in this process */
        ucs_debug("gpumem: fork to try topology XML %s: %s", path,
                  strerror(errno));
        return UCS_OK;
    }

    if (pid == 0) {
        /* A crash ends the child by its signal, whatever handler UCX or a
         * sanitizer installed in the process */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        _exit(((hwloc_topology_init(&hwloc) == 0) &&
               gpumem_topo_hwloc_parse(hwloc, doc)) ? 0 : 1);
    }

    /* Reaped by another (a SIGCHLD handler of the application): unknown */
    while ((waitpid(pid, &status, 0) < 0) && (errno == EINTR)) {
    }
    if (WIFSIGNALED(status)) {
        ucs_error("gpumem: hwloc crashes (%s) on topology XML %s: not a "
                  "machine's export", strsignal(WTERMSIG(status)), path);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* The document hwloc is to parse: @a xml_buffer, or the file @a xml_path
 * read whole (allocated in @a read_p), both within the bounds */
static ucs_status_t gpumem_topo_hwloc_document(const char *xml_path,
                                               const char *xml_buffer,
                                               char **read_p,
                                               const char **doc_p)
{
    const char *name = (xml_path != NULL) ? xml_path : "document";
    ucs_status_t status;
    size_t length;

    *read_p = NULL;
    if (xml_path != NULL) {
        status = gpumem_topo_file_read(xml_path, "topology XML",
                                       GPUMEM_TOPO_XML_MAX_SIZE, read_p,
                                       &length);
        if (status != UCS_OK) {
            return status;
        }
        xml_buffer = *read_p;
    }

    if (!gpumem_topo_xml_depth_ok(xml_buffer, GPUMEM_TOPO_XML_MAX_DEPTH)) {
        ucs_error("gpumem: topology XML %s nests elements more than %d deep: "
                  "not a machine's export", name, GPUMEM_TOPO_XML_MAX_DEPTH);
        status = UCS_ERR_INVALID_PARAM;
        goto err_free;
    }

    /* A file the user gave may be anything; a built-in document is not */
    if (xml_path != NULL) {
        status = gpumem_topo_hwloc_try_in_child(xml_buffer, xml_path);
        if (status != UCS_OK) {
            goto err_free;
        }
    }

    *doc_p = xml_buffer;
    return UCS_OK;

err_free:
    ucs_free(*read_p);
    *read_p = NULL;
    return status;
}

ucs_status_t gpumem_topo_hwloc_open(const char *xml_path,
                                    const char *xml_buffer,
                                    hwloc_topology_t *hwloc_p)
{
    const char *doc = NULL;
    hwloc_topology_t hwloc;
    ucs_status_t status;
    char *read = NULL;

    if ((xml_path != NULL) || (xml_buffer != NULL)) {
        status = gpumem_topo_hwloc_document(xml_path, xml_buffer, &read,
                                            &doc);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (hwloc_topology_init(&hwloc) != 0) {
        ucs_error("gpumem: hwloc_topology_init failed: %s", strerror(errno));
        ucs_free(read);
        return UCS_ERR_NO_MEMORY;
    }

    /* Without it no PCI device appears, even from XML */
    hwloc_topology_set_io_types_filter(hwloc, HWLOC_TYPE_FILTER_KEEP_ALL);

    if ((doc != NULL) &&
        (hwloc_topology_set_xmlbuffer(hwloc, doc, strlen(doc) + 1) != 0)) {
        ucs_error("gpumem: hwloc cannot use topology XML %s: %s",
                  (xml_path != NULL) ? xml_path : "document",
                  strerror(errno));
        goto err_destroy;
    }

    if (hwloc_topology_load(hwloc) != 0) {
        ucs_error("gpumem: hwloc cannot load the topology of %s: %s",
                  (xml_path != NULL) ? xml_path :
                  (xml_buffer != NULL) ? "an XML document" : "this machine",
                  (errno != 0) ? strerror(errno) : "malformed input");
        goto err_destroy;
    }

    /* hwloc keeps no pointer into the document once loaded */
    ucs_free(read);
    *hwloc_p = hwloc;
    return UCS_OK;

err_destroy:
    hwloc_topology_destroy(hwloc);
    ucs_free(read);
    return UCS_ERR_INVALID_PARAM;
}

hwloc_obj_t gpumem_topo_hwloc_pci_obj(hwloc_obj_t obj)
{
    while ((obj != NULL) && (obj->type == HWLOC_OBJ_OS_DEVICE)) {
        obj = obj->parent;
    }
    return ((obj != NULL) && (obj->type == HWLOC_OBJ_PCI_DEVICE)) ? obj : NULL;
}

static void gpumem_topo_hwloc_addr(const struct hwloc_pcidev_attr_s *pci,
                                   gpumem_pci_addr_t *addr)
{
    addr->domain = pci->domain;
    addr->bus    = pci->bus;
    addr->dev    = pci->dev;
    addr->fn     = pci->func;
}

static int gpumem_topo_hwloc_is_gpu(hwloc_obj_t pci)
{
    unsigned base_class = pci->attr->pcidev.class_id >> 8;
    unsigned vendor     = pci->attr->pcidev.vendor_id;

    if (base_class == GPUMEM_TOPO_CLASS_ACCELERATOR) {
        return 1;
    }
    return (base_class == GPUMEM_TOPO_CLASS_DISPLAY) &&
           ((vendor == 0x10de) || (vendor == 0x1002) || (vendor == 0x8086));
}

/* The RDMA OS device of a PCI function (verbs, or Slingshot), or NULL */
static hwloc_obj_t gpumem_topo_hwloc_rdma_osdev(hwloc_obj_t pci)
{
    hwloc_obj_t child;

    for (child = pci->io_first_child; child != NULL;
         child = child->next_sibling) {
        if ((child->type == HWLOC_OBJ_OS_DEVICE) &&
            ((child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) ||
             ((child->subtype != NULL) &&
              !strcmp(child->subtype, "Slingshot")))) {
            return child;
        }
    }
    return NULL;
}

/*
 * A PCI function that is an RDMA adapter by what it is, for an export that
 * has no RDMA OS device of it (read where its driver was not loaded, or
 * kept without OS devices): an InfiniBand controller, or an Ethernet
 * controller of a vendor whose adapters all do RDMA. Named by its PCI
 * address.
 */
static int gpumem_topo_hwloc_is_rdma_function(hwloc_obj_t pci)
{
    unsigned class_id = pci->attr->pcidev.class_id;
    unsigned i;

    if (class_id == GPUMEM_TOPO_CLASS_INFINIBAND) {
        return 1;
    }

    if (class_id != GPUMEM_TOPO_CLASS_ETHERNET) {
        return 0;
    }

    for (i = 0; i < ucs_static_array_size(gpumem_topo_rdma_ethernet_vendors);
         ++i) {
        if (pci->attr->pcidev.vendor_id ==
            gpumem_topo_rdma_ethernet_vendors[i]) {
            return 1;
        }
    }
    return 0;
}

/*
 * The RDMA port of a NIC's OS device, from hwloc's "Port<N>State" infos
 * (the ibv_port_state of each port of an OpenFabrics device): its first
 * active port, else its first port. UCX names a device by it (mlx5_0:1).
 */
static void gpumem_topo_hwloc_port(hwloc_obj_t osdev, gpumem_topo_dev_t *dev)
{
    const struct hwloc_info_s *info;
    unsigned i, port, state;
    char rest[8];
    int active;

    for (i = 0; i < osdev->infos_count; ++i) {
        info = &osdev->infos[i];
        if ((sscanf(info->name, "Port%u%7s", &port, rest) != 2) ||
            strcmp(rest, "State") || (port == 0) ||
            (sscanf(info->value, "%u", &state) != 1)) {
            continue;
        }

        active = (state == GPUMEM_TOPO_PORT_ACTIVE);
        if ((active > dev->port_active) ||
            ((active == dev->port_active) && (port < dev->port))) {
            dev->port        = port;
            dev->port_active = active;
        }
    }
}

static void gpumem_topo_hwloc_gpu_name(hwloc_obj_t pci, char *name,
                                       size_t max)
{
    hwloc_obj_t child;
    unsigned i;

    for (i = 0; i < ucs_static_array_size(gpumem_topo_gpu_osdev_prefixes);
         ++i) {
        for (child = pci->io_first_child; child != NULL;
             child = child->next_sibling) {
            if ((child->type == HWLOC_OBJ_OS_DEVICE) &&
                (child->name != NULL) &&
                !strncmp(child->name, gpumem_topo_gpu_osdev_prefixes[i],
                         strlen(gpumem_topo_gpu_osdev_prefixes[i]))) {
                ucs_strncpy_zero(name, child->name, max);
                return;
            }
        }
    }
}

/* GPU memory size from the OS devices' info (kB), else from sysfs */
static void gpumem_topo_hwloc_mem_size(hwloc_obj_t pci, const char *sysfs_root,
                                       gpumem_topo_reach_t *reach)
{
    static const char *names[] = {
        "CUDAGlobalMemorySize", "OpenCLGlobalMemorySize"
    };
    hwloc_obj_t child;
    const char *value;
    unsigned i;

    for (i = 0; i < ucs_static_array_size(names); ++i) {
        for (child = pci->io_first_child; child != NULL;
             child = child->next_sibling) {
            value = hwloc_obj_get_info_by_name(child, names[i]);
            if (value != NULL) {
                gpumem_topo_fact_set(&reach->mem_size,
                                     strtoull(value, NULL, 10) * 1024);
                return;
            }
        }
    }

    gpumem_topo_sysfs_mem_size(sysfs_root, &reach->addr, &reach->mem_size);
}

/* The PCI function (device or bridge) at an address, or NULL */
static hwloc_obj_t gpumem_topo_hwloc_find_function(hwloc_topology_t hwloc,
                                                   const gpumem_pci_addr_t *addr,
                                                   uint16_t *vendor_p,
                                                   uint16_t *device_p)
{
    const struct hwloc_pcidev_attr_s *pci;
    gpumem_pci_addr_t obj_addr;
    hwloc_obj_t obj = NULL;

    while ((obj = hwloc_get_next_pcidev(hwloc, obj)) != NULL) {
        pci = &obj->attr->pcidev;
        gpumem_topo_hwloc_addr(pci, &obj_addr);
        if (gpumem_pci_addr_equal(&obj_addr, addr)) {
            *vendor_p = pci->vendor_id;
            *device_p = pci->device_id;
            return obj;
        }
    }

    while ((obj = hwloc_get_next_bridge(hwloc, obj)) != NULL) {
        if (obj->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI) {
            continue;
        }
        pci = &obj->attr->bridge.upstream.pci;
        gpumem_topo_hwloc_addr(pci, &obj_addr);
        if (gpumem_pci_addr_equal(&obj_addr, addr)) {
            *vendor_p = pci->vendor_id;
            *device_p = pci->device_id;
            return obj;
        }
    }
    return NULL;
}

/*
 * The host bridge's identity, as Linux's p2pdma takes it: the function at
 * 00.0 of the root bus, from hwloc or else sysfs. On the live machine, where
 * hwloc keeps every function, a root bus without 00.0 has its first root
 * port as the host bridge's face.
 */
static void gpumem_topo_hwloc_host_bridge_id(hwloc_topology_t hwloc,
                                             int is_xml,
                                             const char *sysfs_root,
                                             const gpumem_topo_reach_t *path_of,
                                             gpumem_topo_fact_t *fact)
{
    gpumem_pci_addr_t addr = {path_of->hb_domain, path_of->hb_bus, 0, 0};
    char addr_str[GPUMEM_TOPO_PCI_STR_MAX];
    char sysfs_why[GPUMEM_TOPO_WHY_MAX];
    uint16_t vendor, device;
    const gpumem_topo_hop_t *root_port;

    if (gpumem_topo_hwloc_find_function(hwloc, &addr, &vendor, &device)) {
        gpumem_topo_fact_set(fact, ((uint64_t)vendor << 16) | device);
        return;
    }

    gpumem_topo_sysfs_pci_id(sysfs_root, &addr, fact);
    if (fact->known) {
        return;
    }

    if (!is_xml && (path_of->path_len > 0)) {
        root_port = &path_of->path[path_of->path_len - 1];
        if ((root_port->addr.bus == path_of->hb_bus) &&
            gpumem_topo_hwloc_find_function(hwloc, &root_port->addr, &vendor,
                                            &device)) {
            gpumem_topo_fact_set(fact, ((uint64_t)vendor << 16) | device);
            return;
        }
    }

    ucs_strncpy_zero(sysfs_why, fact->why, sizeof(sysfs_why));
    gpumem_topo_fact_unknown(fact, "its function %s is not in the topology, "
                             "and %s",
                             gpumem_pci_addr_str(&addr, addr_str,
                                                 sizeof(addr_str)),
                             sysfs_why);
}

/* PCI bridges from the function up to its root port, and the host bridge */
static ucs_status_t gpumem_topo_hwloc_path(hwloc_obj_t pci,
                                           const char *sysfs_root,
                                           gpumem_topo_reach_t *reach)
{
    char addr[GPUMEM_TOPO_PCI_STR_MAX];
    gpumem_topo_hop_t *hop;
    hwloc_obj_t obj;

    reach->path_len  = 0;
    reach->hb_domain = reach->addr.domain;
    reach->hb_bus    = reach->addr.bus;

    for (obj = pci->parent; (obj != NULL) && (obj->type == HWLOC_OBJ_BRIDGE);
         obj = obj->parent) {
        if (obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
            reach->hb_domain = obj->attr->bridge.downstream.pci.domain;
            reach->hb_bus    = obj->attr->bridge.downstream.pci.secondary_bus;
            return UCS_OK;
        }

        if (reach->path_len == GPUMEM_TOPO_PATH_MAX) {
            ucs_error("gpumem: %s is more than %d PCI bridges below its host "
                      "bridge",
                      gpumem_pci_addr_str(&reach->addr, addr, sizeof(addr)),
                      GPUMEM_TOPO_PATH_MAX);
            return UCS_ERR_UNSUPPORTED;
        }

        hop = &reach->path[reach->path_len++];
        gpumem_topo_hwloc_addr(&obj->attr->bridge.upstream.pci, &hop->addr);
        gpumem_topo_sysfs_acs_ctrl(sysfs_root, &hop->addr, &hop->acs_ctrl);
        reach->hb_bus = hop->addr.bus;
    }

    /* No host bridge object: the root bus is the top bridge's bus */
    return UCS_OK;
}

/* CPU vendor and family of the package above the device */
static void gpumem_topo_hwloc_cpu(hwloc_topology_t hwloc, hwloc_obj_t pci,
                                  gpumem_topo_dev_t *dev)
{
    gpumem_topo_reach_t *reach = &dev->reach;
    hwloc_obj_t ancestor, package, root;
    const char *vendor, *family, *arch;

    ancestor = hwloc_get_non_io_ancestor_obj(hwloc, pci);
    package  = hwloc_get_ancestor_obj_by_type(hwloc, HWLOC_OBJ_PACKAGE,
                                              ancestor);
    if ((package == NULL) && (ancestor != NULL) &&
        (ancestor->type == HWLOC_OBJ_PACKAGE)) {
        package = ancestor;
    }

    reach->package = (package != NULL) ? (int)package->os_index : -1;
    dev->numa_node = ((ancestor != NULL) && (ancestor->nodeset != NULL) &&
                      (hwloc_bitmap_weight(ancestor->nodeset) == 1)) ?
                     hwloc_bitmap_first(ancestor->nodeset) : -1;

    root   = hwloc_get_root_obj(hwloc);
    vendor = (package != NULL) ?
             hwloc_obj_get_info_by_name(package, "CPUVendor") : NULL;
    family = (package != NULL) ?
             hwloc_obj_get_info_by_name(package, "CPUFamilyNumber") : NULL;
    if (vendor == NULL) {
        /* Any package's will do: one machine has one CPU vendor */
        package = hwloc_get_obj_by_type(hwloc, HWLOC_OBJ_PACKAGE, 0);
        if (package != NULL) {
            vendor = hwloc_obj_get_info_by_name(package, "CPUVendor");
            family = hwloc_obj_get_info_by_name(package, "CPUFamilyNumber");
        }
    }

    arch = hwloc_obj_get_info_by_name(root, "Architecture");
    if ((vendor == NULL) && (arch != NULL) && strcmp(arch, "x86_64") &&
        strncmp(arch, "i686", 4)) {
        /* Not x86: the architecture names the CPU well enough */
        vendor = arch;
    }

    ucs_strncpy_zero(reach->cpu_vendor, (vendor != NULL) ? vendor : "",
                     sizeof(reach->cpu_vendor));
    if (family != NULL) {
        gpumem_topo_fact_set(&reach->cpu_family, strtoull(family, NULL, 0));
    } else {
        gpumem_topo_fact_unknown(&reach->cpu_family,
                                 "the topology gives no CPU family");
    }
}

static uint64_t gpumem_topo_hash(const char *str)
{
    uint64_t hash = 0xcbf29ce484222325ul; /* FNV-1a */

    for (; *str != '\0'; ++str) {
        hash = (hash ^ (unsigned char)*str) * 0x100000001b3ul;
    }
    return hash;
}

static void gpumem_topo_hwloc_machine(hwloc_topology_t hwloc, char *machine,
                                      size_t max)
{
    const char *host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(hwloc),
                                                  "HostName");
    const char *product;

    if (host != NULL) {
        ucs_strncpy_zero(machine, host, max);
        return;
    }

    product = hwloc_obj_get_info_by_name(hwloc_get_root_obj(hwloc),
                                         "DMIProductName");
    if ((product != NULL) || (gethostname(machine, max) != 0)) {
        ucs_strncpy_zero(machine, (product != NULL) ? product : "unknown",
                         max);
    }
    machine[max - 1] = '\0';
}

static ucs_status_t gpumem_topo_hwloc_dev_init(hwloc_topology_t hwloc,
                                               int is_xml,
                                               const char *sysfs_root,
                                               hwloc_obj_t pci,
                                               gpumem_topo_dev_type_t type,
                                               hwloc_obj_t rdma_osdev,
                                               gpumem_topo_dev_t *dev)
{
    gpumem_topo_reach_t *reach = &dev->reach;
    ucs_status_t status;

    memset(dev, 0, sizeof(*dev));
    dev->type        = type;
    dev->vendor      = pci->attr->pcidev.vendor_id;
    dev->device      = pci->attr->pcidev.device_id;
    dev->class_id    = pci->attr->pcidev.class_id;
    dev->port_active = -1;
    gpumem_topo_hwloc_addr(&pci->attr->pcidev, &reach->addr);
    gpumem_pci_addr_str(&reach->addr, dev->name, sizeof(dev->name));

    gpumem_topo_hwloc_machine(hwloc, reach->machine, sizeof(reach->machine));
    reach->space         = gpumem_topo_hash(reach->machine);
    reach->fabric        = GPUMEM_TOPO_FABRIC_UNKNOWN;
    reach->fabric_domain = -1;

    status = gpumem_topo_hwloc_path(pci, sysfs_root, reach);
    if (status != UCS_OK) {
        return status;
    }

    gpumem_topo_hwloc_host_bridge_id(hwloc, is_xml, sysfs_root, reach,
                                     &reach->hb_id);
    gpumem_topo_hwloc_cpu(hwloc, pci, dev);
    gpumem_topo_sysfs_iommu(sysfs_root, &reach->addr, &reach->iommu,
                            &reach->iommu_group);
    gpumem_topo_sysfs_bar_size(sysfs_root, &reach->addr, &reach->bar_size);

    if (type == GPUMEM_TOPO_DEV_GPU) {
        gpumem_topo_hwloc_gpu_name(pci, dev->name, sizeof(dev->name));
        gpumem_topo_hwloc_mem_size(pci, sysfs_root, reach);
    } else {
        /* Named by its PCI address where the export has no OS device */
        if (rdma_osdev != NULL) {
            ucs_strncpy_zero(dev->name, rdma_osdev->name, sizeof(dev->name));
            gpumem_topo_hwloc_port(rdma_osdev, dev);
        }
        reach->fabric = GPUMEM_TOPO_FABRIC_NONE;
        gpumem_topo_fact_unknown(&reach->mem_size, "a NIC has no GPU memory");
    }

    return UCS_OK;
}

static int gpumem_topo_dev_cmp(const void *a, const void *b)
{
    const gpumem_topo_dev_t *dev_a = a, *dev_b = b;

    if (dev_a->type != dev_b->type) {
        return (dev_a->type == GPUMEM_TOPO_DEV_GPU) ? -1 : 1;
    }
    return gpumem_pci_addr_cmp(&dev_a->reach.addr, &dev_b->reach.addr);
}

ucs_status_t gpumem_topo_hwloc_read(hwloc_topology_t hwloc, int is_xml,
                                    const char *sysfs_root,
                                    gpumem_topo_t *topo)
{
    unsigned count = 0, max = 0;
    gpumem_topo_dev_t *devs;
    hwloc_obj_t pci, osdev;
    ucs_status_t status;

    pci = NULL;
    while ((pci = hwloc_get_next_pcidev(hwloc, pci)) != NULL) {
        ++max;
    }

    devs = ucs_calloc(ucs_max(max, 1), sizeof(*devs), "gpumem_topo_devs");
    if (devs == NULL) {
        ucs_error("gpumem: failed to allocate %u topology devices", max);
        return UCS_ERR_NO_MEMORY;
    }

    topo->num_gpus = topo->num_nics = 0;
    pci            = NULL;
    while ((pci = hwloc_get_next_pcidev(hwloc, pci)) != NULL) {
        osdev = gpumem_topo_hwloc_rdma_osdev(pci);
        if (gpumem_topo_hwloc_is_gpu(pci)) {
            status = gpumem_topo_hwloc_dev_init(hwloc, is_xml, sysfs_root,
                                                pci, GPUMEM_TOPO_DEV_GPU,
                                                NULL, &devs[count]);
            ++topo->num_gpus;
        } else if ((osdev != NULL) ||
                   gpumem_topo_hwloc_is_rdma_function(pci)) {
            status = gpumem_topo_hwloc_dev_init(hwloc, is_xml, sysfs_root,
                                                pci, GPUMEM_TOPO_DEV_NIC,
                                                osdev, &devs[count]);
            ++topo->num_nics;
        } else {
            continue;
        }

        if (status != UCS_OK) {
            ucs_free(devs);
            return status;
        }
        ++count;
    }

    qsort(devs, count, sizeof(*devs), gpumem_topo_dev_cmp);
    topo->devs     = devs;
    topo->num_devs = count;
    return UCS_OK;
}
