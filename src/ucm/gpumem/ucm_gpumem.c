/**
 * gpumem UCM: memory-type events for device allocations.
 *
 * UCX creates its memory type cache at its first lookup, and a handler that
 * asks for UCM_EVENT_FLAG_EXISTING_ALLOC learns of earlier allocations from
 * UCM's event installers only. So the live allocations are kept here, and an
 * installer reports them: device memory allocated before UCX looked is
 * still known to be device memory, which the CPU must not touch.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucm_gpumem.h"

#include <ucm/event/event.h>
#include <ucs/datastruct/khash.h>
#include <ucm/util/log.h>
#include <ucs/sys/preprocessor.h>
#include <ucs/sys/compiler_def.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>


typedef struct ucm_gpumem_alloc {
    size_t            size;
    ucs_memory_type_t mem_type;
    ucs_sys_device_t  sys_dev;
} ucm_gpumem_alloc_t;

KHASH_MAP_INIT_INT64(ucm_gpumem_allocs, ucm_gpumem_alloc_t);

/* The live allocations, by address */
static khash_t(ucm_gpumem_allocs) ucm_gpumem_allocs;
static pthread_mutex_t ucm_gpumem_allocs_lock = PTHREAD_MUTEX_INITIALIZER;


/* A memory type event; where UCM's events carry the system device and the
 * memory's flags (UCX 1.22), a known device's memory is registrable */
static void ucm_gpumem_event_init(ucm_event_t *event, void *address,
                                  size_t size, ucs_memory_type_t mem_type,
                                  ucs_sys_device_t sys_dev)
{
    memset(event, 0, sizeof(*event));
    event->mem_type.address  = address;
    event->mem_type.size     = size;
    event->mem_type.mem_type = mem_type;
#ifdef HAVE_UCM_MEM_TYPE_EVENT_SYS_DEV
    event->mem_type.sys_dev   = sys_dev;
    event->mem_type.mem_flags = (sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN) ? 0 :
                                UCS_MEM_FLAG_REGISTRABLE;
#else
    (void)sys_dev;
#endif
}

static void ucm_gpumem_dispatch(ucm_event_type_t event_type, void *address,
                                size_t size, ucs_memory_type_t mem_type,
                                ucs_sys_device_t sys_dev)
{
    ucm_event_t event;

    ucm_gpumem_event_init(&event, address, size, mem_type, sys_dev);
    /* As UCM's own events: no handler is removed while it runs */
    ucm_event_enter();
    ucm_event_dispatch(event_type, &event);
    ucm_event_leave();
}

void ucm_gpumem_dispatch_alloc(void *address, size_t size,
                               ucs_memory_type_t mem_type,
                               ucs_sys_device_t sys_dev)
{
    khiter_t iter;
    int ret;

    pthread_mutex_lock(&ucm_gpumem_allocs_lock);
    iter = kh_put(ucm_gpumem_allocs, &ucm_gpumem_allocs, (uintptr_t)address,
                  &ret);
    if (ret >= 0) {
        kh_value(&ucm_gpumem_allocs, iter).size     = size;
        kh_value(&ucm_gpumem_allocs, iter).mem_type = mem_type;
        kh_value(&ucm_gpumem_allocs, iter).sys_dev  = sys_dev;
    } else {
        /* Those who look later treat it as host memory */
        ucm_warn("gpumem: no room to remember %p..%p", address,
                 UCS_PTR_BYTE_OFFSET(address, size));
    }
    pthread_mutex_unlock(&ucm_gpumem_allocs_lock);

    ucm_gpumem_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, address, size, mem_type,
                        sys_dev);
}

void ucm_gpumem_dispatch_free(void *address, size_t size,
                              ucs_memory_type_t mem_type)
{
    ucs_sys_device_t sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    khiter_t iter;

    pthread_mutex_lock(&ucm_gpumem_allocs_lock);
    iter = kh_get(ucm_gpumem_allocs, &ucm_gpumem_allocs, (uintptr_t)address);
    if (iter != kh_end(&ucm_gpumem_allocs)) {
        sys_dev = kh_value(&ucm_gpumem_allocs, iter).sys_dev;
        kh_del(ucm_gpumem_allocs, &ucm_gpumem_allocs, iter);
    }
    pthread_mutex_unlock(&ucm_gpumem_allocs_lock);

    ucm_gpumem_dispatch(UCM_EVENT_MEM_TYPE_FREE, address, size, mem_type,
                        sys_dev);
}

void ucm_gpumem_dispatch_free_known(void *address)
{
    ucm_gpumem_alloc_t alloc;
    khiter_t iter;

    pthread_mutex_lock(&ucm_gpumem_allocs_lock);
    iter = kh_get(ucm_gpumem_allocs, &ucm_gpumem_allocs, (uintptr_t)address);
    if (iter == kh_end(&ucm_gpumem_allocs)) {
        pthread_mutex_unlock(&ucm_gpumem_allocs_lock);
        return;
    }
    alloc = kh_value(&ucm_gpumem_allocs, iter);
    kh_del(ucm_gpumem_allocs, &ucm_gpumem_allocs, iter);
    pthread_mutex_unlock(&ucm_gpumem_allocs_lock);

    ucm_gpumem_dispatch(UCM_EVENT_MEM_TYPE_FREE, address, alloc.size,
                        alloc.mem_type, alloc.sys_dev);
}

#ifndef HAVE_CUDA
ucs_status_t ucm_gpumem_cuda_install(void)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

/* The plugin's own allocations dispatch their events; the application's
 * CUDA calls are patched once someone asks for memory-type events */
static ucs_status_t ucm_gpumem_install(int events)
{
    if (events & (UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE)) {
        /* Without the patch, the plugin's own memory is still seen */
        (void)ucm_gpumem_cuda_install();
    }
    return UCS_OK;
}

static void ucm_gpumem_get_existing_alloc(ucm_event_handler_t *handler)
{
    ucm_gpumem_alloc_t alloc;
    ucm_event_t event;
    uint64_t address;

    if (!(handler->events & UCM_EVENT_MEM_TYPE_ALLOC)) {
        return;
    }

    pthread_mutex_lock(&ucm_gpumem_allocs_lock);
    kh_foreach(&ucm_gpumem_allocs, address, alloc, {
        ucm_gpumem_event_init(&event, (void*)(uintptr_t)address, alloc.size,
                              alloc.mem_type, alloc.sys_dev);
        ucm_event_enter();
        handler->cb(UCM_EVENT_MEM_TYPE_ALLOC, &event, handler->arg);
        ucm_event_leave();
    })
    pthread_mutex_unlock(&ucm_gpumem_allocs_lock);
}

static ucm_event_installer_t ucm_gpumem_installer = {
    .install            = ucm_gpumem_install,
    .get_existing_alloc = ucm_gpumem_get_existing_alloc
};

/* Whether another copy of the plugin in the process (one preloaded, this
 * one loaded by UCX from its module directory) installs the events: the
 * first copy's symbols are the process's */
static int ucm_gpumem_installer_added = 0;

static int ucm_gpumem_other_copy_loaded(void)
{
    void *first = dlsym(RTLD_DEFAULT, "ucm_gpumem_dispatch_alloc");

    return (first != NULL) && (first != (void*)ucm_gpumem_dispatch_alloc);
}

UCS_STATIC_INIT
{
    kh_init_inplace(ucm_gpumem_allocs, &ucm_gpumem_allocs);
    if (ucm_gpumem_other_copy_loaded()) {
        ucm_debug("gpumem: another copy of the plugin raises the memory "
                  "type events; this one installs nothing");
        return;
    }
    ucs_list_add_tail(&ucm_event_installer_list, &ucm_gpumem_installer.list);
    ucm_gpumem_installer_added = 1;
}

UCS_STATIC_CLEANUP
{
    if (ucm_gpumem_installer_added) {
        ucs_list_del(&ucm_gpumem_installer.list);
    }
    kh_destroy_inplace(ucm_gpumem_allocs, &ucm_gpumem_allocs);
}
