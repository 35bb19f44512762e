/* codelets/cdl_iexpr.h: operations on index expressions: building
 * (with constant folding), affine decomposition, and checked evaluation. */
#ifndef CDL_IEXPR_H
#define CDL_IEXPR_H

#include "codelets/cdl_ir.h"

/* Values of the symbols an iexpr may name, for one call (and one point of
 * the loop nest, for loop variables). Arrays indexed like the codelet's. */
typedef struct cdl_env {
  const cdl_codelet *c;
  const int64_t *dims;
  const int64_t *attrs; /* int attributes; float ones unused */
  const int64_t *lets;  /* by decl index */
  const int64_t *loops; /* by loop id; NULL outside the loop nest */
} cdl_env;

/* Evaluates with checked int64 arithmetic: overflow and division by zero
 * are errors located at the offending subexpression. */
cov_status cdl_eval(const cdl_iexpr *e, const cdl_env *env, int64_t *out);

/* Whether e names a loop variable anywhere. */
int cdl_iexpr_has_loop(const cdl_iexpr *e);

/* Affine form of e (cdl_ir.h: cdl_affine). Returns NULL when e is not
 * affine in the loop variables, with *bad set to the first subexpression
 * that makes it so (a product of loop variables, a loop variable under
 * '/', '%', min, max or a comparison), or when out of memory (*bad NULL). */
cdl_affine *cdl_affine_of(cov_arena *arena, const cdl_iexpr *e, const cdl_iexpr **bad);

#endif
