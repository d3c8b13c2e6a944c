/**
 * gpumem verbs: the driver below a registration domain: ibv_reg_mr for host
 * pages (under another address for a GPU's BAR window), ibv_reg_dmabuf_mr
 * for a dma-buf with the host pages as the way in when the device refuses
 * it, ibv_dereg_mr.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ib_md.h"
#include "ib_access.h"

#include <ucm/api/ucm.h>
#include <ucs/arch/atomic.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>


#define UCT_GPUMEM_IB_REASON_MAX  512
#define UCT_GPUMEM_IB_CALL_MAX    160

/* UCM calls the handlers of an event from the lowest priority up */
#define UCT_GPUMEM_IB_FREE_EVENT_PRIORITY  -1


/**
 * A registration as the verbs driver keeps it: the domain's handle.
 */
typedef struct uct_gpumem_ib_mr {
    struct ibv_mr              *ibv_mr;  /* NULL once revoked */
    uct_gpumem_ib_device_mem_t *device;  /* Device memory the device may
                                            reach while registered, or
                                            NULL */
    uint64_t                   address;  /* The bytes as the device names */
    size_t                     length;   /* them */
    ucs_list_link_t            list;     /* In md->mrs */
    ucs_list_link_t            device_list; /* In md->device_mrs, where it
                                               registers device memory */
} uct_gpumem_ib_mr_t;


static void uct_gpumem_ib_mr_fill(const struct ibv_mr *mr, uint64_t address,
                                  void *host_address, gpumem_reg_mr_t *mr_p)
{
    mr_p->address      = address;
    mr_p->host_address = host_address;
    mr_p->lkey         = mr->lkey;
    mr_p->rkey         = mr->rkey;
}

/* Logs a kernel refusal with the call, what it asked and why it was
 * refused */
static ucs_status_t
uct_gpumem_ib_mr_refused(const uct_gpumem_ib_md_t *md,
                         const gpumem_reg_params_t *params, const char *call,
                         size_t length, unsigned flags, int err,
                         const char *extra)
{
    char reason[UCT_GPUMEM_IB_REASON_MAX];

    ucs_log(params->log_level, "gpumem: %s: %s for %s access, %s (access "
            "flags 0x%x) failed: %s%s", md->domain.name, call,
            gpumem_reg_access_name(params->access),
            gpumem_reg_order_name(params->order), flags,
            gpumem_reg_refusal_reason(err, length, reason, sizeof(reason)),
            extra);
    return gpumem_reg_status_from_errno(err);
}

static ucs_status_t
uct_gpumem_ib_mr_register_host(uct_gpumem_ib_md_t *md,
                               const uct_gpumem_ib_reg_params_t *ib_params,
                               struct ibv_mr **ibv_mr_p,
                               gpumem_reg_mr_t *mr_p)
{
    const gpumem_reg_params_t *params = &ib_params->super;
    const gpumem_reg_host_t *host     = &params->memory.host;
    unsigned flags = uct_gpumem_ib_access_flags(params->access, params->order);
    char call[UCT_GPUMEM_IB_CALL_MAX];
    struct ibv_mr *mr;
    int err;

    mr = ibv_reg_mr_iova(md->pd, host->address, host->length,
                         ib_params->host_iova, flags);
    if (mr == NULL) {
        err = errno;
        snprintf(call, sizeof(call), "ibv_reg_mr_iova(address=%p, "
                 "length=%zu, iova=0x%" PRIx64 ")", host->address,
                 host->length, ib_params->host_iova);
        return uct_gpumem_ib_mr_refused(md, params, call, host->length,
                                        flags, err, "");
    }

    uct_gpumem_ib_mr_fill(mr, ib_params->host_iova, host->address, mr_p);
    *ibv_mr_p = mr;
    return UCS_OK;
}

static struct ibv_mr *
uct_gpumem_ib_reg_dmabuf_mr(uct_gpumem_ib_md_t *md,
                            const gpumem_reg_dmabuf_t *dmabuf, unsigned flags)
{
#if HAVE_DECL_IBV_REG_DMABUF_MR
    return ibv_reg_dmabuf_mr(md->pd, dmabuf->offset, dmabuf->bytes,
                             dmabuf->iova, dmabuf->fd, flags);
#else
    (void)md;
    (void)dmabuf;
    (void)flags;
    errno = EOPNOTSUPP;
    return NULL;
#endif
}

/* The device refuses dma-bufs (soft-RoCE does): said once per domain, since
 * it holds for every dma-buf that follows */
static void uct_gpumem_ib_mr_say_fallback(uct_gpumem_ib_md_t *md, int err)
{
    if (ucs_atomic_cswap32(&md->dmabuf_fallback_said, 0, 1) != 0) {
        return;
    }

    ucs_warn("gpumem: %s refuses to register dma-bufs (%s): dma-bufs mapped "
             "in this process are registered through their host pages "
             "instead (said once)", md->domain.name, strerror(err));
}

static ucs_status_t
uct_gpumem_ib_mr_register_dmabuf(uct_gpumem_ib_md_t *md,
                                 const gpumem_reg_params_t *params,
                                 struct ibv_mr **ibv_mr_p,
                                 gpumem_reg_mr_t *mr_p)
{
    const gpumem_reg_dmabuf_t *dmabuf = &params->memory.dmabuf;
    unsigned flags = uct_gpumem_ib_access_flags(params->access, params->order);
    char call[UCT_GPUMEM_IB_CALL_MAX];
    struct ibv_mr *mr;
    int err;

    mr = uct_gpumem_ib_reg_dmabuf_mr(md, dmabuf, flags);
    if (mr != NULL) {
        uct_gpumem_ib_mr_fill(mr, dmabuf->iova, dmabuf->host_address, mr_p);
        *ibv_mr_p = mr;
        return UCS_OK;
    }

    err = errno;
    if ((err != EOPNOTSUPP) || (dmabuf->host_address == NULL)) {
        snprintf(call, sizeof(call), "ibv_reg_dmabuf_mr(fd=%d, offset=%"
                 PRId64 ", length=%" PRId64 ", iova=0x%" PRIx64 ")",
                 dmabuf->fd, dmabuf->offset, dmabuf->bytes, dmabuf->iova);
        return uct_gpumem_ib_mr_refused(md, params, call, dmabuf->bytes,
                                        flags, err,
                                        (err == EOPNOTSUPP) ?
                                        ", and the dma-buf has no host "
                                        "mapping to register instead" : "");
    }

    uct_gpumem_ib_mr_say_fallback(md, err);

    /* The same bytes through their host pages, named by the same address,
     * so that peers cannot tell the difference */
    mr = ibv_reg_mr_iova(md->pd, dmabuf->host_address, dmabuf->bytes,
                         dmabuf->iova, flags);
    if (mr == NULL) {
        err = errno;
        snprintf(call, sizeof(call), "ibv_reg_mr_iova(address=%p, length=%"
                 PRId64 ", iova=0x%" PRIx64 ") of a dma-buf's host pages",
                 dmabuf->host_address, dmabuf->bytes, dmabuf->iova);
        return uct_gpumem_ib_mr_refused(md, params, call, dmabuf->bytes,
                                        flags, err, "");
    }

    uct_gpumem_ib_mr_fill(mr, dmabuf->iova, dmabuf->host_address, mr_p);
    *ibv_mr_p = mr;
    return UCS_OK;
}

static ucs_status_t uct_gpumem_ib_mr_register(void *arg,
                                              const gpumem_reg_params_t *params,
                                              gpumem_reg_mr_t *mr_p)
{
    const uct_gpumem_ib_reg_params_t *ib_params =
            ucs_derived_of(params, uct_gpumem_ib_reg_params_t);
    uct_gpumem_ib_md_t *md = arg;
    uct_gpumem_ib_mr_t *mr;
    ucs_status_t status;

    mr = ucs_malloc(sizeof(*mr), "gpumem_ib_mr");
    if (mr == NULL) {
        ucs_log(params->log_level, "gpumem: %s: failed to allocate a "
                "registration", md->domain.name);
        return UCS_ERR_NO_MEMORY;
    }

    if (params->memory.type == GPUMEM_REG_MEMORY_DMABUF) {
        status = uct_gpumem_ib_mr_register_dmabuf(md, params, &mr->ibv_mr,
                                                  mr_p);
    } else {
        status = uct_gpumem_ib_mr_register_host(md, ib_params, &mr->ibv_mr,
                                                mr_p);
    }
    if (status != UCS_OK) {
        ucs_free(mr);
        return status;
    }

    mr->device   = ib_params->device;
    mr->address  = mr_p->address;
    mr->length   = mr->ibv_mr->length;
    mr_p->handle = mr;
    pthread_mutex_lock(&md->lock);
    ucs_list_add_tail(&md->mrs, &mr->list);
    if (mr->device != NULL) {
        ucs_list_add_tail(&md->device_mrs, &mr->device_list);
    }
    pthread_mutex_unlock(&md->lock);
    return UCS_OK;
}

/* The device no longer reaches the memory: what the registration held goes
 * back */
static void uct_gpumem_ib_mr_destroy(uct_gpumem_ib_mr_t *mr)
{
    if (mr->device != NULL) {
        uct_gpumem_ib_device_mem_close(mr->device);
    }
    ucs_free(mr);
}

static ucs_status_t uct_gpumem_ib_mr_deregister(void *arg,
                                                const gpumem_reg_mr_t *reg_mr)
{
    uct_gpumem_ib_md_t *md = arg;
    uct_gpumem_ib_mr_t *mr = reg_mr->handle;
    struct ibv_mr *ibv_mr;
    int ret;

    /* Taken from a revocation, which finds it deregistered; NULL where one
     * revoked it already: the device no longer reaches it */
    pthread_mutex_lock(&md->lock);
    ibv_mr     = mr->ibv_mr;
    mr->ibv_mr = NULL;
    pthread_mutex_unlock(&md->lock);

    ret = (ibv_mr == NULL) ? 0 : ibv_dereg_mr(ibv_mr);
    if (ret != 0) {
        pthread_mutex_lock(&md->lock);
        mr->ibv_mr = ibv_mr;
        pthread_mutex_unlock(&md->lock);
        ucs_error("gpumem: %s: ibv_dereg_mr(address=0x%" PRIx64 ", length=%zu) "
                  "failed: %s", md->domain.name, mr->address, mr->length,
                  strerror(ret));
        return gpumem_reg_status_from_errno(ret);
    }

    pthread_mutex_lock(&md->lock);
    ucs_list_del(&mr->list);
    if (mr->device != NULL) {
        ucs_list_del(&mr->device_list);
    }
    pthread_mutex_unlock(&md->lock);
    uct_gpumem_ib_mr_destroy(mr);
    return UCS_OK;
}

/* Device memory at [start, end) is about to be freed: the device stops
 * reaching it now. What the registrations hold of it (the window, the
 * GPUs' reference) goes at their deregistration, outside the free. */
static void uct_gpumem_ib_mr_revoke(uct_gpumem_ib_md_t *md, uint64_t start,
                                    uint64_t end)
{
    uct_gpumem_ib_mr_t *mr;
    int ret;

    pthread_mutex_lock(&md->lock);
    ucs_list_for_each(mr, &md->device_mrs, device_list) {
        if ((mr->ibv_mr == NULL) || (mr->address >= end) ||
            ((mr->address + mr->length) <= start)) {
            continue;
        }

        ret = ibv_dereg_mr(mr->ibv_mr);
        if (ret != 0) {
            ucs_error("gpumem: %s: device memory [0x%" PRIx64 ", +%zu) is "
                      "being freed, but ibv_dereg_mr() of its registration "
                      "failed: %s; the device may still reach it",
                      md->domain.name, mr->address, mr->length,
                      strerror(ret));
            continue;
        }

        mr->ibv_mr = NULL;
        ucs_debug("gpumem: %s: device memory [0x%" PRIx64 ", +%zu) is being "
                  "freed: its registration is revoked", md->domain.name,
                  mr->address, mr->length);
    }
    pthread_mutex_unlock(&md->lock);
}

static void uct_gpumem_ib_mr_freed(ucm_event_type_t UCS_V_UNUSED event_type,
                                   ucm_event_t *event, void *arg)
{
    uint64_t start = (uintptr_t)event->mem_type.address;

    uct_gpumem_ib_mr_revoke(arg, start, start + event->mem_type.size);
}

void uct_gpumem_ib_mr_watch_frees(uct_gpumem_ib_md_t *md)
{
    ucs_status_t status;

    /* Before the registration caches' own handlers, which may keep a
     * registration until their next call; the plugin dispatches its
     * allocations' events itself, so nothing is to be installed */
    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE |
                                   UCM_EVENT_FLAG_NO_INSTALL,
                                   UCT_GPUMEM_IB_FREE_EVENT_PRIORITY,
                                   uct_gpumem_ib_mr_freed, md);
    if (status != UCS_OK) {
        ucs_diag("gpumem: %s: cannot watch device memory's free events (%s): "
                 "deregister device memory before freeing it",
                 md->domain.name, ucs_status_string(status));
        return;
    }

    md->watches_frees = 1;
}

void uct_gpumem_ib_mr_unwatch_frees(uct_gpumem_ib_md_t *md)
{
    if (md->watches_frees) {
        ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE,
                                uct_gpumem_ib_mr_freed, md);
        md->watches_frees = 0;
    }
}

void uct_gpumem_ib_mr_cleanup(uct_gpumem_ib_md_t *md)
{
    uct_gpumem_ib_mr_t *mr, *tmp;

    ucs_list_for_each_safe(mr, tmp, &md->mrs, list) {
        ucs_list_del(&mr->list);
        if (mr->device != NULL) {
            ucs_list_del(&mr->device_list);
        }
        uct_gpumem_ib_mr_destroy(mr);
    }
}

const gpumem_reg_ops_t uct_gpumem_ib_reg_ops = {
    .mr_register   = uct_gpumem_ib_mr_register,
    .mr_deregister = uct_gpumem_ib_mr_deregister
};
