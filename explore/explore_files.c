/* explore/explore_files.c: reading and creating a study's files.
 *
 * Resume trusts a file's existence to mean its content is complete, so every
 * output is written with common_write_file (a temporary beside it, renamed
 * into place): a process killed at any instant leaves the old file or the
 * new one, and at worst a stray temporary, which resume removes
 * (explore_remove_temporaries). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "explore/explore.h"

/* Study files are read without following a symbolic link and only when they
 * are regular files: a shard handed to `explore merge` is input like any
 * other, and a rows/<id>.txt that links to /etc/passwd (or a FIFO that
 * blocks) must not be copied into the merged study. */
cov_status explore_read_file(const char *path, char **out, size_t *size) {
  *out = NULL;
  if (size) *size = 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NULL;
    if (errno == ELOOP)
      return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path),
                       "is a symbolic link; study files must be regular files (links are not followed)");
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot open: %s", strerror(errno));
  }
  struct stat sb;
  cov_status st = NULL;
  if (fstat(fd, &sb) != 0)
    st = cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot open: %s", strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path), "is not a regular file; study files must be");
  else if ((uint64_t)sb.st_size > EXPLORE_MAX_FILE_BYTES)
    st = cov_error(COV_OUT_OF_RANGE, EXPLORE_AT(.file = path), "larger than the limit of %u bytes for a study file",
                   (unsigned)EXPLORE_MAX_FILE_BYTES);
  char *buf = st ? NULL : malloc((size_t)sb.st_size + 1);
  if (!st && !buf) st = cov_error(COV_OUT_OF_MEMORY, EXPLORE_AT(.file = path), "out of memory");
  size_t n = 0;
  (void)fcntl(fd, F_SETFL, 0); /* a regular file: blocking reads */
  while (!st && n < (size_t)sb.st_size) { /* a file that shrinks meanwhile ends early */
    ssize_t r = read(fd, buf + n, (size_t)sb.st_size - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) st = cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "read failed: %s", strerror(errno));
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (st) {
    free(buf);
    return st;
  }
  buf[n] = 0;
  *out = buf;
  if (size) *size = n;
  return NULL;
}

cov_status explore_check_entry(const char *path, bool folder, int *exists) {
  struct stat sb;
  if (exists) *exists = 0;
  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT) return NULL;
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot open: %s", strerror(errno));
  }
  if (S_ISLNK(sb.st_mode))
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path),
                     folder ? "is a symbolic link; a study's folders must be real folders (links are not followed)"
                            : "is a symbolic link; study files must be regular files (links are not followed)");
  if (folder && !S_ISDIR(sb.st_mode)) return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path), "is not a folder");
  if (!folder && !S_ISREG(sb.st_mode))
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path), "is not a regular file; study files must be");
  if (exists) *exists = 1;
  return NULL;
}

cov_status explore_check_folder(const char *path) { return explore_check_entry(path, true, NULL); }

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

/* Removes the temporaries in `folder` (one of a study's) that no run can be
 * writing: those of a design whose lock (locks/<id>) is free, or, with
 * `all`, every one (the caller holds the folder lock that guards them). */
static cov_status remove_in(const char *study_dir, const char *folder, int all) {
  DIR *d = opendir(folder);
  if (!d) return errno == ENOENT ? NULL : cov_error(COV_IO_ERROR, EXPLORE_AT(.file = folder), "cannot read: %s", strerror(errno));
  cov_status st = NULL;
  struct dirent *e;
  char path[4400];
  while (!st && (e = readdir(d))) {
    if (!common_is_temporary(e->d_name)) continue;
    int lock_fd = -1;
    if (!all) { /* "<id>.<ext>" COMMON_TMP_MARK "...": the id ends at the first '.' */
      snprintf(path, sizeof path, "%s/locks/%.*s", study_dir, (int)strcspn(e->d_name, "."), e->d_name);
      lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) { /* in use by a running design */
        if (lock_fd >= 0) close(lock_fd);
        continue;
      }
    }
    snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
    if (unlink(path) != 0 && errno != ENOENT)
      st = cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot remove a stale temporary: %s", strerror(errno));
    if (lock_fd >= 0) close(lock_fd);
  }
  closedir(d);
  return st;
}

cov_status explore_remove_temporaries(const char *dir) {
  char sub[4200];
  COV_RETURN_IF_ERROR(remove_in(dir, dir, 1));
  snprintf(sub, sizeof sub, "%s/rows", dir);
  COV_RETURN_IF_ERROR(remove_in(dir, sub, 0));
  snprintf(sub, sizeof sub, "%s/designs", dir);
  return remove_in(dir, sub, 0);
}
