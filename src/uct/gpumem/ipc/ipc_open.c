/**
 * gpumem IPC transport: the interfaces open in this process.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ipc_open.h"

#include <pthread.h>


static pthread_mutex_t uct_gpumem_ipc_open_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(uct_gpumem_ipc_open_list);
static uint32_t uct_gpumem_ipc_open_last_id;


void uct_gpumem_ipc_open_add(uct_gpumem_ipc_open_t *entry)
{
    pthread_mutex_lock(&uct_gpumem_ipc_open_lock);
    /* 0 is no interface's; after 2^32 - 1 opens, an id may name a closed
     * interface's successor, as a reused pid does */
    if (++uct_gpumem_ipc_open_last_id == 0) {
        ++uct_gpumem_ipc_open_last_id;
    }
    entry->id = uct_gpumem_ipc_open_last_id;
    ucs_list_add_tail(&uct_gpumem_ipc_open_list, &entry->list);
    pthread_mutex_unlock(&uct_gpumem_ipc_open_lock);
}

void uct_gpumem_ipc_open_remove(uct_gpumem_ipc_open_t *entry)
{
    pthread_mutex_lock(&uct_gpumem_ipc_open_lock);
    ucs_list_del(&entry->list);
    pthread_mutex_unlock(&uct_gpumem_ipc_open_lock);
}

int uct_gpumem_ipc_open_has(uint32_t id)
{
    uct_gpumem_ipc_open_t *entry;
    int found = 0;

    pthread_mutex_lock(&uct_gpumem_ipc_open_lock);
    ucs_list_for_each(entry, &uct_gpumem_ipc_open_list, list) {
        if (entry->id == id) {
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&uct_gpumem_ipc_open_lock);
    return found;
}
