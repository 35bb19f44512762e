/* tests/gpu/test_gpu_lnorm_jit.c: the layer normalisation kernel
 * (GPU_EW_LNORM, gpu_lower_ln.c) lowered with a host table of target
 * operations, verified, optimised at O2 and run on this CPU through
 * LLVM's JIT as real workgroups (gpu_jit_run_groups: a workgroup's 256
 * threads as concurrent threads meeting at each lane exchange and
 * barrier, over shared memory of their own). Shapes: pixels per image 1 (rows of contiguous
 * channels), 7, 49, 196, 3136, channels 4 .. 320 (and lanes forced past
 * the plan's choice), batch 1 .. 3, stored NCHW f32 / f16 or NHWC f16.
 * Each result is compared with the normalisation in double (1e-5
 * relative; f16: 1e-3) and, bit for bit, with gpu_ew_emulate, the C
 * meaning the CPU emulation of a compiled model uses: a kernel summing in
 * another order (a butterfly step dropped, a warp's sum missed) fails.
 * With -t TARGET each kernel is also built as that target's code object
 * (NVPTX: the PTX holds its butterfly shuffles).
 * Usage: test_gpu_lnorm_jit [-t TARGET]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_lnorm.h"
#include "gpu_jit_harness.h"

static cov_status lower(const void *e, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower_ew(e, ops, mod, fn);
}

enum { T = GPU_EW_THREADS };

/* ---- cases ------------------------------------------------------------------- */

typedef struct ln_case {
  int64_t n, c, w; /* x [n][c][w] */
  cov_dtype out;
  int nhwc;
  int lanes; /* 0: the plan's (gpu_ln_lanes) */
  int64_t rq, r0, r1; /* rows (w == 1) stored permuted: row o at (o / rq) * r1 + (o % rq) * r0 */
  int dual;           /* f32 results stored as f16 too (argument 4) */
} ln_case;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float next(void) {
  return (float)gpu_jit_unit(&rng) * 8.0f - 4.0f;
}

/* The normalisation in double of x [n][c][w] over c, in y's layout. */
static void reference(const ln_case *k, float eps, const float *x, const float *sc, const float *bi, float *want) {
  for (int64_t o = 0; o < k->n; o++)
    for (int64_t p = 0; p < k->w; p++) {
      const float *r = x + o * k->c * k->w + p;
      double m = 0, v = 0;
      for (int64_t c = 0; c < k->c; c++) m += r[c * k->w];
      m /= (double)k->c;
      for (int64_t c = 0; c < k->c; c++) v += (r[c * k->w] - m) * (r[c * k->w] - m);
      v /= (double)k->c;
      for (int64_t c = 0; c < k->c; c++) {
        float y = (float)((r[c * k->w] - m) / sqrt(v + eps) * sc[c] + bi[c]);
        int64_t row = k->rq ? o / k->rq * k->r1 + o % k->rq * k->r0 : o;
        want[k->nhwc ? (o * k->w + p) * k->c + c : (row * k->c + c) * k->w + p] = k->out == COV_F16 ? gpu_jit_h16(y) : y;
      }
    }
}

static int check_case(const ln_case *k, const gpu_jit_targets *tg) {
  int64_t num = k->n * k->c * k->w;
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_LNORM, e.out_dtype = k->out, e.also = k->nhwc, e.N = k->n, e.C = k->c, e.W = k->w;
  e.rq = k->rq, e.r0 = k->r0, e.r1 = k->r1, e.dual = k->dual;
  e.D = k->lanes ? k->lanes : gpu_ln_lanes(k->c, k->w), e.post0 = 1e-6f, e.n = gpu_ln_items(&e);
  gpu_ln_map m = gpu_ln_map_of(&e);
  float *x = malloc((size_t)num * 4), *want = malloc((size_t)num * 4), *got = malloc((size_t)num * 4);
  float *emu = malloc((size_t)num * 4), *sc = malloc((size_t)k->c * 4), *bi = malloc((size_t)k->c * 4);
  uint16_t *y16 = malloc((size_t)num * 2), *d16 = malloc((size_t)num * 2 + 2);
  char what[160];
  snprintf(what, sizeof what, "LayerNorm %lldx%lldx%lld -> %s%s, %d lanes (%d a warp, %d warps), %lld workgroups",
           (long long)k->n, (long long)k->c, (long long)k->w, k->nhwc ? "NHWC " : "NCHW ", cov_dtype_name(k->out),
           m.lanes, m.warp_lanes, m.groups, (long long)(e.n / T));
  int bad = !x || !want || !got || !emu || !sc || !bi || !y16 || !d16 || !m.lanes;
  if (bad) fprintf(stderr, "FAIL %s: no memory or no split\n", what);
  for (int64_t i = 0; i < num && !bad; i++) x[i] = next() + 3.0f; /* a mean far from 0 */
  for (int64_t c = 0; c < k->c && !bad; c++) sc[c] = next(), bi[c] = next();
  if (!bad) {
    reference(k, e.post0, x, sc, bi, want);
    memset(got, 0xff, (size_t)num * 4), memset(y16, 0xff, (size_t)num * 2), memset(d16, 0xff, (size_t)num * 2);
    void *a[5] = {x, sc, k->out == COV_F16 ? (void *)y16 : (void *)got, bi, d16};
    bad = gpu_jit_run_groups(what, lower, &e, e.n / T, a, k->dual ? 5 : 4);
  }
  for (int64_t i = 0; i < num && !bad && k->out == COV_F16; i++) got[i] = cov_f16_to_f32(y16[i]);
  /* f16 results: one rounding of a value within 1e-5 of the reference may
   * land on the neighbouring half */
  float tol = k->out == COV_F16 ? 1e-3f : 1e-5f;
  for (int64_t i = 0; i < num && !bad; i++)
    if (!(fabsf(got[i] - want[i]) <= tol * fmaxf(1.0f, fabsf(want[i]))))
      fprintf(stderr, "FAIL %s: element %lld is %.9g, %.9g expected\n", what, (long long)i, got[i], want[i]), bad = 1;
  if (!bad) {
    gpu_ew_emulate(&e, x, sc, emu, bi, NULL);
    for (int64_t i = 0; i < num && k->out == COV_F16; i++) emu[i] = gpu_jit_h16(emu[i]);
  }
  for (int64_t i = 0; i < num && !bad && k->dual; i++) /* the f16 second store: the f32 result rounded once */
    if (d16[i] != cov_f32_to_f16(got[i]))
      fprintf(stderr, "FAIL %s: f16 element %lld is %.9g, not %.9g rounded\n", what, (long long)i,
              cov_f16_to_f32(d16[i]), got[i]), bad = 1;
  for (int64_t i = 0; i < num && !bad; i++)
    if (memcmp(&got[i], &emu[i], 4))
      fprintf(stderr, "FAIL %s: element %lld is %.9g, the emulation's %.9g\n", what, (long long)i, got[i], emu[i]),
          bad = 1;
  for (int j = 0; j < tg->n && !bad; j++)
    bad = gpu_jit_build(what, &e, &tg->t[j], m.warp_lanes > 1 ? "shfl.sync.bfly" : m.groups > 1 ? "bar.sync" : "");
  if (!bad) printf("ok: %s\n", what);
  free(x), free(want), free(got), free(emu), free(sc), free(bi), free(y16), free(d16);
  return bad;
}

static const ln_case k_cases[] = {
    {1, 40, 1, COV_F32, 0, 0, 0, 0, 0, 0},      /* one pixel: a row of contiguous channels, a warp */
    {3, 320, 1, COV_F32, 0, 0, 0, 0, 0, 0},     /* rows of 320: two warps a row */
    {5, 192, 1, COV_F16, 0, 0, 0, 0, 0, 0},     /* a transformer's rows, its f16 operand */
    /* [B = 3][S = 13] rows stored seq-first ([S][B]: row o at (o % 13) * 3
     * + o / 13), a seq-first encoder's operand */
    {39, 96, 1, COV_F16, 0, 0, 13, 3, 1, 0},
    {7, 128, 1, COV_F32, 0, 0, 0, 0, 0, 1}, /* a post-LN transformer's rows: f32 (the residual) and f16 */
    {1, 320, 49, COV_F32, 0, 0, 0, 0, 0, 0},    /* ConvNeXt stage 3 at batch 1 */
    {2, 320, 49, COV_F16, 1, 0, 0, 0, 0, 0},    /* ... batch 2, NHWC f16 for the next convolution */
    {1, 160, 196, COV_F32, 0, 0, 0, 0, 0, 0},   /* stage 2 */
    {1, 160, 196, COV_F16, 0, 0, 0, 0, 0, 0},
    {2, 80, 49, COV_F32, 0, 0, 0, 0, 0, 0},     /* stage 1's channels, fewer pixels */
    {1, 40, 3136, COV_F16, 1, 0, 0, 0, 0, 0},   /* the stem's */
    {3, 100, 7, COV_F32, 0, 0, 0, 0, 0, 0},     /* channels past the last whole step, pixels not a workgroup's multiple */
    {2, 4, 10, COV_F32, 0, 0, 0, 0, 0, 0},      /* a thread per pixel */
    {1, 320, 49, COV_F32, 0, 256, 0, 0, 0, 0},  /* a workgroup per pixel */
    {2, 70, 33, COV_F32, 0, 128, 0, 0, 0, 0},   /* most lanes past C */
};

int main(int argc, char **argv) {
  gpu_jit_init();
  gpu_jit_targets tg = {0};
  if (gpu_jit_targets_from_args(argc, argv, &tg)) return 1;
  int fail = 0;
  for (size_t c = 0; c < sizeof k_cases / sizeof *k_cases; c++) fail |= check_case(&k_cases[c], &tg);
  gpu_jit_targets_close(&tg);
  return fail;
}
