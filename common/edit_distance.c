/* common/edit_distance.c: one row of the dynamic-programming table. */
#include "common/edit_distance.h"

#include <string.h>

size_t common_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > COV_EDIT_MAX_NAME || m > COV_EDIT_MAX_NAME) return COV_EDIT_FAR;
  size_t row[COV_EDIT_MAX_NAME + 1];
  for (size_t j = 0; j <= m; j++) row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m];
}

int common_is_near_miss(size_t len, size_t d) { return d > 0 && d < len && (d <= 2 || 3 * d <= len); }

const char *common_nearest(const char *name, const char *const *cands, size_t n) {
  const char *best = NULL;
  size_t bd = COV_EDIT_FAR;
  for (size_t i = 0; i < n; i++) {
    size_t d = cands[i] ? common_edit_distance(name, cands[i]) : COV_EDIT_FAR;
    if (d < bd) bd = d, best = cands[i];
  }
  return best && common_is_near_miss(strlen(name), bd) ? best : NULL;
}
