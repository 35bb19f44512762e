/* codelets/cdl_util.c: small facts and helpers shared by the codelet
 * module: accumulator types, type classes, float-only ops, name
 * suggestions, and the float literal format the printer and messages use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cdl_ir.h"
#include "common/c_locale.h"
#include "common/edit_distance.h"

cov_dtype cdl_acc_dtype(cov_dtype d) {
  switch (d) {
    case COV_F32:
    case COV_F16:
    case COV_BF16: return COV_F32;
    case COV_F64: return COV_F64;
    case COV_I64:
    case COV_U32: return COV_I64;
    case COV_U64: return COV_U64;
    case COV_I8:
    case COV_I16:
    case COV_U16:
    case COV_U8:
    case COV_I32:
    case COV_BOOL: return COV_I32;
    default: return COV_DTYPE_INVALID;
  }
}

int cdl_tclass_admits(cdl_tclass tc, cov_dtype d) {
  if (d == COV_BOOL || d <= COV_DTYPE_INVALID || d >= COV_DTYPE_COUNT) return 0;
  switch (tc) {
    case CDL_TC_ANY: return 1;
    case CDL_TC_FLOAT: return cov_dtype_is_float(d);
    case CDL_TC_INT: return !cov_dtype_is_float(d);
  }
  return 0;
}

const char *cdl_tclass_name(cdl_tclass tc) {
  switch (tc) {
    case CDL_TC_ANY: return "any";
    case CDL_TC_FLOAT: return "float";
    case CDL_TC_INT: return "int";
  }
  return "?";
}

int cdl_op_is_int_only(cov_op op) { return op == COV_OP_SHL || op == COV_OP_SHR; }

int cdl_op_is_float_only(cov_op op) {
  switch (op) {
    case COV_OP_POW:
    case COV_OP_EXP:
    case COV_OP_LOG:
    case COV_OP_SQRT:
    case COV_OP_RSQRT:
    case COV_OP_TANH:
    case COV_OP_ERF:
    case COV_OP_SIGMOID:
    case COV_OP_SIN:
    case COV_OP_COS:
    case COV_OP_TAN:
    case COV_OP_ASIN:
    case COV_OP_ACOS:
    case COV_OP_ATAN:
    case COV_OP_SINH:
    case COV_OP_COSH:
    case COV_OP_ASINH:
    case COV_OP_ACOSH:
    case COV_OP_ATANH: return 1;
    default: return 0;
  }
}

const char *cdl_closest(const char *word, const char *const *candidates, size_t n) {
  const char *best = NULL;
  size_t best_d = 3; /* only near misses are worth suggesting */
  for (size_t i = 0; i < n; i++) {
    if (!candidates[i]) continue;
    const char *a = word, *b = candidates[i];
    while (*a && *b && (*a | 0x20) == (*b | 0x20)) a++, b++;
    if (!*a && !*b) return candidates[i]; /* differs only in case */
    size_t d = common_edit_distance(word, candidates[i]);
    size_t allowed = strlen(word) <= 4 ? 1 : 2; /* foo is not a typo of pow */
    if (d < best_d && d <= allowed && d < strlen(word)) {
      best_d = d;
      best = candidates[i];
    }
  }
  return best;
}

void cdl_format_double(double v, char *buf, size_t size) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[40];
  for (int prec = 1; prec <= 17; prec++) {
    common_snprintf(tmp, sizeof tmp, "%.*g", prec, v); /* '.' in every locale */
    if (common_strtod(tmp, NULL) == v) break;
  }
  /* Drop the exponent's '+' and leading zeros (1e-05 -> 1e-5) and make sure
   * an integral value still reads as a float (2 -> 2.0). */
  char out[48];
  size_t o = 0;
  const char *e = strchr(tmp, 'e');
  if (e) {
    memcpy(out, tmp, (size_t)(e - tmp));
    o = (size_t)(e - tmp);
    out[o++] = 'e';
    const char *p = e + 1;
    if (*p == '-') out[o++] = *p++;
    else if (*p == '+') p++;
    while (*p == '0' && p[1]) p++;
    while (*p) out[o++] = *p++;
  } else {
    o = strlen(tmp);
    memcpy(out, tmp, o);
    if (!strchr(tmp, '.')) {
      out[o++] = '.';
      out[o++] = '0';
    }
  }
  out[o] = '\0';
  snprintf(buf, size, "%s", out);
}
