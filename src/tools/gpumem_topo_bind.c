/**
 * gpumem_topo --bind: prints the NIC each GPU should use, as the
 * UCX_NET_DEVICES value of a process on that GPU, as text or JSON.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* "mlx5_0:1" */
#define GPUMEM_TOPO_TOOL_BIND_VALUE_MAX  (GPUMEM_TOPO_NAME_MAX + 12)


/* Whether the device has an OS name: without an OS device in the export it
 * goes by its PCI address, which is no name of UCX's */
static int gpumem_topo_tool_bind_has_name(const gpumem_topo_dev_t *dev)
{
    char pci[GPUMEM_TOPO_PCI_STR_MAX];

    return strcmp(dev->name, gpumem_topo_tool_pci(dev, pci)) != 0;
}

/* The UCX_NET_DEVICES value that names the NIC, "" if none does */
static const char *
gpumem_topo_tool_bind_value(const gpumem_topo_dev_t *nic, char *buf)
{
    if (!gpumem_topo_tool_bind_has_name(nic)) {
        buf[0] = '\0';
    } else if (nic->port == 0) {
        /* The export does not tell the port: the first, as UCX numbers an
         * RDMA device's ports from 1 and names each "device:port" */
        snprintf(buf, GPUMEM_TOPO_TOOL_BIND_VALUE_MAX, "%s:1", nic->name);
    } else {
        snprintf(buf, GPUMEM_TOPO_TOOL_BIND_VALUE_MAX, "%s:%u", nic->name,
                 nic->port);
    }
    return buf;
}


/* Text output */

/* Width of the GPU names' column, or with @a value of the values' */
static int
gpumem_topo_tool_bind_text_width(const gpumem_topo_t *topo,
                                 const gpumem_topo_nic_bind_t *binds,
                                 int value)
{
    int width = (int)strlen(value ? "UCX_NET_DEVICES" : "GPU");
    char buf[GPUMEM_TOPO_TOOL_BIND_VALUE_MAX];
    const char *text;
    unsigned gpu;

    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        if (!value) {
            text = topo->devs[gpu].name;
        } else if (topo->num_nics > 0) {
            text = gpumem_topo_tool_bind_value(&topo->devs[binds[gpu].nic],
                                               buf);
        } else {
            continue;
        }
        width = ucs_max(width, (int)strlen(text));
    }
    return width;
}

/* Where the NIC is, how near among the GPU's NICs, and what UCX_NET_DEVICES
 * cannot say */
static void
gpumem_topo_tool_bind_text_place(const gpumem_topo_t *topo,
                                 const gpumem_topo_nic_bind_t *bind)
{
    const gpumem_topo_dev_t *nic = &topo->devs[bind->nic];

    printf("%s", gpumem_topo_relation_name(bind->relation));
    if (bind->hops > 0) {
        printf(", %u hops", bind->hops);
    }
    printf(", rank %u of %u", bind->rank + 1, topo->num_nics);
    if (bind->sharers > 1) {
        printf(", shared by %u GPUs", bind->sharers);
    }

    if (!gpumem_topo_tool_bind_has_name(nic)) {
        printf("; no device name: the topology knows this NIC only by its "
               "PCI address");
    } else if (nic->port == 0) {
        printf("; the topology gives no port of it");
    } else if (nic->port_active == 0) {
        printf("; port %u was down when the topology was read", nic->port);
    }
    printf("\n");
}

/* A row for each GPU, in the GPUs' order, so that a script finds GPU N's
 * value in the third column of row N; "-" where there is none */
static void gpumem_topo_tool_bind_text(const gpumem_topo_t *topo,
                                       unsigned flags,
                                       const gpumem_topo_nic_bind_t *binds)
{
    int name_width  = gpumem_topo_tool_bind_text_width(topo, binds, 0);
    int value_width = gpumem_topo_tool_bind_text_width(topo, binds, 1);
    char gpu_pci[GPUMEM_TOPO_PCI_STR_MAX], nic_pci[GPUMEM_TOPO_PCI_STR_MAX];
    char value[GPUMEM_TOPO_TOOL_BIND_VALUE_MAX];
    const gpumem_topo_dev_t *nic;
    unsigned gpu;

    printf("NIC of each GPU, distinct where there are enough "
           "(UCX_NET_DEVICES of a process on it):\n");
    if (topo->num_gpus == 0) {
        printf("  (no GPU)\n");
        return;
    }

    printf("  %-*s  %-12s  %-*s  %-12s  %s\n", name_width, "GPU", "PCI",
           value_width, "UCX_NET_DEVICES", "NIC PCI", "place");
    for (gpu = 0; gpu < topo->num_gpus; ++gpu) {
        nic = (topo->num_nics > 0) ? &topo->devs[binds[gpu].nic] : NULL;
        if ((nic == NULL) ||
            (gpumem_topo_tool_bind_value(nic, value)[0] == '\0')) {
            strcpy(value, "-");
        }
        if (nic != NULL) {
            gpumem_topo_tool_pci(nic, nic_pci);
        } else {
            strcpy(nic_pci, "-");
        }

        printf("  %-*s  %-12s  %-*s  %-12s  ", name_width,
               topo->devs[gpu].name,
               gpumem_topo_tool_pci(&topo->devs[gpu], gpu_pci),
               value_width, value, nic_pci);
        if (nic != NULL) {
            gpumem_topo_tool_bind_text_place(topo, &binds[gpu]);
        } else {
            printf("no RDMA NIC%s in the topology: no binding\n",
                   (flags & GPUMEM_TOPO_BIND_ACTIVE) ? " with its port up" :
                   "");
        }
    }
}


/* JSON output */

static void gpumem_topo_tool_bind_json_nic(const gpumem_topo_dev_t *nic)
{
    char pci[GPUMEM_TOPO_PCI_STR_MAX];

    printf("{\"pci\": \"%s\", \"name\": ",
           gpumem_topo_tool_pci(nic, pci));
    if (gpumem_topo_tool_bind_has_name(nic)) {
        gpumem_topo_tool_json_str(nic->name);
    } else {
        printf("null");
    }

    printf(", \"port\": ");
    if (nic->port != 0) {
        printf("%u", nic->port);
    } else {
        printf("null");
    }
    printf(", \"port_active\": %s}",
           (nic->port_active < 0) ? "null" :
           nic->port_active ? "true" : "false");
}

static void gpumem_topo_tool_bind_json(const gpumem_topo_t *topo,
                                       const gpumem_topo_nic_bind_t *binds)
{
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    char value[GPUMEM_TOPO_TOOL_BIND_VALUE_MAX];
    const gpumem_topo_nic_bind_t *bind;
    unsigned gpu, count;

    /* A topology without NIC binds no GPU */
    count = (topo->num_nics > 0) ? topo->num_gpus : 0;
    printf("{\n  \"gpus\": %u,\n  \"nics\": %u,\n  \"bind\": [",
           topo->num_gpus, topo->num_nics);
    for (gpu = 0; gpu < count; ++gpu) {
        bind = &binds[gpu];
        printf("%s\n    {\"pci\": \"%s\", \"name\": ", (gpu > 0) ? "," : "",
               gpumem_topo_tool_pci(&topo->devs[gpu], pci));
        gpumem_topo_tool_json_str(topo->devs[gpu].name);
        printf(", \"net_devices\": ");
        gpumem_topo_tool_bind_value(&topo->devs[bind->nic], value);
        if (value[0] != '\0') {
            gpumem_topo_tool_json_str(value);
        } else {
            printf("null");
        }
        printf(",\n     \"nic\": ");
        gpumem_topo_tool_bind_json_nic(&topo->devs[bind->nic]);
        printf(",\n     \"path\": \"%s\", \"hops\": %u, \"rank\": %u, "
               "\"sharers\": %u}", gpumem_topo_relation_name(bind->relation),
               bind->hops, bind->rank, bind->sharers);
    }
    printf("%s]\n}\n", (count > 0) ? "\n  " : "");
}


ucs_status_t gpumem_topo_tool_bind(const gpumem_topo_t *topo, unsigned flags,
                                   int json)
{
    gpumem_topo_t unbound = *topo;
    gpumem_topo_nic_bind_t *binds;
    ucs_status_t status;

    binds = calloc(topo->num_gpus + 1, sizeof(*binds));
    if (binds == NULL) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": no memory to bind %u "
                "GPUs\n", topo->num_gpus);
        return UCS_ERR_NO_MEMORY;
    }

    /* Without NIC there is nothing to bind, which the output says */
    status = gpumem_topo_bind_nics(topo, flags, binds);
    if ((status != UCS_OK) && (status != UCS_ERR_NO_DEVICE)) {
        free(binds);
        return status;
    }

    /* No NIC takes part (all down): the outputs see none */
    if (status == UCS_ERR_NO_DEVICE) {
        unbound.num_nics = 0;
        topo             = &unbound;
    }

    if (json) {
        gpumem_topo_tool_bind_json(topo, binds);
    } else {
        gpumem_topo_tool_bind_text(topo, flags, binds);
    }
    free(binds);
    return UCS_OK;
}
