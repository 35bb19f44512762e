/* tests/gpu/test_gpu_ew_jit.c: the model compiler's layout copies between
 * channels-last and NCHW activations (gpu_lower_ew.c: a COPY with an f16
 * source or destination, the residual add and activation fused into it,
 * the second NHWC f16 store, SiLU, a squeeze-excite's gate (on NCHW f32 or
 * in place on NHWC f16), a per-channel
 * scale with an optional hard_sigmoid, hard_swish and GELU; the layer
 * normalisation: test_gpu_lnorm_jit.c) lowered with a host table of target
 * operations, verified, optimised at O2 and run on this CPU through LLVM's
 * JIT, every work item in a scrambled order; the results are compared
 * with naive loops written here (the transposes, the add, relu / relu6,
 * x * sigmoid(x), the hard functions, GELU through libm's erf, f16
 * rounding) and with gpu_ew_emulate, the C meaning the CPU emulation
 * of a compiled model uses. With -t TARGET the layout copies are also built
 * as that target's code object. Usage: test_gpu_ew_jit [-t TARGET]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_gather.h"
#include "backends/gpu/gpu_ir.h"
#include "gpu_jit_harness.h"

static cov_status lower(const void *e, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower_ew(e, ops, mod, fn);
}

/* Lowers e, verifies, optimises and runs every workgroup of its grid on
 * a[0..3]. */
static int run_jit(const gpu_ew *e, void **a) {
  unsigned grid[3];
  gpu_ew_grid(e, grid);
  return gpu_jit_run_groups("ew", lower, e, grid[0], a, 4);
}

/* The matrix kernels' epilogue activation (gpu_activation) alone as a
 * kernel: y[i] = act(x[i]), i < n. */
typedef struct act_kernel {
  gpu_epilogue ep;
  int64_t n;
} act_kernel;
static cov_status lower_act(const void *what, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  const act_kernel *k = what;
  gpu_gen gg = {0}, *g = &gg;
  gpu_plan plan = {0};
  plan.prob.in_dtype = COV_F32, plan.threads = GPU_EW_THREADS;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, &plan, ops, mod));
  gpu_add_kernel(g, fn);
  LLVMValueRef i = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, ops->block_id(g, 0), C(GPU_EW_THREADS), ""), ops->thread_id(g), "");
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, i, k->n), &join);
  LLVMValueRef x = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, LLVMGetParam(g->fn, 0), i), "");
  LLVMBuildStore(g->b, gpu_activation(g, &k->ep, x), gept(g, g->f32, LLVMGetParam(g->fn, 2), i));
  end_if(g, join);
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  return NULL;
}
static int run_act(const gpu_epilogue *ep, int64_t n, void **a) {
  act_kernel k = {*ep, n};
  return gpu_jit_run("act", lower_act, &k, n, a, 4);
}

enum { N = 2, CH = 24, H = 3, W = 5, HW = H * W, NUM = N * CH * HW };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float next(void) {
  return (float)gpu_jit_unit(&rng) * 8.0f - 4.0f;
}
static int64_t nchw(int64_t n, int64_t c, int64_t p) { return (n * CH + c) * HW + p; }
static int64_t nhwc(int64_t n, int64_t c, int64_t p) { return (n * HW + p) * CH + c; }

/* relative 1e-5: exp goes through 2^x */
static int near(double got, double want, cov_dtype d) {
  (void)d;
  return fabs(got - want) <= 1e-5 * fmax(1.0, fabs(want));
}
static int compare(const char *what, const float *got, const float *want, int64_t n) {
  return gpu_jit_compare(what, "result", COV_F32, got, want, n, near);
}

static void widen(const uint16_t *h, float *f, int64_t n) {
  for (int64_t i = 0; i < n; i++) f[i] = cov_f16_to_f32(h[i]);
}

static gpu_jit_targets g_targets; /* -t */

/* A layout copy of [n][ch][hw] as the channels-last pass builds it. */
typedef struct dims {
  int64_t n, ch, hw;
} dims;
static gpu_ew layout_copy_of(dims s, int to_nhwc) {
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = s.n * s.ch * s.hw, e.run = 1;
  e.out_dtype = to_nhwc ? COV_F16 : COV_F32, e.in_dtype = to_nhwc ? COV_DTYPE_INVALID : COV_F16; /* f32, f16 */
  int64_t rep[3] = {s.ch, s.hw, s.n}, ss[3] = {s.hw, 1, s.ch * s.hw}, ds[3] = {1, s.ch, s.ch * s.hw};
  if (!to_nhwc) rep[0] = s.hw, rep[1] = s.ch, ss[0] = s.ch, ss[1] = 1, ds[0] = 1, ds[1] = s.hw;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = rep[l], e.ss[l] = ss[l], e.ds[l] = ds[l];
  e.N = s.n, e.C = s.ch, e.H = 1, e.W = s.hw;
  return e;
}

/* The launch: every workgroup of its grid as threads (the transposing
 * copies meet at barriers over shared memory). */
static int run_groups(const char *what, const gpu_ew *e, void **a) {
  unsigned grid[3];
  gpu_ew_grid(e, grid);
  return gpu_jit_run_groups(what, lower, e, grid[0], a, 4);
}

/* The result: naive loops on x (NCHW f32 to NHWC f16, or NHWC f16 back
 * with the shortcut: add 1 NCHW f32, 2 NHWC f16) into want (NCHW or
 * NHWC, as the copy's y) and want2 (NHWC f16, the second store). */
static void layout_want(dims s, int to_nhwc, int add, gpu_ew_fn post, float hi, const float *x32, const uint16_t *x16,
                        const float *sc, float *want, float *want2) {
  for (int64_t n = 0; n < s.n; n++)
    for (int64_t c = 0; c < s.ch; c++)
      for (int64_t p = 0; p < s.hw; p++) {
        int64_t cf = (n * s.ch + c) * s.hw + p, cl = (n * s.hw + p) * s.ch + c;
        if (to_nhwc) {
          want[cl] = gpu_jit_h16(x32[cf]);
          continue;
        }
        float v = cov_f16_to_f32(x16[cl]) + (add == 1 ? sc[cf] : add == 2 ? gpu_jit_h16(sc[cf]) : 0.0f);
        if (post == GPU_FN_RELU) v = v > 0 ? v : 0;
        if (post == GPU_FN_CLIP) v = v < 0 ? 0 : v > hi ? hi : v;
        if (post == GPU_FN_SILU) v = (float)(v / (1.0 + exp(-(double)v)));
        want[cf] = v, want2[cl] = gpu_jit_h16(v);
      }
}

/* One case: x NCHW f32 (or NHWC f16), the shortcut (add: 1 NCHW f32, 2
 * NHWC f16), stored NCHW f32 (also 0), and NHWC f16 (1), or only that
 * (2); the kernel's outputs against the naive loops and against
 * gpu_ew_emulate. */
static int check(const char *name, dims s, int to_nhwc, int add, gpu_ew_fn post, float hi, int also) {
  int64_t num = s.n * s.ch * s.hw;
  float *x32 = calloc((size_t)num, 4), *sc = calloc((size_t)num, 4), *y32 = calloc((size_t)num, 4);
  float *want = calloc((size_t)num, 4), *want2 = calloc((size_t)num, 4), *got = calloc((size_t)num, 4);
  float *emu = calloc((size_t)num, 4), *xv = calloc((size_t)num, 4), *scv = calloc((size_t)num, 4);
  uint16_t *x16 = calloc((size_t)num, 2), *y16 = calloc((size_t)num, 2), *w16 = calloc((size_t)num, 2);
  uint16_t *sc16 = calloc((size_t)num, 2);
  gpu_ew e = layout_copy_of(s, to_nhwc);
  e.bias = add, e.post = post, e.post0 = 0, e.post1 = hi, e.also = also;
  static const char *kinds[] = {"element order", "NHWC order", "tiles"};
  char what[200];
  snprintf(what, sizeof what, "%s, [%lld][%lld][%lld] (%s)", name, (long long)s.n, (long long)s.ch, (long long)s.hw,
           kinds[gpu_ew_transpose(&e, NULL)]);
  int bad = !x32 || !sc || !y32 || !want || !want2 || !got || !emu || !xv || !scv || !x16 || !y16 || !w16 || !sc16;
  for (int64_t i = 0; i < num && !bad; i++) x32[i] = next(), x16[i] = cov_f32_to_f16(x32[i]), sc[i] = next();
  for (int64_t n = 0; n < s.n && !bad; n++) /* the shortcut's NHWC f16 form */
    for (int64_t c = 0; c < s.ch; c++)
      for (int64_t p = 0; p < s.hw; p++) sc16[(n * s.hw + p) * s.ch + c] = cov_f32_to_f16(sc[(n * s.ch + c) * s.hw + p]);
  if (!bad) {
    layout_want(s, to_nhwc, add, post, hi, x32, x16, sc, want, want2);
    void *a[4] = {to_nhwc ? (void *)x32 : (void *)x16, w16, to_nhwc ? (void *)y16 : (void *)y32,
                  add == 2 ? (void *)sc16 : (void *)sc};
    bad = run_groups(what, &e, a);
  }
  if (!bad && also != 2) {
    if (to_nhwc) widen(y16, got, num);
    else memcpy(got, y32, (size_t)num * 4);
    bad = compare(what, got, want, num);
  }
  if (!bad && also) widen(w16, got, num), bad = compare(what, got, want2, num);
  if (!bad) { /* the emulation: f32 views, f16 values rounded as stored */
    widen(x16, xv, num), widen(sc16, scv, num);
    gpu_ew_emulate(&e, to_nhwc ? x32 : xv, NULL, emu, add == 2 ? scv : sc, NULL);
    for (int64_t i = 0; to_nhwc && i < num; i++) emu[i] = gpu_jit_h16(emu[i]);
    bad = compare(what, emu, want, num);
  }
  /* built for each -t target: NVPTX's tiles meet at bar.sync, the NHWC-order
   * f16 residual moves 16-byte vectors */
  gpu_ct_shape sh;
  gpu_ct_kind ct = gpu_ew_transpose(&e, &sh);
  const char *needle = ct == GPU_CT_TILES ? "bar.sync" : ct == GPU_CT_REORDER && s.ch % 8 == 0 ? ".v4." : "";
  for (int j = 0; j < g_targets.n && !bad; j++) bad = gpu_jit_build(what, &e, &g_targets.t[j], needle);
  if (!bad) printf("ok: %s\n", what);
  free(x32), free(sc), free(y32), free(want), free(want2), free(got), free(emu), free(xv), free(scv);
  free(x16), free(y16), free(w16), free(sc16);
  return bad;
}

/* The layout copies over odd shapes: channels past a tile's multiple,
 * pixels 1, 15, 49, 3136, two images. */
static int check_layouts(void) {
  static const dims shapes[] = {{2, 24, 15}, {1, 40, 49}, {2, 70, 49}, {1, 24, 3136}, {3, 33, 1}, {1, 64, 64}};
  int fail = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    dims s = shapes[i];
    fail |= check("NCHW f32 -> NHWC f16", s, 1, 0, GPU_FN_NONE, 0, 0);
    fail |= check("NHWC f16 -> NCHW f32", s, 0, 0, GPU_FN_NONE, 0, 0);
    fail |= check("NHWC f16 + NCHW shortcut, relu -> NCHW f32 and NHWC f16", s, 0, 1, GPU_FN_RELU, 0, 1);
    fail |= check("NHWC f16 + NCHW shortcut, relu -> NHWC f16 only", s, 0, 1, GPU_FN_RELU, 0, 2);
    fail |= check("NHWC f16 + NHWC shortcut, relu -> NHWC f16 only", s, 0, 2, GPU_FN_RELU, 0, 2);
    fail |= check("NHWC f16 + NHWC shortcut, relu6 -> NCHW f32", s, 0, 2, GPU_FN_CLIP, 6, 0);
    fail |= check("NHWC f16, x * sigmoid(x) -> NCHW f32", s, 0, 0, GPU_FN_SILU, 0, 0);
  }
  return fail;
}

/* A squeeze-excite's gate: y = x * sigmoid(gate[channel]) on NCHW f32,
 * written f32 or as the next matrix kernel's f16 operand. */
static int check_gate(const char *what, cov_dtype out) {
  static float x[NUM], gate[N * CH], want[NUM], got[NUM], y32[NUM];
  static uint16_t y16[NUM];
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = NUM, e.out_dtype = out, e.scale_hw = HW;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
  for (int i = 0; i < NUM; i++) x[i] = next();
  for (int i = 0; i < N * CH; i++) gate[i] = next();
  for (int i = 0; i < NUM; i++) {
    double v = x[i] / (1.0 + exp(-(double)gate[i / HW]));
    want[i] = out == COV_F16 ? gpu_jit_h16((float)v) : (float)v;
  }
  void *a[4] = {x, NULL, out == COV_F16 ? (void *)y16 : (void *)y32, gate};
  if (run_jit(&e, a)) return 1;
  if (out == COV_F16) widen(y16, got, NUM);
  else memcpy(got, y32, sizeof got);
  int bad = compare(what, got, want, NUM);
  gpu_ew_emulate(&e, x, NULL, got, gate, NULL);
  for (int i = 0; out == COV_F16 && i < NUM; i++) got[i] = gpu_jit_h16(got[i]);
  bad |= compare(what, got, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

/* A per-channel scale of a channels-last f16 result read through its
 * conversion back, + a shortcut: y = x * fn(g[c]) + sc (ConvNeXt's layer
 * scale and residual; fn hard_sigmoid: a squeeze-excite's gate). */
static int check_scale(const char *what, gpu_ew_fn fn) {
  static float g[CH], sc[NUM], want[NUM], got[NUM], y32[NUM], xv[NUM];
  static uint16_t x16[NUM];
  gpu_ew e = layout_copy_of((dims){N, CH, HW}, 0);
  e.bias = 1, e.mul_c = CH, e.mul_hw = HW, e.mul_fn = fn, e.mul0 = 1.0f / 6, e.mul1 = 0.5f;
  for (int i = 0; i < NUM; i++) x16[i] = cov_f32_to_f16(next()), sc[i] = next();
  for (int c = 0; c < CH; c++) g[c] = next();
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < CH; c++)
      for (int64_t p = 0; p < HW; p++) {
        double f = fn == GPU_FN_HSIGMOID ? fmin(1.0, fmax(0.0, g[c] / 6.0 + 0.5)) : g[c];
        want[nchw(n, c, p)] = (float)(cov_f16_to_f32(x16[nhwc(n, c, p)]) * f + sc[nchw(n, c, p)]);
      }
  void *a[4] = {x16, g, y32, sc};
  if (run_jit(&e, a)) return 1;
  int bad = compare(what, y32, want, NUM);
  widen(x16, xv, NUM);
  gpu_ew_emulate(&e, xv, g, got, sc, NULL);
  bad |= compare(what, got, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

/* A squeeze-excite's gate applied to a channels-last f16 activation in
 * place (gpu_ms_fuse_gate_nhwc): y = x * sigmoid(g[n][c]) over NHWC f16
 * elements, stored NHWC f16, the gate indexed per image (mul_img). */
static int check_gate_nhwc(void) {
  static float g[N * CH], want[NUM], got[NUM], xv[NUM];
  static uint16_t x16[NUM], y16[NUM];
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = NUM, e.in_dtype = COV_F16, e.out_dtype = COV_F16;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
  e.mul_c = CH, e.mul_hw = 1, e.mul_img = HW * CH, e.mul_fn = GPU_FN_SIGMOID;
  for (int i = 0; i < NUM; i++) x16[i] = cov_f32_to_f16(next());
  for (int i = 0; i < N * CH; i++) g[i] = 4 * next();
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < CH; c++)
      for (int64_t p = 0; p < HW; p++)
        want[nhwc(n, c, p)] = gpu_jit_h16((float)(cov_f16_to_f32(x16[nhwc(n, c, p)]) / (1.0 + exp(-g[n * CH + c]))));
  void *a[4] = {x16, g, y16, NULL};
  const char *what = "NHWC f16 * sigmoid(gate per image and channel) -> NHWC f16";
  if (run_jit(&e, a)) return 1;
  widen(y16, got, NUM);
  int bad = compare(what, got, want, NUM);
  widen(x16, xv, NUM);
  gpu_ew_emulate(&e, xv, g, got, NULL, NULL);
  for (int i = 0; i < NUM; i++) got[i] = gpu_jit_h16(got[i]);
  bad |= compare(what, got, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

/* A contiguous f32 copy (an f16 operand, a Concat part): n elements from
 * x + s0 to y + d0, stored f32 or f16, against the loop; 4 elements a
 * thread where n, s0 and d0 allow it. */
static int check_flat(const char *name, int64_t n, int64_t s0, int64_t d0, cov_dtype out) {
  static float x[NUM + 16], want[NUM + 16], got[NUM + 16], y32[NUM + 16];
  static uint16_t y16[NUM + 16];
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = n, e.s0 = s0, e.d0 = d0, e.out_dtype = out, e.post = GPU_FN_RELU;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
  for (int i = 0; i < NUM + 16; i++) x[i] = next(), want[i] = 0;
  for (int64_t i = 0; i < n; i++) want[d0 + i] = out == COV_F16 ? gpu_jit_h16(x[s0 + i] > 0 ? x[s0 + i] : 0) : (x[s0 + i] > 0 ? x[s0 + i] : 0);
  memset(y32, 0, sizeof y32), memset(y16, 0, sizeof y16);
  void *a[4] = {x, NULL, out == COV_F16 ? (void *)y16 : (void *)y32, NULL};
  char what[120];
  unsigned grid[3];
  gpu_ew_grid(&e, grid);
  snprintf(what, sizeof what, "%s, %lld elements at %lld -> %lld, %u workgroups", name, (long long)n, (long long)s0,
           (long long)d0, grid[0]);
  if (run_jit(&e, a)) return 1;
  if (out == COV_F16) widen(y16, got, NUM + 16);
  else memcpy(got, y32, sizeof got);
  int bad = compare(what, got, want, NUM + 16);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

/* The row gather (an embedding lookup) with an addend (the position
 * embedding, gpu_mfuse.c): rows of a [V][D] table at ids, negative ones
 * from the end, out-of-range ones zero, plus the addend, against the
 * formula and the emulation's C meaning. */
static int check_rows_add(void) {
  enum { V = 7, D = 24, R = 9 };
  static float x[V * D], add[R * D], want[R * D], y[R * D], emu[R * D];
  static const int64_t ids[R] = {3, 0, 6, -1, 7, 2, -8, 5, 3};
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_ROWS, e.n = R * D, e.out_dtype = COV_F32, e.V = V, e.D = D, e.bias = 1;
  for (int i = 0; i < V * D; i++) x[i] = next();
  for (int i = 0; i < R * D; i++) {
    int64_t id = ids[i / D], r = id < 0 ? id + V : id;
    add[i] = next();
    want[i] = (r >= 0 && r < V ? x[r * D + i % D] : 0.0f) + add[i];
  }
  void *a[4] = {x, (void *)ids, y, add};
  if (run_jit(&e, a)) return 1;
  gpu_gather_emulate(&e, x, ids, emu, add);
  int bad = compare("row gather + addend", y, want, R * D) || compare("row gather + addend (emulation)", emu, want, R * D);
  if (!bad) printf("ok: row gather + addend\n");
  return bad;
}

/* hard_swish, hard_sigmoid and GELU applied by a plain f32 copy. */
static int check_fn(const char *what, gpu_ew_fn fn) {
  static float x[NUM], want[NUM], got[NUM], y[NUM];
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = NUM, e.out_dtype = COV_F32, e.post = fn, e.post0 = 0.2f, e.post1 = 0.5f;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
  for (int i = 0; i < NUM; i++) {
    x[i] = next();
    double v = x[i];
    want[i] = (float)(fn == GPU_FN_HSWISH     ? v * fmin(1.0, fmax(0.0, v / 6 + 0.5))
                      : fn == GPU_FN_HSIGMOID ? fmin(1.0, fmax(0.0, 0.2 * v + 0.5))
                                              : 0.5 * v * (1 + erf(v / sqrt(2.0))));
  }
  void *a[4] = {x, NULL, y, NULL};
  if (run_jit(&e, a)) return 1;
  int bad = compare(what, y, want, NUM);
  gpu_ew_emulate(&e, x, NULL, got, NULL, NULL);
  bad |= compare(what, got, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

/* hard_swish and hard_sigmoid as the matrix kernels' epilogue applies them
 * (gpu_activation), against the same naive formulas. */
static int check_epilogue(const char *what, gpu_act act) {
  static float x[NUM], want[NUM], y[NUM];
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.n = NUM;
  gpu_epilogue ep = {.act = act, .clip_lo = 0.2f, .clip_hi = 0.5f};
  for (int i = 0; i < NUM; i++) {
    x[i] = next();
    double v = x[i];
    want[i] = (float)(act == GPU_ACT_HSWISH ? v * fmin(1.0, fmax(0.0, v / 6 + 0.5))
                      : act == GPU_ACT_SILU ? v / (1 + exp(-v))
                      : act == GPU_ACT_GELU_TANH ? 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
                                            : fmin(1.0, fmax(0.0, 0.2 * v + 0.5)));
  }
  void *a[4] = {x, NULL, y, NULL};
  if (run_act(&ep, NUM, a)) return 1;
  int bad = compare(what, y, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

int main(int argc, char **argv) {
  gpu_jit_init();
  if (gpu_jit_targets_from_args(argc, argv, &g_targets)) return 1;
  int fail = check_layouts();
  fail |= check_gate("x * sigmoid(gate per channel) -> f32", COV_F32);
  fail |= check_gate("x * sigmoid(gate per channel) -> f16", COV_F16);
  fail |= check_scale("NHWC f16 * scale per channel + shortcut -> NCHW f32", GPU_FN_NONE);
  fail |= check_scale("NHWC f16 * hard_sigmoid(gate per channel) + shortcut -> NCHW f32", GPU_FN_HSIGMOID);
  fail |= check_gate_nhwc();
  fail |= check_flat("f32 relu -> f16", NUM, 0, 0, COV_F16);
  fail |= check_flat("f32 relu -> f16", NUM - 4, 8, 4, COV_F16);
  fail |= check_flat("f32 relu -> f32", NUM - 8, 4, 12, COV_F32);
  fail |= check_flat("f32 relu -> f16, not whole vectors", NUM - 2, 3, 1, COV_F16);
  fail |= check_rows_add();
  fail |= check_fn("hard_swish", GPU_FN_HSWISH);
  fail |= check_fn("hard_sigmoid", GPU_FN_HSIGMOID);
  fail |= check_fn("gelu", GPU_FN_GELU);
  fail |= check_epilogue("epilogue hard_swish", GPU_ACT_HSWISH);
  fail |= check_epilogue("epilogue hard_sigmoid", GPU_ACT_HSIGMOID);
  fail |= check_epilogue("epilogue silu", GPU_ACT_SILU);
  fail |= check_epilogue("epilogue gelu_tanh", GPU_ACT_GELU_TANH);
  gpu_jit_targets_close(&g_targets);
  return fail;
}
