/**
 * gpumem fuzz target: the topology's XML front end (the file checks, the
 * size and depth bounds, the child that tries hwloc's own minimal parser
 * first, and the machine built from what hwloc made of it), fed files of
 * any bytes. Whatever it accepts must be a machine: its GPUs and NICs
 * counted, each at a PCI address of its own, each path within its bound.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/topo/topo.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


static char fuzz_path[64];
static int fuzz_fd = -1;


int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* hwloc's own parser, which recurses per element: what the depth bound
     * is there for */
    setenv("HWLOC_LIBXML_IMPORT", "0", 1);

    /* The document: a memfd, a regular file at a path, as a user's */
    fuzz_fd = memfd_create("gpumem-fuzz-xml", 0);
    fuzz_check(fuzz_fd >= 0);
    snprintf(fuzz_path, sizeof(fuzz_path), "/proc/self/fd/%d", fuzz_fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpumem_topo_params_t params = {0};
    gpumem_topo_t *topo;
    unsigned i, j;

    fuzz_check((ftruncate(fuzz_fd, 0) == 0) &&
               (pwrite(fuzz_fd, data, size, 0) == (ssize_t)size));

    params.xml_path   = fuzz_path;
    params.sysfs_root = "/nonexistent";
    if (gpumem_topo_load(&params, &topo) == UCS_OK) {
        fuzz_check(topo->num_gpus + topo->num_nics == topo->num_devs);
        for (i = 0; i < topo->num_devs; ++i) {
            fuzz_check(topo->devs[i].reach.path_len <= GPUMEM_TOPO_PATH_MAX);
            for (j = 0; j < i; ++j) {
                fuzz_check(!gpumem_pci_addr_equal(&topo->devs[i].reach.addr,
                                                  &topo->devs[j].reach.addr));
            }
        }
        gpumem_topo_destroy(topo);
    }
    return 0;
}
