/* common/grow.h: room for one more element in a growing array. */
#ifndef COV_COMMON_GROW_H
#define COV_COMMON_GROW_H

#include <stddef.h>

#include "covenant/status.h"

/* Makes the array *p of *cap elements of `elem` bytes hold at least `need`:
 * the capacity doubles, from `first` when there is none yet, and the
 * elements added are zero. A capacity past INT_MAX or a byte size past
 * SIZE_MAX fails like a failed allocation, "out of memory <what>" (what:
 * the work that ran out, "building the model's kernels"), leaving *p and
 * *cap as they were. need <= *cap does nothing. */
cov_status common_grow(void **p, int *cap, int need, size_t elem, int first, const char *what);

#endif
