/* tests/arch/test_suite_readers.c SRCDIR: the mapper, the GPU lowering and
 * explore read the layer suite through one reader (mapper/map_suite.h) and
 * must see the same layers: for every layer of the shipped suite and of
 * tests/arch/suite_dilated.json, the MACs and output elements each derives
 * by its own rules (the mapper from the conv2d/maxpool/matmul codelets'
 * shape rules, the GPU from its implicit-GEMM view, explore from its layer
 * counts) agree; for the dilated file they also equal sizes worked out by
 * hand (a reader that ignored dilation would give 18x18 and 9x9 outputs
 * for the first two layers instead of 16x16 and 8x8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "covenant/arena.h"
#include "covenant/mapper.h"
#include "explore/explore.h"
#include "mapper/map_internal.h"
#include "tests/check.h"
#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/gpu/gpu_layer.h"
#endif

typedef struct sizes {
  double macs, out; /* out: the main operation's output */
  double written;   /* what the layer writes, after its post-ops (a fused 2x2 pool quarters it) */
} sizes;

static int mapper_sizes(const char *suite, const char *name, sizes *z) {
  cov_layer *l = NULL;
  cov_status st = cov_layer_from_suite(suite, name, 1, &l);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    return 0;
  }
  int rank;
  int64_t shape[COV_MAX_RANK];
  st = map_call_output(l, 0, &rank, shape);
  CHECK(!st);
  cov_status_free(st);
  double out = 1, red = 0;
  for (int d = 0; d < rank; d++) out *= (double)shape[d];
  const map_call *c = &l->calls[0];
  const char *codelet = cov_codelet_name(c->c);
  if (!strcmp(codelet, "conv2d")) /* weights [K, C/g, R, S] */
    red = (double)(c->in[1].shape[1] * c->in[1].shape[2] * c->in[1].shape[3]);
  else if (!strcmp(codelet, "maxpool"))
    red = 0;
  else /* [.., M, K] x [.., K, N] */
    red = (double)c->in[0].shape[c->in[0].rank - 1];
  z->macs = out * red, z->out = out;
  st = map_call_output(l, l->n_calls - 1, &rank, shape);
  CHECK(!st);
  cov_status_free(st);
  z->written = 1;
  for (int d = 0; d < rank; d++) z->written *= (double)shape[d];
  cov_layer_free(l);
  return 1;
}

static int explore_sizes(const char *suite, const char *name, sizes *z) {
  cov_arena *a = cov_arena_create();
  explore_layers ls = {0};
  cov_status st = explore_layers_add_suite(a, suite, name, &ls);
  int ok = !st && ls.n == 1;
  if (st) cov_status_print(stderr, st, 1), cov_status_free(st);
  if (ok) {
    z->macs = ls.items[0].macs;
    z->written = ls.items[0].out_elems; /* after a fused 2x2 pool */
  }
  cov_arena_destroy(a);
  return ok;
}

#ifdef COV_HAVE_GPU_BACKENDS
static int gpu_sizes(const char *suite, const char *name, sizes *z) {
  gpu_layer gl;
  gpu_plan p;
  cov_status st = gpu_layer_from_spec(suite, name, COV_F16, &gl);
  if (!st) st = gpu_problem_check(&gl.prob, &p);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    return 0;
  }
  const gpu_problem *q = &gl.prob;
  if (q->kind == GPU_OP_MAXPOOL) {
    z->macs = 0;
    z->out = (double)(q->cn * q->cc * p.oh * p.ow);
  } else if (q->kind == GPU_OP_CONV2D) {
    z->macs = (double)p.G * (double)p.M * (double)p.N * (double)p.K;
    z->out = (double)(q->cn * q->ck * p.oh * p.ow);
  } else {
    z->macs = (double)p.G * (double)p.M * (double)p.N * (double)p.K;
    z->out = (double)p.G * (double)p.M * (double)p.N;
  }
  return 1;
}
#endif

/* Every layer of `suite` through the three readers; want (may be NULL):
 * {macs, out} per layer in file order, from the hand computation. */
static void compare(const char *suite, const sizes *want, int n_want) {
  char **names = NULL;
  int n = 0;
  cov_status st = cov_suite_layer_names(suite, &names, &n);
  CHECK(!st && n > 0);
  cov_status_free(st);
  if (want) CHECK(n == n_want);
  for (int i = 0; i < n; i++) {
    sizes m = {0}, e = {0};
    int ok = mapper_sizes(suite, names[i], &m) && explore_sizes(suite, names[i], &e);
    CHECK(ok);
    if (!ok) continue;
    printf("%-24s mapper %.0f MACs %.0f out %.0f written | explore %.0f MACs %.0f written", names[i], m.macs,
           m.out, m.written, e.macs, e.written);
    CHECK(m.macs == e.macs);
    CHECK(m.written == e.written);
#ifdef COV_HAVE_GPU_BACKENDS
    sizes g = {0};
    if (gpu_sizes(suite, names[i], &g)) {
      printf(" | gpu %.0f MACs %.0f out", g.macs, g.out);
      CHECK(g.macs == m.macs);
      CHECK(g.out == m.out);
    } else {
      CHECK(!"the GPU reader refused a suite layer");
    }
#endif
    printf("\n");
    if (want && i < n_want) {
      CHECK(m.macs == want[i].macs);
      CHECK(m.out == want[i].out);
      CHECK(m.written == want[i].written);
    }
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_suite_readers SRCDIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/bench/suite/layers.json", argv[1]);
  compare(path, NULL, 0);
  /* by hand: P = (H + 2 pad - dilation (R - 1) - 1) / stride + 1 */
  const sizes want[] = {
      {1.0 * 8 * 16 * 16 * 8 * 9, 1.0 * 8 * 16 * 16, 1.0 * 8 * 16 * 16}, /* dil2_3x3: (16+4-4-1)/1+1 = 16 */
      {2.0 * 8 * 8 * 8 * 4 * 9, 2.0 * 8 * 8 * 8, 2.0 * 8 * 8 * 8}, /* dil2_s2: (17+2-4-1)/2+1 = 8 */
      {1.0 * 8 * 10 * 10 * 2 * 9, 1.0 * 8 * 10 * 10, 1.0 * 8 * 10 * 10}, /* grouped: C/g = 2 */
      {0, 1.0 * 4 * 4 * 4, 1.0 * 4 * 4 * 4}, /* pool: (9-3)/2+1 = 4 */
      {3.0 * 5 * 7 * 11, 3.0 * 5 * 7, 3.0 * 5 * 7}, /* bmm */
  };
  snprintf(path, sizeof path, "%s/tests/arch/suite_dilated.json", argv[1]);
  compare(path, want, 5);
  return check_summary();
}
