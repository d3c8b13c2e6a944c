/**
 * gpumem IPC transport: the remote key, as packed by the owner of the memory
 * and checked by the peer that unpacks it.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IPC_KEY_H_
#define UCT_GPUMEM_IPC_KEY_H_

#include <uct/gpumem/mem/gpumem_mem.h>

#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_GPUMEM_IPC_KEY_VERSION  1


/**
 * What a peer needs to map registered device memory, and nothing more: who
 * owns it, on which GPU, the allocation and the registered range within it,
 * and the memory core's export handle of the allocation.
 */
typedef struct uct_gpumem_ipc_key {
    uint32_t          uid;           /* The owner's user */
    pid_t             pid;           /* The owner process */
    uint64_t          machine;       /* The owner's machine identity */
    gpumem_pci_addr_t gpu;           /* The GPU whose memory it is */
    uint64_t          alloc_address; /* The allocation, at the owner's device
                                        addresses */
    size_t            alloc_size;
    uint64_t          address;       /* The registered range: what the peer
                                        may read and write */
    size_t            length;
    size_t            handle_len;
    uint8_t           handle[GPUMEM_EXPORT_MAX];
} uct_gpumem_ipc_key_t;


/* Bytes of every packed key: a fixed size, as UCT wants */
size_t uct_gpumem_ipc_key_packed_size(void);

/* Writes uct_gpumem_ipc_key_packed_size() bytes at @a buffer */
void uct_gpumem_ipc_key_pack(const uct_gpumem_ipc_key_t *key, void *buffer);

/**
 * Reads a packed key of @a size bytes from a peer. Checks its form: size,
 * magic, version, lengths, zero padding, and that the registered range lies
 * inside the allocation. UCS_ERR_INVALID_PARAM with a logged reason for a
 * bad one.
 */
ucs_status_t uct_gpumem_ipc_key_unpack(const void *buffer, size_t size,
                                       uct_gpumem_ipc_key_t *key);

/**
 * Whether the memory of @a key is memory this process may map: the owner
 * is of this user and this machine. UCS_ERR_UNREACHABLE with a logged
 * reason otherwise.
 */
ucs_status_t uct_gpumem_ipc_key_check_owner(const uct_gpumem_ipc_key_t *key,
                                            uint32_t uid, uint64_t machine);

END_C_DECLS

#endif
