/**
 * gpumem memory core: the objects behind regions (internal).
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_MEM_INT_H_
#define GPUMEM_MEM_INT_H_

#include "gpumem_mem.h"

#include <ucs/datastruct/list.h>
#include <ucs/datastruct/pgtable.h>
#include <pthread.h>


/* What a memory object is */
typedef enum {
    GPUMEM_MEMORY_VRAM,     /* Allocated GPU memory (kinds GPU and BAR) */
    GPUMEM_MEMORY_SYSTEM,   /* Allocated system memory (kind HOST) */
    GPUMEM_MEMORY_PINNED    /* Pages the process had, pinned (map_host) */
} gpumem_memory_type_t;


/*
 * Memory one GPU took: its VRAM, system memory it allocated, or pages it
 * pinned. Other GPUs' mappings over it are counted (peers); it goes back
 * when the owner has no region over it and no peer maps it.
 */
typedef struct gpumem_memory {
    gpumem_gpu_t         *owner;      /* The GPU of this process that holds
                                         it (the importer, if imported) */
    const gpumem_topo_reach_t *reach; /* Facts of the GPU it is memory of */
    gpumem_memory_type_t type;
    gpumem_kind_t        kind;
    gpumem_driver_mem_t  *vram;       /* VRAM, or NULL */
    void                 *host;       /* System memory, pinned pages, or
                                         the BAR window */
    size_t               size;
    unsigned             peers;       /* Other GPUs' mappings over it */
    int                  owner_done;  /* The owner's regions are all freed */
    int                  tainted;     /* A peer may still write it (its
                                         flush was not confirmed): back only
                                         at the owner's release */
    int                  reserved;    /* Reserved for a bus client */
    uint64_t             owner_va;    /* The addresses the owner reserved
                                         for it, at which other GPUs map it
                                         too (one space per machine), or 0 */
    struct gpumem_mapping *owner_mapping; /* The owner's mapping, its tables
                                         cleared, whose addresses stay with
                                         the memory while peers map it after
                                         the owner's last free */
    size_t               handle_len;  /* Imported from another process: */
    uint8_t              handle[GPUMEM_EXPORT_MAX]; /* the handle it came by */
    ucs_list_link_t      list;        /* In the owner's memories/deferred */
} gpumem_memory_t;


/*
 * One GPU's page table mapping of one memory, shared by the regions over
 * it.
 */
typedef struct gpumem_mapping {
    ucs_pgt_region_t pgt_region; /* [va, va + va_size) in the GPU's index */
    gpumem_gpu_t    *gpu;
    gpumem_memory_t *memory;
    uint64_t        va;         /* Start of the reserved addresses */
    size_t          va_size;
    int             va_owned;   /* The addresses were reserved for it, not
                                   host ones (GPUMEM_DRIVER_FLAG_HOST_UVA) */
    int             host_va;    /* System memory at its host address */
    int             listed;     /* In the GPU's mappings (else kept, or
                                   the owner's kept addresses) */
    int             indexed;    /* In the GPU's index by address */
    unsigned        refcount;   /* Regions over it */
    ucs_list_link_t regions;    /* Regions over it, in the order given */
    ucs_list_link_t list;       /* In the GPU's mappings or kept */
} gpumem_mapping_t;


struct gpumem_region {
    uint64_t         id;         /* Unique in the process: a freed region's
                                    address may be given again */
    const gpumem_region_t *source; /* The region alloc, map_host or import
                                    gave that it maps: itself, or for one
                                    map_peer gave, its source's source */
    uint64_t         source_id;
    gpumem_gpu_t     *gpu;
    gpumem_kind_t    kind;
    gpumem_mapping_t *mapping;   /* NULL once the GPU was released */
    uint64_t         address;
    size_t           size;
    size_t           asked;      /* The bytes alloc was asked for (size is
                                    them rounded up), or size */
    void             *host;
    int              from_alloc; /* alloc gave it (bus() takes only these) */
    ucs_list_link_t  list;       /* In the GPU's regions */
    ucs_list_link_t  in_mapping; /* In its mapping's regions, while it has
                                    one */
};


struct gpumem_gpu {
    pthread_mutex_t           lock;        /* One call at a time on this
                                              GPU's memory, from any thread */
    unsigned                  refcount;    /* The GPU's own reference (until
                                              destroy) and one per memory it
                                              owns; under the global lock */
    gpumem_driver_t           *driver;
    gpumem_driver_gpu_t       *dgpu;
    unsigned                  index;
    int                       released;
    int                       reserved;    /* Bus reservation: the function
                                              stays taken */
    int                       bus_given;   /* A bus client was given its
                                              memory: kept to the exit */
    pthread_mutex_t           taken_lock;  /* Orders what the driver is told
                                              of taken (a leaf lock) */
    int                       taken_told;  /* What it was told last */
    ucs_list_link_t           outliving;   /* In the destroyed GPUs that
                                              live on, once destroyed */
    ucs_list_link_t           regions;     /* Regions out */
    ucs_list_link_t           mappings;    /* Mappings its tables hold */
    ucs_pgtable_t             va_index;    /* Those at device addresses, by
                                              address (gpumem_mem_index.c) */
    unsigned                  unindexed;   /* Those that are not */
    ucs_list_link_t           kept;        /* Mappings kept: unconfirmed
                                              flush or bus reservation */
    ucs_list_link_t           memories;    /* Memory it owns */
    ucs_list_link_t           deferred;    /* Owned memory to give back at
                                              its next call */
};


/* One call at a time on the GPU's memory */
static inline void gpumem_gpu_lock(gpumem_gpu_t *gpu)
{
    pthread_mutex_lock(&gpu->lock);
}

static inline void gpumem_gpu_unlock(gpumem_gpu_t *gpu)
{
    pthread_mutex_unlock(&gpu->lock);
}

/* The GPU's PCI address, for logs; @a buf holds GPUMEM_TOPO_PCI_STR_MAX */
const char *gpumem_gpu_name(const gpumem_gpu_t *gpu, char *buf);

/* The GPU's mappings by address (gpumem_mem_index.c): under its lock */
ucs_status_t gpumem_mem_index_init(gpumem_gpu_t *gpu);
void gpumem_mem_index_cleanup(gpumem_gpu_t *gpu);
/* Into the GPU's mappings, and its index where it fits */
void gpumem_mem_index_add(gpumem_mapping_t *mapping);
/* Out of the GPU's mappings */
void gpumem_mem_index_del(gpumem_mapping_t *mapping);
gpumem_mapping_t *gpumem_mem_index_find(gpumem_gpu_t *gpu, uint64_t address);
gpumem_region_t *gpumem_mem_index_find_region(gpumem_gpu_t *gpu,
                                              uint64_t address);
/* A mapping of the GPU's tables at any of the @a size bytes at @a va */
gpumem_mapping_t *gpumem_mem_index_overlap(gpumem_gpu_t *gpu, uint64_t va,
                                           size_t size);

#endif
