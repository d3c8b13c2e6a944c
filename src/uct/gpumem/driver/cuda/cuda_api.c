/**
 * gpumem cuda driver: opening libcuda.so.1, filling the entry points, and
 * the names the driver gives its results.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_api.h"

#include <ucs/sys/string.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>


gpumem_cuda_api_t gpumem_cuda_api;

static pthread_once_t gpumem_cuda_api_once = PTHREAD_ONCE_INIT;
static ucs_status_t   gpumem_cuda_api_status;
static char           gpumem_cuda_api_why[256];
static pid_t          gpumem_cuda_api_pid;   /* Whose cuInit it was */


/* The library stays open for the life of the process, as a driver does:
 * memory and contexts it gave may be in use until exit */
static ucs_status_t gpumem_cuda_api_load(void)
{
    const char *error;
    void *handle;
    void *sym;

    handle = dlopen(GPUMEM_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        error = dlerror();
        ucs_snprintf_zero(gpumem_cuda_api_why, sizeof(gpumem_cuda_api_why),
                          "no %s: %s", GPUMEM_CUDA_LIBRARY,
                          (error != NULL) ? error : "dlopen failed");
        return UCS_ERR_NO_DEVICE;
    }

#define GPUMEM_CUDA_API_LOAD(_field, _symbol, _required) \
    sym = dlsym(handle, _symbol); \
    if ((sym == NULL) && (_required)) { \
        ucs_snprintf_zero(gpumem_cuda_api_why, sizeof(gpumem_cuda_api_why), \
                          "%s has no %s: the driver is older than this " \
                          "backend needs", GPUMEM_CUDA_LIBRARY, _symbol); \
        goto err_close; \
    } \
    *(void**)&gpumem_cuda_api._field = sym;

    GPUMEM_CUDA_API_FOREACH(GPUMEM_CUDA_API_LOAD)
#undef GPUMEM_CUDA_API_LOAD

    return UCS_OK;

err_close:
    memset(&gpumem_cuda_api, 0, sizeof(gpumem_cuda_api));
    dlclose(handle);
    return UCS_ERR_UNSUPPORTED;
}

const char *gpumem_cuda_error_name(CUresult result, char *buf, size_t max)
{
    const char *name = NULL;

    if ((gpumem_cuda_api.cuGetErrorName == NULL) ||
        (gpumem_cuda_api.cuGetErrorName(result, &name) != CUDA_SUCCESS) ||
        (name == NULL)) {
        ucs_snprintf_zero(buf, max, "CUresult %d", (int)result);
        return buf;
    }
    return name;
}

const char *gpumem_cuda_error_string(CUresult result)
{
    const char *string = NULL;

    if ((gpumem_cuda_api.cuGetErrorString == NULL) ||
        (gpumem_cuda_api.cuGetErrorString(result, &string) != CUDA_SUCCESS) ||
        (string == NULL)) {
        return "unknown error";
    }
    return string;
}

static void gpumem_cuda_api_init(void)
{
    char name[64];
    CUresult res;

    gpumem_cuda_api_pid    = getpid();
    gpumem_cuda_api_status = gpumem_cuda_api_load();
    if (gpumem_cuda_api_status != UCS_OK) {
        return;
    }

    res = gpumem_cuda_api.cuInit(0);
    if (res != CUDA_SUCCESS) {
        ucs_snprintf_zero(gpumem_cuda_api_why, sizeof(gpumem_cuda_api_why),
                          "cuInit: %s: %s",
                          gpumem_cuda_error_name(res, name, sizeof(name)),
                          gpumem_cuda_error_string(res));
        /* No usable device, whatever the driver's reason */
        gpumem_cuda_api_status = UCS_ERR_NO_DEVICE;
        return;
    }

    res = gpumem_cuda_api.cuDriverGetVersion(&gpumem_cuda_api.driver_version);
    if (res != CUDA_SUCCESS) {
        gpumem_cuda_api.driver_version = 0;
    }
    gpumem_cuda_api_status = UCS_OK;
}

ucs_status_t gpumem_cuda_api_open(char *why_buf, size_t max)
{
    pthread_once(&gpumem_cuda_api_once, gpumem_cuda_api_init);

    /* The child of a fork inherits the parent's open library, on which
     * CUDA refuses every call: it says so rather than fail on the first */
    if ((gpumem_cuda_api_status == UCS_OK) &&
        (gpumem_cuda_api_pid != getpid())) {
        ucs_snprintf_zero(why_buf, max, "the CUDA driver does not run in the "
                          "child of a fork of process %d, which initialized "
                          "it", gpumem_cuda_api_pid);
        return UCS_ERR_NO_DEVICE;
    }
    if (gpumem_cuda_api_status != UCS_OK) {
        ucs_strncpy_zero(why_buf, gpumem_cuda_api_why, max);
    }
    return gpumem_cuda_api_status;
}
