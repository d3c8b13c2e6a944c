/**
 * gpumem IPC transport: the interfaces open in this process, each with an
 * id of its own, so that an endpoint to one of them tells its close
 * (ep_check) as an endpoint to another process tells that process's death.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_OPEN_H_
#define UCT_GPUMEM_IPC_OPEN_H_

#include <ucs/datastruct/list.h>
#include <ucs/sys/compiler_def.h>
#include <stdint.h>

BEGIN_C_DECLS

/**
 * An interface's entry in the process's list of open ones.
 */
typedef struct uct_gpumem_ipc_open {
    ucs_list_link_t list;
    uint32_t        id;    /* Given once in the process's life, never 0 */
} uct_gpumem_ipc_open_t;


/* Gives @a entry its id and lists it open */
void uct_gpumem_ipc_open_add(uct_gpumem_ipc_open_t *entry);

/* Lists @a entry no longer: its interface closes */
void uct_gpumem_ipc_open_remove(uct_gpumem_ipc_open_t *entry);

/* Whether the interface of @a id is open in this process */
int uct_gpumem_ipc_open_has(uint32_t id);

END_C_DECLS

#endif
