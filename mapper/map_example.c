/* mapper/map_example.c: a representative layer of one codelet call
 * (cov_layer_example): every input dim `size`, fixed extents as the
 * codelet writes them, type parameters f32, and attributes without a
 * default 1. For questions about a codelet rather than a model, such as
 * whether a backend takes it at all (`covenant ops`). */
#include <string.h>

#include "codelets/cdl_ir.h"
#include "common/loc.h"
#include "covenant/codelet.h"
#include "covenant/mapper.h"

#define EXAMPLE_MAX_INPUTS 8
#define EXAMPLE_MAX_ATTRS 32

static void example_input(const cdl_operand *o, int64_t size, cov_dtype param, cov_tensor *t) {
  memset(t, 0, sizeof *t);
  t->dtype = o->type.kind == CDL_TY_DTYPE ? o->type.dtype : param;
  t->rank = o->rank < COV_MAX_RANK ? o->rank : COV_MAX_RANK;
  for (int d = 0; d < t->rank; d++)
    t->shape[d] = o->shape[d] && o->shape[d]->kind == CDL_IE_INT ? o->shape[d]->value : size;
}

cov_status cov_layer_example(const char *codelet, int64_t size, cov_layer **out) {
  *out = NULL;
  if (!codelet || size < 1 || size > 64)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_example"), "a codelet name and a size of 1 to 64");
  cov_codelet_lib *lib = NULL;
  COV_RETURN_IF_ERROR(cov_codelet_lib_load(NULL, &lib));
  const cdl_codelet *c = cov_codelet_lib_find(lib, codelet);
  cov_status st = NULL;
  if (!c) st = cov_error(COV_NOT_FOUND, COV_AT(NULL, codelet), "no codelet named '%s'", codelet);
  else if (c->n_inputs > EXAMPLE_MAX_INPUTS || c->n_attrs > EXAMPLE_MAX_ATTRS)
    st = cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, codelet), "'%s' has too many inputs or attributes for an example",
                   codelet);
  /* type parameters f32, or i8 for a codelet that takes integers only */
  static const cov_dtype k_params[] = {COV_F32, COV_I8};
  for (size_t k = 0; !st && k < sizeof k_params / sizeof *k_params; k++) {
    cov_tensor in[EXAMPLE_MAX_INPUTS];
    cov_attr attrs[EXAMPLE_MAX_ATTRS];
    size_t n_attrs = 0;
    for (int i = 0; i < c->n_inputs; i++) example_input(&c->operands[i], size, k_params[k], &in[i]);
    for (int a = 0; a < c->n_attrs; a++)
      if (!c->attrs[a].has_default)
        attrs[n_attrs++] = (cov_attr){.name = c->attrs[a].name, .is_float = c->attrs[a].is_float, .i = 1, .f = 1.0};
    cov_status try = cov_layer_from_call(codelet, attrs, n_attrs, in, (size_t)c->n_inputs, out);
    if (!try) break;
    /* only a refused dtype tries the next one; anything else (out of
     * memory) is the answer */
    cov_code code = cov_status_code(try);
    if (k + 1 == sizeof k_params / sizeof *k_params || (code != COV_INVALID_ARGUMENT && code != COV_INVALID_INPUT))
      st = try;
    else cov_status_free(try);
  }
  cov_codelet_lib_free(lib);
  return st;
}
