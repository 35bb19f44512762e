/* backends/gpu/gpu_mruns.c: element runs of a compiled model's values
 * (gpu_mcapture.h) as strided copies (gpu_runs_copies, gpu_mplan.h): the
 * layout work between groups, and the operands of fused attention. */
#include <stdlib.h>

#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"

/* The runs of one source (in destination order) as strided copies
 * (gpu_ew COPY: runs of equal length at constant strides, blocks of those
 * at constant strides, and blocks of blocks): a Concat, Split or Slice at
 * batch N is one copy per source, a channel shuffle one per branch, an
 * attention head split or its transpose one. Returns how many copies
 * (out, at most `max`), -1 when more would be needed or out of memory. */
int gpu_runs_copies(const gpu_cap_run *runs, int n_runs, int src, gpu_ew *out, int max) {
  gpu_ew *b = malloc((size_t)n_runs * sizeof *b);
  if (!b) return -1;
  int n = 0;
  for (int q = 0; q < n_runs; q++) {
    if (runs[q].src != src) continue;
    gpu_ew e = {.kind = GPU_EW_COPY, .out_dtype = COV_F32, .run = runs[q].n, .s0 = runs[q].s0, .d0 = runs[q].d0};
    for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
    b[n++] = e;
  }
  /* level l: consecutive blocks equal in their lower levels, at a constant
   * (source, destination) step, become one block repeated */
  for (int l = 0; l < GPU_COPY_LEVELS; l++) {
    int m = 0;
    for (int q = 0; q < n; q++) {
      const gpu_ew *a = &b[q];
      gpu_ew *t = m ? &b[m - 1] : NULL;
      int same = t && t->run == a->run;
      for (int k = 0; k < l && same; k++)
        same = t->rep[k] == a->rep[k] && (a->rep[k] == 1 || (t->ss[k] == a->ss[k] && t->ds[k] == a->ds[k]));
      if (same) {
        int64_t ls = t->s0 + (t->rep[l] - 1) * t->ss[l], ld = t->d0 + (t->rep[l] - 1) * t->ds[l];
        if (t->rep[l] == 1 && a->d0 > ld) {
          t->ss[l] = a->s0 - ls, t->ds[l] = a->d0 - ld, t->rep[l]++;
          continue;
        }
        if (t->rep[l] > 1 && a->s0 - ls == t->ss[l] && a->d0 - ld == t->ds[l]) {
          t->rep[l]++;
          continue;
        }
      }
      b[m++] = *a;
    }
    n = m;
  }
  if (n > max) {
    free(b);
    return -1;
  }
  for (int q = 0; q < n; q++) {
    out[q] = b[q];
    out[q].n = out[q].run;
    for (int l = 0; l < GPU_COPY_LEVELS; l++) out[q].n *= out[q].rep[l];
  }
  free(b);
  return n;
}
