/* mapper/map_depthwise.c: depthwise contractions across the array's width.
 *
 * A contraction whose weights and output share no loop that the input lacks
 * (a depthwise convolution: every output channel reads its own input
 * channel) has no loop for the array's columns in its own loop nest: a
 * column's weights would have to multiply the same streamed row of A as the
 * other columns, and the channel loop indexes both inputs. What it does have
 * is a sliding window: an output loop q and a reduction loop s meet in one
 * input dimension as st*q + s, while the weights see s alone. Splitting
 *     q = J*qb + j        (j in [0, J): J neighbouring outputs)
 *     t = st*j + s        (t in [0, T), T = st*(J-1) + S: the input window
 *                          those J outputs read)
 * turns that into a dense GEMM per window: A[m, t] = input at st*J*qb + t
 * (streamed over the other output loops), B[t, j] = weights at t - st*j
 * (a banded, Toeplitz block: reads outside the weights' extent are the
 * operand's padding, 0), C[m, j] = output at J*qb + j. The rows loop is t
 * and the columns loop j, so J outputs of S taps each (J*S useful MACs of
 * the array's T*J) are computed per streamed row instead of one column's.
 *
 * Every access stays affine (a*q + b*s becomes a*J*qb + b*t + (a - b*st)*j),
 * so the search, the cost model, the schedule interpreter and the code
 * generator take the rewritten problem as any other; map_rewrite_search offers it
 * next to the original and the cost model (ACG numbers only) decides which
 * runs. J is the largest divisor of q's extent whose window fits the array:
 * T <= rows on a weight-stationary array (the reduction is bound to the
 * rows), J <= columns on both. */
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"

/* The loops operand o's dimension d reads, as a bit set. */
static unsigned dim_loops(const map_operand *o, int d, int n_loops) {
  unsigned m = 0;
  for (int l = 0; l < n_loops; l++)
    if (o->acc.coef[d][l]) m |= 1u << l;
  return m;
}

/* Whether operand o reads loop l in any dimension other than `except`. */
static bool reads_elsewhere(const map_operand *o, int l, int except) {
  for (int d = 0; d < o->rank; d++)
    if (d != except && o->acc.coef[d][l]) return true;
  return false;
}

/* The sliding window of a depthwise contraction: input xi, output loop q
 * with input coefficient *st, reduction loop s (coefficient 1 in both
 * inputs). False when p is not one. */
static bool find_window(const map_problem *p, const map_schedule *proto, int *xi, int *q, int *s,
                        int64_t *st) {
  if (p->kind != MAP_MAIN_MAC || p->n_inputs != 2) return false;
  const map_operand *y = &p->operands[p->output];
  /* depthwise: no output loop (of more than one trip) that the weights and
   * the output read and the input does not, for either choice of input */
  for (int x = 0; x < 2; x++) {
    const map_operand *in = &p->operands[x], *w = &p->operands[1 - x];
    bool dense = false;
    for (int l = 0; l < p->n_loops; l++)
      if (!p->reduction[l] && p->extent[l] > 1 && map_operand_depends(w, l) &&
          map_operand_depends(y, l) && !map_operand_depends(in, l))
        dense = true;
    if (dense) continue;
    for (int d = 0; d < in->rank; d++) {
      unsigned m = dim_loops(in, d, p->n_loops);
      for (int a = 0; a < p->n_loops; a++)
        for (int b = 0; b < p->n_loops; b++) {
          if (m != ((1u << a) | (1u << b)) || a == b || p->reduction[a] || !p->reduction[b]) continue;
          if (in->acc.coef[d][a] < 1 || in->acc.coef[d][b] != 1 || p->extent[a] < 2) continue;
          if (map_operand_depends(w, a) || reads_elsewhere(in, a, d) || reads_elsewhere(in, b, d))
            continue;
          /* the weights read s in one dimension, alone, with coefficient 1 */
          int wd = -1;
          for (int e = 0; e < w->rank; e++)
            if (w->acc.coef[e][b]) wd = wd < 0 ? e : -2;
          if (wd < 0 || w->acc.coef[wd][b] != 1 || dim_loops(w, wd, p->n_loops) != 1u << b) continue;
          /* the output reads q in one dimension with coefficient 1 */
          int yd = -1;
          for (int e = 0; e < y->rank; e++)
            if (y->acc.coef[e][a]) yd = yd < 0 ? e : -2;
          if (yd < 0 || y->acc.coef[yd][a] != 1) continue;
          /* nothing else (a bias vector, a pooled epilogue) reads q or s */
          bool other = false;
          for (int o = p->output + 1; o < p->n_operands; o++)
            other |= map_operand_depends(&p->operands[o], a) || map_operand_depends(&p->operands[o], b);
          for (int v = 0; v < proto->n_vops; v++) {
            const map_vop *vo = &proto->vops[v];
            if (vo->kind == MAP_VOP_ROW_REDUCE && (vo->loop == a || vo->loop == b)) other = true;
            if (vo->kind == MAP_VOP_POOL)
              for (int k = 0; k < 2; k++) other |= vo->pool_loop[k] == a || vo->pool_loop[k] == b;
          }
          if (other) continue;
          *xi = x;
          *q = a;
          *s = b;
          *st = in->acc.coef[d][a];
          return true;
        }
    }
  }
  return false;
}

bool map_dw_rewrite(const map_schedule *proto, const map_target *t, map_schedule *outs) {
  const map_problem *p = &proto->prob;
  map_problem *out = &outs->prob;
  int xi, q, s;
  int64_t st;
  if (p->n_loops + 1 > MAP_MAX_LOOPS || !find_window(p, proto, &xi, &q, &s, &st)) return false;
  const cov_acg *g = t->acg;
  if (t->node < g->n_storage || g->compute[t->node - g->n_storage].kind != ACG_SYSTOLIC) return false;
  bool os = map_output_stationary(g, t->node);
  int64_t rows = (int64_t)t->dims[0], cols = (int64_t)t->dims[1];
  int64_t Q = p->extent[q], S = p->extent[s], J = 0;
  for (int64_t j = Q; j >= 2 && !J; j--)
    if (Q % j == 0 && j <= cols && (os || st * (j - 1) + S <= rows)) J = j;
  if (!J) return false;
  *out = *p;
  int jl = p->n_loops;
  out->n_loops = jl + 1;
  out->loop_name[q] = "qb";
  out->loop_name[s] = "t";
  out->loop_name[jl] = "j";
  out->extent[q] = Q / J;
  out->extent[s] = st * (J - 1) + S;
  out->extent[jl] = J;
  out->reduction[q] = false;
  out->reduction[s] = true;
  out->reduction[jl] = false;
  for (int o = 0; o < out->n_operands; o++) {
    map_access *ac = &out->operands[o].acc;
    for (int d = 0; d < ac->rank; d++) {
      int64_t a = p->operands[o].acc.coef[d][q], b = p->operands[o].acc.coef[d][s];
      ac->coef[d][q] = a * J;
      ac->coef[d][s] = b;
      ac->coef[d][jl] = a - b * st;
    }
  }
  /* the weights' reads outside their taps are the band's zeros */
  out->operands[1 - xi].pad_value = 0;
  out->ops = 1;
  for (int l = 0; l < out->n_loops; l++) out->ops *= out->extent[l];
  return true;
}

/* Keeps the cheapest of cs's schedules and of `more`'s (best first); false
 * when out of memory (the caller fails: under memory pressure a mapping is
 * the same as without, or an error, never a worse schedule). */
static bool merge_best(cov_schedule *cs, const cov_schedule *more) {
  map_schedule *all = malloc(sizeof *all * 2 * (MAP_MAX_ALTS + 1));
  if (!all) return false;
  int n = 0;
  all[n++] = cs->s;
  for (int i = 0; i < cs->n_alts; i++) all[n++] = cs->alts[i];
  all[n++] = more->s;
  for (int i = 0; i < more->n_alts; i++) all[n++] = more->alts[i];
  for (int i = 1; i < n; i++) /* stable insertion sort: ties keep the original first */
    for (int k = i; k > 0 && all[k].cost.cycles < all[k - 1].cost.cycles; k--) {
      map_schedule tmp = all[k];
      all[k] = all[k - 1];
      all[k - 1] = tmp;
    }
  cs->s = all[0];
  cs->n_alts = n - 1 < MAP_MAX_ALTS ? n - 1 : MAP_MAX_ALTS;
  for (int i = 0; i < cs->n_alts; i++) cs->alts[i] = all[i + 1];
  cs->evaluations += more->evaluations;
  cs->candidates += more->candidates;
  free(all);
  return true;
}

/* An error of the rewritten problem's binding or search: the original
 * schedule stands, unless the error is running out of memory. */
static cov_status rewrite_failed(cov_status st) {
  if (cov_status_code(st) == COV_OUT_OF_MEMORY) return st;
  cov_status_free(st);
  return NULL;
}

cov_status map_rewrite_search(const map_schedule *proto, const map_target *t,
                              const cov_map_options *opt, cov_schedule *cs, map_rewrite_fn rewrite) {
  map_schedule *p2 = malloc(sizeof *p2);
  map_target *t2 = malloc(sizeof *t2);
  cov_schedule *more = calloc(1, sizeof *more);
  cov_status st = NULL;
  if (!p2 || !t2 || !more) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    goto done;
  }
  *p2 = *proto;
  if (!rewrite(proto, t, p2)) goto done;
  /* The same binding must hold for the longer reduction (an integer
   * problem on a float array is exact only for so many terms). A padded
   * reduction's added terms are all 0, but the check stays conservative. */
  cov_status bt = map_bind_target(&p2->prob, t->acg, t2);
  bool same = !bt && t2->node == t->node && t2->cap == t->cap && t2->narrowed == t->narrowed;
  if (bt) {
    st = rewrite_failed(bt);
    goto done;
  }
  if (!same) goto done;
  /* the rewritten problem's own paths (a preloaded bias goes to the array)
   * and the storage of what is left of the epilogue */
  bt = map_bind_epilogue_storage(p2, t2);
  if (bt) {
    st = rewrite_failed(bt);
    goto done;
  }
  more->arena = cs->arena;
  /* a budget bounds both searches together */
  cov_map_options o2 = opt ? *opt : (cov_map_options){0};
  if (o2.budget > 0) {
    o2.budget -= cs->evaluations;
    if (o2.budget <= 0) goto done;
  }
  st = map_search(t2, p2, &o2, more);
  if (st) { /* nothing fits the rewritten problem: the original stands */
    st = rewrite_failed(st);
    goto done;
  }
  if (!merge_best(cs, more)) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
done:
  free(p2);
  free(t2);
  free(more);
  return st;
}
