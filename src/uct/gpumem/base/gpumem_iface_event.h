/**
 * gpumem: the completion events of a gpumem interface, which UCP's wakeup
 * mode (ucp_worker_wait) sleeps on: an event descriptor, and an arm that
 * refuses (UCS_ERR_BUSY) while operations of the interface are in flight,
 * since their completions come at progress.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_IFACE_EVENT_H_
#define UCT_GPUMEM_IFACE_EVENT_H_

#include <uct/api/uct.h>

BEGIN_C_DECLS

typedef struct uct_gpumem_iface_event {
    int fd;     /* eventfd, readable once signalled */
    int armed;  /* Armed, and not signalled since */
} uct_gpumem_iface_event_t;


/* The events UCT's event_flags of the interface gives */
#define UCT_GPUMEM_IFACE_EVENT_FLAGS \
    (UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | \
     UCT_IFACE_FLAG_EVENT_FD)


ucs_status_t uct_gpumem_iface_event_init(uct_gpumem_iface_event_t *event,
                                         const char *tl_name);
void uct_gpumem_iface_event_cleanup(uct_gpumem_iface_event_t *event);

/**
 * Arm for @a events: UCS_ERR_BUSY while @a in_flight (operations whose
 * completion progress will give), or while the descriptor was signalled and
 * not yet read; else UCS_OK, and the descriptor is readable at the next
 * uct_gpumem_iface_event_posted(). The interface receives nothing, so
 * UCT_EVENT_RECV and UCT_EVENT_RECV_SIG never fire.
 */
ucs_status_t uct_gpumem_iface_event_arm(uct_gpumem_iface_event_t *event,
                                        unsigned events, int in_flight,
                                        const char *tl_name);

/* Makes the descriptor readable */
void uct_gpumem_iface_event_signal(uct_gpumem_iface_event_t *event);

/* An operation was posted, whose completion progress will give: a sleeper
 * on the armed descriptor wakes to progress it */
static inline void
uct_gpumem_iface_event_posted(uct_gpumem_iface_event_t *event)
{
    if (event->armed) {
        uct_gpumem_iface_event_signal(event);
    }
}

END_C_DECLS

#endif
