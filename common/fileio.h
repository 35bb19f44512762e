/* common/fileio.h: whole-file reads with a size limit, for every loader. */
#ifndef COV_FILEIO_H
#define COV_FILEIO_H

#include <stddef.h>

#include "covenant/status.h"

/* Reads `path` into a malloc'ed, NUL-terminated buffer. Files larger than
 * `max_bytes` are refused (COV_OUT_OF_RANGE) before they are read. */
cov_status common_read_file(const char *path, size_t max_bytes, char **out_data, size_t *out_size);

/* Writes n bytes to `path` (created or truncated); errors name the file. */
cov_status common_write_file(const char *path, const void *data, size_t n);

#endif
