/* common/fileio.c: whole-file reads with a size limit. Atomic writes are in
 * common/atomic_write.c. */
#include "common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

cov_status common_read_file(const char *path, size_t max_bytes, char **out_data, size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  cov_loc loc = {.file = path};
  /* One open, then fstat on what was opened: only a regular file is read
   * (a FIFO, a terminal or /dev/zero would block or never end). O_NONBLOCK
   * keeps the open itself from waiting for a FIFO's writer. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return cov_error(errno == ENOENT ? COV_NOT_FOUND : COV_IO_ERROR, &loc, "cannot open: %s",
                     strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return cov_error(COV_IO_ERROR, &loc, "cannot open: %s", strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return cov_error(COV_IO_ERROR, &loc, "%s, expected a regular file",
                     S_ISDIR(sb.st_mode)   ? "is a directory"
                     : S_ISFIFO(sb.st_mode) ? "is a FIFO"
                     : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "is a device"
                                                                  : "is not a regular file");
  }
  if ((uint64_t)sb.st_size > (uint64_t)max_bytes) {
    close(fd);
    return cov_error(COV_OUT_OF_RANGE, &loc, "file is larger than the limit of %zu bytes",
                     max_bytes);
  }
  (void)fcntl(fd, F_SETFL, 0); /* blocking reads from here on (a regular file) */
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return cov_error(COV_IO_ERROR, &loc, "cannot open: %s", strerror(e));
  }
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

