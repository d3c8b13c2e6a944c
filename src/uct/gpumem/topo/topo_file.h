/**
 * gpumem topology: the files it reads (an hwloc XML export, a facts file),
 * opened so that what is not a regular file is refused, saying what it is,
 * rather than blocking in open() on a FIFO or reading a device.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_TOPO_FILE_H_
#define GPUMEM_TOPO_FILE_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>

BEGIN_C_DECLS

/**
 * Opens @a path, the @a what of the caller ("topology XML"), for reading:
 * a descriptor of a regular file, or UCS_ERR_IO_ERROR (cannot open) or
 * UCS_ERR_INVALID_PARAM (not a regular file), logged naming the path.
 */
ucs_status_t gpumem_topo_file_open(const char *path, const char *what,
                                   int *fd_p);

/**
 * The whole of the regular file @a path, NUL-terminated, in @a buf_p
 * (ucs_free it); UCS_ERR_INVALID_PARAM, logged, if it is not a regular file
 * or holds more than @a max bytes.
 */
ucs_status_t gpumem_topo_file_read(const char *path, const char *what,
                                   size_t max, char **buf_p, size_t *len_p);

END_C_DECLS

#endif
