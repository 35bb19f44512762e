/* common/fileio.h: whole-file reads with a size limit, for every loader, and
 * atomic writes of every output file. */
#ifndef COV_FILEIO_H
#define COV_FILEIO_H

#include <stddef.h>

#include "covenant/status.h"

/* Reads `path` into a malloc'ed, NUL-terminated buffer. Files larger than
 * `max_bytes` are refused (COV_OUT_OF_RANGE) before they are read. */
cov_status common_read_file(const char *path, size_t max_bytes, char **out_data, size_t *out_size);

/* Output files are written atomically: into a temporary file in the same
 * folder, every write and the close checked, fsync'ed, then renamed over
 * `path`. A reader (or a later run) sees the previous file or the whole new
 * one, never a truncated one; on any failure (full disk, file size limit, a
 * signal) the previous file is left as it was and the temporary is removed.
 * Temporaries are named "<path>" COMMON_TMP_MARK "<pid>.<n>" so that a run
 * killed mid-write leaves a recognisable name (common_is_temporary).
 * A path that names a device or a FIFO (/dev/null, /dev/stdout) is written
 * in place: there is nothing to rename over. A symbolic link is followed:
 * the file it names is replaced. */
#define COMMON_TMP_MARK ".covtmp."

#include <stdio.h>

typedef struct common_out {
  FILE *f;    /* write here (fprintf, fwrite) */
  char *path; /* the destination (malloc'ed) */
  char *tmp;  /* the temporary (malloc'ed); NULL when written in place */
} common_out;

/* Creates the temporary for `path` and opens it for writing (binary). */
cov_status common_out_open(const char *path, common_out *out);
/* Flushes, checks, syncs, closes and renames into place; on failure removes
 * the temporary and leaves `path` untouched. Always releases `o`. Errors
 * name the destination and say why (strerror). */
cov_status common_out_commit(common_out *o);
/* Closes and removes the temporary; `path` is untouched. NULL-safe. */
void common_out_abort(common_out *o);

/* Writes n bytes to `path` atomically (common_out); errors name the file. */
cov_status common_write_file(const char *path, const void *data, size_t n);

/* 1 when a file name (no folder) is a temporary left by common_out. */
int common_is_temporary(const char *name);

#endif
