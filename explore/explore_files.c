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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "explore/explore.h"

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
