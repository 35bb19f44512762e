/* tests/gpu/test_gpu_pool_jit.c: the pooling kernels of compiled models
 * (GPU_EW_MAXPOOL, GPU_EW_GAVGPOOL; gpu_lower_pool.c, gpu_pool.h) and the
 * squeeze-excite head (GPU_EW_SEHEAD, gpu_lower_se.c; a workgroup per
 * image, its warps' butterflies and barriers run as real threads, against
 * naive loops in double, 1e-5, and its emulation, 1e-6) lowered
 * with a host table of target operations, verified, optimised and run on
 * this CPU through LLVM's JIT: the max pool a thread per output in a
 * scrambled order (gpu_jit_run), the global average as real workgroups
 * (gpu_jit_run_groups: 256 concurrent threads meeting at each barrier over
 * shared memory of their own). Inputs NCHW f32 or NHWC f16 (values rounded
 * to f16), outputs NCHW f32 or NHWC f16; shapes from the CNN exports
 * (EfficientNet's squeeze-excite pools, the final pools, ResNet's stem
 * pool, SqueezeNet's ceil-mode pools) and odd ones (channels not a
 * multiple of 8, one pixel, pixels not a multiple of the lanes). Each
 * result is compared with naive loops (the mean in double, 1e-5 relative;
 * the max exactly) and, bit for bit, with gpu_ew_emulate, the C meaning the
 * CPU emulation of a compiled model uses. With -t TARGET each kernel is
 * also built as that target's code object.
 * Usage: test_gpu_pool_jit [-t TARGET]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_pool.h"
#include "gpu_jit_harness.h"

static cov_status lower(const void *e, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower_ew(e, ops, mod, fn);
}

typedef struct pool_case {
  int gavg;
  int64_t n, c, h, w;
  int in_cl, out_cl;            /* NHWC f16 in / out */
  int64_t r, s, st, pad, extra; /* max: window, stride, pad, extra rows / columns (ceil mode) */
} pool_case;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float next(void) {
  return (float)gpu_jit_unit(&rng) * 8.0f - 3.0f;
}

static void setup(const pool_case *k, gpu_ew *e) {
  memset(e, 0, sizeof *e);
  e->kind = k->gavg ? GPU_EW_GAVGPOOL : GPU_EW_MAXPOOL;
  e->in_dtype = k->in_cl ? COV_F16 : COV_F32, e->out_dtype = k->out_cl ? COV_F16 : COV_F32;
  e->N = k->n, e->C = k->c, e->H = k->h, e->W = k->w;
  if (!k->gavg) {
    e->R = k->r, e->S = k->s, e->sh = e->sw = k->st, e->pt = e->pl = k->pad;
    e->P = (k->h + 2 * k->pad + k->extra - k->r) / k->st + 1, e->Q = (k->w + 2 * k->pad + k->extra - k->s) / k->st + 1;
  }
  e->n = gpu_pool_items(e);
}

/* naive loops over x in its layout; y in the output's layout */
static void reference(const pool_case *k, const gpu_ew *e, const float *x, float *y) {
  for (int64_t n = 0; n < e->N; n++)
    for (int64_t c = 0; c < e->C; c++) {
      if (k->gavg) {
        double s = 0;
        for (int64_t p = 0; p < e->H * e->W; p++) s += x[k->in_cl ? (n * e->H * e->W + p) * e->C + c : (n * e->C + c) * e->H * e->W + p];
        y[n * e->C + c] = (float)(s / (double)(e->H * e->W));
        continue;
      }
      for (int64_t p = 0; p < e->P; p++)
        for (int64_t q = 0; q < e->Q; q++) {
          float m = -INFINITY;
          for (int64_t ih = p * e->sh - e->pt; ih < p * e->sh - e->pt + e->R; ih++)
            for (int64_t iw = q * e->sw - e->pl; iw < q * e->sw - e->pl + e->S; iw++)
              if (ih >= 0 && ih < e->H && iw >= 0 && iw < e->W)
                m = fmaxf(m, x[k->in_cl ? ((n * e->H + ih) * e->W + iw) * e->C + c : ((n * e->C + c) * e->H + ih) * e->W + iw]);
          y[k->out_cl ? ((n * e->P + p) * e->Q + q) * e->C + c : ((n * e->C + c) * e->P + p) * e->Q + q] = m;
        }
    }
}

static int check_case(const pool_case *k, const gpu_jit_targets *tg) {
  gpu_ew e;
  setup(k, &e);
  int64_t in = k->n * k->c * k->h * k->w, out = k->gavg ? k->n * k->c : k->n * k->c * e.P * e.Q;
  char what[200];
  snprintf(what, sizeof what, "%s %lldx%lldx%lldx%lld %s -> %s", k->gavg ? "global avgpool" : "maxpool", (long long)k->n,
           (long long)k->c, (long long)k->h, (long long)k->w, k->in_cl ? "NHWC f16" : "NCHW f32",
           k->out_cl ? (k->gavg ? "f16" : "NHWC f16") : k->gavg ? "f32" : "NCHW f32");
  if (!k->gavg) {
    size_t l = strlen(what);
    snprintf(what + l, sizeof what - l, ", %lldx%lld/%lld pad %lld (+%lld)", (long long)k->r, (long long)k->s,
             (long long)k->st, (long long)k->pad, (long long)k->extra);
  }
  float *x = malloc((size_t)in * 4), *want = malloc((size_t)out * 4), *got = malloc((size_t)out * 4);
  float *emu = malloc((size_t)out * 4);
  uint16_t *x16 = malloc((size_t)in * 2), *y16 = malloc((size_t)out * 2);
  int bad = !x || !want || !got || !emu || !x16 || !y16;
  if (bad) fprintf(stderr, "FAIL %s: no memory\n", what);
  for (int64_t i = 0; i < in && !bad; i++) {
    x[i] = k->in_cl ? gpu_jit_h16(next()) : next();
    x16[i] = cov_f32_to_f16(x[i]);
  }
  if (!bad) {
    reference(k, &e, x, want);
    memset(got, 0xff, (size_t)out * 4), memset(y16, 0xff, (size_t)out * 2);
    void *a[4] = {k->in_cl ? (void *)x16 : (void *)x, NULL, k->out_cl ? (void *)y16 : (void *)got, NULL};
    bad = k->gavg ? gpu_jit_run_groups(what, lower, &e, e.n / GPU_EW_THREADS, a, 4) : gpu_jit_run(what, lower, &e, e.n, a, 4);
  }
  for (int64_t i = 0; i < out && !bad && k->out_cl; i++) got[i] = cov_f16_to_f32(y16[i]), want[i] = gpu_jit_h16(want[i]);
  for (int64_t i = 0; i < out && !bad; i++)
    if (!(fabsf(got[i] - want[i]) <= (k->gavg ? 1e-5f : 0.0f) * fmaxf(1.0f, fabsf(want[i]))))
      fprintf(stderr, "FAIL %s: element %lld is %.9g, %.9g expected\n", what, (long long)i, got[i], want[i]), bad = 1;
  if (!bad) {
    gpu_ew_emulate(&e, x, NULL, emu, NULL, NULL);
    for (int64_t i = 0; i < out && k->out_cl; i++) emu[i] = gpu_jit_h16(emu[i]);
  }
  for (int64_t i = 0; i < out && !bad; i++)
    if (memcmp(&got[i], &emu[i], 4))
      fprintf(stderr, "FAIL %s: element %lld is %.9g, the emulation's %.9g\n", what, (long long)i, got[i], emu[i]), bad = 1;
  for (int j = 0; j < tg->n && !bad; j++) bad = gpu_jit_build(what, &e, &tg->t[j], k->gavg ? "bar.sync" : "");
  if (!bad) printf("ok: %s (%lld threads)\n", what, (long long)e.n);
  free(x), free(want), free(got), free(emu), free(x16), free(y16);
  return bad;
}

static const pool_case k_cases[] = {
    {1, 1, 32, 112, 112, 1, 0, 0, 0, 0, 0, 0}, /* EfficientNet's first squeeze-excite pool, channels-last */
    {1, 2, 96, 56, 56, 0, 0, 0, 0, 0, 0, 0},   /* ... NCHW f32 */
    {1, 2, 1280, 7, 7, 1, 0, 0, 0, 0, 0, 0},   /* the final pool: 64 lanes, 4 slots of 8 */
    {1, 2, 240, 28, 28, 1, 1, 0, 0, 0, 0, 0},  /* a squeeze-excite pool writing its fc1's f16 operand */
    {1, 1, 2048, 1, 1, 1, 0, 0, 0, 0, 0, 0},   /* one pixel, 8 channels a thread: a lane a slot */
    {1, 3, 512, 7, 7, 0, 0, 0, 0, 0, 0, 0},    /* ResNet-18's, NCHW */
    {1, 2, 12, 5, 3, 1, 0, 0, 0, 0, 0, 0},     /* channels-last, C not a multiple of 8: a channel a slot */
    {1, 2, 40, 1, 1, 0, 0, 0, 0, 0, 0, 0},     /* one pixel */
    {1, 1, 24, 300, 1, 1, 0, 0, 0, 0, 0, 0},   /* pixels past a whole unrolled round */
    {0, 2, 64, 16, 16, 1, 1, 3, 3, 2, 1, 0},   /* the stem's 3x3/2 pad 1, channels-last both sides: 8 channels a thread */
    {0, 2, 16, 15, 15, 0, 1, 3, 3, 2, 1, 0},   /* NCHW f32 in, NHWC f16 out */
    {0, 1, 24, 13, 13, 1, 0, 3, 3, 2, 0, 1},   /* ceil mode (SqueezeNet), NHWC in, NCHW out */
    {0, 2, 5, 9, 8, 0, 0, 2, 2, 2, 0, 0},      /* NCHW both sides */
    {0, 1, 12, 7, 7, 1, 1, 3, 3, 1, 1, 0},     /* channels-last, C not a multiple of 8 */
};

/* ---- squeeze-excite heads (GPU_EW_SEHEAD) ------------------------------------ */

typedef struct se_case {
  int64_t n, c, k;
  int t1, t2;      /* fc1 weights [C][K], fc2 weights [K][C] (channels-last plans) */
  gpu_ew_fn a1, a2; /* the activations after fc1 and fc2 */
} se_case;

static double act_d(gpu_ew_fn f, double v) {
  switch (f) {
  case GPU_FN_SILU: return v / (1.0 + exp(-v));
  case GPU_FN_RELU: return v > 0 ? v : 0;
  case GPU_FN_HSIGMOID: return fmin(1.0, fmax(0.0, v / 6.0 + 0.5));
  default: return v;
  }
}

static int check_se(const se_case *k, const gpu_jit_targets *tg) {
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_SEHEAD, e.in_dtype = COV_F16, e.out_dtype = COV_F32, e.N = k->n, e.C = k->c, e.K = k->k;
  e.R = k->t1, e.S = k->t2, e.post = k->a1, e.mul_fn = k->a2, e.n = k->n * GPU_EW_THREADS;
  if (k->a2 == GPU_FN_HSIGMOID) e.mul0 = 1.0f / 6.0f, e.mul1 = 0.5f;
  char what[160];
  snprintf(what, sizeof what, "squeeze-excite head %lldx%lld -> %lld -> %lld%s%s", (long long)k->n, (long long)k->c,
           (long long)k->k, (long long)k->c, k->t1 ? ", fc1 [C][K]" : "", k->t2 ? ", fc2 [K][C]" : "");
  int64_t nc = k->n * k->c, ck = k->c * k->k;
  float *x = malloc((size_t)nc * 4), *w1 = malloc((size_t)ck * 4), *w2 = malloc((size_t)ck * 4);
  float *b1 = malloc((size_t)k->k * 4), *b2 = malloc((size_t)k->c * 4), *want = malloc((size_t)nc * 4);
  float *got = malloc((size_t)nc * 4), *emu = malloc((size_t)nc * 4), *hid = malloc((size_t)k->k * 8);
  uint16_t *x16 = malloc((size_t)nc * 2), *w1h = malloc((size_t)ck * 2), *w2h = malloc((size_t)ck * 2);
  int bad = !x || !w1 || !w2 || !b1 || !b2 || !want || !got || !emu || !hid || !x16 || !w1h || !w2h;
  if (bad) fprintf(stderr, "FAIL %s: no memory\n", what);
  for (int64_t i = 0; i < nc && !bad; i++) x[i] = gpu_jit_h16(next() * 0.5f), x16[i] = cov_f32_to_f16(x[i]);
  for (int64_t i = 0; i < ck && !bad; i++) {
    w1[i] = gpu_jit_h16(next() * 0.1f), w2[i] = gpu_jit_h16(next() * 0.1f);
    w1h[i] = cov_f32_to_f16(w1[i]), w2h[i] = cov_f32_to_f16(w2[i]);
  }
  for (int64_t i = 0; i < k->k && !bad; i++) b1[i] = next() * 0.1f;
  for (int64_t i = 0; i < k->c && !bad; i++) b2[i] = next() * 0.1f;
  for (int64_t n = 0; n < k->n && !bad; n++) { /* naive loops in double */
    for (int64_t h = 0; h < k->k; h++) {
      double s = b1[h];
      for (int64_t c = 0; c < k->c; c++) s += (double)x[n * k->c + c] * w1[k->t1 ? c * k->k + h : h * k->c + c];
      ((double *)hid)[h] = act_d(k->a1, s);
    }
    for (int64_t c = 0; c < k->c; c++) {
      double s = b2[c];
      for (int64_t h = 0; h < k->k; h++) s += ((double *)hid)[h] * w2[k->t2 ? h * k->c + c : c * k->k + h];
      want[n * k->c + c] = (float)act_d(k->a2, s);
    }
  }
  if (!bad) {
    memset(got, 0xff, (size_t)nc * 4);
    void *a[6] = {x16, w1h, got, b1, w2h, b2};
    bad = gpu_jit_run_groups(what, lower, &e, k->n, a, 6);
  }
  for (int64_t i = 0; i < nc && !bad; i++)
    if (!(fabsf(got[i] - want[i]) <= 1e-5f * fmaxf(1.0f, fabsf(want[i]))))
      fprintf(stderr, "FAIL %s: element %lld is %.9g, %.9g expected\n", what, (long long)i, got[i], want[i]), bad = 1;
  if (!bad) gpu_se_emulate(&e, x, w1, emu, b1, w2, b2);
  for (int64_t i = 0; i < nc && !bad; i++) /* the emulation's expf against the kernel's exp2: not bit for bit */
    if (!(fabsf(got[i] - emu[i]) <= 1e-6f * fmaxf(1.0f, fabsf(emu[i]))))
      fprintf(stderr, "FAIL %s: element %lld is %.9g, the emulation's %.9g\n", what, (long long)i, got[i], emu[i]), bad = 1;
  for (int j = 0; j < tg->n && !bad; j++) bad = gpu_jit_build(what, &e, &tg->t[j], "shfl.sync.bfly");
  if (!bad) printf("ok: %s\n", what);
  free(x), free(w1), free(w2), free(b1), free(b2), free(want), free(got), free(emu), free(hid);
  free(x16), free(w1h), free(w2h);
  return bad;
}

static const se_case k_se[] = {
    {1, 32, 8, 0, 0, GPU_FN_SILU, GPU_FN_NONE},     /* EfficientNet's first block */
    {2, 1152, 48, 0, 1, GPU_FN_SILU, GPU_FN_NONE},  /* its last, fc2 channels-last */
    {3, 240, 10, 1, 1, GPU_FN_SILU, GPU_FN_NONE},   /* both channels-last */
    {2, 96, 24, 1, 0, GPU_FN_RELU, GPU_FN_HSIGMOID}, /* MobileNetV3's, the gate's hard sigmoid in fc2 */
    {1, 50, 37, 0, 0, GPU_FN_NONE, GPU_FN_NONE},    /* sizes past no warp or workgroup multiple */
};

int main(int argc, char **argv) {
  gpu_jit_init();
  gpu_jit_targets tg = {0};
  if (gpu_jit_targets_from_args(argc, argv, &tg)) return 1;
  int fail = 0;
  for (size_t c = 0; c < sizeof k_cases / sizeof *k_cases; c++) fail |= check_case(&k_cases[c], &tg);
  for (size_t c = 0; c < sizeof k_se / sizeof *k_se; c++) fail |= check_se(&k_se[c], &tg);
  gpu_jit_targets_close(&tg);
  return fail;
}
