/* explore/explore_pareto.c: the Pareto front of (x, y), both minimised. */
#include <math.h>

#include "explore/explore.h"

/* Quadratic, which is fine for the few thousand designs a study has, and
 * obviously right: i is on the front unless some j is no worse in both and
 * better in one. Ties (equal points) are all on the front. */
void explore_pareto(const double *x, const double *y, int n, int *flags) {
  for (int i = 0; i < n; i++) {
    flags[i] = !isnan(x[i]) && !isnan(y[i]);
    for (int j = 0; j < n && flags[i]; j++) {
      if (j == i || isnan(x[j]) || isnan(y[j])) continue;
      if (x[j] <= x[i] && y[j] <= y[i] && (x[j] < x[i] || y[j] < y[i])) flags[i] = 0;
    }
  }
}
