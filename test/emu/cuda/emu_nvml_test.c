/**
 * gpumem emulated NVML: NVML's device i is CUDA's device i (same PCI
 * address), handles come back by index and by bus id, and NVLinks are the
 * topology's. With an argument N, expects each GPU to have N NVLinks, each
 * to another GPU of the machine. Exits non-zero on the first wrong answer,
 * naming it.
 *
 *   emu_nvml_test [LINKS]
 *
 * See file LICENSE for terms.
 */

#include <cuda.h>
#include <nvml.h>

#include "emu_expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *emu_expect_program = "emu_nvml_test";
int emu_expect_failures;

#define EXPECT_NVML(_expected, _call) \
    do { \
        nvmlReturn_t _ret = (_call); \
        EXPECT(_ret == (_expected), "%s gave %s", #_call, \
               nvmlErrorString(_ret)); \
    } while (0)

/* Whether @a bus_id names one of the machine's GPUs */
static int is_gpu(const char *bus_id)
{
    nvmlDevice_t device;

    return nvmlDeviceGetHandleByPciBusId(bus_id, &device) == NVML_SUCCESS;
}

static void test_device(unsigned index, int links)
{
    char cuda_bus_id[32];
    nvmlDevice_t device, again;
    nvmlFieldValue_t value;
    nvmlEnableState_t state;
    nvmlPciInfo_t pci, remote;
    nvmlBAR1Memory_t bar1;
    nvmlReturn_t ret;
    unsigned got, link;
    CUdevice cu_device;

    EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetHandleByIndex(index, &device));
    EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetIndex(device, &got));
    EXPECT(got == index, "index %u, wanted %u", got, index);
    EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetPciInfo(device, &pci));
    EXPECT((pci.pciDeviceId & 0xffff) != 0, "no vendor in 0x%x",
           pci.pciDeviceId);

    /* Where the machine gives its GPUs' BARs (the built-in one does), all
     * free: no process of this test maps one */
    ret = nvmlDeviceGetBAR1MemoryInfo(device, &bar1);
    EXPECT((ret == NVML_SUCCESS) || (ret == NVML_ERROR_NOT_SUPPORTED),
           "BAR1: %s", nvmlErrorString(ret));
    EXPECT((ret != NVML_SUCCESS) ||
           ((bar1.bar1Total > 0) && (bar1.bar1Free == bar1.bar1Total) &&
            (bar1.bar1Used == 0)),
           "BAR1 of GPU %u: %llu total, %llu free, %llu used", index,
           bar1.bar1Total, bar1.bar1Free, bar1.bar1Used);
    EXPECT((links != 0) || (ret == NVML_SUCCESS),
           "no BAR1 on the built-in machine: %s", nvmlErrorString(ret));

    /* The same GPU as CUDA's device of that index */
    EXPECT(cuDeviceGet(&cu_device, (int)index) == CUDA_SUCCESS,
           "no CUDA device %u", index);
    EXPECT(cuDeviceGetPCIBusId(cuda_bus_id, sizeof(cuda_bus_id),
                               cu_device) == CUDA_SUCCESS,
           "no PCI bus id of CUDA device %u", index);
    EXPECT(strcasecmp(cuda_bus_id, pci.busId) == 0 ||
           strcasecmp(cuda_bus_id, pci.busIdLegacy) == 0,
           "NVML's device %u is %s, CUDA's %s", index, pci.busId,
           cuda_bus_id);

    EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetHandleByPciBusId(pci.busId,
                                                            &again));
    EXPECT(again == device, "bus id %s gives another handle", pci.busId);

    memset(&value, 0, sizeof(value));
    value.fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
    EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetFieldValues(device, 1, &value));
    EXPECT(value.nvmlReturn == NVML_SUCCESS, "NVLink count: %s",
           nvmlErrorString(value.nvmlReturn));
    EXPECT((int)value.value.uiVal == links, "GPU %u: %u NVLinks, wanted %d",
           index, value.value.uiVal, links);

    memset(&remote, 0, sizeof(remote));
    for (link = 0; link < (unsigned)links; ++link) {
        EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetNvLinkState(device, link,
                                                           &state));
        EXPECT(state == NVML_FEATURE_ENABLED, "link %u is down", link);
        EXPECT_NVML(NVML_SUCCESS,
                    nvmlDeviceGetNvLinkRemotePciInfo(device, link, &remote));
        EXPECT(is_gpu(remote.busId), "link %u goes to %s, no GPU", link,
               remote.busId);
        EXPECT(strcmp(remote.busId, pci.busId) != 0, "link %u to itself",
               link);
    }
    EXPECT_NVML(links ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED,
                nvmlDeviceGetNvLinkRemotePciInfo(device, (unsigned)links,
                                                 &remote));
}

int main(int argc, char **argv)
{
    int links = (argc > 1) ? atoi(argv[1]) : 0;
    unsigned count = 0, i;
    int cuda_count = 0;
    nvmlDevice_t device;

    EXPECT_NVML(NVML_ERROR_UNINITIALIZED, nvmlDeviceGetCount(&count));
    EXPECT(cuInit(0) == CUDA_SUCCESS, "cuInit failed");
    EXPECT(cuDeviceGetCount(&cuda_count) == CUDA_SUCCESS, "no CUDA count");

    EXPECT_NVML(NVML_SUCCESS, nvmlInit());
    EXPECT_NVML(NVML_SUCCESS, nvmlDeviceGetCount(&count));
    EXPECT((int)count == cuda_count, "NVML has %u GPUs, CUDA %d", count,
           cuda_count);
    for (i = 0; i < count; ++i) {
        test_device(i, links);
    }

    EXPECT_NVML(NVML_ERROR_INVALID_ARGUMENT,
                nvmlDeviceGetHandleByIndex(count, &device));
    EXPECT_NVML(NVML_ERROR_INVALID_ARGUMENT, nvmlDeviceGetCount(NULL));
    EXPECT_NVML(NVML_ERROR_NOT_FOUND,
                nvmlDeviceGetHandleByPciBusId("00000000:ff:1f.7", &device));
    EXPECT_NVML(NVML_ERROR_INVALID_ARGUMENT,
                nvmlDeviceGetHandleByPciBusId("no bus id", &device));
    EXPECT_NVML(NVML_SUCCESS, nvmlShutdown());
    EXPECT_NVML(NVML_ERROR_UNINITIALIZED, nvmlShutdown());

    if (emu_expect_result() != 0) {
        return 1;
    }
    printf("emu_nvml_test: %u GPUs, the CUDA devices of the same index, %d "
           "NVLinks each: every answer right\n", count, links);
    return 0;
}
