/* backends/gpu/gpu_cdl_plan.c: a codelet call bound to its shapes, and the
 * loops of its nest that become the grid (gpu_cdl.h says when they may). */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_cdl.h"
#include "backends/gpu/gpu_mplan.h"

static int is_par(const gpu_cdl_bound *k, int n_par, int loop) {
  for (int j = 0; j < n_par; j++)
    if (k->par[j] == loop) return 1;
  return 0;
}

/* The grid part of a written tensor's access: per dim, its form if it
 * names a grid loop; 0 when it mixes grid and other loops, leaves a grid
 * loop out, or is not injective (positive coefficients, each at least the
 * span of the smaller ones: mixed radix). */
static int grid_sig(const gpu_cdl_bound *k, int n_par, const cdl_access *a, gpu_cdl_form *sig, int *has) {
  int rank = k->c->operands[a->operand].rank, seen = 0;
  for (int d = 0; d < rank; d++) {
    gpu_cdl_form f;
    if (!gpu_cdl_form_of(k, a, d, &f)) return 0;
    int np = 0;
    for (int t = 0; t < f.n; t++) np += is_par(k, n_par, f.loop[t]);
    has[d] = np > 0;
    if (!np) {
      sig[d] = f; /* covers() reads c0 and n of a dim no grid loop names */
      continue;
    }
    if (np != f.n) return 0;
    /* sort by coefficient (insertion: at most 16 terms) */
    for (int t = 1; t < f.n; t++)
      for (int u = t; u > 0 && f.coef[u - 1] > f.coef[u]; u--) {
        int64_t c = f.coef[u];
        int l = f.loop[u];
        f.coef[u] = f.coef[u - 1], f.loop[u] = f.loop[u - 1], f.coef[u - 1] = c, f.loop[u - 1] = l;
      }
    int64_t span = 1;
    for (int t = 0; t < f.n; t++) {
      if (f.coef[t] < span) return 0;
      if (__builtin_mul_overflow(f.coef[t], k->extent[f.loop[t]], &span)) return 0;
    }
    seen += f.n;
    sig[d] = f;
  }
  int need = 0;
  for (int j = 0; j < n_par; j++) need += k->extent[k->par[j]] > 1;
  return seen == need;
}

typedef struct walk {
  const gpu_cdl_bound *k;
  int n_par;
  int ok;
  unsigned char defined[CDL_MAX_OPERANDS * 3];
  int have[CDL_MAX_OPERANDS * 3]; /* written tensors: their signature is set */
  gpu_cdl_form sig[CDL_MAX_OPERANDS * 3][COV_MAX_RANK];
  int sig_has[CDL_MAX_OPERANDS * 3][COV_MAX_RANK];
  int64_t covers[CDL_MAX_OPERANDS * 3]; /* a write's grid part covers every element */
  uint64_t parts[CDL_MAX_OPERANDS * 3];  /* ... but along part_dim, at these indices (covers_at) */
  int part_dim[CDL_MAX_OPERANDS * 3];    /* that dim + 1; -1 once two writes disagree */
  int reads[CDL_MAX_OPERANDS * 3];      /* a written tensor is read too (from its zeros) */
  unsigned char priv[CDL_MAX_OPERANDS * 3];    /* shaped locals private to a work item */
  unsigned char full[CDL_MAX_OPERANDS * 3];    /* ... wholly written by an earlier nest */
  unsigned char pending[CDL_MAX_OPERANDS * 3]; /* ... wholly written in the nest being walked */
} walk;

/* The innermost blocks being walked, each with the last write of every
 * operand in it. */
typedef struct blk {
  const cdl_access *last[CDL_MAX_OPERANDS * 3];
  const struct blk *up;
} blk;

static int written_tensor(const cdl_codelet *c, int op) {
  return c->operands[op].role == CDL_OUTPUT || (c->operands[op].role == CDL_LOCAL && c->operands[op].rank > 0);
}

/* Whether the signature covers the tensor exactly (every dim a grid
 * combination from 0 with no gaps), dim `skip` (-1: none) left out. */
static int covers_but(const gpu_cdl_bound *k, int op, const gpu_cdl_form *sig, const int *has, int skip) {
  int rank = k->c->operands[op].rank;
  for (int d = 0; d < rank; d++) {
    if (d == skip) continue;
    /* a dim of extent 1 is covered by index 0: its loop's terms were
     * dropped (form_of), so no grid loop names it */
    if (!has[d] && k->b.shape[op][d] == 1 && sig[d].c0 == 0 && sig[d].n == 0) continue;
    if (!has[d] || sig[d].c0 != 0) return 0;
    int64_t span = 1;
    for (int t = 0; t < sig[d].n; t++) {
      if (sig[d].coef[t] != span) return 0;
      span *= k->extent[sig[d].loop[t]];
    }
    if (span != k->b.shape[op][d]) return 0;
  }
  return 1;
}

static int covers(const gpu_cdl_bound *k, int op, const gpu_cdl_form *sig, const int *has) {
  return covers_but(k, op, sig, has, -1);
}

/* A write that covers every element but along one dim no grid loop names,
 * where it takes constant index c (an LSTM cell's [h; c]): that dim's
 * index and c, or 0. Writes at every c from 0 to the dim's extent cover the
 * tensor together. */
static int covers_at(const gpu_cdl_bound *k, int op, const gpu_cdl_form *sig, const int *has, int *dim,
                     int64_t *c) {
  int rank = k->c->operands[op].rank;
  for (int d = 0; d < rank; d++)
    if (!has[d] && sig[d].n == 0 && k->b.shape[op][d] > 1 && k->b.shape[op][d] <= 64 && sig[d].c0 >= 0 &&
        sig[d].c0 < k->b.shape[op][d] && covers_but(k, op, sig, has, d)) {
      *dim = d, *c = sig[d].c0;
      return 1;
    }
  return 0;
}

static int no_grid_terms(walk *w, const cdl_access *a) {
  for (int d = 0; d < w->k->c->operands[a->operand].rank; d++) {
    gpu_cdl_form f;
    if (!gpu_cdl_form_of(w->k, a, d, &f)) return 0;
    for (int t = 0; t < f.n; t++)
      if (is_par(w->k, w->n_par, f.loop[t])) return 0;
  }
  return 1;
}

static int same_element(const gpu_cdl_bound *k, const cdl_access *a, const cdl_access *b) {
  for (int d = 0; d < k->c->operands[a->operand].rank; d++) {
    gpu_cdl_form fa, fb;
    if (!gpu_cdl_form_of(k, a, d, &fa) || !gpu_cdl_form_of(k, b, d, &fb) || fa.c0 != fb.c0 || fa.n != fb.n) return 0;
    for (int t = 0; t < fa.n; t++)
      if (fa.loop[t] != fb.loop[t] || fa.coef[t] != fb.coef[t]) return 0;
  }
  return 1;
}

/* A write whose loops enumerate every element of its tensor once. */
static int writes_all(const gpu_cdl_bound *k, const cdl_access *a) {
  gpu_cdl_form sig[COV_MAX_RANK];
  int has[COV_MAX_RANK];
  int rank = k->c->operands[a->operand].rank;
  for (int d = 0; d < rank; d++) {
    if (!gpu_cdl_form_of(k, a, d, &sig[d])) return 0;
    gpu_cdl_form *f = &sig[d];
    for (int t = 1; t < f->n; t++)
      for (int u = t; u > 0 && f->coef[u - 1] > f->coef[u]; u--) {
        int64_t c = f->coef[u];
        int l = f->loop[u];
        f->coef[u] = f->coef[u - 1], f->loop[u] = f->loop[u - 1], f->coef[u - 1] = c, f->loop[u - 1] = l;
      }
    has[d] = 1;
  }
  return covers(k, a->operand, sig, has);
}

/* A shaped local no grid loop indexes: private to the work item if read
 * only where it was written before in the item. */
static void check_private(walk *w, const blk *bk, const cdl_access *a, int is_write) {
  int op = a->operand;
  w->priv[op] = 1;
  if (is_write) {
    if (writes_all(w->k, a)) w->pending[op] = 1;
    return;
  }
  if (w->full[op]) return;
  for (const blk *b = bk; b; b = b->up)
    if (b->last[op]) {
      if (!same_element(w->k, b->last[op], a)) w->ok = 0;
      return;
    }
  w->ok = 0;
}

static void check_tensor(walk *w, const blk *bk, const cdl_access *a, int is_write) {
  const cdl_codelet *c = w->k->c;
  int op = a->operand;
  if (!written_tensor(c, op)) return;
  if (c->operands[op].role == CDL_LOCAL && no_grid_terms(w, a) && !w->have[op]) {
    check_private(w, bk, a, is_write);
    return;
  }
  if (w->priv[op]) {
    w->ok = 0;
    return;
  }
  gpu_cdl_form sig[COV_MAX_RANK];
  int has[COV_MAX_RANK] = {0};
  if (!grid_sig(w->k, w->n_par, a, sig, has)) {
    w->ok = 0;
    return;
  }
  int rank = c->operands[op].rank;
  if (!w->have[op]) {
    w->have[op] = 1;
    memcpy(w->sig[op], sig, sizeof sig);
    memcpy(w->sig_has[op], has, sizeof has);
  } else {
    for (int d = 0; d < rank; d++)
      if (has[d] != w->sig_has[op][d] ||
          (has[d] && (sig[d].c0 != w->sig[op][d].c0 || sig[d].n != w->sig[op][d].n ||
                      memcmp(sig[d].loop, w->sig[op][d].loop, sizeof sig[d].loop) ||
                      memcmp(sig[d].coef, w->sig[op][d].coef, sizeof sig[d].coef))))
        w->ok = 0;
  }
  int dim;
  int64_t at;
  if (is_write && covers(w->k, op, sig, has)) {
    w->covers[op] = 1;
  } else if (is_write && w->part_dim[op] >= 0 && covers_at(w->k, op, sig, has, &dim, &at)) {
    if (w->part_dim[op] && w->part_dim[op] != dim + 1) w->part_dim[op] = -1;
    else w->part_dim[op] = dim + 1, w->parts[op] |= (uint64_t)1 << at;
  }
  if (!is_write) w->reads[op] = 1;
}

static int scalar_local(const cdl_codelet *c, int op) {
  return c->operands[op].role == CDL_LOCAL && c->operands[op].rank == 0;
}

/* Program order over a work item's statements: scalar locals read before
 * they are assigned make iterations depend on each other. `runs`: every
 * enclosing inner loop runs at least once; `up`: the enclosing blocks
 * (NULL: the work item's body, whose nests complete private writes). */
static void walk_block(walk *w, const cdl_block *b, int runs, const blk *up, int top) {
  blk *bk = calloc(1, sizeof *bk);
  if (!bk) {
    w->ok = 0;
    return;
  }
  bk->up = up;
  for (size_t i = 0; i < b->n && w->ok; i++) {
    const cdl_stmt *s = b->stmts[i];
    if (s->kind == CDL_ST_LOOP) {
      walk_block(w, &s->loop.body, runs && w->k->extent[s->loop.id] >= 1, bk, 0);
    } else {
      for (int j = 0; j < s->n_args; j++) {
        if (s->args[j].kind != CDL_ARG_ACCESS) continue;
        const cdl_access *a = &s->args[j].access;
        if (scalar_local(w->k->c, a->operand) && !w->defined[a->operand]) w->ok = 0;
        check_tensor(w, bk, a, 0);
      }
      if (scalar_local(w->k->c, s->dst.operand) && runs) w->defined[s->dst.operand] = 1;
      check_tensor(w, bk, &s->dst, 1);
      bk->last[s->dst.operand] = &s->dst;
    }
    if (top && runs)
      for (int op = 0; op < CDL_MAX_OPERANDS * 3; op++) w->full[op] |= w->pending[op];
  }
  free(bk);
}

/* Tries the first n_par loops of the nest as the grid. */
static int try_grid(gpu_cdl_bound *k, int n_par, const cdl_block *body, int64_t *covered) {
  walk *w = calloc(1, sizeof *w);
  if (!w) return 0;
  w->k = k, w->n_par = n_par, w->ok = 1;
  walk_block(w, body, 1, NULL, 1);
  int ok = w->ok;
  for (int op = 0; ok && op < k->c->n_inputs + k->c->n_outputs + k->c->n_locals; op++) {
    int pd = w->part_dim[op] - 1;
    int64_t ext = pd >= 0 ? k->b.shape[op][pd] : 0;
    int parts = pd >= 0 && w->parts[op] == (ext == 64 ? ~(uint64_t)0 : ((uint64_t)1 << ext) - 1);
    covered[op] = (w->covers[op] || parts) && !w->reads[op];
    k->priv[op] = n_par > 0 && w->priv[op];
  }
  free(w);
  return ok;
}

static void choose_grid(gpu_cdl_bound *k, int64_t *covered) {
  const cdl_codelet *c = k->c;
  k->body = &c->body;
  k->info.n_par = 0;
  if (c->body.n != 1 || c->body.stmts[0]->kind != CDL_ST_LOOP) return;
  const cdl_loop *chain[CDL_MAX_LOOP_DEPTH];
  int n = 0;
  const cdl_stmt *s = c->body.stmts[0];
  for (;;) {
    chain[n++] = &s->loop;
    if (n == CDL_MAX_LOOP_DEPTH || s->loop.body.n != 1 || s->loop.body.stmts[0]->kind != CDL_ST_LOOP) break;
    s = s->loop.body.stmts[0];
  }
  for (int j = n; j >= 1; j--) {
    for (int t = 0; t < j; t++) k->par[t] = chain[t]->id;
    if (try_grid(k, j, &chain[j - 1]->body, covered)) {
      k->info.n_par = j;
      k->body = &chain[j - 1]->body;
      return;
    }
  }
}

void gpu_cdl_unbind(gpu_cdl_bound *k) {
  cov_arena_destroy(k->arena);
  memset(k, 0, sizeof *k);
}

static cov_status fill_info(gpu_cdl_bound *k, const int64_t *covered) {
  const cdl_codelet *c = k->c;
  gpu_cdl_info *in = &k->info;
  int n = 0;
  in->items = 1;
  for (int j = 0; j < in->n_par; j++)
    if (__builtin_mul_overflow(in->items, k->extent[k->par[j]] > 0 ? k->extent[k->par[j]] : 0, &in->items))
      return cov_error(COV_OUT_OF_RANGE, GPU_LOC(c->file, c->name), "codelet '%s': too many work items", c->name);
  gpu_cdl_plan_team(k);
  if (__builtin_mul_overflow(in->items, (int64_t)in->lanes, &in->threads) || in->threads / GPU_EW_THREADS >= INT32_MAX)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(c->file, c->name), "codelet '%s': %lld work items of %d threads",
                     c->name, (long long)in->items, in->lanes);
  for (int op = 0; op < c->n_inputs + c->n_outputs + c->n_locals; op++) {
    const cdl_operand *o = &c->operands[op];
    if (o->role == CDL_LOCAL && o->rank == 0) continue;
    if (n == GPU_CDL_MAX_ARGS)
      return cov_error(COV_UNSUPPORTED, GPU_LOC(c->file, c->name), "codelet '%s': more than %d kernel arguments", c->name,
                       GPU_CDL_MAX_ARGS);
    in->dtype[n] = k->b.dtype[op], in->rank[n] = o->rank, in->numel[n] = 1;
    for (int d = 0; d < o->rank; d++) {
      in->shape[n][d] = k->b.shape[op][d];
      if (__builtin_mul_overflow(in->numel[n], in->shape[n][d], &in->numel[n]))
        return cov_error(COV_OUT_OF_RANGE, GPU_LOC(c->file, c->name), "codelet '%s': operand '%s' is too large", c->name,
                         o->name);
    }
    if (k->priv[op] && __builtin_mul_overflow(in->numel[n], in->items, &in->numel[n]))
      return cov_error(COV_OUT_OF_RANGE, GPU_LOC(c->file, c->name), "codelet '%s': local '%s' is too large", c->name,
                       o->name);
    if (k->priv[op]) in->rank[n] = 1, in->shape[n][0] = in->numel[n];
    in->zero[n] = o->role != CDL_INPUT && !(in->n_par && covered[op]) && !k->priv[op];
    if (o->role == CDL_OUTPUT) in->n_out++;
    if (o->role == CDL_LOCAL) in->n_ws++;
    n++;
  }
  in->n_args = n;
  return NULL;
}

cov_status gpu_cdl_bind(const gpu_cdl_call *kc, gpu_cdl_bound *k) {
  memset(k, 0, sizeof *k);
  const cdl_codelet *c = kc->c;
  k->c = c;
  k->arena = cov_arena_create();
  if (!k->arena) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_tensor in[GPU_CDL_MAX_IO];
  memset(in, 0, sizeof in);
  for (int i = 0; i < kc->n_in; i++) {
    in[i].dtype = kc->in_dtype[i], in[i].rank = kc->in_rank[i];
    memcpy(in[i].shape, kc->in_shape[i], sizeof kc->in_shape[i]);
  }
  cov_status st = cdl_bind(c, kc->attrs, (size_t)kc->n_attrs, in, (size_t)kc->n_in, k->arena, &k->b);
  if (!st) {
    k->env = (cdl_env){.c = c, .dims = k->b.dims, .attrs = k->b.attr_i, .lets = k->b.lets, .loops = NULL};
    k->extent = cov_arena_array(k->arena, (size_t)(c->n_loops ? c->n_loops : 1), sizeof *k->extent);
    if (!k->extent) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  for (int l = 0; l < c->n_loops && !st; l++) st = cdl_eval(c->loops[l]->extent, &k->env, &k->extent[l]);
  int64_t covered[CDL_MAX_OPERANDS * 3] = {0};
  if (!st) choose_grid(k, covered);
  if (!st) st = fill_info(k, covered);
  if (st) gpu_cdl_unbind(k);
  return st;
}

cov_status gpu_cdl_analyse(const gpu_cdl_call *kc, gpu_cdl_info *out) {
  gpu_cdl_bound k;
  COV_RETURN_IF_ERROR(gpu_cdl_bind(kc, &k));
  *out = k.info;
  gpu_cdl_unbind(&k);
  return NULL;
}
