/**
 * gpumem emu driver: a GPU's shared VRAM and the processes attached to it.
 *
 * VRAM is a sealed memfd (so that /dev/udmabuf can export it), which the
 * first process creates and every later one opens through the /proc entry
 * of a live one. The state file in shm_dir (emu_state.h) is the rendezvous:
 * it is named for the user, the machine and the GPU, and unlinked by the
 * last process to leave, under its lock.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "emu_state.h"

#include <uct/gpumem/util/gpumem_proc.h>
#include <ucs/sys/sys.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* The GPUs this process attached, for its exit */
static UCS_LIST_HEAD(gpumem_emu_state_attached);
static pthread_mutex_t gpumem_emu_state_attached_lock =
        PTHREAD_MUTEX_INITIALIZER;


/* State and start time of a process, from /proc/<pid>/stat */
static int gpumem_emu_proc_stat(pid_t pid, char *state_p, uint64_t *start_p)
{
    char path[64], buf[1024];
    unsigned field;
    ssize_t length;
    char *p;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    length = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (length <= 0) {
        return -1;
    }
    buf[length] = '\0';

    /* The command may hold spaces and ')': fields follow the last ')' */
    p = strrchr(buf, ')');
    if ((p == NULL) || (p[1] != ' ')) {
        return -1;
    }
    p        += 2;
    *state_p  = *p;
    for (field = 3; field < 22; ++field) { /* starttime is field 22 */
        p = strchr(p, ' ');
        if (p == NULL) {
            return -1;
        }
        ++p;
    }
    *start_p = strtoull(p, NULL, 10);
    return 0;
}

/*
 * Whether an attached process still lives, known by its pid as /proc names
 * it (gpumem_proc.h: also from another PID namespace). kill() or /proc
 * tells a dead pid; the thorough check also tells a zombie and a pid that
 * another process took, at the price of reading /proc.
 */
static int gpumem_emu_proc_is_alive(const gpumem_emu_proc_t *proc,
                                    int thorough)
{
    uint64_t start;
    char state;

    if (gpumem_proc_is_gone(proc->pid)) {
        return 0;
    }
    if (!thorough || (gpumem_emu_proc_stat(proc->pid, &state, &start) != 0)) {
        return 1; /* Without /proc, kill() is all we know */
    }
    return (state != 'Z') && (state != 'X') &&
           ((proc->start_time == 0) || (start == proc->start_time));
}

void gpumem_emu_state_sweep(gpumem_emu_gpu_t *gpu, int thorough)
{
    gpumem_emu_proc_t *proc;
    unsigned slot;

    for (slot = 0; slot < GPUMEM_EMU_PROCS_MAX; ++slot) {
        proc = &gpu->state->procs[slot];
        if ((proc->pid == 0) || (slot == gpu->proc_slot) ||
            gpumem_emu_proc_is_alive(proc, thorough)) {
            continue;
        }

        gpumem_emu_gpu_debug(gpu, "process %d died attached: dropping what "
                             "it held", proc->pid);
        gpu->recovery->drop_proc(gpu, slot);
    }
}

/* This process is the one changing the state from now on, once what a
 * writer that died holding the lock left half-done is repaired (lock
 * held) */
static void gpumem_emu_state_begin_write(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_state_t *state = gpu->state;

    if (state->writer != 0) {
        gpu->recovery->repair(gpu, state->writer);
    }
    state->writer = gpumem_proc_pid();
}

void gpumem_emu_state_lock(gpumem_emu_gpu_t *gpu)
{
    while ((flock(gpu->state_fd, LOCK_EX) != 0) && (errno == EINTR)) {
    }
    gpumem_emu_state_begin_write(gpu);
    gpumem_emu_state_sweep(gpu, 0);
}

/* This process is done changing the state (lock held): the next to lock it
 * finds nothing half-done to repair */
static void gpumem_emu_state_end_write(gpumem_emu_gpu_t *gpu)
{
    if ((gpu->state != NULL) && (gpu->state->writer == gpumem_proc_pid())) {
        gpu->state->writer = 0;
    }
}

void gpumem_emu_state_unlock(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_state_end_write(gpu);
    flock(gpu->state_fd, LOCK_UN);
}

static unsigned gpumem_emu_state_num_procs(const gpumem_emu_state_t *state)
{
    unsigned slot, count = 0;

    for (slot = 0; slot < GPUMEM_EMU_PROCS_MAX; ++slot) {
        count += (state->procs[slot].pid != 0);
    }
    return count;
}

/* Opens the state file and locks it: the file at the path, not one that the
 * last process unlinked while this one waited for the lock */
static ucs_status_t gpumem_emu_state_open_locked(gpumem_emu_gpu_t *gpu,
                                                 struct stat *st_p)
{
    struct stat path_st;
    int fd, err;

    for (;;) {
        fd  = open(gpu->state_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                   0600);
        err = errno;
        if ((fd < 0) && (err == EACCES) &&
            (lstat(gpu->state_path, &path_st) == 0) &&
            (path_st.st_uid != geteuid())) {
            /* Made first by another user, whose GPU state it is not */
            gpumem_emu_gpu_error(gpu, "its shared state %s belongs to user "
                                 "%u, not to this process's user %u: set "
                                 "UCX_GPUMEM_EMU_SHM_DIR to a directory of "
                                 "your own", gpu->state_path,
                                 (unsigned)path_st.st_uid,
                                 (unsigned)geteuid());
            return UCS_ERR_IO_ERROR;
        } else if (fd < 0) {
            /* errno is open()'s: the lstat() above may have failed too */
            gpumem_emu_gpu_error(gpu, "cannot open its shared state %s: %s%s",
                                 gpu->state_path, strerror(err),
                                 ((err == EACCES) || (err == ENOENT) ||
                                  (err == EROFS)) ?
                                 " (UCX_GPUMEM_EMU_SHM_DIR must be a "
                                 "directory this user may write)" : "");
            return UCS_ERR_IO_ERROR;
        }

        while ((flock(fd, LOCK_EX) != 0) && (errno == EINTR)) {
        }

        if ((fstat(fd, st_p) == 0) && (st_p->st_nlink > 0) &&
            (stat(gpu->state_path, &path_st) == 0) &&
            (path_st.st_dev == st_p->st_dev) &&
            (path_st.st_ino == st_p->st_ino)) {
            break;
        }
        close(fd);
    }

    if (st_p->st_uid != geteuid()) {
        /* Only a process of the same user may reach the GPU's memory */
        gpumem_emu_gpu_error(gpu, "its shared state %s belongs to user %u, "
                             "not to this process's user %u: set "
                             "UCX_GPUMEM_EMU_SHM_DIR to a directory of your "
                             "own", gpu->state_path, (unsigned)st_p->st_uid,
                             (unsigned)geteuid());
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    gpu->state_fd = fd;
    return UCS_OK;
}

/* Backs every byte of the state file in its directory now: a sparse file
 * touched through a shared mapping would raise SIGBUS in every process of
 * the machine the day the directory is full */
static ucs_status_t gpumem_emu_state_reserve(gpumem_emu_gpu_t *gpu)
{
    int err = posix_fallocate(gpu->state_fd, 0, sizeof(gpumem_emu_state_t));

    if (err != 0) {
        gpumem_emu_gpu_error(gpu, "cannot reserve the %zu bytes of its shared "
                             "state %s: %s (UCX_GPUMEM_EMU_SHM_DIR names "
                             "another directory)", sizeof(gpumem_emu_state_t),
                             gpu->state_path, strerror(err));
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* A new VRAM: a memfd sealed at its size, which hole punching still
 * empties, and a state that names it */
static ucs_status_t gpumem_emu_state_create(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_state_t *state = gpu->state;
    char name[64];
    struct stat st;
    int fd;

    /* Zeroes the state without touching its pages */
    if ((ftruncate(gpu->state_fd, 0) != 0) ||
        (ftruncate(gpu->state_fd, sizeof(*state)) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot reset its shared state %s: %s",
                             gpu->state_path, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    if (gpumem_emu_state_reserve(gpu) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    snprintf(name, sizeof(name), "gpumem-emu-vram-%s", gpu->name);
    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        gpumem_emu_gpu_error(gpu, "memfd_create of its VRAM failed: %s",
                             strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    if ((ftruncate(fd, gpu->vram_size) != 0) ||
        (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) !=
         0) ||
        (fstat(fd, &st) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot size its VRAM memfd to %zu bytes: "
                             "%s", gpu->vram_size, strerror(errno));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    gpu->vram_fd           = fd;
    state->version         = GPUMEM_EMU_STATE_VERSION;
    state->vram_size       = gpu->vram_size;
    state->vram_dev        = st.st_dev;
    state->vram_ino        = st.st_ino;
    state->instance        = ucs_generate_uuid((uintptr_t)gpu ^ getpid());
    state->next_generation = 1;
    state->magic           = GPUMEM_EMU_STATE_MAGIC;
    gpumem_emu_gpu_debug(gpu, "created %zu bytes of VRAM, state %s",
                         gpu->vram_size, gpu->state_path);
    return UCS_OK;
}

/* Opens the VRAM memfd through a live attached process */
static ucs_status_t gpumem_emu_state_open_vram(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_state_t *state = gpu->state;
    int last_errno            = ESRCH;
    pid_t last_pid            = 0;
    gpumem_emu_proc_t *proc;
    char path[64];
    struct stat st;
    unsigned slot;
    int fd;

    for (slot = 0; slot < GPUMEM_EMU_PROCS_MAX; ++slot) {
        proc = &state->procs[slot];
        if ((proc->pid == 0) || !gpumem_emu_proc_is_alive(proc, 1)) {
            continue;
        }

        snprintf(path, sizeof(path), "/proc/%d/fd/%d", proc->pid,
                 proc->vram_fd);
        last_pid = proc->pid;
        fd       = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }

        if ((fstat(fd, &st) == 0) && (st.st_dev == state->vram_dev) &&
            (st.st_ino == state->vram_ino) &&
            ((uint64_t)st.st_size == state->vram_size)) {
            gpu->vram_fd = fd;
            return UCS_OK;
        }
        last_errno = ESTALE;
        close(fd);
    }

    gpumem_emu_gpu_error(gpu, "cannot open the VRAM that process %d holds "
                         "(state %s): %s", (int)last_pid, gpu->state_path,
                         strerror(last_errno));
    return UCS_ERR_IO_ERROR;
}

static ucs_status_t gpumem_emu_state_take_slot(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_proc_t *proc;
    uint64_t start = 0;
    unsigned slot;
    char state;

    for (slot = 0; slot < GPUMEM_EMU_PROCS_MAX; ++slot) {
        proc = &gpu->state->procs[slot];
        if (proc->pid != 0) {
            continue;
        }

        if (gpumem_emu_proc_stat(gpumem_proc_pid(), &state, &start) != 0) {
            start = 0;
        }
        proc->pid        = gpumem_proc_pid();
        proc->vram_fd    = gpu->vram_fd;
        proc->start_time = start;
        gpu->proc_slot   = slot;
        return UCS_OK;
    }

    gpumem_emu_gpu_error(gpu, "%d processes are attached to it already",
                         GPUMEM_EMU_PROCS_MAX);
    return UCS_ERR_EXCEEDS_LIMIT;
}

/* Refused while a live process keeps the GPU taken (lock held; the sweep
 * before it dropped the dead ones' slots) */
static ucs_status_t gpumem_emu_state_check_taken(gpumem_emu_gpu_t *gpu)
{
    const gpumem_emu_proc_t *proc;
    unsigned slot;

    for (slot = 0; slot < GPUMEM_EMU_PROCS_MAX; ++slot) {
        proc = &gpu->state->procs[slot];
        if ((proc->pid == 0) || !proc->taken ||
            !gpumem_emu_proc_is_alive(proc, 1)) {
            continue;
        }

        gpumem_emu_gpu_error(gpu, "it is taken: process %d released it "
                             "while its memory is still reached (another of "
                             "its GPUs maps it, or a bus client may write "
                             "it), and it opens again once that ends",
                             proc->pid);
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

void gpumem_emu_state_keep_taken(gpumem_emu_gpu_t *gpu, int taken)
{
    gpumem_emu_state_lock(gpu);
    gpu->state->procs[gpu->proc_slot].taken = !!taken;
    gpumem_emu_state_unlock(gpu);
    gpumem_emu_gpu_debug(gpu, "%s", taken ? "kept taken after its release" :
                         "no longer taken");
}

/* Maps the state, and makes it a live one: this process's VRAM is that of
 * the live processes, or a new one where none is left */
static ucs_status_t gpumem_emu_state_join(gpumem_emu_gpu_t *gpu,
                                          const struct stat *st)
{
    gpumem_emu_state_t *state;
    unsigned slot;
    int live;

    if ((st->st_size != 0) && (st->st_size != sizeof(*state))) {
        gpumem_emu_gpu_error(gpu, "its shared state %s has %ld bytes, not "
                             "%zu: another version of gpumem uses it; remove "
                             "it once no process does", gpu->state_path,
                             (long)st->st_size, sizeof(*state));
        return UCS_ERR_UNSUPPORTED;
    }

    if ((st->st_size == 0) &&
        (ftruncate(gpu->state_fd, sizeof(*state)) != 0)) {
        gpumem_emu_gpu_error(gpu, "cannot size its shared state %s: %s",
                             gpu->state_path, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    /* Another process's file may be sparse: every block is backed before a
     * byte of it is touched */
    if (gpumem_emu_state_reserve(gpu) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    state = mmap(NULL, sizeof(*state), PROT_READ | PROT_WRITE, MAP_SHARED,
                 gpu->state_fd, 0);
    if (state == MAP_FAILED) {
        gpumem_emu_gpu_error(gpu, "cannot map its shared state %s: %s",
                             gpu->state_path, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    gpu->state = state;

    if ((state->magic != 0) &&
        ((state->magic != GPUMEM_EMU_STATE_MAGIC) ||
         (state->version != GPUMEM_EMU_STATE_VERSION))) {
        gpumem_emu_gpu_error(gpu, "its shared state %s is not of this "
                             "version of gpumem; remove it once no process "
                             "uses it", gpu->state_path);
        return UCS_ERR_UNSUPPORTED;
    }

    live = 0;
    if (state->magic != 0) {
        for (slot = 0; slot < GPUMEM_EMU_PROCS_MAX; ++slot) {
            live += (state->procs[slot].pid != 0) &&
                    gpumem_emu_proc_is_alive(&state->procs[slot], 1);
        }
    }

    if (!live) {
        /* Nobody left: what a dead last process held goes with its VRAM */
        return gpumem_emu_state_create(gpu);
    }

    if (state->vram_size != gpu->vram_size) {
        gpumem_emu_gpu_error(gpu, "other processes emulate it with %lu bytes "
                             "of VRAM, this one with %zu",
                             (unsigned long)state->vram_size, gpu->vram_size);
        return UCS_ERR_INVALID_PARAM;
    }

    return gpumem_emu_state_open_vram(gpu);
}

/* Unlinks the state once no process is attached (state lock held); never
 * one this process cannot read, which another version may use */
static void gpumem_emu_state_unlink_unused(gpumem_emu_gpu_t *gpu)
{
    gpumem_emu_state_t *state = gpu->state;

    if ((state != NULL) &&
        ((state->magic == 0) ||
         ((state->magic == GPUMEM_EMU_STATE_MAGIC) &&
          (state->version == GPUMEM_EMU_STATE_VERSION))) &&
        (gpumem_emu_state_num_procs(state) == 0)) {
        unlink(gpu->state_path);
        gpumem_emu_gpu_debug(gpu, "no process left: removed %s",
                             gpu->state_path);
    }
}

/* Undoes what attach did, the lock last */
static void gpumem_emu_state_close(gpumem_emu_gpu_t *gpu)
{
    if (gpu->window != NULL) {
        munmap(gpu->window, gpu->vram_size);
        gpu->window = NULL;
    }
    if (gpu->vram_fd >= 0) {
        close(gpu->vram_fd);
        gpu->vram_fd = -1;
    }
    if (gpu->state != NULL) {
        munmap(gpu->state, sizeof(*gpu->state));
        gpu->state = NULL;
    }
    close(gpu->state_fd); /* Drops the lock */
    gpu->state_fd = -1;
}

ucs_status_t gpumem_emu_state_attach(gpumem_emu_gpu_t *gpu,
                                     const gpumem_emu_recovery_t *recovery)
{
    gpumem_emu_driver_t *driver = gpu->driver;
    ucs_status_t status;
    struct stat st;
    void *window;

    gpu->proc_slot = GPUMEM_EMU_NO_SLOT;
    gpu->recovery  = recovery;
    if (snprintf(gpu->state_path, sizeof(gpu->state_path),
                 "%s/gpumem-emu.%u.%016lx.%s", driver->shm_dir,
                 (unsigned)geteuid(), (unsigned long)driver->machine_hash,
                 gpu->name) >= (int)sizeof(gpu->state_path)) {
        gpumem_emu_gpu_error(gpu, "the path of its shared state in %s is "
                             "too long", driver->shm_dir);
        return UCS_ERR_INVALID_PARAM;
    }

    status = gpumem_emu_state_open_locked(gpu, &st);
    if (status != UCS_OK) {
        return status;
    }

    status = gpumem_emu_state_join(gpu, &st);
    if (status != UCS_OK) {
        goto err_close;
    }

    /* With the VRAM open, what a writer that died left half-done is
     * repaired, and what dead processes held can go back */
    gpumem_emu_state_begin_write(gpu);
    gpumem_emu_state_sweep(gpu, 1);

    status = gpumem_emu_state_check_taken(gpu);
    if (status != UCS_OK) {
        goto err_close;
    }

    window = mmap(NULL, gpu->vram_size, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_NORESERVE, gpu->vram_fd, 0);
    if (window == MAP_FAILED) {
        gpumem_emu_gpu_error(gpu, "cannot map its %zu bytes of VRAM: %s",
                             gpu->vram_size, strerror(errno));
        status = UCS_ERR_NO_MEMORY;
        goto err_close;
    }
    gpu->window = window;

    status = gpumem_emu_state_take_slot(gpu);
    if (status != UCS_OK) {
        goto err_close;
    }

    gpumem_emu_gpu_debug(gpu, "attached as process slot %u of %s",
                         gpu->proc_slot, gpu->state_path);
    gpumem_emu_state_unlock(gpu);

    pthread_mutex_lock(&gpumem_emu_state_attached_lock);
    ucs_list_add_tail(&gpumem_emu_state_attached, &gpu->attached);
    pthread_mutex_unlock(&gpumem_emu_state_attached_lock);
    return UCS_OK;

err_close:
    gpumem_emu_state_end_write(gpu);
    gpumem_emu_state_unlink_unused(gpu);
    gpumem_emu_state_close(gpu);
    return status;
}

void gpumem_emu_state_detach(gpumem_emu_gpu_t *gpu)
{
    if (gpu->state_fd < 0) {
        return;
    }

    pthread_mutex_lock(&gpumem_emu_state_attached_lock);
    ucs_list_del(&gpu->attached);
    pthread_mutex_unlock(&gpumem_emu_state_attached_lock);

    gpumem_emu_state_lock(gpu);
    gpu->recovery->drop_proc(gpu, gpu->proc_slot);
    gpu->proc_slot = GPUMEM_EMU_NO_SLOT;
    gpumem_emu_state_sweep(gpu, 1);
    gpumem_emu_state_end_write(gpu);
    gpumem_emu_state_unlink_unused(gpu);
    gpumem_emu_state_close(gpu);
}

/*
 * A process that exits with GPUs attached (the emulated CUDA keeps them to
 * the end, as CUDA does; gpumem.h keeps them while an allocation lives)
 * leaves no state file behind when it is the last process attached. The
 * state is left as it is otherwise: its other threads may still run, and
 * the processes attached take over what it held, as from any that ended.
 * The lock is kept to the exit, which drops it.
 */
static void UCS_F_DTOR gpumem_emu_state_exit(void)
{
    gpumem_emu_gpu_t *gpu;

    pthread_mutex_lock(&gpumem_emu_state_attached_lock);
    ucs_list_for_each(gpu, &gpumem_emu_state_attached, attached) {
        /* The child of a fork shares its parent's lock and slot */
        if ((gpu->state == NULL) || (gpu->proc_slot == GPUMEM_EMU_NO_SLOT) ||
            (gpu->state->procs[gpu->proc_slot].pid != gpumem_proc_pid())) {
            continue;
        }

        while ((flock(gpu->state_fd, LOCK_EX) != 0) && (errno == EINTR)) {
        }
        if (gpumem_emu_state_num_procs(gpu->state) == 1) {
            unlink(gpu->state_path);
        }
    }
    pthread_mutex_unlock(&gpumem_emu_state_attached_lock);
}
