/**
 * gpumem topology: one NIC for each GPU, distinct where there are enough.
 *
 * Each GPU's nearest NIC is not enough: on a Dell XE8640 two of the four
 * H100s rank one CX-7 first, and on Lassen two V100s rank the same port of
 * each dual-port CX-5 first, so that half the NICs carry all the traffic.
 * The binding is a minimum-cost assignment of GPUs to NICs by the Hungarian
 * method, each NIC offered as many times as it may be shared, at the cost
 * the ranking orders NICs by: the relation first, then the PCI links. Ties
 * go the ranking's way, GPU by GPU in PCI order: the GPU is held to each
 * NIC of its ranking in turn until one keeps the least total.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <string.h>


/* Above any sum of reduced costs the Hungarian method meets */
#define GPUMEM_TOPO_BIND_INFINITY  (INT64_MAX / 4)


/* The assignment problem and the Hungarian method's workspace */
typedef struct gpumem_topo_bind {
    unsigned num_gpus;
    unsigned num_nics;
    unsigned share;      /* GPUs one NIC may serve */
    unsigned num_slots;  /* num_nics * share: the problem's columns */
    unsigned *nic_dev;   /* [nic]: index in gpumem_topo_t::devs */
    unsigned *hops;      /* [gpu * num_nics + nic]: PCI links between */
    int64_t  *cost;      /* [gpu * num_nics + nic] */
    unsigned *order;     /* [gpu * num_nics + i]: the GPU's ranking */
    int64_t  held_cost;  /* Of any NIC but the one a GPU is held to: more
                            than every assignment that has none */
    int      *held;      /* [gpu]: the NIC it is held to, -1 none */
    unsigned *nic_of;    /* [gpu]: its NIC in the best assignment found */
    unsigned *trial;     /* [gpu]: its NIC in the assignment tried */
    unsigned *rank_of;   /* [gpu]: its NIC's place in its ranking */
    int64_t  *u;         /* [1 + gpu]: row potentials */
    int64_t  *v;         /* [slot]: column potentials, 0 the virtual one */
    int64_t  *minv;      /* [slot]: least reduced cost found to it */
    unsigned *row_of;    /* [slot]: 1 + the GPU in it, 0 none */
    unsigned *way;       /* [slot]: the slot before it on the path */
    uint8_t  *used;      /* [slot]: on the alternating tree */
} gpumem_topo_bind_t;


static void gpumem_topo_bind_cleanup(gpumem_topo_bind_t *b)
{
    ucs_free(b->nic_dev);
    ucs_free(b->hops);
    ucs_free(b->cost);
    ucs_free(b->order);
    ucs_free(b->held);
    ucs_free(b->nic_of);
    ucs_free(b->u);
    ucs_free(b->v);
    ucs_free(b->minv);
    ucs_free(b->row_of);
    ucs_free(b->way);
    ucs_free(b->used);
}

static ucs_status_t gpumem_topo_bind_alloc(gpumem_topo_bind_t *b)
{
    size_t pairs = (size_t)b->num_gpus * b->num_nics;
    size_t cols  = (size_t)b->num_slots + 1;

    b->nic_dev = ucs_calloc(b->num_nics, sizeof(*b->nic_dev), "bind_nics");
    b->hops    = ucs_calloc(pairs, sizeof(*b->hops), "bind_hops");
    b->cost    = ucs_calloc(pairs, sizeof(*b->cost), "bind_cost");
    b->order   = ucs_calloc(pairs, sizeof(*b->order), "bind_order");
    b->held    = ucs_calloc(b->num_gpus, sizeof(*b->held), "bind_held");
    b->nic_of  = ucs_calloc(3 * b->num_gpus, sizeof(*b->nic_of),
                            "bind_nic_of");
    b->u       = ucs_calloc(b->num_gpus + 1, sizeof(*b->u), "bind_u");
    b->v       = ucs_calloc(cols, sizeof(*b->v), "bind_v");
    b->minv    = ucs_calloc(cols, sizeof(*b->minv), "bind_minv");
    b->row_of  = ucs_calloc(cols, sizeof(*b->row_of), "bind_row_of");
    b->way     = ucs_calloc(cols, sizeof(*b->way), "bind_way");
    b->used    = ucs_calloc(cols, sizeof(*b->used), "bind_used");
    if ((b->nic_dev == NULL) || (b->hops == NULL) || (b->cost == NULL) ||
        (b->order == NULL) ||
        (b->held == NULL) || (b->nic_of == NULL) || (b->u == NULL) ||
        (b->v == NULL) ||
        (b->minv == NULL) || (b->row_of == NULL) || (b->way == NULL) ||
        (b->used == NULL)) {
        ucs_error("gpumem: no memory to bind %u GPUs to %u NICs",
                  b->num_gpus, b->num_nics);
        gpumem_topo_bind_cleanup(b);
        return UCS_ERR_NO_MEMORY;
    }

    b->trial   = b->nic_of + b->num_gpus;
    b->rank_of = b->trial + b->num_gpus;
    return UCS_OK;
}

/*
 * A pair's cost orders NICs as gpumem_topo_rank_nics() does, and a total
 * orders assignments by their relations before their PCI links: a relation
 * weighs more than the PCI links of all GPUs together.
 */
/* Whether a NIC takes part: all do, but with GPUMEM_TOPO_BIND_ACTIVE one
 * whose port is known to be down */
static int gpumem_topo_bind_takes(const gpumem_topo_dev_t *dev,
                                  unsigned flags)
{
    return (dev->type == GPUMEM_TOPO_DEV_NIC) &&
           (!(flags & GPUMEM_TOPO_BIND_ACTIVE) || (dev->port == 0) ||
            dev->port_active);
}

static void gpumem_topo_bind_costs(const gpumem_topo_t *topo, unsigned flags,
                                   gpumem_topo_bind_t *b)
{
    unsigned max_hops = 0;
    int64_t weight, max_cost;
    unsigned dev, gpu, nic, pair;

    for (dev = 0, nic = 0; dev < topo->num_devs; ++dev) {
        if (gpumem_topo_bind_takes(&topo->devs[dev], flags)) {
            b->nic_dev[nic++] = dev;
        }
    }

    /* The relation until the weight is known */
    for (gpu = 0; gpu < b->num_gpus; ++gpu) {
        for (nic = 0; nic < b->num_nics; ++nic) {
            pair          = (gpu * b->num_nics) + nic;
            b->cost[pair] = gpumem_topo_relation(
                                    &topo->devs[gpu].reach,
                                    &topo->devs[b->nic_dev[nic]].reach,
                                    &b->hops[pair]);
            max_hops      = ucs_max(max_hops, b->hops[pair]);
        }
        b->held[gpu] = -1;
    }

    weight   = (int64_t)b->num_gpus * (max_hops + 1);
    max_cost = 0;
    for (pair = 0; pair < b->num_gpus * b->num_nics; ++pair) {
        b->cost[pair] = (b->cost[pair] * weight) + b->hops[pair];
        max_cost      = ucs_max(max_cost, b->cost[pair]);
    }
    b->held_cost = (max_cost + 1) * b->num_gpus;
}

/* Each GPU's NICs nearest first, the nearer of two as near the one first in
 * PCI order, as gpumem_topo_rank_nics() has them */
static void gpumem_topo_bind_rank(gpumem_topo_bind_t *b)
{
    const int64_t *cost;
    unsigned *order;
    unsigned gpu, i, j, nic;

    for (gpu = 0; gpu < b->num_gpus; ++gpu) {
        cost  = &b->cost[gpu * b->num_nics];
        order = &b->order[gpu * b->num_nics];
        for (i = 0; i < b->num_nics; ++i) {
            nic = i;
            for (j = i; (j > 0) && (cost[nic] < cost[order[j - 1]]); --j) {
                order[j] = order[j - 1];
            }
            order[j] = nic;
        }
    }
}

static int64_t gpumem_topo_bind_cost(const gpumem_topo_bind_t *b,
                                     unsigned gpu, unsigned slot)
{
    unsigned nic = slot / b->share;

    if ((b->held[gpu] >= 0) && ((unsigned)b->held[gpu] != nic)) {
        return b->held_cost;
    }
    return b->cost[(gpu * b->num_nics) + nic];
}

/* Augments the assignment of the GPUs before @a gpu by @a gpu, along the
 * shortest path of reduced costs from its row to a free slot */
static void gpumem_topo_bind_augment(gpumem_topo_bind_t *b, unsigned gpu)
{
    unsigned slot, col, next, row;
    int64_t delta, reduced;

    b->row_of[0] = gpu + 1;
    col          = 0;
    for (slot = 0; slot <= b->num_slots; ++slot) {
        b->minv[slot] = GPUMEM_TOPO_BIND_INFINITY;
        b->used[slot] = 0;
    }

    do {
        b->used[col] = 1;
        row          = b->row_of[col];
        delta        = GPUMEM_TOPO_BIND_INFINITY;
        next         = 0;
        for (slot = 1; slot <= b->num_slots; ++slot) {
            if (b->used[slot]) {
                continue;
            }
            reduced = gpumem_topo_bind_cost(b, row - 1, slot - 1) -
                      b->u[row] - b->v[slot];
            if (reduced < b->minv[slot]) {
                b->minv[slot] = reduced;
                b->way[slot]  = col;
            }
            if (b->minv[slot] < delta) {
                delta = b->minv[slot];
                next  = slot;
            }
        }

        for (slot = 0; slot <= b->num_slots; ++slot) {
            if (b->used[slot]) {
                b->u[b->row_of[slot]] += delta;
                b->v[slot]            -= delta;
            } else {
                b->minv[slot] -= delta;
            }
        }
        col = next;
    } while (b->row_of[col] != 0);

    /* Shift the GPUs along the path, the new one into its first slot */
    do {
        next           = b->way[col];
        b->row_of[col] = b->row_of[next];
        col            = next;
    } while (col != 0);
}

/* The least total cost under the GPUs held, and each GPU's NIC in it */
static int64_t gpumem_topo_bind_solve(gpumem_topo_bind_t *b,
                                      unsigned *nic_of)
{
    int64_t total = 0;
    unsigned gpu, slot;

    memset(b->u, 0, sizeof(*b->u) * (b->num_gpus + 1));
    memset(b->v, 0, sizeof(*b->v) * (b->num_slots + 1));
    memset(b->row_of, 0, sizeof(*b->row_of) * (b->num_slots + 1));

    for (gpu = 0; gpu < b->num_gpus; ++gpu) {
        gpumem_topo_bind_augment(b, gpu);
    }

    for (slot = 1; slot <= b->num_slots; ++slot) {
        if (b->row_of[slot] != 0) {
            gpu          = b->row_of[slot] - 1;
            nic_of[gpu]  = (slot - 1) / b->share;
            total       += gpumem_topo_bind_cost(b, gpu, slot - 1);
        }
    }
    return total;
}

/*
 * Holds each GPU in PCI order to the first NIC of its ranking with which
 * the least total stays: the NIC it has in the best assignment found so far
 * keeps it, so only the NICs ranked before that one are tried.
 */
static void gpumem_topo_bind_break_ties(gpumem_topo_bind_t *b, int64_t total)
{
    unsigned gpu, i, nic;

    for (gpu = 0; gpu < b->num_gpus; ++gpu) {
        for (i = 0; i < b->num_nics; ++i) {
            nic          = b->order[(gpu * b->num_nics) + i];
            b->held[gpu] = nic;
            if (nic == b->nic_of[gpu]) {
                break;
            }
            if (gpumem_topo_bind_solve(b, b->trial) == total) {
                memcpy(b->nic_of, b->trial, sizeof(*b->nic_of) * b->num_gpus);
                break;
            }
        }
        b->rank_of[gpu] = i;
    }
}

ucs_status_t gpumem_topo_bind_nics(const gpumem_topo_t *topo,
                                   unsigned flags,
                                   gpumem_topo_nic_bind_t *binds)
{
    unsigned gpu, other, dev, num_nics = 0;
    gpumem_topo_bind_t b;
    ucs_status_t status;
    int64_t total;

    for (dev = 0; dev < topo->num_devs; ++dev) {
        num_nics += gpumem_topo_bind_takes(&topo->devs[dev], flags);
    }
    if (num_nics == 0) {
        return UCS_ERR_NO_DEVICE;
    }
    if (topo->num_gpus == 0) {
        return UCS_OK;
    }

    memset(&b, 0, sizeof(b));
    b.num_gpus  = topo->num_gpus;
    b.num_nics  = num_nics;
    b.share     = ucs_div_round_up(b.num_gpus, b.num_nics);
    b.num_slots = b.num_nics * b.share;

    status = gpumem_topo_bind_alloc(&b);
    if (status != UCS_OK) {
        return status;
    }

    gpumem_topo_bind_costs(topo, flags, &b);
    gpumem_topo_bind_rank(&b);
    total = gpumem_topo_bind_solve(&b, b.nic_of);
    gpumem_topo_bind_break_ties(&b, total);

    for (gpu = 0; gpu < b.num_gpus; ++gpu) {
        binds[gpu].nic      = b.nic_dev[b.nic_of[gpu]];
        binds[gpu].rank     = b.rank_of[gpu];
        binds[gpu].relation = gpumem_topo_relation(
                                      &topo->devs[gpu].reach,
                                      &topo->devs[binds[gpu].nic].reach,
                                      &binds[gpu].hops);
        binds[gpu].sharers  = 0;
        for (other = 0; other < b.num_gpus; ++other) {
            binds[gpu].sharers += (b.nic_of[other] == b.nic_of[gpu]);
        }
    }

    gpumem_topo_bind_cleanup(&b);
    return UCS_OK;
}
