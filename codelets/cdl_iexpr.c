/* codelets/cdl_iexpr.c: index expressions: checked evaluation and affine
 * decomposition.
 *
 * Evaluation never invokes undefined behaviour: every +, -, *, / and %
 * is checked, and the failure names the subexpression and the values. The
 * affine decomposition is what the mapper tiles and the interpreter uses
 * to compute addresses: an index becomes constant + sum(coef * loop) where
 * constant and coefs are loop-free expressions. */
#include "codelets/cdl_iexpr.h"

#include <stdlib.h>
#include <string.h>

/* ---- evaluation --------------------------------------------------------- */

static cov_status eval_fail(const cdl_iexpr *e, const cdl_env *env, const char *what, int64_t a,
                            int64_t b) {
  cov_arena *tmp = cov_arena_create();
  cov_loc loc = e->loc;
  loc.path = env->c ? env->c->name : NULL;
  cov_status st = cov_error(COV_OUT_OF_RANGE, &loc, "%s in '%s' (operands %lld and %lld)", what,
                            tmp ? cdl_iexpr_str(tmp, e) : "?", (long long)a, (long long)b);
  cov_arena_destroy(tmp);
  return st;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}

static int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

cov_status cdl_eval(const cdl_iexpr *e, const cdl_env *env, int64_t *out) {
  int64_t a = 0, b = 0, r = 0;
  switch (e->kind) {
    case CDL_IE_INT: *out = e->value; return NULL;
    case CDL_IE_DIM: *out = env->dims[e->index]; return NULL;
    case CDL_IE_ATTR: *out = env->attrs[e->index]; return NULL;
    case CDL_IE_LET: *out = env->lets[e->index]; return NULL;
    case CDL_IE_LOOP:
      if (!env->loops) break;
      *out = env->loops[e->index];
      return NULL;
    case CDL_IE_NAME: break;
    default: break;
  }
  if (e->kind == CDL_IE_NAME || e->kind == CDL_IE_LOOP) {
    cov_loc loc = e->loc;
    return cov_error(COV_INTERNAL, &loc, "unresolved name '%s' at evaluation",
                     e->name ? e->name : "?");
  }
  COV_RETURN_IF_ERROR(cdl_eval(e->a, env, &a));
  if (e->b) {
    /* && and || short-circuit, so `d != 0 && n / d > 1` is safe. */
    if (e->kind == CDL_IE_AND && !a) return *out = 0, NULL;
    if (e->kind == CDL_IE_OR && a) return *out = 1, NULL;
    COV_RETURN_IF_ERROR(cdl_eval(e->b, env, &b));
  }
  switch (e->kind) {
    case CDL_IE_NEG:
      if (a == INT64_MIN) return eval_fail(e, env, "overflow", a, 0);
      r = -a;
      break;
    case CDL_IE_NOT: r = !a; break;
    case CDL_IE_ADD:
      if (__builtin_add_overflow(a, b, &r)) return eval_fail(e, env, "overflow", a, b);
      break;
    case CDL_IE_SUB:
      if (__builtin_sub_overflow(a, b, &r)) return eval_fail(e, env, "overflow", a, b);
      break;
    case CDL_IE_MUL:
      if (__builtin_mul_overflow(a, b, &r)) return eval_fail(e, env, "overflow", a, b);
      break;
    case CDL_IE_DIV:
    case CDL_IE_MOD:
      if (b == 0) return eval_fail(e, env, "division by zero", a, b);
      if (b == -1) { /* INT64_MIN / -1 overflows; % -1 is 0 */
        if (e->kind == CDL_IE_MOD) r = 0;
        else if (a == INT64_MIN) return eval_fail(e, env, "overflow", a, b);
        else r = -a;
        break;
      }
      r = e->kind == CDL_IE_DIV ? floor_div(a, b) : floor_mod(a, b);
      break;
    case CDL_IE_EQ: r = a == b; break;
    case CDL_IE_NE: r = a != b; break;
    case CDL_IE_LT: r = a < b; break;
    case CDL_IE_LE: r = a <= b; break;
    case CDL_IE_GT: r = a > b; break;
    case CDL_IE_GE: r = a >= b; break;
    case CDL_IE_AND: r = a && b; break;
    case CDL_IE_OR: r = a || b; break;
    case CDL_IE_MIN: r = a < b ? a : b; break;
    case CDL_IE_MAX: r = a > b ? a : b; break;
    default: {
      cov_loc loc = e->loc;
      return cov_error(COV_INTERNAL, &loc, "bad index expression node %d", (int)e->kind);
    }
  }
  *out = r;
  return NULL;
}

int cdl_iexpr_has_loop(const cdl_iexpr *e) {
  if (!e) return 0;
  if (e->kind == CDL_IE_LOOP) return 1;
  return cdl_iexpr_has_loop(e->a) || cdl_iexpr_has_loop(e->b);
}

/* ---- building, with the folding that keeps affine forms readable -------- */

static cdl_iexpr *mk(cov_arena *A, cdl_iexpr_kind kind, const cdl_iexpr *a, const cdl_iexpr *b,
                     cov_loc loc) {
  cdl_iexpr *e = cov_arena_alloc(A, sizeof *e);
  if (!e) return NULL;
  e->kind = kind;
  e->loc = loc;
  e->a = (cdl_iexpr *)a;
  e->b = (cdl_iexpr *)b;
  int ha = a ? a->height : 0, hb = b ? b->height : 0;
  e->height = 1 + (ha > hb ? ha : hb);
  return e;
}

static cdl_iexpr *mk_int(cov_arena *A, int64_t v, cov_loc loc) {
  cdl_iexpr *e = cov_arena_alloc(A, sizeof *e);
  if (!e) return NULL;
  e->kind = CDL_IE_INT;
  e->value = v;
  e->loc = loc;
  return e;
}

static int is_int(const cdl_iexpr *e, int64_t v) { return e->kind == CDL_IE_INT && e->value == v; }

static cdl_iexpr *mk_add(cov_arena *A, const cdl_iexpr *a, const cdl_iexpr *b, int sub) {
  if (!a || !b) return NULL;
  int64_t r;
  if (a->kind == CDL_IE_INT && b->kind == CDL_IE_INT &&
      !(sub ? __builtin_sub_overflow(a->value, b->value, &r)
            : __builtin_add_overflow(a->value, b->value, &r)))
    return mk_int(A, r, a->loc);
  if (is_int(b, 0)) return (cdl_iexpr *)a;
  if (is_int(a, 0) && !sub) return (cdl_iexpr *)b;
  return mk(A, sub ? CDL_IE_SUB : CDL_IE_ADD, a, b, a->loc);
}

static cdl_iexpr *mk_mul(cov_arena *A, const cdl_iexpr *a, const cdl_iexpr *b) {
  if (!a || !b) return NULL;
  int64_t r;
  if (a->kind == CDL_IE_INT && b->kind == CDL_IE_INT &&
      !__builtin_mul_overflow(a->value, b->value, &r))
    return mk_int(A, r, a->loc);
  if (is_int(a, 0) || is_int(b, 0)) return mk_int(A, 0, a->loc);
  if (is_int(a, 1)) return (cdl_iexpr *)b;
  if (is_int(b, 1)) return (cdl_iexpr *)a;
  return mk(A, CDL_IE_MUL, a, b, a->loc);
}

static cdl_iexpr *mk_neg(cov_arena *A, const cdl_iexpr *a) {
  if (!a) return NULL;
  if (a->kind == CDL_IE_INT && a->value != INT64_MIN) return mk_int(A, -a->value, a->loc);
  if (a->kind == CDL_IE_NEG) return a->a;
  return mk(A, CDL_IE_NEG, a, NULL, a->loc);
}

/* ---- affine decomposition ---------------------------------------------- */

static cdl_affine *aff_new(cov_arena *A, size_t n, cdl_iexpr *constant) {
  cdl_affine *f = cov_arena_alloc(A, sizeof *f);
  if (!f) return NULL;
  f->n_terms = n;
  f->constant = constant;
  if (n) {
    f->loops = cov_arena_array(A, n, sizeof *f->loops);
    f->coefs = cov_arena_array(A, n, sizeof *f->coefs);
    if (!f->loops || !f->coefs) return NULL;
  }
  return constant ? f : NULL;
}

/* a + sign*b, merging terms of the same loop (both sorted by loop id). */
static cdl_affine *aff_combine(cov_arena *A, const cdl_affine *a, const cdl_affine *b, int sub) {
  cdl_affine *f = aff_new(A, a->n_terms + b->n_terms, mk_add(A, a->constant, b->constant, sub));
  if (!f) return NULL;
  size_t i = 0, j = 0, n = 0;
  while (i < a->n_terms || j < b->n_terms) {
    cdl_iexpr *coef;
    int loop;
    if (j >= b->n_terms || (i < a->n_terms && a->loops[i] < b->loops[j])) {
      loop = a->loops[i];
      coef = a->coefs[i++];
    } else if (i >= a->n_terms || b->loops[j] < a->loops[i]) {
      loop = b->loops[j];
      coef = sub ? mk_neg(A, b->coefs[j]) : b->coefs[j];
      j++;
    } else {
      loop = a->loops[i];
      coef = mk_add(A, a->coefs[i++], b->coefs[j++], sub);
    }
    if (!coef) return NULL;
    if (is_int(coef, 0)) continue; /* i - i cancels */
    f->loops[n] = loop;
    f->coefs[n++] = coef;
  }
  f->n_terms = n;
  return f;
}

static cdl_affine *aff_scale(cov_arena *A, const cdl_affine *a, const cdl_iexpr *k) {
  cdl_affine *f = aff_new(A, a->n_terms, mk_mul(A, k, a->constant));
  if (!f) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < a->n_terms; i++) {
    cdl_iexpr *coef = mk_mul(A, k, a->coefs[i]);
    if (!coef) return NULL;
    if (is_int(coef, 0)) continue;
    f->loops[n] = a->loops[i];
    f->coefs[n++] = coef;
  }
  f->n_terms = n;
  return f;
}

cdl_affine *cdl_affine_of(cov_arena *A, const cdl_iexpr *e, const cdl_iexpr **bad) {
  *bad = NULL;
  switch (e->kind) {
    case CDL_IE_LOOP: {
      cdl_affine *f = aff_new(A, 1, mk_int(A, 0, e->loc));
      if (!f) return NULL;
      f->loops[0] = e->index;
      f->coefs[0] = mk_int(A, 1, e->loc);
      return f->coefs[0] ? f : NULL;
    }
    case CDL_IE_ADD:
    case CDL_IE_SUB: {
      cdl_affine *a = cdl_affine_of(A, e->a, bad);
      if (!a) return NULL;
      cdl_affine *b = cdl_affine_of(A, e->b, bad);
      if (!b) return NULL;
      return aff_combine(A, a, b, e->kind == CDL_IE_SUB);
    }
    case CDL_IE_NEG: {
      cdl_affine *a = cdl_affine_of(A, e->a, bad);
      return a ? aff_scale(A, a, mk_int(A, -1, e->loc)) : NULL;
    }
    case CDL_IE_MUL: {
      cdl_affine *a = cdl_affine_of(A, e->a, bad);
      if (!a) return NULL;
      cdl_affine *b = cdl_affine_of(A, e->b, bad);
      if (!b) return NULL;
      if (a->n_terms == 0) return aff_scale(A, b, a->constant);
      if (b->n_terms == 0) return aff_scale(A, a, b->constant);
      *bad = e; /* a product of loop variables */
      return NULL;
    }
    default:
      if (cdl_iexpr_has_loop(e)) {
        *bad = e;
        return NULL;
      }
      return aff_new(A, 0, (cdl_iexpr *)e);
  }
}
