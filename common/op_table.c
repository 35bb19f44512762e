/* common/op_table.c: lookups over op_table.def. */
#include "common/op_table.h"

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

cov_op cov_op_from_name(const char *name) {
  if (!name) return COV_OP_INVALID;
  for (int i = 1; i < COV_OP_COUNT; i++)
    if (strcmp(k_ops[i].name, name) == 0) return (cov_op)i;
  return COV_OP_INVALID;
}

const char *cov_op_name(cov_op op) {
  return (op > 0 && op < COV_OP_COUNT) ? k_ops[op].name : k_ops[0].name;
}

int cov_op_arity(cov_op op) { return (op > 0 && op < COV_OP_COUNT) ? k_ops[op].arity : -1; }

const char *cov_op_doc(cov_op op) { return (op > 0 && op < COV_OP_COUNT) ? k_ops[op].doc : ""; }

const char *cov_op_names(void) {
  return "mac, add, sub, mul, div, max, min, pow, exp, log, sqrt, rsqrt, neg, abs, tanh, erf, "
         "sigmoid, relu, cast, select, copy";
}
