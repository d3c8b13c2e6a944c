/**
 * gpumem verbs: a registration domain per RDMA device, as a UCT memory
 * domain of the "gpumem_ib" component.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IB_MD_H_
#define UCT_GPUMEM_IB_MD_H_

#include "ib_access.h"
#include "ib_device.h"
#include "ib_place.h"

#include <uct/base/uct_md.h>
#include <uct/gpumem/compat/gpumem_compat.h>
#include <uct/gpumem/reg/reg.h>
#include <ucs/memory/rcache.h>
#include <infiniband/verbs.h>
#include <pthread.h>

BEGIN_C_DECLS

#define UCT_GPUMEM_IB_MD_PREFIX  "gpumem_"


/**
 * gpumem verbs memory domain configuration.
 */
typedef struct uct_gpumem_ib_md_config {
    uct_md_config_t super;
    unsigned        max_access;  /* gpumem_reg_access_t: the most that
                                    peers may do */
    unsigned        order;       /* gpumem_reg_order_t of registrations */
    unsigned        device_mem_reg; /* uct_gpumem_ib_device_reg_t: how
                                       device memory is registered */
    int             enable_rcache;  /* ucs_ternary_auto_value_t: keep
                                       registrations in a cache */
    uct_gpumem_rcache_config_t rcache; /* The cache's settings */
} uct_gpumem_ib_md_config_t;


/**
 * gpumem verbs memory domain: one device, one protection domain.
 */
typedef struct uct_gpumem_ib_md {
    uct_md_t                    super;
    struct ibv_context          *context;
    struct ibv_pd               *pd;
    gpumem_reg_domain_t         domain;
    gpumem_reg_access_t         max_access;
    gpumem_reg_order_t          order;
    uint64_t                    max_mr_size;
    volatile uint32_t           dmabuf_fallback_said;  /* The one log line on
                                                          registering a
                                                          dma-buf through its
                                                          host pages */

    /* Device memory: the process's GPUs as the plugin's settings
     * (UCX_GPUMEM_*) select them, or NULL where they did not open */
    uct_gpumem_context_t        *gpus;
    uct_gpumem_settings_t       gpus_settings;
    int                         has_settings;   /* gpus_settings were read */
    ucs_memory_type_t           device_mem_type;
    uct_gpumem_ib_device_reg_t  device_mem_reg;
    uct_gpumem_ib_place_t       place;          /* For the process's GPU
                                                   (UCX_GPUMEM_ALLOC_GPU) */

    pthread_mutex_t             lock;  /* Protects mrs, device_mrs and their
                                          registrations' ibv_mr */
    ucs_list_link_t             mrs;   /* The verbs driver's registrations
                                          (ib_mr.c), those that failed to
                                          deregister included */
    ucs_list_link_t             device_mrs; /* Those of device memory */
    int                         watches_frees; /* Device memory's free events
                                                  revoke its registrations */

    /* Registrations through uct_md_mem_reg(), cached by the access they
     * grant (ib_rcache.c); NULL where they are not cached */
    ucs_rcache_t                *rcache[GPUMEM_REG_ACCESS_LAST];
    size_t                      rcache_align;    /* Of the caches' regions */
    double                      rcache_overhead; /* A lookup's, seconds */
} uct_gpumem_ib_md_t;


/**
 * A memory handle: a view of the bytes registered, of a registration of
 * their own or of a cached one that may hold more.
 */
typedef struct uct_gpumem_ib_memh {
    gpumem_reg_view_t   view;
    ucs_rcache_t        *rcache;  /* The cache of the registration the view
                                     is a slice of, or NULL for a
                                     registration of the handle's own */
    ucs_rcache_region_t *region;  /* That registration, held */
} uct_gpumem_ib_memh_t;


/**
 * What this component's registrations hand their verbs driver (ib_mr.c):
 * the domain's parameters, the address by which the device names host pages
 * (a device address for the BAR window of GPU memory; the pages' own
 * address otherwise), and the device memory they cover. gpumem_reg_register()
 * passes its parameters on to the driver as given, so every registration of
 * the component goes through it with one of these.
 */
typedef struct uct_gpumem_ib_reg_params {
    gpumem_reg_params_t        super;
    uint64_t                   host_iova;
    uct_gpumem_ib_device_mem_t *device;  /* Device memory, which the
                                            registration holds once made
                                            until the device no longer
                                            reaches it; NULL for host
                                            memory */
} uct_gpumem_ib_reg_params_t;


extern uct_component_t uct_gpumem_ib_component;

/* The driver below each domain: verbs (ib_mr.c) */
extern const gpumem_reg_ops_t uct_gpumem_ib_reg_ops;

/* Once the device is closed, which releases what failed to deregister:
 * give back what those registrations held */
void uct_gpumem_ib_mr_cleanup(uct_gpumem_ib_md_t *md);

/* From now on, until uct_gpumem_ib_mr_unwatch_frees(), device memory about
 * to be freed (UCM's memory type free events) is no longer reached by the
 * device: its registrations are taken from the device at once, whoever
 * still holds them (a registration cache, a handle the application did not
 * deregister), so that memory allocated again there is never reached
 * through them */
void uct_gpumem_ib_mr_watch_frees(uct_gpumem_ib_md_t *md);
void uct_gpumem_ib_mr_unwatch_frees(uct_gpumem_ib_md_t *md);


/**
 * A memory handle, not cached (NULL, logged at @a log_level, where there is
 * no memory for it): its view is the caller's to fill.
 */
uct_gpumem_ib_memh_t *uct_gpumem_ib_memh_alloc(const uct_gpumem_ib_md_t *md,
                                               ucs_log_level_t log_level);


/**
 * Register @a length bytes at @a address, device memory of the domain's
 * GPUs or host memory, into @a view, with the access, order and log level
 * of @a params (its memory, host_iova and device are set here).
 *
 * @return as gpumem_reg_register(), or uct_gpumem_ib_device_mem_open()'s
 *         refusal of device memory.
 */
ucs_status_t uct_gpumem_ib_md_register_range(uct_gpumem_ib_md_t *md,
                                             uct_gpumem_ib_reg_params_t *params,
                                             void *address, size_t length,
                                             gpumem_reg_view_t *view);


/**
 * The name of a device's memory domain: "gpumem_<device>", or, where that
 * does not fit in UCT_MD_NAME_MAX, the device's name as UCX's own ib
 * component names it.
 *
 * @return UCS_ERR_EXCEEDS_LIMIT when not even the device's name fits.
 */
ucs_status_t uct_gpumem_ib_md_name(const char *dev_name, char *md_name,
                                   size_t max);


/**
 * The device a memory domain name names.
 */
const char *uct_gpumem_ib_md_dev_name(const char *md_name);


/**
 * Register memory with explicit access and order, host pages or a dma-buf
 * (the way in for device memory, which uct_md_mem_reg() of UCX 1.13 cannot
 * describe). The access is capped by the domain's MAX_ACCESS. A dma-buf the
 * device refuses (EOPNOTSUPP) is registered through its host mapping when it
 * has one, and the domain says so once.
 *
 * @return as gpumem_reg_register().
 */
ucs_status_t uct_gpumem_ib_mem_reg_memory(uct_md_h md,
                                          const gpumem_reg_params_t *params,
                                          uct_mem_h *memh_p);


/**
 * The view a memory handle holds; slice or copy it to hand bytes on.
 */
static inline gpumem_reg_view_t *uct_gpumem_ib_memh_view(uct_mem_h memh)
{
    return &((uct_gpumem_ib_memh_t*)memh)->view;
}

END_C_DECLS

#endif
