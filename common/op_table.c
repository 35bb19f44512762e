/* common/op_table.c: lookups over op_table.def. */
#include "common/op_table.h"

#include <math.h>
#include <string.h>

static const struct {
  const char *name;
  int arity;
  const char *doc;
} k_ops[COV_OP_COUNT] = {
    [COV_OP_INVALID] = {"<invalid>", -1, ""},
#define COV_OP(id, nm, ar, dc) [COV_OP_##id] = {nm, ar, dc},
#include "common/op_table.def"
#undef COV_OP
};

cov_op common_op_from_name(const char *name) {
  if (!name) return COV_OP_INVALID;
  for (int i = 1; i < COV_OP_COUNT; i++)
    if (strcmp(k_ops[i].name, name) == 0) return (cov_op)i;
  return COV_OP_INVALID;
}

const char *common_op_name(cov_op op) {
  return (op > 0 && op < COV_OP_COUNT) ? k_ops[op].name : k_ops[0].name;
}

int common_op_arity(cov_op op) { return (op > 0 && op < COV_OP_COUNT) ? k_ops[op].arity : -1; }

const char *common_op_doc(cov_op op) { return (op > 0 && op < COV_OP_COUNT) ? k_ops[op].doc : ""; }

const char *common_op_names(void) {
  return "mac, add, sub, mul, div, max, min, pow, exp, log, sqrt, rsqrt, neg, abs, tanh, erf, "
         "sigmoid, relu, cast, select, copy, floor, ceil, round, sign, sin, cos, tan, asin, acos, atan, "
         "sinh, cosh, asinh, acosh, atanh, eq, lt, le, mod, fmod, relu_min, shl, shr";
}

float common_op_eval_f32(cov_op op, float a, float b) {
  switch (op) {
    case COV_OP_ADD: return a + b;
    case COV_OP_SUB: return a - b;
    case COV_OP_MUL: return a * b;
    case COV_OP_DIV: return a / b;
    case COV_OP_MAX: return a > b ? a : b;
    case COV_OP_MIN: return a < b ? a : b;
    case COV_OP_POW: return powf(a, b);
    case COV_OP_EXP: return expf(a);
    case COV_OP_LOG: return logf(a);
    case COV_OP_SQRT: return sqrtf(a);
    case COV_OP_RSQRT: return 1.0f / sqrtf(a);
    case COV_OP_NEG: return -a;
    case COV_OP_ABS: return fabsf(a);
    case COV_OP_TANH: return tanhf(a);
    case COV_OP_ERF: return erff(a);
    case COV_OP_SIGMOID: return 1.0f / (1.0f + expf(-a));
    case COV_OP_RELU: return a > 0 ? a : 0.0f;
    case COV_OP_FLOOR: return floorf(a);
    case COV_OP_CEIL: return ceilf(a);
    case COV_OP_ROUND: return (float)common_round_even(a);
    case COV_OP_SIGN: return a > 0 ? 1.0f : a < 0 ? -1.0f : a;
    case COV_OP_SIN: return sinf(a);
    case COV_OP_COS: return cosf(a);
    case COV_OP_TAN: return tanf(a);
    case COV_OP_ASIN: return asinf(a);
    case COV_OP_ACOS: return acosf(a);
    case COV_OP_ATAN: return atanf(a);
    case COV_OP_SINH: return sinhf(a);
    case COV_OP_COSH: return coshf(a);
    case COV_OP_ASINH: return asinhf(a);
    case COV_OP_ACOSH: return acoshf(a);
    case COV_OP_ATANH: return atanhf(a);
    case COV_OP_EQ: return a == b ? 1.0f : 0.0f;
    case COV_OP_LT: return a < b ? 1.0f : 0.0f;
    case COV_OP_LE: return a <= b ? 1.0f : 0.0f;
    case COV_OP_MOD: return (float)common_mod_floor(a, b);
    case COV_OP_FMOD: return fmodf(a, b);
    case COV_OP_RELU_MIN: { /* exactly max(a, 0) then min(., b), as the two ops */
      float t = a > 0 ? a : 0.0f;
      return t < b ? t : b;
    }
    default: return a; /* copy, cast */
  }
}

double common_round_even(double a) {
  /* Not rint/nearbyint: their result depends on the caller's rounding mode. */
  if (!isfinite(a)) return a;
  double r = floor(a), d = a - r; /* exact */
  if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0; /* ties to the even neighbour */
  return r;
}

double common_mod_floor(double a, double b) {
  double r = fmod(a, b);
  if (r != 0.0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
