/* codelets/cdl_bind.h: instantiating a codelet for one call.
 *
 * Binding takes the inputs' dtypes and shapes and the attribute values and
 * derives everything else a call needs: the dtype of every type parameter,
 * every dim, let, output and local shape and dtype, and checks every
 * require. The interpreter runs on a binding; the mapper will build one from
 * a layer's shapes (cov_tensor.data may be NULL: only dtype and shape are
 * read). */
#ifndef CDL_BIND_H
#define CDL_BIND_H

#include "codelets/cdl_ir.h"

typedef struct cdl_binding {
  const cdl_codelet *c;
  cov_dtype *tparams;              /* per type parameter */
  int64_t *dims;                   /* per dim */
  int64_t *attr_i;                 /* per attribute (int ones) */
  double *attr_f;                  /* per attribute (both kinds, as double) */
  int64_t *lets;                   /* per decl (lets only) */
  cov_dtype *dtype;                /* per operand */
  int64_t (*shape)[COV_MAX_RANK];  /* per operand */
} cdl_binding;

/* Errors are located at the declaration they concern (the operand, the
 * attribute, the require) and name the codelet and the offending values. */
cov_status cdl_bind(const cdl_codelet *c, const cov_attr *attrs, size_t n_attrs,
                    const cov_tensor *inputs, size_t n_inputs, cov_arena *arena,
                    cdl_binding *out);

/* The dtype a type denotes under a binding (COV_DTYPE_INVALID if unbound). */
cov_dtype cdl_type_dtype(const cdl_binding *b, const cdl_type *ty);

#endif
