/* common/grow.c: growing arrays with checked sizes (see grow.h). */
#include "common/grow.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"

cov_status common_grow(void **p, int *cap, int need, size_t elem, int first, const char *what) {
  if (need <= *cap) return NULL;
  int old = *cap > 0 ? *cap : 0, nc = old ? old : first > 0 ? first : 1;
  while (nc < need && nc <= INT_MAX / 2) nc *= 2;
  if (nc < need) nc = need; /* past INT_MAX / 2: exactly what is asked */
  if (elem && (size_t)nc > SIZE_MAX / elem)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory %s: %d elements of %zu bytes", what, need, elem);
  void *q = realloc(*p, (size_t)nc * elem);
  if (!q) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory %s", what);
  memset((char *)q + (size_t)old * elem, 0, (size_t)(nc - old) * elem);
  *p = q, *cap = nc;
  return NULL;
}
