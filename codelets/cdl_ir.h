/* codelets/cdl_ir.h: the codelet IR, as the parser builds it, the verifier
 * completes it, and the printer, interpreter and mapper read it.
 *
 * A codelet is a signature (type parameters, operands with symbolic shapes),
 * parameters fixed per call (attributes, lets, requires), scratch tensors
 * (locals) and a loop nest whose leaves are compute statements naming one
 * operation of common/op_table.def. Everything lives in the library's arena.
 *
 * Two stages fill it: the parser sets syntax (names as written, CDL_IE_NAME
 * nodes); the verifier (cdl_verify.c) resolves every name to its symbol,
 * checks the rules of codelets/README.md and computes the affine form of
 * every access index. Code outside codelets/ only ever sees verified IR. */
#ifndef CDL_IR_H
#define CDL_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/op_table.h"
#include "covenant/arena.h"
#include "covenant/codelet.h"
#include "covenant/status.h"
#include "covenant/types.h"

/* Limits (codelets/README.md "Limits"): bad input is rejected, never
 * allowed to exhaust the stack, memory or time. */
#define CDL_MAX_FILE_BYTES (1u << 20)
#define CDL_MAX_NAME 64
#define CDL_MAX_OPERANDS 16 /* inputs; and outputs; and locals */
#define CDL_MAX_LOOP_DEPTH 16
#define CDL_MAX_EXPR_DEPTH 64
#define CDL_MAX_STMTS 4096
#define CDL_MAX_ARGS 8
#define CDL_MAX_DECLS 256
#define CDL_MAX_TPARAMS 8
#define CDL_MAX_CODELETS 1024
#define CDL_MAX_STRING 256
/* Statements one cov_codelet_run may execute (~minutes of interpretation). */
#define CDL_MAX_STEPS ((int64_t)1 << 34)

/* ---- index expressions ------------------------------------------------- */

typedef enum cdl_iexpr_kind {
  CDL_IE_INT,  /* value */
  CDL_IE_NAME, /* unresolved name (parser output only) */
  CDL_IE_DIM,  /* index: cdl_codelet.dims */
  CDL_IE_ATTR, /* index: cdl_codelet.attrs (int attributes only) */
  CDL_IE_LET,  /* index: cdl_codelet.decls */
  CDL_IE_LOOP, /* index: cdl_codelet.loops */
  CDL_IE_NEG, CDL_IE_NOT,
  CDL_IE_ADD, CDL_IE_SUB, CDL_IE_MUL, CDL_IE_DIV, CDL_IE_MOD,
  CDL_IE_EQ, CDL_IE_NE, CDL_IE_LT, CDL_IE_LE, CDL_IE_GT, CDL_IE_GE,
  CDL_IE_AND, CDL_IE_OR, CDL_IE_MIN, CDL_IE_MAX,
} cdl_iexpr_kind;

typedef struct cdl_iexpr cdl_iexpr;
struct cdl_iexpr {
  cdl_iexpr_kind kind;
  cov_loc loc;
  int64_t value;    /* CDL_IE_INT */
  const char *name; /* symbol kinds: the name as written (for printing) */
  int index;        /* symbol kinds: which symbol */
  cdl_iexpr *a, *b; /* operands (b NULL for unary) */
  int height;       /* of the tree; bounded so that recursion over it is too */
};

/* An index in affine form: constant + sum(coef[i] * loop[loops[i]]).
 * Coefficients and the constant are expressions of dims, attributes and lets
 * only (no loop variables), so they become integers once a call binds them.
 * Terms are sorted by loop index and have no duplicates. */
typedef struct cdl_affine {
  size_t n_terms;
  int *loops;
  cdl_iexpr **coefs;
  cdl_iexpr *constant;
} cdl_affine;

/* ---- types and operands ------------------------------------------------ */

typedef enum cdl_tclass { CDL_TC_ANY, CDL_TC_FLOAT, CDL_TC_INT } cdl_tclass;

typedef struct cdl_tparam {
  const char *name;
  cov_loc loc;
  cdl_tclass tclass;
  int explicit_class; /* the class was written (printed back as written) */
} cdl_tparam;

typedef enum cdl_type_kind {
  CDL_TY_DTYPE,     /* dtype */
  CDL_TY_PARAM,     /* tparam */
  CDL_TY_ACC_DTYPE, /* acc(dtype) */
  CDL_TY_ACC_PARAM, /* acc(tparam) */
} cdl_type_kind;

typedef struct cdl_type {
  cdl_type_kind kind;
  cov_loc loc;
  const char *name; /* as written: dtype or parameter name */
  cov_dtype dtype;  /* DTYPE kinds */
  int tparam;       /* PARAM kinds, after verification */
} cdl_type;

typedef enum cdl_role { CDL_INPUT, CDL_OUTPUT, CDL_LOCAL } cdl_role;

typedef struct cdl_operand {
  const char *name;
  cov_loc loc;
  cdl_role role;
  cdl_type type;
  int rank;
  cdl_iexpr **shape; /* inputs: CDL_IE_DIM or CDL_IE_INT; others: parameter expressions */
} cdl_operand;

/* A dim symbol, bound by the first input axis that names it. */
typedef struct cdl_dim {
  const char *name;
  cov_loc loc;
  int operand, axis;
} cdl_dim;

typedef struct cdl_attr {
  const char *name;
  cov_loc loc;
  int is_float;
  int has_default;
  int64_t def_i; /* int attributes */
  double def_f;  /* float attributes */
} cdl_attr;

typedef enum cdl_decl_kind { CDL_LET, CDL_REQUIRE } cdl_decl_kind;

typedef struct cdl_decl {
  cdl_decl_kind kind;
  cov_loc loc;
  const char *name;    /* CDL_LET */
  cdl_iexpr *expr;
  const char *message; /* CDL_REQUIRE, optional */
} cdl_decl;

/* ---- statements -------------------------------------------------------- */

typedef struct cdl_access {
  const char *name;
  cov_loc loc;
  int operand;       /* after verification */
  int n_idx;         /* -1: written without brackets (a scalar) */
  cdl_iexpr **idx;
  cdl_affine *aff;   /* per index, after verification */
  int has_else;
  double else_value; /* read out of bounds */
} cdl_access;

typedef enum cdl_arg_kind {
  CDL_ARG_ACCESS, /* a tensor or local element */
  CDL_ARG_FLOAT,  /* a float literal (inf included) */
  CDL_ARG_FATTR,  /* a float attribute */
  CDL_ARG_INDEX,  /* an integer expression, may use loop variables */
} cdl_arg_kind;

typedef struct cdl_arg {
  cdl_arg_kind kind;
  cov_loc loc;
  cdl_access access;
  double f;
  int attr;
  cdl_iexpr *ie;
} cdl_arg;

typedef enum cdl_stmt_kind { CDL_ST_LOOP, CDL_ST_ASSIGN } cdl_stmt_kind;

typedef struct cdl_stmt cdl_stmt;

typedef struct cdl_block {
  size_t n;
  cdl_stmt **stmts;
} cdl_block;

typedef struct cdl_loop {
  const char *var;
  cov_loc loc;
  cdl_iexpr *extent;
  int id;    /* index into cdl_codelet.loops */
  int depth; /* 0 for the outermost loop */
  cdl_block body;
} cdl_loop;

struct cdl_stmt {
  cdl_stmt_kind kind;
  cov_loc loc;
  cdl_loop loop; /* CDL_ST_LOOP */
  /* CDL_ST_ASSIGN: dst = op(args); `dst = arg` is op COPY */
  cdl_access dst;
  const char *op_name; /* as written; NULL for `dst = arg` */
  cov_op op;           /* after verification */
  cov_loc op_loc;
  int n_args;
  cdl_arg *args;
};

/* ---- the codelet ------------------------------------------------------- */

struct cov_codelet {
  const char *name;
  cov_loc loc;
  const char *file;
  int n_tparams;
  cdl_tparam *tparams;
  int n_inputs, n_outputs, n_locals; /* operands: inputs, then outputs, then locals */
  cdl_operand *operands;
  int n_dims;
  cdl_dim *dims;
  int n_attrs;
  cdl_attr *attrs;
  int n_decls;
  cdl_decl *decls;
  cdl_block body;
  int n_loops;          /* after verification */
  cdl_loop **loops;     /* by id */
  int n_stmts;          /* assignments, counted by the parser */
};
typedef struct cov_codelet cdl_codelet;

/* ---- helpers shared across the module ---------------------------------- */

/* The accumulator dtype of d: f32 for floats, i32 for i8/u8/i32/bool, i64 for
 * i64. */
cov_dtype cdl_acc_dtype(cov_dtype d);
/* Whether a dtype may bind a type parameter of class tc. */
int cdl_tclass_admits(cdl_tclass tc, cov_dtype d);
const char *cdl_tclass_name(cdl_tclass tc);
/* Ops whose result is a float whatever their inputs (exp, sqrt, tanh...). */
int cdl_op_is_float_only(cov_op op);
/* 1 for the bit operations (shl, shr), which take integer destinations only. */
int cdl_op_is_int_only(cov_op op);
/* The candidate closest to `word` by edit distance (at most 2), or NULL. */
const char *cdl_closest(const char *word, const char *const *candidates, size_t n);
/* Shortest decimal that reads back as exactly v, always with a '.' or an
 * exponent (or "inf"/"-inf"/"nan") so that it lexes as a float. */
void cdl_format_double(double v, char *buf, size_t size);

/* Canonical text of an iexpr, as the printer writes it (cdl_print.c), for
 * error messages. Returns an arena string ("?" when out of memory). */
const char *cdl_iexpr_str(cov_arena *arena, const cdl_iexpr *e);
void cdl_print_iexpr(FILE *out, const cdl_iexpr *e);
/* "name<T>(x: T[N], ...) -> (y: T[N])" and one line per attribute. */
void cdl_print_signature(FILE *out, const cdl_codelet *c);

#endif
