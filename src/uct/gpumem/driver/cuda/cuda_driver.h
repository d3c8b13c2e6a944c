/**
 * gpumem cuda driver: NVIDIA GPUs through the CUDA driver API, behind the
 * same driver interface as the emu driver.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_CUDA_DRIVER_H_
#define GPUMEM_CUDA_DRIVER_H_

#include <uct/gpumem/driver/gpumem_driver.h>

BEGIN_C_DECLS

/**
 * Whether a CUDA device answers: libcuda.so.1 opens, cuInit succeeds and
 * at least one device is there. UCS_ERR_NO_DEVICE (or the status of the
 * failed call) otherwise, with @a why_buf saying why in one phrase;
 * nothing is logged.
 */
ucs_status_t gpumem_cuda_probe(char *why_buf, size_t max);


/**
 * The PCI address in a bus id of cuDeviceGetPCIBusId ("0000:1B:00.0",
 * "00000000:1b:00.0"); UCS_ERR_INVALID_PARAM for anything else.
 */
ucs_status_t gpumem_cuda_bus_id_parse(const char *bus_id,
                                      gpumem_pci_addr_t *addr_p);


/**
 * Open the CUDA devices of the process, in PCI address order, each matched
 * to the GPU of @a topo (the live machine) at its PCI bus id for its
 * reach() facts, which are cross-checked with cuDeviceCanAccessPeer.
 */
ucs_status_t gpumem_cuda_open(gpumem_topo_t *topo, gpumem_driver_t **driver_p);

END_C_DECLS

#endif
