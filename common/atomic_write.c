/* common/atomic_write.c: output files written atomically (common_out).
 *
 * fopen(path, "w") truncates the previous file before a byte of the new one
 * exists, so a full disk, a file size limit or a kill mid-write destroys a
 * valid artifact and leaves a partial one that a later run may trust. Every
 * output goes to a temporary beside the destination instead (same folder,
 * so the same file system and rename(2) is atomic), is checked, fsync'ed and
 * renamed over the destination; the folder is fsync'ed so the rename itself
 * survives a power loss. */
/* realpath() and strndup() with a NULL buffer are X/Open interfaces. */
#define _XOPEN_SOURCE 700
#include "common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_TRIES 1000

static cov_status io_error(const char *path, const char *what, int e) {
  cov_loc loc = {path, 0, 0, NULL};
  if (e) return cov_error(COV_IO_ERROR, &loc, "%s: %s", what, strerror(e));
  return cov_error(COV_IO_ERROR, &loc, "%s", what);
}

/* A device or FIFO is written in place; a link is replaced by what it names
 * (rename would replace the link itself). *dest is malloc'ed. */
static cov_status resolve_destination(const char *path, char **dest, int *in_place) {
  struct stat sb;
  *in_place = 0;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    if (S_ISDIR(sb.st_mode)) return io_error(path, "cannot write: is a directory", 0);
    *in_place = 1;
  }
  char *real = NULL;
  if (!*in_place && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
    real = realpath(path, NULL); /* NULL for a dangling link: written as the link's name */
  }
  *dest = real ? real : strdup(path);
  return *dest ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
}

cov_status common_out_open(const char *path, common_out *out) {
  memset(out, 0, sizeof *out);
  int in_place = 0;
  COV_RETURN_IF_ERROR(resolve_destination(path, &out->path, &in_place));
  if (in_place) {
    out->f = fopen(out->path, "wb");
    if (!out->f) {
      cov_status st = io_error(path, "cannot open for writing", errno);
      free(out->path);
      out->path = NULL;
      return st;
    }
    return NULL;
  }
  size_t n = strlen(out->path) + sizeof COMMON_TMP_MARK + 48;
  out->tmp = malloc(n);
  int fd = -1, e = 0;
  for (int k = 0; out->tmp && fd < 0 && k < TMP_TRIES; k++) {
    snprintf(out->tmp, n, "%s%s%ld.%d", out->path, COMMON_TMP_MARK, (long)getpid(), k);
    fd = open(out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    e = errno;
    if (fd < 0 && e != EEXIST) break; /* another thread's temporary: try the next name */
  }
  if (fd >= 0 && !(out->f = fdopen(fd, "wb"))) {
    e = errno;
    close(fd);
    unlink(out->tmp);
    fd = -1;
  }
  if (fd < 0) {
    cov_status st = out->tmp ? io_error(path, "cannot open for writing", e)
                             : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    free(out->tmp);
    free(out->path);
    memset(out, 0, sizeof *out);
    return st;
  }
  return NULL;
}

void common_out_abort(common_out *o) {
  if (!o) return;
  if (o->f) fclose(o->f);
  if (o->tmp) unlink(o->tmp);
  free(o->tmp);
  free(o->path);
  memset(o, 0, sizeof *o);
}

static void fsync_folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    (void)fsync(fd); /* best effort: some file systems refuse fsync on folders */
    close(fd);
  }
  free(dir);
}

cov_status common_out_commit(common_out *o) {
  cov_status st = NULL;
  int e = 0;
  errno = 0;
  /* an earlier buffered write may have failed: ferror is set and its errno
   * gone (-1: say "write failed" without a reason) */
  if (fflush(o->f) != 0 || ferror(o->f)) e = errno ? errno : -1;
  /* fsync can report a write the kernel could not complete (NFS, quotas);
   * a device or FIFO written in place may refuse it and that is fine */
  if (!e && o->tmp && fsync(fileno(o->f)) != 0) e = errno;
  int closed = fclose(o->f);
  o->f = NULL;
  if (!e && closed != 0) e = errno ? errno : -1;
  if (e) st = io_error(o->path, "write failed", e > 0 ? e : 0);
  if (!st && o->tmp) {
    if (rename(o->tmp, o->path) != 0) st = io_error(o->path, "cannot rename into place", errno);
    else {
      fsync_folder_of(o->path);
      free(o->tmp);
      o->tmp = NULL;
    }
  }
  common_out_abort(o); /* removes the temporary if it is still there */
  return st;
}

cov_status common_write_file(const char *path, const void *data, size_t n) {
  common_out o;
  COV_RETURN_IF_ERROR(common_out_open(path, &o));
  if (n && fwrite(data, 1, n, o.f) != n) {
    cov_status st = io_error(path, "write failed", errno ? errno : EIO);
    common_out_abort(&o);
    return st;
  }
  return common_out_commit(&o);
}

int common_is_temporary(const char *name) { return strstr(name, COMMON_TMP_MARK) != NULL; }
