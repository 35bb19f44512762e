/* backends/gpu/gpu_lower_ew.c: the generic kernels of a compiled model
 * (gpu_ew, gpu_mplan.h): copies, index-table gathers, element-wise and
 * broadcasting operations, pooling of any window, global pools, softmax,
 * layer and batch norm, and direct convolutions / matmuls for the shapes
 * the matrix kernel does not take.
 *
 * Correctness and coverage first: one thread per output element (per row
 * for softmax and layer norm, per channel for global pools), every size a
 * compile-time constant, reductions as IR loops in f32. The same meaning is
 * written once more in C (gpu_ew_emulate) for the CPU emulation of a whole
 * compiled model; tests/gpu checks that emulation against the reference
 * interpreter. Arguments: (x, w, y, bias), global pointers; x, w, bias f32;
 * y f32 or f16 (operand copies for the matrix kernels).
 *
 * long: lower_elem is one switch over the elementwise kinds, a short case each
 */
#include <math.h>

#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_mplan.h"

#define F(v) LLVMConstReal(g->f32, (v))

static LLVMValueRef fadd(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFAdd(g->b, x, y, ""); }
static LLVMValueRef fsub(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFSub(g->b, x, y, ""); }
static LLVMValueRef fmul(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFMul(g->b, x, y, ""); }
static LLVMValueRef fdiv(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFDiv(g->b, x, y, ""); }
static LLVMValueRef fgt(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFCmp(g->b, LLVMRealOGT, x, y, "");
}
static LLVMValueRef sel(gpu_gen *g, LLVMValueRef c, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildSelect(g->b, c, x, y, "");
}
static LLVMValueRef ld(gpu_gen *g, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, base, idx), "");
}
static LLVMValueRef sub(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildSub(g->b, x, y, ""); }
/* e^x through the target's 2^x */
static LLVMValueRef fexp(gpu_gen *g, LLVMValueRef x) { return g->target->exp2(g, fmul(g, x, F(1.4426950408889634))); }
static LLVMValueRef fsqrt(gpu_gen *g, LLVMValueRef x) { return gpu_call_intrinsic(g, "llvm.sqrt", &g->f32, 1, &x, 1); }

/* erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), as the
 * matrix kernel's GELU epilogue */
static LLVMValueRef ferf(gpu_gen *g, LLVMValueRef z) {
  LLVMValueRef az = gpu_call_intrinsic(g, "llvm.fabs", &g->f32, 1, &z, 1);
  LLVMValueRef t = fdiv(g, F(1.0), fadd(g, F(1.0), fmul(g, az, F(0.3275911))));
  static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
  LLVMValueRef poly = F(a[4]);
  for (int i = 3; i >= 0; i--) poly = fadd(g, fmul(g, poly, t), F(a[i]));
  poly = fmul(g, poly, t);
  LLVMValueRef r = fsub(g, F(1.0), fmul(g, poly, fexp(g, LLVMBuildFNeg(g->b, fmul(g, az, az), ""))));
  return sel(g, LLVMBuildFCmp(g->b, LLVMRealOLT, z, F(0.0), ""), LLVMBuildFNeg(g->b, r, ""), r);
}
/* tanh(x) = 1 - 2 / (e^{2x} + 1) (saturates correctly at both ends) */
static LLVMValueRef ftanh(gpu_gen *g, LLVMValueRef x) {
  return fsub(g, F(1.0), fdiv(g, F(2.0), fadd(g, fexp(g, fmul(g, x, F(2.0))), F(1.0))));
}

static LLVMValueRef apply(gpu_gen *g, gpu_ew_fn fn, float p0, float p1, LLVMValueRef x, LLVMValueRef y) {
  switch (fn) {
  case GPU_FN_NONE: return x;
  case GPU_FN_RELU: return sel(g, fgt(g, x, F(0.0)), x, F(0.0));
  case GPU_FN_CLIP: {
    LLVMValueRef v = sel(g, LLVMBuildFCmp(g->b, LLVMRealOLT, x, F(p0), ""), F(p0), x);
    return sel(g, fgt(g, v, F(p1)), F(p1), v);
  }
  case GPU_FN_SIGMOID: return fdiv(g, F(1.0), fadd(g, F(1.0), fexp(g, LLVMBuildFNeg(g->b, x, ""))));
  case GPU_FN_TANH: return ftanh(g, x);
  case GPU_FN_GELU: return fmul(g, fmul(g, x, F(0.5)), fadd(g, F(1.0), ferf(g, fmul(g, x, F(0.7071067811865476)))));
  case GPU_FN_GELU_TANH: {
    LLVMValueRef in = fmul(g, F(0.7978845608028654), fadd(g, x, fmul(g, F(0.044715), fmul(g, x, fmul(g, x, x)))));
    return fmul(g, fmul(g, x, F(0.5)), fadd(g, F(1.0), ftanh(g, in)));
  }
  case GPU_FN_EXP: return fexp(g, x);
  case GPU_FN_SQRT: return fsqrt(g, x);
  case GPU_FN_ABS: return gpu_call_intrinsic(g, "llvm.fabs", &g->f32, 1, &x, 1);
  case GPU_FN_NEG: return LLVMBuildFNeg(g->b, x, "");
  case GPU_FN_LEAKY: return sel(g, fgt(g, x, F(0.0)), x, fmul(g, x, F(p0)));
  case GPU_FN_ERF: return ferf(g, x);
  case GPU_FN_ADD: return fadd(g, x, y);
  case GPU_FN_SUB: return fsub(g, x, y);
  case GPU_FN_MUL: return fmul(g, x, y);
  case GPU_FN_DIV: return fdiv(g, x, y);
  case GPU_FN_MAX: return sel(g, fgt(g, y, x), y, x);
  case GPU_FN_MIN: return sel(g, LLVMBuildFCmp(g->b, LLVMRealOLT, y, x, ""), y, x);
  }
  return x;
}

static void store_out(gpu_gen *g, const gpu_ew *e, LLVMValueRef y, LLVMValueRef idx, LLVMValueRef v) {
  if (e->out_dtype == COV_F16) {
    LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, v, g->f16, ""), gept(g, g->f16, y, idx));
  } else {
    LLVMBuildStore(g->b, v, gept(g, g->f32, y, idx));
  }
}

/* post-ops on an output value: bias (by `bidx`), then the activation */
static LLVMValueRef post(gpu_gen *g, const gpu_ew *e, LLVMValueRef v, LLVMValueRef bias, LLVMValueRef bidx) {
  if (e->bias) v = fadd(g, v, ld(g, bias, bidx));
  return apply(g, e->post, e->post0, e->post1, v, NULL);
}

/* A counted loop whose body the callback-free caller writes between open
 * and close, with one f32 accumulator. */
typedef struct acc_loop {
  gpu_loop l;
  LLVMValueRef acc, start;
} acc_loop;
static LLVMValueRef acc_open(gpu_gen *g, acc_loop *a, long long n, LLVMValueRef start) {
  a->start = start;
  LLVMValueRef i = loop_open(g, &a->l, C(0), n, 1);
  a->acc = LLVMBuildPhi(g->b, g->f32, "acc");
  LLVMAddIncoming(a->acc, &start, &a->l.pre, 1);
  return i;
}
static LLVMValueRef acc_close(gpu_gen *g, acc_loop *a, LLVMValueRef next) {
  LLVMValueRef out;
  loop_close(g, &a->l, 1, &a->acc, &next, &a->start, &out);
  return out;
}

static void lower_rows(gpu_gen *g, const gpu_ew *e, LLVMValueRef row, LLVMValueRef x, LLVMValueRef w, LLVMValueRef y,
                       LLVMValueRef bias) {
  long long N = e->cols;
  LLVMValueRef base = mul(g, row, C(N));
  acc_loop a;
  if (e->kind == GPU_EW_SOFTMAX) {
    LLVMValueRef c = acc_open(g, &a, N, F(-INFINITY));
    LLVMValueRef v = ld(g, x, add(g, base, c));
    LLVMValueRef mx = acc_close(g, &a, sel(g, fgt(g, v, a.acc), v, a.acc));
    c = acc_open(g, &a, N, F(0.0));
    LLVMValueRef s = acc_close(g, &a, fadd(g, a.acc, fexp(g, fsub(g, ld(g, x, add(g, base, c)), mx))));
    LLVMValueRef inv = fdiv(g, F(1.0), s);
    gpu_loop l;
    c = loop_open(g, &l, C(0), N, 1);
    LLVMValueRef r = fmul(g, fexp(g, fsub(g, ld(g, x, add(g, base, c)), mx)), inv);
    store_out(g, e, y, add(g, base, c), post(g, e, r, bias, c));
    loop_close(g, &l, 0, NULL, NULL, NULL, NULL);
    return;
  }
  /* layer norm: mean, then the biased variance, over the row */
  LLVMValueRef c = acc_open(g, &a, N, F(0.0));
  LLVMValueRef mean = fdiv(g, acc_close(g, &a, fadd(g, a.acc, ld(g, x, add(g, base, c)))), F((double)N));
  c = acc_open(g, &a, N, F(0.0));
  LLVMValueRef d = fsub(g, ld(g, x, add(g, base, c)), mean);
  LLVMValueRef var = fdiv(g, acc_close(g, &a, fadd(g, a.acc, fmul(g, d, d))), F((double)N));
  LLVMValueRef inv = fdiv(g, F(1.0), fsqrt(g, fadd(g, var, F(e->p0))));
  gpu_loop l;
  c = loop_open(g, &l, C(0), N, 1);
  LLVMValueRef r = fmul(g, fmul(g, fsub(g, ld(g, x, add(g, base, c)), mean), inv), ld(g, w, c));
  r = fadd(g, r, ld(g, bias, c));
  store_out(g, e, y, add(g, base, c), apply(g, e->post, e->post0, e->post1, r, NULL));
  loop_close(g, &l, 0, NULL, NULL, NULL, NULL);
}

/* 4-D coordinates of flat index i in shape s */
static void coords4(gpu_gen *g, LLVMValueRef i, const int64_t s[4], LLVMValueRef c[4]) {
  for (int d = 3; d >= 0; d--) {
    c[d] = d ? urem(g, i, s[d]) : i;
    if (d) i = udiv(g, i, s[d]);
  }
}
static LLVMValueRef bcast_index(gpu_gen *g, LLVMValueRef c[4], const int64_t s[4]) {
  LLVMValueRef idx = C(0);
  for (int d = 0; d < 4; d++) idx = add(g, mul(g, idx, C(s[d])), s[d] == 1 ? C(0) : c[d]);
  return idx;
}

static void lower_elem(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef w, LLVMValueRef y,
                       LLVMValueRef bias) {
  switch (e->kind) {
  case GPU_EW_COPY: {
    /* gpu_ew_copy_at */
    LLVMValueRef s = add(g, i, C(e->s0)), d = add(g, i, C(e->d0));
    if (e->run) {
      LLVMValueRef j = urem(g, i, e->run), t = udiv(g, i, e->run);
      s = add(g, C(e->s0), j), d = add(g, C(e->d0), j);
      for (int l = 0; l < GPU_COPY_LEVELS; l++) {
        if (e->rep[l] == 1) continue;
        LLVMValueRef r = l < GPU_COPY_LEVELS - 1 ? urem(g, t, e->rep[l]) : t;
        s = add(g, s, mul(g, r, C(e->ss[l]))), d = add(g, d, mul(g, r, C(e->ds[l])));
        if (l < GPU_COPY_LEVELS - 1) t = udiv(g, t, e->rep[l]);
      }
    }
    store_out(g, e, y, d, ld(g, x, s));
    return;
  }
  case GPU_EW_TABLE: {
    LLVMValueRef t = LLVMBuildLoad2(g->b, g->i32, gept(g, g->i32, w, i), "");
    LLVMBasicBlockRef join;
    begin_if(g, LLVMBuildICmp(g->b, LLVMIntSGE, t, C(0), ""), &join);
    store_out(g, e, y, i, ld(g, x, t));
    end_if(g, join);
    return;
  }
  case GPU_EW_UNARY: store_out(g, e, y, i, post(g, e, apply(g, e->fn, e->p0, e->p1, ld(g, x, i), NULL), bias, C(0))); return;
  case GPU_EW_BINARY: {
    LLVMValueRef c[4];
    coords4(g, i, e->y, c);
    LLVMValueRef va = ld(g, x, bcast_index(g, c, e->a)), vb = ld(g, w, bcast_index(g, c, e->b));
    store_out(g, e, y, i, post(g, e, apply(g, e->fn, 0, 0, va, vb), bias, C(0)));
    return;
  }
  case GPU_EW_BIAS: {
    LLVMValueRef ch = urem(g, udiv(g, i, e->H), e->C);
    store_out(g, e, y, i, apply(g, e->post, e->post0, e->post1, fadd(g, ld(g, x, i), ld(g, w, ch)), NULL));
    return;
  }
  case GPU_EW_BATCHNORM: {
    LLVMValueRef ch = urem(g, udiv(g, i, e->H), e->C);
    LLVMValueRef sc = ld(g, w, ch), bi = ld(g, w, add(g, ch, C(e->C))), mean = ld(g, w, add(g, ch, C(2 * e->C)));
    LLVMValueRef var = ld(g, w, add(g, ch, C(3 * e->C)));
    LLVMValueRef v = fdiv(g, fsub(g, ld(g, x, i), mean), fsqrt(g, fadd(g, var, F(e->p0))));
    store_out(g, e, y, i, apply(g, e->post, e->post0, e->post1, fadd(g, fmul(g, v, sc), bi), NULL));
    return;
  }
  case GPU_EW_POOL: {
    /* i = ((n*C + c)*P + p)*Q + q; padding: -inf for max, not counted for
     * the average unless count_include_pad */
    LLVMValueRef q = urem(g, i, e->Q), t = udiv(g, i, e->Q), p = urem(g, t, e->P), nc = udiv(g, t, e->P);
    LLVMValueRef ih0 = sub(g, mul(g, p, C(e->sh)), C(e->pt)), iw0 = sub(g, mul(g, q, C(e->sw)), C(e->pl));
    int is_max = e->fn == GPU_FN_MAX;
    LLVMValueRef acc = is_max ? F(-INFINITY) : F(0.0), cnt = F(0.0);
    for (int r = 0; r < e->R; r++)
      for (int s = 0; s < e->S; s++) {
        LLVMValueRef ih = add(g, ih0, C((long long)r * e->dh)), iw = add(g, iw0, C((long long)s * e->dw));
        LLVMValueRef ok = and1(g, ult(g, ih, e->H), ult(g, iw, e->W));
        LLVMValueRef at = sel(g, ok, add(g, mul(g, nc, C(e->H * e->W)), add(g, mul(g, ih, C(e->W)), iw)), C(0));
        LLVMValueRef v = ld(g, x, at);
        if (is_max) {
          v = sel(g, ok, v, F(-INFINITY));
          acc = sel(g, fgt(g, v, acc), v, acc);
        } else {
          acc = fadd(g, acc, sel(g, ok, v, F(0.0)));
          cnt = fadd(g, cnt, sel(g, ok, F(1.0), F(0.0)));
        }
      }
    if (!is_max) acc = fdiv(g, acc, e->count_include_pad ? F((double)(e->R * e->S)) : cnt);
    store_out(g, e, y, i, post(g, e, acc, bias, C(0)));
    return;
  }
  case GPU_EW_GPOOL: {
    long long hw = e->H * e->W;
    acc_loop a;
    int is_max = e->fn == GPU_FN_MAX;
    LLVMValueRef k = acc_open(g, &a, hw, is_max ? F(-INFINITY) : F(0.0));
    LLVMValueRef v = ld(g, x, add(g, mul(g, i, C(hw)), k));
    LLVMValueRef r = acc_close(g, &a, is_max ? sel(g, fgt(g, v, a.acc), v, a.acc) : fadd(g, a.acc, v));
    if (!is_max) r = fdiv(g, r, F((double)hw));
    store_out(g, e, y, i, post(g, e, r, bias, C(0)));
    return;
  }
  case GPU_EW_CONV: {
    /* i = ((n*K + k)*P + p)*Q + q; sum over (c, r, s) of the group */
    LLVMValueRef q = urem(g, i, e->Q), t = udiv(g, i, e->Q), p = urem(g, t, e->P), t2 = udiv(g, t, e->P);
    LLVMValueRef k = urem(g, t2, e->K), n = udiv(g, t2, e->K);
    long long cg = e->C / e->groups, kg = e->K / e->groups, rs = e->R * e->S;
    LLVMValueRef c0 = mul(g, udiv(g, k, kg), C(cg));
    LLVMValueRef ih0 = sub(g, mul(g, p, C(e->sh)), C(e->pt)), iw0 = sub(g, mul(g, q, C(e->sw)), C(e->pl));
    acc_loop a;
    LLVMValueRef j = acc_open(g, &a, cg * rs, F(0.0));
    LLVMValueRef c = udiv(g, j, rs), r = udiv(g, urem(g, j, rs), e->S), s = urem(g, j, e->S);
    LLVMValueRef ih = add(g, ih0, mul(g, r, C(e->dh))), iw = add(g, iw0, mul(g, s, C(e->dw)));
    LLVMValueRef ok = and1(g, ult(g, ih, e->H), ult(g, iw, e->W));
    LLVMValueRef xi = add(g, mul(g, add(g, mul(g, n, C(e->C)), add(g, c0, c)), C(e->H * e->W)),
                          add(g, mul(g, ih, C(e->W)), iw));
    LLVMValueRef xv = sel(g, ok, ld(g, x, sel(g, ok, xi, C(0))), F(0.0));
    LLVMValueRef wv = ld(g, w, add(g, mul(g, k, C(cg * rs)), j));
    LLVMValueRef sum = acc_close(g, &a, fadd(g, a.acc, fmul(g, xv, wv)));
    store_out(g, e, y, i, post(g, e, sum, bias, k));
    return;
  }
  case GPU_EW_MATMUL: {
    LLVMValueRef col = urem(g, i, e->cols), t = udiv(g, i, e->cols), m = urem(g, t, e->M), gg = udiv(g, t, e->M);
    LLVMValueRef abase = mul(g, add(g, mul(g, mul(g, gg, C(e->ga)), C(e->M)), m), C(e->Kd));
    LLVMValueRef bbase = add(g, mul(g, mul(g, gg, C(e->gb)), C(e->Kd * e->cols)), col);
    acc_loop a;
    LLVMValueRef kk = acc_open(g, &a, e->Kd, F(0.0));
    LLVMValueRef v = fmul(g, ld(g, x, add(g, abase, kk)), ld(g, w, add(g, bbase, mul(g, kk, C(e->cols)))));
    LLVMValueRef sum = acc_close(g, &a, fadd(g, a.acc, v));
    store_out(g, e, y, i, post(g, e, sum, bias, col));
    return;
  }
  default: return;
  }
}

void gpu_ew_grid(const gpu_ew *e, unsigned grid[3]) {
  grid[0] = (unsigned)((e->n + GPU_EW_THREADS - 1) / GPU_EW_THREADS);
  grid[1] = grid[2] = 1;
}

cov_status gpu_lower_ew(const gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name) {
  if (e->kind == GPU_EW_CODELET) return gpu_lower_cdl(&e->cdl, target, mod, name);
  gpu_gen gg = {0}, *g = &gg;
  gpu_plan plan = {0};
  plan.prob.in_dtype = COV_F32;
  plan.threads = GPU_EW_THREADS;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, &plan, target, mod));
  if (e->n < 1 || e->n > INT32_MAX)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: %lld work items (1 .. 2^31-1 are lowered)", (long long)e->n);
  gpu_add_kernel(g, name);
  LLVMValueRef x = LLVMGetParam(g->fn, 0), w = LLVMGetParam(g->fn, 1), y = LLVMGetParam(g->fn, 2),
               bias = LLVMGetParam(g->fn, 3);
  LLVMValueRef i = add(g, mul(g, target->block_id(g, 0), C(GPU_EW_THREADS)), target->thread_id(g));
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, i, e->n), &join);
  if (e->kind == GPU_EW_SOFTMAX || e->kind == GPU_EW_LAYERNORM)
    lower_rows(g, e, i, x, w, y, bias);
  else
    lower_elem(g, e, i, x, w, y, bias);
  end_if(g, join);
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  return NULL;
}
