/**
 * gpumem copy transport: the interface, whose GPU copy engines move bytes
 * between host and device memory, and between device memories, of this
 * process.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_COPY_IFACE_H_
#define UCT_GPUMEM_COPY_IFACE_H_

#include <uct/gpumem/copy/copy_md.h>
#include <uct/gpumem/base/gpumem_iface.h>


/* UCX 1.13 holds 9 characters of a transport name (UCT_TL_NAME_MAX) */
#define UCT_GPUMEM_COPY_TL_NAME   "gpumemcpy"
#define UCT_GPUMEM_COPY_DEV_NAME  "gpumem"


/* Only the interface that made an address reaches it, as with cuda_copy */
typedef uint64_t uct_gpumem_copy_iface_addr_t;


typedef struct uct_gpumem_copy_iface_config {
    uct_gpumem_iface_config_t super;
    size_t                    seg_size;   /* Bounce buffer of the bcopy
                                             operations */
    double                    bandwidth;  /* UCS_CONFIG_DBL_AUTO: the
                                             driver's */
    ucs_time_t                latency;    /* UCS_TIME_AUTO: the driver's */
    double                    overhead;
} uct_gpumem_copy_iface_config_t;


/**
 * One copy, as the engine is asked it: resolved from the addresses UCT gets.
 */
typedef struct uct_gpumem_copy_req {
    gpumem_gpu_t        *engine;   /* GPU whose copy engine moves it, NULL:
                                      host to host, by the CPU */
    uint64_t            dst;
    uint64_t            src;
    int                 dst_dev;
    int                 src_dev;
    size_t              length;
    gpumem_gpu_t        *peer_gpu; /* Where the source of another GPU is
                                      mapped for the engine, or NULL */
    gpumem_region_t     *peer;
    const char          *driver;   /* The driver's name, for its errors */
} uct_gpumem_copy_req_t;


/**
 * A zero-copy operation in the interface's queue.
 */
typedef struct uct_gpumem_copy_op {
    uct_gpumem_iface_op_t super;
    uct_gpumem_copy_req_t req;
} uct_gpumem_copy_op_t;


/**
 * The copy interface. Its zero-copy operations run in the order they were
 * posted, one at a time, as on one stream of a copy engine; short and bcopy
 * operations complete before they return and so are not queued.
 */
typedef struct uct_gpumem_copy_iface {
    uct_gpumem_iface_t           super;
    uct_gpumem_copy_iface_addr_t id;  /* Its process's: every interface of
                                         the process reaches the same
                                         virtual addresses */
    int                          check_bounds; /* The engine catches no
                                                  copy past an allocation's
                                                  end itself */
} uct_gpumem_copy_iface_t;


extern uct_tl_t uct_gpumem_copy_tl;


/**
 * Copy @a length bytes from @a src to @a dst (each host memory or device
 * memory of this process's GPUs) and return when they have landed.
 */
ucs_status_t uct_gpumem_copy_iface_copy_sync(uct_gpumem_copy_iface_t *iface,
                                             void *dst, const void *src,
                                             size_t length);

/**
 * Queue a copy of @a length bytes; UCS_OK when it completed at once,
 * UCS_INPROGRESS when @a comp will be called (@a ep counts it until then).
 */
ucs_status_t uct_gpumem_copy_iface_post(uct_gpumem_copy_iface_t *iface,
                                        uct_gpumem_ep_t *ep, void *dst,
                                        const void *src, size_t length,
                                        uct_completion_t *comp);

/* The address of every copy interface of this process */
uct_gpumem_copy_iface_addr_t uct_gpumem_copy_process_id(void);

/* Bytes the process's copy interfaces moved since the plugin's load */
uint64_t uct_gpumem_copy_bytes(void);

#endif
