/**
 * gpumem test of machine identity at the UCT level: two processes swap the
 * device and interface addresses of gpumemipc, gpumemcpy and gpumem_rc
 * over a TCP socket, and each asks its own interfaces whether they reach
 * the other's. Between machines gpumemipc and gpumemcpy must say no and
 * gpumem_rc yes; on one machine (the check that the test can tell)
 * gpumemipc and gpumem_rc say yes, and gpumemcpy, which only reaches its
 * own process, no.
 *
 *   reach_test server PORT other|same [RC-DEVICE]
 *   reach_test client HOST PORT other|same [RC-DEVICE]
 *
 * RC-DEVICE defaults to rxe0:1. Prints one line per transport; exits 0
 * when each answer is the expected one.
 *
 * See file LICENSE for terms.
 */

#include <gpumem/gpumem.h>
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ADDR_MAX 256

typedef struct {
    const char  *tl_name;
    const char  *dev_name;      /* NULL: the first device of the transport */
    int         reach_other;    /* expected between machines */
    int         reach_same;     /* ... and on one machine */
    uct_md_h    md;
    uct_iface_h iface;
    uint8_t     dev_addr[ADDR_MAX];
    uint8_t     iface_addr[ADDR_MAX];
    uint32_t    dev_addr_len;
    uint32_t    iface_addr_len;
} reach_tl_t;

static reach_tl_t tls[] = {
    {.tl_name = "gpumemipc", .reach_other = 0, .reach_same = 1},
    {.tl_name = "gpumemcpy", .reach_other = 0, .reach_same = 0},
    {.tl_name = "gpumem_rc", .dev_name = "rxe0:1", .reach_other = 1,
     .reach_same = 1},
};

#define NUM_TLS (sizeof(tls) / sizeof(tls[0]))

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "reach_test: %s: %s\n", what, ucs_status_string(status));
    exit(2);
}

/* Opens the interface of @a tl on its device: the first memory domain of
 * any component whose resources have it */
static void open_tl(reach_tl_t *tl, uct_worker_h worker)
{
    uct_component_h *components;
    uct_component_attr_t comp_attr;
    uct_tl_resource_desc_t *res;
    uct_md_resource_desc_t *mds;
    uct_iface_params_t params;
    uct_iface_config_t *iface_config;
    uct_md_config_t *md_config;
    uct_iface_attr_t attr;
    unsigned num_components, c, m, num_res, r;
    ucs_status_t status;
    uct_md_h md;

    status = uct_query_components(&components, &num_components);
    if (status != UCS_OK) {
        die("uct_query_components", status);
    }
    for (c = 0; c < num_components; ++c) {
        comp_attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uct_component_query(components[c], &comp_attr);
        mds = calloc(comp_attr.md_resource_count + 1, sizeof(*mds));
        comp_attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        comp_attr.md_resources = mds;
        uct_component_query(components[c], &comp_attr);
        for (m = 0; m < comp_attr.md_resource_count; ++m) {
            if (uct_md_config_read(components[c], NULL, NULL, &md_config) !=
                UCS_OK) {
                continue;
            }
            status = uct_md_open(components[c], mds[m].md_name, md_config,
                                 &md);
            uct_config_release(md_config);
            if (status != UCS_OK) {
                continue;
            }
            if (uct_md_query_tl_resources(md, &res, &num_res) != UCS_OK) {
                uct_md_close(md);
                continue;
            }
            for (r = 0; r < num_res; ++r) {
                if (!strcmp(res[r].tl_name, tl->tl_name) &&
                    ((tl->dev_name == NULL) ||
                     !strcmp(res[r].dev_name, tl->dev_name))) {
                    break;
                }
            }
            if (r == num_res) {
                uct_release_tl_resource_list(res);
                uct_md_close(md);
                continue;
            }

            status = uct_md_iface_config_read(md, tl->tl_name, NULL, NULL,
                                              &iface_config);
            if (status != UCS_OK) {
                die("uct_md_iface_config_read", status);
            }
            memset(&params, 0, sizeof(params));
            params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE;
            params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
            params.mode.device.tl_name  = res[r].tl_name;
            params.mode.device.dev_name = res[r].dev_name;
            status = uct_iface_open(md, worker, &params, iface_config,
                                    &tl->iface);
            uct_config_release(iface_config);
            if (status != UCS_OK) {
                die(tl->tl_name, status);
            }
            uct_release_tl_resource_list(res);
            free(mds);

            status = uct_iface_query(tl->iface, &attr);
            if ((status != UCS_OK) || (attr.device_addr_len > ADDR_MAX) ||
                (attr.iface_addr_len > ADDR_MAX)) {
                die("uct_iface_query", status);
            }
            tl->md             = md;
            tl->dev_addr_len   = (uint32_t)attr.device_addr_len;
            tl->iface_addr_len = (uint32_t)attr.iface_addr_len;
            if ((uct_iface_get_device_address(tl->iface, (uct_device_addr_t*)
                                              tl->dev_addr) != UCS_OK) ||
                ((attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) &&
                 (uct_iface_get_address(tl->iface, (uct_iface_addr_t*)
                                        tl->iface_addr) != UCS_OK))) {
                die("getting the addresses", UCS_ERR_IO_ERROR);
            }
            if (!(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
                tl->iface_addr_len = 0;
            }
            uct_release_component_list(components);
            return;
        }
        free(mds);
    }
    fprintf(stderr, "reach_test: no %s%s%s here\n", tl->tl_name,
            tl->dev_name ? " on " : "", tl->dev_name ? tl->dev_name : "");
    exit(2);
}

static void xfer(int fd, void *buf, size_t len, int is_send)
{
    ssize_t n;
    size_t done;

    for (done = 0; done < len; done += (size_t)n) {
        n = is_send ? send(fd, (char*)buf + done, len - done, 0) :
                      recv(fd, (char*)buf + done, len - done, MSG_WAITALL);
        if (n <= 0) {
            perror("reach_test: socket");
            exit(2);
        }
    }
}

static int connect_peer(int argc, char **argv, int *arg_p)
{
    struct addrinfo hints, *ai;
    struct sockaddr_in sin;
    int fd, lfd, one = 1, tries;

    if ((argc >= 4) && !strcmp(argv[1], "server")) {
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        memset(&sin, 0, sizeof(sin));
        sin.sin_family      = AF_INET;
        sin.sin_port        = htons((uint16_t)atoi(argv[2]));
        sin.sin_addr.s_addr = INADDR_ANY;
        if ((bind(lfd, (struct sockaddr*)&sin, sizeof(sin)) != 0) ||
            (listen(lfd, 1) != 0) || ((fd = accept(lfd, NULL, NULL)) < 0)) {
            perror("reach_test: server");
            exit(2);
        }
        close(lfd);
        *arg_p = 3;
        return fd;
    }
    if ((argc >= 5) && !strcmp(argv[1], "client")) {
        memset(&hints, 0, sizeof(hints));
        hints.ai_family   = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(argv[2], argv[3], &hints, &ai) != 0) {
            fprintf(stderr, "reach_test: cannot resolve %s\n", argv[2]);
            exit(2);
        }
        /* The server may not listen yet: a minute of tries */
        for (tries = 0;; ++tries) {
            fd = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                break;
            }
            close(fd);
            if (tries == 120) {
                perror("reach_test: connect");
                exit(2);
            }
            usleep(500000);
        }
        freeaddrinfo(ai);
        *arg_p = 4;
        return fd;
    }
    fprintf(stderr, "usage: reach_test server PORT other|same [RC-DEVICE]\n"
                    "       reach_test client HOST PORT other|same "
                    "[RC-DEVICE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    ucs_async_context_t *async;
    uct_worker_h worker;
    reach_tl_t peer;
    int fd, arg, other, reached, expected, failed = 0, gpus;
    char host[64];
    ucs_status_t status;
    unsigned i;

    fd    = connect_peer(argc, argv, &arg);
    other = !strcmp(argv[arg], "other");
    if (argc > arg + 1) {
        tls[NUM_TLS - 1].dev_name = argv[arg + 1];
    }
    gethostname(host, sizeof(host));
    /* The plugin's GPUs (and its transports, which the link brings) */
    if ((gpumem_device_count(&gpus) != 0) || (gpus == 0)) {
        fprintf(stderr, "reach_test: no GPU\n");
        return 2;
    }

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
    if (status != UCS_OK) {
        die("ucs_async_context_create", status);
    }
    status = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    if (status != UCS_OK) {
        die("uct_worker_create", status);
    }

    for (i = 0; i < NUM_TLS; ++i) {
        open_tl(&tls[i], worker);
    }
    /* Both send first, then read: the addresses are small */
    for (i = 0; i < NUM_TLS; ++i) {
        xfer(fd, &tls[i].dev_addr_len, sizeof(uint32_t), 1);
        xfer(fd, &tls[i].iface_addr_len, sizeof(uint32_t), 1);
        xfer(fd, tls[i].dev_addr, tls[i].dev_addr_len, 1);
        xfer(fd, tls[i].iface_addr, tls[i].iface_addr_len, 1);
    }
    for (i = 0; i < NUM_TLS; ++i) {
        xfer(fd, &peer.dev_addr_len, sizeof(uint32_t), 0);
        xfer(fd, &peer.iface_addr_len, sizeof(uint32_t), 0);
        if ((peer.dev_addr_len > ADDR_MAX) ||
            (peer.iface_addr_len > ADDR_MAX)) {
            die("the peer's address", UCS_ERR_INVALID_PARAM);
        }
        xfer(fd, peer.dev_addr, peer.dev_addr_len, 0);
        xfer(fd, peer.iface_addr, peer.iface_addr_len, 0);

        reached  = uct_iface_is_reachable(
                tls[i].iface, (const uct_device_addr_t*)peer.dev_addr,
                peer.iface_addr_len ?
                (const uct_iface_addr_t*)peer.iface_addr : NULL);
        expected = other ? tls[i].reach_other : tls[i].reach_same;
        printf("reach_test %s: %s %s the peer's addresses (%s machine): "
               "%s\n", host, tls[i].tl_name,
               reached ? "reaches" : "does not reach",
               other ? "another" : "the same",
               (reached == expected) ? "as expected" : "WRONG");
        failed |= (reached != expected);
    }
    /* Neither closes before both have asked */
    xfer(fd, &failed, sizeof(failed), 1);
    xfer(fd, &arg, sizeof(arg), 0);
    close(fd);

    for (i = 0; i < NUM_TLS; ++i) {
        uct_iface_close(tls[i].iface);
        uct_md_close(tls[i].md);
    }
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    return failed;
}
