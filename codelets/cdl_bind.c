/* codelets/cdl_bind.c: binding a codelet to one call's inputs and
 * attributes (see cdl_bind.h).
 *
 * The order matters for the messages: counts, attributes, input ranks and
 * dtypes, dims; only when all of those are consistent are lets evaluated
 * and requires checked (in their order), then output and local shapes. */
#include "codelets/cdl_bind.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codelets/cdl_iexpr.h"

static cov_status fail(const cdl_codelet *c, cov_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static cov_status fail(const cdl_codelet *c, cov_loc loc, const char *fmt, ...) {
  loc.path = c->name;
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(COV_INVALID_ARGUMENT, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

cov_dtype cdl_type_dtype(const cdl_binding *b, const cdl_type *ty) {
  switch (ty->kind) {
    case CDL_TY_DTYPE: return ty->dtype;
    case CDL_TY_ACC_DTYPE: return cdl_acc_dtype(ty->dtype);
    case CDL_TY_PARAM: return ty->tparam >= 0 ? b->tparams[ty->tparam] : COV_DTYPE_INVALID;
    case CDL_TY_ACC_PARAM:
      return ty->tparam >= 0 ? cdl_acc_dtype(b->tparams[ty->tparam]) : COV_DTYPE_INVALID;
  }
  return COV_DTYPE_INVALID;
}

static const char *tclass_dtypes(cdl_tclass tc) {
  switch (tc) {
    case CDL_TC_FLOAT: return "f32, f16 or bf16";
    case CDL_TC_INT: return "i8, u8, i32 or i64";
    case CDL_TC_ANY: return "f32, f16, bf16, i8, u8, i32 or i64";
  }
  return "?";
}

/* "x[N, C, H, W]", for messages about an operand's shape. */
static void operand_sig(const cdl_operand *op, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "%s[", op->name);
  for (int i = 0; i < op->rank && n < size; i++) {
    const cdl_iexpr *d = op->shape[i];
    if (d->kind == CDL_IE_INT)
      n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)d->value);
    else
      n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", d->name);
  }
  if (n < size) snprintf(buf + n, size - n, "]");
}

/* ---- attributes --------------------------------------------------------- */

static cov_status bind_attrs(const cdl_codelet *c, const cov_attr *attrs, size_t n_attrs,
                             cdl_binding *b, cov_arena *arena) {
  cov_status errs = NULL;
  int *given = cov_arena_array(arena, (size_t)c->n_attrs + 1, sizeof *given);
  const char **names = cov_arena_array(arena, (size_t)c->n_attrs + 1, sizeof *names);
  if (!given || !names) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < c->n_attrs; i++) {
    names[i] = c->attrs[i].name;
    b->attr_i[i] = c->attrs[i].def_i;
    b->attr_f[i] = c->attrs[i].def_f;
  }
  for (size_t k = 0; k < n_attrs; k++) {
    const cov_attr *a = &attrs[k];
    int i = 0;
    while (i < c->n_attrs && (!a->name || strcmp(a->name, c->attrs[i].name) != 0)) i++;
    if (i == c->n_attrs) {
      const char *hint = a->name ? cdl_closest(a->name, names, (size_t)c->n_attrs) : NULL;
      if (c->n_attrs == 0)
        errs = cov_status_join(errs, fail(c, c->loc, "'%s' has no attributes (got '%s')",
                                          c->name, a->name ? a->name : "(null)"));
      else if (hint)
        errs = cov_status_join(errs, fail(c, c->loc, "'%s' has no attribute '%s' (did you mean '%s'?)",
                                          c->name, a->name ? a->name : "(null)", hint));
      else
        errs = cov_status_join(errs, fail(c, c->loc, "'%s' has no attribute '%s'", c->name,
                                          a->name ? a->name : "(null)"));
      continue;
    }
    const cdl_attr *d = &c->attrs[i];
    if (given[i]) {
      errs = cov_status_join(errs, fail(c, d->loc, "attribute '%s' is given twice", d->name));
      continue;
    }
    given[i] = 1;
    if (d->is_float) {
      b->attr_f[i] = a->is_float ? a->f : (double)a->i;
    } else if (!a->is_float) {
      b->attr_i[i] = a->i;
      b->attr_f[i] = (double)a->i;
    } else if (a->f == floor(a->f) && fabs(a->f) < 9.2e18) {
      b->attr_i[i] = (int64_t)a->f;
      b->attr_f[i] = a->f;
    } else {
      errs = cov_status_join(errs, fail(c, d->loc, "attribute '%s' is an int, got %g", d->name,
                                        a->f));
    }
  }
  for (int i = 0; i < c->n_attrs; i++)
    if (!given[i] && !c->attrs[i].has_default)
      errs = cov_status_join(errs, fail(c, c->attrs[i].loc, "missing required attribute '%s'",
                                        c->attrs[i].name));
  return errs;
}

/* ---- inputs ------------------------------------------------------------- */

static cov_status bind_inputs(const cdl_codelet *c, const cov_tensor *inputs, cdl_binding *b) {
  cov_status errs = NULL;
  int bound_by[CDL_MAX_TPARAMS]; /* which input bound each type parameter */
  for (int t = 0; t < CDL_MAX_TPARAMS; t++) bound_by[t] = -1;
  for (int i = 0; i < c->n_inputs; i++) {
    const cdl_operand *op = &c->operands[i];
    const cov_tensor *t = &inputs[i];
    char sig[256];
    operand_sig(op, sig, sizeof sig);
    if (t->rank != op->rank) {
      errs = cov_status_join(errs, fail(c, op->loc, "input '%s' has rank %d; expected rank %d (%s)",
                                        op->name, t->rank, op->rank, sig));
      continue;
    }
    const cdl_type *ty = &op->type;
    if (ty->kind == CDL_TY_DTYPE || ty->kind == CDL_TY_ACC_DTYPE) {
      cov_dtype want = cdl_type_dtype(b, ty);
      if (t->dtype != want)
        errs = cov_status_join(errs, fail(c, op->loc, "input '%s' is %s; expected %s", op->name,
                                          cov_dtype_name(t->dtype), cov_dtype_name(want)));
    } else {
      const cdl_tparam *tp = &c->tparams[ty->tparam];
      if (bound_by[ty->tparam] < 0) {
        if (!cdl_tclass_admits(tp->tclass, t->dtype)) {
          errs = cov_status_join(errs, fail(c, op->loc, "input '%s' is %s, but %s must be %s",
                                            op->name, cov_dtype_name(t->dtype), tp->name,
                                            tclass_dtypes(tp->tclass)));
          continue;
        }
        bound_by[ty->tparam] = i;
        b->tparams[ty->tparam] = t->dtype;
      } else if (b->tparams[ty->tparam] != t->dtype) {
        errs = cov_status_join(
            errs, fail(c, op->loc, "input '%s' is %s, but input '%s' made %s %s", op->name,
                       cov_dtype_name(t->dtype), c->operands[bound_by[ty->tparam]].name, tp->name,
                       cov_dtype_name(b->tparams[ty->tparam])));
      }
    }
    for (int ax = 0; ax < op->rank; ax++) {
      const cdl_iexpr *d = op->shape[ax];
      int64_t v = t->shape[ax];
      if (v < 0) {
        errs = cov_status_join(errs, fail(c, op->loc, "input '%s' has a negative dim (axis %d: %lld)",
                                          op->name, ax, (long long)v));
      } else if (d->kind == CDL_IE_INT) {
        if (v != d->value)
          errs = cov_status_join(errs, fail(c, op->loc, "axis %d of input '%s' must be %lld, got %lld (%s)",
                                            ax, op->name, (long long)d->value, (long long)v, sig));
      } else {
        const cdl_dim *dim = &c->dims[d->index];
        if (dim->operand == i && dim->axis == ax) {
          b->dims[d->index] = v;
        } else if (b->dims[d->index] != v) {
          errs = cov_status_join(
              errs, fail(c, op->loc, "dim %s is %lld in input '%s' (axis %d) but %lld in input '%s' (axis %d)",
                         dim->name, (long long)v, op->name, ax, (long long)b->dims[d->index],
                         c->operands[dim->operand].name, dim->axis));
        }
      }
    }
  }
  return errs;
}

/* ---- lets and requires -------------------------------------------------- */

/* "C = 6, CG = 3, groups = 1": the symbols of e and their values. */
static void symbol_values(const cdl_iexpr *e, const cdl_binding *b, char *buf, size_t size,
                          size_t *n, const char **seen, int *n_seen) {
  if (!e) return;
  if (e->kind == CDL_IE_DIM || e->kind == CDL_IE_ATTR || e->kind == CDL_IE_LET) {
    for (int i = 0; i < *n_seen; i++)
      if (strcmp(seen[i], e->name) == 0) return;
    if (*n_seen < 16) seen[(*n_seen)++] = e->name;
    int64_t v = e->kind == CDL_IE_DIM ? b->dims[e->index]
                : e->kind == CDL_IE_ATTR ? b->attr_i[e->index] : b->lets[e->index];
    if (*n < size)
      *n += (size_t)snprintf(buf + *n, size - *n, "%s%s = %lld", *n ? ", " : "", e->name,
                             (long long)v);
    return;
  }
  symbol_values(e->a, b, buf, size, n, seen, n_seen);
  symbol_values(e->b, b, buf, size, n, seen, n_seen);
}

static cov_status eval_decls(const cdl_codelet *c, cdl_binding *b, const cdl_env *env,
                             cov_arena *arena) {
  for (int i = 0; i < c->n_decls; i++) {
    const cdl_decl *d = &c->decls[i];
    int64_t v;
    cov_status st = cdl_eval(d->expr, env, &v);
    if (st) return st;
    if (d->kind == CDL_LET) {
      b->lets[i] = v;
      continue;
    }
    if (v) continue;
    char vals[512] = "";
    size_t n = 0;
    const char *seen[16];
    int n_seen = 0;
    symbol_values(d->expr, b, vals, sizeof vals, &n, seen, &n_seen);
    const char *text = cdl_iexpr_str(arena, d->expr);
    if (d->message)
      return fail(c, d->loc, "%s (requirement '%s' with %s)", d->message, text, vals);
    return fail(c, d->loc, "requirement '%s' does not hold (%s)", text, vals);
  }
  return NULL;
}

/* ---- outputs and locals ------------------------------------------------- */

static cov_status bind_shapes(const cdl_codelet *c, cdl_binding *b, const cdl_env *env,
                              cov_arena *arena) {
  int n_ops = c->n_inputs + c->n_outputs + c->n_locals;
  for (int i = c->n_inputs; i < n_ops; i++) {
    const cdl_operand *op = &c->operands[i];
    const char *role = op->role == CDL_OUTPUT ? "output" : "local";
    b->dtype[i] = cdl_type_dtype(b, &op->type);
    uint64_t bytes = cov_dtype_size(b->dtype[i]);
    for (int ax = 0; ax < op->rank; ax++) {
      int64_t v;
      COV_RETURN_IF_ERROR(cdl_eval(op->shape[ax], env, &v));
      if (v < 0)
        return fail(c, op->shape[ax]->loc, "%s '%s' would have a negative dim (axis %d: %s = %lld)",
                    role, op->name, ax, cdl_iexpr_str(arena, op->shape[ax]), (long long)v);
      b->shape[i][ax] = v;
      if (__builtin_mul_overflow(bytes, (uint64_t)v, &bytes) || bytes > COV_TENSOR_MAX_BYTES)
        return fail(c, op->loc, "%s '%s' would be larger than the limit of %llu bytes", role,
                    op->name, (unsigned long long)COV_TENSOR_MAX_BYTES);
    }
  }
  return NULL;
}

cov_status cdl_bind(const cdl_codelet *c, const cov_attr *attrs, size_t n_attrs,
                    const cov_tensor *inputs, size_t n_inputs, cov_arena *arena,
                    cdl_binding *b) {
  memset(b, 0, sizeof *b);
  b->c = c;
  int n_ops = c->n_inputs + c->n_outputs + c->n_locals;
  b->tparams = cov_arena_array(arena, (size_t)c->n_tparams + 1, sizeof *b->tparams);
  b->dims = cov_arena_array(arena, (size_t)c->n_dims + 1, sizeof *b->dims);
  b->attr_i = cov_arena_array(arena, (size_t)c->n_attrs + 1, sizeof *b->attr_i);
  b->attr_f = cov_arena_array(arena, (size_t)c->n_attrs + 1, sizeof *b->attr_f);
  b->lets = cov_arena_array(arena, (size_t)c->n_decls + 1, sizeof *b->lets);
  b->dtype = cov_arena_array(arena, (size_t)n_ops + 1, sizeof *b->dtype);
  b->shape = cov_arena_array(arena, (size_t)n_ops + 1, sizeof *b->shape);
  if (!b->tparams || !b->dims || !b->attr_i || !b->attr_f || !b->lets || !b->dtype || !b->shape)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");

  if (n_inputs != (size_t)c->n_inputs) {
    char names[512];
    size_t n = 0;
    names[0] = '\0';
    for (int i = 0; i < c->n_inputs && n < sizeof names; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "",
                            c->operands[i].name);
    return fail(c, c->loc, "'%s' takes %d input%s (%s), got %zu", c->name, c->n_inputs,
                c->n_inputs == 1 ? "" : "s", names, n_inputs);
  }
  for (size_t i = 0; i < n_inputs; i++)
    if (inputs[i].rank < 0 || inputs[i].rank > COV_MAX_RANK ||
        !cov_dtype_size(inputs[i].dtype))
      return fail(c, c->operands[i].loc, "input '%s' is not a valid tensor",
                  c->operands[i].name);
  cov_status errs = bind_attrs(c, attrs, n_attrs, b, arena);
  errs = cov_status_join(errs, bind_inputs(c, inputs, b));
  if (errs) return errs;
  for (int i = 0; i < c->n_inputs; i++) {
    b->dtype[i] = inputs[i].dtype;
    for (int ax = 0; ax < inputs[i].rank; ax++) b->shape[i][ax] = inputs[i].shape[ax];
  }
  cdl_env env = {.c = c, .dims = b->dims, .attrs = b->attr_i, .lets = b->lets};
  COV_RETURN_IF_ERROR(eval_decls(c, b, &env, arena));
  return bind_shapes(c, b, &env, arena);
}
