/* backends/gpu/gpu_cdl_team.c: whether one work item's loops are shared by
 * a team of GPU_CDL_LANES lanes of a warp (gpu_cdl.h), and the affine
 * forms of accesses the grid choice (gpu_cdl_plan.c) reads too.
 *
 * The rule: every loop statement at the top of the work item's body is
 * the outermost of a perfect nest the team splits (flat iteration f, in
 * row-major order of the nest's loops, runs on lane f mod GPU_CDL_LANES),
 * and a team is taken when one such nest has at least GPU_CDL_TEAM_MIN
 * iterations (GPU_CDL_TEAM_LONG from GPU_CDL_TEAM_ITEMS work items on:
 * that many single threads fill the GPU, neighbouring ones reading
 * neighbouring elements, and a short reduction is not worth its
 * exchanges); then one warp owns one output element and the reduction's
 * trip count per thread drops by up to GPU_CDL_LANES. It is correct when
 *  - a scalar local a nest writes is an accumulator (every statement of
 *    the nest naming it is s = add / mac / max / min(s, ...), one kind of
 *    combination, s of a float type other than 16-bit ones or an integer
 *    type other than bool), combined across the lanes after the nest, or
 *    a per-lane temporary assigned before it is read in the iteration and
 *    not read after the nest before it is assigned again;
 *  - a tensor the item writes is either written outside the nests and
 *    read nowhere in the item (lane 0 stores it), or touched only inside
 *    nests of equal loop extents at one injective combination of the
 *    nest's loops, so each element is only ever touched by one lane;
 *  - scalars read outside the nests hold the same value in every lane.
 * A reduction reassociates: each lane accumulates its iterations in order
 * from the combination's identity (-0.0, -inf, +inf; 0 or the integer
 * type's limits), the lanes' partial values are combined by exchanges
 * across lane distances 16, 8, 4, 2, 1 and the result is combined with
 * the value the accumulator held before the nest: a fixed order for every
 * element, so results are deterministic. Integer sums wrap as the
 * interpreter's do (modular arithmetic does not depend on the order). */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_cdl.h"

enum { N_OPS = CDL_MAX_OPERANDS * 3 };

int gpu_cdl_form_of(const gpu_cdl_bound *k, const cdl_access *a, int d, gpu_cdl_form *f) {
  const cdl_affine *af = &a->aff[d];
  memset(f, 0, sizeof *f);
  cov_status st = cdl_eval(af->constant, &k->env, &f->c0);
  for (size_t t = 0; t < af->n_terms && !st; t++) {
    int64_t coef;
    st = cdl_eval(af->coefs[t], &k->env, &coef);
    if (st || coef == 0 || k->extent[af->loops[t]] <= 1) continue;
    if (f->n == CDL_MAX_LOOP_DEPTH) return 0;
    f->loop[f->n] = af->loops[t], f->coef[f->n++] = coef;
  }
  cov_status_free(st);
  return !st;
}

int gpu_cdl_nest(const cdl_stmt *s, const cdl_loop **chain) {
  int n = 0;
  for (;;) {
    chain[n++] = &s->loop;
    if (n == CDL_MAX_LOOP_DEPTH || s->loop.body.n != 1 || s->loop.body.stmts[0]->kind != CDL_ST_LOOP) return n;
    s = s->loop.body.stmts[0];
  }
}

static int is_scalar_local(const cdl_codelet *c, int op) {
  return c->operands[op].role == CDL_LOCAL && c->operands[op].rank == 0;
}

/* The combination of accumulator op in block b (any depth), in *comb;
 * 0 when a statement names op otherwise. */
static int acc_in_block(const cdl_block *b, int op, int *comb) {
  for (size_t i = 0; i < b->n; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) {
      if (!acc_in_block(&s->loop.body, op, comb)) return 0;
      continue;
    }
    int uses = 0;
    for (int j = 0; j < s->n_args; j++) uses += s->args[j].kind == CDL_ARG_ACCESS && s->args[j].access.operand == op;
    if (s->dst.operand != op) {
      if (uses) return 0;
      continue;
    }
    if (uses != 1 || s->n_args < 2 || s->args[0].kind != CDL_ARG_ACCESS || s->args[0].access.operand != op) return 0;
    int c = s->op == COV_OP_ADD || s->op == COV_OP_MAC ? COV_OP_ADD
            : s->op == COV_OP_MAX || s->op == COV_OP_MIN ? (int)s->op
                                                         : 0;
    if (!c || (*comb && *comb != c)) return 0;
    *comb = c;
  }
  return 1;
}

int gpu_cdl_team_acc(const gpu_cdl_bound *k, const cdl_loop *outer, int op) {
  if (!is_scalar_local(k->c, op)) return 0;
  cov_dtype d = k->b.dtype[op];
  if (d == COV_BOOL || d == COV_F16 || d == COV_BF16) return 0;
  int comb = 0;
  return acc_in_block(&outer->body, op, &comb) ? comb : 0;
}

/* ---- the walk ------------------------------------------------------------ */

/* A lane tensor's access: its forms with the nest's loops named by their
 * place in the nest (-1 - place) and the nest's extents. */
typedef struct lane_sig {
  int n_nest;
  int64_t ext[CDL_MAX_LOOP_DEPTH];
  gpu_cdl_form f[COV_MAX_RANK];
} lane_sig;

typedef struct team {
  const gpu_cdl_bound *k;
  int ok;
  const cdl_loop *nest[CDL_MAX_LOOP_DEPTH]; /* the nest being walked (n_nest 0: outside) */
  int n_nest;
  unsigned char uni[N_OPS];    /* scalar locals equal in every lane */
  unsigned char tmp[N_OPS];    /* ... a lane assigned in this iteration of the nest */
  unsigned char acc[N_OPS];    /* ... the nest's accumulators */
  unsigned char in_nest[N_OPS]; /* ... written somewhere in the nest */
  unsigned char written[N_OPS]; /* tensors the item writes */
  unsigned char top_w[N_OPS], top_r[N_OPS], lane_t[N_OPS];
  lane_sig sig[N_OPS];
  int64_t max_nest; /* the most iterations of a nest */
} team;

static void mark_written(team *t, const cdl_block *b, unsigned char *set, int scalars) {
  for (size_t i = 0; i < b->n; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) mark_written(t, &s->loop.body, set, scalars);
    else if (is_scalar_local(t->k->c, s->dst.operand) == scalars) set[s->dst.operand] = 1;
  }
}

static int nest_place(const team *t, int loop) {
  for (int j = 0; j < t->n_nest; j++)
    if (t->nest[j]->id == loop) return j;
  return -1;
}

/* The access's lane signature; 0 unless each dim names only nest loops or
 * none, and the nest's moving loops once each in mixed radix (distinct
 * iterations touch distinct elements). */
static int lane_sig_of(const team *t, const cdl_access *a, lane_sig *sg) {
  memset(sg, 0, sizeof *sg);
  sg->n_nest = t->n_nest;
  int seen = 0, need = 0;
  for (int j = 0; j < t->n_nest; j++) {
    sg->ext[j] = t->k->extent[t->nest[j]->id];
    need += sg->ext[j] > 1;
  }
  for (int d = 0; d < t->k->c->operands[a->operand].rank; d++) {
    gpu_cdl_form *f = &sg->f[d];
    if (!gpu_cdl_form_of(t->k, a, d, f)) return 0;
    int np = 0;
    for (int u = 0; u < f->n; u++) {
      int p = nest_place(t, f->loop[u]);
      if (p >= 0) np++, f->loop[u] = -1 - p;
    }
    if (np && np != f->n) return 0;
    for (int u = 1; u < f->n; u++) /* by coefficient: mixed radix */
      for (int v = u; v > 0 && f->coef[v - 1] > f->coef[v]; v--) {
        int64_t c = f->coef[v];
        int l = f->loop[v];
        f->coef[v] = f->coef[v - 1], f->loop[v] = f->loop[v - 1], f->coef[v - 1] = c, f->loop[v - 1] = l;
      }
    int64_t span = 1;
    for (int u = 0; u < np; u++) {
      if (f->coef[u] < span || __builtin_mul_overflow(f->coef[u], sg->ext[-1 - f->loop[u]], &span)) return 0;
    }
    seen += np;
  }
  return seen == need;
}

static void tensor_access(team *t, const cdl_access *a, int is_write) {
  int op = a->operand;
  if (!t->written[op]) return;
  if (!t->n_nest) {
    if (t->lane_t[op]) t->ok = 0;
    if (is_write) t->top_w[op] = 1;
    else t->top_r[op] = 1;
    return;
  }
  lane_sig sg;
  if (t->top_w[op] || !lane_sig_of(t, a, &sg)) {
    t->ok = 0;
    return;
  }
  if (!t->lane_t[op]) {
    t->lane_t[op] = 1, t->sig[op] = sg;
  } else if (memcmp(&t->sig[op], &sg, sizeof sg)) {
    t->ok = 0;
  }
}

static void scalar_read(team *t, int op) {
  if (!is_scalar_local(t->k->c, op)) return;
  if (!t->n_nest) {
    if (!t->uni[op]) t->ok = 0;
    return;
  }
  if (t->acc[op] || t->tmp[op] || (t->uni[op] && !t->in_nest[op])) return;
  t->ok = 0;
}

static void walk(team *t, const cdl_block *b) {
  for (size_t i = 0; i < b->n && t->ok; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) { /* a loop that never runs does nothing (emit_loop) */
      if (t->k->extent[s->loop.id] >= 1) walk(t, &s->loop.body);
      continue;
    }
    for (int j = 0; j < s->n_args; j++) {
      if (s->args[j].kind != CDL_ARG_ACCESS) continue;
      scalar_read(t, s->args[j].access.operand);
      tensor_access(t, &s->args[j].access, 0);
    }
    int op = s->dst.operand;
    if (is_scalar_local(t->k->c, op)) {
      if (!t->n_nest) t->uni[op] = 1;
      else if (!t->acc[op]) t->tmp[op] = 1;
    }
    tensor_access(t, &s->dst, 1);
  }
}

/* One nest at the top of the item's body. */
static void walk_nest(team *t, const cdl_stmt *s) {
  t->n_nest = gpu_cdl_nest(s, t->nest);
  int64_t iters = 1;
  for (int j = 0; j < t->n_nest; j++) {
    int64_t e = t->k->extent[t->nest[j]->id];
    if (e <= 0 || __builtin_mul_overflow(iters, e, &iters)) iters = e <= 0 ? 0 : INT64_MAX;
  }
  if (iters > t->max_nest) t->max_nest = iters;
  memset(t->in_nest, 0, sizeof t->in_nest);
  memset(t->tmp, 0, sizeof t->tmp);
  memset(t->acc, 0, sizeof t->acc);
  mark_written(t, &t->nest[0]->body, t->in_nest, 1);
  for (int op = 0; op < N_OPS; op++)
    t->acc[op] = t->in_nest[op] && t->uni[op] && gpu_cdl_team_acc(t->k, t->nest[0], op) != 0;
  walk(t, &t->nest[t->n_nest - 1]->body);
  for (int op = 0; op < N_OPS; op++)
    if (t->in_nest[op] && !t->acc[op]) t->uni[op] = 0; /* each lane's last iteration's */
  t->n_nest = 0;
}

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Statements one thread runs in block b (loops split `lanes` ways at the top). */
static int64_t stmts_of(const gpu_cdl_bound *k, const cdl_block *b, int lanes) {
  int64_t n = 0;
  for (size_t i = 0; i < b->n; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind != CDL_ST_LOOP) {
      n++;
      continue;
    }
    const cdl_loop *chain[CDL_MAX_LOOP_DEPTH] = {&s->loop}; /* the loop alone, unless split over lanes */
    int d = lanes > 1 ? gpu_cdl_nest(s, chain) : 1;
    int64_t it = 1, inner = stmts_of(k, &chain[d - 1]->body, 1);
    for (int j = 0; j < d; j++) it = sat_mul(it, k->extent[chain[j]->id] > 0 ? k->extent[chain[j]->id] : 0);
    it = it / lanes + (it % lanes != 0);
    n = sat_add(n, sat_mul(it, inner));
  }
  return n;
}

void gpu_cdl_plan_team(gpu_cdl_bound *k) {
  k->info.lanes = 1;
  team *t = calloc(1, sizeof *t);
  if (t) {
    t->k = k, t->ok = 1;
    for (int op = 0; op < N_OPS; op++) t->uni[op] = 1; /* scalar locals start as zeros */
    mark_written(t, k->body, t->written, 0);
    for (size_t i = 0; i < k->body->n && t->ok; i++) {
      const cdl_stmt *s = k->body->stmts[i];
      if (s->kind == CDL_ST_LOOP) walk_nest(t, s);
      else {
        cdl_block one = {1, (cdl_stmt **)&k->body->stmts[i]};
        walk(t, &one);
      }
    }
    for (int op = 0; op < N_OPS && t->ok; op++)
      if ((t->top_w[op] && t->top_r[op]) || (t->lane_t[op] && (t->top_w[op] || t->top_r[op]))) t->ok = 0;
    int64_t need = k->info.items < GPU_CDL_TEAM_ITEMS ? GPU_CDL_TEAM_MIN : GPU_CDL_TEAM_LONG;
    if (t->ok && t->max_nest >= need) k->info.lanes = GPU_CDL_LANES;
    free(t);
  }
  k->info.serial = stmts_of(k, k->body, k->info.lanes);
}
