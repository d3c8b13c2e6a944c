/**
 * gpumem: the completion events of a gpumem interface.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_iface_event.h"

#include <ucs/debug/log.h>
#include <sys/eventfd.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>


ucs_status_t uct_gpumem_iface_event_init(uct_gpumem_iface_event_t *event,
                                         const char *tl_name)
{
    event->armed = 0;
    event->fd    = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (event->fd < 0) {
        ucs_error("%s: cannot create the event descriptor: %s", tl_name,
                  strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

void uct_gpumem_iface_event_cleanup(uct_gpumem_iface_event_t *event)
{
    if (event->fd >= 0) {
        close(event->fd);
        event->fd = -1;
    }
}

void uct_gpumem_iface_event_signal(uct_gpumem_iface_event_t *event)
{
    uint64_t one = 1;

    event->armed = 0;
    if ((write(event->fd, &one, sizeof(one)) < 0) && (errno != EAGAIN)) {
        ucs_warn("cannot signal event descriptor %d: %s", event->fd,
                 strerror(errno));
    }
}

ucs_status_t uct_gpumem_iface_event_arm(uct_gpumem_iface_event_t *event,
                                        unsigned events, int in_flight,
                                        const char *tl_name)
{
    uint64_t count;

    if (events & ~(UCT_EVENT_SEND_COMP | UCT_EVENT_RECV |
                   UCT_EVENT_RECV_SIG)) {
        ucs_error("%s: cannot arm for events 0x%x", tl_name, events);
        return UCS_ERR_INVALID_PARAM;
    }

    /* A signal not yet read: the sleeper's progress has work to see */
    if (read(event->fd, &count, sizeof(count)) == sizeof(count)) {
        event->armed = 0;
        return UCS_ERR_BUSY;
    }

    if ((events & UCT_EVENT_SEND_COMP) && in_flight) {
        event->armed = 0;
        return UCS_ERR_BUSY;
    }

    event->armed = 1;
    return UCS_OK;
}
