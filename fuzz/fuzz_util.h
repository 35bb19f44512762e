/* fuzz/fuzz_util.h: what the libFuzzer harnesses share. */
#ifndef COV_FUZZ_UTIL_H
#define COV_FUZZ_UTIL_H

#include "covenant/status.h"

/* A rejected input is not a finding, but its diagnostic is part of what is
 * fuzzed: it must format (file, place, message) without tripping a sanitizer.
 * Returns 1 (and frees st) when the input was rejected. */
static inline int fuzz_rejected(cov_status st) {
  if (!st) return 0;
  char buf[256];
  cov_status_format(st, buf, sizeof buf);
  cov_status_free(st);
  return 1;
}

#endif
