/**
 * gpumem test: run with the plugin in a UCX it was not built against (the
 * version matrix preloads one version's plugin into the next's UCX), where
 * the plugin's ABI guard refuses to register its components: gpumem.h's
 * calls must refuse too, instead of running on UCX structs they were not
 * compiled for.
 *
 *   test/abi/api_refused
 *
 * Exits 0 where gpumem_device_malloc() is refused with UCS_ERR_UNSUPPORTED,
 * 1 where it allocated, 2 where it failed otherwise.
 *
 * See file LICENSE for terms.
 */

#include <gpumem/gpumem.h>
#include <ucp/api/ucp.h>

#include <stdio.h>


int main(void)
{
    gpumem_result_t result;
    void *ptr = NULL;

    result = gpumem_device_malloc(&ptr, 4096);
    printf("api_refused: in UCX %s, gpumem_device_malloc: %s\n",
           ucp_get_version_string(), gpumem_result_string(result));
    if (result == UCS_OK) {
        gpumem_device_free(ptr);
        return 1;
    }

    return (result == UCS_ERR_UNSUPPORTED) ? 0 : 2;
}
