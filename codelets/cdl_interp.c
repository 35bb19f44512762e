/* codelets/cdl_interp.c: the CPU reference interpreter (cov_codelet_run).
 *
 * Correctness first, speed second: it is the oracle every backend is
 * compared with. A call binds the codelet (cdl_bind.c), then lowers the
 * verified IR to a plan in which every index is an integer affine function
 * of the loop counters. Interval analysis over the loop ranges decides, per
 * access, whether it can leave its tensor: accesses that cannot are folded
 * into one linear offset and run without checks; the others are checked per
 * element (reads out of bounds give 0 or their `else` value, writes out of
 * bounds are errors). The analysis also proves that no index computation
 * can overflow int64 at run time.
 *
 * Statement semantics (codelets/README.md): float destinations compute in
 * double and round once to their dtype; integer destinations compute in
 * wrapping int64 (float-only operations in double, converted saturating). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cdl_interp.h"
#include "common/loc.h"

#include "codelets/cdl_bind.h"
#include "codelets/cdl_iexpr.h"

typedef struct xterm {
  int loop;
  int64_t coef;
} xterm;

typedef struct xdim {
  int64_t c0, extent, stride;
  int n_terms;
  xterm *terms;
} xdim;

typedef struct xaccess {
  const cdl_access *src;
  unsigned char *data;
  cov_dtype dtype;
  size_t esize;
  int rank;
  xdim *dims;
  int checked;     /* may go out of bounds: check every element */
  int64_t off0;    /* unchecked: offset = off0 + sum(lin.coef * loop) */
  int n_lin;
  xterm *lin;
  double else_f;
  int64_t else_i;  /* else_f converted for an integer destination */
  int src_float;   /* elements are floats (converted saturating) */
} xaccess;

typedef struct xarg {
  cdl_arg_kind kind;
  xaccess acc;
  double f;            /* FLOAT, FATTR, constant INDEX */
  int64_t i;           /* the same value for integer statements */
  const cdl_iexpr *ie; /* INDEX that depends on loop variables */
} xarg;

typedef struct xnode xnode;

typedef struct xblock {
  size_t n;
  xnode *nodes;
} xblock;

struct xnode {
  const cdl_stmt *s;
  /* loops */
  int loop;
  int64_t extent;
  xblock body;
  /* assignments */
  int float_dom;
  int u64_dom; /* an operand or the destination is u64: unsigned order */
  xaccess dst;
  int n_args;
  xarg *args;
};

typedef struct interp {
  const cdl_codelet *c;
  int64_t max_steps;
  cdl_binding *b;
  cov_arena *arena;
  unsigned char **data; /* per operand */
  int64_t *loopval;     /* by loop id */
  int64_t *extent;      /* by loop id */
  cdl_env env;
  cov_status err;
} interp;

static cov_status fail_at(const interp *X, cov_loc loc, cov_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static cov_status fail_at(const interp *X, cov_loc loc, cov_code code, const char *fmt, ...) {
  loc.path = X->c->name;
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(code, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- scalar conversions ------------------------------------------------- */

static int64_t sat_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

/* In integer statements, values that come from floats (literals, float
 * attributes, `else` values, elements of float tensors) are converted
 * saturating to the destination's range, so `acc = -inf` is the smallest
 * i8; results of integer arithmetic wrap when stored. */
static int64_t sat_to(cov_dtype d, int64_t v) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (d) {
    case COV_I8: lo = -128, hi = 127; break;
    case COV_U8: lo = 0, hi = 255; break;
    case COV_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case COV_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case COV_U16: lo = 0, hi = UINT16_MAX; break;
    case COV_U32: lo = 0, hi = UINT32_MAX; break;
    case COV_U64: lo = 0; break;
    case COV_BOOL: return v != 0;
    default: break;
  }
  return v < lo ? lo : v > hi ? hi : v;
}

/* double -> f32 rounding to odd: with the extra bits f32 has over f16 and
 * bf16, a second rounding (to nearest even) is then exactly the correct
 * rounding of the double, as numpy's float64 -> float16 conversion does. */
static float to_f32_odd(double v) {
  float f = (float)v;
  if ((double)f == v || isinf(f) || isnan(f)) return f;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if (fabs((double)f) > fabs(v)) u--; /* step toward zero: the truncated value */
  u |= 1u;
  memcpy(&f, &u, sizeof f);
  return f;
}

static double load_f(const unsigned char *p, cov_dtype d) {
  switch (d) {
    case COV_F32: { float v; memcpy(&v, p, 4); return v; }
    case COV_F64: { double v; memcpy(&v, p, 8); return v; }
    case COV_F16: { uint16_t h; memcpy(&h, p, 2); return cov_f16_to_f32(h); }
    case COV_BF16: { uint16_t h; memcpy(&h, p, 2); return cov_bf16_to_f32(h); }
    case COV_I8: return (int8_t)*p;
    case COV_U8: return *p;
    case COV_BOOL: return *p != 0;
    case COV_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case COV_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case COV_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case COV_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case COV_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case COV_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    default: return 0;
  }
}

static int64_t load_i(const unsigned char *p, cov_dtype d) {
  switch (d) {
    case COV_I8: return (int8_t)*p;
    case COV_U8: return *p;
    case COV_BOOL: return *p != 0;
    case COV_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case COV_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case COV_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case COV_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case COV_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case COV_U64: { uint64_t v; memcpy(&v, p, 8); return (int64_t)v; } /* bits; see apply_u */
    default: return sat_i64(load_f(p, d));
  }
}

static void store_f(unsigned char *p, cov_dtype d, double v) {
  switch (d) {
    case COV_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
    case COV_F64: memcpy(p, &v, 8); return;
    case COV_F16: { uint16_t h = cov_f32_to_f16(to_f32_odd(v)); memcpy(p, &h, 2); return; }
    case COV_BF16: { uint16_t h = cov_f32_to_bf16(to_f32_odd(v)); memcpy(p, &h, 2); return; }
    default: return;
  }
}

/* Wrapping stores: the low bits of the two's complement value. */
static void store_i(unsigned char *p, cov_dtype d, int64_t v) {
  switch (d) {
    case COV_I8:
    case COV_U8: *p = (unsigned char)(uint64_t)v; return;
    case COV_BOOL: *p = v != 0; return;
    case COV_I32: { uint32_t u = (uint32_t)(uint64_t)v; memcpy(p, &u, 4); return; }
    case COV_I64:
    case COV_U64: memcpy(p, &v, 8); return;
    case COV_I16:
    case COV_U16: { uint16_t u = (uint16_t)(uint64_t)v; memcpy(p, &u, 2); return; }
    case COV_U32: { uint32_t u = (uint32_t)(uint64_t)v; memcpy(p, &u, 4); return; }
    default: return;
  }
}

/* ---- operations --------------------------------------------------------- */

static double apply_f(cov_op op, const double *a) {
  switch (op) {
    case COV_OP_MAC: return a[0] + a[1] * a[2];
    case COV_OP_ADD: return a[0] + a[1];
    case COV_OP_SUB: return a[0] - a[1];
    case COV_OP_MUL: return a[0] * a[1];
    case COV_OP_DIV: return a[0] / a[1];
    /* NaN propagates, as numpy's maximum/minimum */
    case COV_OP_MAX: return (a[0] > a[1] || isnan(a[0])) ? a[0] : a[1];
    case COV_OP_MIN: return (a[0] < a[1] || isnan(a[0])) ? a[0] : a[1];
    case COV_OP_POW: return pow(a[0], a[1]);
    case COV_OP_EXP: return exp(a[0]);
    case COV_OP_LOG: return log(a[0]);
    case COV_OP_SQRT: return sqrt(a[0]);
    case COV_OP_RSQRT: return 1.0 / sqrt(a[0]);
    case COV_OP_NEG: return -a[0];
    case COV_OP_ABS: return fabs(a[0]);
    case COV_OP_TANH: return tanh(a[0]);
    case COV_OP_ERF: return erf(a[0]);
    case COV_OP_SIGMOID: return 1.0 / (1.0 + exp(-a[0]));
    case COV_OP_RELU: return a[0] < 0 ? 0.0 : a[0];
    case COV_OP_RELU_MIN: { /* max(a, 0) then min(., b), NaN propagating as those */
      double t = (a[0] > 0 || isnan(a[0])) ? a[0] : 0.0;
      return (t < a[1] || isnan(t)) ? t : a[1];
    }
    case COV_OP_SELECT: return a[0] != 0 ? a[1] : a[2];
    case COV_OP_FLOOR: return floor(a[0]);
    case COV_OP_CEIL: return ceil(a[0]);
    case COV_OP_ROUND: return common_round_even(a[0]);
    case COV_OP_SIGN: return a[0] > 0 ? 1.0 : a[0] < 0 ? -1.0 : a[0];
    case COV_OP_SIN: return sin(a[0]);
    case COV_OP_COS: return cos(a[0]);
    case COV_OP_TAN: return tan(a[0]);
    case COV_OP_ASIN: return asin(a[0]);
    case COV_OP_ACOS: return acos(a[0]);
    case COV_OP_ATAN: return atan(a[0]);
    case COV_OP_SINH: return sinh(a[0]);
    case COV_OP_COSH: return cosh(a[0]);
    case COV_OP_ASINH: return asinh(a[0]);
    case COV_OP_ACOSH: return acosh(a[0]);
    case COV_OP_ATANH: return atanh(a[0]);
    case COV_OP_EQ: return a[0] == a[1];
    case COV_OP_LT: return a[0] < a[1];
    case COV_OP_LE: return a[0] <= a[1];
    case COV_OP_MOD: return common_mod_floor(a[0], a[1]);
    case COV_OP_FMOD: return fmod(a[0], a[1]);
    case COV_OP_CAST:
    case COV_OP_COPY: return a[0];
    default: return NAN;
  }
}

static uint64_t u(int64_t v) { return (uint64_t)v; }
static int64_t s64(uint64_t v) { return (int64_t)v; }

/* Returns 0 on integer division by zero. */
static int apply_i(cov_op op, const int64_t *a, int64_t *r) {
  switch (op) {
    case COV_OP_MAC: *r = s64(u(a[0]) + u(a[1]) * u(a[2])); return 1;
    case COV_OP_ADD: *r = s64(u(a[0]) + u(a[1])); return 1;
    case COV_OP_SUB: *r = s64(u(a[0]) - u(a[1])); return 1;
    case COV_OP_MUL: *r = s64(u(a[0]) * u(a[1])); return 1;
    case COV_OP_DIV:
      if (a[1] == 0) return 0;
      *r = (a[1] == -1) ? s64(0 - u(a[0])) : a[0] / a[1]; /* truncates, as ONNX Div */
      return 1;
    case COV_OP_MAX: *r = a[0] > a[1] ? a[0] : a[1]; return 1;
    case COV_OP_MIN: *r = a[0] < a[1] ? a[0] : a[1]; return 1;
    case COV_OP_NEG: *r = s64(0 - u(a[0])); return 1;
    case COV_OP_ABS: *r = a[0] < 0 ? s64(0 - u(a[0])) : a[0]; return 1;
    case COV_OP_RELU: *r = a[0] < 0 ? 0 : a[0]; return 1;
    case COV_OP_RELU_MIN: *r = a[0] < 0 ? 0 : a[0] < a[1] ? a[0] : a[1]; return 1;
    case COV_OP_SELECT: *r = a[0] != 0 ? a[1] : a[2]; return 1;
    case COV_OP_SIGN: *r = (a[0] > 0) - (a[0] < 0); return 1;
    case COV_OP_EQ: *r = a[0] == a[1]; return 1;
    case COV_OP_LT: *r = a[0] < a[1]; return 1;
    case COV_OP_LE: *r = a[0] <= a[1]; return 1;
    case COV_OP_MOD:
    case COV_OP_FMOD:
      if (a[1] == 0) return 0;
      if (a[1] == -1) { /* INT64_MIN % -1 overflows in C; the remainder is 0 */
        *r = 0;
        return 1;
      }
      *r = a[0] % a[1]; /* truncated, as C fmod */
      if (op == COV_OP_MOD && *r != 0 && ((*r < 0) != (a[1] < 0))) *r += a[1];
      return 1;
    case COV_OP_SHL: *r = a[1] < 0 || a[1] > 63 ? 0 : s64(u(a[0]) << a[1]); return 1;
    case COV_OP_SHR: *r = a[1] < 0 || a[1] > 63 ? 0 : s64(u(a[0]) >> a[1]); return 1;
    default: *r = a[0]; return 1; /* cast, copy */
  }
}

/* u64 statements: the int64 bits read as unsigned where the sign matters
 * (order, division, remainder); the rest is apply_i's wrapping arithmetic. */
static int apply_u(cov_op op, const int64_t *a, int64_t *r) {
  uint64_t x = u(a[0]), y = u(a[1]);
  switch (op) {
    case COV_OP_DIV:
      if (y == 0) return 0;
      *r = s64(x / y);
      return 1;
    case COV_OP_MOD:
    case COV_OP_FMOD:
      if (y == 0) return 0;
      *r = s64(x % y);
      return 1;
    case COV_OP_MAX: *r = s64(x > y ? x : y); return 1;
    case COV_OP_MIN: *r = s64(x < y ? x : y); return 1;
    case COV_OP_LT: *r = x < y; return 1;
    case COV_OP_LE: *r = x <= y; return 1;
    case COV_OP_ABS:
    case COV_OP_RELU: *r = a[0]; return 1;
    case COV_OP_RELU_MIN: *r = s64(x < y ? x : y); return 1;
    case COV_OP_SIGN: *r = x != 0; return 1;
    default: return apply_i(op, a, r);
  }
}

/* ---- plan building ------------------------------------------------------ */

static cov_status eval_const(interp *X, const cdl_iexpr *e, int64_t *v) {
  return cdl_eval(e, &X->env, v);
}

/* Interval analysis of one access under the loop ranges; fills the plan. */
static cov_status plan_access(interp *X, const cdl_access *a, xaccess *x, int live,
                              cov_dtype dst_dtype) {
  const cdl_codelet *c = X->c;
  const cdl_binding *b = X->b;
  x->src = a;
  x->data = X->data[a->operand];
  x->dtype = b->dtype[a->operand];
  x->esize = cov_dtype_size(x->dtype);
  x->rank = c->operands[a->operand].rank;
  x->else_f = a->has_else ? a->else_value : 0.0;
  x->else_i = sat_to(dst_dtype, sat_i64(x->else_f));
  x->src_float = cov_dtype_is_float(x->dtype);
  if (x->rank == 0) return NULL; /* offset 0, always in bounds */
  x->dims = cov_arena_array(X->arena, (size_t)x->rank, sizeof *x->dims);
  if (!x->dims) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int64_t stride = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    x->dims[d].extent = b->shape[a->operand][d];
    x->dims[d].stride = stride;
    stride *= x->dims[d].extent ? x->dims[d].extent : 1; /* bounded by the tensor size */
  }
  int in_bounds = 1;
  for (int d = 0; d < x->rank; d++) {
    const cdl_affine *f = &a->aff[d];
    xdim *xd = &x->dims[d];
    COV_RETURN_IF_ERROR(eval_const(X, f->constant, &xd->c0));
    xd->terms = cov_arena_array(X->arena, f->n_terms ? f->n_terms : 1, sizeof *xd->terms);
    if (!xd->terms) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    int64_t lo = xd->c0, hi = xd->c0;
    int overflow = 0;
    for (size_t t = 0; t < f->n_terms; t++) {
      int64_t coef, span, ext = X->extent[f->loops[t]];
      COV_RETURN_IF_ERROR(eval_const(X, f->coefs[t], &coef));
      if (ext <= 1 || coef == 0) continue; /* the counter is always 0 */
      xd->terms[xd->n_terms++] = (xterm){f->loops[t], coef};
      overflow |= __builtin_mul_overflow(coef, ext - 1, &span);
      if (span < 0) overflow |= __builtin_add_overflow(lo, span, &lo);
      else overflow |= __builtin_add_overflow(hi, span, &hi);
    }
    if (overflow && live)
      return fail_at(X, a->idx[d]->loc, COV_OUT_OF_RANGE,
                     "index %d of '%s' overflows int64 for these shapes and attributes", d + 1,
                     a->name);
    if (lo < 0 || hi >= xd->extent) in_bounds = 0;
  }
  x->checked = !in_bounds || !live;
  if (x->checked) return NULL;
  /* Fold into one linear offset: every term is bounded by the tensor size. */
  int n = 0;
  for (int d = 0; d < x->rank; d++) n += x->dims[d].n_terms;
  x->lin = cov_arena_array(X->arena, n ? (size_t)n : 1, sizeof *x->lin);
  if (!x->lin) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int d = 0; d < x->rank; d++) {
    const xdim *xd = &x->dims[d];
    x->off0 += xd->c0 * xd->stride;
    for (int t = 0; t < xd->n_terms; t++) {
      int k = 0;
      while (k < x->n_lin && x->lin[k].loop != xd->terms[t].loop) k++;
      if (k == x->n_lin) x->lin[x->n_lin++] = (xterm){xd->terms[t].loop, 0};
      x->lin[k].coef += xd->terms[t].coef * xd->stride;
    }
  }
  return NULL;
}

static cov_status plan_block(interp *X, const cdl_block *b, xblock *out, int live,
                             int64_t mult, int64_t *steps);

static cov_status plan_assign(interp *X, const cdl_stmt *s, xnode *x, int live) {
  x->s = s;
  cov_dtype dt = X->b->dtype[s->dst.operand];
  x->float_dom = cov_dtype_is_float(dt);
  x->u64_dom = dt == COV_U64;
  COV_RETURN_IF_ERROR(plan_access(X, &s->dst, &x->dst, live, dt));
  x->n_args = s->n_args;
  x->args = cov_arena_array(X->arena, (size_t)s->n_args, sizeof *x->args);
  if (!x->args) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int k = 0; k < s->n_args; k++) {
    const cdl_arg *a = &s->args[k];
    xarg *xa = &x->args[k];
    xa->kind = a->kind;
    switch (a->kind) {
      case CDL_ARG_ACCESS:
        COV_RETURN_IF_ERROR(plan_access(X, &a->access, &xa->acc, live, dt));
        x->u64_dom |= xa->acc.dtype == COV_U64;
        break;
      case CDL_ARG_FLOAT:
        xa->f = a->f;
        xa->i = sat_to(dt, sat_i64(a->f));
        break;
      case CDL_ARG_FATTR:
        xa->f = X->b->attr_f[a->attr];
        xa->i = sat_to(dt, sat_i64(xa->f));
        break;
      case CDL_ARG_INDEX:
        if (cdl_iexpr_has_loop(a->ie)) {
          xa->ie = a->ie;
        } else {
          COV_RETURN_IF_ERROR(eval_const(X, a->ie, &xa->i));
          xa->f = (double)xa->i;
        }
        break;
    }
  }
  return NULL;
}

static cov_status plan_block(interp *X, const cdl_block *b, xblock *out, int live,
                             int64_t mult, int64_t *steps) {
  out->n = b->n;
  out->nodes = cov_arena_array(X->arena, b->n ? b->n : 1, sizeof *out->nodes);
  if (!out->nodes) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (size_t i = 0; i < b->n; i++) {
    const cdl_stmt *s = b->stmts[i];
    xnode *x = &out->nodes[i];
    if (s->kind == CDL_ST_ASSIGN) {
      COV_RETURN_IF_ERROR(plan_assign(X, s, x, live));
      if (__builtin_add_overflow(*steps, mult, steps) || *steps > X->max_steps)
        return fail_at(X, s->loc, COV_OUT_OF_RANGE,
                       "this call would execute more than %lld statements; the reference "
                       "interpreter is meant for test-sized shapes",
                       (long long)X->max_steps);
      continue;
    }
    x->s = s;
    x->loop = s->loop.id;
    int64_t ext;
    COV_RETURN_IF_ERROR(eval_const(X, s->loop.extent, &ext));
    if (ext < 0)
      return fail_at(X, s->loop.loc, COV_INVALID_ARGUMENT,
                     "loop '%s' would have a negative extent (%s = %lld)", s->loop.var,
                     cdl_iexpr_str(X->arena, s->loop.extent), (long long)ext);
    x->extent = X->extent[x->loop] = ext;
    int64_t m;
    if (__builtin_mul_overflow(mult, ext, &m)) m = INT64_MAX;
    COV_RETURN_IF_ERROR(plan_block(X, &s->loop.body, &x->body, live && ext > 0, m, steps));
  }
  return NULL;
}

/* ---- execution ---------------------------------------------------------- */

/* Offset of an access at the current loop counters; 0 when out of bounds. */
static int offset_of(const xaccess *a, const int64_t *lv, int64_t *off) {
  int64_t o = 0;
  if (!a->checked) {
    o = a->off0;
    for (int t = 0; t < a->n_lin; t++) o += a->lin[t].coef * lv[a->lin[t].loop];
    *off = o;
    return 1;
  }
  for (int d = 0; d < a->rank; d++) {
    const xdim *xd = &a->dims[d];
    int64_t idx = xd->c0;
    for (int t = 0; t < xd->n_terms; t++) idx += xd->terms[t].coef * lv[xd->terms[t].loop];
    if (idx < 0 || idx >= xd->extent) return 0;
    o += idx * xd->stride;
  }
  *off = o;
  return 1;
}

static cov_status oob_write(interp *X, const xaccess *a) {
  char buf[256];
  size_t n = 0;
  int bad = 0;
  int64_t bad_idx = 0, bad_ext = 0;
  for (int d = 0; d < a->rank && n < sizeof buf; d++) {
    const xdim *xd = &a->dims[d];
    int64_t idx = xd->c0;
    for (int t = 0; t < xd->n_terms; t++) idx += xd->terms[t].coef * X->loopval[xd->terms[t].loop];
    if ((idx < 0 || idx >= xd->extent) && !bad) {
      bad = d + 1;
      bad_idx = idx;
      bad_ext = xd->extent;
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", d ? ", " : "", (long long)idx);
  }
  return fail_at(X, a->src->loc, COV_OUT_OF_RANGE,
                 "write to %s[%s] is out of bounds (index %d is %lld, outside 0..%lld)",
                 a->src->name, buf, bad, (long long)bad_idx, (long long)bad_ext - 1);
}

static int run_assign(interp *X, const xnode *x) {
  const int64_t *lv = X->loopval;
  const cdl_stmt *s = x->s;
  int64_t off;
  if (!offset_of(&x->dst, lv, &off)) {
    X->err = oob_write(X, &x->dst);
    return 0;
  }
  unsigned char *dst = x->dst.data + off * (int64_t)x->dst.esize;
  int float_args = x->float_dom || cdl_op_is_float_only(s->op);
  double fv[CDL_MAX_ARGS];
  int64_t iv[CDL_MAX_ARGS];
  for (int k = 0; k < x->n_args; k++) {
    const xarg *a = &x->args[k];
    if (a->kind == CDL_ARG_ACCESS) {
      int64_t o;
      if (!offset_of(&a->acc, lv, &o)) {
        fv[k] = a->acc.else_f;
        iv[k] = a->acc.else_i;
      } else if (float_args) {
        fv[k] = load_f(a->acc.data + o * (int64_t)a->acc.esize, a->acc.dtype);
      } else {
        iv[k] = load_i(a->acc.data + o * (int64_t)a->acc.esize, a->acc.dtype);
        if (a->acc.src_float) iv[k] = sat_to(x->dst.dtype, iv[k]);
      }
    } else if (a->ie) {
      cov_status st = cdl_eval(a->ie, &X->env, &iv[k]);
      if (st) {
        X->err = st;
        return 0;
      }
      fv[k] = (double)iv[k];
    } else {
      fv[k] = a->f;
      iv[k] = a->i;
    }
  }
  cov_dtype dt = x->dst.dtype;
  if (x->float_dom) {
    store_f(dst, dt, apply_f(s->op, fv));
  } else if (float_args) { /* a float-only op into an integer type */
    store_i(dst, dt, sat_to(dt, sat_i64(apply_f(s->op, fv))));
  } else {
    int64_t r;
    if (!(x->u64_dom ? apply_u : apply_i)(s->op, iv, &r)) {
      X->err = fail_at(X, s->op_loc, COV_INVALID_ARGUMENT, "integer division by zero");
      return 0;
    }
    store_i(dst, dt, r);
  }
  return 1;
}

/* A nest of loops, each the only statement of the one above, around one
 * float statement whose destination element is the same for the whole
 * nest: a reduction (`acc[k, p, q] = mac(acc[k, p, q], x[c, p + r, q + s],
 * w[k, c, r, s])` over c, r, s). run_nest runs it with the element in a
 * register of the destination's dtype, read back after each step's
 * rounding, so the result is bit for bit that of run_assign per step; the
 * other arguments move by a precomputed step per loop (an odometer) instead
 * of being located from every counter, and no call is made per step. A
 * statement that reads its destination's tensor at another element, takes
 * a loop index as an argument, or computes in integers goes the general
 * way. */
#define NEST_MAX 6

typedef struct xnest {
  int depth;
  const xnode *loops[NEST_MAX];
  const xnode *x; /* the statement */
} xnest;

static int depends_on(const xaccess *a, int loop) {
  for (int d = 0; d < a->rank; d++)
    for (int t = 0; t < a->dims[d].n_terms; t++)
      if (a->dims[d].terms[t].loop == loop) return 1;
  return 0;
}

static int nest_of(const xnode *loop, xnest *n) {
  n->depth = 0;
  const xnode *x = loop;
  while (x->s->kind != CDL_ST_ASSIGN) {
    if (n->depth == NEST_MAX || x->body.n != 1) return 0;
    n->loops[n->depth++] = x;
    x = &x->body.nodes[0];
  }
  n->x = x;
  if (!x->float_dom || x->n_args > CDL_MAX_ARGS || x->dst.rank > COV_MAX_RANK) return 0;
  for (int j = 0; j < n->depth; j++)
    if (depends_on(&x->dst, n->loops[j]->loop)) return 0;
  for (int k = 0; k < x->n_args; k++)
    if (x->args[k].kind != CDL_ARG_ACCESS ? x->args[k].ie != NULL : x->args[k].acc.rank > COV_MAX_RANK)
      return 0;
  return 1;
}

/* An index that gains step[j] per trip of nest loop j: what it gains when
 * loop j steps and the loops inside it wrap to 0 (the odometer's carry). */
static void nest_carries(const xnest *n, const int64_t *step, int64_t carry[][COV_MAX_RANK], int d) {
  int64_t back = 0; /* what the loops inside j have added when they wrap */
  for (int j = n->depth - 1; j >= 0; j--) {
    carry[j][d] = step[j] - back;
    back += step[j] * (n->loops[j]->extent - 1);
  }
}

/* Returns -1 when the nest is not one run_nest takes, else run_block's
 * result. */
static int run_nest(interp *X, const xnode *loop) {
  xnest n;
  if (!nest_of(loop, &n)) return -1;
  const xnode *x = n.x;
  int64_t *lv = X->loopval, total = 1;
  for (int j = 0; j < n.depth; j++) {
    lv[n.loops[j]->loop] = 0;
    if (n.loops[j]->extent <= 0) return 1; /* as run_block: the body never runs */
    total *= n.loops[j]->extent; /* bounded by the plan's step count */
  }
  int64_t doff;
  if (!offset_of(&x->dst, lv, &doff)) return -1; /* the general path reports it */
  /* per argument: its index now, and what it gains when loop j steps and the
   * loops inside it wrap to 0 */
  int self[CDL_MAX_ARGS], dims[CDL_MAX_ARGS];
  int64_t idx[CDL_MAX_ARGS][COV_MAX_RANK], carry[CDL_MAX_ARGS][NEST_MAX][COV_MAX_RANK];
  for (int k = 0; k < x->n_args; k++) {
    const xaccess *a = &x->args[k].acc;
    self[k] = 0;
    if (x->args[k].kind != CDL_ARG_ACCESS) continue;
    if (a->data == x->dst.data) {
      int64_t o;
      for (int j = 0; j < n.depth; j++)
        if (depends_on(a, n.loops[j]->loop)) return -1;
      if (!offset_of(a, lv, &o) || o != doff || a->dtype != x->dst.dtype) return -1;
      self[k] = 1;
      continue;
    }
    /* an access proven in bounds moves as its linear offset (one
     * "dimension" of stride 1), a checked one per dimension */
    dims[k] = a->checked ? a->rank : 1;
    if (!a->checked) {
      int64_t step[NEST_MAX] = {0};
      offset_of(a, lv, &idx[k][0]);
      for (int t = 0; t < a->n_lin; t++)
        for (int j = 0; j < n.depth; j++)
          if (a->lin[t].loop == n.loops[j]->loop) step[j] += a->lin[t].coef;
      nest_carries(&n, step, carry[k], 0);
      continue;
    }
    for (int d = 0; d < a->rank; d++) {
      const xdim *xd = &a->dims[d];
      int64_t step[NEST_MAX] = {0};
      idx[k][d] = xd->c0;
      for (int t = 0; t < xd->n_terms; t++) {
        idx[k][d] += xd->terms[t].coef * lv[xd->terms[t].loop];
        for (int j = 0; j < n.depth; j++)
          if (xd->terms[t].loop == n.loops[j]->loop) step[j] += xd->terms[t].coef;
      }
      nest_carries(&n, step, carry[k], d);
    }
  }
  const cov_op op = x->s->op;
  const cov_dtype dt = x->dst.dtype;
  unsigned char *dst = x->dst.data + doff * (int64_t)x->dst.esize, reg[8];
  memcpy(reg, dst, x->dst.esize);
  double fv[CDL_MAX_ARGS];
  for (int k = 0; k < x->n_args; k++)
    if (x->args[k].kind != CDL_ARG_ACCESS) fv[k] = x->args[k].f;
  for (int64_t it = 0; it < total; it++) {
    for (int k = 0; k < x->n_args; k++) {
      const xaccess *a = &x->args[k].acc;
      if (x->args[k].kind != CDL_ARG_ACCESS) continue;
      if (self[k]) {
        fv[k] = load_f(reg, dt);
        continue;
      }
      int64_t o = idx[k][0];
      int in = 1;
      if (a->checked) {
        o = 0;
        for (int d = 0; d < a->rank; d++) {
          in &= idx[k][d] >= 0 && idx[k][d] < a->dims[d].extent;
          o += idx[k][d] * a->dims[d].stride;
        }
      }
      fv[k] = in ? load_f(a->data + o * (int64_t)a->esize, a->dtype) : a->else_f;
    }
    store_f(reg, dt, apply_f(op, fv));
    /* the odometer: the innermost loop that does not wrap steps */
    int j = n.depth - 1;
    while (j > 0 && lv[n.loops[j]->loop] == n.loops[j]->extent - 1) lv[n.loops[j--]->loop] = 0;
    lv[n.loops[j]->loop]++;
    for (int k = 0; k < x->n_args; k++)
      if (x->args[k].kind == CDL_ARG_ACCESS && !self[k])
        for (int d = 0; d < dims[k]; d++) idx[k][d] += carry[k][j][d];
  }
  memcpy(dst, reg, x->dst.esize);
  return 1;
}

static int run_block(interp *X, const xblock *b) {
  for (size_t i = 0; i < b->n; i++) {
    const xnode *x = &b->nodes[i];
    if (x->s->kind == CDL_ST_ASSIGN) {
      if (!run_assign(X, x)) return 0;
      continue;
    }
    int r = run_nest(X, x);
    if (r >= 0) {
      if (!r) return 0;
      continue;
    }
    int64_t *lv = &X->loopval[x->loop];
    for (*lv = 0; *lv < x->extent; (*lv)++)
      if (!run_block(X, &x->body)) return 0;
  }
  return 1;
}

/* ---- the public entry point --------------------------------------------- */

static cov_status run(const cov_codelet *c, const cov_attr *attrs, size_t n_attrs,
                      const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                      cov_arena *arena, cov_tensor *locals, int64_t max_steps) {
  cdl_binding b;
  COV_RETURN_IF_ERROR(cdl_bind(c, attrs, n_attrs, inputs, n_inputs, arena, &b));
  interp X = {.c = c, .b = &b, .arena = arena, .max_steps = max_steps};
  int n_ops = c->n_inputs + c->n_outputs + c->n_locals;
  X.data = cov_arena_array(arena, (size_t)n_ops + 1, sizeof *X.data);
  X.loopval = cov_arena_array(arena, (size_t)c->n_loops + 1, sizeof *X.loopval);
  X.extent = cov_arena_array(arena, (size_t)c->n_loops + 1, sizeof *X.extent);
  if (!X.data || !X.loopval || !X.extent) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  X.env = (cdl_env){.c = c, .dims = b.dims, .attrs = b.attr_i, .lets = b.lets, .loops = X.loopval};
  for (int i = 0; i < c->n_inputs; i++) {
    if (!inputs[i].data && cov_tensor_numel(&inputs[i]) != 0)
      return fail_at(&X, c->operands[i].loc, COV_INVALID_ARGUMENT, "input '%s' has no data",
                     c->operands[i].name);
    X.data[i] = inputs[i].data;
  }
  for (int i = c->n_inputs; i < n_ops; i++) {
    cov_tensor *t = i < c->n_inputs + c->n_outputs ? &outputs[i - c->n_inputs]
                                                   : &locals[i - c->n_inputs - c->n_outputs];
    cov_status st = cov_tensor_alloc(t, b.dtype[i], c->operands[i].rank, b.shape[i]);
    if (st) {
      cov_loc loc = c->operands[i].loc;
      loc.path = c->name;
      cov_status located = cov_error(cov_status_code(st), &loc, "cannot allocate '%s': %s",
                                     c->operands[i].name, cov_status_message(st));
      cov_status_free(st);
      return located;
    }
    X.data[i] = t->data;
  }
  xblock plan;
  int64_t steps = 0;
  COV_RETURN_IF_ERROR(plan_block(&X, &c->body, &plan, 1, 1, &steps));
  if (!run_block(&X, &plan)) return X.err;
  return NULL;
}

cov_status cdl_run(const cdl_codelet *c, const cov_attr *attrs, size_t n_attrs,
                   const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                   size_t n_outputs, int64_t max_steps) {
  if (!c || (n_inputs && !inputs) || (n_attrs && !attrs) || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cdl_run"), "cov_codelet_run: NULL argument");
  for (size_t i = 0; i < n_outputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  if (n_outputs != (size_t)c->n_outputs) {
    cov_loc loc = c->loc;
    loc.path = c->name;
    return cov_error(COV_INVALID_ARGUMENT, &loc, "'%s' has %d output%s, got room for %zu",
                     c->name, c->n_outputs, c->n_outputs == 1 ? "" : "s", n_outputs);
  }
  cov_arena *arena = cov_arena_create();
  cov_tensor locals[CDL_MAX_OPERANDS];
  memset(locals, 0, sizeof locals);
  cov_status st = arena ? run(c, attrs, n_attrs, inputs, n_inputs, outputs, arena, locals,
                              max_steps)
                        : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < CDL_MAX_OPERANDS; i++) cov_tensor_release(&locals[i]);
  if (st)
    for (size_t i = 0; i < n_outputs; i++) cov_tensor_release(&outputs[i]);
  cov_arena_destroy(arena);
  return st;
}

cov_status cov_codelet_run(const cov_codelet *c, const cov_attr *attrs, size_t n_attrs,
                           const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                           size_t n_outputs) {
  return cdl_run(c, attrs, n_attrs, inputs, n_inputs, outputs, n_outputs, CDL_MAX_STEPS);
}
