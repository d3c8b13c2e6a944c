/**
 * gpumem verbs: GPU memory as an RDMA device reaches it: through the
 * driver's dma-buf of its VRAM or through the GPU's BAR window, as the
 * memory core chooses (gpumem_nic_export), and what a registration holds of
 * the memory while it lives.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IB_DEVICE_H_
#define UCT_GPUMEM_IB_DEVICE_H_

#include <uct/gpumem/gpumem_context.h>
#include <uct/gpumem/mem/gpumem_nic.h>
#include <uct/gpumem/reg/reg.h>

BEGIN_C_DECLS

/**
 * How device memory is registered: the UCX_GPUMEM_IB_DEVICE_MEM_REG setting.
 */
typedef enum uct_gpumem_ib_device_reg {
    UCT_GPUMEM_IB_DEVICE_REG_AUTO   = GPUMEM_NIC_ALLOW_ANY,
    UCT_GPUMEM_IB_DEVICE_REG_DMABUF = GPUMEM_NIC_ALLOW_DMABUF,
    UCT_GPUMEM_IB_DEVICE_REG_BAR    = GPUMEM_NIC_ALLOW_BAR,
    UCT_GPUMEM_IB_DEVICE_REG_LAST
} uct_gpumem_ib_device_reg_t;

/* "auto", "dmabuf", "bar", in the order above, for the configuration */
extern const char *uct_gpumem_ib_device_reg_names[];


/**
 * Device memory a registration covers, and what it holds of it until the
 * NIC no longer reaches it: a reference on the process's GPUs, so that the
 * driver stays open, and the BAR window, whose pages the NIC may reach.
 */
typedef struct uct_gpumem_ib_device_mem {
    uct_gpumem_context_t       *context;    /* Referenced */
    gpumem_nic_export_t        nic_export;  /* The dma-buf, until the
                                               registration is made, and the
                                               BAR window where the memory
                                               lies within the BAR */
} uct_gpumem_ib_device_mem_t;


/**
 * Prepare @a length bytes of device memory at @a address for registration:
 * find the allocation that holds them, choose the way, export the dma-buf
 * or map the BAR window, and say what to register: the dma-buf (with the
 * window as its host mapping where the memory lies in the BAR), or the
 * window's host pages. Either way the NIC is to name the bytes by
 * @a address, as the dma-buf's iova says; the window's host pages the
 * caller registers under that address. The choice is logged at debug level.
 *
 * @param [in]  settings   The settings the process's GPUs open with, where
 *                         they are not open (a reference is taken).
 * @param [in]  setting    UCX_GPUMEM_IB_DEVICE_MEM_REG.
 * @param [in]  nic        The NIC's name, for logs.
 * @param [in]  address    First byte, a device address.
 * @param [in]  length     Bytes.
 * @param [in]  log_level  Level of a refusal's log line.
 * @param [out] mem_p      What the registration holds, set only on success;
 *                         give it back with uct_gpumem_ib_device_mem_close.
 * @param [out] memory_p   The memory to register.
 *
 * @return UCS_ERR_INVALID_ADDR, logged, for bytes that no allocation of the
 *         process's GPUs holds whole; UCS_ERR_UNSUPPORTED, logged with the
 *         reason, for system memory and where neither way is open; the
 *         driver's error when mapping the window fails.
 */
ucs_status_t
uct_gpumem_ib_device_mem_open(const uct_gpumem_settings_t *settings,
                              uct_gpumem_ib_device_reg_t setting,
                              const char *nic, void *address, size_t length,
                              ucs_log_level_t log_level,
                              uct_gpumem_ib_device_mem_t **mem_p,
                              gpumem_reg_memory_t *memory_p);


/**
 * The registration was made or refused: the dma-buf's descriptor goes (the
 * kernel keeps the dma-buf itself while the NIC holds it).
 */
void uct_gpumem_ib_device_mem_registered(uct_gpumem_ib_device_mem_t *mem);


/**
 * Give back what @a mem holds: the descriptor, the window, the reference.
 * Only once the NIC no longer reaches the memory.
 */
void uct_gpumem_ib_device_mem_close(uct_gpumem_ib_device_mem_t *mem);

END_C_DECLS

#endif
