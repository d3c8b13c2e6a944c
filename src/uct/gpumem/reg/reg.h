/**
 * gpumem registration: memory an RDMA NIC may read or write, the views this
 * process names it through, and the wire form a peer receives.
 *
 * Driver-neutral: the NIC is reached through gpumem_reg_ops_t (verbs in
 * uct/gpumem/ib/), so that the rules below hold, and are tested, whatever the
 * driver. The rules:
 *
 * - A registration grants peers exactly its access (local: nothing; remote
 *   write: writes; remote: reads and writes); the NIC always reads and writes
 *   a region for this process's own operations.
 * - Zero bytes, a negative dma-buf offset or descriptor is
 *   UCS_ERR_INVALID_PARAM with nothing taken; a kernel refusal is an error
 *   whose log names the cause.
 * - Views are cheap copies that share one counted registration; the last view
 *   released deregisters it. When that deregistration fails, the region
 *   counts as deregistered, but the NIC may still reach its memory until the
 *   domain closes: the domain keeps it, and refuses to register that memory
 *   again before then.
 * - Slices and descriptors are bounded by their view, with overflow-safe
 *   arithmetic; a remote descriptor is refused for a local region.
 * - The wire form carries the rkey, the address, the size and the device
 *   name, nothing else; unpacking checks every byte a peer sent.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_REG_H_
#define GPUMEM_REG_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/config/types.h>
#include <ucs/datastruct/list.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

BEGIN_C_DECLS

/* A device name with its terminating NUL, as rdma-core bounds it
 * (IBV_SYSFS_NAME_MAX) */
#define GPUMEM_REG_DEVICE_NAME_MAX  64

/* The wire form: version, rkey, address, size, device name; little-endian,
 * fixed size so that UCX can reserve it (uct_md_attr_t::rkey_packed_size) */
#define GPUMEM_REG_WIRE_VERSION     1
#define GPUMEM_REG_WIRE_SIZE        (1 + 4 + 8 + 8 + GPUMEM_REG_DEVICE_NAME_MAX)


/**
 * What peers may do to a region. Whatever the access, the NIC reads a region
 * for this process's writes and sends, and writes it for this process's
 * reads and receives.
 */
typedef enum gpumem_reg_access {
    GPUMEM_REG_ACCESS_LOCAL,         /* Peers neither read nor write */
    GPUMEM_REG_ACCESS_REMOTE_WRITE,  /* Peers write */
    GPUMEM_REG_ACCESS_REMOTE,        /* Peers read and write */
    GPUMEM_REG_ACCESS_LAST
} gpumem_reg_access_t;


/**
 * The order in which the NIC's writes (a peer's writes, the bytes of this
 * process's reads and receives) land in a region.
 */
typedef enum gpumem_reg_order {
    GPUMEM_REG_ORDER_IN_ORDER,   /* In the order they were posted */
    GPUMEM_REG_ORDER_ANY,        /* Any order (PCIe relaxed ordering): one
                                    write's bytes say nothing of an earlier
                                    write's */
    GPUMEM_REG_ORDER_LAST
} gpumem_reg_order_t;


typedef enum gpumem_reg_memory_type {
    GPUMEM_REG_MEMORY_HOST,      /* Host pages of this process */
    GPUMEM_REG_MEMORY_DMABUF     /* Bytes of a dma-buf a driver exported */
} gpumem_reg_memory_type_t;


/**
 * Host pages of this process.
 */
typedef struct gpumem_reg_host {
    void   *address;        /* First byte */
    size_t length;          /* Bytes, at least one */
} gpumem_reg_host_t;


/**
 * Bytes of a dma-buf, a device's memory a driver exported.
 */
typedef struct gpumem_reg_dmabuf {
    int      fd;            /* The dma-buf; the kernel keeps it while
                               registered, so it may be closed once
                               registration returns */
    int64_t  offset;        /* First byte within the dma-buf */
    int64_t  bytes;         /* Bytes, at least one */
    uint64_t iova;          /* Address entries name the first byte by */
    void     *host_address; /* The same bytes mapped in this process, or
                               NULL: the way in when the NIC refuses the
                               dma-buf */
} gpumem_reg_dmabuf_t;


/**
 * Memory to register.
 */
typedef struct gpumem_reg_memory {
    gpumem_reg_memory_type_t type;
    union {
        gpumem_reg_host_t    host;
        gpumem_reg_dmabuf_t  dmabuf;
    };
} gpumem_reg_memory_t;


/**
 * What to register, how, and how loudly to report a refusal.
 */
typedef struct gpumem_reg_params {
    gpumem_reg_memory_t memory;
    gpumem_reg_access_t access;
    gpumem_reg_order_t  order;
    ucs_log_level_t     log_level;  /* Level of the refusal's log line:
                                       UCS_LOG_LEVEL_ERROR, or lower when the
                                       caller handles refusals itself */
} gpumem_reg_params_t;


/**
 * A registration as the driver made it.
 */
typedef struct gpumem_reg_mr {
    void     *handle;        /* The driver's object (struct ibv_mr *) */
    uint64_t address;        /* Address entries name the first byte by */
    void     *host_address;  /* CPU address of the first byte, or NULL */
    uint32_t lkey;           /* Key of this process's entries */
    uint32_t rkey;           /* Key of a peer's entries */
} gpumem_reg_mr_t;


/**
 * The driver below a domain. Both functions log the cause of a refusal, at
 * the level given for registration and as an error for deregistration.
 */
typedef struct gpumem_reg_ops {
    /* Register memory whose parameters the domain has checked. */
    ucs_status_t (*mr_register)(void *arg, const gpumem_reg_params_t *params,
                                gpumem_reg_mr_t *mr_p);

    /* Deregister; an error means the NIC may still reach the memory. */
    ucs_status_t (*mr_deregister)(void *arg, const gpumem_reg_mr_t *mr);
} gpumem_reg_ops_t;


typedef struct gpumem_reg_domain gpumem_reg_domain_t;


/**
 * One registration, shared and counted by its views.
 */
typedef struct gpumem_reg_region {
    gpumem_reg_domain_t *domain;
    gpumem_reg_mr_t     mr;
    gpumem_reg_access_t access;
    gpumem_reg_order_t  order;
    size_t              length;
    volatile uint32_t   refcount;      /* Views over this registration */

    /* The memory behind it, to refuse its reuse after a failed
     * deregistration: host bytes and dma-buf bytes, either may be empty */
    uintptr_t           host_start;
    uintptr_t           host_end;
    int                 dmabuf_known;  /* The dma-buf's identity was read */
    dev_t               dmabuf_dev;
    ino_t               dmabuf_ino;
    int64_t             dmabuf_start;
    int64_t             dmabuf_end;

    ucs_list_link_t     list;          /* In domain->held */
} gpumem_reg_region_t;


/**
 * A registration domain: one NIC, its driver, and the regions whose
 * deregistration failed.
 */
struct gpumem_reg_domain {
    char                   name[GPUMEM_REG_DEVICE_NAME_MAX]; /* The NIC */
    const gpumem_reg_ops_t *ops;
    void                   *ops_arg;
    pthread_mutex_t        lock;         /* Protects what follows */
    unsigned               num_regions;  /* Registered, with views */
    ucs_list_link_t        held;         /* Failed deregistrations, kept
                                            until the domain closes */
};


/**
 * A view: bytes of a registration, as this process names them. A plain
 * struct: copy it with gpumem_reg_view_copy(), which counts the copy, and
 * release every copy with gpumem_reg_view_release().
 */
typedef struct gpumem_reg_view {
    gpumem_reg_region_t *region;       /* Kept registered by this view */
    uint64_t            address;       /* Address entries name the first
                                          byte by */
    void                *host_address; /* CPU address of it, or NULL */
    size_t              length;
} gpumem_reg_view_t;


/**
 * Bytes of a view as this process's entries name them (a scatter entry).
 */
typedef struct gpumem_reg_local {
    uint64_t address;
    size_t   length;
    uint32_t lkey;
} gpumem_reg_local_t;


/**
 * A byte of a view as a peer's entries name it.
 */
typedef struct gpumem_reg_remote {
    uint64_t address;
    uint32_t rkey;
} gpumem_reg_remote_t;


/**
 * What a peer holds of a view: the wire form, unpacked. It keeps nothing
 * alive: the owner's views do.
 */
typedef struct gpumem_reg_remote_view {
    uint32_t rkey;
    uint64_t address;
    uint64_t length;
    char     device_name[GPUMEM_REG_DEVICE_NAME_MAX];
} gpumem_reg_remote_view_t;


/* Names for logs: "local", "remote write", "remote"; "in order", "any
 * order" */
const char *gpumem_reg_access_name(gpumem_reg_access_t access);
const char *gpumem_reg_order_name(gpumem_reg_order_t order);


/**
 * Open a domain over a driver.
 *
 * @param [in]  domain   Domain to initialize.
 * @param [in]  name     The NIC's name, as peers will see it in the wire
 *                       form; at most GPUMEM_REG_DEVICE_NAME_MAX - 1 bytes.
 * @param [in]  ops      The driver.
 * @param [in]  ops_arg  Passed to each of @a ops.
 *
 * @return UCS_ERR_INVALID_PARAM for an empty or too long name.
 */
ucs_status_t gpumem_reg_domain_init(gpumem_reg_domain_t *domain,
                                    const char *name,
                                    const gpumem_reg_ops_t *ops,
                                    void *ops_arg);


/**
 * Close a domain: deregister what failed to deregister before (the driver
 * then releases all else when it closes the device). Regions still viewed
 * are a caller's bug, reported with a warning.
 */
void gpumem_reg_domain_cleanup(gpumem_reg_domain_t *domain);


/**
 * Register memory, for an access and an order.
 *
 * @param [in]  domain   Domain of the NIC.
 * @param [in]  params   Memory, access, order.
 * @param [out] view_p   A view of the whole registration, set only on
 *                       success.
 *
 * @return UCS_ERR_INVALID_PARAM, logged, with nothing taken, for zero bytes,
 *         a negative dma-buf offset or descriptor, or bytes that wrap past
 *         the end of the address space; UCS_ERR_BUSY for memory whose
 *         deregistration failed, before the domain closes; the driver's
 *         error when the kernel refuses.
 */
ucs_status_t gpumem_reg_register(gpumem_reg_domain_t *domain,
                                 const gpumem_reg_params_t *params,
                                 gpumem_reg_view_t *view_p);


/**
 * Count one more view of @a view's registration.
 */
void gpumem_reg_view_copy(const gpumem_reg_view_t *view,
                          gpumem_reg_view_t *copy_p);


/**
 * Release a view. The last view of a registration deregisters it.
 *
 * @return UCS_OK, or, when this was the last view and the kernel refused to
 *         deregister, the driver's error: the region then counts as
 *         deregistered, but its memory must not be reused or freed before
 *         the domain closes.
 */
ucs_status_t gpumem_reg_view_release(gpumem_reg_view_t *view);


/**
 * A counted view of @a length bytes at @a offset of @a view, with the same
 * registration and keys.
 *
 * @return UCS_ERR_INVALID_PARAM, logged with the range and the registration,
 *         when the bytes are not all in @a view (offset + length may wrap).
 */
ucs_status_t gpumem_reg_view_slice(const gpumem_reg_view_t *view,
                                   size_t offset, size_t length,
                                   gpumem_reg_view_t *slice_p);


/**
 * The @a length bytes at offset @a at of @a view, as this process's entries
 * name them.
 *
 * @return UCS_ERR_INVALID_PARAM, logged, when they are not in @a view.
 */
ucs_status_t gpumem_reg_view_local(const gpumem_reg_view_t *view, size_t at,
                                   size_t length, gpumem_reg_local_t *local_p);


/**
 * Offset @a at of @a view, as a peer's entries name it.
 *
 * @return UCS_ERR_INVALID_PARAM, logged, when @a at is not in @a view or the
 *         region is local.
 */
ucs_status_t gpumem_reg_view_remote(const gpumem_reg_view_t *view, size_t at,
                                    gpumem_reg_remote_t *remote_p);


/**
 * What a peer gets of @a view: rkey, address, size and device name.
 *
 * @return UCS_ERR_INVALID_PARAM, logged, when the region is local.
 */
ucs_status_t gpumem_reg_view_export(const gpumem_reg_view_t *view,
                                    gpumem_reg_remote_view_t *remote_view_p);


/**
 * A peer's view of @a length bytes at @a offset of @a remote_view.
 *
 * @return UCS_ERR_INVALID_PARAM, logged with the range and the registration,
 *         when the bytes are not all in @a remote_view.
 */
ucs_status_t
gpumem_reg_remote_view_slice(const gpumem_reg_remote_view_t *remote_view,
                             uint64_t offset, uint64_t length,
                             gpumem_reg_remote_view_t *slice_p);


/**
 * Write the wire form of @a remote_view: GPUMEM_REG_WIRE_SIZE bytes.
 */
void gpumem_reg_wire_pack(const gpumem_reg_remote_view_t *remote_view,
                          void *buffer);


/**
 * Read a wire form a peer sent.
 *
 * @param [in]  buffer         The bytes.
 * @param [in]  length         How many there are.
 * @param [out] remote_view_p  Set only on success.
 *
 * @return UCS_ERR_INVALID_PARAM, logged, for a wrong length, a device name
 *         that is empty, unterminated, not printable or followed by other
 *         than zeros, or a region that wraps past the end of the address
 *         space; UCS_ERR_UNSUPPORTED, logged, for another version.
 */
ucs_status_t gpumem_reg_wire_unpack(const void *buffer, size_t length,
                                    gpumem_reg_remote_view_t *remote_view_p);


/**
 * The status for a kernel's errno: UCS_ERR_NO_MEMORY (ENOMEM),
 * UCS_ERR_UNSUPPORTED (EOPNOTSUPP), UCS_ERR_BUSY (EBUSY), UCS_ERR_IO_ERROR
 * for the rest.
 */
ucs_status_t gpumem_reg_status_from_errno(int err);


/**
 * Why the kernel refused to register @a bytes bytes with errno @a err: its
 * message, and for ENOMEM and EPERM the locked-memory limit
 * (RLIMIT_MEMLOCK) now in force and the bytes asked.
 *
 * @return @a buf.
 */
const char *gpumem_reg_refusal_reason(int err, size_t bytes, char *buf,
                                      size_t max);

END_C_DECLS

#endif
