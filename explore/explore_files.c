/* explore/explore_files.c: crash-safe files for studies.
 *
 * Resume trusts a file's existence to mean its content is complete, so every
 * output is written to a temporary name, flushed to disk and renamed over
 * the final name: a process killed at any instant leaves the old file or the
 * new one, and at worst a stray temporary (ignored, overwritten later). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "explore/explore.h"

static cov_status fsync_dir_of(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = dir), "cannot open: %s", strerror(errno));
  fsync(fd); /* best effort: some file systems refuse fsync on folders */
  close(fd);
  return NULL;
}

cov_status explore_write_atomic(const char *path, const char *data, size_t size) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = tmp), "cannot create: %s", strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = tmp), "write failed: %s", strerror(e));
    }
    done += (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int e = errno;
    unlink(tmp);
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = tmp), "write failed: %s", strerror(e));
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot rename into place: %s",
                     strerror(e));
  }
  return fsync_dir_of(path);
}

cov_status explore_read_file(const char *path, char **out, size_t *size) {
  *out = NULL;
  if (size) *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return NULL;
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot open: %s", strerror(errno));
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory reading %s", path);
  if (bad) {
    free(buf);
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "read failed");
  }
  buf[n] = 0;
  *out = buf;
  if (size) *size = n;
  return NULL;
}

cov_status explore_mkdir_p(const char *path) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return cov_error(COV_OUT_OF_RANGE, COV_AT_FILE(path), "path too long: %s", path);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char c = *p;
      *p = 0;
      if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = buf), "cannot create folder: %s",
                         strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "not a folder");
  return NULL;
}
