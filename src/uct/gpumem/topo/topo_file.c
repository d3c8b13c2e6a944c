/**
 * gpumem topology: reading the files it is given.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "topo_file.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static const char *gpumem_topo_file_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) {
        return "a FIFO";
    } else if (S_ISCHR(mode) || S_ISBLK(mode)) {
        return "a device";
    } else if (S_ISDIR(mode)) {
        return "a directory";
    } else if (S_ISSOCK(mode)) {
        return "a socket";
    }
    return "not a regular file";
}

ucs_status_t gpumem_topo_file_open(const char *path, const char *what,
                                   int *fd_p)
{
    struct stat st;
    int fd;

    /* Non-blocking: a FIFO with no writer would block the open */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        ucs_error("gpumem: cannot read %s %s: %s", what, path,
                  strerror(errno));
        return UCS_ERR_IO_ERROR;
    }

    if (fstat(fd, &st) != 0) {
        ucs_error("gpumem: cannot read %s %s: fstat: %s", what, path,
                  strerror(errno));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    if (!S_ISREG(st.st_mode)) {
        ucs_error("gpumem: %s %s is %s: a regular file is needed", what, path,
                  gpumem_topo_file_kind(st.st_mode));
        close(fd);
        return UCS_ERR_INVALID_PARAM;
    }

    /* A regular file never blocks; reads go as for any file */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *fd_p = fd;
    return UCS_OK;
}

ucs_status_t gpumem_topo_file_read(const char *path, const char *what,
                                   size_t max, char **buf_p, size_t *len_p)
{
    size_t length = 0;
    ucs_status_t status;
    struct stat st;
    size_t size;
    ssize_t ret;
    char *buf;
    int fd;

    status = gpumem_topo_file_open(path, what, &fd);
    if (status != UCS_OK) {
        return status;
    }

    if ((fstat(fd, &st) != 0) || ((size_t)st.st_size > max)) {
        ucs_error("gpumem: %s %s holds %lld bytes, more than the %zu it may",
                  what, path, (long long)st.st_size, max);
        status = UCS_ERR_INVALID_PARAM;
        goto out_close;
    }

    size = st.st_size;
    buf  = ucs_malloc(size + 1, "gpumem_topo_file");
    if (buf == NULL) {
        ucs_error("gpumem: failed to allocate %zu bytes to read %s", size + 1,
                  path);
        status = UCS_ERR_NO_MEMORY;
        goto out_close;
    }

    /* One byte more than its size: a file that grows is not read half */
    while (length <= size) {
        ret = read(fd, buf + length, size + 1 - length);
        if ((ret < 0) && (errno == EINTR)) {
            continue;
        } else if (ret < 0) {
            ucs_error("gpumem: cannot read %s %s: %s", what, path,
                      strerror(errno));
            status = UCS_ERR_IO_ERROR;
            goto out_free;
        } else if (ret == 0) {
            break;
        }
        length += ret;
    }

    if (length > size) {
        ucs_error("gpumem: %s %s grew while it was read", what, path);
        status = UCS_ERR_IO_ERROR;
        goto out_free;
    }

    buf[length] = '\0';
    *buf_p      = buf;
    *len_p      = length;
    close(fd);
    return UCS_OK;

out_free:
    ucs_free(buf);
out_close:
    close(fd);
    return status;
}
