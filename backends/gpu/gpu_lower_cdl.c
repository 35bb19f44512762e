/* backends/gpu/gpu_lower_cdl.c: a bound codelet call as LLVM IR
 * (gpu_cdl.h): the grid loops from the work-item id, the rest of the nest
 * as IR loops, every statement with the interpreter's meaning. Locals and
 * loop counters go through allocas and index arithmetic is i64; the O3
 * pipeline (gpu_llvm.c) promotes them to registers and narrows what it
 * can. */
#include <math.h>
#include <stdlib.h>

#include "backends/gpu/gpu_cdl.h"
#include "backends/gpu/gpu_ir.h"
#include "backends/gpu/gpu_mplan.h"
#include "common/op_table.h"

typedef enum dom { DOM_F32, DOM_F64, DOM_I64 } dom;

typedef struct cg {
  gpu_gen *g;
  const gpu_cdl_bound *k;
  LLVMValueRef ptr[CDL_MAX_OPERANDS * 3]; /* tensors: global pointers; scalar locals: allocas */
  LLVMValueRef *lv;                       /* per loop id: the counter (i64) */
  LLVMValueRef item;                      /* the work item (i64) */
  LLVMValueRef lane;                      /* the lane in its team (i64; 0 without teams) */
  LLVMValueRef flat;                      /* a team nest's flat iteration (alloca, i64) */
} cg;

#define I64(v) LLVMConstInt(x->g->i64, (unsigned long long)(int64_t)(v), 1)

static LLVMTypeRef elem_type(gpu_gen *g, cov_dtype d) {
  switch (d) {
  case COV_F16: return g->f16;
  case COV_BF16: return g->bf16;
  case COV_F64: return LLVMDoubleTypeInContext(g->ctx);
  case COV_I8: case COV_U8: case COV_BOOL: return g->i8;
  case COV_I32: return g->i32;
  case COV_I64: return g->i64;
  default: return g->f32;
  }
}
static LLVMTypeRef dom_type(gpu_gen *g, dom d) {
  return d == DOM_F32 ? g->f32 : d == DOM_F64 ? LLVMDoubleTypeInContext(g->ctx) : g->i64;
}

/* ---- index expressions -------------------------------------------------- */

static LLVMValueRef iexpr(cg *x, const cdl_iexpr *e);

/* Python's floor division and modulo; a zero divisor gives 0 (the
 * interpreter reports it) */
static LLVMValueRef floor_divmod(cg *x, LLVMValueRef a, LLVMValueRef b, int want_mod) {
  LLVMBuilderRef B = x->g->b;
  LLVMValueRef zero = LLVMBuildICmp(B, LLVMIntEQ, b, I64(0), "");
  LLVMValueRef bs = LLVMBuildSelect(B, zero, I64(1), b, "");
  LLVMValueRef q = LLVMBuildSDiv(B, a, bs, ""), r = LLVMBuildSRem(B, a, bs, "");
  LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, I64(0), ""),
                                  LLVMBuildICmp(B, LLVMIntNE, LLVMBuildICmp(B, LLVMIntSLT, r, I64(0), ""),
                                                LLVMBuildICmp(B, LLVMIntSLT, bs, I64(0), ""), ""), "");
  LLVMValueRef v = want_mod ? LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, bs, ""), r, "")
                            : LLVMBuildSelect(B, adj, LLVMBuildSub(B, q, I64(1), ""), q, "");
  return LLVMBuildSelect(B, zero, I64(0), v, "");
}

static LLVMValueRef cmp64(cg *x, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildZExt(x->g->b, LLVMBuildICmp(x->g->b, p, a, b, ""), x->g->i64, "");
}

static LLVMValueRef iexpr_op(cg *x, const cdl_iexpr *e, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = x->g->b;
  switch (e->kind) {
  case CDL_IE_NEG: return LLVMBuildNeg(B, a, "");
  case CDL_IE_NOT: return cmp64(x, LLVMIntEQ, a, I64(0));
  case CDL_IE_ADD: return LLVMBuildAdd(B, a, b, "");
  case CDL_IE_SUB: return LLVMBuildSub(B, a, b, "");
  case CDL_IE_MUL: return LLVMBuildMul(B, a, b, "");
  case CDL_IE_DIV: return floor_divmod(x, a, b, 0);
  case CDL_IE_MOD: return floor_divmod(x, a, b, 1);
  case CDL_IE_EQ: return cmp64(x, LLVMIntEQ, a, b);
  case CDL_IE_NE: return cmp64(x, LLVMIntNE, a, b);
  case CDL_IE_LT: return cmp64(x, LLVMIntSLT, a, b);
  case CDL_IE_LE: return cmp64(x, LLVMIntSLE, a, b);
  case CDL_IE_GT: return cmp64(x, LLVMIntSGT, a, b);
  case CDL_IE_GE: return cmp64(x, LLVMIntSGE, a, b);
  case CDL_IE_AND:
    return LLVMBuildAnd(B, cmp64(x, LLVMIntNE, a, I64(0)), cmp64(x, LLVMIntNE, b, I64(0)), "");
  case CDL_IE_OR:
    return LLVMBuildOr(B, cmp64(x, LLVMIntNE, a, I64(0)), cmp64(x, LLVMIntNE, b, I64(0)), "");
  case CDL_IE_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, b, ""), a, b, "");
  case CDL_IE_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, b, ""), a, b, "");
  default: return I64(0);
  }
}

/* Loop-free parts are evaluated now (they were checked when the call was
 * bound, or they are the interpreter's run-time errors: 0 here). */
static LLVMValueRef iexpr(cg *x, const cdl_iexpr *e) {
  if (e->kind == CDL_IE_LOOP) return LLVMBuildLoad2(x->g->b, x->g->i64, x->lv[e->index], "");
  if (!cdl_iexpr_has_loop(e)) {
    int64_t v = 0;
    cov_status_free(cdl_eval(e, &x->k->env, &v));
    return I64(v);
  }
  LLVMValueRef a = iexpr(x, e->a), b = e->b ? iexpr(x, e->b) : NULL;
  return iexpr_op(x, e, a, b);
}

/* ---- accesses ------------------------------------------------------------ */

/* Whether index d of a stays inside its dim for every value of the loops. */
static int in_bounds(cg *x, const cdl_access *a, int d, int64_t ext) {
  const cdl_affine *f = &a->aff[d];
  int64_t lo, hi;
  if (cdl_eval(f->constant, &x->k->env, &lo)) return 0; /* (error freed below) */
  hi = lo;
  for (size_t t = 0; t < f->n_terms; t++) {
    int64_t coef, span, n = x->k->extent[f->loops[t]];
    cov_status st = cdl_eval(f->coefs[t], &x->k->env, &coef);
    if (st) {
      cov_status_free(st);
      return 0;
    }
    if (n <= 1) continue;
    if (__builtin_mul_overflow(coef, n - 1, &span)) return 0;
    if (__builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) return 0;
  }
  return lo >= 0 && hi < ext;
}

/* The element's address; *ok (NULL when always in bounds) says whether the
 * indices are inside the tensor (the address is element 0's otherwise). */
static LLVMValueRef address(cg *x, const cdl_access *a, LLVMValueRef *ok) {
  gpu_gen *g = x->g;
  int op = a->operand, rank = x->k->c->operands[op].rank;
  *ok = NULL;
  if (rank == 0) return x->ptr[op];
  LLVMValueRef flat = I64(0);
  for (int d = 0; d < rank; d++) {
    int64_t ext = x->k->b.shape[op][d];
    LLVMValueRef i = iexpr(x, a->idx[d]);
    if (!in_bounds(x, a, d, ext)) {
      LLVMValueRef c = LLVMBuildICmp(g->b, LLVMIntULT, i, I64(ext), "");
      *ok = *ok ? LLVMBuildAnd(g->b, *ok, c, "") : c;
    }
    flat = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, flat, I64(ext), ""), i, "");
  }
  if (*ok) flat = LLVMBuildSelect(g->b, *ok, flat, I64(0), "");
  if (x->k->priv[op]) { /* the work item's copy */
    int64_t size = 1;
    for (int d = 0; d < rank; d++) size *= x->k->b.shape[op][d];
    flat = LLVMBuildAdd(g->b, flat, LLVMBuildMul(g->b, x->item, I64(size), ""), "");
  }
  return LLVMBuildInBoundsGEP2(g->b, elem_type(g, x->k->b.dtype[op]), x->ptr[op], &flat, 1, "");
}

/* ---- conversions --------------------------------------------------------- */

static int64_t sat_lo(cov_dtype d) { return d == COV_I8 ? -128 : d == COV_U8 ? 0 : d == COV_I32 ? INT32_MIN : INT64_MIN; }
static int64_t sat_hi(cov_dtype d) { return d == COV_I8 ? 127 : d == COV_U8 ? 255 : d == COV_I32 ? INT32_MAX : INT64_MAX; }

/* An i64 clamped to dtype d's range (bool: != 0), as the interpreter's sat_to. */
static LLVMValueRef sat_to(cg *x, cov_dtype d, LLVMValueRef v) {
  LLVMBuilderRef B = x->g->b;
  if (d == COV_BOOL) return cmp64(x, LLVMIntNE, v, I64(0));
  if (d == COV_I64) return v;
  v = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, v, I64(sat_lo(d)), ""), I64(sat_lo(d)), v, "");
  return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, v, I64(sat_hi(d)), ""), I64(sat_hi(d)), v, "");
}

/* float (f32/f64) -> i64, saturating, NaN -> 0 */
static LLVMValueRef f_to_i64(cg *x, LLVMValueRef v) {
  LLVMTypeRef ov[2] = {x->g->i64, LLVMTypeOf(v)};
  return gpu_call_intrinsic(x->g, "llvm.fptosi.sat", ov, 2, &v, 1);
}

/* A stored value of dtype d into domain m (integers from floats saturate
 * to the destination dtype `dst`). */
static LLVMValueRef to_dom(cg *x, LLVMValueRef v, cov_dtype d, dom m, cov_dtype dst) {
  gpu_gen *g = x->g;
  LLVMBuilderRef B = g->b;
  if (cov_dtype_is_float(d)) {
    if (m != DOM_I64) return LLVMBuildFPCast(B, v, dom_type(g, m), "");
    if (d != COV_F64) v = LLVMBuildFPExt(B, v, g->f32, "");
    return sat_to(x, dst, f_to_i64(x, v));
  }
  if (d == COV_BOOL) v = LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), "");
  int uns = d == COV_U8 || d == COV_BOOL;
  if (m == DOM_I64) return uns ? LLVMBuildZExt(B, v, g->i64, "") : LLVMBuildSExt(B, v, g->i64, "");
  return uns ? LLVMBuildUIToFP(B, v, dom_type(g, m), "") : LLVMBuildSIToFP(B, v, dom_type(g, m), "");
}

/* A result in domain m stored as dtype d. */
static LLVMValueRef from_dom(cg *x, LLVMValueRef v, dom m, cov_dtype d) {
  gpu_gen *g = x->g;
  LLVMTypeRef t = elem_type(g, d);
  if (cov_dtype_is_float(d)) return LLVMBuildFPCast(g->b, v, t, "");
  if (m != DOM_I64) v = sat_to(x, d, f_to_i64(x, v));
  if (d == COV_BOOL) v = cmp64(x, LLVMIntNE, v, I64(0));
  return t == g->i64 ? v : LLVMBuildTrunc(g->b, v, t, "");
}

/* the interpreter's sat_to(d, sat_i64(v)) of a constant */
static int64_t sat_const(double v, cov_dtype d) {
  int64_t i = isnan(v) ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
  if (d == COV_BOOL) return i != 0;
  return i < sat_lo(d) ? sat_lo(d) : i > sat_hi(d) ? sat_hi(d) : i;
}
static LLVMValueRef const_dom(cg *x, double v, dom m, cov_dtype dst) {
  if (m != DOM_I64) return LLVMConstReal(dom_type(x->g, m), v);
  return I64(sat_const(v, dst));
}

static LLVMValueRef load_arg(cg *x, const cdl_arg *a, dom m, cov_dtype dst) {
  gpu_gen *g = x->g;
  switch (a->kind) {
  case CDL_ARG_FLOAT: return const_dom(x, a->f, m, dst);
  case CDL_ARG_FATTR: return const_dom(x, x->k->b.attr_f[a->attr], m, dst);
  case CDL_ARG_INDEX: {
    LLVMValueRef i = iexpr(x, a->ie);
    return m == DOM_I64 ? i : LLVMBuildSIToFP(g->b, i, dom_type(g, m), "");
  }
  case CDL_ARG_ACCESS: break;
  }
  const cdl_access *ac = &a->access;
  cov_dtype d = x->k->b.dtype[ac->operand];
  LLVMValueRef ok, p = address(x, ac, &ok);
  LLVMValueRef v = to_dom(x, LLVMBuildLoad2(g->b, elem_type(g, d), p, ""), d, m, dst);
  if (ok) v = LLVMBuildSelect(g->b, ok, v, const_dom(x, ac->has_else ? ac->else_value : 0.0, m, dst), "");
  return v;
}

/* ---- operations ---------------------------------------------------------- */

static LLVMValueRef fconst(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* NaN-propagating max (gt) / min (lt) as the interpreter's */
static LLVMValueRef fext(cg *x, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = x->g->b;
  LLVMValueRef take = LLVMBuildOr(B, LLVMBuildFCmp(B, p, a, b, ""), LLVMBuildFCmp(B, LLVMRealUNO, a, a, ""), "");
  return LLVMBuildSelect(B, take, a, b, "");
}

static LLVMValueRef fintr(cg *x, const char *name, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return gpu_call_intrinsic(x->g, name, &t, 1, &v, 1);
}

/* Floats in domain m (f32 or f64): the elementary operations at m's
 * width, the transcendental ones in f32 (gpu_cdl_math.c). */
static LLVMValueRef apply_f(cg *x, cov_op op, LLVMValueRef *a, dom m) {
  gpu_gen *g = x->g;
  LLVMBuilderRef B = g->b;
  LLVMTypeRef t = dom_type(g, m);
  LLVMValueRef z = fconst(t, 0.0), one = fconst(t, 1.0);
  switch (op) {
  case COV_OP_MAC: {
    LLVMValueRef v[3] = {a[1], a[2], a[0]};
    return gpu_call_intrinsic(g, "llvm.fmuladd", &t, 1, v, 3);
  }
  case COV_OP_ADD: return LLVMBuildFAdd(B, a[0], a[1], "");
  case COV_OP_SUB: return LLVMBuildFSub(B, a[0], a[1], "");
  case COV_OP_MUL: return LLVMBuildFMul(B, a[0], a[1], "");
  case COV_OP_DIV: return LLVMBuildFDiv(B, a[0], a[1], "");
  case COV_OP_MAX: return fext(x, LLVMRealOGT, a[0], a[1]);
  case COV_OP_MIN: return fext(x, LLVMRealOLT, a[0], a[1]);
  case COV_OP_SQRT: return fintr(x, "llvm.sqrt", a[0]);
  case COV_OP_RSQRT: return LLVMBuildFDiv(B, one, fintr(x, "llvm.sqrt", a[0]), "");
  case COV_OP_NEG: return LLVMBuildFNeg(B, a[0], "");
  case COV_OP_ABS: return fintr(x, "llvm.fabs", a[0]);
  case COV_OP_RELU: return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, a[0], z, ""), z, a[0], "");
  case COV_OP_RELU_MIN: {
    LLVMValueRef r = fext(x, LLVMRealOGT, a[0], z);
    return fext(x, LLVMRealOLT, r, a[1]);
  }
  case COV_OP_SELECT: return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNE, a[0], z, ""), a[1], a[2], "");
  case COV_OP_FLOOR: return fintr(x, "llvm.floor", a[0]);
  case COV_OP_CEIL: return fintr(x, "llvm.ceil", a[0]);
  case COV_OP_ROUND: return fintr(x, "llvm.roundeven", a[0]);
  case COV_OP_SIGN: {
    LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, a[0], z, ""), fconst(t, -1.0), a[0], "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, a[0], z, ""), one, r, "");
  }
  case COV_OP_EQ: return LLVMBuildUIToFP(B, LLVMBuildFCmp(B, LLVMRealOEQ, a[0], a[1], ""), t, "");
  case COV_OP_LT: return LLVMBuildUIToFP(B, LLVMBuildFCmp(B, LLVMRealOLT, a[0], a[1], ""), t, "");
  case COV_OP_LE: return LLVMBuildUIToFP(B, LLVMBuildFCmp(B, LLVMRealOLE, a[0], a[1], ""), t, "");
  case COV_OP_FMOD: return LLVMBuildFRem(B, a[0], a[1], "");
  case COV_OP_MOD: {
    LLVMValueRef r = LLVMBuildFRem(B, a[0], a[1], "");
    LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealONE, r, z, ""),
                                    LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, r, z, ""),
                                                 LLVMBuildFCmp(B, LLVMRealOLT, a[1], z, ""), ""), "");
    return LLVMBuildSelect(B, adj, LLVMBuildFAdd(B, r, a[1], ""), r, "");
  }
  case COV_OP_CAST:
  case COV_OP_COPY: return a[0];
  default: break;
  }
  LLVMValueRef f[CDL_MAX_ARGS];
  for (int i = 0; i < common_op_arity(op) && i < CDL_MAX_ARGS; i++) f[i] = LLVMBuildFPCast(B, a[i], g->f32, "");
  LLVMValueRef r = gpu_cdl_float_op(g, op, f);
  return r ? LLVMBuildFPCast(B, r, t, "") : LLVMGetUndef(t);
}

/* Integers (i64, wrapping); a zero divisor gives 0. */
static LLVMValueRef apply_i(cg *x, cov_op op, LLVMValueRef *a) {
  LLVMBuilderRef B = x->g->b;
  LLVMValueRef z = I64(0);
  switch (op) {
  case COV_OP_MAC: return LLVMBuildAdd(B, a[0], LLVMBuildMul(B, a[1], a[2], ""), "");
  case COV_OP_ADD: return LLVMBuildAdd(B, a[0], a[1], "");
  case COV_OP_SUB: return LLVMBuildSub(B, a[0], a[1], "");
  case COV_OP_MUL: return LLVMBuildMul(B, a[0], a[1], "");
  case COV_OP_DIV:
  case COV_OP_MOD:
  case COV_OP_FMOD: {
    /* divisors 0 and -1 taken out (0: the interpreter's error; -1: INT64_MIN / -1 overflows) */
    LLVMValueRef b0 = LLVMBuildICmp(B, LLVMIntEQ, a[1], z, ""), bm = LLVMBuildICmp(B, LLVMIntEQ, a[1], I64(-1), "");
    LLVMValueRef bs = LLVMBuildSelect(B, LLVMBuildOr(B, b0, bm, ""), I64(1), a[1], "");
    if (op == COV_OP_DIV)
      return LLVMBuildSelect(B, b0, z, LLVMBuildSelect(B, bm, LLVMBuildNeg(B, a[0], ""), LLVMBuildSDiv(B, a[0], bs, ""), ""), "");
    LLVMValueRef r = LLVMBuildSRem(B, a[0], bs, "");
    if (op == COV_OP_MOD) {
      LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, z, ""),
                                      LLVMBuildICmp(B, LLVMIntNE, LLVMBuildICmp(B, LLVMIntSLT, r, z, ""),
                                                    LLVMBuildICmp(B, LLVMIntSLT, a[1], z, ""), ""), "");
      r = LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, a[1], ""), r, "");
    }
    return LLVMBuildSelect(B, LLVMBuildOr(B, b0, bm, ""), z, r, "");
  }
  case COV_OP_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a[0], a[1], ""), a[0], a[1], "");
  case COV_OP_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a[0], a[1], ""), a[0], a[1], "");
  case COV_OP_NEG: return LLVMBuildNeg(B, a[0], "");
  case COV_OP_ABS: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a[0], z, ""), LLVMBuildNeg(B, a[0], ""), a[0], "");
  case COV_OP_RELU: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a[0], z, ""), z, a[0], "");
  case COV_OP_RELU_MIN: {
    LLVMValueRef m = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a[0], a[1], ""), a[0], a[1], "");
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a[0], z, ""), z, m, "");
  }
  case COV_OP_SELECT: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntNE, a[0], z, ""), a[1], a[2], "");
  case COV_OP_SIGN: return LLVMBuildSub(B, cmp64(x, LLVMIntSGT, a[0], z), cmp64(x, LLVMIntSLT, a[0], z), "");
  case COV_OP_EQ: return cmp64(x, LLVMIntEQ, a[0], a[1]);
  case COV_OP_LT: return cmp64(x, LLVMIntSLT, a[0], a[1]);
  case COV_OP_LE: return cmp64(x, LLVMIntSLE, a[0], a[1]);
  case COV_OP_SHL:
  case COV_OP_SHR: {
    /* the interpreter's meaning: 0 for a shift outside 0..63 (LLVM's shift
     * is poison there, so the amount is made 0 first), logical right shift */
    LLVMValueRef in = LLVMBuildICmp(B, LLVMIntULE, a[1], I64(63), "");
    LLVMValueRef n = LLVMBuildSelect(B, in, a[1], z, "");
    LLVMValueRef r = op == COV_OP_SHL ? LLVMBuildShl(B, a[0], n, "") : LLVMBuildLShr(B, a[0], n, "");
    return LLVMBuildSelect(B, in, r, z, "");
  }
  default: return a[0]; /* cast, copy */
  }
}

/* ---- statements ---------------------------------------------------------- */

static void emit_block(cg *x, const cdl_block *b);

static void emit_assign(cg *x, const cdl_stmt *s) {
  gpu_gen *g = x->g;
  cov_dtype dt = x->k->b.dtype[s->dst.operand];
  int float_dom = cov_dtype_is_float(dt), float_args = float_dom || cdl_op_is_float_only(s->op);
  dom m = !float_args ? DOM_I64 : dt == COV_F64 ? DOM_F64 : DOM_F32;
  LLVMValueRef a[CDL_MAX_ARGS];
  for (int i = 0; i < s->n_args && i < CDL_MAX_ARGS; i++) a[i] = load_arg(x, &s->args[i], m, dt);
  LLVMValueRef r = m == DOM_I64 ? apply_i(x, s->op, a) : apply_f(x, s->op, a, m);
  LLVMValueRef ok, p = address(x, &s->dst, &ok);
  LLVMValueRef v = from_dom(x, r, m, dt);
  LLVMBasicBlockRef join = NULL;
  if (ok) begin_if(g, ok, &join);
  LLVMBuildStore(g->b, v, p);
  if (ok) end_if(g, join);
}

/* for (i = 0; i < n; i++) body, n >= 1 */
static void emit_loop(cg *x, const cdl_loop *l) {
  gpu_gen *g = x->g;
  int64_t n = x->k->extent[l->id];
  if (n <= 0) return;
  LLVMValueRef ctr = x->lv[l->id];
  LLVMBuildStore(g->b, I64(0), ctr);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "cdl_loop");
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "cdl_loop_done");
  LLVMBuildBr(g->b, body);
  LLVMPositionBuilderAtEnd(g->b, body);
  emit_block(x, &l->body);
  LLVMValueRef i1 = LLVMBuildAdd(g->b, LLVMBuildLoad2(g->b, g->i64, ctr, ""), I64(1), "");
  LLVMBuildStore(g->b, i1, ctr);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, i1, I64(n), ""), body, after);
  LLVMPositionBuilderAtEnd(g->b, after);
}

static void emit_block(cg *x, const cdl_block *b) {
  for (size_t i = 0; i < b->n; i++) {
    if (b->stmts[i]->kind == CDL_ST_LOOP) emit_loop(x, &b->stmts[i]->loop);
    else emit_assign(x, b->stmts[i]);
  }
}

/* ---- teams ---------------------------------------------------------------- */

/* v (f32, f64 or i64) of the lane at this lane's xor mask */
static LLVMValueRef xor_lane(cg *x, LLVMValueRef v, int mask) {
  gpu_gen *g = x->g;
  LLVMBuilderRef B = g->b;
  LLVMTypeRef t = LLVMTypeOf(v);
  if (t == g->f32)
    return LLVMBuildBitCast(B, g->target->lane_xor(g, LLVMBuildBitCast(B, v, g->i32, ""), mask), g->f32, "");
  LLVMValueRef w = t == g->i64 ? v : LLVMBuildBitCast(B, v, g->i64, "");
  LLVMValueRef lo = g->target->lane_xor(g, LLVMBuildTrunc(B, w, g->i32, ""), mask);
  LLVMValueRef hi = g->target->lane_xor(g, LLVMBuildTrunc(B, LLVMBuildLShr(B, w, I64(32), ""), g->i32, ""), mask);
  LLVMValueRef r = LLVMBuildOr(B, LLVMBuildZExt(B, lo, g->i64, ""), LLVMBuildShl(B, LLVMBuildZExt(B, hi, g->i64, ""), I64(32), ""), "");
  return t == g->i64 ? r : LLVMBuildBitCast(B, r, t, "");
}

/* accumulator op's value in its domain */
static LLVMValueRef acc_load(cg *x, int op, dom *m) {
  cov_dtype d = x->k->b.dtype[op];
  *m = !cov_dtype_is_float(d) ? DOM_I64 : d == COV_F64 ? DOM_F64 : DOM_F32;
  return to_dom(x, LLVMBuildLoad2(x->g->b, elem_type(x->g, d), x->ptr[op], ""), d, *m, d);
}
static void acc_store(cg *x, int op, LLVMValueRef v, dom m) {
  LLVMBuildStore(x->g->b, from_dom(x, v, m, x->k->b.dtype[op]), x->ptr[op]);
}
static LLVMValueRef combine(cg *x, int comb, LLVMValueRef a, LLVMValueRef b, dom m) {
  LLVMValueRef v[2] = {a, b};
  return m == DOM_I64 ? apply_i(x, (cov_op)comb, v) : apply_f(x, (cov_op)comb, v, m);
}
static LLVMValueRef identity(cg *x, int comb, dom m, cov_dtype d) {
  if (m != DOM_I64)
    return LLVMConstReal(dom_type(x->g, m), comb == COV_OP_ADD ? -0.0 : comb == COV_OP_MAX ? -INFINITY : INFINITY);
  return I64(comb == COV_OP_ADD ? 0 : comb == COV_OP_MAX ? sat_lo(d) : sat_hi(d));
}

/* for (f = lane; f < total; f += lanes) { the nest's loops from f; body } */
static void team_loop(cg *x, const cdl_loop **chain, int n, int64_t total) {
  gpu_gen *g = x->g;
  LLVMBuildStore(g->b, x->lane, x->flat);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "team_loop");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "team_body");
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "team_done");
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, head);
  LLVMValueRef f = LLVMBuildLoad2(g->b, g->i64, x->flat, "");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, f, I64(total), ""), body, after);
  LLVMPositionBuilderAtEnd(g->b, body);
  for (int j = n - 1; j >= 0; j--) { /* the innermost loop varies fastest */
    int64_t e = x->k->extent[chain[j]->id];
    LLVMBuildStore(g->b, j ? LLVMBuildURem(g->b, f, I64(e), "") : f, x->lv[chain[j]->id]);
    if (j) f = LLVMBuildUDiv(g->b, f, I64(e), "");
  }
  emit_block(x, &chain[n - 1]->body);
  LLVMValueRef f1 = LLVMBuildAdd(g->b, LLVMBuildLoad2(g->b, g->i64, x->flat, ""), I64(x->k->info.lanes), "");
  LLVMBuildStore(g->b, f1, x->flat);
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, after);
}

/* A nest at the top of a team's item: split over the lanes, then each
 * accumulator's partial values combined (distances 16 .. 1) and with its
 * value before the nest. */
static void emit_team_nest(cg *x, const cdl_stmt *s) {
  const cdl_loop *chain[CDL_MAX_LOOP_DEPTH];
  int n = gpu_cdl_nest(s, chain);
  int64_t total = 1;
  for (int j = 0; j < n; j++) {
    int64_t e = x->k->extent[chain[j]->id];
    if (e <= 0) return;
    total *= e; /* below 2^63: the bound call's tensors are */
  }
  const cdl_codelet *c = x->k->c;
  int comb[CDL_MAX_OPERANDS * 3] = {0};
  LLVMValueRef before[CDL_MAX_OPERANDS * 3];
  for (int op = 0; op < c->n_inputs + c->n_outputs + c->n_locals; op++) {
    if (!(comb[op] = gpu_cdl_team_acc(x->k, chain[0], op))) continue;
    dom m;
    before[op] = acc_load(x, op, &m);
    acc_store(x, op, identity(x, comb[op], m, x->k->b.dtype[op]), m);
  }
  team_loop(x, chain, n, total);
  for (int op = 0; op < c->n_inputs + c->n_outputs + c->n_locals; op++) {
    if (!comb[op]) continue;
    dom m;
    LLVMValueRef v = acc_load(x, op, &m);
    for (int d = GPU_CDL_LANES / 2; d >= 1; d /= 2) v = combine(x, comb[op], v, xor_lane(x, v, d), m);
    acc_store(x, op, combine(x, comb[op], before[op], v, m), m);
  }
}

/* A team's item: nests split over the lanes, tensor stores outside them by
 * lane 0, scalar statements outside them by every lane (equal values). */
static void emit_team_body(cg *x, const cdl_block *b) {
  gpu_gen *g = x->g;
  for (size_t i = 0; i < b->n; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) {
      emit_team_nest(x, s);
      continue;
    }
    if (x->k->c->operands[s->dst.operand].rank == 0) {
      emit_assign(x, s);
      continue;
    }
    LLVMBasicBlockRef join;
    begin_if(g, LLVMBuildICmp(g->b, LLVMIntEQ, x->lane, I64(0), ""), &join);
    emit_assign(x, s);
    end_if(g, join);
  }
}

/* ---- the kernel ---------------------------------------------------------- */

/* Allocas (entry block): loop counters, scalar locals set to zero. */
static cov_status entry_values(cg *x, LLVMValueRef *args) {
  gpu_gen *g = x->g;
  const cdl_codelet *c = x->k->c;
  x->lv = cov_arena_array(x->k->arena, (size_t)(c->n_loops ? c->n_loops : 1), sizeof *x->lv);
  if (!x->lv) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int l = 0; l < c->n_loops; l++) x->lv[l] = LLVMBuildAlloca(g->b, g->i64, "");
  x->flat = LLVMBuildAlloca(g->b, g->i64, "");
  int n = 0;
  for (int op = 0; op < c->n_inputs + c->n_outputs + c->n_locals; op++) {
    const cdl_operand *o = &c->operands[op];
    if (o->role != CDL_LOCAL || o->rank > 0) {
      x->ptr[op] = args[n++];
      continue;
    }
    LLVMTypeRef t = elem_type(g, x->k->b.dtype[op]);
    x->ptr[op] = LLVMBuildAlloca(g->b, t, "");
    LLVMBuildStore(g->b, LLVMConstNull(t), x->ptr[op]);
  }
  return NULL;
}

cov_status gpu_lower_cdl(const gpu_cdl_call *kc, const gpu_target_ops *target, LLVMModuleRef mod, const char *name) {
  gpu_cdl_bound k;
  COV_RETURN_IF_ERROR(gpu_cdl_bind(kc, &k));
  gpu_gen gg = {0}, *g = &gg;
  gpu_plan plan = {0};
  plan.prob.in_dtype = COV_F32;
  plan.threads = GPU_EW_THREADS;
  cov_status st = k.info.lanes > 1 && !target->lane_xor
                      ? cov_error(COV_UNSUPPORTED, GPU_LOC(k.c->file, k.c->name),
                                  "codelet '%s': its work items are teams of %d lanes and target %s exchanges no "
                                  "values between lanes", k.c->name, k.info.lanes, target->name)
                      : gpu_gen_init(g, &plan, target, mod);
  if (st) {
    gpu_cdl_unbind(&k);
    return st;
  }
  gpu_add_kernel_n(g, name, k.info.n_args);
  LLVMValueRef args[GPU_CDL_MAX_ARGS];
  for (int i = 0; i < k.info.n_args; i++) args[i] = LLVMGetParam(g->fn, (unsigned)i);
  cg x = {.g = g, .k = &k};
  st = entry_values(&x, args);
  if (!st) {
    LLVMValueRef tid = gpu_grid_index(g, GPU_EW_THREADS);
    LLVMValueRef i = LLVMBuildZExt(g->b, tid, g->i64, "");
    LLVMBasicBlockRef join;
    begin_if(g, LLVMBuildICmp(g->b, LLVMIntULT, i, LLVMConstInt(g->i64, (unsigned long long)k.info.threads, 0), ""), &join);
    x.lane = LLVMConstInt(g->i64, 0, 0);
    if (k.info.lanes > 1) { /* a team per item: its lanes are consecutive threads of one warp */
      x.lane = LLVMBuildURem(g->b, i, LLVMConstInt(g->i64, (unsigned long long)k.info.lanes, 0), "");
      i = LLVMBuildUDiv(g->b, i, LLVMConstInt(g->i64, (unsigned long long)k.info.lanes, 0), "");
    }
    x.item = i;
    for (int j = k.info.n_par - 1; j >= 0; j--) { /* the last grid loop varies fastest */
      int64_t e = k.extent[k.par[j]];
      LLVMBuildStore(g->b, j ? LLVMBuildURem(g->b, i, LLVMConstInt(g->i64, (unsigned long long)e, 0), "") : i, x.lv[k.par[j]]);
      if (j) i = LLVMBuildUDiv(g->b, i, LLVMConstInt(g->i64, (unsigned long long)e, 0), "");
    }
    if (k.info.lanes > 1) emit_team_body(&x, k.body);
    else emit_block(&x, k.body);
    end_if(g, join);
    LLVMBuildRetVoid(g->b);
  }
  LLVMDisposeBuilder(g->b);
  gpu_cdl_unbind(&k);
  return st;
}
