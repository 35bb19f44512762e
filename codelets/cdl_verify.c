/* codelets/cdl_verify.c: name resolution and static checks of a codelet.
 *
 * One namespace per codelet holds type parameters, operands (inputs,
 * outputs, locals), dims, attributes and lets; loop variables are scoped to
 * their loop and may not shadow anything. The verifier keeps going after an
 * error so `covenant codelet check` reports every problem of a codelet at
 * once; the errors are sorted by position before they are returned, so the
 * first line of output is the first problem in the file. */
#include "codelets/cdl_verify.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cdl_iexpr.h"

typedef enum sym_kind { SYM_TPARAM, SYM_OPERAND, SYM_DIM, SYM_ATTR, SYM_LET, SYM_LOOP } sym_kind;

typedef struct sym {
  const char *name;
  sym_kind kind;
  int index;
  cov_loc loc;
} sym;

typedef struct diag {
  cov_status st;
  unsigned line, col;
  size_t seq;
} diag;

typedef struct verifier {
  cov_arena *arena;
  cdl_codelet *c;
  sym *syms;
  size_t n_syms, cap_syms;
  sym scope[CDL_MAX_LOOP_DEPTH + 1];
  int depth;
  diag *diags;
  size_t n_diags, cap_diags;
  int *written, *read;   /* per operand */
  int *tparam_bound;     /* per type parameter: used by an input */
  cdl_loop **loops;
  size_t n_loops, cap_loops;
  int oom;
} verifier;

/* ---- diagnostics -------------------------------------------------------- */

static void add_diag(verifier *V, cov_status st) {
  if (V->n_diags == V->cap_diags) {
    size_t ncap = V->cap_diags ? V->cap_diags * 2 : 8;
    diag *nd = realloc(V->diags, ncap * sizeof *nd);
    if (!nd) {
      cov_status_free(st);
      V->oom = 1;
      return;
    }
    V->diags = nd;
    V->cap_diags = ncap;
  }
  cov_loc loc = cov_status_loc(st);
  V->diags[V->n_diags] = (diag){st, loc.line, loc.col, V->n_diags};
  V->n_diags++;
}

static void error_at(verifier *V, cov_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void error_at(verifier *V, cov_loc loc, const char *fmt, ...) {
  loc.path = V->c->name;
  va_list ap;
  va_start(ap, fmt);
  add_diag(V, cov_status_makev_(COV_INVALID_INPUT, &loc, __FILE__, __LINE__, fmt, ap));
  va_end(ap);
}

static int diag_cmp(const void *pa, const void *pb) {
  const diag *a = pa, *b = pb;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  if (a->col != b->col) return a->col < b->col ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static const char *expr_str(verifier *V, const cdl_iexpr *e) {
  return cdl_iexpr_str(V->arena, e);
}

static const char *kind_name(sym_kind k) {
  switch (k) {
    case SYM_TPARAM: return "a type parameter";
    case SYM_OPERAND: return "a tensor";
    case SYM_DIM: return "a dim";
    case SYM_ATTR: return "an attribute";
    case SYM_LET: return "a let";
    case SYM_LOOP: return "a loop variable";
  }
  return "?";
}

/* ---- symbols ------------------------------------------------------------ */

static sym *lookup(verifier *V, const char *name) {
  for (int i = V->depth - 1; i >= 0; i--)
    if (strcmp(V->scope[i].name, name) == 0) return &V->scope[i];
  for (size_t i = 0; i < V->n_syms; i++)
    if (strcmp(V->syms[i].name, name) == 0) return &V->syms[i];
  return NULL;
}

static int define(verifier *V, const char *name, sym_kind kind, int index, cov_loc loc) {
  sym *old = lookup(V, name);
  if (old) {
    error_at(V, loc, "'%s' is already defined (as %s at line %u)", name, kind_name(old->kind),
             old->loc.line);
    return 0;
  }
  if (V->n_syms == V->cap_syms) {
    size_t ncap = V->cap_syms ? V->cap_syms * 2 : 32;
    sym *ns = cov_arena_grow(V->arena, V->syms, V->n_syms, ncap, sizeof *ns);
    if (!ns) {
      V->oom = 1;
      return 0;
    }
    V->syms = ns;
    V->cap_syms = ncap;
  }
  V->syms[V->n_syms++] = (sym){name, kind, index, loc};
  return 1;
}

static void undefined(verifier *V, cov_loc loc, const char *name, const char *what) {
  size_t n = V->n_syms + (size_t)V->depth;
  const char **cands = cov_arena_array(V->arena, n ? n : 1, sizeof *cands);
  const char *hint = NULL;
  if (cands) {
    for (size_t i = 0; i < V->n_syms; i++) cands[i] = V->syms[i].name;
    for (int i = 0; i < V->depth; i++) cands[V->n_syms + (size_t)i] = V->scope[i].name;
    hint = cdl_closest(name, cands, n);
  }
  if (hint) error_at(V, loc, "undefined %s '%s' (did you mean '%s'?)", what, name, hint);
  else error_at(V, loc, "undefined %s '%s'", what, name);
}

/* ---- index expressions -------------------------------------------------- */

typedef struct ie_ctx {
  int allow_loops;
  int let_limit;    /* lets with a smaller decl index are visible */
  const char *what; /* "a loop extent", ... */
} ie_ctx;

/* Resolves names; returns 1 when the whole expression is valid. */
static int resolve_ie(verifier *V, cdl_iexpr *e, const ie_ctx *ctx) {
  if (e->kind == CDL_IE_INT) return 1;
  if (e->kind != CDL_IE_NAME) {
    int ok = resolve_ie(V, e->a, ctx);
    if (e->b) ok &= resolve_ie(V, e->b, ctx);
    return ok;
  }
  sym *s = lookup(V, e->name);
  if (!s) {
    undefined(V, e->loc, e->name, "name");
    return 0;
  }
  switch (s->kind) {
    case SYM_LOOP:
      if (!ctx->allow_loops) {
        error_at(V, e->loc, "loop variable '%s' cannot be used in %s", e->name, ctx->what);
        return 0;
      }
      e->kind = CDL_IE_LOOP;
      break;
    case SYM_DIM: e->kind = CDL_IE_DIM; break;
    case SYM_ATTR:
      if (V->c->attrs[s->index].is_float) {
        error_at(V, e->loc, "float attribute '%s' cannot be used in an index expression",
                 e->name);
        return 0;
      }
      e->kind = CDL_IE_ATTR;
      break;
    case SYM_LET:
      if (s->index >= ctx->let_limit) {
        error_at(V, e->loc, "'%s' is used before its 'let'", e->name);
        return 0;
      }
      e->kind = CDL_IE_LET;
      break;
    case SYM_OPERAND:
      V->read[s->index] = 1; /* misused, but used: no "never read" on top */
      /* fall through */
    case SYM_TPARAM:
      error_at(V, e->loc, "'%s' is %s and cannot be used in an index expression", e->name,
               kind_name(s->kind));
      return 0;
  }
  e->index = s->index;
  return 1;
}

/* ---- types -------------------------------------------------------------- */

static int resolve_type(verifier *V, cdl_type *ty, cdl_role role) {
  if (ty->kind == CDL_TY_DTYPE || ty->kind == CDL_TY_ACC_DTYPE) return 1;
  sym *s = lookup(V, ty->name);
  if (!s || s->kind != SYM_TPARAM) {
    error_at(V, ty->loc, "unknown type '%s' (expected a dtype: %s, or a type parameter)",
             ty->name, cov_dtype_names());
    return 0;
  }
  ty->tparam = s->index;
  if (role == CDL_INPUT) {
    if (ty->kind == CDL_TY_ACC_PARAM) {
      error_at(V, ty->loc, "an input's type cannot be acc(%s): inputs bind type parameters",
               ty->name);
      return 0;
    }
    V->tparam_bound[s->index] = 1;
  }
  return 1;
}

/* 1 when every dtype the type can take is an integer type. */
static int type_is_int(const cdl_codelet *c, const cdl_type *ty) {
  switch (ty->kind) {
    case CDL_TY_DTYPE: return !cov_dtype_is_float(ty->dtype);
    case CDL_TY_ACC_DTYPE: return !cov_dtype_is_float(cdl_acc_dtype(ty->dtype));
    case CDL_TY_PARAM:
    case CDL_TY_ACC_PARAM:
      return ty->tparam >= 0 && c->tparams[ty->tparam].tclass == CDL_TC_INT;
  }
  return 0;
}

/* The dtype when the type is fixed, else COV_DTYPE_INVALID. */
static cov_dtype type_fixed(const cdl_type *ty) {
  if (ty->kind == CDL_TY_DTYPE) return ty->dtype;
  if (ty->kind == CDL_TY_ACC_DTYPE) return cdl_acc_dtype(ty->dtype);
  return COV_DTYPE_INVALID;
}

/* ---- signature and declarations ---------------------------------------- */

static void verify_input_shape(verifier *V, int op_index) {
  cdl_operand *op = &V->c->operands[op_index];
  for (int ax = 0; ax < op->rank; ax++) {
    cdl_iexpr *d = op->shape[ax];
    if (d->kind == CDL_IE_INT) continue; /* negative literals cannot be written */
    if (d->kind != CDL_IE_NAME) {
      error_at(V, d->loc, "input dims must be dim names or integers, not '%s'", expr_str(V, d));
      continue;
    }
    sym *s = lookup(V, d->name);
    if (s && s->kind != SYM_DIM) {
      error_at(V, d->loc, "'%s' is %s, not a dim (input dims must be dim names or integers)",
               d->name, kind_name(s->kind));
      continue;
    }
    if (!s) {
      cdl_codelet *c = V->c;
      cdl_dim *nd = cov_arena_grow(V->arena, c->dims, (size_t)c->n_dims, (size_t)c->n_dims + 1,
                                   sizeof *nd);
      if (!nd) {
        V->oom = 1;
        return;
      }
      c->dims = nd;
      c->dims[c->n_dims] = (cdl_dim){d->name, d->loc, op_index, ax};
      if (!define(V, d->name, SYM_DIM, c->n_dims, d->loc)) continue;
      c->n_dims++;
      s = lookup(V, d->name);
    }
    d->kind = CDL_IE_DIM;
    d->index = s->index;
  }
}

static void verify_signature(verifier *V) {
  cdl_codelet *c = V->c;
  for (int i = 0; i < c->n_tparams; i++) {
    cdl_tparam *tp = &c->tparams[i];
    if (cov_dtype_from_name(tp->name))
      error_at(V, tp->loc, "type parameter '%s' has the name of a dtype", tp->name);
    else define(V, tp->name, SYM_TPARAM, i, tp->loc);
  }
  int n_ops = c->n_inputs + c->n_outputs + c->n_locals;
  /* Operand names first, so a dim named like a later operand is caught at
   * the dim. */
  for (int i = 0; i < n_ops; i++)
    if (!define(V, c->operands[i].name, SYM_OPERAND, i, c->operands[i].loc))
      V->read[i] = V->written[i] = 1; /* reported once, as a duplicate */
  for (int i = 0; i < c->n_inputs; i++) {
    resolve_type(V, &c->operands[i].type, CDL_INPUT);
    verify_input_shape(V, i);
  }
  for (int i = 0; i < c->n_attrs; i++) define(V, c->attrs[i].name, SYM_ATTR, i, c->attrs[i].loc);
  for (int i = 0; i < c->n_decls; i++)
    if (c->decls[i].kind == CDL_LET) define(V, c->decls[i].name, SYM_LET, i, c->decls[i].loc);

  for (int i = 0; i < c->n_decls; i++) {
    cdl_decl *d = &c->decls[i];
    ie_ctx ctx = {0, i, d->kind == CDL_LET ? "a let" : "a require"};
    resolve_ie(V, d->expr, &ctx);
  }
  for (int i = c->n_inputs; i < n_ops; i++) {
    cdl_operand *op = &c->operands[i];
    const char *role = op->role == CDL_OUTPUT ? "output" : "local";
    if (resolve_type(V, &op->type, op->role) && op->type.tparam >= 0 &&
        !V->tparam_bound[op->type.tparam])
      error_at(V, op->type.loc, "type parameter '%s' of %s '%s' is not bound by any input",
               op->type.name, role, op->name);
    ie_ctx ctx = {0, c->n_decls, op->role == CDL_OUTPUT ? "an output shape" : "a local's shape"};
    for (int ax = 0; ax < op->rank; ax++) resolve_ie(V, op->shape[ax], &ctx);
  }
  for (int i = 0; i < c->n_tparams; i++)
    if (!V->tparam_bound[i] && !cov_dtype_from_name(c->tparams[i].name))
      error_at(V, c->tparams[i].loc, "type parameter '%s' is not used by any input",
               c->tparams[i].name);
}

/* ---- statements --------------------------------------------------------- */

static int resolve_access(verifier *V, cdl_access *acc, int is_dst) {
  sym *s = lookup(V, acc->name);
  if (!s) {
    undefined(V, acc->loc, acc->name, "tensor");
    return 0;
  }
  if (s->kind != SYM_OPERAND) {
    error_at(V, acc->loc, "'%s' is %s, not a tensor or local", acc->name, kind_name(s->kind));
    return 0;
  }
  cdl_operand *op = &V->c->operands[s->index];
  acc->operand = s->index;
  if (is_dst && op->role == CDL_INPUT) {
    error_at(V, acc->loc, "cannot write to input '%s'", acc->name);
    return 0;
  }
  if (is_dst) V->written[s->index] = 1;
  else V->read[s->index] = 1;
  if (acc->n_idx < 0) {
    if (op->rank != 0) {
      error_at(V, acc->loc, "'%s' has rank %d: index it as %s[...]", acc->name, op->rank,
               acc->name);
      return 0;
    }
    return 1;
  }
  if (acc->n_idx != op->rank) {
    error_at(V, acc->loc, "'%s' has rank %d but is indexed with %d %s", acc->name, op->rank,
             acc->n_idx, acc->n_idx == 1 ? "index" : "indices");
    return 0;
  }
  acc->aff = cov_arena_array(V->arena, (size_t)acc->n_idx ? (size_t)acc->n_idx : 1,
                             sizeof *acc->aff);
  if (!acc->aff) {
    V->oom = 1;
    return 0;
  }
  int ok = 1;
  ie_ctx ctx = {1, V->c->n_decls, "an index"};
  for (int i = 0; i < acc->n_idx; i++) {
    if (!resolve_ie(V, acc->idx[i], &ctx)) {
      ok = 0;
      continue;
    }
    const cdl_iexpr *bad = NULL;
    cdl_affine *f = cdl_affine_of(V->arena, acc->idx[i], &bad);
    if (!f && bad) {
      error_at(V, bad->loc, "index %d of '%s' is not affine in the loop variables: '%s'", i + 1,
               acc->name, expr_str(V, bad));
      ok = 0;
    } else if (!f) {
      V->oom = 1;
      return 0;
    } else {
      acc->aff[i] = *f;
    }
  }
  return ok;
}

static int resolve_arg(verifier *V, cdl_arg *arg) {
  if (arg->kind == CDL_ARG_FLOAT) return 1;
  if (arg->kind == CDL_ARG_ACCESS) return resolve_access(V, &arg->access, 0);
  cdl_iexpr *e = arg->ie;
  if (e->kind == CDL_IE_NAME) {
    sym *s = lookup(V, e->name);
    if (s && s->kind == SYM_OPERAND) { /* a scalar local or rank-0 tensor */
      arg->kind = CDL_ARG_ACCESS;
      arg->access = (cdl_access){.name = e->name, .loc = e->loc, .operand = -1, .n_idx = -1};
      arg->ie = NULL;
      return resolve_access(V, &arg->access, 0);
    }
    if (s && s->kind == SYM_ATTR && V->c->attrs[s->index].is_float) {
      arg->kind = CDL_ARG_FATTR;
      arg->attr = s->index;
      return 1;
    }
  }
  ie_ctx ctx = {1, V->c->n_decls, "an operand"};
  return resolve_ie(V, e, &ctx);
}

static void check_op(verifier *V, cdl_stmt *s) {
  if (!s->op_name) {
    s->op = COV_OP_COPY;
    return;
  }
  s->op = common_op_from_name(s->op_name);
  if (!s->op) {
    const char *names[COV_OP_COUNT];
    for (int i = 1; i < COV_OP_COUNT; i++) names[i - 1] = common_op_name((cov_op)i);
    const char *hint = cdl_closest(s->op_name, names, COV_OP_COUNT - 1);
    if (hint)
      error_at(V, s->op_loc, "unknown operation '%s' (did you mean '%s'?)", s->op_name, hint);
    else
      error_at(V, s->op_loc, "unknown operation '%s' (expected one of: %s)", s->op_name,
               common_op_names());
    return;
  }
  int arity = common_op_arity(s->op);
  if (arity != s->n_args)
    error_at(V, s->op_loc, "'%s' takes %d operand%s, got %d", s->op_name, arity,
             arity == 1 ? "" : "s", s->n_args);
}

static void check_types(verifier *V, cdl_stmt *s) {
  const cdl_codelet *c = V->c;
  if (s->dst.operand < 0 || !s->op) return;
  const cdl_operand *dst = &c->operands[s->dst.operand];
  if (cdl_op_is_float_only(s->op) && type_is_int(c, &dst->type))
    error_at(V, s->op_loc, "'%s' computes a float but '%s' has an integer type", s->op_name,
             dst->name);
  if (cdl_op_is_int_only(s->op) && !type_is_int(c, &dst->type))
    error_at(V, s->op_loc, "'%s' computes on integers but '%s' may be a float", s->op_name,
             dst->name);
  if (s->op == COV_OP_MAC && s->n_args == 3) {
    cov_dtype acc = type_fixed(&dst->type);
    for (int i = 1; i < 3 && acc; i++) {
      const cdl_arg *a = &s->args[i];
      if (a->kind != CDL_ARG_ACCESS || a->access.operand < 0) continue;
      const cdl_operand *src = &c->operands[a->access.operand];
      cov_dtype d = type_fixed(&src->type);
      if (d && cov_dtype_precision_bits(acc) < cov_dtype_precision_bits(d)) {
        error_at(V, s->dst.loc, "accumulator '%s' (%s) is narrower than '%s' (%s)", dst->name,
                 cov_dtype_name(acc), src->name, cov_dtype_name(d));
        break;
      }
    }
  }
}

static void verify_block(verifier *V, cdl_block *b);

static void verify_loop(verifier *V, cdl_stmt *s) {
  cdl_loop *L = &s->loop;
  ie_ctx ctx = {0, V->c->n_decls, "a loop extent"};
  resolve_ie(V, L->extent, &ctx);
  sym *old = lookup(V, L->var);
  if (old)
    error_at(V, L->loc, "loop variable '%s' is already defined (as %s at line %u)", L->var,
             kind_name(old->kind), old->loc.line);
  if (V->n_loops == V->cap_loops) {
    size_t ncap = V->cap_loops ? V->cap_loops * 2 : 16;
    cdl_loop **nl = cov_arena_grow(V->arena, V->loops, V->n_loops, ncap, sizeof *nl);
    if (!nl) {
      V->oom = 1;
      return;
    }
    V->loops = nl;
    V->cap_loops = ncap;
  }
  L->id = (int)V->n_loops;
  L->depth = V->depth;
  V->loops[V->n_loops++] = L;
  /* The parser bounds nesting at CDL_MAX_LOOP_DEPTH, so scope cannot overflow. */
  V->scope[V->depth++] = (sym){L->var, SYM_LOOP, L->id, L->loc};
  verify_block(V, &L->body);
  V->depth--;
}

static void verify_block(verifier *V, cdl_block *b) {
  for (size_t i = 0; i < b->n && !V->oom; i++) {
    cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) {
      verify_loop(V, s);
      continue;
    }
    int ok = resolve_access(V, &s->dst, 1);
    check_op(V, s);
    for (int a = 0; a < s->n_args; a++) ok &= resolve_arg(V, &s->args[a]);
    if (ok) check_types(V, s);
  }
}

static void verify_usage(verifier *V) {
  const cdl_codelet *c = V->c;
  int n_ops = c->n_inputs + c->n_outputs + c->n_locals;
  for (int i = 0; i < n_ops; i++) {
    const cdl_operand *op = &c->operands[i];
    if (op->role == CDL_INPUT && !V->read[i])
      error_at(V, op->loc, "input '%s' is never read", op->name);
    if (op->role == CDL_OUTPUT && !V->written[i])
      error_at(V, op->loc, "output '%s' is never written", op->name);
    if (op->role == CDL_LOCAL && !V->written[i])
      error_at(V, op->loc, "local '%s' is never written", op->name);
  }
}

cov_status cdl_verify(cov_arena *arena, cdl_codelet *c) {
  verifier V = {.arena = arena, .c = c};
  int n_ops = c->n_inputs + c->n_outputs + c->n_locals;
  V.written = cov_arena_array(arena, (size_t)n_ops + 1, sizeof *V.written);
  V.read = cov_arena_array(arena, (size_t)n_ops + 1, sizeof *V.read);
  V.tparam_bound = cov_arena_array(arena, (size_t)c->n_tparams + 1, sizeof *V.tparam_bound);
  if (!V.written || !V.read || !V.tparam_bound)
    return cov_error(COV_OUT_OF_MEMORY, &c->loc, "out of memory verifying '%s'", c->name);
  verify_signature(&V);
  if (!V.oom) verify_block(&V, &c->body);
  if (!V.oom) verify_usage(&V);
  c->n_loops = (int)V.n_loops;
  c->loops = V.loops;

  cov_status out = NULL;
  if (V.n_diags) qsort(V.diags, V.n_diags, sizeof *V.diags, diag_cmp);
  for (size_t i = 0; i < V.n_diags; i++) out = cov_status_join(out, V.diags[i].st);
  free(V.diags);
  if (V.oom)
    out = cov_status_join(out, cov_error(COV_OUT_OF_MEMORY, &c->loc, "out of memory verifying '%s'",
                                         c->name));
  return out;
}
