/* backends/gpu/gpu_lower_qdot.c: the integer dot-product kernel of
 * quantized layers (gpu_qdot.h): one work item per output pixel and kb
 * output channels (4, 2 or 1: what divides the group's channels), the
 * reduction over (r, s, four input channels) as an IR loop of 32-bit dot
 * products of four i8 pairs accumulated in i32 (each packed input word
 * feeds kb of them), then the bias and the requantisation, each step as
 * the reference interpreter computes it:
 *
 *   acc  = Σ x·w, wrapping in i32 (the codelet's i32 accumulator wraps
 *          when stored, as dp4a and v_dot4_i32_i8 without clamp do)
 *   acc += bias (i32, wrapping)
 *   f    = f32(acc) · m[k], each rounded once to nearest even
 *   y    = saturate(roundeven(f) + zp[k]) to i8 / u8
 *
 * The input is read as it lies (NCHW i8): the four bytes of a word are
 * four channels of one pixel, loaded one by one (zero where the tap
 * falls in the padding or past the group's channels) and packed; the
 * weights are packed once at compile time ([K][R][S][C4] words). Where
 * the target has no dot4_i8 (the host JIT of the tests) the products are
 * plain IR. gpu_qdot_emulate is the same meaning in C. */
#include <math.h>
#include <string.h>

#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_qdot.h"
#include "common/op_table.h"

int64_t gpu_qdot_c4(const gpu_ew *e) { return (e->C / e->groups + 3) / 4; }
int64_t gpu_qdot_words(const gpu_ew *e) { return e->K * e->R * e->S * gpu_qdot_c4(e); }

int gpu_qdot_kb(const gpu_ew *e) {
  int64_t kg = e->K / e->groups;
  return kg % 4 == 0 ? 4 : kg % 2 == 0 ? 2 : 1;
}

void gpu_qdot_pack(const gpu_ew *e, const int8_t *w, int kn, int32_t *out) {
  int64_t cg = e->C / e->groups, c4 = gpu_qdot_c4(e), rs = e->R * e->S;
  for (int64_t k = 0; k < e->K; k++)
    for (int64_t t = 0; t < rs; t++)
      for (int64_t j = 0; j < c4; j++) {
        uint32_t word = 0;
        for (int b = 0; b < 4; b++) {
          int64_t c = 4 * j + b;
          if (c >= cg) continue;
          int8_t v = kn ? w[c * e->K + k] : w[(k * cg + c) * rs + t];
          word |= (uint32_t)(uint8_t)v << (8 * b);
        }
        memcpy(&out[(k * rs + t) * c4 + j], &word, 4);
      }
}

/* ---- C meaning ---------------------------------------------------------- */

static int64_t sat_lo(cov_dtype d) { return d == COV_U8 ? 0 : -128; }
static int64_t sat_hi(cov_dtype d) { return d == COV_U8 ? 255 : 127; }

/* f32 -> the 8-bit dtype, saturating (NaN: 0), as the interpreter stores it */
static int64_t sat8(float f, cov_dtype d) {
  if (f != f) return 0;
  if (f <= (float)sat_lo(d)) return sat_lo(d);
  if (f >= (float)sat_hi(d)) return sat_hi(d);
  return (int64_t)f;
}

static int32_t emu_acc(const gpu_ew *e, int64_t i, const int8_t *x, const int32_t *w) {
  int64_t q = i % e->Q, t = i / e->Q, p = t % e->P, t2 = t / e->P, k = t2 % e->K, n = t2 / e->K;
  int64_t cg = e->C / e->groups, kg = e->K / e->groups, c0 = k / kg * cg, c4 = gpu_qdot_c4(e);
  uint32_t acc = 0;
  for (int64_t r = 0; r < e->R; r++)
    for (int64_t s = 0; s < e->S; s++) {
      int64_t ih = p * e->sh - e->pt + r * e->dh, iw = q * e->sw - e->pl + s * e->dw;
      int ok = ih >= 0 && ih < e->H && iw >= 0 && iw < e->W;
      for (int64_t j = 0; j < c4; j++) {
        uint32_t word;
        memcpy(&word, &w[((k * e->R + r) * e->S + s) * c4 + j], 4);
        for (int b = 0; b < 4; b++) {
          int64_t c = 4 * j + b;
          int32_t xv = ok && c < cg ? x[((n * e->C + c0 + c) * e->H + ih) * e->W + iw] : 0;
          acc += (uint32_t)(xv * (int32_t)(int8_t)(uint8_t)(word >> (8 * b)));
        }
      }
    }
  return (int32_t)acc;
}

void gpu_qdot_emulate(const gpu_ew *e, const int8_t *x, const int32_t *w, void *y, const int32_t *bias,
                      const float *m, const float *zp) {
  for (int64_t i = 0; i < e->N * e->K * e->P * e->Q; i++) {
    int64_t k = i / (e->P * e->Q) % e->K;
    uint32_t acc = (uint32_t)emu_acc(e, i, x, w);
    if (e->bias == 1) acc += (uint32_t)bias[k];
    if (e->bias == 2) acc += (uint32_t)bias[i % (e->K * e->P * e->Q)];
    if (e->out_dtype == COV_I32) {
      ((int32_t *)y)[i] = (int32_t)acc;
      continue;
    }
    float f = (float)(int32_t)acc;
    f = f * m[k];
    f = (float)common_round_even(f);
    f = f + zp[k];
    int64_t v = sat8(f, e->out_dtype);
    if (e->out_dtype == COV_U8) ((uint8_t *)y)[i] = (uint8_t)v;
    else ((int8_t *)y)[i] = (int8_t)v;
  }
}

/* ---- the kernel --------------------------------------------------------- */

static LLVMValueRef sub(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildSub(g->b, x, y, ""); }

/* c + Σ_b a.byte[b] · w.byte[b], signed bytes, in plain IR */
static LLVMValueRef dot4_ir(gpu_gen *g, LLVMValueRef a, LLVMValueRef w, LLVMValueRef c) {
  for (int b = 0; b < 4; b++) {
    LLVMValueRef sa = LLVMBuildAShr(g->b, LLVMBuildShl(g->b, a, C(24 - 8 * b), ""), C(24), "");
    LLVMValueRef sw = LLVMBuildAShr(g->b, LLVMBuildShl(g->b, w, C(24 - 8 * b), ""), C(24), "");
    c = add(g, c, mul(g, sa, sw));
  }
  return c;
}

/* byte b of the word: channel c of pixel `pix` (zero where !ok) */
static LLVMValueRef load_byte(gpu_gen *g, LLVMValueRef x, LLVMValueRef idx, LLVMValueRef ok) {
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->i8, gept(g, g->i8, x, LLVMBuildSelect(g->b, ok, idx, C(0), "")), "");
  return LLVMBuildSelect(g->b, ok, LLVMBuildZExt(g->b, v, g->i32, ""), C(0), "");
}

/* the four channels 4j .. 4j+3 of the group at one pixel, packed */
static LLVMValueRef input_word(gpu_gen *g, const gpu_ew *e, LLVMValueRef x, LLVMValueRef base, LLVMValueRef j,
                               LLVMValueRef ok) {
  int64_t cg = e->C / e->groups, hw = e->H * e->W;
  LLVMValueRef word = C(0), c = mul(g, j, C(4));
  for (int b = 0; b < 4; b++) {
    LLVMValueRef okb = ok;
    if (cg % 4) okb = and1(g, ok, ult(g, add(g, c, C(b)), cg));
    LLVMValueRef idx = add(g, base, mul(g, add(g, c, C(b)), C(hw)));
    word = LLVMBuildOr(g->b, word, LLVMBuildShl(g->b, load_byte(g, x, idx, okb), C(8 * b), ""), "");
  }
  return word;
}

/* Σ over taps and channel words for output channels k0 .. k0+kb-1 at
 * (n, p, q): each packed input word feeds kb dot products */
static void lower_acc(gpu_gen *g, const gpu_ew *e, const LLVMValueRef at[4], LLVMValueRef x, LLVMValueRef w,
                      LLVMValueRef *out) {
  LLVMValueRef n = at[0], k0 = at[1], p = at[2], q = at[3];
  int64_t cg = e->C / e->groups, kg = e->K / e->groups, c4 = gpu_qdot_c4(e), rs = e->R * e->S;
  int kb = gpu_qdot_kb(e);
  LLVMValueRef c0 = mul(g, udiv(g, k0, kg), C(cg));
  LLVMValueRef ih0 = sub(g, mul(g, p, C(e->sh)), C(e->pt)), iw0 = sub(g, mul(g, q, C(e->sw)), C(e->pl));
  gpu_loop l;
  LLVMValueRef jj = loop_open(g, &l, C(0), rs * c4, 1);
  LLVMValueRef acc[GPU_QDOT_KB], next[GPU_QDOT_KB], zero[GPU_QDOT_KB];
  for (int b = 0; b < kb; b++) {
    zero[b] = C(0);
    acc[b] = LLVMBuildPhi(g->b, g->i32, "acc");
    LLVMAddIncoming(acc[b], &zero[b], &l.pre, 1);
  }
  LLVMValueRef j = urem(g, jj, c4), tap = udiv(g, jj, c4), r = udiv(g, tap, e->S), s = urem(g, tap, e->S);
  LLVMValueRef ih = add(g, ih0, mul(g, r, C(e->dh))), iw = add(g, iw0, mul(g, s, C(e->dw)));
  LLVMValueRef ok = and1(g, ult(g, ih, e->H), ult(g, iw, e->W));
  LLVMValueRef base = add(g, mul(g, add(g, mul(g, n, C(e->C)), c0), C(e->H * e->W)), add(g, mul(g, ih, C(e->W)), iw));
  LLVMValueRef xw = input_word(g, e, x, base, j, ok);
  for (int b = 0; b < kb; b++) {
    LLVMValueRef wi = add(g, mul(g, add(g, k0, C(b)), C(rs * c4)), jj);
    LLVMValueRef ww = LLVMBuildLoad2(g->b, g->i32, gept(g, g->i32, w, wi), "");
    next[b] = g->target->dot4_i8 ? g->target->dot4_i8(g, xw, ww, acc[b]) : dot4_ir(g, xw, ww, acc[b]);
  }
  loop_close(g, &l, kb, acc, next, zero, out);
}

static LLVMValueRef intr_f32(gpu_gen *g, const char *name, LLVMValueRef v) {
  return gpu_call_intrinsic(g, name, &g->f32, 1, &v, 1);
}

/* the bias and the requantisation of output i's accumulator, stored */
static void lower_epilogue(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef k, LLVMValueRef acc,
                           const LLVMValueRef *arg) {
  if (e->bias) {
    LLVMValueRef bi = e->bias == 1 ? k : urem(g, i, e->K * e->P * e->Q);
    acc = add(g, acc, LLVMBuildLoad2(g->b, g->i32, gept(g, g->i32, arg[3], bi), ""));
  }
  if (e->out_dtype == COV_I32) {
    LLVMBuildStore(g->b, acc, gept(g, g->i32, arg[2], i));
    return;
  }
  LLVMValueRef f = LLVMBuildSIToFP(g->b, acc, g->f32, "");
  f = LLVMBuildFMul(g->b, f, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, arg[4], k), ""), "");
  f = intr_f32(g, "llvm.roundeven", f);
  f = LLVMBuildFAdd(g->b, f, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, arg[5], k), ""), "");
  LLVMTypeRef ov[2] = {g->i32, g->f32};
  LLVMValueRef v = gpu_call_intrinsic(g, "llvm.fptosi.sat", ov, 2, &f, 1);
  LLVMValueRef lo = C(sat_lo(e->out_dtype)), hi = C(sat_hi(e->out_dtype));
  v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, lo, ""), lo, v, "");
  v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, v, hi, ""), hi, v, "");
  LLVMBuildStore(g->b, LLVMBuildTrunc(g->b, v, g->i8, ""), gept(g, g->i8, arg[2], i));
}

cov_status gpu_lower_qdot(const gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name) {
  gpu_gen gg = {0}, *g = &gg;
  gpu_plan plan = {0};
  plan.prob.in_dtype = COV_F32;
  plan.threads = GPU_EW_THREADS;
  COV_RETURN_IF_ERROR(gpu_gen_init(g, &plan, target, mod));
  int kb = gpu_qdot_kb(e);
  if (e->n < 1 || e->n * kb > INT32_MAX || gpu_qdot_words(e) > INT32_MAX || e->N * e->C * e->H * e->W > INT32_MAX)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, name), "GPU lowering: an integer layer of %lld outputs "
                     "(tensors below 2^31 elements are lowered)", (long long)e->n * kb);
  gpu_add_kernel_n(g, name, GPU_QDOT_ARGS);
  LLVMValueRef arg[GPU_QDOT_ARGS];
  for (int a = 0; a < GPU_QDOT_ARGS; a++) arg[a] = LLVMGetParam(g->fn, (unsigned)a);
  /* work item t = ((n·K/kb + k0/kb)·P + p)·Q + q: neighbouring items on
   * neighbouring pixels of kb channels */
  LLVMValueRef t = gpu_grid_index(g, GPU_EW_THREADS);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, t, e->n), &join);
  LLVMValueRef q = urem(g, t, e->Q), t1 = udiv(g, t, e->Q), p = urem(g, t1, e->P), t2 = udiv(g, t1, e->P);
  LLVMValueRef at[4] = {udiv(g, t2, e->K / kb), mul(g, urem(g, t2, e->K / kb), C(kb)), p, q};
  LLVMValueRef acc[GPU_QDOT_KB];
  lower_acc(g, e, at, arg[0], arg[1], acc);
  for (int b = 0; b < kb; b++) {
    LLVMValueRef k = add(g, at[1], C(b));
    LLVMValueRef i = add(g, mul(g, add(g, mul(g, add(g, mul(g, at[0], C(e->K)), k), C(e->P)), p), C(e->Q)), q);
    lower_epilogue(g, e, i, k, acc[b], arg);
  }
  end_if(g, join);
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
  return NULL;
}
