/**
 * gpumem fuzz target: the topology facts file parser, fed files of any
 * bytes and applied to the built-in machine. What it refuses changes
 * nothing; what it takes leaves the devices where they were (facts change,
 * never which devices there are or where).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "fuzz_check.h"

#include <uct/gpumem/topo/topo.h>
#include <uct/gpumem/topo/topo_facts.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


static gpumem_topo_t *fuzz_machine;
static gpumem_topo_dev_t *fuzz_devs;
static char fuzz_path[64];
static int fuzz_fd = -1;


int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    gpumem_topo_params_t params = {0};

    /* The machine: an export from the environment, or this machine's */
    params.xml_path   = getenv("GPUMEM_FUZZ_XML");
    params.sysfs_root = "/nonexistent";
    fuzz_check(gpumem_topo_load(&params, &fuzz_machine) == UCS_OK);
    fuzz_devs = malloc(fuzz_machine->num_devs * sizeof(*fuzz_devs) + 1);
    fuzz_check(fuzz_devs != NULL);

    /* The file: a memfd, a regular file at a path */
    fuzz_fd = memfd_create("gpumem-fuzz-facts", 0);
    fuzz_check(fuzz_fd >= 0);
    snprintf(fuzz_path, sizeof(fuzz_path), "/proc/self/fd/%d", fuzz_fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t devs_size = fuzz_machine->num_devs * sizeof(*fuzz_devs);
    gpumem_topo_t topo = *fuzz_machine;
    unsigned i;

    fuzz_check((ftruncate(fuzz_fd, 0) == 0) &&
               (pwrite(fuzz_fd, data, size, 0) == (ssize_t)size));

    memcpy(fuzz_devs, fuzz_machine->devs, devs_size);
    topo.devs = fuzz_devs;
    if (gpumem_topo_facts_apply(&topo, fuzz_path) != UCS_OK) {
        fuzz_check(!memcmp(fuzz_devs, fuzz_machine->devs, devs_size));
        return 0;
    }

    fuzz_check(topo.num_devs == fuzz_machine->num_devs);
    for (i = 0; i < topo.num_devs; ++i) {
        fuzz_check(gpumem_pci_addr_equal(&topo.devs[i].reach.addr,
                                         &fuzz_machine->devs[i].reach.addr));
        fuzz_check(topo.devs[i].reach.path_len ==
                   fuzz_machine->devs[i].reach.path_len);
    }
    return 0;
}
