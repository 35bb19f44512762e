/* mapper/map_search.c: the search over mapping decisions.
 *
 * The space: a spatial binding (array: a reduction loop on rows and an output
 * loop on columns; SIMD: an output loop on lanes), each with a divisor
 * factor that fits the units; per loop, an ordered split of what remains
 * into one divisor-based factor per level; per level, a loop order; double
 * buffering on or off; on an NPU's cores, their loops outermost at level 0
 * or below its output loops (map_level_sloops). Orders only matter through
 * where each operand's tile changes, so orders with the same per-operand
 * reuse signature are one candidate (exact, not a heuristic).
 *
 * Enumeration is a branch and bound. Tilings are chosen level by level from
 * the innermost storage level outwards (it fixes the compute passes and the
 * innermost transfers), loop by loop within a level, and cut as soon as a
 * partial tile exceeds a capacity (footprints only grow); level 0 takes what
 * remains. After each level, and after each level's order, map_bound_cuts
 * bounds the cost of every completion from below (proof in map_bound.c); a
 * subtree whose bound exceeds the worst cost the kept list would still
 * accept is skipped, which can never drop a schedule the list would keep.
 *
 * Exhaustive mode searches every remaining candidate and is the optimum
 * under the cost model (the only other cut, moving a factor that no deeper
 * operand depends on to the deeper level, never raises the cost; the
 * brute-force comparison in tests/mapper/test_search.c checks both). It
 * first runs the pruned mode, whose kept costs seed the bound. The default
 * pruned mode keeps (1) the spatial bindings that use the most units (a
 * beam) and (2) the loop orders that make one operand after another
 * stationary; it searches every tiling under the same bound. A budget
 * bounds cost-model evaluations in both. Ties keep the candidate enumerated
 * first, and enumeration order is canonical, so results are deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "common/loc.h"

typedef struct search {
  uint64_t elem_bytes[MAP_MAX_OPERANDS][MAP_MAX_LEVELS]; /* x2 when double-buffered */
  const map_target *t;
  const map_schedule *proto;
  const map_problem *p;
  const cov_map_options *opt;
  bool exhaustive;
  int L;
  map_choice ch;
  int64_t rem[MAP_MAX_LOOPS];
  map_schedule best[MAP_MAX_ALTS + 1];
  int n_best;
  int64_t evals, candidates;
  bool stop;
  map_schedule scratch;
  bool free_below[MAP_MAX_LEVELS][MAP_MAX_LOOPS];
  map_bound B;
  double seed;       /* exhaustive mode: an upper bound of its worst kept cost */
  struct orders *ords; /* per level, for the tiling being ordered */
  bool oom;
  /* incremental footprints: box extent per level, operand and dimension for
   * the loops assigned so far (the others at their minimum tile) */
  int64_t ext[MAP_MAX_LEVELS][MAP_MAX_OPERANDS][COV_MAX_RANK];
  int n_lterms[MAP_MAX_LOOPS];
  struct { int o, d; int64_t coef; } lterms[MAP_MAX_LOOPS][MAP_MAX_OPERANDS * COV_MAX_RANK];
} search;

static int64_t min_tile(const search *S, int lv, int l) {
  return S->ch.sp[l] * (lv <= 1 ? S->ch.wave[l] : 1);
}

static int64_t tile_at(const search *S, int lv, int l) {
  int64_t t = min_tile(S, lv, l);
  for (int k = lv; k < S->L; k++) t *= S->ch.fac[k][l];
  return t;
}

/* Adds a change `delta` of loop l's tile at level lv to the extents. */
static void ext_add(search *S, int lv, int l, int64_t delta) {
  for (int k = 0; k < S->n_lterms[l]; k++)
    S->ext[lv][S->lterms[l][k].o][S->lterms[l][k].d] += S->lterms[l][k].coef * delta;
}

static void ext_reset(search *S) {
  const map_problem *p = S->p;
  for (int lv = 1; lv < S->L; lv++)
    for (int o = 0; o < p->n_operands; o++)
      for (int d = 0; d < p->operands[o].rank; d++) {
        int64_t e = 1;
        for (int l = 0; l < p->n_loops; l++) {
          int64_t c = p->operands[o].acc.coef[d][l];
          e += (c < 0 ? -c : c) * (min_tile(S, lv, l) - 1);
        }
        S->ext[lv][o][d] = e;
      }
}

/* Whether the current extents fit at level `only` (all levels when < 0). */
static bool fits_ext(const search *S, int only) {
  const map_problem *p = S->p;
  for (int lv = only < 0 ? 1 : only; lv < (only < 0 ? S->L : only + 1); lv++) {
    uint64_t used[MAP_MAX_OPERANDS];
    int nodes[MAP_MAX_OPERANDS], n_nodes = 0;
    for (int o = 0; o < p->n_operands; o++) {
      int node = S->t->path[o][lv];
      if (node < 0) continue;
      uint64_t e = 1;
      for (int d = 0; d < p->operands[o].rank; d++) e *= (uint64_t)S->ext[lv][o][d];
      uint64_t b = e * S->elem_bytes[o][lv];
      int j = 0;
      while (j < n_nodes && nodes[j] != node) j++;
      if (j == n_nodes) nodes[n_nodes] = node, used[n_nodes++] = 0;
      used[j] += b;
      if (!map_fits(S->t->acg, node, used[j])) return false;
    }
    /* the epilogue's temporaries grow with the level-1 output tile; they
     * share their node with whatever level-1 places it holds */
    if (lv == 1 && S->t->epi_node >= 0 && S->proto->n_vops) {
      int64_t tl[MAP_MAX_LOOPS];
      for (int l = 0; l < p->n_loops; l++) tl[l] = tile_at(S, 1, l);
      uint64_t e = map_epi_bytes(S->t, S->proto, tl);
      int j = 0;
      while (j < n_nodes && nodes[j] != S->t->epi_node) j++;
      if (!map_fits(S->t->acg, S->t->epi_node, (j < n_nodes ? used[j] : 0) + e)) return false;
    }
  }
  return true;
}

static void consider(search *S, const map_schedule *s) {
  /* keep the best MAP_MAX_ALTS+1 distinct costs, first enumerated wins ties */
  int pos = S->n_best;
  for (int i = 0; i < S->n_best; i++) {
    if (s->cost.cycles == S->best[i].cost.cycles) return; /* same cost: keep the earlier */
    if (s->cost.cycles < S->best[i].cost.cycles) {
      pos = i;
      break;
    }
  }
  if (pos > MAP_MAX_ALTS) return;
  int n = S->n_best < MAP_MAX_ALTS + 1 ? S->n_best + 1 : MAP_MAX_ALTS + 1;
  for (int i = n - 1; i > pos; i--) S->best[i] = S->best[i - 1];
  S->best[pos] = *s;
  S->n_best = n;
}

static void evaluate(search *S) {
  if (S->opt && S->opt->budget > 0 && S->evals >= S->opt->budget) {
    S->stop = true;
    return;
  }
  S->evals++;
  if (map_build(S->t, S->proto, &S->ch, &S->scratch, NULL) == 0) consider(S, &S->scratch);
}

/* ---- loop orders ---- */

typedef struct sig {
  int64_t v[MAP_MAX_OPERANDS];
} sig;

/* Reuse signature of an order at one level: per operand, the product of the
 * trips of the loops inside its innermost dependent loop (-1: none depends). */
static sig order_sig(search *S, int lv, const int *ord, int n) {
  sig g;
  memset(&g, 0, sizeof g);
  int tmp[MAP_MAX_LOOPS], m = 0;
  /* level 0: reductions innermost (as map_build does) */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      if (lv == 0 && (pass == 0) == S->p->reduction[ord[i]]) continue;
      if (lv != 0 && pass == 1) continue;
      tmp[m++] = ord[i];
    }
  for (int o = 0; o < S->p->n_operands; o++) {
    /* only operands with a place below this level have transfers that
     * this level's loops can position */
    bool below = false;
    for (int k = lv + 1; k < S->L; k++) below |= S->t->path[o][k] >= 0;
    if (!below) continue;
    int64_t prod = 1;
    int i;
    for (i = m - 1; i >= 0; i--) {
      if (map_operand_depends(&S->p->operands[o], tmp[i])) break;
      prod *= S->ch.fac[lv][tmp[i]];
    }
    g.v[o] = i < 0 ? -1 : prod;
  }
  return g;
}

/* Up to 7 active loops per level the exhaustive mode tries every permutation
 * (more: the stationarity orders only); room for all 7! distinct signatures
 * keeps it from dropping any. */
#define MAX_ORDERS 5040
typedef struct orders {
  int n;
  int ord[MAX_ORDERS][MAP_MAX_LOOPS];
  int len;
  sig sigs[MAX_ORDERS];
} orders;

static void add_order(search *S, int lv, orders *os, const int *ord, int n) {
  sig g = order_sig(S, lv, ord, n);
  /* Orders of one reuse signature move the same tiles as often. At the
   * innermost level the order also lays out the on-chip tiles, which decides
   * how many DRAM runs a load's dimensions merge into (map_dram_cost_bytes),
   * so the exhaustive mode keeps every permutation there. */
  if (!(S->exhaustive && lv == S->L - 1))
    for (int i = 0; i < os->n; i++)
      if (!memcmp(&os->sigs[i], &g, sizeof g)) return;
  if (os->n >= MAX_ORDERS) return; /* unreachable: MAX_ORDERS is 7! */
  memcpy(os->ord[os->n], ord, sizeof(int) * (size_t)n);
  os->sigs[os->n++] = g;
}

int map_divisors(int64_t n, int64_t *out, int max) {
  int k = 0;
  for (int64_t d = 1; d <= n && k < max; d++)
    if (n % d == 0) out[k++] = d;
  return k;
}

static bool next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i]; a[i] = a[j]; a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) t = a[l], a[l] = a[r], a[r] = t;
  return true;
}

static void level_orders(search *S, int lv, orders *os) {
  int act[MAP_MAX_LOOPS], n = 0;
  for (int l = 0; l < S->p->n_loops; l++)
    if (S->ch.fac[lv][l] > 1) act[n++] = l;
  os->n = 0;
  os->len = n;
  if (n <= 1 || (S->exhaustive && n <= 7)) {
    do add_order(S, lv, os, act, n);
    while (n > 1 && next_perm(act, n));
    return;
  }
  /* stationarity orders: innermost the loops independent of operand o1, then
   * of o2, ... (every permutation of the operands) */
  int ops[MAP_MAX_OPERANDS], no = 0;
  for (int o = 0; o < S->p->n_operands; o++) {
    bool below = false;
    for (int k = lv + 1; k < S->L; k++) below |= S->t->path[o][k] >= 0;
    if (below && S->p->operands[o].role != MAP_ROLE_VECTOR) ops[no++] = o;
  }
  if (no == 0) {
    add_order(S, lv, os, act, n);
    return;
  }
  do {
    int ord[MAP_MAX_LOOPS], m = 0;
    bool placed[MAP_MAX_LOOPS] = {0};
    int inner[MAP_MAX_LOOPS], ni = 0;
    for (int k = 0; k < no; k++)
      for (int i = n - 1; i >= 0; i--) {
        int l = act[i];
        if (!placed[l] && !map_operand_depends(&S->p->operands[ops[k]], l)) placed[l] = true, inner[ni++] = l;
      }
    for (int i = 0; i < n; i++)
      if (!placed[act[i]]) ord[m++] = act[i];
    for (int i = ni - 1; i >= 0; i--) ord[m++] = inner[i];
    add_order(S, lv, os, ord, n);
  } while (next_perm(ops, no));
}

/* Whether the bound rules out every completion of the current partial
 * choice (factors of levels >= F, orders of levels < K): it exceeds the
 * worst cost the kept list would still accept (once full), or the
 * exhaustive mode's seed (the pruned search's worst kept cost, itself a
 * schedule of the space, so the exhaustive list can only do better). Equal
 * costs are not cut: a tie enumerated earlier must still win. The margin
 * absorbs the rounding of the bound's different evaluation order. */
static bool pruned_by(const search *S, int F, int K) {
  double b = S->seed;
  if (S->n_best == MAP_MAX_ALTS + 1 && S->best[MAP_MAX_ALTS].cost.cycles < b)
    b = S->best[MAP_MAX_ALTS].cost.cycles;
  return b < HUGE_VAL && map_bound_cuts(&S->B, &S->ch, F, K, b * (1 + 1e-9));
}

static void orders_rec(search *S, int lv, orders *all) {
  if (S->stop) return;
  if (lv == S->L) {
    evaluate(S);
    return;
  }
  if (lv >= MAP_MAX_LEVELS) return; /* never (L <= MAP_MAX_LEVELS); bounds the recursion for gcc -O3 */
  for (int i = 0; i < all[lv].n && !S->stop; i++) {
    int k = 0;
    for (int j = 0; j < all[lv].len; j++) S->ch.order[lv][k++] = all[lv].ord[i][j];
    for (int l = 0; l < S->p->n_loops; l++)
      if (S->ch.fac[lv][l] <= 1) S->ch.order[lv][k++] = l;
    /* the orders of levels <= lv fix the counts of the transfers into
     * levels <= lv + 1 (the last level's order moves no transfer) */
    if (lv + 1 < S->L && all[lv].n > 1 && pruned_by(S, 0, lv + 1))
      continue;
    orders_rec(S, lv + 1, all);
  }
}

/* Whether level 0 has an output loop of several trips: without one, both
 * placements of the workgroup loops (ch.wg_outer) build one schedule. */
static bool outputs_at_0(const search *S) {
  for (int l = 0; l < S->p->n_loops; l++)
    if (!S->p->reduction[l] && S->ch.fac[0][l] > 1) return true;
  return false;
}

/* The whole tiling is fixed: the epilogue's constraints on the level-1
 * output tile (map_build rejects the rest, so checking here only saves
 * work), one placement of the workgroup loops where both are one, the
 * bound, then the loop orders. */
static void tiling_done(search *S) {
  const map_schedule *pr = S->proto;
  if (S->ch.wg_outer && !outputs_at_0(S)) return;
  if (S->L > 1)
    for (int v = 0; v < pr->n_vops; v++) {
      const map_vop *vo = &pr->vops[v];
      if (vo->kind == MAP_VOP_ROW_REDUCE && tile_at(S, 1, vo->loop) != S->p->extent[vo->loop]) return;
      if (vo->kind == MAP_VOP_POOL)
        for (int k = 0; k < 2; k++)
          if (tile_at(S, 1, vo->pool_loop[k]) % vo->window[k]) return;
    }
  S->candidates++;
  if (pruned_by(S, 0, 0)) return;
  orders *all = S->ords;
  for (int lv = 0; lv < S->L; lv++) level_orders(S, lv, &all[lv]);
  orders_rec(S, 0, all);
}

static void tile_rec(search *S, int lv, int l);

/* Level lv is tiled: bound what is known, then tile the level above; after
 * level 1, level 0 takes what remains of every loop. */
static void level_done(search *S, int lv) {
  if (lv >= 2) {
    if (pruned_by(S, lv, 0)) return;
    tile_rec(S, lv - 1, 0);
    return;
  }
  for (int l = 0; l < S->p->n_loops; l++) {
    int64_t left = S->rem[l];
    for (int k = 1; k < S->L; k++) left /= S->ch.fac[k][l];
    S->ch.fac[0][l] = left;
  }
  tiling_done(S);
  for (int l = 0; l < S->p->n_loops; l++) S->ch.fac[0][l] = 1;
}

/* Chooses loop l's factor at level lv, the levels below lv being fixed (the
 * innermost level is tiled first: it fixes the compute passes and the
 * innermost transfers, which bound the rest). Largest factors first: big
 * tiles are usually cheap, so the bound gets a good incumbent early and a
 * small --budget still ends with a good schedule. A factor whose partial
 * tiles do not fit is skipped (a smaller one may fit). */
static void tile_rec(search *S, int lv, int l) {
  if (S->stop) return;
  if (l == S->p->n_loops) {
    level_done(S, lv);
    return;
  }
  int64_t left = S->rem[l];
  for (int k = lv + 1; k < S->L; k++) left /= S->ch.fac[k][l];
  int64_t dv[256];
  int nd = map_divisors(left, dv, 256);
  /* when nothing stored at the levels below lv depends on loop l, its factor
   * belongs below: fewer passes, unchanged tiles, no transfer count grows.
   * This dominance is exact under the cost model, so the exhaustive mode
   * uses it too (it still finds the optimum) */
  if (lv + 1 < S->L && S->free_below[lv + 1][l]) nd = 1;
  int64_t base[MAP_MAX_LEVELS];
  for (int k = 1; k <= lv; k++) base[k] = tile_at(S, k, l);
  for (int i = nd - 1; i >= 0 && !S->stop; i--) {
    S->ch.fac[lv][l] = dv[i];
    int64_t delta[MAP_MAX_LEVELS];
    for (int k = 1; k <= lv; k++) {
      delta[k] = base[k] * (dv[i] - 1);
      ext_add(S, k, l, delta[k]);
    }
    bool fits = true;
    for (int k = 1; k <= lv && fits; k++) fits = fits_ext(S, k);
    if (fits) tile_rec(S, lv, l + 1);
    for (int k = 1; k <= lv; k++) ext_add(S, k, l, -delta[k]);
  }
  S->ch.fac[lv][l] = 1;
}

/* Spreading output loops over replicated instances (GPU workgroups, then
 * waves): the best single loops and pairs by instances used, a few kept. */
#define MAP_MAX_SPREADS (MAP_MAX_LOOPS * MAP_MAX_LOOPS * 4 + 1)
typedef struct spread {
  int64_t f[MAP_MAX_LOOPS];
  int64_t used;
} spread;

static int spreads(const map_problem *p, const int64_t *rem, const int64_t *granule, int64_t max,
                   spread *out, int keep, bool diverse) {
  int n = 0;
  spread cand[MAP_MAX_SPREADS];
  memset(cand, 0, sizeof cand);
  for (int l = 0; l < MAP_MAX_LOOPS; l++) cand[0].f[l] = 1;
  cand[0].used = 1;
  n = 1;
  /* on an NPU's cores also the best spread of each pair of loops over at
   * most half, a quarter, ... of them (diverse, below) */
  for (int64_t cap = max; cap > 1; cap = diverse ? cap / 2 : 1)
    for (int a = 0; a < p->n_loops; a++)
      for (int b = a; b < p->n_loops; b++) {
        if (p->reduction[a] || p->reduction[b]) continue;
        int64_t best = 1, ba = 1, bb = 1;
        for (int64_t da = 1; da <= rem[a] && da <= cap; da++) {
          if (rem[a] % da || (rem[a] / da) % granule[a]) continue;
          if (a == b) {
            if (da > best) best = da, ba = da, bb = 1;
            continue;
          }
          for (int64_t db = 1; db <= rem[b] && da * db <= cap; db++)
            if (rem[b] % db == 0 && (rem[b] / db) % granule[b] == 0 && da * db > best)
              best = da * db, ba = da, bb = db;
        }
        bool dup = false; /* the same spread at a larger cap, or of another pair */
        for (int i = 1; diverse && i < n && !dup; i++)
          dup = cand[i].used == best && cand[i].f[a] == ba && (a == b || cand[i].f[b] == bb);
        if (best <= 1 || dup || n >= MAP_MAX_SPREADS) continue;
        spread *c = &cand[n++];
        for (int l = 0; l < MAP_MAX_LOOPS; l++) c->f[l] = 1;
        c->f[a] *= ba;
        if (b != a) c->f[b] *= bb;
        c->used = best;
      }
  /* most instances first, stable */
  for (int i = 1; i < n; i++) {
    spread x = cand[i];
    int j = i - 1;
    while (j >= 0 && cand[j].used < x.used) cand[j + 1] = cand[j], j--;
    cand[j + 1] = x;
  }
  /* An NPU's cores share DRAM: a layer whose slices each reload what the
   * others load (a 1x1 convolution's weights over pixel slices) may run
   * faster on fewer of them, so the best spread of each count, halving
   * from the most, comes first (4, 2, 1 cores), then the rest */
  if (diverse && n > 1) {
    spread pick[MAP_MAX_SPREADS];
    bool taken[MAP_MAX_SPREADS] = {0};
    int k = 0;
    for (int64_t want = cand[0].used; k < keep; want = want / 2 > 1 ? want / 2 : 1) {
      int best = -1;
      for (int i = 0; i < n && best < 0; i++)
        if (!taken[i] && cand[i].used <= want) best = i;
      if (best >= 0) pick[k++] = cand[best], taken[best] = true;
      if (want == 1) break;
    }
    for (int i = 0; i < n && k < keep; i++)
      if (!taken[i]) pick[k++] = cand[i];
    memcpy(cand, pick, sizeof(spread) * (size_t)k);
    n = k;
  }
  if (n > keep) n = keep;
  memcpy(out, cand, sizeof(spread) * (size_t)n);
  return n;
}

typedef struct spatial {
  int loop[2];
  int64_t f[2];
  map_axis ax[2];
  int64_t units;
  bool largest; /* no larger divisor fits: the only kind the pruned mode binds */
} spatial;

/* Every spatial binding: an array takes a reduction loop on rows and an
 * output loop only one input reads on columns (or none), SIMD an output loop on lanes, each with a divisor
 * factor that fits the units; sorted by units used, most first (stable, so
 * ties keep the canonical order). Returns the count, -1 when out of memory. */
static int spatial_bindings(const search *S, spatial **out) {
  const map_problem *p = S->p;
  const map_target *t = S->t;
  const acg_compute *cn = &t->acg->compute[t->node - t->acg->n_storage];
  bool array = cn->kind != ACG_SIMD || t->tiles; /* a mac as tiles: k x n per instruction */
  int max_sp = 256, n_sp = 0;
  spatial *sp = calloc((size_t)max_sp, sizeof *sp);
  if (!sp) return -1;
  int64_t dv0[256], dv1[256];
  for (int a = 0; a < p->n_loops; a++) {
    if (array ? !p->reduction[a] : p->reduction[a]) continue;
    int n0 = map_divisors(p->extent[a], dv0, 256);
    for (int b = -1; b < (array ? p->n_loops : 0); b++) {
      if (b >= 0 && (p->reduction[b] || b == a)) continue;
      /* a columns loop both inputs read is no GEMM column (map_gemm.c
       * drops it: one column computes): not a binding that uses units */
      if (b >= 0 && map_operand_depends(&p->operands[0], b) && map_operand_depends(&p->operands[1], b))
        continue;
      int n1 = b >= 0 ? map_divisors(p->extent[b], dv1, 256) : 1;
      if (b < 0) dv1[0] = 1;
      for (int i = 0; i < n0; i++)
        for (int j = 0; j < n1; j++) {
          if ((uint64_t)dv0[i] > t->dims[0] || (uint64_t)dv1[j] > t->dims[1]) continue;
          if (n_sp >= max_sp) { /* the exhaustive mode needs every one */
            spatial *grown = realloc(sp, sizeof *sp * (size_t)max_sp * 2);
            if (!grown) {
              free(sp);
              return -1;
            }
            sp = grown;
            max_sp *= 2;
          }
          spatial *c = &sp[n_sp++];
          c->loop[0] = a;
          c->loop[1] = b;
          c->f[0] = dv0[i];
          c->f[1] = dv1[j];
          c->ax[0] = array ? MAP_AX_ROWS : MAP_AX_LANES;
          c->ax[1] = MAP_AX_COLS;
          c->units = dv0[i] * dv1[j];
          c->largest = (i + 1 == n0 || (uint64_t)dv0[i + 1] > t->dims[0]) &&
                       (j + 1 == n1 || (uint64_t)dv1[j + 1] > t->dims[1]);
        }
    }
  }
  if (!array && n_sp == 0) /* nothing to put on lanes: run it on one lane */
    sp[n_sp++] = (spatial){{-1, -1}, {1, 1}, {MAP_AX_LANES, MAP_AX_COLS}, 1, true};
  for (int i = 1; i < n_sp; i++) {
    spatial x = sp[i];
    int j = i - 1;
    while (j >= 0 && sp[j].units < x.units) sp[j + 1] = sp[j], j--;
    sp[j + 1] = x;
  }
  *out = sp;
  return n_sp;
}

/* The tilings and orders of one spatial binding, workgroup and wave spread,
 * workgroup placement and double buffering. */
static void search_spread(search *S, const spatial *sp, const spread *wg, const spread *wave,
                          const int64_t *rem1, bool wg_outer, bool db) {
  const map_problem *p = S->p;
  const map_target *t = S->t;
  memset(&S->ch, 0, sizeof S->ch);
  for (int l = 0; l < p->n_loops; l++) {
    S->ch.sp[l] = 1;
    S->ch.wg[l] = wg->f[l];
    S->ch.wave[l] = wave->f[l];
    S->rem[l] = rem1[l] / wave->f[l];
  }
  for (int k = 0; k < 2; k++)
    if (sp->loop[k] >= 0) {
      S->ch.sp[sp->loop[k]] = sp->f[k];
      S->ch.sp_axis[sp->loop[k]] = sp->ax[k];
    }
  S->ch.wg_outer = wg_outer;
  S->ch.dbuf = db;
  for (int o = 0; o < p->n_operands; o++)
    for (int lv = 1; lv < S->L; lv++) {
      int node = t->path[o][lv];
      if (node < 0) continue;
      S->elem_bytes[o][lv] = cov_dtype_size(map_place_dtype(t, p, o, lv)) *
                             (db && t->acg->storage[node].double_buffer ? 2 : 1);
    }
  for (int lv = 0; lv < MAP_MAX_LEVELS; lv++)
    for (int l = 0; l < MAP_MAX_LOOPS; l++) S->ch.fac[lv][l] = 1;
  map_bound_config(&S->B, &S->ch);
  /* nothing tiled yet: compute at full rate and compulsory traffic */
  if (pruned_by(S, S->L, 0)) return;
  ext_reset(S);
  tile_rec(S, S->L - 1, 0);
}

/* One pass over the space (S->exhaustive says which): spatial bindings x
 * workgroup and wave spreads x workgroup placements x double buffering x
 * tilings x orders. */
static void search_space(search *S, const spatial *all_sp, int n_all) {
  const map_problem *p = S->p;
  const map_target *t = S->t;
  const map_schedule *proto = S->proto;
  spatial *sp = malloc(sizeof *sp * (size_t)(n_all ? n_all : 1));
  if (!sp) {
    S->oom = true;
    return;
  }
  int n_sp = 0;
  for (int i = 0; i < n_all; i++)
    if (S->exhaustive || all_sp[i].largest) sp[n_sp++] = all_sp[i];
  bool cores = t->cores; /* workgroups are an NPU's cores (map_cost.c) */
  int beam = S->opt && S->opt->beam > 0 ? S->opt->beam : 4;
  if (!S->exhaustive) {
    /* the beam: at most `beam` bindings, none using under half the units
     * of the best (idle units cost more than any reuse can win back) */
    int k = 0;
    while (k < n_sp && k < beam && 2 * sp[k].units >= sp[0].units) k++;
    n_sp = k;
  }
  spread wgs[6], waves[2];
  for (int c = 0; c < n_sp && !S->stop; c++) {
    int64_t rem0[MAP_MAX_LOOPS];
    for (int l = 0; l < MAP_MAX_LOOPS; l++) rem0[l] = l < p->n_loops ? p->extent[l] : 1;
    for (int k = 0; k < 2; k++)
      if (sp[c].loop[k] >= 0) rem0[sp[c].loop[k]] /= sp[c].f[k];
    /* the epilogue needs whole pool windows and whole softmax rows in each
     * on-chip output tile: instances may not split them */
    int64_t gran[MAP_MAX_LOOPS];
    for (int l = 0; l < p->n_loops; l++) gran[l] = 1;
    for (int v = 0; v < proto->n_vops; v++) {
      const map_vop *vo = &proto->vops[v];
      if (vo->kind == MAP_VOP_ROW_REDUCE) gran[vo->loop] = rem0[vo->loop];
      if (vo->kind == MAP_VOP_POOL)
        for (int k = 0; k < 2; k++) gran[vo->pool_loop[k]] = vo->window[k];
    }
    int n_wg = spreads(p, rem0, gran, t->wg_max, wgs, cores ? 6 : 3, cores);
    for (int w = 0; w < n_wg && !S->stop; w++) {
      int64_t rem1[MAP_MAX_LOOPS];
      for (int l = 0; l < p->n_loops; l++) rem1[l] = rem0[l] / wgs[w].f[l];
      int n_wv = spreads(p, rem1, gran, t->wave_max, waves, 2, false);
      /* an NPU's cores: their loops outermost first (it never moves more
       * data, so ties keep it), then below the output loops
       * (map_level_sloops) */
      int first = cores && wgs[w].used > 1 ? 1 : 0;
      for (int v = 0; v < n_wv && !S->stop; v++)
        for (int outer = first; outer >= 0 && !S->stop; outer--)
          for (int db = 1; db >= 0 && !S->stop; db--)
            search_spread(S, &sp[c], &wgs[w], &waves[v], rem1, outer, db);
    }
  }
  free(sp);
}

/* Why nothing fitted: the epilogue's temporaries alone, for the smallest
 * output tile the epilogue accepts (whole rows, whole pool windows), when
 * they exceed their storage; else the general message. */
static cov_status no_fit(const search *S) {
  const map_target *t = S->t;
  const map_problem *p = S->p;
  if (t->epi_node >= 0 && S->L > 1) {
    int64_t tl[MAP_MAX_LOOPS];
    for (int l = 0; l < p->n_loops; l++) tl[l] = 1;
    for (int v = 0; v < S->proto->n_vops; v++) {
      const map_vop *vo = &S->proto->vops[v];
      if (vo->kind == MAP_VOP_ROW_REDUCE) tl[vo->loop] = p->extent[vo->loop];
      if (vo->kind == MAP_VOP_POOL)
        for (int k = 0; k < 2; k++) tl[vo->pool_loop[k]] = vo->window[k];
    }
    uint64_t need = map_epi_bytes(t, S->proto, tl);
    const acg_storage *st = &t->acg->storage[t->epi_node];
    if (!map_fits(t->acg, t->epi_node, need))
      return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer),
                       "%s on %s: the epilogue's temporaries need at least %llu bytes of %s even "
                       "for the smallest output tile, and %s holds %llu",
                       p->layer, t->acg->name, (unsigned long long)need, st->name, st->name,
                       (unsigned long long)st->capacity_bytes);
  }
  return cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer),
                   "%s on %s: no schedule fits the storage capacities (%lld candidates tried)",
                   p->layer, t->acg->name, (long long)S->candidates);
}

cov_status map_search(const map_target *t, const map_schedule *proto, const cov_map_options *opt,
                      cov_schedule *out) {
  search *S = calloc(1, sizeof *S);
  if (!S) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  S->t = t;
  S->proto = proto;
  S->p = &proto->prob;
  S->opt = opt;
  S->L = t->n_levels;
  S->seed = HUGE_VAL;
  const map_problem *p = S->p;
  for (int o = 0; o < p->n_operands; o++)
    for (int d = 0; d < p->operands[o].rank; d++)
      for (int l = 0; l < p->n_loops; l++) {
        int64_t c = p->operands[o].acc.coef[d][l];
        if (!c) continue;
        int k = S->n_lterms[l]++;
        S->lterms[l][k].o = o;
        S->lterms[l][k].d = d;
        S->lterms[l][k].coef = c < 0 ? -c : c;
      }
  for (int lv = 0; lv < S->L; lv++)
    for (int l = 0; l < p->n_loops; l++) {
      bool dep = false;
      for (int o = 0; o < p->n_operands; o++)
        for (int k = lv; k < S->L; k++)
          if (t->path[o][k] >= 0 && map_operand_depends(&p->operands[o], l)) dep = true;
      S->free_below[lv][l] = !dep;
    }
  map_bound_init(&S->B, t, proto);
  spatial *sp = NULL;
  int n_sp = spatial_bindings(S, &sp);
  S->ords = calloc(MAP_MAX_LEVELS, sizeof *S->ords);
  if (n_sp < 0 || !S->ords) {
    free(sp);
    free(S->ords);
    free(S);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  /* the exhaustive mode first runs the pruned one: its kept costs bound the
   * exhaustive list from above (the pruned space is a subset), so the
   * branch and bound starts with a good incumbent; the list itself is then
   * rebuilt in canonical order */
  S->exhaustive = false;
  search_space(S, sp, n_sp);
  if (opt && opt->exhaustive && !S->stop) {
    if (S->n_best == MAP_MAX_ALTS + 1) S->seed = S->best[MAP_MAX_ALTS].cost.cycles;
    S->n_best = 0;
    S->candidates = 0;
    S->exhaustive = true;
    search_space(S, sp, n_sp);
  }
  free(sp);
  free(S->ords);
  cov_status st = NULL;
  if (S->oom) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  else if (S->n_best == 0) {
    st = S->stop ? cov_error(COV_MAPPING_FAILED, COV_AT(NULL, p->layer),
                             "%s on %s: the budget of %lld evaluations ran out before any schedule "
                             "fitted the storage capacities; raise --budget",
                             p->layer, t->acg->name, (long long)opt->budget)
                 : no_fit(S);
  } else {
    out->s = S->best[0];
    out->n_alts = S->n_best - 1;
    for (int i = 1; i < S->n_best; i++) out->alts[i - 1] = S->best[i];
    out->evaluations = S->evals;
    out->candidates = S->candidates;
  }
  free(S);
  return st;
}
