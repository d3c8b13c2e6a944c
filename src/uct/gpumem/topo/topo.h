/**
 * gpumem topology: which GPUs reach each other's memory, which NIC each GPU
 * should use, and why.
 *
 * The facts come from hwloc (the live machine, or an XML export of one) and
 * from sysfs (ACS control bits, IOMMU translation, BAR sizes), which hwloc
 * does not carry. gpumem_topo_reaches() is the rule of Linux p2pdma plus
 * GPU fabrics: see topo_reach.c. Every "no" carries a reason naming the rule
 * and the object that decided it; a fact that cannot be read makes the
 * answer "no" with reason "unknown: ...", never a guess.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TOPO_H_
#define GPUMEM_TOPO_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

#define GPUMEM_TOPO_REASON_MAX   1024 /* A verdict's reason: may list several
                                         unknown facts */
#define GPUMEM_TOPO_BRIEF_MAX    256  /* A verdict's deciding reason alone */
#define GPUMEM_TOPO_WHY_MAX      192  /* Why one fact cannot be read */
#define GPUMEM_TOPO_NAME_MAX     32   /* A device name: cuda0, mlx5_1, ... */
#define GPUMEM_TOPO_MACHINE_MAX  128  /* A machine identity */
#define GPUMEM_TOPO_PATH_MAX     16   /* PCI bridges from a device to its root */
#define GPUMEM_TOPO_LINKS_MAX    32   /* Direct fabric links of one GPU */
#define GPUMEM_TOPO_PCI_STR_MAX  16   /* "DDDD:BB:DD.F" and its NUL */


/* PCI ACS control register bits that send peer requests up to the root
 * complex (PCIe base spec, ACS extended capability, control register). */
#define GPUMEM_TOPO_ACS_RR       0x0004  /* P2P request redirect */
#define GPUMEM_TOPO_ACS_CR       0x0008  /* P2P completion redirect */
#define GPUMEM_TOPO_ACS_EC       0x0020  /* P2P egress control */
#define GPUMEM_TOPO_ACS_REDIRECT (GPUMEM_TOPO_ACS_RR | GPUMEM_TOPO_ACS_CR | \
                                  GPUMEM_TOPO_ACS_EC)


/**
 * A PCI function's address: domain, bus, device, function.
 */
typedef struct gpumem_pci_addr {
    uint16_t domain;
    uint8_t  bus;
    uint8_t  dev;
    uint8_t  fn;
} gpumem_pci_addr_t;


/**
 * One fact of the machine, and whether it could be read. When it could not,
 * @a why says what was tried ("cannot read /sys/...: Permission denied").
 */
typedef struct gpumem_topo_fact {
    int      known;
    uint64_t value;
    char     why[GPUMEM_TOPO_WHY_MAX];
} gpumem_topo_fact_t;


/**
 * A PCI bridge on a device's way to its host bridge, nearest first.
 */
typedef struct gpumem_topo_hop {
    gpumem_pci_addr_t  addr;
    gpumem_topo_fact_t acs_ctrl;  /* ACS control register bits; known 0 if
                                     the bridge has no ACS capability */
} gpumem_topo_hop_t;


/**
 * How two GPUs are joined by a fabric of direct links.
 */
typedef enum {
    GPUMEM_TOPO_FABRIC_UNKNOWN = 0, /* The topology has no matrix for it */
    GPUMEM_TOPO_FABRIC_NONE,        /* A matrix exists; no link of this GPU */
    GPUMEM_TOPO_FABRIC_NVLINK,
    GPUMEM_TOPO_FABRIC_XGMI
} gpumem_topo_fabric_t;


/**
 * The facts that decide whose GPU memory a GPU maps (seed 003, "reach"). They
 * are the same at every open of the GPU; a plain struct, so that a peer
 * process can be given them.
 */
typedef struct gpumem_topo_reach {
    char                 machine[GPUMEM_TOPO_MACHINE_MAX]; /* Identity */
    uint64_t             space;       /* Page-table address space */
    gpumem_pci_addr_t    addr;        /* The GPU's PCI function */

    /* Fabric: joined where both have the same kind and either share a
     * fabric domain (an NVSwitch plane, an XGMI hive) or link directly. */
    gpumem_topo_fabric_t fabric;
    int                  fabric_domain;  /* -1: direct links only */
    unsigned             num_links;
    gpumem_pci_addr_t    links[GPUMEM_TOPO_LINKS_MAX];

    gpumem_topo_fact_t   iommu;       /* 1: an IOMMU translates its requests */
    int                  iommu_group; /* -1 if none or unknown */
    gpumem_topo_fact_t   bar_size;    /* Largest memory BAR, bytes */
    gpumem_topo_fact_t   mem_size;    /* GPU memory, bytes */

    unsigned             path_len;    /* PCI bridges up to the root port */
    gpumem_topo_hop_t    path[GPUMEM_TOPO_PATH_MAX];
    uint16_t             hb_domain;   /* Host bridge: domain and root bus */
    uint8_t              hb_bus;
    gpumem_topo_fact_t   hb_id;       /* vendor << 16 | device of the host
                                         bridge's function DDDD:BB:00.0 */
    int                  package;     /* CPU package (socket), -1 unknown */
    char                 cpu_vendor[16]; /* "AuthenticAMD", "ppc64le", "" */
    gpumem_topo_fact_t   cpu_family;
} gpumem_topo_reach_t;


/**
 * How two PCI functions of one machine are placed relative to each other,
 * nearest first.
 */
typedef enum {
    GPUMEM_TOPO_REL_SAME_GPU = 0,        /* Two reaches of one function */
    GPUMEM_TOPO_REL_SAME_SWITCH,         /* A PCI bridge above both */
    GPUMEM_TOPO_REL_HOST_BRIDGE,         /* Only their host bridge */
    GPUMEM_TOPO_REL_ACROSS_HOST_BRIDGES, /* Two host bridges, one socket */
    GPUMEM_TOPO_REL_ACROSS_SOCKETS,      /* Two sockets */
    GPUMEM_TOPO_REL_OTHER_MACHINE
} gpumem_topo_relation_t;


/**
 * Flags of gpumem_topo_reaches().
 */
enum {
    /* "What if": a fact that cannot be read counts as favourable, and each
     * such assumption is listed in the verdict. */
    GPUMEM_TOPO_ASSUME = UCS_BIT(0)
};


/**
 * Kinds of facts a verdict may need and not have: bits of
 * gpumem_topo_verdict_t::unknown.
 */
enum {
    GPUMEM_TOPO_FACT_FABRIC      = UCS_BIT(0), /* NVLink/XGMI matrix */
    GPUMEM_TOPO_FACT_IOMMU       = UCS_BIT(1),
    GPUMEM_TOPO_FACT_BAR_SIZE    = UCS_BIT(2),
    GPUMEM_TOPO_FACT_MEM_SIZE    = UCS_BIT(3),
    GPUMEM_TOPO_FACT_ACS         = UCS_BIT(4), /* A bridge's ACS control */
    GPUMEM_TOPO_FACT_HOST_BRIDGE = UCS_BIT(5), /* A host bridge's ID */
    GPUMEM_TOPO_FACT_CPU         = UCS_BIT(6), /* CPU vendor or family */
    GPUMEM_TOPO_FACT_LAST        = UCS_BIT(7)
};


/**
 * A verdict with its reason (why not, or by which way it reaches) and the
 * assumptions made under GPUMEM_TOPO_ASSUME.
 *
 * @a reason names every rule that refused and every fact that could not be
 * read; @a brief is the one that decides: the way it reaches, the refusal a
 * user could act on, or, where only unreadable facts stand in the way,
 * "unknown: " and their kinds (@a unknown says which, the devices' facts
 * say why).
 */
typedef struct gpumem_topo_verdict {
    int                    reaches;
    gpumem_topo_relation_t relation;
    gpumem_topo_relation_t route;     /* The way the bus carries the requests:
                                         the relation, but HOST_BRIDGE where
                                         a switch above both redirects them
                                         up to the root complex (ACS) */
    gpumem_topo_fabric_t   fabric;    /* The fabric that joins them, or NONE */
    unsigned               hops;      /* PCI links between them, 0 if unknown */
    unsigned               unknown;   /* GPUMEM_TOPO_FACT_* it could not read */
    char                   reason[GPUMEM_TOPO_REASON_MAX];
    char                   brief[GPUMEM_TOPO_BRIEF_MAX];
    char                   assumed[GPUMEM_TOPO_REASON_MAX]; /* "" if none */
} gpumem_topo_verdict_t;


/**
 * Kinds of devices the topology lists.
 */
typedef enum {
    GPUMEM_TOPO_DEV_GPU,
    GPUMEM_TOPO_DEV_NIC
} gpumem_topo_dev_type_t;


/**
 * A GPU or an RDMA NIC of the machine.
 */
typedef struct gpumem_topo_dev {
    gpumem_topo_dev_type_t type;
    char                   name[GPUMEM_TOPO_NAME_MAX]; /* OS device name, or
                                                          the PCI address */
    uint16_t               vendor;
    uint16_t               device;
    uint16_t               class_id;  /* PCI class << 8 | subclass */
    int                    numa_node; /* -1 unknown */
    unsigned               port;      /* A NIC's RDMA port, as UCX names it
                                         (mlx5_0:1); 0 if the topology gives
                                         none */
    int                    port_active; /* 1 if that port was active when
                                           the topology was read, 0 if not,
                                           -1 unknown */
    gpumem_topo_reach_t    reach;     /* Facts of its place (GPU or NIC) */
} gpumem_topo_dev_t;


/**
 * Where the topology comes from.
 */
typedef struct gpumem_topo_params {
    const char *xml_path;    /* hwloc XML export; NULL: xml_buffer */
    const char *xml_buffer;  /* hwloc XML document; NULL with xml_path NULL:
                                the live machine */
    const char *sysfs_root;  /* Root of sysfs; NULL: "/sys" */
    const char *facts_path;  /* Facts saved by gpumem_topo --save-facts, or
                                NULL */
} gpumem_topo_params_t;


/**
 * The machine's GPUs and RDMA NICs with their facts.
 */
typedef struct gpumem_topo {
    unsigned          num_devs;
    gpumem_topo_dev_t *devs;     /* GPUs first, then NICs, each in PCI
                                    address order */
    unsigned          num_gpus;
    unsigned          num_nics;
} gpumem_topo_t;


/**
 * A NIC for a GPU, as gpumem_topo_rank_nics() orders them.
 */
typedef struct gpumem_topo_nic_rank {
    unsigned               nic;       /* Index in gpumem_topo_t::devs */
    gpumem_topo_relation_t relation;
    unsigned               hops;
    gpumem_topo_verdict_t  gdr;       /* Whether the NIC reaches the GPU's
                                         memory by DMA (bus rules) */
} gpumem_topo_nic_rank_t;


/**
 * Flags of gpumem_topo_bind_nics().
 */
enum {
    /* Leave out NICs whose port is known to be down */
    GPUMEM_TOPO_BIND_ACTIVE = UCS_BIT(0)
};


/**
 * The NIC that gpumem_topo_bind_nics() gives a GPU.
 */
typedef struct gpumem_topo_nic_bind {
    unsigned               nic;       /* Index in gpumem_topo_t::devs */
    unsigned               rank;      /* Its place in the GPU's ranking by
                                         gpumem_topo_rank_nics(), 0: nearest */
    gpumem_topo_relation_t relation;
    unsigned               hops;
    unsigned               sharers;   /* GPUs bound to that NIC, this one
                                         included */
} gpumem_topo_nic_bind_t;


/**
 * Load the topology: hwloc, then sysfs facts, then the saved facts file.
 * Malformed or missing input is UCS_ERR_INVALID_PARAM or UCS_ERR_IO_ERROR
 * with a logged reason.
 */
ucs_status_t gpumem_topo_load(const gpumem_topo_params_t *params,
                              gpumem_topo_t **topo_p);

void gpumem_topo_destroy(gpumem_topo_t *topo);

/* The device at a PCI address, or NULL */
const gpumem_topo_dev_t *
gpumem_topo_find(const gpumem_topo_t *topo, const gpumem_pci_addr_t *addr);

/* The device of that name (cuda0, mlx5_0) or PCI address, or NULL */
const gpumem_topo_dev_t *
gpumem_topo_find_by_name(const gpumem_topo_t *topo, const char *name);


/**
 * Whether map_peer on the GPU of @a r maps the GPU memory of the GPU of
 * @a o (seed 003, "reaches"). Takes no lock and reads nothing.
 *
 * @return 1 if it does, 0 otherwise; @a verdict says why.
 */
int gpumem_topo_reaches(const gpumem_topo_reach_t *r,
                        const gpumem_topo_reach_t *o, unsigned flags,
                        gpumem_topo_verdict_t *verdict);

/**
 * Whether the function of @a client (a NIC) reaches the memory of the GPU of
 * @a gpu by DMA through its memory BAR: the bus rules of reaches(), no
 * fabric.
 */
int gpumem_topo_dma_reaches(const gpumem_topo_reach_t *client,
                            const gpumem_topo_reach_t *gpu, unsigned flags,
                            gpumem_topo_verdict_t *verdict);

/**
 * Whether the function of @a client reaches system memory of the machine of
 * the GPU of @a gpu at its physical addresses by DMA: one machine, and
 * neither the client nor the GPU behind an IOMMU that translates its
 * requests (seed 003, bus).
 */
int gpumem_topo_dma_reaches_system(const gpumem_topo_reach_t *client,
                                   const gpumem_topo_reach_t *gpu,
                                   unsigned flags,
                                   gpumem_topo_verdict_t *verdict);

/* Placement of two functions of one machine, and the PCI links between them
 * (0 when the same function or not on one tree). */
gpumem_topo_relation_t
gpumem_topo_relation(const gpumem_topo_reach_t *a,
                     const gpumem_topo_reach_t *b, unsigned *hops_p);

/**
 * The NICs of the topology for a GPU, nearest first (relation, then hops,
 * then PCI address). @a ranks must hold topo->num_nics entries.
 */
void gpumem_topo_rank_nics(const gpumem_topo_t *topo, unsigned gpu,
                           unsigned flags, gpumem_topo_nic_rank_t *ranks);

/**
 * One NIC for each GPU, so that GPUs use distinct NICs, nearest first,
 * where there are enough: of all assignments, the one whose NICs are
 * nearest in total by relation, then by PCI links (a minimum-cost
 * assignment; choosing GPU by GPU would give an early GPU the only near NIC
 * of a later one). Among assignments as near, each GPU in PCI order keeps
 * the first NIC of its ranking that leaves the total as it is. With fewer
 * NICs than GPUs, a NIC serves at most ceil(GPUs / NICs) of them.
 *
 * With GPUMEM_TOPO_BIND_ACTIVE in @a flags, a NIC whose port is known to be
 * down takes no GPU: the live machine's ports are as they are now, and an
 * export's were as they were when it was saved.
 *
 * @a binds must hold topo->num_gpus entries.
 *
 * @return UCS_ERR_NO_DEVICE, with nothing logged and @a binds untouched,
 *         if the topology has no NIC (that may take part); UCS_ERR_NO_MEMORY.
 */
ucs_status_t gpumem_topo_bind_nics(const gpumem_topo_t *topo,
                                   unsigned flags,
                                   gpumem_topo_nic_bind_t *binds);

/* Save the sysfs facts of every device (run once as root) */
ucs_status_t gpumem_topo_save_facts(const gpumem_topo_t *topo,
                                    const char *path);


/* PCI addresses: "DDDD:BB:DD.F" (domain optional on parse) */
ucs_status_t gpumem_pci_addr_parse(const char *str, gpumem_pci_addr_t *addr_p);
const char *gpumem_pci_addr_str(const gpumem_pci_addr_t *addr, char *buf,
                                size_t max);
int gpumem_pci_addr_equal(const gpumem_pci_addr_t *a,
                          const gpumem_pci_addr_t *b);
int gpumem_pci_addr_cmp(const gpumem_pci_addr_t *a,
                        const gpumem_pci_addr_t *b);

const char *gpumem_topo_relation_name(gpumem_topo_relation_t relation);
const char *gpumem_topo_fabric_name(gpumem_topo_fabric_t fabric);

/* "IOMMU, BAR size and ACS": the kinds of facts of a GPUMEM_TOPO_FACT_* mask */
const char *gpumem_topo_fact_kinds_str(unsigned kinds, char *buf, size_t max);

END_C_DECLS

#endif
