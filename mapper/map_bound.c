/* mapper/map_bound.c: admissible lower bounds of the cost model (map_cost.c)
 * over every completion of a partial mapping decision, for the search's
 * branch and bound (map_search.c).
 *
 * A partial decision fixes the spatial binding, instances and double
 * buffering, the factors of levels >= F (the search tiles the innermost level
 * first; level 0 takes what remains, so F = 0 means the whole tiling) and
 * the loop orders of levels < K (chosen once the tiling is whole).
 *
 * Why the bound never exceeds the cost of any completion (proof):
 *   map_cost gives  cycles = max(busy, overlapped) + serial + fill  where
 *   busy >= max(passes * (latency + inner * issue), epilogue) (the two
 *   overlap where the output tile is double-buffered), overlapped = the
 *   largest per-edge sum of double-buffered transfer time or DRAM bytes over
 *   DRAM bandwidth, serial = the sum of the other transfers' times, fill =
 *   the longest single double-buffered transfer (map_cost charges the
 *   longest load's and, as the drain, the longest store's: at least that
 *   much; its two-buffer latency terms only raise overlapped). Each transfer adds
 *   bytes * count / (bw * engines), plus latency * count / inst when it is
 *   not double-buffered (a double-buffered one's latencies are pipelined);
 *   engines is 1, or on an NPU's cores the instance trips at or before the
 *   transfer (map_edge_copies), at most those of all levels above it, by
 *   which the bound divides (without that, a split over cores whose
 *   per-core edges carry the layer was cut as costing the time one engine
 *   would need). Every one of these terms is
 *   nondecreasing in each transfer's bytes * count, count / inst, and in
 *   the set of transfers. So replacing each term by a lower bound, and
 *   leaving out transfers that may not exist (partial-sum reloads), gives a
 *   lower bound:
 *   - busy: passes = T / prod(level L-1 factors), with T the temporal trips
 *     (extents over spatial, workgroup and wave factors): exact once level
 *     L-1 is tiled, else passes >= 1. Where the main statement runs as GEMMs
 *     on an output-stationary array map_cost charges their cycles instead
 *     (on a weight-stationary one at least the passes' issues and one
     latency): each GEMM
 *     takes at least its m * k * n / throughput (ISA.md), and each
 *     instance's (workgroups x waves, which run side by side) cover its
 *     share of the MACs, so there busy >= max(latency + MACs / (throughput
 *     x instances), epilogue).
 *   - a transfer at level lv >= max(F, 1): its tile and bytes are exact (they
 *     depend only on the factors of levels >= lv). Its count is the product
 *     of the trips of every scheduled loop of a level < lv up to and
 *     including its innermost "pinning" loop (one its operand depends on, or
 *     a spatial instance loop; map_build.c). Let j be the deepest level < lv
 *     with a pinning loop. Every loop of the levels < j is outside it, and
 *     every pinning loop of level j is at or before it, so
 *         count >= prod(trips of levels < j) * prod(pinning trips at j),
 *     with equality once the order of level j is known (then the prefix of
 *     level j up to its last pinning loop is used). If no level in [F, lv)
 *     pins it, the pinning loops lie in the levels < F, whose trips per loop
 *     multiply to extent / tile_F: count >= the product of those of the
 *     loops it depends on, times the instance trips. inst (the instance
 *     trips at or before the pinning loop) is at most the product of all
 *     instance trips of the levels < lv, so latency * count / inst is
 *     bounded with that product.
 *   - a transfer at a level lv < F (tile not yet known): bytes * count >= the
 *     operand's compulsory volume (below) and count / inst >= 1 / (all
 *     instance trips).
 *   - once every factor is known (F == 0), the first level K whose order is
 *     still open has some innermost scheduled loop z (at level 0 a reduction
 *     when one has trips there, else a workgroup loop, else an output loop;
 *     with the workgroup loops outermost (an NPU's cores, ch->wg_outer) an
 *     output loop before them; at level 1 a temporal loop, else a wave loop:
 *     map_build.c's layout).
 *     Every operand z pins has its innermost pinning loop of level K at the
 *     end of the level, so its count there is the product of all of level
 *     K's trips (times those of the levels above). Each completion has one
 *     such z, so it costs at least the bound under its z, hence at least the
 *     least of those bounds; map_bound_cuts cuts only when every one of them
 *     exceeds the limit. Without that assumption the bound is no larger than
 *     under any z, which is why it is tried first.
 *   Compulsory volume: a tile t moved once per distinct tile of the loops it
 *   depends on moves box(t) * prod_{l dep} (extent_l / t_l) elements, with
 *   box(t) = prod_d (1 + sum_l |coef_dl| (t_l - 1)). Minimising each
 *   dimension's factor on its own (a loop's count factor is charged to the
 *   first dimension it indexes; elsewhere it only enlarges the box) over all
 *   divisor tiles gives at most the joint minimum, hence a lower bound. */
#include <math.h>
#include <string.h>

#include "mapper/map_internal.h"

/* The compulsory element volume of operand o (see the proof above). */
static double compulsory(const map_problem *p, int o) {
  const map_operand *op = &p->operands[o];
  bool charged[MAP_MAX_LOOPS] = {false};
  double vol = 1;
  for (int d = 0; d < op->acc.rank; d++) {
    int loops[MAP_MAX_LOOPS], n = 0;
    for (int l = 0; l < p->n_loops; l++)
      if (op->acc.coef[d][l]) loops[n++] = l;
    if (n == 0 || n > 2) continue; /* factor >= 1 */
    int64_t dv[2][256];
    int nd[2] = {1, 1};
    dv[1][0] = 1;
    for (int k = 0; k < n; k++) nd[k] = map_divisors(p->extent[loops[k]], dv[k], 256);
    double best = -1;
    for (int i = 0; i < nd[0]; i++)
      for (int j = 0; j < nd[1]; j++) {
        int64_t t[2] = {dv[0][i], n > 1 ? dv[1][j] : 1};
        double box = 1, cnt = 1;
        for (int k = 0; k < n; k++) {
          int64_t c = op->acc.coef[d][loops[k]];
          box += (double)(c < 0 ? -c : c) * (double)(t[k] - 1);
          if (!charged[loops[k]]) cnt *= (double)(p->extent[loops[k]] / t[k]);
        }
        if (best < 0 || box * cnt < best) best = box * cnt;
      }
    for (int k = 0; k < n; k++) charged[loops[k]] = true;
    vol *= best;
  }
  return vol;
}

void map_bound_init(map_bound *B, const map_target *t, const map_schedule *proto) {
  memset(B, 0, sizeof *B);
  B->t = t;
  B->proto = proto;
  B->L = t->n_levels;
  const map_problem *p = &proto->prob;
  const cov_acg *g = t->acg;
  B->issue = map_issue_cycles(g, t->node, t->cap);
  const acg_capability *cap = &g->compute[t->node - g->n_storage].caps[t->cap];
  B->latency = (double)cap->latency;
  /* the target's node, not proto->node: map_build sets that per schedule,
   * and the prototype's is still 0 here (reading it took no node's kind, so
   * neither floor applied and the generic passes bound, with a latency per
   * pass that chained output-stationary GEMMs never pay, cut schedules far
   * cheaper than the incumbent: resnet50_conv1's 16-row streams) */
  bool gemm = map_gemm_applies_on(g, t->node, t->cap, p);
  if (gemm && (map_output_stationary(g, t->node) || t->tiles))
    B->gemm_floor = (double)p->ops / (cap->throughput > 0 ? cap->throughput : 1);
  else if (gemm) {
    const acg_compute *cn = &g->compute[t->node - g->n_storage];
    B->ws_rows = (double)(cap->tile_rank > 0 ? cap->tile[0] : cn->dims[0]);
    if (B->ws_rows < 1) B->ws_rows = 1;
  }
  B->dram_bw = acg_dram_bandwidth(g);
  for (int o = 0; o < p->n_operands; o++) {
    for (int l = 0; l < p->n_loops; l++) B->dep[o][l] = map_operand_depends(&p->operands[o], l);
    double vol = compulsory(p, o);
    for (int lv = 1; lv < B->L; lv++) {
      map_bound_xfer *x = &B->x[o][lv];
      int here = t->path[o][lv], outer = t->path[o][lv - 1];
      x->present = here >= 0 && outer >= 0;
      if (!x->present) continue;
      x->edge = t->edge_in[o][lv];
      x->bw = map_edge_bw(g, x->edge, outer, here);
      x->lat = x->edge >= 0 ? g->edges[x->edge].latency_cycles : 0;
      x->dram = g->storage[here].kind == ACG_DRAM || g->storage[outer].kind == ACG_DRAM;
      x->db_allowed = g->storage[here].double_buffer;
      /* bytes per element moved: what map_xfer_bytes charges for one element
       * (pooling divides the output's level-1 bytes exactly: tiles hold
       * whole windows) */
      double pool = 1;
      if (p->operands[o].role == MAP_ROLE_OUTPUT && lv == 1)
        for (int v = 0; v < proto->n_vops; v++)
          if (proto->vops[v].kind == MAP_VOP_POOL)
            pool *= (double)(proto->vops[v].window[0] * proto->vops[v].window[1]);
      x->min_bytes = vol * (double)map_xfer_bytes(t, proto, o, lv, 1) / pool;
    }
  }
}

void map_bound_config(map_bound *B, const map_choice *ch) {
  const map_problem *p = &B->proto->prob;
  double T = 1, wg = 1, wave = 1;
  for (int l = 0; l < p->n_loops; l++) {
    T *= (double)(p->extent[l] / (ch->sp[l] * ch->wg[l] * ch->wave[l]));
    wg *= (double)ch->wg[l];
    wave *= (double)ch->wave[l];
  }
  B->trips = T;
  if (B->ws_rows > 0) {
    /* each output (per instance, per column group) streams through the
     * array once per k-fold of at most ws_rows reduction steps */
    double outs = 1, red = 1;
    for (int l = 0; l < p->n_loops; l++) {
      if (p->reduction[l]) red *= (double)(p->extent[l] / (ch->wg[l] * ch->wave[l]));
      else outs *= (double)(p->extent[l] / (ch->sp[l] * ch->wg[l] * ch->wave[l]));
    }
    B->ws_trips = outs * ceil(red / B->ws_rows);
  }
  B->epilogue = map_epilogue_cycles(B->proto, wg * wave);
  B->par = wg * wave;
  B->inst_below[0] = 1;
  for (int lv = 1; lv < B->L; lv++) {
    B->inst_below[lv] = wg * (lv >= 2 ? wave : 1);
    /* an NPU's cores move their copies each on its own engine, at most
     * one per instance above the level (map_cost.c map_edge_copies) */
    B->engines[lv] = B->t->cores ? B->inst_below[lv] : 1;
  }
}

/* Tile of loop l at level lv >= 1, as map_build counts it: the spatial
 * factor, waves (at level 1), and the factors of levels >= lv. */
static int64_t tile(const map_bound *B, const map_choice *ch, int lv, int l) {
  int64_t v = ch->sp[l] * (lv <= 1 ? ch->wave[l] : 1);
  for (int k = lv; k < B->L; k++) v *= ch->fac[k][l];
  return v;
}

#define Z_NONE (-1)    /* no assumption on level K's innermost loop */
#define Z_SPATIAL (-2) /* level K's innermost loop is an instance loop */

/* Lower bound of the count of operand o's transfer at level lv >= max(F,1),
 * given that the innermost scheduled loop of level K (when its order is not
 * known yet) is z. */
static double count_lb(const map_bound *B, const map_choice *ch, int o, int lv, int F, int K, int z) {
  const map_problem *p = &B->proto->prob;
  for (int j = lv - 1; j >= F; j--) {
    double pin = 1, all = 1;
    for (int l = 0; l < p->n_loops; l++) {
      double inst = j == 0 ? (double)ch->wg[l] : j == 1 ? (double)ch->wave[l] : 1;
      if (B->dep[o][l]) pin *= (double)ch->fac[j][l];
      pin *= inst;
      all *= (double)ch->fac[j][l] * inst;
    }
    if (pin <= 1) continue;
    double outer = 1;
    if (j >= 1)
      for (int l = 0; l < p->n_loops; l++) outer *= (double)(p->extent[l] / tile(B, ch, j, l));
    /* pinned by the innermost loop of its level: every trip of it counts */
    if (j == K && (z == Z_SPATIAL || (z >= 0 && B->dep[o][z]))) return outer * all;
    if (j >= K) return outer * pin;
    map_sloop sl[MAP_MAX_SLOOPS];
    int n = map_level_sloops(B->t, p, ch, j, sl, MAP_MAX_SLOOPS);
    double prefix = 1, upto = 1;
    for (int i = 0; i < n; i++) {
      prefix *= (double)sl[i].trips;
      if (sl[i].spatial || B->dep[o][sl[i].loop]) upto = prefix;
    }
    return outer * upto;
  }
  if (F == 0) return 1;
  double c = 1;
  for (int l = 0; l < p->n_loops; l++)
    c *= B->dep[o][l] ? (double)(p->extent[l] / tile(B, ch, F, l))
                      : (double)ch->wg[l] * (F >= 2 ? (double)ch->wave[l] : 1);
  return c;
}

static double lb_z(const map_bound *B, const map_choice *ch, int F, int K, int z) {
  const map_target *t = B->t;
  const map_problem *p = &B->proto->prob;
  const cov_acg *g = t->acg;
  int L = B->L;
  double passes = 1, inner = B->trips;
  if (F <= L - 1) {
    inner = 1;
    for (int l = 0; l < p->n_loops; l++) inner *= (double)ch->fac[L - 1][l];
    passes = B->trips / inner;
  }
  double busy = F <= L - 1 ? passes * (B->latency + inner * B->issue) : B->latency + B->trips * B->issue;
  /* each instance's GEMMs take at least its share of the MACs */
  if (B->gemm_floor > 0) busy = B->latency + B->gemm_floor / B->par;
  /* weight-stationary GEMMs: map_cost charges the passes' issues and one
   * latency, not one per pass */
  if (B->ws_rows > 0) busy = B->latency + B->trips * B->issue;
  /* k digits make a weight-stationary GEMM's temporal reduction loops free
   * of issues of their own: only its streamed rows bound it */
  double ws = B->latency + B->ws_trips * B->issue;
  if (B->ws_rows > 0 && ws < busy) busy = ws;
  /* map_cost's busy is at least the longer of the main statement and the
   * epilogue (they overlap where the output tile is double-buffered) */
  if (B->epilogue > busy) busy = B->epilogue;
  double per_edge[MAP_MAX_OPERANDS * MAP_MAX_LEVELS];
  int edge_id[MAP_MAX_OPERANDS * MAP_MAX_LEVELS], n_e = 0;
  double serial = 0, fill = 0, dram = 0;
  for (int o = 0; o < p->n_operands; o++)
    for (int lv = 1; lv < L; lv++) {
      const map_bound_xfer *x = &B->x[o][lv];
      if (!x->present) continue;
      double vol, one, lat_n;
      if (lv >= F) {
        int64_t tl[MAP_MAX_LOOPS], box[COV_MAX_RANK];
        for (int l = 0; l < p->n_loops; l++) tl[l] = tile(B, ch, lv, l);
        map_tile_box(&p->operands[o], p->n_loops, tl, box);
        int64_t elems = 1;
        for (int d = 0; d < p->operands[o].rank; d++) elems *= box[d];
        double bytes = (double)map_xfer_bytes(t, B->proto, o, lv, elems);
        double cnt = count_lb(B, ch, o, lv, F, K, z);
        vol = bytes * cnt;
        one = bytes / x->bw + x->lat;
        lat_n = x->lat * cnt / B->inst_below[lv];
      } else {
        vol = x->min_bytes;
        one = x->lat;
        lat_n = x->lat / B->inst_below[lv];
      }
      bool dbx = ch->dbuf && x->db_allowed;
      /* as map_cost: pipelined latencies, copies on several engines */
      double all = vol / x->bw / B->engines[lv] + (dbx ? 0 : lat_n);
      if (x->dram) dram += vol;
      if (dbx) {
        if (x->edge >= 0 && x->edge < g->n_edges) { /* as map_cost: per edge used */
          int k = 0;
          while (k < n_e && edge_id[k] != x->edge) k++;
          if (k == n_e) edge_id[n_e] = x->edge, per_edge[n_e++] = 0;
          per_edge[k] += all;
        }
        if (one > fill) fill = one;
      } else {
        serial += all;
      }
    }
  double overlapped = 0;
  for (int k = 0; k < n_e; k++)
    if (per_edge[k] > overlapped) overlapped = per_edge[k];
  if (B->dram_bw > 0 && dram / B->dram_bw > overlapped) overlapped = dram / B->dram_bw;
  return (busy > overlapped ? busy : overlapped) + serial + fill;
}

/* The candidates for the innermost scheduled loop of level K (its order not
 * yet chosen; map_level_sloops): at level 0 the reductions come last, then
 * the workgroup loops, then the output loops (with ch->wg_outer the output
 * loops, then the workgroup loops); at level 1 the waves come first.
 * Returns their number (0: the level has no loop). */
static int innermost_candidates(const map_bound *B, const map_choice *ch, int K, int *z) {
  const map_problem *p = &B->proto->prob;
  int n = 0;
  bool inst = false;
  for (int l = 0; l < p->n_loops; l++) inst |= K == 0 ? ch->wg[l] > 1 : K == 1 && ch->wave[l] > 1;
  if (K == 0)
    for (int l = 0; l < p->n_loops; l++)
      if (ch->fac[0][l] > 1 && p->reduction[l]) z[n++] = l;
  if (n == 0 && K == 0 && inst && !ch->wg_outer) {
    z[n++] = Z_SPATIAL;
    return n;
  }
  if (n == 0)
    for (int l = 0; l < p->n_loops; l++)
      if (ch->fac[K][l] > 1 && (K != 0 || !p->reduction[l])) z[n++] = l;
  if (n == 0 && inst) z[n++] = Z_SPATIAL;
  return n;
}

bool map_bound_cuts(const map_bound *B, const map_choice *ch, int F, int K, double limit) {
  /* assuming nothing about the innermost loop gives the smallest bound of
   * all; when even it exceeds the limit, so do they */
  if (lb_z(B, ch, F, K, Z_NONE) > limit) return true;
  /* once every factor is known, whichever loop ends up innermost at the
   * first level whose order is open makes every operand it pins move once
   * per trip of that level: the completions are cut when the bound under
   * each choice exceeds the limit */
  int z[MAP_MAX_LOOPS + 1];
  int n = F == 0 && K < B->L - 1 ? innermost_candidates(B, ch, K, z) : 0;
  for (int i = 0; i < n; i++)
    if (lb_z(B, ch, F, K, z[i]) <= limit) return false;
  return n > 0;
}
