/**
 * gpumem registration: the domain of one NIC, registering, and the last
 * view's deregistration with what its failure means.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "reg.h"

#include <ucs/arch/atomic.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>


const char *gpumem_reg_access_name(gpumem_reg_access_t access)
{
    switch (access) {
    case GPUMEM_REG_ACCESS_LOCAL:
        return "local";
    case GPUMEM_REG_ACCESS_REMOTE_WRITE:
        return "remote write";
    case GPUMEM_REG_ACCESS_REMOTE:
        return "remote";
    default:
        return "unknown access";
    }
}

const char *gpumem_reg_order_name(gpumem_reg_order_t order)
{
    switch (order) {
    case GPUMEM_REG_ORDER_IN_ORDER:
        return "in order";
    case GPUMEM_REG_ORDER_ANY:
        return "any order";
    default:
        return "unknown order";
    }
}

ucs_status_t gpumem_reg_status_from_errno(int err)
{
    switch (err) {
    case ENOMEM:
        return UCS_ERR_NO_MEMORY;
    case EOPNOTSUPP:
        return UCS_ERR_UNSUPPORTED;
    case EBUSY:
        return UCS_ERR_BUSY;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

static void gpumem_reg_rlimit_str(rlim_t value, char *buf, size_t max)
{
    if (value == RLIM_INFINITY) {
        ucs_strncpy_zero(buf, "unlimited", max);
    } else {
        snprintf(buf, max, "%llu bytes", (unsigned long long)value);
    }
}

const char *gpumem_reg_refusal_reason(int err, size_t bytes, char *buf,
                                      size_t max)
{
    char soft[32], hard[32];
    struct rlimit limit;

    /* Pinning pages counts against RLIMIT_MEMLOCK: the kernel says ENOMEM
     * when the pages would pass it, EPERM when the limit is zero */
    if (((err != ENOMEM) && (err != EPERM)) ||
        (getrlimit(RLIMIT_MEMLOCK, &limit) != 0)) {
        snprintf(buf, max, "%s", strerror(err));
        return buf;
    }

    gpumem_reg_rlimit_str(limit.rlim_cur, soft, sizeof(soft));
    gpumem_reg_rlimit_str(limit.rlim_max, hard, sizeof(hard));
    snprintf(buf, max,
             "%s: the locked-memory limit RLIMIT_MEMLOCK is %s (hard limit "
             "%s) and must hold the %zu bytes asked on top of what this "
             "process has locked already; raise it with 'ulimit -l' or in "
             "/etc/security/limits.conf",
             strerror(err), soft, hard, bytes);
    return buf;
}

ucs_status_t gpumem_reg_domain_init(gpumem_reg_domain_t *domain,
                                    const char *name,
                                    const gpumem_reg_ops_t *ops,
                                    void *ops_arg)
{
    size_t len = strlen(name);

    if ((len == 0) || (len >= sizeof(domain->name))) {
        ucs_error("gpumem: registration domain name '%s' must have 1 to %zu "
                  "bytes", name, sizeof(domain->name) - 1);
        return UCS_ERR_INVALID_PARAM;
    }

    ucs_strncpy_zero(domain->name, name, sizeof(domain->name));
    domain->ops         = ops;
    domain->ops_arg     = ops_arg;
    domain->num_regions = 0;
    ucs_list_head_init(&domain->held);
    pthread_mutex_init(&domain->lock, NULL);
    return UCS_OK;
}

void gpumem_reg_domain_cleanup(gpumem_reg_domain_t *domain)
{
    gpumem_reg_region_t *region, *tmp;

    if (domain->num_regions != 0) {
        ucs_warn("gpumem: %s: closing with %u registrations still viewed; "
                 "closing the device releases them", domain->name,
                 domain->num_regions);
    }

    /* Another try; whatever still fails goes when the driver closes the
     * device, which is what the seed's "until the NIC closes" means */
    ucs_list_for_each_safe(region, tmp, &domain->held, list) {
        if (domain->ops->mr_deregister(domain->ops_arg, &region->mr) ==
            UCS_OK) {
            ucs_debug("gpumem: %s: deregistered [0x%" PRIx64 ", +%zu) on "
                      "close", domain->name, region->mr.address,
                      region->length);
        }
        ucs_list_del(&region->list);
        ucs_free(region);
    }

    pthread_mutex_destroy(&domain->lock);
}

/* Zero bytes, a negative offset or descriptor: the seed's invalid arguments.
 * Bytes that wrap past the end of the address space are as invalid. */
static ucs_status_t gpumem_reg_check_host(const gpumem_reg_domain_t *domain,
                                          const gpumem_reg_params_t *params)
{
    const void *address = params->memory.host.address;
    size_t length       = params->memory.host.length;

    if (length == 0) {
        ucs_log(params->log_level, "gpumem: %s: cannot register 0 bytes of "
                "host memory at %p: a region has at least one byte",
                domain->name, address);
        return UCS_ERR_INVALID_PARAM;
    }

    if (address == NULL) {
        ucs_log(params->log_level, "gpumem: %s: cannot register %zu bytes of "
                "host memory at NULL", domain->name, length);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((uintptr_t)address > (UINTPTR_MAX - length)) {
        ucs_log(params->log_level, "gpumem: %s: host bytes [%p, %p+%zu) wrap "
                "past the end of the address space", domain->name, address,
                address, length);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

static ucs_status_t gpumem_reg_check_dmabuf(const gpumem_reg_domain_t *domain,
                                            const gpumem_reg_params_t *params)
{
    const gpumem_reg_dmabuf_t *dmabuf = &params->memory.dmabuf;

    if (dmabuf->fd < 0) {
        ucs_log(params->log_level, "gpumem: %s: dma-buf descriptor %d is "
                "negative", domain->name, dmabuf->fd);
        return UCS_ERR_INVALID_PARAM;
    }

    if (dmabuf->offset < 0) {
        ucs_log(params->log_level, "gpumem: %s: offset %" PRId64 " in dma-buf "
                "%d is negative", domain->name, dmabuf->offset, dmabuf->fd);
        return UCS_ERR_INVALID_PARAM;
    }

    if (dmabuf->bytes <= 0) {
        ucs_log(params->log_level, "gpumem: %s: cannot register %" PRId64
                " bytes of dma-buf %d: a region has at least one byte",
                domain->name, dmabuf->bytes, dmabuf->fd);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((dmabuf->offset > (INT64_MAX - dmabuf->bytes)) ||
        (dmabuf->iova > (UINT64_MAX - (uint64_t)dmabuf->bytes)) ||
        ((uintptr_t)dmabuf->host_address >
         (UINTPTR_MAX - (uint64_t)dmabuf->bytes))) {
        ucs_log(params->log_level, "gpumem: %s: %" PRId64 " bytes at offset "
                "%" PRId64 " of dma-buf %d (address 0x%" PRIx64 ", host "
                "address %p) wrap past the end of an address space",
                domain->name, dmabuf->bytes, dmabuf->offset, dmabuf->fd,
                dmabuf->iova, dmabuf->host_address);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

static ucs_status_t gpumem_reg_check(const gpumem_reg_domain_t *domain,
                                     const gpumem_reg_params_t *params)
{
    if ((unsigned)params->access >= GPUMEM_REG_ACCESS_LAST) {
        ucs_log(params->log_level, "gpumem: %s: unknown access %d",
                domain->name, params->access);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((unsigned)params->order >= GPUMEM_REG_ORDER_LAST) {
        ucs_log(params->log_level, "gpumem: %s: unknown order %d",
                domain->name, params->order);
        return UCS_ERR_INVALID_PARAM;
    }

    switch (params->memory.type) {
    case GPUMEM_REG_MEMORY_HOST:
        return gpumem_reg_check_host(domain, params);
    case GPUMEM_REG_MEMORY_DMABUF:
        return gpumem_reg_check_dmabuf(domain, params);
    default:
        ucs_log(params->log_level, "gpumem: %s: unknown memory type %d",
                domain->name, params->memory.type);
        return UCS_ERR_INVALID_PARAM;
    }
}

/* Records which memory a region covers: its host bytes, and for a dma-buf
 * the buffer's identity (one dma-buf has one inode however many descriptors
 * name it) and its byte range */
static void gpumem_reg_region_set_memory(gpumem_reg_region_t *region,
                                         const gpumem_reg_memory_t *memory)
{
    struct stat st;

    region->host_start   = 0;
    region->host_end     = 0;
    region->dmabuf_known = 0;

    if (memory->type == GPUMEM_REG_MEMORY_HOST) {
        region->host_start = (uintptr_t)memory->host.address;
        region->host_end   = region->host_start + memory->host.length;
        return;
    }

    if (memory->dmabuf.host_address != NULL) {
        region->host_start = (uintptr_t)memory->dmabuf.host_address;
        region->host_end   = region->host_start + memory->dmabuf.bytes;
    }

    /* A descriptor that cannot be read is the driver's to refuse */
    if (fstat(memory->dmabuf.fd, &st) == 0) {
        region->dmabuf_known = 1;
        region->dmabuf_dev   = st.st_dev;
        region->dmabuf_ino   = st.st_ino;
        region->dmabuf_start = memory->dmabuf.offset;
        region->dmabuf_end   = memory->dmabuf.offset + memory->dmabuf.bytes;
    }
}

static int gpumem_reg_regions_overlap(const gpumem_reg_region_t *a,
                                      const gpumem_reg_region_t *b)
{
    if ((a->host_start < b->host_end) && (b->host_start < a->host_end)) {
        return 1;
    }

    return a->dmabuf_known && b->dmabuf_known &&
           (a->dmabuf_dev == b->dmabuf_dev) &&
           (a->dmabuf_ino == b->dmabuf_ino) &&
           (a->dmabuf_start < b->dmabuf_end) &&
           (b->dmabuf_start < a->dmabuf_end);
}

/* The seed: after a failed deregistration the program must not reuse that
 * memory before the NIC closes. What this domain can prevent, it does: it
 * registers none of it again. */
static ucs_status_t
gpumem_reg_check_not_held(gpumem_reg_domain_t *domain,
                          const gpumem_reg_region_t *candidate,
                          ucs_log_level_t log_level)
{
    const gpumem_reg_region_t *held;
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&domain->lock);
    ucs_list_for_each(held, &domain->held, list) {
        if (gpumem_reg_regions_overlap(candidate, held)) {
            ucs_log(log_level, "gpumem: %s: cannot register memory that "
                    "overlaps [0x%" PRIx64 ", +%zu): its deregistration "
                    "failed and the NIC may still read and write it until "
                    "the domain closes", domain->name, held->mr.address,
                    held->length);
            status = UCS_ERR_BUSY;
            break;
        }
    }
    pthread_mutex_unlock(&domain->lock);

    return status;
}

ucs_status_t gpumem_reg_register(gpumem_reg_domain_t *domain,
                                 const gpumem_reg_params_t *params,
                                 gpumem_reg_view_t *view_p)
{
    gpumem_reg_region_t *region;
    ucs_status_t status;

    status = gpumem_reg_check(domain, params);
    if (status != UCS_OK) {
        return status;
    }

    region = ucs_malloc(sizeof(*region), "gpumem_reg_region");
    if (region == NULL) {
        ucs_log(params->log_level, "gpumem: %s: failed to allocate a region",
                domain->name);
        return UCS_ERR_NO_MEMORY;
    }

    gpumem_reg_region_set_memory(region, &params->memory);
    status = gpumem_reg_check_not_held(domain, region, params->log_level);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = domain->ops->mr_register(domain->ops_arg, params, &region->mr);
    if (status != UCS_OK) {
        goto err_free;
    }

    region->domain   = domain;
    region->access   = params->access;
    region->order    = params->order;
    region->length   = (params->memory.type == GPUMEM_REG_MEMORY_HOST) ?
                       params->memory.host.length :
                       (size_t)params->memory.dmabuf.bytes;
    region->refcount = 1;

    pthread_mutex_lock(&domain->lock);
    ++domain->num_regions;
    pthread_mutex_unlock(&domain->lock);

    view_p->region       = region;
    view_p->address      = region->mr.address;
    view_p->host_address = region->mr.host_address;
    view_p->length       = region->length;
    return UCS_OK;

err_free:
    ucs_free(region);
    return status;
}

void gpumem_reg_view_copy(const gpumem_reg_view_t *view,
                          gpumem_reg_view_t *copy_p)
{
    ucs_assert(view->region->refcount > 0);
    ucs_atomic_add32(&view->region->refcount, 1);
    *copy_p = *view;
}

static ucs_status_t gpumem_reg_region_deregister(gpumem_reg_region_t *region)
{
    gpumem_reg_domain_t *domain = region->domain;
    ucs_status_t status;

    status = domain->ops->mr_deregister(domain->ops_arg, &region->mr);

    pthread_mutex_lock(&domain->lock);
    --domain->num_regions;
    if (status != UCS_OK) {
        ucs_list_add_tail(&domain->held, &region->list);
    }
    pthread_mutex_unlock(&domain->lock);

    if (status != UCS_OK) {
        ucs_warn("gpumem: %s: [0x%" PRIx64 ", +%zu) counts as deregistered, "
                 "but the NIC may still read and write it until the domain "
                 "closes: do not reuse or free that memory before then",
                 domain->name, region->mr.address, region->length);
        return status;
    }

    ucs_free(region);
    return UCS_OK;
}

ucs_status_t gpumem_reg_view_release(gpumem_reg_view_t *view)
{
    gpumem_reg_region_t *region = view->region;

    ucs_assert(region != NULL);
    view->region = NULL;

    if (ucs_atomic_fsub32(&region->refcount, 1) > 1) {
        return UCS_OK;
    }

    return gpumem_reg_region_deregister(region);
}
