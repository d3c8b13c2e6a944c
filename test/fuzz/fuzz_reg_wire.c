/**
 * gpumem fuzzing: the unpacker of the wire form a peer sends (a packed
 * remote key), under libFuzzer with AddressSanitizer and UBSan.
 *
 * Whatever the bytes, unpacking must refuse them or give a view that packs
 * back to exactly them, whose bytes do not wrap the address space, whose
 * device name is terminated, and whose slices stay inside it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gpumem/reg/reg.h>
#include <ucs/debug/log_def.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define FUZZ_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "fuzz_reg_wire: %s:%d: %s does not hold\n", \
                    __FILE__, __LINE__, #_cond); \
            abort(); \
        } \
    } while (0)


/* A refusal is logged; millions of them are noise */
static ucs_log_func_rc_t
fuzz_log_quiet(const char *file, unsigned line, const char *function,
               ucs_log_level_t level, const ucs_log_component_config_t *conf,
               const char *message, va_list ap)
{
    (void)file; (void)line; (void)function; (void)conf; (void)message;
    (void)ap;
    return (level <= UCS_LOG_LEVEL_WARN) ? UCS_LOG_FUNC_RC_STOP :
                                           UCS_LOG_FUNC_RC_CONTINUE;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    ucs_log_push_handler(fuzz_log_quiet);
    return 0;
}

/* A slice of a peer's view is accepted exactly when it fits, and then lies
 * inside the view */
static void fuzz_check_slice(const gpumem_reg_remote_view_t *view,
                             uint64_t offset, uint64_t length)
{
    gpumem_reg_remote_view_t slice;
    int fits = (offset <= view->length) && (length <= view->length - offset);
    ucs_status_t status;

    status = gpumem_reg_remote_view_slice(view, offset, length, &slice);
    FUZZ_CHECK((status == UCS_OK) == fits);
    if (status != UCS_OK) {
        return;
    }

    FUZZ_CHECK(slice.address == view->address + offset);
    FUZZ_CHECK(slice.length == length);
    FUZZ_CHECK(slice.address + slice.length <= view->address + view->length);
    FUZZ_CHECK(slice.rkey == view->rkey);
    FUZZ_CHECK(!strcmp(slice.device_name, view->device_name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t repacked[GPUMEM_REG_WIRE_SIZE];
    gpumem_reg_remote_view_t view;

    if (gpumem_reg_wire_unpack(data, size, &view) != UCS_OK) {
        return 0;
    }

    FUZZ_CHECK(size == GPUMEM_REG_WIRE_SIZE);
    FUZZ_CHECK(view.address <= UINT64_MAX - view.length);
    FUZZ_CHECK(memchr(view.device_name, '\0', sizeof(view.device_name)) !=
               NULL);
    FUZZ_CHECK(view.device_name[0] != '\0');

    gpumem_reg_wire_pack(&view, repacked);
    FUZZ_CHECK(!memcmp(repacked, data, size));

    /* Slices named by bytes the peer chose, and the edges */
    fuzz_check_slice(&view, view.rkey, view.address & 0xffffff);
    fuzz_check_slice(&view, view.length, 0);
    fuzz_check_slice(&view, view.length, 1);
    fuzz_check_slice(&view, 1, UINT64_MAX);
    fuzz_check_slice(&view, view.length / 2, view.length - view.length / 2);
    return 0;
}
