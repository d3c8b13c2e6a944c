/**
 * gpumem UCM: memory-type events for device allocations.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucm_gpumem.h"

#include <ucm/event/event.h>


void ucm_gpumem_dispatch_alloc(void *address, size_t size,
                               ucs_memory_type_t mem_type)
{
    ucm_event_t event;

    event.mem_type.address  = address;
    event.mem_type.size     = size;
    event.mem_type.mem_type = mem_type;
    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, &event);
}

void ucm_gpumem_dispatch_free(void *address, size_t size,
                              ucs_memory_type_t mem_type)
{
    ucm_event_t event;

    event.mem_type.address  = address;
    event.mem_type.size     = size;
    event.mem_type.mem_type = mem_type;
    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_FREE, &event);
}
