/* tests/gpu/test_gpu_dwconv_jit.c: the model compiler's direct conv kernel
 * (gpu_lower_ew.c, GPU_EW_CONV on NCHW f32: a thread per output, or per
 * run of 4 outputs along a row for depthwise convs) lowered with a host
 * table of target operations and run on this CPU through LLVM's JIT,
 * every workgroup in a scrambled order. Its outputs are compared with
 * naive loops written here (double sums) and bit for bit with
 * gpu_ew_emulate, the C meaning the compiled model's CPU emulation uses.
 * Cases: ConvNeXt's 7x7 depthwise conv (pad 3) with a row length that the
 * runs divide and one they do not, a strided 3x3 with relu6 and an f16
 * output, a 5x5 with rows shorter than a run, and a grouped conv of two
 * channels per group (the thread-per-output form). With -t TARGET every
 * case is also built as that target's code object.
 * Usage: test_gpu_dwconv_jit [-t TARGET]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_mplan.h"
#include "gpu_jit_harness.h"

static cov_status lower(const void *e, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower_ew(e, ops, mod, fn);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float next(void) {
  return (float)(gpu_jit_unit(&rng) * 2.0 - 1.0);
}

/* against the double sums: relative 1e-5 for f32 outputs, 1e-3 (f16's
 * rounding) for f16 ones */
static int near32(double got, double want, cov_dtype d) {
  (void)d;
  return fabs(got - want) <= 1e-5 * fmax(1.0, fabs(want));
}
static int near16(double got, double want, cov_dtype d) {
  (void)d;
  return fabs(got - want) <= 1e-3 * fmax(1.0, fabs(want));
}

static gpu_jit_targets g_targets; /* -t */

typedef struct conv_case {
  const char *name;
  int64_t n, c, h, w, groups, r, stride, pad;
  gpu_ew_fn post;
  cov_dtype out;
} conv_case;

static gpu_ew conv_of(const conv_case *k) {
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_CONV, e.out_dtype = k->out, e.bias = 1, e.post = k->post, e.post0 = 0.0f, e.post1 = 6.0f;
  e.N = k->n, e.C = k->c, e.H = k->h, e.W = k->w, e.K = k->c, e.R = e.S = k->r;
  e.P = (k->h + 2 * k->pad - k->r) / k->stride + 1, e.Q = (k->w + 2 * k->pad - k->r) / k->stride + 1;
  e.sh = e.sw = k->stride, e.pt = e.pl = k->pad, e.dh = e.dw = 1, e.groups = k->groups;
  e.n = e.N * e.K * e.P * e.Q;
  return e;
}

/* the conv by naive loops in double: NCHW in and out, OIHW weights */
static void reference(const gpu_ew *e, const float *x, const float *w, const float *b, double *y) {
  int64_t cg = e->C / e->groups, kg = e->K / e->groups;
  for (int64_t n = 0; n < e->N; n++)
    for (int64_t k = 0; k < e->K; k++)
      for (int64_t p = 0; p < e->P; p++)
        for (int64_t q = 0; q < e->Q; q++) {
          double s = b[k];
          for (int64_t c = 0; c < cg; c++)
            for (int64_t r = 0; r < e->R; r++)
              for (int64_t t = 0; t < e->S; t++) {
                int64_t ih = p * e->sh - e->pt + r, iw = q * e->sw - e->pl + t;
                if (ih < 0 || iw < 0 || ih >= e->H || iw >= e->W) continue;
                s += (double)x[((n * e->C + k / kg * cg + c) * e->H + ih) * e->W + iw] * w[((k * cg + c) * e->R + r) * e->S + t];
              }
          if (e->post == GPU_FN_CLIP) s = s < 0 ? 0 : s > 6 ? 6 : s;
          y[((n * e->K + k) * e->P + p) * e->Q + q] = s;
        }
}

static int run_case(const conv_case *k) {
  gpu_ew e = conv_of(k);
  int64_t nx = e.N * e.C * e.H * e.W, nw = e.K * (e.C / e.groups) * e.R * e.S, ny = e.n;
  float *x = malloc((size_t)nx * 4), *w = malloc((size_t)nw * 4), *b = malloc((size_t)e.K * 4);
  float *emu = malloc((size_t)ny * 4), *got = malloc((size_t)ny * 4);
  double *want = malloc((size_t)ny * sizeof *want);
  uint16_t *got16 = malloc((size_t)ny * 2);
  int bad = !x || !w || !b || !emu || !got || !want || !got16;
  for (int64_t i = 0; !bad && i < nx; i++) x[i] = next();
  for (int64_t i = 0; !bad && i < nw; i++) w[i] = next();
  for (int64_t i = 0; !bad && i < e.K; i++) b[i] = next();
  if (!bad) {
    void *out = k->out == COV_F16 ? (void *)got16 : (void *)got;
    memset(out, 0xff, (size_t)ny * (k->out == COV_F16 ? 2 : 4)); /* NaN wherever the kernel must write */
    void *a[4] = {x, w, out, b};
    unsigned grid[3];
    gpu_ew_grid(&e, grid);
    bad = gpu_jit_run_groups(k->name, lower, &e, grid[0], a, 4);
  }
  if (!bad && k->out == COV_F16)
    for (int64_t i = 0; i < ny; i++) got[i] = cov_f16_to_f32(got16[i]);
  if (!bad) {
    reference(&e, x, w, b, want);
    gpu_ew_emulate(&e, x, w, emu, b, NULL);
    if (k->out == COV_F16)
      for (int64_t i = 0; i < ny; i++) emu[i] = cov_f16_to_f32(cov_f32_to_f16(emu[i]));
    float *wf = malloc((size_t)ny * 4);
    bad = !wf;
    for (int64_t i = 0; !bad && i < ny; i++) wf[i] = (float)want[i];
    if (!bad) bad = gpu_jit_compare(k->name, "naive loops", COV_F32, got, wf, ny, k->out == COV_F16 ? near16 : near32);
    if (!bad) bad = gpu_jit_compare(k->name, "gpu_ew_emulate", COV_F32, got, emu, ny, NULL);
    free(wf);
  }
  for (int i = 0; i < g_targets.n && !bad; i++) bad = gpu_jit_build(k->name, &e, &g_targets.t[i], "");
  if (!bad) printf("ok %s: %lld outputs, %u workgroups\n", k->name, (long long)ny, (unsigned)((ny + 255) / 256));
  free(x), free(w), free(b), free(emu), free(got), free(want), free(got16);
  return bad;
}

int main(int argc, char **argv) {
  gpu_jit_init();
  if (gpu_jit_targets_from_args(argc, argv, &g_targets)) return 1;
  static const conv_case cases[] = {
      {"dw7x7 runs divide the row", 2, 8, 12, 12, 8, 7, 1, 3, GPU_FN_NONE, COV_F32},
      {"dw7x7 ragged last run", 2, 5, 9, 10, 5, 7, 1, 3, GPU_FN_NONE, COV_F32},
      {"dw3x3 stride 2 relu6 f16", 1, 6, 15, 15, 6, 3, 2, 1, GPU_FN_CLIP, COV_F16},
      {"dw5x5 rows shorter than a run", 1, 4, 6, 3, 4, 5, 1, 2, GPU_FN_NONE, COV_F32},
      {"grouped 3x3, 2 channels per group", 1, 8, 7, 7, 4, 3, 1, 1, GPU_FN_CLIP, COV_F32},
  };
  int fail = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) fail |= run_case(&cases[i]);
  gpu_jit_targets_close(&g_targets);
  return fail;
}
