/* backends/gpu/gpu_cdl_math.c: the op table's transcendental functions in
 * f32 LLVM IR, from the target's 2^x, square root and plain arithmetic
 * (no libm: neither NVPTX nor AMDGPU code objects link one). Accuracy is
 * a few f32 ulps in the usual ranges (sin/cos lose accuracy beyond
 * |x| ~ 1e4, as any two-constant argument reduction), well within what
 * the f16 operands of the matrix kernels already cost. */
#include <math.h>

#include "backends/gpu/gpu_cdl.h"
#include "backends/gpu/gpu_ir.h"
#include "common/op_table.h"

#define F(v) LLVMConstReal(g->f32, (v))

static LLVMValueRef fadd(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFAdd(g->b, x, y, ""); }
static LLVMValueRef fsub(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFSub(g->b, x, y, ""); }
static LLVMValueRef fmul(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFMul(g->b, x, y, ""); }
static LLVMValueRef fdiv(gpu_gen *g, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFDiv(g->b, x, y, ""); }
static LLVMValueRef fcmp(gpu_gen *g, LLVMRealPredicate p, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFCmp(g->b, p, x, y, "");
}
static LLVMValueRef sel(gpu_gen *g, LLVMValueRef c, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildSelect(g->b, c, x, y, "");
}
static LLVMValueRef intr1(gpu_gen *g, const char *name, LLVMValueRef x) {
  return gpu_call_intrinsic(g, name, &g->f32, 1, &x, 1);
}
static LLVMValueRef fabs_(gpu_gen *g, LLVMValueRef x) { return intr1(g, "llvm.fabs", x); }
static LLVMValueRef fsqrt(gpu_gen *g, LLVMValueRef x) { return intr1(g, "llvm.sqrt", x); }
static LLVMValueRef copysign_(gpu_gen *g, LLVMValueRef mag, LLVMValueRef sgn) {
  LLVMValueRef a[2] = {mag, sgn};
  return gpu_call_intrinsic(g, "llvm.copysign", &g->f32, 1, a, 2);
}
/* c[0] + x (c[1] + x (c[2] + ...)) */
static LLVMValueRef poly(gpu_gen *g, LLVMValueRef x, const double *c, int n) {
  LLVMValueRef r = F(c[n - 1]);
  for (int i = n - 2; i >= 0; i--) r = fadd(g, F(c[i]), fmul(g, x, r));
  return r;
}

static LLVMValueRef fexp(gpu_gen *g, LLVMValueRef x) { return g->target->exp2(g, fmul(g, x, F(1.4426950408889634))); }

/* log x = e ln 2 + 2 atanh(s), x = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * s = (m - 1) / (m + 1); subnormals scaled first */
static LLVMValueRef flog(gpu_gen *g, LLVMValueRef x) {
  LLVMValueRef sub = fcmp(g, LLVMRealOLT, x, F(1.1754943508222875e-38));
  LLVMValueRef xs = sel(g, sub, fmul(g, x, F(8388608.0)), x);
  LLVMValueRef bits = LLVMBuildBitCast(g->b, xs, g->i32, "");
  LLVMValueRef e = LLVMBuildSub(g->b, LLVMBuildAnd(g->b, LLVMBuildLShr(g->b, bits, C(23), ""), C(255), ""), C(127), "");
  e = LLVMBuildAdd(g->b, e, sel(g, sub, C(-23), C(0)), "");
  LLVMValueRef m = LLVMBuildBitCast(g->b, LLVMBuildOr(g->b, LLVMBuildAnd(g->b, bits, C(0x7fffff), ""), C(0x3f800000), ""),
                                    g->f32, "");
  LLVMValueRef big = fcmp(g, LLVMRealOGT, m, F(1.4142135623730951));
  m = sel(g, big, fmul(g, m, F(0.5)), m);
  e = sel(g, big, LLVMBuildAdd(g->b, e, C(1), ""), e);
  LLVMValueRef s = fdiv(g, fsub(g, m, F(1.0)), fadd(g, m, F(1.0)));
  static const double c[] = {2.0, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11};
  LLVMValueRef r = fmul(g, s, poly(g, fmul(g, s, s), c, 6));
  r = fadd(g, fmul(g, LLVMBuildSIToFP(g->b, e, g->f32, ""), F(0.6931471805599453)), r);
  r = sel(g, fcmp(g, LLVMRealOEQ, x, F(INFINITY)), x, r);
  r = sel(g, fcmp(g, LLVMRealOEQ, x, F(0.0)), F(-INFINITY), r);
  return sel(g, fcmp(g, LLVMRealULT, x, F(0.0)), F(NAN), r); /* negative or NaN */
}

/* sin (cos = 0) or cos (1) after reduction by the nearest multiple of pi/2 */
static LLVMValueRef fsincos(gpu_gen *g, LLVMValueRef x, int cos) {
  LLVMValueRef k = intr1(g, "llvm.roundeven", fmul(g, x, F(0.6366197723675814)));
  LLVMValueRef r = fsub(g, fsub(g, x, fmul(g, k, F(1.5707963705062866))), fmul(g, k, F(-4.371139000186241e-08)));
  LLVMValueRef r2 = fmul(g, r, r);
  static const double cs[] = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880};
  static const double cc[] = {-0.5, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800};
  LLVMValueRef s = fadd(g, r, fmul(g, fmul(g, r, r2), poly(g, r2, cs, 4)));
  LLVMValueRef c = fadd(g, F(1.0), fmul(g, r2, poly(g, r2, cc, 5)));
  LLVMTypeRef i32 = g->i32;
  LLVMValueRef q = gpu_call_intrinsic(g, "llvm.fptosi.sat", (LLVMTypeRef[]){i32, g->f32}, 2, &k, 1);
  q = LLVMBuildAnd(g->b, LLVMBuildAdd(g->b, q, C(cos), ""), C(3), "");
  LLVMValueRef odd = LLVMBuildTrunc(g->b, q, g->i1, "");
  LLVMValueRef neg = LLVMBuildICmp(g->b, LLVMIntUGE, q, C(2), "");
  LLVMValueRef v = sel(g, odd, c, s);
  return sel(g, neg, LLVMBuildFNeg(g->b, v, ""), v);
}

/* atan: |x| > 1 through pi/2 - atan(1/|x|), above tan(pi/8) through
 * pi/4 + atan((t-1)/(t+1)), then the odd series to x^15 */
static LLVMValueRef fatan(gpu_gen *g, LLVMValueRef x) {
  LLVMValueRef ax = fabs_(g, x);
  LLVMValueRef inv = fcmp(g, LLVMRealOGT, ax, F(1.0));
  LLVMValueRef t = sel(g, inv, fdiv(g, F(1.0), ax), ax);
  LLVMValueRef mid = fcmp(g, LLVMRealOGT, t, F(0.41421356237309503));
  t = sel(g, mid, fdiv(g, fsub(g, t, F(1.0)), fadd(g, t, F(1.0))), t);
  static const double c[] = {1.0, -1.0 / 3, 1.0 / 5, -1.0 / 7, 1.0 / 9, -1.0 / 11, 1.0 / 13, -1.0 / 15};
  LLVMValueRef p = fmul(g, t, poly(g, fmul(g, t, t), c, 8));
  p = sel(g, mid, fadd(g, p, F(0.7853981633974483)), p);
  p = sel(g, inv, fsub(g, F(1.5707963267948966), p), p);
  return sel(g, fcmp(g, LLVMRealUNO, x, x), x, copysign_(g, p, x));
}

/* erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7) */
static LLVMValueRef ferf(gpu_gen *g, LLVMValueRef z) {
  LLVMValueRef az = fabs_(g, z);
  LLVMValueRef t = fdiv(g, F(1.0), fadd(g, F(1.0), fmul(g, az, F(0.3275911))));
  static const double a[] = {0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
  LLVMValueRef r = fsub(g, F(1.0), fmul(g, poly(g, t, a, 6), fexp(g, LLVMBuildFNeg(g->b, fmul(g, az, az), ""))));
  return copysign_(g, r, z);
}

/* sinh / tanh near 0 by their series (the exponential forms cancel) */
static LLVMValueRef fsinh(gpu_gen *g, LLVMValueRef x) {
  LLVMValueRef e = fexp(g, x), big = fmul(g, fsub(g, e, fdiv(g, F(1.0), e)), F(0.5));
  static const double c[] = {1.0, 1.0 / 6, 1.0 / 120, 1.0 / 5040};
  LLVMValueRef small = fmul(g, x, poly(g, fmul(g, x, x), c, 4));
  return sel(g, fcmp(g, LLVMRealOLT, fabs_(g, x), F(0.5)), small, big);
}
static LLVMValueRef ftanh(gpu_gen *g, LLVMValueRef x) {
  LLVMValueRef big = fsub(g, F(1.0), fdiv(g, F(2.0), fadd(g, fexp(g, fmul(g, x, F(2.0))), F(1.0))));
  static const double c[] = {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835};
  LLVMValueRef small = fmul(g, x, poly(g, fmul(g, x, x), c, 5));
  return sel(g, fcmp(g, LLVMRealOLT, fabs_(g, x), F(0.25)), small, big);
}

/* a^b as exp(b log|a|), with C pow's signs: a < 0 needs an integer b
 * (odd: negative), a^0 = 1, 1^b = 1 */
static LLVMValueRef fpow(gpu_gen *g, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef r = fexp(g, fmul(g, b, flog(g, fabs_(g, a))));
  LLVMValueRef fl = intr1(g, "llvm.floor", b);
  LLVMValueRef isint = fcmp(g, LLVMRealOEQ, fl, b);
  LLVMValueRef half = fmul(g, b, F(0.5));
  LLVMValueRef odd = LLVMBuildAnd(g->b, isint, fcmp(g, LLVMRealONE, intr1(g, "llvm.floor", half), half), "");
  LLVMValueRef neg = sel(g, isint, sel(g, odd, LLVMBuildFNeg(g->b, r, ""), r), F(NAN));
  r = sel(g, fcmp(g, LLVMRealOLT, a, F(0.0)), neg, r);
  r = sel(g, fcmp(g, LLVMRealOEQ, a, F(1.0)), F(1.0), r);
  return sel(g, fcmp(g, LLVMRealOEQ, b, F(0.0)), F(1.0), r);
}

LLVMValueRef gpu_cdl_float_op(gpu_gen *g, int op, LLVMValueRef *a) {
  LLVMValueRef x = a[0];
  switch ((cov_op)op) {
  case COV_OP_EXP: return fexp(g, x);
  case COV_OP_LOG: return flog(g, x);
  case COV_OP_POW: return fpow(g, x, a[1]);
  case COV_OP_TANH: return ftanh(g, x);
  case COV_OP_ERF: return ferf(g, x);
  case COV_OP_SIGMOID: return fdiv(g, F(1.0), fadd(g, F(1.0), fexp(g, LLVMBuildFNeg(g->b, x, ""))));
  case COV_OP_SIN: return fsincos(g, x, 0);
  case COV_OP_COS: return fsincos(g, x, 1);
  case COV_OP_TAN: return fdiv(g, fsincos(g, x, 0), fsincos(g, x, 1));
  case COV_OP_ATAN: return fatan(g, x);
  case COV_OP_ASIN: return fatan(g, fdiv(g, x, fsqrt(g, fsub(g, F(1.0), fmul(g, x, x)))));
  case COV_OP_ACOS: return fsub(g, F(1.5707963267948966), fatan(g, fdiv(g, x, fsqrt(g, fsub(g, F(1.0), fmul(g, x, x))))));
  case COV_OP_SINH: return fsinh(g, x);
  case COV_OP_COSH: {
    LLVMValueRef e = fexp(g, x);
    return fmul(g, fadd(g, e, fdiv(g, F(1.0), e)), F(0.5));
  }
  case COV_OP_ASINH: {
    LLVMValueRef ax = fabs_(g, x);
    return copysign_(g, flog(g, fadd(g, ax, fsqrt(g, fadd(g, fmul(g, ax, ax), F(1.0))))), x);
  }
  case COV_OP_ACOSH: return flog(g, fadd(g, x, fsqrt(g, fsub(g, fmul(g, x, x), F(1.0)))));
  case COV_OP_ATANH: return fmul(g, F(0.5), flog(g, fdiv(g, fadd(g, F(1.0), x), fsub(g, F(1.0), x))));
  default: return NULL;
  }
}
