/**
 * gpumem benchmark: what a zero-copy put of a buffer costs with its
 * registration, the way an application that does not keep registrations
 * sends: register the buffer, put it whole to a peer, wait for the
 * completion, deregister. Buffers are reused (the same one each time, as
 * a registration cache serves) or fresh (allocated and freed each time,
 * so no cache may serve them). Measured in one process, one run, round
 * after round, for:
 *
 *   gpumem_rc   device memory  (gpumem_device_malloc, the emulated GPUs)
 *   gpumem_rc   device memory, UCX_GPUMEM_IB_RCACHE=no (what the cache saves)
 *   gpumem_rc   host memory    (mmap)
 *   rc_verbs    host memory    (UCX's own, with its registration cache)
 *
 * each between two endpoints of one interface on DEVICE (default rxe0:1),
 * connected to each other, into a registered host buffer. Prints the
 * median microseconds of an iteration over the rounds, and the ratio of
 * each gpumem_rc line to rc_verbs' of the same mode.
 *
 *   bench/reg_bench [ROUNDS [ITERATIONS [SIZE [DEVICE]]]]
 *
 * Defaults: 5 rounds, 50 iterations, 1 MiB. Run on the emulated GPUs
 * (gpumem-emu) and a real or soft-RoCE device (bench/reg_bench.sh boots
 * the VM). Exits 1 where a line cannot be measured.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <gpumem/gpumem.h>
#include <uct/api/uct.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>


#define REG_BENCH_MAX_ROUNDS  64


typedef enum {
    REG_BENCH_MEM_DEVICE,
    REG_BENCH_MEM_HOST
} reg_bench_mem_t;

typedef struct {
    const char      *tl;
    const char      *md_prefix;  /* Of the device's memory domain name */
    reg_bench_mem_t mem;
    const char      *rcache;     /* The domain's RCACHE setting, or NULL */
} reg_bench_line_t;

/* rc_verbs last: the peer of every line */
static const reg_bench_line_t reg_bench_lines[] = {
    {"gpumem_rc", "gpumem_", REG_BENCH_MEM_DEVICE, NULL},
    {"gpumem_rc", "gpumem_", REG_BENCH_MEM_DEVICE, "no"},
    {"gpumem_rc", "gpumem_", REG_BENCH_MEM_HOST,   NULL},
    {"rc_verbs",  "",        REG_BENCH_MEM_HOST,   NULL}
};

#define REG_BENCH_NUM_LINES \
    (sizeof(reg_bench_lines) / sizeof(reg_bench_lines[0]))

/* One transport, open: a memory domain, an interface, two endpoints
 * connected to each other, and the peer's registered target */
typedef struct {
    uct_component_h      component;
    uct_md_h             md;
    ucs_async_context_t  *async;
    uct_worker_h         worker;
    uct_iface_h          iface;
    uct_ep_h             ep[2];
    void                 *target;
    uct_mem_h            target_memh;
    uct_rkey_bundle_t    rkey;
} reg_bench_tl_t;


static void reg_bench_die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "reg_bench: %s: %s\n", what, ucs_status_string(status));
    exit(1);
}

static double reg_bench_now_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ts.tv_sec * 1e6) + (ts.tv_nsec / 1e3);
}

static int reg_bench_compare(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double reg_bench_median(double *values, unsigned count)
{
    qsort(values, count, sizeof(*values), reg_bench_compare);
    return (count % 2) ? values[count / 2] :
           (values[count / 2 - 1] + values[count / 2]) / 2;
}

/* The component whose memory domain is @a md_name */
static uct_component_h reg_bench_find_component(const char *md_name)
{
    uct_component_attr_t attr;
    uct_component_h *components, found = NULL;
    unsigned num_components, i, j;
    ucs_status_t status;

    status = uct_query_components(&components, &num_components);
    if (status != UCS_OK) {
        reg_bench_die("uct_query_components", status);
    }

    for (i = 0; (i < num_components) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            continue;
        }
        attr.md_resources = calloc(attr.md_resource_count,
                                   sizeof(*attr.md_resources));
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if ((attr.md_resources != NULL) &&
            (uct_component_query(components[i], &attr) == UCS_OK)) {
            for (j = 0; j < attr.md_resource_count; ++j) {
                if (!strcmp(attr.md_resources[j].md_name, md_name)) {
                    found = components[i];
                }
            }
        }
        free(attr.md_resources);
    }

    uct_release_component_list(components);
    return found;
}

static void reg_bench_progress(reg_bench_tl_t *tl, uct_completion_t *comp)
{
    while (comp->count > 0) {
        uct_worker_progress(tl->worker);
    }
}

static void reg_bench_comp_cb(uct_completion_t *self)
{
    (void)self;
}

static void reg_bench_open(reg_bench_tl_t *tl, const reg_bench_line_t *line,
                           const char *device, size_t size)
{
    char md_name[UCT_MD_NAME_MAX + UCT_DEVICE_NAME_MAX];
    char dev_name[UCT_DEVICE_NAME_MAX], *colon;
    uct_ep_addr_t *ep_addr[2];
    uct_device_addr_t *dev_addr;
    uct_iface_config_t *iface_config;
    uct_md_config_t *md_config;
    uct_iface_params_t params;
    uct_ep_params_t ep_params;
    uct_iface_attr_t attr;
    ucs_status_t status;
    void *rkey_buffer;
    uct_md_attr_t md_attr;
    int i;

    memset(tl, 0, sizeof(*tl));
    snprintf(dev_name, sizeof(dev_name), "%s", device);
    colon = strchr(dev_name, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    snprintf(md_name, sizeof(md_name), "%s%s", line->md_prefix, dev_name);

    tl->component = reg_bench_find_component(md_name);
    if (tl->component == NULL) {
        fprintf(stderr, "reg_bench: no memory domain %s (is the plugin "
                "loaded, is there an RDMA device?)\n", md_name);
        exit(1);
    }

    status = uct_md_config_read(tl->component, NULL, NULL, &md_config);
    if ((status == UCS_OK) && (line->rcache != NULL)) {
        status = uct_config_modify(md_config, "RCACHE", line->rcache);
    }
    if (status == UCS_OK) {
        status = uct_md_open(tl->component, md_name, md_config, &tl->md);
        uct_config_release(md_config);
    }
    if (status != UCS_OK) {
        reg_bench_die(md_name, status);
    }

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &tl->async);
    if (status == UCS_OK) {
        status = uct_worker_create(tl->async, UCS_THREAD_MODE_SINGLE,
                                   &tl->worker);
    }
    if (status != UCS_OK) {
        reg_bench_die("worker", status);
    }

    status = uct_md_iface_config_read(tl->md, line->tl, NULL, NULL,
                                      &iface_config);
    if (status != UCS_OK) {
        reg_bench_die(line->tl, status);
    }
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = line->tl;
    params.mode.device.dev_name = device;
    status = uct_iface_open(tl->md, tl->worker, &params, iface_config,
                            &tl->iface);
    uct_config_release(iface_config);
    if (status == UCS_OK) {
        status = uct_iface_query(tl->iface, &attr);
    }
    if (status != UCS_OK) {
        reg_bench_die("uct_iface_open", status);
    }
    if (!(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) ||
        !(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP) ||
        (attr.cap.put.max_zcopy < size)) {
        fprintf(stderr, "reg_bench: %s on %s cannot put %zu bytes zero-copy "
                "between two endpoints\n", line->tl, device, size);
        exit(1);
    }
    uct_iface_progress_enable(tl->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    dev_addr = calloc(1, attr.device_addr_len);
    status   = uct_iface_get_device_address(tl->iface, dev_addr);
    for (i = 0; (i < 2) && (status == UCS_OK); ++i) {
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep_params.iface      = tl->iface;
        ep_addr[i]           = calloc(1, attr.ep_addr_len);
        status               = uct_ep_create(&ep_params, &tl->ep[i]);
        if (status == UCS_OK) {
            status = uct_ep_get_address(tl->ep[i], ep_addr[i]);
        }
    }
    for (i = 0; (i < 2) && (status == UCS_OK); ++i) {
        status = uct_ep_connect_to_ep(tl->ep[i], dev_addr, ep_addr[1 - i]);
    }
    if (status != UCS_OK) {
        reg_bench_die("connecting the endpoints", status);
    }
    free(ep_addr[0]);
    free(ep_addr[1]);
    free(dev_addr);

    /* The peer's target: host memory, registered once */
    tl->target = mmap(NULL, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tl->target == MAP_FAILED) {
        reg_bench_die("mmap", UCS_ERR_NO_MEMORY);
    }
    memset(tl->target, 0, size);
    status = uct_md_mem_reg(tl->md, tl->target, size, UCT_MD_MEM_ACCESS_ALL,
                            &tl->target_memh);
    if (status == UCS_OK) {
        status = uct_md_query(tl->md, &md_attr);
    }
    if (status != UCS_OK) {
        reg_bench_die("registering the target", status);
    }
    rkey_buffer = calloc(1, md_attr.rkey_packed_size);
    status      = uct_md_mkey_pack(tl->md, tl->target_memh, rkey_buffer);
    if (status == UCS_OK) {
        status = uct_rkey_unpack(tl->component, rkey_buffer, &tl->rkey);
    }
    free(rkey_buffer);
    if (status != UCS_OK) {
        reg_bench_die("the target's key", status);
    }
}

static void reg_bench_close(reg_bench_tl_t *tl, size_t size)
{
    uct_rkey_release(tl->component, &tl->rkey);
    uct_md_mem_dereg(tl->md, tl->target_memh);
    munmap(tl->target, size);
    uct_ep_destroy(tl->ep[0]);
    uct_ep_destroy(tl->ep[1]);
    uct_iface_close(tl->iface);
    uct_worker_destroy(tl->worker);
    ucs_async_context_destroy(tl->async);
    uct_md_close(tl->md);
}

static void *reg_bench_alloc(reg_bench_mem_t mem, size_t size)
{
    void *buffer = NULL;

    if (mem == REG_BENCH_MEM_DEVICE) {
        if (gpumem_device_malloc(&buffer, size) != 0) {
            reg_bench_die("gpumem_device_malloc", UCS_ERR_NO_MEMORY);
        }
        return buffer;
    }

    buffer = mmap(NULL, size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer == MAP_FAILED) {
        reg_bench_die("mmap", UCS_ERR_NO_MEMORY);
    }
    memset(buffer, 1, size);
    return buffer;
}

static void reg_bench_free(reg_bench_mem_t mem, void *buffer, size_t size)
{
    if (mem == REG_BENCH_MEM_DEVICE) {
        gpumem_device_free(buffer);
    } else {
        munmap(buffer, size);
    }
}

/* Register, put whole, wait, deregister */
static void reg_bench_put(reg_bench_tl_t *tl, void *buffer, size_t size)
{
    uct_completion_t comp;
    ucs_status_t status;
    uct_mem_h memh;
    uct_iov_t iov;

    status = uct_md_mem_reg(tl->md, buffer, size, UCT_MD_MEM_ACCESS_LOCAL_READ,
                            &memh);
    if (status != UCS_OK) {
        reg_bench_die("uct_md_mem_reg", status);
    }

    iov.buffer = buffer;
    iov.length = size;
    iov.memh   = memh;
    iov.stride = 0;
    iov.count  = 1;
    comp.func   = reg_bench_comp_cb;
    comp.count  = 1;
    comp.status = UCS_OK;
    do {
        status = uct_ep_put_zcopy(tl->ep[0], &iov, 1,
                                  (uintptr_t)tl->target, tl->rkey.rkey,
                                  &comp);
        uct_worker_progress(tl->worker);
    } while (status == UCS_ERR_NO_RESOURCE);
    if (status == UCS_INPROGRESS) {
        reg_bench_progress(tl, &comp);
        status = comp.status;
    }
    if (status != UCS_OK) {
        reg_bench_die("uct_ep_put_zcopy", status);
    }

    uct_md_mem_dereg(tl->md, memh);
}

/* The median microseconds of an iteration of @a iterations */
static double reg_bench_run(reg_bench_tl_t *tl, reg_bench_mem_t mem,
                            int fresh, unsigned iterations, size_t size)
{
    double *times = calloc(iterations, sizeof(*times));
    void *buffer  = fresh ? NULL : reg_bench_alloc(mem, size);
    double start, median;
    unsigned i;

    for (i = 0; i < iterations; ++i) {
        start = reg_bench_now_usec();
        if (fresh) {
            buffer = reg_bench_alloc(mem, size);
        }
        reg_bench_put(tl, buffer, size);
        if (fresh) {
            reg_bench_free(mem, buffer, size);
        }
        times[i] = reg_bench_now_usec() - start;
    }

    if (!fresh) {
        reg_bench_free(mem, buffer, size);
    }
    median = reg_bench_median(times, iterations);
    free(times);
    return median;
}

int main(int argc, char **argv)
{
    static const char *mem_names[] = {"device", "host"};
    static const char *mode_names[] = {"reused", "fresh"};
    unsigned rounds     = (argc > 1) ? strtoul(argv[1], NULL, 0) : 5;
    unsigned iterations = (argc > 2) ? strtoul(argv[2], NULL, 0) : 50;
    size_t size         = (argc > 3) ? strtoul(argv[3], NULL, 0) : 1 << 20;
    const char *device  = (argc > 4) ? argv[4] : "rxe0:1";
    double results[REG_BENCH_NUM_LINES][2][REG_BENCH_MAX_ROUNDS];
    double median[REG_BENCH_NUM_LINES][2];
    reg_bench_tl_t tls[REG_BENCH_NUM_LINES];
    unsigned line, round, fresh, peer;

    if ((rounds == 0) || (rounds > REG_BENCH_MAX_ROUNDS) ||
        (iterations == 0) || (size == 0)) {
        fprintf(stderr, "usage: reg_bench [ROUNDS (1 to %d) [ITERATIONS "
                "[SIZE [DEVICE]]]]\n", REG_BENCH_MAX_ROUNDS);
        return 2;
    }

    for (line = 0; line < REG_BENCH_NUM_LINES; ++line) {
        reg_bench_open(&tls[line], &reg_bench_lines[line], device, size);
    }

    /* The lines alternate, so that what else the machine does weighs on
     * all alike */
    for (round = 0; round < rounds; ++round) {
        for (fresh = 0; fresh < 2; ++fresh) {
            for (line = 0; line < REG_BENCH_NUM_LINES; ++line) {
                results[line][fresh][round] =
                        reg_bench_run(&tls[line], reg_bench_lines[line].mem,
                                      fresh, iterations, size);
            }
        }
    }

    printf("%-10s %-7s %-8s %-7s %12s %8s\n", "transport", "memory",
           "rcache", "buffers", "usec/put", "ratio");
    peer = REG_BENCH_NUM_LINES - 1;  /* rc_verbs */
    for (fresh = 0; fresh < 2; ++fresh) {
        for (line = 0; line < REG_BENCH_NUM_LINES; ++line) {
            median[line][fresh] = reg_bench_median(results[line][fresh],
                                                   rounds);
        }
        for (line = 0; line < REG_BENCH_NUM_LINES; ++line) {
            printf("%-10s %-7s %-8s %-7s %12.2f %8.2f\n",
                   reg_bench_lines[line].tl,
                   mem_names[reg_bench_lines[line].mem],
                   (reg_bench_lines[line].rcache != NULL) ?
                   reg_bench_lines[line].rcache : "default",
                   mode_names[fresh],
                   median[line][fresh],
                   median[line][fresh] / median[peer][fresh]);
        }
    }
    printf("(%u rounds of %u puts of %zu bytes on %s, each registered and "
           "deregistered; medians; ratio to rc_verbs' host line of the same "
           "buffers: below 1 is faster)\n", rounds, iterations, size, device);

    for (line = 0; line < REG_BENCH_NUM_LINES; ++line) {
        reg_bench_close(&tls[line], size);
    }
    return 0;
}
