/* backends/gpu/gpu_lower_ew.c: the model compiler's own kernels (gpu_ew,
 * gpu_mplan.h): strided copies and index-table gathers (the layout work
 * between groups, dtype conversion to the destination's), the row gather
 * at run-time indices (gpu_lower_gather.c), and the direct
 * depthwise convolution with its fused bias and activation, the layer
 * normalisation (gpu_lower_ln.c); every other
 * compute call is its codelet's kernel (gpu_lower_cdl.c, dispatched here).
 *
 * One thread per output element, every size a compile-time constant, the
 * convolution's reduction an IR loop in f32. A copy transposing NHWC and
 * NCHW (gpu_ct_kind) runs its threads on NHWC elements where every access
 * is NHWC, else a tile per workgroup through shared memory, so neither
 * side is read or written at a stride of C or H*W elements; a contiguous
 * f32 copy moves 4 elements a thread. gpu_ew_emulate (gpu_ew_emu.c)
 * is the same meaning in C for the CPU emulation of a compiled model.
 * Arguments: (x, w, y, bias), global pointers; x, w, bias f32 (a copy's x
 * f16 with in_dtype f16); y f32 or f16 (operand copies for the matrix
 * kernels, channels-last activations); copies of integer or bool values
 * move their elements as they are (x and y of that dtype).
 */
#include <math.h>

#include "backends/gpu/gpu_gather.h"
#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_lnorm.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_pool.h"
#include "backends/gpu/gpu_qdot.h"

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

/* clip(v, 0, 1) */
static LLVMValueRef unit(gpu_gen *g, LLVMValueRef v) {
  v = sel(g, LLVMBuildFCmp(g->b, LLVMRealOLT, v, F(0.0), ""), F(0.0), v);
  return sel(g, fgt(g, v, F(1.0)), F(1.0), v);
}

static LLVMValueRef apply(gpu_gen *g, gpu_ew_fn fn, float p0, float p1, LLVMValueRef x) {
  switch (fn) {
  case GPU_FN_HSWISH: return fmul(g, unit(g, fadd(g, fmul(g, x, F(1.0 / 6.0)), F(0.5))), x);
  case GPU_FN_HSIGMOID: return unit(g, fadd(g, fmul(g, x, F(p0)), F(p1)));
  case GPU_FN_NONE: return x;
  case GPU_FN_RELU: return sel(g, fgt(g, x, F(0.0)), x, F(0.0));
  case GPU_FN_CLIP: {
    LLVMValueRef v = sel(g, LLVMBuildFCmp(g->b, LLVMRealOLT, x, F(p0), ""), F(p0), x);
    return sel(g, fgt(g, v, F(p1)), F(p1), v);
  }
  case GPU_FN_GELU: return fmul(g, fmul(g, x, F(0.5)), fadd(g, F(1.0), ferf(g, fmul(g, x, F(0.7071067811865476)))));
  case GPU_FN_SILU: return fdiv(g, x, fadd(g, F(1.0), fexp(g, LLVMBuildFNeg(g->b, x, ""))));
  case GPU_FN_SIGMOID: return fdiv(g, F(1.0), fadd(g, F(1.0), fexp(g, LLVMBuildFNeg(g->b, x, ""))));
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

/* y[d] = x[s]: f32 converted to y's dtype, or a whole element moved as it
 * is where the copy's dtype is an integer or bool one (gpu_ew_raw) */
static void move(gpu_gen *g, const gpu_ew *e, LLVMValueRef x, LLVMValueRef s, LLVMValueRef y, LLVMValueRef d) {
  size_t es = gpu_ew_raw(e);
  if (!es) {
    store_out(g, e, y, d, ld(g, x, s));
    return;
  }
  LLVMTypeRef t = es == 8 ? g->i64 : es == 4 ? g->i32 : LLVMInt8TypeInContext(LLVMGetModuleContext(g->mod));
  LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, t, gept(g, t, x, s), ""), gept(g, t, y, d));
}
/* gpu_ew_copy_at */
/* NCHW element d of [N][C][H][W] at its NHWC index */
static LLVMValueRef nhwc_index(gpu_gen *g, const gpu_ew *e, LLVMValueRef d) {
  long long hw = e->H * e->W;
  LLVMValueRef p = urem(g, d, hw), t = udiv(g, d, hw), c = urem(g, t, e->C), n = udiv(g, t, e->C);
  return add(g, mul(g, add(g, mul(g, n, C(hw)), p), C(e->C)), c);
}

/* A float copy's value for destination d before an NCHW addend: x[s]
 * (f16 or f32), the per-channel scale, the NHWC addend at h (NULL: at
 * d's NHWC index). */
static LLVMValueRef copy_front(gpu_gen *g, const gpu_ew *e, LLVMValueRef x, LLVMValueRef w, LLVMValueRef addend,
                               LLVMValueRef s, LLVMValueRef d, LLVMValueRef h) {
  LLVMValueRef v = e->in_dtype == COV_F16
                       ? LLVMBuildFPExt(g->b, LLVMBuildLoad2(g->b, g->f16, gept(g, g->f16, x, s), ""), g->f32, "")
                       : ld(g, x, s);
  if (e->mul_c > 0) { /* a per-channel scale, per image where mul_img says */
    LLVMValueRef at = urem(g, udiv(g, d, e->mul_hw), e->mul_c);
    if (e->mul_img > 0) at = add(g, mul(g, udiv(g, d, e->mul_img), C(e->mul_c)), at);
    v = fmul(g, v, apply(g, e->mul_fn, e->mul0, e->mul1, ld(g, w, at)));
  }
  if (e->bias == 2) /* the shortcut's channels-last f16 form */
    v = fadd(g, v, LLVMBuildFPExt(g->b, LLVMBuildLoad2(g->b, g->f16, gept(g, g->f16, addend, h ? h : nhwc_index(g, e, d)), ""),
                                  g->f32, ""));
  return v;
}

/* ... then the NCHW addend at d, the gate, the activation. */
static LLVMValueRef copy_back(gpu_gen *g, const gpu_ew *e, LLVMValueRef addend, LLVMValueRef d, LLVMValueRef v) {
  if (e->bias == 1) v = fadd(g, v, ld(g, addend, d));
  if (e->scale_hw > 0) { /* v * sigmoid(gate) */
    LLVMValueRef t = ld(g, addend, udiv(g, d, e->scale_hw));
    v = fdiv(g, v, fadd(g, F(1.0), fexp(g, LLVMBuildFNeg(g->b, t, ""))));
  }
  return apply(g, e->post, e->post0, e->post1, v);
}

static void lower_copy(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef w, LLVMValueRef y,
                       LLVMValueRef addend) {
  gpu_ct_shape sh;
  if (gpu_ew_transpose(e, &sh) == GPU_CT_REORDER) { /* thread i on NHWC element i: its NCHW item */
    LLVMValueRef c = urem(g, i, sh.c), q = udiv(g, i, sh.c);
    i = add(g, mul(g, add(g, mul(g, udiv(g, q, sh.hw), C(sh.c)), c), C(sh.hw)), urem(g, q, sh.hw));
  }
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
  if (gpu_ew_raw(e)) { /* integer or bool elements, moved whole */
    move(g, e, x, s, y, d);
    return;
  }
  LLVMValueRef v = copy_back(g, e, addend, d, copy_front(g, e, x, w, addend, s, d, NULL));
  if (e->also != 2) store_out(g, e, y, d, v);
  if (e->also) LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, v, g->f16, ""), gept(g, g->f16, w, nhwc_index(g, e, d)));
}

/* Element r (of GPU_CT_TILE^2 / GPU_EW_THREADS) of thread t in the tile
 * at channel c0, pixel q0 (pixels of every image in a row, q = n*HW + p):
 * channel-major (`nhwc`: neighbouring threads on neighbouring channels)
 * or pixel-major; whether it is inside the value, its NCHW index d, NHWC
 * index h and shared-memory slot. */
typedef struct ct_el {
  LLVMValueRef ok, d, h, slot;
} ct_el;
static ct_el ct_at(gpu_gen *g, const gpu_ct_shape *sh, int nhwc, int r, LLVMValueRef t, LLVMValueRef c0,
                   LLVMValueRef q0) {
  long long T = GPU_CT_TILE, rows = GPU_EW_THREADS / T;
  LLVMValueRef fast = urem(g, t, T), slow = add(g, udiv(g, t, T), C(r * rows));
  LLVMValueRef cl = nhwc ? fast : slow, ql = nhwc ? slow : fast, c = add(g, c0, cl), q = add(g, q0, ql);
  ct_el el;
  el.ok = and1(g, ult(g, c, sh->c), ult(g, q, sh->n * sh->hw));
  el.d = add(g, mul(g, add(g, mul(g, udiv(g, q, sh->hw), C(sh->c)), c), C(sh->hw)), urem(g, q, sh->hw));
  el.h = add(g, mul(g, q, C(sh->c)), c);
  el.slot = add(g, mul(g, cl, C(T + 1)), ql);
  return el;
}

/* The tiled transposing copy (GPU_CT_TILES): the source read along
 * channels into shared memory with the work an NHWC element takes, the
 * destination written along pixels with the rest of the fused work, and,
 * with `also`, a third pass storing the NHWC f16 form along channels. */
static void lower_tiled(gpu_gen *g, const gpu_ew *e, const gpu_ct_shape *sh, LLVMValueRef x, LLVMValueRef w,
                        LLVMValueRef y, LLVMValueRef addend) {
  long long T = GPU_CT_TILE, per = T * T / GPU_EW_THREADS, ct = (sh->c + T - 1) / T;
  LLVMValueRef t = g->target->thread_id(g), b = g->target->block_id(g, 0);
  LLVMValueRef c0 = mul(g, urem(g, b, ct), C(T)), q0 = mul(g, udiv(g, b, ct), C(T));
  LLVMValueRef sm = g->target->shared_array(g, gpu_ew_shared_bytes(e));
  LLVMBasicBlockRef join;
  for (int r = 0; r < per; r++) {
    ct_el el = ct_at(g, sh, 1, r, t, c0, q0);
    begin_if(g, el.ok, &join);
    LLVMBuildStore(g->b, copy_front(g, e, x, w, addend, el.h, el.d, el.h), gept(g, g->f32, sm, el.slot));
    end_if(g, join);
  }
  g->target->barrier(g);
  for (int r = 0; r < per; r++) {
    ct_el el = ct_at(g, sh, 0, r, t, c0, q0);
    begin_if(g, el.ok, &join);
    LLVMValueRef v = copy_back(g, e, addend, el.d, ld(g, sm, el.slot));
    if (e->also != 2) store_out(g, e, y, el.d, v);
    if (e->also) LLVMBuildStore(g->b, v, gept(g, g->f32, sm, el.slot));
    end_if(g, join);
  }
  if (!e->also) return;
  g->target->barrier(g);
  for (int r = 0; r < per; r++) {
    ct_el el = ct_at(g, sh, 1, r, t, c0, q0);
    begin_if(g, el.ok, &join);
    LLVMBuildStore(g->b, LLVMBuildFPTrunc(g->b, ld(g, sm, el.slot), g->f16, ""), gept(g, g->f16, w, el.h));
    end_if(g, join);
  }
}

/* i = ((n*K + k)*P + p)*Q + q; sum over (c, r, s) of the group, then the
 * bias and the activation */
static void lower_conv(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef w, LLVMValueRef y,
                       LLVMValueRef bias) {
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
  if (e->bias) sum = fadd(g, sum, ld(g, bias, k));
  store_out(g, e, y, i, apply(g, e->post, e->post0, e->post1, sum));
}

/* A depthwise conv (one channel per group, undilated, at most 64 taps,
 * rows of at least DW_RUN outputs) by output runs: work item u computes
 * DW_RUN consecutive outputs of one output row. The weights are loaded
 * once per item; each input row of the window is loaded once as
 * (DW_RUN - 1) * stride + S columns that the run's outputs share (ConvNeXt's
 * 7x7: 70 input and 49 weight loads for 4 outputs, where a thread per
 * output, lower_conv, makes 196 and 196, each behind a division of the tap
 * index). Each output sums its taps in (r, s) order from 0, as lower_conv
 * does. */
enum { DW_RUN = 4 };
static int dw_rows(const gpu_ew *e) {
  return e->kind == GPU_EW_CONV && e->groups == e->C && e->groups == e->K && e->R * e->S <= 64 && e->dh == 1 &&
         e->dw == 1 && e->Q >= DW_RUN;
}
static int64_t dw_items(const gpu_ew *e) { return e->N * e->K * e->P * ((e->Q + DW_RUN - 1) / DW_RUN); }

static void lower_dw_rows(gpu_gen *g, const gpu_ew *e, LLVMValueRef u, LLVMValueRef x, LLVMValueRef w, LLVMValueRef y,
                          LLVMValueRef bias) {
  long long runs = (e->Q + DW_RUN - 1) / DW_RUN, rs = e->R * e->S, cols = (DW_RUN - 1) * e->sw + e->S;
  LLVMValueRef q0 = mul(g, urem(g, u, runs), C(DW_RUN)), t = udiv(g, u, runs);
  LLVMValueRef p = urem(g, t, e->P), nk = udiv(g, t, e->P), k = urem(g, nk, e->K); /* nk = n * K + k: C == K */
  LLVMValueRef ih0 = sub(g, mul(g, p, C(e->sh)), C(e->pt)), iw0 = sub(g, mul(g, q0, C(e->sw)), C(e->pl));
  LLVMValueRef wv[64], acc[DW_RUN];
  for (long long i = 0; i < rs; i++) wv[i] = ld(g, w, add(g, mul(g, k, C(rs)), C(i)));
  for (int j = 0; j < DW_RUN; j++) acc[j] = F(0.0);
  for (long long r = 0; r < e->R; r++) {
    LLVMValueRef ih = add(g, ih0, C(r)), rok = ult(g, ih, e->H);
    LLVMValueRef base = mul(g, add(g, mul(g, nk, C(e->H)), ih), C(e->W));
    for (long long col = 0; col < cols; col++) {
      LLVMValueRef iw = add(g, iw0, C(col)), ok = and1(g, rok, ult(g, iw, e->W));
      LLVMValueRef xv = sel(g, ok, ld(g, x, sel(g, ok, add(g, base, iw), C(0))), F(0.0));
      for (int j = 0; j < DW_RUN; j++) {
        long long s = col - j * e->sw;
        if (s >= 0 && s < e->S) acc[j] = fadd(g, acc[j], fmul(g, xv, wv[r * e->S + s]));
      }
    }
  }
  LLVMValueRef bv = e->bias ? ld(g, bias, k) : NULL;
  for (int j = 0; j < DW_RUN; j++) {
    LLVMValueRef q = add(g, q0, C(j)), sum = bv ? fadd(g, acc[j], bv) : acc[j];
    LLVMBasicBlockRef join = NULL;
    if (e->Q % DW_RUN) begin_if(g, ult(g, q, e->Q), &join);
    store_out(g, e, y, add(g, mul(g, add(g, mul(g, nk, C(e->P)), p), C(e->Q)), q), apply(g, e->post, e->post0, e->post1, sum));
    if (join) end_if(g, join);
  }
}

static void lower_elem(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef w, LLVMValueRef y,
                       LLVMValueRef bias) {
  switch (e->kind) {
  case GPU_EW_COPY: lower_copy(g, e, i, x, w, y, bias); return;
  case GPU_EW_TABLE: {
    LLVMValueRef t = LLVMBuildLoad2(g->b, g->i32, gept(g, g->i32, w, i), "");
    LLVMBasicBlockRef join;
    begin_if(g, LLVMBuildICmp(g->b, LLVMIntSGE, t, C(0), ""), &join);
    move(g, e, x, t, y, i);
    end_if(g, join);
    return;
  }
  case GPU_EW_CONV: lower_conv(g, e, i, x, w, y, bias); return;
  case GPU_EW_ROWS: gpu_lower_rows(g, e, i, x, w, y, e->bias ? bias : NULL); return;
  default: return;
  }
}

/* Whether copy e's strided runs are exactly [n][hw][c] -> [n][c][hw],
 * items in destination order. */
static int is_transpose(const gpu_ew *e, gpu_ct_shape *sh) {
  int64_t c = e->rep[1], hw = e->rep[0], n = e->rep[2];
  *sh = (gpu_ct_shape){n, c, hw};
  return e->run == 1 && e->s0 == 0 && e->d0 == 0 && c > 1 && hw > 1 && e->ss[0] == c && e->ss[1] == 1 &&
         e->ds[0] == 1 && e->ds[1] == hw && (n == 1 || (e->ss[2] == c * hw && e->ds[2] == c * hw)) &&
         e->n == n * c * hw;
}

gpu_ct_kind gpu_ew_transpose(const gpu_ew *e, gpu_ct_shape *out) {
  gpu_ct_shape sh = {0};
  gpu_ct_kind k = GPU_CT_NONE;
  if (e->kind == GPU_EW_COPY && !gpu_ew_raw(e) && is_transpose(e, &sh)) {
    /* the NHWC side the fused work names (N, C, H, W) is this copy's source */
    int same = (e->bias != 2 && !e->also) || (e->N == sh.n && e->C == sh.c && e->H * e->W == sh.hw);
    k = !same ? GPU_CT_NONE : e->also == 2 && e->bias != 1 ? GPU_CT_REORDER : GPU_CT_TILES;
  }
  if (out) *out = sh;
  return k;
}

/* REORDER of f16 elements by a thread per 8 channels of a pixel (16-byte
 * loads and stores; C a multiple of 8, no per-element index work). */
static int reorder8(const gpu_ew *e, const gpu_ct_shape *sh, gpu_ct_kind k) {
  return k == GPU_CT_REORDER && sh->c % 8 == 0 && e->in_dtype == COV_F16 && !e->mul_c && !e->scale_hw;
}

/* A contiguous f32 copy (an f16 operand, a Concat part) by a thread per 4
 * elements: 16-byte loads, 8- or 16-byte stores (offsets and count
 * multiples of 4, only an activation fused). */
static int flat4(const gpu_ew *e) {
  return e->kind == GPU_EW_COPY && !gpu_ew_raw(e) && e->run == 0 && e->in_dtype != COV_F16 &&
         (e->out_dtype == COV_F32 || e->out_dtype == COV_F16) && e->n % 4 == 0 &&
         e->s0 % 4 == 0 && e->d0 % 4 == 0 && !e->bias && !e->also && !e->mul_c && !e->scale_hw;
}

void gpu_ew_grid(const gpu_ew *e, unsigned grid[3]) {
  gpu_ct_shape sh;
  gpu_ct_kind k = gpu_ew_transpose(e, &sh);
  int64_t t = GPU_CT_TILE, tiles = (sh.c + t - 1) / t * ((sh.n * sh.hw + t - 1) / t);
  int64_t items = reorder8(e, &sh, k) ? e->n / 8 : flat4(e) ? e->n / 4 : dw_rows(e) ? dw_items(e) : e->n;
  grid[0] = (unsigned)(k == GPU_CT_TILES ? tiles : (items + GPU_EW_THREADS - 1) / GPU_EW_THREADS);
  grid[1] = grid[2] = 1;
}

/* flat4's thread i: elements 4i .. 4i+3. */
static void lower_flat4(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef vt = LLVMVectorType(g->f32, 4), ot = LLVMVectorType(e->out_dtype == COV_F16 ? g->f16 : g->f32, 4);
  LLVMValueRef j = mul(g, i, C(4)), vx = LLVMBuildLoad2(g->b, vt, gept(g, g->f32, x, add(g, j, C(e->s0))), "");
  LLVMSetAlignment(vx, 16);
  LLVMValueRef out = LLVMGetUndef(ot);
  for (int k = 0; k < 4; k++) {
    LLVMValueRef v = apply(g, e->post, e->post0, e->post1, LLVMBuildExtractElement(g->b, vx, C(k), ""));
    if (e->out_dtype == COV_F16) v = LLVMBuildFPTrunc(g->b, v, g->f16, "");
    out = LLVMBuildInsertElement(g->b, out, v, C(k), "");
  }
  LLVMTypeRef et = e->out_dtype == COV_F16 ? g->f16 : g->f32;
  LLVMSetAlignment(LLVMBuildStore(g->b, out, gept(g, et, y, add(g, j, C(e->d0)))), e->out_dtype == COV_F16 ? 8 : 16);
}

/* reorder8's thread i: NHWC elements 8i .. 8i+7, as lower_copy computes
 * each (the shortcut's f16 form at the same index, the activation, the
 * f16 store). */
static void lower_reorder8(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef w,
                           LLVMValueRef addend) {
  LLVMTypeRef vt = LLVMVectorType(g->f16, 8);
  LLVMValueRef j = mul(g, i, C(8)), vx = LLVMBuildLoad2(g->b, vt, gept(g, g->f16, x, j), ""), va = NULL;
  LLVMSetAlignment(vx, 16);
  if (e->bias == 2) va = LLVMBuildLoad2(g->b, vt, gept(g, g->f16, addend, j), ""), LLVMSetAlignment(va, 16);
  LLVMValueRef out = LLVMGetUndef(vt);
  for (int k = 0; k < 8; k++) {
    LLVMValueRef at = C(k), v = LLVMBuildFPExt(g->b, LLVMBuildExtractElement(g->b, vx, at, ""), g->f32, "");
    if (va) v = fadd(g, v, LLVMBuildFPExt(g->b, LLVMBuildExtractElement(g->b, va, at, ""), g->f32, ""));
    v = apply(g, e->post, e->post0, e->post1, v);
    out = LLVMBuildInsertElement(g->b, out, LLVMBuildFPTrunc(g->b, v, g->f16, ""), at, "");
  }
  LLVMSetAlignment(LLVMBuildStore(g->b, out, gept(g, g->f16, w, j)), 16);
}

/* a tile of f32 with rows of GPU_CT_TILE + 1 (no bank conflicts either way) */
unsigned gpu_ew_shared_bytes(const gpu_ew *e) {
  if (e->kind == GPU_EW_LNORM) return gpu_ln_shared_bytes(e);
  if (e->kind == GPU_EW_MAXPOOL || e->kind == GPU_EW_GAVGPOOL) return gpu_pool_shared_bytes(e);
  if (e->kind == GPU_EW_SEHEAD) return gpu_se_shared_bytes(e);
  return gpu_ew_transpose(e, NULL) == GPU_CT_TILES ? GPU_CT_TILE * (GPU_CT_TILE + 1) * 4 : 0;
}

cov_status gpu_lower_ew(const gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name) {
  if (e->kind == GPU_EW_CODELET) return gpu_lower_cdl(&e->cdl, target, mod, name);
  if (e->kind == GPU_EW_QDOT) return gpu_lower_qdot(e, target, mod, name);
  if (e->kind == GPU_EW_SEHEAD) return gpu_lower_se(e, target, mod, name);
  gpu_gen gg = {0}, *g = &gg;
  gpu_plan plan = {0};
  plan.prob.in_dtype = COV_F32;
  plan.threads = GPU_EW_THREADS;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, &plan, target, mod));
  if (e->n < 1 || e->n > INT32_MAX)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: %lld work items (1 .. 2^31-1 are lowered)", (long long)e->n);
  gpu_add_kernel_n(g, name, e->kind == GPU_EW_LNORM && e->dual ? 5 : 4);
  LLVMValueRef x = LLVMGetParam(g->fn, 0), w = LLVMGetParam(g->fn, 1), y = LLVMGetParam(g->fn, 2),
               bias = LLVMGetParam(g->fn, 3);
  cov_status st = NULL;
  gpu_ct_shape sh;
  gpu_ct_kind ct = gpu_ew_transpose(e, &sh);
  if (e->kind == GPU_EW_LNORM) {
    st = gpu_lower_lnorm(g, e, name, x, w, y, bias, e->dual ? LLVMGetParam(g->fn, 4) : NULL);
  } else if (e->kind == GPU_EW_MAXPOOL || e->kind == GPU_EW_GAVGPOOL) {
    st = gpu_lower_pool_ew(g, e, name, x, y);
  } else if (ct == GPU_CT_TILES) {
    lower_tiled(g, e, &sh, x, w, y, bias);
  } else if (reorder8(e, &sh, ct) || flat4(e)) {
    int r8 = reorder8(e, &sh, ct);
    LLVMValueRef i = gpu_grid_index(g, GPU_EW_THREADS);
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, i, e->n / (r8 ? 8 : 4)), &join);
    if (r8) lower_reorder8(g, e, i, x, w, bias);
    else lower_flat4(g, e, i, x, y);
    end_if(g, join);
  } else if (dw_rows(e)) {
    LLVMValueRef u = gpu_grid_index(g, GPU_EW_THREADS);
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, u, dw_items(e)), &join);
    lower_dw_rows(g, e, u, x, w, y, bias);
    end_if(g, join);
  } else {
    LLVMValueRef i = gpu_grid_index(g, GPU_EW_THREADS);
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, i, e->n), &join);
    lower_elem(g, e, i, x, w, y, bias);
    end_if(g, join);
  }
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  return st;
}
