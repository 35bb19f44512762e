/* backends/gpu/gpu_mruns.c: element runs of a compiled model's values
 * (gpu_mcapture.h) as strided copies (gpu_runs_copies, gpu_mplan.h): the
 * layout work between groups, and the operands of fused attention. */
#include <stdint.h>

#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"

/* The runs of one source (in destination order) as strided copies
 * (gpu_ew COPY: runs of equal length at constant strides, blocks of those
 * at constant strides, and blocks of blocks): a Concat, Split or Slice at
 * batch N is one copy per source, a channel shuffle one per branch, an
 * attention head split or its transpose one. Returns how many copies
 * (out, at most `max`), -1 when more would be needed. */
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
static int64_t even_length(const gpu_cap_run *runs, int n_runs, int src) {
  int64_t g = 0, total = 0, m = 0;
  for (int q = 0; q < n_runs; q++)
    if (runs[q].src == src) g = gcd64(runs[q].n, g), total += runs[q].n, m++;
  return g <= 0 || total / g > 2 * m || total / g > INT32_MAX ? 0 : g;
}

/* One strided block while the levels merge: `run` contiguous elements
 * repeated rep[l] times at strides ss[l] / ds[l], as gpu_ew COPY holds it. */
typedef struct blk {
  int64_t run, s0, d0, rep[GPU_COPY_LEVELS], ss[GPU_COPY_LEVELS], ds[GPU_COPY_LEVELS];
} blk;

/* The merge of level l: consecutive blocks equal in their lower levels, at
 * a constant (source, destination) step, become one block repeated. The
 * levels run as a cascade over the run stream (each keeps its last block
 * open while the next can join it), so the work is linear in the runs and
 * the memory a few blocks, whatever their number: a transpose at batch 32
 * is millions of one-element runs that end as one copy. */
typedef struct cascade {
  blk open[GPU_COPY_LEVELS];
  int has[GPU_COPY_LEVELS];
  gpu_ew *out;
  int n, max; /* copies emitted; more than max: give up */
} cascade;

static int joins(const blk *t, const blk *a, int l) {
  if (t->run != a->run) return 0;
  for (int k = 0; k < l; k++)
    if (t->rep[k] != a->rep[k] || (a->rep[k] != 1 && (t->ss[k] != a->ss[k] || t->ds[k] != a->ds[k]))) return 0;
  int64_t ls = t->s0 + (t->rep[l] - 1) * t->ss[l], ld = t->d0 + (t->rep[l] - 1) * t->ds[l];
  if (t->rep[l] == 1) return a->d0 > ld;
  return a->s0 - ls == t->ss[l] && a->d0 - ld == t->ds[l];
}

static void emit(cascade *c, const blk *b) {
  if (c->n < c->max) {
    gpu_ew e = {.kind = GPU_EW_COPY, .out_dtype = COV_F32, .run = b->run, .s0 = b->s0, .d0 = b->d0, .n = b->run};
    for (int l = 0; l < GPU_COPY_LEVELS; l++) {
      e.rep[l] = b->rep[l], e.ss[l] = b->ss[l], e.ds[l] = b->ds[l];
      e.n *= b->rep[l];
    }
    c->out[c->n] = e;
  }
  c->n++;
}

/* Block a arrives at level l: it joins the open block or closes it (which
 * passes it up a level) and opens in its place. */
static void push(cascade *c, int l, const blk *a) {
  if (l == GPU_COPY_LEVELS) {
    emit(c, a);
    return;
  }
  blk *t = &c->open[l];
  if (c->has[l] && joins(t, a, l)) {
    int64_t ls = t->s0 + (t->rep[l] - 1) * t->ss[l], ld = t->d0 + (t->rep[l] - 1) * t->ds[l];
    if (t->rep[l] == 1) t->ss[l] = a->s0 - ls, t->ds[l] = a->d0 - ld;
    t->rep[l]++;
    return;
  }
  if (c->has[l]) push(c, l + 1, t);
  c->open[l] = *a, c->has[l] = 1;
}

int gpu_runs_copies(const gpu_cap_run *runs, int n_runs, int src, gpu_ew *out, int max) {
  int64_t g = even_length(runs, n_runs, src);
  cascade c = {.out = out, .max = max};
  for (int q = 0; q < n_runs && c.n <= max; q++) {
    if (runs[q].src != src) continue;
    int64_t len = g ? g : runs[q].n;
    for (int64_t o = 0; o < runs[q].n && c.n <= max; o += len) {
      blk b = {.run = len, .s0 = runs[q].s0 + o, .d0 = runs[q].d0 + o};
      for (int l = 0; l < GPU_COPY_LEVELS; l++) b.rep[l] = 1;
      push(&c, 0, &b);
    }
  }
  for (int l = 0; l < GPU_COPY_LEVELS && c.n <= max; l++)
    if (c.has[l]) push(&c, l + 1, &c.open[l]);
  return c.n > max ? -1 : c.n;
}
