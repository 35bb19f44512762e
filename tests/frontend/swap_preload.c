/* tests/frontend/swap_preload.c: an LD_PRELOAD shim for test_file_safety.py
 * that makes the external-data race (a file swapped between check and read) deterministic.
 *
 * The first time the process opens a path whose last component is the last
 * component of $COV_SWAP_FILE (open or openat, any flags), the shim first
 * replaces $COV_SWAP_FILE by a symbolic link to $COV_SWAP_LINK_TO, then
 * performs the open. A resolver that checks a path and then opens it again
 * reads the link's target; one that opens each component without following
 * links refuses it. Test-only code: it keeps one flag of its own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int swapped;

static const char *base(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static void maybe_swap(const char *path) {
  const char *file = getenv("COV_SWAP_FILE"), *to = getenv("COV_SWAP_LINK_TO");
  if (swapped || !file || !to || !path || strcmp(base(path), base(file)) != 0) return;
  swapped = 1;
  unlink(file);
  if (symlink(to, file) != 0) _exit(99);
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...);
int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  maybe_swap(path);
  int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  return real(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  maybe_swap(path);
  int (*real)(int, const char *, int, ...) =
      (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
  return real(dirfd, path, flags, mode);
}
