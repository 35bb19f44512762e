/* mapper/map_problem.c: the layer's main loop nest, extracted generically
 * from the verified codelet IR of its first call.
 *
 * No op names: the main statement is the codelet's first `mac` (a
 * contraction), else its first reduction `acc = op(acc, input)` into a local
 * scalar, else the statement that writes the output. Its enclosing loops are
 * the problem loops, with extents from the binding; the loops absent from the
 * output's access are reductions; every access index is the verifier's
 * affine form with its coefficients evaluated under the binding. A codelet
 * that the epilogue lowering handles whole (softmax, relu, ... as a layer of
 * its own) becomes a copy of its input followed by that epilogue.
 */
#include <math.h>
#include <string.h>

#include "codelets/cdl_iexpr.h"
#include "common/loc.h"
#include "mapper/map_internal.h"

typedef struct walk {
  const cdl_stmt *found;
  int loops[CDL_MAX_LOOP_DEPTH];
  int n_loops;
  int stack[CDL_MAX_LOOP_DEPTH];
  int depth;
  int (*pred)(const cdl_codelet *, const cdl_stmt *);
} walk;

static void walk_block(const cdl_codelet *c, const cdl_block *b, walk *w) {
  for (size_t i = 0; i < b->n && !w->found; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) {
      if (w->depth >= CDL_MAX_LOOP_DEPTH) continue;
      w->stack[w->depth++] = s->loop.id;
      walk_block(c, &s->loop.body, w);
      w->depth--;
    } else if (w->pred(c, s)) {
      w->found = s;
      w->n_loops = w->depth;
      memcpy(w->loops, w->stack, sizeof(int) * (size_t)w->depth);
    }
  }
}

static int is_local_scalar(const cdl_codelet *c, const cdl_access *a) {
  return c->operands[a->operand].role == CDL_LOCAL && c->operands[a->operand].rank == 0;
}
static int pred_mac(const cdl_codelet *c, const cdl_stmt *s) {
  return s->op == COV_OP_MAC && s->n_args == 3 && s->args[0].kind == CDL_ARG_ACCESS &&
         is_local_scalar(c, &s->dst) && s->args[1].kind == CDL_ARG_ACCESS &&
         s->args[2].kind == CDL_ARG_ACCESS;
}
static int pred_reduce(const cdl_codelet *c, const cdl_stmt *s) {
  return s->n_args == 2 && is_local_scalar(c, &s->dst) && s->args[0].kind == CDL_ARG_ACCESS &&
         s->args[0].access.operand == s->dst.operand && s->args[1].kind == CDL_ARG_ACCESS &&
         c->operands[s->args[1].access.operand].role == CDL_INPUT;
}
static int pred_output(const cdl_codelet *c, const cdl_stmt *s) {
  return c->operands[s->dst.operand].role == CDL_OUTPUT;
}

typedef struct ctx {
  const cdl_codelet *c;
  cdl_binding b;
  cdl_env env;
  int pos_of_loop[256]; /* loop id -> problem loop, -1 */
} ctx;

static cov_status access_of(ctx *x, const cdl_access *a, int n_loops, map_access *out) {
  const cdl_operand *op = &x->c->operands[a->operand];
  memset(out, 0, sizeof *out);
  out->rank = op->rank;
  if (a->n_idx != op->rank || (op->rank > 0 && !a->aff)) goto nonaffine;
  for (int d = 0; d < op->rank; d++) {
    const cdl_affine *af = &a->aff[d];
    int64_t v = 0;
    if (af->constant) COV_RETURN_IF_ERROR(cdl_eval(af->constant, &x->env, &v));
    out->off[d] = v;
    for (size_t t = 0; t < af->n_terms; t++) {
      int lid = af->loops[t];
      int p = lid < 256 ? x->pos_of_loop[lid] : -1;
      if (p < 0 || p >= n_loops)
        return cov_error(COV_UNSUPPORTED, &a->loc,
                         "codelet %s: access to %s uses a loop outside the main loop nest",
                         x->c->name, a->name);
      COV_RETURN_IF_ERROR(cdl_eval(af->coefs[t], &x->env, &v));
      out->coef[d][p] = v;
    }
  }
  return NULL;
nonaffine:
  return cov_error(COV_UNSUPPORTED, &a->loc, "codelet %s: access to %s is not affine", x->c->name,
                   a->name);
}

static void fill_operand(ctx *x, int cdl_op, map_role role, map_operand *o) {
  const cdl_operand *op = &x->c->operands[cdl_op];
  o->name = op->name;
  o->role = role;
  o->dtype = x->b.dtype[cdl_op];
  o->compute_dtype = o->dtype;
  o->rank = op->rank;
  for (int d = 0; d < op->rank; d++) o->shape[d] = x->b.shape[cdl_op][d];
  o->layer_input = role == MAP_ROLE_OUTPUT ? -1 : cdl_op;
}

/* The statement initialising the accumulator: the last `acc = literal`
 * before the main statement (found by a second walk). */
struct init_walk {
  const cdl_stmt *target; /* the main statement: the walk stops there */
  const cdl_stmt *found;  /* the last `acc = literal` seen before it */
  int done;
};
static void find_init(const cdl_block *b, struct init_walk *w) {
  for (size_t i = 0; i < b->n && !w->done; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s == w->target) {
      w->done = 1;
      return;
    }
    if (s->kind == CDL_ST_LOOP) find_init(&s->loop.body, w);
    else if (s->dst.operand == w->target->dst.operand && s->n_args == 1 &&
             s->args[0].kind == CDL_ARG_FLOAT)
      w->found = s;
  }
}

int map_epilogue_whole(const char *codelet); /* map_epilogue.c */

/* A layer that is all epilogue: copy the input tile, then the epilogue
 * (including call 0) runs on it. */
static cov_status extract_copy(ctx *x, const cov_layer *layer, map_problem *p, cov_arena *arena) {
  const cdl_operand *in = &x->c->operands[0];
  if (in->rank > MAP_MAX_LOOPS)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, layer->name), "codelet %s: rank %d input", x->c->name, in->rank);
  p->kind = MAP_MAIN_MAP;
  p->op = COV_OP_COPY;
  p->n_loops = in->rank;
  for (int d = 0; d < in->rank; d++) {
    p->loop_name[d] = cov_arena_printf(arena, "i%d", d);
    p->extent[d] = x->b.shape[0][d];
  }
  p->n_inputs = 1;
  fill_operand(x, 0, MAP_ROLE_INPUT, &p->operands[0]);
  p->operands[0].acc.rank = in->rank;
  for (int d = 0; d < in->rank; d++) p->operands[0].acc.coef[d][d] = 1;
  p->output = 1;
  p->operands[1] = p->operands[0];
  p->operands[1].name = x->c->operands[x->c->n_inputs].name;
  p->operands[1].role = MAP_ROLE_OUTPUT;
  p->operands[1].layer_input = -1;
  p->n_operands = 2;
  return NULL;
}

/* The main statement (the first mac, else the first reduction, else the
 * output's store), its kind in p->kind, and its enclosing loops as the
 * problem's loops with their extents. */
static cov_status extract_loops(ctx *x, map_problem *p, const cdl_stmt **main) {
  walk w = {.pred = pred_mac};
  walk_block(x->c, &x->c->body, &w);
  p->kind = MAP_MAIN_MAC;
  if (!w.found) {
    w.pred = pred_reduce;
    walk_block(x->c, &x->c->body, &w);
    p->kind = MAP_MAIN_REDUCE;
  }
  if (!w.found) {
    w.pred = pred_output;
    walk_block(x->c, &x->c->body, &w);
    p->kind = MAP_MAIN_MAP;
  }
  if (!w.found) return cov_error(COV_UNSUPPORTED, &x->c->loc, "codelet %s: no statement to map", x->c->name);
  const cdl_stmt *m = *main = w.found;
  if (w.n_loops > MAP_MAX_LOOPS)
    return cov_error(COV_UNSUPPORTED, &m->loc, "codelet %s: %d nested loops (at most %d)", x->c->name, w.n_loops,
                     MAP_MAX_LOOPS);
  p->op = m->op;
  p->n_loops = w.n_loops;
  for (int i = 0; i < w.n_loops; i++) {
    const cdl_loop *lp = x->c->loops[w.loops[i]];
    x->pos_of_loop[w.loops[i]] = i;
    p->loop_name[i] = lp->var;
    int64_t e;
    COV_RETURN_IF_ERROR(cdl_eval(lp->extent, &x->env, &e));
    if (e < 1)
      return cov_error(COV_INVALID_INPUT, &lp->loc, "codelet %s: loop %s has extent %lld", x->c->name, lp->var,
                       (long long)e);
    p->extent[i] = e;
  }
  return NULL;
}

/* The inputs the main statement m reads, as the problem's input operands. */
static cov_status extract_inputs(ctx *x, map_problem *p, const cdl_stmt *m) {
  int first_arg = p->kind == MAP_MAIN_MAP ? 0 : 1;
  for (int a = first_arg; a < m->n_args; a++) {
    if (m->args[a].kind != CDL_ARG_ACCESS) continue;
    const cdl_access *ac = &m->args[a].access;
    if (x->c->operands[ac->operand].role != CDL_INPUT)
      return cov_error(COV_UNSUPPORTED, &ac->loc, "codelet %s: the main statement reads %s, which is not an input",
                       x->c->name, ac->name);
    map_operand *o = &p->operands[p->n_inputs++];
    fill_operand(x, ac->operand, MAP_ROLE_INPUT, o);
    COV_RETURN_IF_ERROR(access_of(x, ac, p->n_loops, &o->acc));
    o->pad_value = ac->has_else ? ac->else_value : 0.0;
  }
  return NULL;
}

/* The statement after a reduction m that stores it (*store), its init
 * value, and the codelet's own op between them (gemm's alpha) as an
 * epilogue op: only `y = acc` and `y = op(acc, scalar)` are accepted. */
static cov_status extract_store(ctx *x, map_schedule *s, const cdl_stmt *m, const cdl_stmt **out) {
  map_problem *p = &s->prob;
  walk ws = {.pred = pred_output};
  walk_block(x->c, &x->c->body, &ws);
  if (!ws.found) return cov_error(COV_UNSUPPORTED, &x->c->loc, "codelet %s: no output store", x->c->name);
  const cdl_stmt *store = *out = ws.found;
  struct init_walk iw = {m, NULL, 0};
  find_init(&x->c->body, &iw);
  p->init = iw.found ? iw.found->args[0].f : 0.0;
  if (store->op == COV_OP_COPY && store->n_args == 1 && store->args[0].kind == CDL_ARG_ACCESS &&
      store->args[0].access.operand == m->dst.operand)
    return NULL; /* plain store */
  bool scalar = store->n_args == 2 && store->args[0].kind == CDL_ARG_ACCESS &&
                store->args[0].access.operand == m->dst.operand &&
                (store->args[1].kind == CDL_ARG_FLOAT || store->args[1].kind == CDL_ARG_FATTR ||
                 (store->args[1].kind == CDL_ARG_INDEX && !cdl_iexpr_has_loop(store->args[1].ie)));
  if (!scalar)
    return cov_error(COV_UNSUPPORTED, &store->loc,
                     "codelet %s: the statements after the reduction are not a plain store "
                     "or one scalar op (not mapped yet)",
                     x->c->name);
  /* a scalar: a literal, a float attribute, or a loop-free integer
   * expression of the shapes (global average pool's H * W) */
  double v = 0;
  if (store->args[1].kind == CDL_ARG_INDEX) {
    int64_t iv;
    COV_RETURN_IF_ERROR(cdl_eval(store->args[1].ie, &x->env, &iv));
    v = (double)iv;
  } else {
    v = store->args[1].kind == CDL_ARG_FLOAT ? store->args[1].f : x->b.attr_f[store->args[1].attr];
  }
  bool identity = (store->op == COV_OP_MUL && v == 1.0) ||
                  ((store->op == COV_OP_ADD || store->op == COV_OP_SUB) && v == 0.0);
  if (identity) return NULL;
  map_vop *vo = &s->vops[s->n_vops++];
  memset(vo, 0, sizeof *vo);
  vo->kind = MAP_VOP_MAP;
  vo->op = store->op;
  vo->a.kind = MAP_VS_REG;
  vo->b.kind = MAP_VS_SCALAR;
  vo->b.value = v;
  vo->from = x->c->name;
  return NULL;
}

/* The output operand the store writes, and the reduction loops: those the
 * output does not depend on (a map has none). */
static cov_status extract_output(ctx *x, map_problem *p, const cdl_stmt *m, const cdl_stmt *store) {
  p->output = p->n_inputs;
  map_operand *o = &p->operands[p->output];
  fill_operand(x, store->dst.operand, MAP_ROLE_OUTPUT, o);
  COV_RETURN_IF_ERROR(access_of(x, &store->dst, p->n_loops, &o->acc));
  p->n_operands = p->n_inputs + 1;
  for (int l = 0; l < p->n_loops; l++) {
    bool used = false;
    for (int d = 0; d < o->rank; d++) used |= o->acc.coef[d][l] != 0;
    p->reduction[l] = !used;
  }
  if (p->kind == MAP_MAIN_MAP)
    for (int l = 0; l < p->n_loops; l++)
      if (p->reduction[l])
        return cov_error(COV_UNSUPPORTED, &m->loc, "codelet %s: loop %s does not index the output", x->c->name,
                         p->loop_name[l]);
  return NULL;
}

cov_status map_extract(const cov_layer *layer, map_schedule *s, int *first_epi, cov_arena *arena) {
  map_problem *p = &s->prob;
  memset(p, 0, sizeof *p);
  const map_call *call = &layer->calls[0];
  ctx x;
  memset(&x, 0, sizeof x);
  x.c = call->c;
  COV_RETURN_IF_ERROR(cdl_bind(x.c, call->attrs, (size_t)call->n_attrs, call->in,
                               (size_t)call->n_inputs, arena, &x.b));
  x.env.c = x.c;
  x.env.dims = x.b.dims;
  x.env.attrs = x.b.attr_i;
  x.env.lets = x.b.lets;
  for (int i = 0; i < 256; i++) x.pos_of_loop[i] = -1;
  p->layer = layer->name;
  p->codelet = x.c->name;
  *first_epi = 1;
  if (map_epilogue_whole(x.c->name)) {
    *first_epi = 0;
    COV_RETURN_IF_ERROR(extract_copy(&x, layer, p, arena));
  } else {
    const cdl_stmt *m = NULL, *store = NULL;
    COV_RETURN_IF_ERROR(extract_loops(&x, p, &m));
    COV_RETURN_IF_ERROR(extract_inputs(&x, p, m));
    store = m; /* a map stores itself */
    if (p->kind != MAP_MAIN_MAP) COV_RETURN_IF_ERROR(extract_store(&x, s, m, &store));
    COV_RETURN_IF_ERROR(extract_output(&x, p, m, store));
  }
  p->ops = 1;
  for (int l = 0; l < p->n_loops; l++) p->ops *= p->extent[l];
  if (isnan(p->init)) p->init = 0;
  return NULL;
}
