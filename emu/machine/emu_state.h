/**
 * gpumem emu driver: the layout of a GPU's shared allocator state.
 *
 * Every process of the machine (same user) that emulates the GPU maps this
 * state from one file in shm_dir and changes it only under the file's flock:
 * the processes attached, each with its descriptor of the VRAM memfd (so
 * that a newcomer opens the same VRAM through /proc/<pid>/fd/<fd>), and the
 * extents of VRAM allocated, each with the processes that hold it. Holders
 * that died are dropped at the next locked operation; when no live process
 * is attached any more, the file is unlinked and the memfd goes with the
 * last descriptor.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_STATE_H_
#define GPUMEM_EMU_STATE_H_

#include "emu_int.h"

#include <stdint.h>


#define GPUMEM_EMU_STATE_MAGIC    0x3174617473756d65ul /* "emustat1" */
#define GPUMEM_EMU_STATE_VERSION  3
#define GPUMEM_EMU_PROCS_MAX      256    /* Processes attached to one GPU */
#define GPUMEM_EMU_NO_SLOT        GPUMEM_EMU_PROCS_MAX /* Not attached */
#define GPUMEM_EMU_EXTENTS_MAX    16384  /* Allocations of one GPU */
#define GPUMEM_EMU_HOLDER_WORDS   (GPUMEM_EMU_PROCS_MAX / 64)


/**
 * A process attached to the GPU.
 */
typedef struct gpumem_emu_proc {
    int32_t  pid;        /* 0: a free slot */
    int32_t  vram_fd;    /* Its descriptor of the VRAM memfd */
    uint64_t start_time; /* Since boot, in clock ticks: tells a reused pid */
    uint32_t taken;      /* It released the GPU while its memory is still
                            reached: no other process attaches meanwhile */
    uint32_t reserved;
} gpumem_emu_proc_t;


/**
 * An allocated extent of VRAM.
 */
typedef struct gpumem_emu_extent {
    uint64_t offset;
    uint64_t size;        /* 0: a free slot */
    uint64_t page_size;
    uint64_t generation;  /* Unique per allocation of the state's instance */
    uint64_t holders[GPUMEM_EMU_HOLDER_WORDS]; /* Bit per process slot */
} gpumem_emu_extent_t;


/**
 * The shared state of one GPU. magic is written last, so a file whose
 * creator died before it is initialised again.
 */
struct gpumem_emu_state {
    uint64_t            magic;
    uint32_t            version;
    uint32_t            num_extents;  /* Extents in use, in order[] */
    int32_t             writer;       /* The process changing it, under the
                                         lock: set after its death, the next
                                         locker repairs what it left */
    uint32_t            reserved;
    uint64_t            vram_size;
    uint64_t            vram_dev;     /* The memfd's identity, checked when */
    uint64_t            vram_ino;     /* a newcomer opens it */
    uint64_t            instance;     /* Random per initialisation */
    uint64_t            next_generation;
    gpumem_emu_proc_t   procs[GPUMEM_EMU_PROCS_MAX];
    uint32_t            order[GPUMEM_EMU_EXTENTS_MAX]; /* Slots, by offset */
    gpumem_emu_extent_t extents[GPUMEM_EMU_EXTENTS_MAX];
};


static UCS_F_ALWAYS_INLINE int
gpumem_emu_extent_held_by(const gpumem_emu_extent_t *extent, unsigned slot)
{
    return !!(extent->holders[slot / 64] & (1ul << (slot % 64)));
}

static UCS_F_ALWAYS_INLINE int
gpumem_emu_extent_is_held(const gpumem_emu_extent_t *extent)
{
    unsigned i;

    for (i = 0; i < GPUMEM_EMU_HOLDER_WORDS; ++i) {
        if (extent->holders[i] != 0) {
            return 1;
        }
    }
    return 0;
}

#endif
