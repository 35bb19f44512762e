/* tests/gpu/test_gpu_splitk_jit.c: the tiled matrix kernel with split-K
 * (plan.split, backends/gpu/gpu_lower_split.c) lowered with a host table
 * of target operations, run on this CPU through LLVM's JIT and compared
 * with naive loops.
 *
 * A workgroup's threads run as threads of their own (gpu_jit_run_grid:
 * asynchronous copies done at once, the FMA fragment on 16-bit inputs for
 * the "matrix" one, so the channels-last path with its staged epilogues
 * runs too); workgroups run one after another in a scrambled order, so a
 * different range of K arrives last in each tile.
 *
 * Each case runs twice in two workgroup orders: the outputs must be equal
 * bit for bit (the sum over ranges is in a fixed order), and the counters
 * zero after each run (the last workgroup resets them). Cases: matmuls
 * with M = 1, N and K not multiples of the tiles (K not of split x bk),
 * batches, every activation and the bias; convolutions through the NCHW
 * gather (K-offset table), the gather storing NHWC f16 from the registers
 * (prob.nhwc_out), channels-last ones with the staged NCHW store
 * and with NHWC f16 outputs or a residual addend (f32 NCHW out), and
 * channels-last ones whose input and output
 * channels the K and N tiles do not divide (zero-filled tails; f16
 * buffers end in NaNs, which a copy reading past them spreads); and
 * convolutions whose NCHW gather rounds an f32 input as it loads it or
 * applies a squeeze-excite gate to the f32
 * input as it loads it (prob.a_pro), over images whose rows share tiles.
 * With -t TARGET (repeatable) every split kernel is also built as that GPU
 * target's code object.
 * Usage: test_gpu_splitk_jit [-t TARGET]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_ref.h"
#include "backends/gpu/gpu_target.h"
#include "backends/gpu/gpu_tune.h"
#include "gpu_jit_harness.h"

/* gpu_lower behind the harness's pointer to what it lowers */
static cov_status lower_plan(const void *what, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower(what, ops, mod, fn);
}

/* ---- the reference ------------------------------------------------------------ */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float next(void) {
  return (float)(gpu_jit_unit(&rng) * 2.0 - 1.0);
}

static double act(const gpu_epilogue *e, double v) {
  switch (e->act) {
  case GPU_ACT_NONE: return v;
  case GPU_ACT_RELU: return v > 0 ? v : 0;
  case GPU_ACT_CLIP: return v < e->clip_lo ? e->clip_lo : v > e->clip_hi ? e->clip_hi : v;
  case GPU_ACT_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
  case GPU_ACT_HSWISH: return v * fmin(fmax(v / 6.0 + 0.5, 0.0), 1.0);
  case GPU_ACT_HSIGMOID: return fmin(fmax(e->clip_lo * v + e->clip_hi, 0.0), 1.0);
  case GPU_ACT_SILU: return v / (1.0 + exp(-v));
  case GPU_ACT_GELU_TANH: return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  }
  return v;
}

/* y = act(A B + bias) (+ res, a residual addend laid out as y) by naive
 * loops, as the kernel's output layout: matmul [G][M][N]; conv NCHW, or
 * NHWC with nhwc_io and no addend or with nhwc_out (input NHWC, weights
 * [R][S][C][K] with nhwc_io; OIHW and NCHW otherwise). Inputs as floats. */
static void reference(const gpu_plan *p, const float *x, const float *w, const float *bias, const float *res,
                      double *y) {
  const gpu_problem *q = &p->prob;
  if (q->kind == GPU_OP_MATMUL) {
    for (int64_t g = 0; g < q->batch; g++)
      for (int64_t m = 0; m < q->m; m++)
        for (int64_t n = 0; n < q->n; n++) {
          double s = q->epi.bias ? bias[n] : 0;
          for (int64_t k = 0; k < q->k; k++) s += (double)x[(g * q->m + m) * q->k + k] * w[(g * q->k + k) * q->n + n];
          int64_t r = p->out_rq ? m / p->out_rq * p->out_r1 + m % p->out_rq * p->out_r0 : m; /* permuted rows */
          int64_t at = (g * q->m + r) * q->n + n;
          y[at] = act(&q->epi, s) + (q->epi.residual ? res[at] : 0.0);
        }
    return;
  }
  int64_t OH = p->oh, OW = p->ow;
  for (int64_t b = 0; b < q->cn; b++)
    for (int64_t o = 0; o < q->ck; o++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double s = q->epi.bias ? bias[o] : 0;
          for (int64_t c = 0; c < q->cc; c++)
            for (int64_t r = 0; r < q->cr; r++)
              for (int64_t t = 0; t < q->cs; t++) {
                int64_t ih = oh * q->stride - q->pad + r * q->dilation, iw = ow * q->stride - q->pad + t * q->dilation;
                if (ih < 0 || iw < 0 || ih >= q->ch || iw >= q->cw) continue;
                double xv = q->nhwc_io ? x[((b * q->ch + ih) * q->cw + iw) * q->cc + c]
                                       : x[((b * q->cc + c) * q->ch + ih) * q->cw + iw];
                double wv = p->nhwc ? w[((r * q->cs + t) * q->cc + c) * q->ck + o] : w[((o * q->cc + c) * q->cr + r) * q->cs + t];
                s += xv * wv;
              }
          int64_t at = gpu_conv_out_nhwc(q) ? ((b * OH + oh) * OW + ow) * q->ck + o
                                                      : ((b * q->ck + o) * OH + oh) * OW + ow;
          y[at] = act(&q->epi, s) + (q->epi.residual ? res[at] : 0.0);
        }
}

/* ---- cases -------------------------------------------------------------------- */

static const gpu_target_caps k_caps = {.warp_size = 32,
                                       .max_threads = 1024,
                                       .shared_bytes = 232448,
                                       .regfile_bytes = 262144,
                                       .cores = 132,
                                       .n_tiles = 1,
                                       .tiles = {{4, 8, 4}},
                                       .has_async_copy = 1};
static const int k_shapes[1][3] = {{4, 8, 4}};

typedef struct split_case {
  const char *name;
  gpu_problem q;
  gpu_fixed_tile tile;
  bool want_nhwc, want_staged; /* the path the case is about */
  int64_t rows[3];              /* plan.out_rq, out_r0, out_r1 (0: rows as computed) */
  /* prob.a_pro: GPU_APRO_GATE (1), f32 input and a per-(image, channel)
   * gate (argument 7); GPU_APRO_CAST, f32 input rounded as loaded */
  gpu_a_prologue apro;
} split_case;

static void fill(float *v, int64_t n, cov_dtype d) {
  for (int64_t i = 0; i < n; i++) {
    v[i] = next();
    if (d == COV_F16) v[i] = cov_f16_to_f32(cov_f32_to_f16(v[i]));
  }
}

/* values as the kernel reads them (f32, or f16 bytes); 16 bytes of f16
 * NaNs past the end, so that a copy reading past a tensor (a tile's
 * channels past C not zero-filled) poisons the sums it reaches */
static void *pack(const float *v, int64_t n, cov_dtype d) {
  if (d == COV_F32) {
    float *o = malloc((size_t)n * 4 + 4);
    if (o) memcpy(o, v, (size_t)n * 4);
    return o;
  }
  uint16_t *o = malloc((size_t)n * 2 + 16);
  for (int64_t i = 0; o && i < n + 8; i++) o[i] = i < n ? cov_f32_to_f16(v[i]) : 0x7e00;
  return o;
}

static int check_out(const char *name, const gpu_plan *p, const void *out, const double *want, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double got = p->out_f16 ? cov_f16_to_f32(((const uint16_t *)out)[i]) : ((const float *)out)[i];
    double tol = p->out_f16 ? 2e-3 * fabs(want[i]) + 2e-3 : 1e-5 * fabs(want[i]) + 2e-5;
    if (!(fabs(got - want[i]) <= tol)) {
      fprintf(stderr, "FAIL %s: output %lld: got %.7g, want %.7g\n", name, (long long)i, got, want[i]);
      return 1;
    }
  }
  return 0;
}

static int run_case(const split_case *c) {
  gpu_plan p;
  cov_status st = gpu_plan_fixed(&c->q, &k_caps, k_shapes, 1, &c->tile, &p);
  if (st) {
    fprintf(stderr, "FAIL %s: no plan: ", c->name);
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  p.out_rq = c->rows[0], p.out_r0 = c->rows[1], p.out_r1 = c->rows[2];
  p.prob.a_pro = c->apro;
  if (p.out_rq || c->apro) st = gpu_plan_check(&p, &k_caps);
  if (st) {
    fprintf(stderr, "FAIL %s: permuted rows refused: ", c->name);
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  if (p.split != c->tile.split || p.nhwc != c->want_nhwc || p.staged != c->want_staged || p.vector_copy) {
    fprintf(stderr, "FAIL %s: plan split %d nhwc %d staged %d, not %d %d %d\n", c->name, p.split, p.nhwc, p.staged,
            c->tile.split, c->want_nhwc, c->want_staged);
    return 1;
  }
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(&p, &na, &nb, &no, &nbias);
  cov_dtype in = c->q.in_dtype;
  int64_t nws = gpu_split_ws_floats(&p), ncnt = gpu_split_counters(&p);
  float *x = malloc(na * 4 + 4), *w = malloc(nb * 4 + 4), *bias = malloc(nbias * 4 + 4), *ws = malloc((size_t)nws * 4);
  float *res = malloc(no * 4 + 4); /* the residual addend, laid out as the output */
  /* a gated conv: the gate [N][C] in (0, 1) and the operand the kernel
   * makes of the f32 input, each product rounded to f16 */
  const gpu_problem *gq = &c->q;
  float *gate = malloc((size_t)(gq->cn * gq->cc) * 4 + 4), *xg = malloc(na * 4 + 4);
  double *want = malloc(no * sizeof *want + 8);
  size_t ob = p.out_f16 ? 2 : 4;
  unsigned char *out[2] = {malloc(no * ob + 4), malloc(no * ob + 4)};
  uint32_t *cnt = calloc((size_t)ncnt + 1, 4);
  void *xi = NULL, *wi = NULL;
  int bad = !x || !w || !bias || !ws || !res || !want || !out[0] || !out[1] || !cnt || !gate || !xg;
  if (!bad && c->apro) {
    in = COV_F32;
    for (int64_t i = 0; i < gq->cn * gq->cc; i++) gate[i] = 0.5f + 0.5f * next();
  }
  if (!bad) {
    fill(x, (int64_t)na, in), fill(w, (int64_t)nb, c->q.in_dtype), fill(bias, (int64_t)nbias, COV_F32);
    int64_t ghw = gq->ch * gq->cw;
    for (size_t i = 0; i < na; i++)
      xg[i] = c->apro == GPU_APRO_GATE ? gpu_jit_h16(x[i] * gate[(int64_t)i / ghw])
              : c->apro == GPU_APRO_CAST ? gpu_jit_h16(x[i])
                                         : x[i];
    fill(res, (int64_t)no, COV_F32);
    xi = pack(x, (int64_t)na, in), wi = pack(w, (int64_t)nb, c->q.in_dtype);
    /* a channels-last kernel of an NCHW layer reads the transform's NHWC
     * workspace (its pre-kernel): given here as that */
    if (xi && p.nhwc && !c->q.nhwc_io) {
      const gpu_problem *q = &c->q;
      int64_t hw = q->ch * q->cw;
      uint16_t *t = xi;
      for (int64_t b = 0; b < q->cn; b++)
        for (int64_t ch = 0; ch < q->cc; ch++)
          for (int64_t j = 0; j < hw; j++) t[(b * hw + j) * q->cc + ch] = cov_f32_to_f16(x[(b * q->cc + ch) * hw + j]);
    }
    bad = !xi || !wi;
  }
  gpu_jit_kernel k = {0};
  if (!bad) bad = gpu_jit_compile_groups(c->name, lower_plan, &p, &k);
  if (!bad) reference(&p, xg, w, bias, res, want);
  /* two orders: different ranges of K arrive last */
  static const int64_t strides[2] = {1000003, 7919};
  for (int r = 0; r < 2 && !bad; r++) {
    memset(out[r], 0xff, no * ob); /* NaN everywhere the kernel must write */
    for (int64_t i = 0; i < nws; i++) ws[i] = NAN;
    void *a[GPU_JIT_MAX_ARGS] = {xi,  wi,  out[r], c->q.epi.bias ? bias : NULL,
                                 ws,  cnt, c->q.epi.residual ? res : NULL, c->apro == GPU_APRO_GATE ? gate : NULL};
    bad = gpu_jit_run_grid(c->name, &k, p.grid, p.threads, strides[r], a);
    for (int64_t i = 0; i < ncnt && !bad; i++)
      if (cnt[i]) {
        fprintf(stderr, "FAIL %s: counter %lld is %u after the run, not 0\n", c->name, (long long)i, cnt[i]);
        bad = 1;
      }
    if (!bad) bad = check_out(c->name, &p, out[r], want, (int64_t)no);
  }
  if (!bad && memcmp(out[0], out[1], no * ob)) {
    fprintf(stderr, "FAIL %s: two workgroup orders give different bits\n", c->name);
    bad = 1;
  }
  if (k.jit) gpu_jit_kernel_free(&k);
  if (!bad) printf("ok %s: plan %dx%dx%d, %d threads, split %d x %d K tiles, grid %ux%ux%u\n", c->name, p.bm, p.bn, p.bk,
                   p.threads, p.split, p.split_kt, p.grid[0], p.grid[1], p.grid[2]);
  free(x), free(w), free(bias), free(ws), free(res), free(want), free(out[0]), free(out[1]), free(cnt), free(xi), free(wi);
  free(gate), free(xg);
  return bad;
}

/* The mapper's schedules of layers with few output tiles and long K, as a
 * model's compilation asks for them (split_ok), built as each target's
 * code object: the split kernels must emit (PTX: the counter's atomic add
 * and the device-scope fence). Where the target has channels-last
 * kernels, the conv is on channels-last tensors. */
static int build_targets(const gpu_jit_targets *ts) {
  int bad = 0;
  for (int i = 0; i < ts->n; i++) {
    const gpu_target *t = &ts->t[i];
    /* ResNet-18's layer4 3x3 conv at batch 1 (8 tiles of 64 channels,
     * K = 4608), and its classifier (M = 1, K = 512) */
    gpu_problem qs[2] = {{.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = 1, .cc = 512, .ch = 7, .cw = 7, .ck = 512,
                          .cr = 3, .cs = 3, .stride = 1, .pad = 1, .dilation = 1, .groups = 1,
                          .nhwc_io = t->caps.has_async_copy != 0, .split_ok = true},
                         {.kind = GPU_OP_MATMUL, .in_dtype = COV_F16, .batch = 1, .m = 1, .n = 1000, .k = 512,
                          .split_ok = true}};
    qs[0].epi.bias = qs[1].epi.bias = true, qs[0].epi.act = GPU_ACT_RELU;
    for (int j = 0; j < 2; j++) {
      gpu_plan p;
      const gpu_tune_entry *e;
      char *code = NULL;
      size_t size = 0;
      gpu_kernel_info info;
      cov_status st = gpu_plan_pick(t, &qs[j], &p, &e);
      if (!st && p.split < 2)
        st = cov_error(COV_INTERNAL, NULL, "the mapper does not split K of %s %d tiles", j ? "the classifier's" : "layer4's",
                       (int)gpu_split_tiles(&p));
      if (!st) st = gpu_build_kernel(t, &p, "covenant_split", 0, &code, &size, &info);
      if (!st && t->vendor->code_text && (!strstr(code, "atom.global.add") || !strstr(code, "fence.sc.gpu")))
        st = cov_error(COV_INTERNAL, NULL, "the PTX has no counter atomic or device fence");
      if (st) {
        fprintf(stderr, "FAIL build %d for %s: ", j, cov_acg_name(t->acg));
        cov_status_print(stderr, st, 0);
        bad = 1;
      } else {
        printf("ok build %s %d: tile %dx%dx%d%s, split %d x %d K tiles, grid %ux%ux%u\n", cov_acg_name(t->acg), j, p.bm,
               p.bn, p.bk, p.wgmma ? " warpgroup" : "", p.split, p.split_kt, p.grid[0], p.grid[1], p.grid[2]);
      }
      cov_status_free(st);
      free(code);
    }
  }
  return bad;
}

/* The mapper's schedules of SqueezeNet's fire module at batch 1 on
 * channels-last tensors with exact channels, where the target has
 * channels-last kernels: the squeeze conv (64 -> 16 channels, 55x55) on
 * narrow N tiles, the 3x3 expand conv (16 -> 64) on 32-byte K tiles; both
 * built as the target's code object. */
static int build_narrow(const gpu_jit_targets *ts) {
  int bad = 0;
  for (int i = 0; i < ts->n; i++) {
    const gpu_target *t = &ts->t[i];
    if (!t->caps.has_async_copy) continue;
    gpu_problem qs[2] = {{.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = 1, .cc = 64, .ch = 55, .cw = 55, .ck = 16,
                          .cr = 1, .cs = 1, .stride = 1, .dilation = 1, .groups = 1, .nhwc_io = true,
                          .exact_channels = true, .split_ok = true},
                         {.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = 1, .cc = 16, .ch = 55, .cw = 55, .ck = 64,
                          .cr = 3, .cs = 3, .stride = 1, .pad = 1, .dilation = 1, .groups = 1, .nhwc_io = true,
                          .exact_channels = true, .split_ok = true}};
    for (int j = 0; j < 2; j++) {
      qs[j].epi.bias = true, qs[j].epi.act = GPU_ACT_RELU;
      gpu_plan p;
      const gpu_tune_entry *e;
      char *code = NULL;
      size_t size = 0;
      gpu_kernel_info info;
      cov_status st = gpu_plan_pick(t, &qs[j], &p, &e);
      if (!st && (!p.nhwc || (j == 0 ? p.bn != 16 : p.bk != 16)))
        st = cov_error(COV_INTERNAL, NULL, "the %s conv's plan: nhwc %d, tile %dx%dx%d", j ? "expand" : "squeeze", p.nhwc,
                       p.bm, p.bn, p.bk);
      if (!st) st = gpu_build_kernel(t, &p, "covenant_narrow", 0, &code, &size, &info);
      if (st) {
        fprintf(stderr, "FAIL narrow build %d for %s: ", j, cov_acg_name(t->acg));
        cov_status_print(stderr, st, 0);
        bad = 1;
      } else {
        printf("ok narrow %s %d: tile %dx%dx%d warps %dx%d, %d stages, grid %ux%ux%u\n", cov_acg_name(t->acg), j, p.bm,
               p.bn, p.bk, p.wm, p.wn, p.stages, p.grid[0], p.grid[1], p.grid[2]);
      }
      cov_status_free(st);
      free(code);
    }
  }
  return bad;
}

static gpu_problem matmul(int64_t b, int64_t m, int64_t n, int64_t k, gpu_act a, bool bias) {
  gpu_problem q = {.kind = GPU_OP_MATMUL, .in_dtype = COV_F32, .batch = b, .m = m, .n = n, .k = k, .split_ok = true};
  q.epi.act = a, q.epi.bias = bias;
  q.epi.clip_lo = a == GPU_ACT_HSIGMOID ? 0.2f : 0.0f, q.epi.clip_hi = a == GPU_ACT_HSIGMOID ? 0.5f : 0.5f;
  return q;
}

/* a matmul whose epilogue adds a residual addend (a transformer's
 * projection with the residual Add) after bias and activation, its output
 * f32 or f16 */
static gpu_problem matmul_res(int64_t m, int64_t n, int64_t k, gpu_act a, bool out_f16) {
  gpu_problem q = matmul(1, m, n, k, a, true);
  q.epi.residual = true, q.out_f16 = out_f16;
  return q;
}

static gpu_problem f16_out(gpu_problem q) {
  q.out_f16 = true;
  return q;
}

/* a squeeze-excite projection: a 1x1 (or r x r) conv of n images whose
 * f32 input the kernel scales by a per-(image, channel) gate as it loads
 * it (prob.a_pro); 5x5 pixels, so tiles of 16 or 32 rows span images */
static gpu_problem gated(int64_t n, int64_t c, int64_t k, int64_t r) {
  gpu_problem q = {.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = n, .cc = c, .ch = 5, .cw = 5, .ck = k, .cr = r,
                   .cs = r, .stride = 1, .pad = r / 2, .dilation = 1, .groups = 1, .split_ok = true};
  q.epi.bias = true;
  return q;
}

/* a channels-last conv of n images adding a residual addend (ConvNeXt's
 * fc2 with the block's Add): f32 NCHW output */
static gpu_problem conv_res(gpu_problem q, int64_t n) {
  q.epi.residual = true, q.cn = n;
  return q;
}

static gpu_problem exact(gpu_problem q) {
  q.exact_channels = true;
  return q;
}

static gpu_problem conv(cov_dtype in, int64_t c, int64_t hw, int64_t k, int64_t r, int64_t stride, gpu_act a, bool cl) {
  gpu_problem q = {.kind = GPU_OP_CONV2D, .in_dtype = in, .cn = 1, .cc = c, .ch = hw, .cw = hw, .ck = k, .cr = r,
                   .cs = r, .stride = stride, .pad = r / 2, .dilation = 1, .groups = 1, .nhwc_io = cl, .split_ok = true};
  q.epi.act = a, q.epi.bias = true, q.epi.clip_lo = 0.0f, q.epi.clip_hi = 6.0f;
  return q;
}

static gpu_problem nhwc_out(gpu_problem q) {
  q.nhwc_out = true;
  return q;
}

int main(int argc, char **argv) {
  gpu_jit_targets ts = {0};
  for (int i = 1; i < argc; i++) {
    cov_status st = i + 1 < argc && !strcmp(argv[i], "-t") ? gpu_jit_target_add(&ts, argv[++i])
                                                            : cov_error(COV_INVALID_ARGUMENT, NULL, "usage: %s [-t TARGET]...", argv[0]);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      gpu_jit_targets_close(&ts);
      return 2;
    }
  }
  gpu_jit_init();
  /* f32 tiles 16x32x16 of 4 warps (8x16 each), or 32x32 with 8 warps */
  gpu_fixed_tile t16 = {.bm = 16, .bn = 32, .bk = 16, .wm = 8, .wn = 16, .stages = 2, .inflight = -1, .split = 3};
  gpu_fixed_tile t32 = {.bm = 32, .bn = 32, .bk = 16, .wm = 16, .wn = 8, .stages = 2, .inflight = -1, .split = 4};
  /* f16 channels-last: one warp's 16 rows x 16 channels, K tiles of one
   * tap's 16 channels */
  gpu_fixed_tile tcl = {.bm = 16, .bn = 16, .bk = 16, .wm = 16, .wn = 16, .stages = 3, .inflight = -1, .split = 5};
  gpu_fixed_tile t16_1 = t16, t32_2 = t32;
  t16_1.split = 1, t32_2.split = 2;
  gpu_fixed_tile tcl1 = tcl;
  tcl1.split = 1;
  /* the narrow channels-last tiles the mapper now ranks (map_gpu.c) */
  gpu_fixed_tile tn16 = {.bm = 128, .bn = 16, .bk = 64, .wm = 32, .wn = 16, .stages = 2, .inflight = -1, .split = 1};
  gpu_fixed_tile tn16s = tn16, tn32 = tn16;
  tn16s.stages = 3, tn16s.split = 2;
  tn32.bn = tn32.wn = 32, tn32.stages = 3;
  gpu_fixed_tile tk16 = {.bm = 128, .bn = 64, .bk = 16, .wm = 64, .wn = 32, .stages = 3, .inflight = -1, .split = 1};
  gpu_fixed_tile tk16n = {.bm = 64, .bn = 64, .bk = 16, .wm = 32, .wn = 32, .stages = 3, .inflight = -1, .split = 1};
  split_case cases[] = {
      /* M = 1 (a classifier at batch 1); 19 K tiles in ranges of 7, 7, 5 */
      {"matmul_m1", matmul(1, 1, 40, 300, GPU_ACT_NONE, true), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_relu", matmul(2, 37, 20, 200, GPU_ACT_RELU, true), t32, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_gelu", matmul(1, 5, 33, 200, GPU_ACT_GELU, true), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_hswish", matmul(1, 3, 70, 97, GPU_ACT_HSWISH, false), t32, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_hsigmoid", matmul(1, 9, 24, 161, GPU_ACT_HSIGMOID, true), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_silu", matmul(1, 2, 48, 100, GPU_ACT_SILU, true), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      /* the residual addend added once, by the workgroup summing the
       * partials (twice or never: off by the addend), M = 65 rows (a ViT's
       * tokens) past the tiles; f16 outputs (an operand of the next
       * matmul) from the tiled kernel, ragged too */
      {"matmul_residual", matmul_res(65, 48, 300, GPU_ACT_NONE, false), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_residual_f16", matmul_res(33, 64, 200, GPU_ACT_NONE, true), t32, false, false, {0, 0, 0}, GPU_APRO_NONE},
      /* rows of a [S = 13][B = 5] result stored batch-first ([B][S]: row
       * m at (m % 5) * 13 + m / 5), the addend read there too */
      {"matmul_residual_rows", matmul_res(65, 48, 300, GPU_ACT_NONE, false), t16, false, false, {5, 13, 1}, false},
      {"matmul_gelu_f16", f16_out(matmul(1, 17, 40, 161, GPU_ACT_GELU, true)), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"matmul_gelu_tanh_f16", f16_out(matmul(1, 17, 40, 161, GPU_ACT_GELU_TANH, true)), t16, false, false, {0, 0, 0}, GPU_APRO_NONE},
      /* the NCHW gather through the K-offset table, relu6 */
      {"conv_nchw", conv(COV_F32, 13, 7, 24, 3, 1, GPU_ACT_CLIP, false), t32, false, false, {0, 0, 0}, GPU_APRO_NONE},
      /* the NCHW gather storing NHWC f16 from the registers (nhwc_out: a
       * stem of 3 channels): 24 output channels in N tiles of 32 (the
       * edge guarded), 5x5 rows at stride 2, 11 channels' 7 K tiles split
       * over 4 ranges, and 3 channels unsplit; 32 channels of 8x8 rows
       * that the 16x32 tiles divide */
      {"conv_nchw_nhwc_out", nhwc_out(conv(COV_F16, 11, 9, 24, 3, 2, GPU_ACT_RELU, false)), t32, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"conv_nchw_nhwc_out_1", nhwc_out(conv(COV_F16, 3, 9, 24, 3, 2, GPU_ACT_CLIP, false)), t16_1, false, false, {0, 0, 0}, GPU_APRO_NONE},
      {"conv_nchw_nhwc_out_whole", nhwc_out(conv(COV_F16, 3, 8, 32, 3, 1, GPU_ACT_SILU, false)), t16_1, false, false, {0, 0, 0}, GPU_APRO_NONE},
      /* channels-last copies, the staged epilogue's NCHW stores (oh*ow % 4 == 0) */
      {"conv_cl_nchw", conv(COV_F16, 32, 4, 32, 3, 1, GPU_ACT_RELU, false), tcl, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* NHWC f16 in and out (a channels-last model's conv), 7x7 output: rows past M */
      {"conv_cl_nhwc_f16", conv(COV_F16, 48, 7, 16, 3, 1, GPU_ACT_SILU, true), tcl, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* channels the tiles do not divide (ConvNeXt's 40 / 160): C = 40 in K
       * tiles of 16 (each tap's third tile 8 channels and 8 zero-filled,
       * the last pixel's past the input's end), 24 output channels in N
       * tiles of 16 (the second half zero-filled, not stored); 27 K tiles
       * in 5 ranges */
      {"conv_cl_ctail_nhwc", conv(COV_F16, 40, 5, 24, 3, 1, GPU_ACT_GELU, true), tcl, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* a 1x1 conv, C = 24 (2 K tiles), 40 output channels (3 N tiles,
       * the last half empty), staged NCHW stores */
      {"conv_cl_ctail_nchw", conv(COV_F16, 24, 4, 40, 1, 1, GPU_ACT_RELU, false), tcl1, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* NHWC f16 in, f32 NCHW out with the residual addend added once (by
       * the workgroup summing the partials) and stored as 4 pixels: a 1x1
       * conv of 80 (40) -> 24 channels on 2 images of 4x4, split over 5 K
       * tiles (not split) */
      {"conv_cl_residual", conv_res(conv(COV_F16, 80, 4, 24, 1, 1, GPU_ACT_NONE, true), 2), tcl, true, true, {0, 0, 0}, GPU_APRO_NONE},
      {"conv_cl_residual_1", conv_res(conv(COV_F16, 40, 4, 24, 1, 1, GPU_ACT_RELU, true), 2), tcl1, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* narrow N tiles with exact channels (map_gpu.c cl_narrow: SqueezeNet's
       * squeeze convs): 128x16 tiles of 4 waves 32x16, K tiles of 64
       * channels, 16 output channels at 5x5 (25 rows of 128) */
      {"conv_cl_n16", exact(conv(COV_F16, 64, 5, 16, 1, 1, GPU_ACT_RELU, true)), tn16, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* 48 output channels in 3 N tiles of 16, 128 input channels in 2 K
       * tiles, 9x9 (81 rows), split over the 2 K tiles */
      {"conv_cl_n48", exact(conv(COV_F16, 128, 9, 48, 1, 1, GPU_ACT_RELU, true)), tn16s, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* 32 channels in one N tile of 32 (4 waves 32x32) */
      {"conv_cl_n32", exact(conv(COV_F16, 64, 6, 32, 1, 1, GPU_ACT_NONE, true)), tn32, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* 32-byte K tiles (cl_short_k: an expand conv's 16 input channels):
       * a 3x3 conv of 16 -> 64 channels, one K tile per tap, and of 48 ->
       * 128 in 64x64 tiles, three per tap */
      {"conv_cl_k16", exact(conv(COV_F16, 16, 6, 64, 3, 1, GPU_ACT_RELU, true)), tk16, true, true, {0, 0, 0}, GPU_APRO_NONE},
      {"conv_cl_k16_c48", exact(conv(COV_F16, 48, 5, 128, 3, 1, GPU_ACT_RELU, true)), tk16n, true, true, {0, 0, 0}, GPU_APRO_NONE},
      /* the squeeze-excite gate applied while the NCHW gather loads A
       * (gpu_lower_gate.c): 3 images of 25 pixels (tiles of 16 and 32 rows
       * holding two images' rows), C = 20 (no channels-last copies), K
       * tiles past C; unsplit, split-K, and a 3x3 conv through the K-offset
       * table */
      {"conv_gate", gated(3, 20, 24, 1), t16_1, false, false, {0, 0, 0}, GPU_APRO_GATE},
      {"conv_gate_split", gated(3, 36, 40, 1), t32_2, false, false, {0, 0, 0}, GPU_APRO_GATE},
      {"conv_gate_3x3", gated(2, 12, 8, 3), t32_2, false, false, {0, 0, 0}, GPU_APRO_GATE},
      /* an f32 image rounded to f16 as the gather loads it (a stem's
       * input, GPU_APRO_CAST), stored NCHW or, split, NHWC f16 */
      {"conv_cast_3x3", gated(2, 3, 8, 3), t32_2, false, false, {0, 0, 0}, GPU_APRO_CAST},
      {"conv_cast_nhwc_out", nhwc_out(gated(3, 11, 24, 3)), t32_2, false, false, {0, 0, 0}, GPU_APRO_CAST},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) fails += run_case(&cases[i]);
  fails += build_targets(&ts);
  fails += build_narrow(&ts);
  gpu_jit_targets_close(&ts);
  if (fails) fprintf(stderr, "%d split-K case(s) failed\n", fails);
  return fails != 0;
}
