/* backends/gpu/gpu_mruns.c: element runs of a compiled model's values
 * (gpu_mcapture.h) as strided copies (gpu_runs_copies, gpu_mplan.h): the
 * layout work between groups, and the operands of fused attention. */
#include <stdint.h>
#include <stdlib.h>

#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"

/* The runs of one source (in destination order) as strided copies
 * (gpu_ew COPY: runs of equal length at constant strides, blocks of those
 * at constant strides, and blocks of blocks): a Concat, Split or Slice at
 * batch N is one copy per source, a channel shuffle one per branch, an
 * attention head split or its transpose one. Returns how many copies
 * (out, at most `max`), -1 when more would be needed or out of memory. */
static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

/* The length the runs of src are cut to before they are merged: the
 * capture joins consecutive elements whose sources continue, so where one
 * image's last pixel and the next image's first channel happen to be
 * adjacent in the source too, one run per image is longer than the rest
 * and the pattern no longer repeats. Cut at the runs' common divisor,
 * where that at most doubles their number (else as they are: 0). */
static int64_t even_length(const gpu_cap_run *runs, int n_runs, int src, int64_t *pieces) {
  int64_t g = 0, total = 0, m = 0;
  for (int q = 0; q < n_runs; q++)
    if (runs[q].src == src) g = gcd64(runs[q].n, g), total += runs[q].n, m++;
  if (g <= 0 || total / g > 2 * m || total / g > INT32_MAX) {
    *pieces = m;
    return 0;
  }
  *pieces = total / g;
  return g;
}

int gpu_runs_copies(const gpu_cap_run *runs, int n_runs, int src, gpu_ew *out, int max) {
  int64_t pieces;
  int64_t g = even_length(runs, n_runs, src, &pieces);
  gpu_ew *b = malloc((size_t)(pieces ? pieces : 1) * sizeof *b);
  if (!b) return -1;
  int n = 0;
  for (int q = 0; q < n_runs; q++) {
    if (runs[q].src != src) continue;
    int64_t len = g ? g : runs[q].n;
    for (int64_t o = 0; o < runs[q].n; o += len) {
      gpu_ew e = {.kind = GPU_EW_COPY, .out_dtype = COV_F32, .run = len, .s0 = runs[q].s0 + o, .d0 = runs[q].d0 + o};
      for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
      b[n++] = e;
    }
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
