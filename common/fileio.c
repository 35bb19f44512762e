/* common/fileio.c: whole-file reads with a size limit. */
#include "common/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

cov_status common_read_file(const char *path, size_t max_bytes, char **out_data, size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  cov_loc loc = {.file = path};
  struct stat sb;
  if (stat(path, &sb) != 0)
    return cov_error(errno == ENOENT ? COV_NOT_FOUND : COV_IO_ERROR, &loc, "cannot open: %s",
                     strerror(errno));
  if (S_ISDIR(sb.st_mode)) return cov_error(COV_IO_ERROR, &loc, "is a directory, expected a file");
  FILE *f = fopen(path, "rb");
  if (!f) return cov_error(COV_IO_ERROR, &loc, "cannot open: %s", strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) {
    fclose(f);
    return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory reading file");
  }
  /* Read by chunks rather than trusting st_size: pipes and /proc lie. */
  for (;;) {
    if (n == cap) {
      if (cap > max_bytes) break;
      size_t ncap = cap * 2;
      char *nb = realloc(buf, ncap + 1);
      if (!nb) {
        free(buf);
        fclose(f);
        return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory reading file");
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return cov_error(COV_IO_ERROR, &loc, "read error");
  }
  if (n > max_bytes) {
    free(buf);
    return cov_error(COV_OUT_OF_RANGE, &loc, "file is larger than the limit of %zu bytes",
                     max_bytes);
  }
  buf[n] = '\0';
  *out_data = buf;
  *out_size = n;
  return NULL;
}
