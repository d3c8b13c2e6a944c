/**
 * gpumem tests: UCM events for frees that know only the address, as the
 * application's cudaFree and cuMemFree do.
 *
 * See file LICENSE for terms.
 */

#include "log_test.h"

extern "C" {
#include <ucm/api/ucm.h>
#include <ucm/gpumem/ucm_gpumem.h>
}


namespace {

struct free_events {
    std::vector<std::pair<void*, size_t> > frees;
    std::vector<ucs_memory_type_t>         types;
};

void record_free(ucm_event_type_t, ucm_event_t *event, void *arg)
{
    free_events *events = (free_events*)arg;

    events->frees.push_back(std::make_pair(event->mem_type.address,
                                           event->mem_type.size));
    events->types.push_back(event->mem_type.mem_type);
}

}

class ucm_gpumem : public log_test {
};

TEST_F(ucm_gpumem, free_by_address_reports_the_allocated_size) {
    /* An address no real allocation has */
    void *address = (void*)0x7e5700000000ul;
    free_events events;

    ucm_gpumem_dispatch_alloc(address, 3 << 20, UCS_MEMORY_TYPE_CUDA_MANAGED,
                              UCS_SYS_DEVICE_ID_UNKNOWN);
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE |
                                            UCM_EVENT_FLAG_NO_INSTALL, 0,
                                            record_free, &events));
    ucm_gpumem_dispatch_free_known(address);
    /* Freed once: a second free of the address (a double free, or one of
     * memory no event reported) raises nothing */
    ucm_gpumem_dispatch_free_known(address);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE, record_free, &events);

    ASSERT_EQ(1u, events.frees.size());
    EXPECT_EQ(address, events.frees[0].first);
    EXPECT_EQ((size_t)(3 << 20), events.frees[0].second);
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA_MANAGED, events.types[0]);
}
