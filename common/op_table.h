/* common/op_table.h: the one table of compute operations.
 *
 * Codelet compute statements name these operations and ACG capabilities offer
 * them; the mapper matches one against the other by this enum. Adding an op
 * means adding a row here (and its semantics in the reference interpreter). */
#ifndef COV_OP_TABLE_H
#define COV_OP_TABLE_H

#include <stddef.h>

typedef enum cov_op {
  COV_OP_INVALID = 0,
#define COV_OP(id, name, arity, doc) COV_OP_##id,
#include "common/op_table.def"
#undef COV_OP
  COV_OP_COUNT
} cov_op;

/* "mac" -> COV_OP_MAC; COV_OP_INVALID if unknown. */
cov_op common_op_from_name(const char *name);
const char *common_op_name(cov_op op);
/* Number of operands the operation takes; -1 for an invalid op. */
int common_op_arity(cov_op op);
const char *common_op_doc(cov_op op);
/* Every valid name, comma-separated, for error messages. */
const char *common_op_names(void);
/* The element-wise meaning of a unary or binary op in f32 arithmetic (b is
 * ignored by unary ops; copy and cast return a; mac and select, which take
 * three operands, are not handled here and return a). One definition, so the
 * schedule interpreter and the NPU simulator cannot drift apart. */
float common_op_eval_f32(cov_op op, float a, float b);
/* Round to the nearest integer, halves to even (ONNX QuantizeLinear's and
 * Round's rounding, numpy's rint), whatever the floating-point environment's
 * rounding mode. */
double common_round_half_even(double v);
float common_round_half_even_f32(float v);

/* Round half to even (ONNX Round, numpy's round), independent of the
 * floating-point environment's rounding mode. */
double common_round_even(double a);
/* a mod b with the sign of b (Python's %, ONNX Mod with fmod=0). */
double common_mod_floor(double a, double b);

#endif
