/* mapper/map_cost.c: predicted cycles, bytes and energy, from ACG numbers
 * only.
 *
 * Compute: the main statement runs in passes (one per tile of the last
 * level); a pass issues the last level's temporal iterations, each covering
 * the spatial loops at once; an issue takes (array PEs or lanes) /
 * throughput cycles, and a pass adds the capability's latency (array fill
 * and drain). Idle rows/columns/lanes are wasted, not discounted.
 * Transfers: each execution takes bytes / bandwidth + latency on its edge
 * (bandwidth: the edge's, capped by the storage nodes' own). Transfers into
 * double-buffered places overlap compute: per edge they run in parallel with
 * it and with each other, and DRAM's total bandwidth bounds all DRAM traffic;
 * the rest (and the first fill, and the last store's drain) is exposed,
 * added serially.
 * Epilogue: every vector op touches each output element once at its
 * capability's throughput or its operands' bandwidth (a source with stride 0
 * along the instructions' columns read once per row), a row op once per
 * row. Energy: map_energy.c.
 */
#include <math.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "mapper/map_walk.h"

double map_edge_bw(const cov_acg *g, int edge, int src, int dst) {
  double bw = 0;
  if (edge >= 0) bw = g->edges[edge].bandwidth_bytes_per_cycle;
  double sb = g->storage[src].bandwidth_bytes_per_cycle;
  double db = g->storage[dst].bandwidth_bytes_per_cycle;
  if (bw <= 0) bw = 1e30;
  if (sb > 0 && sb < bw) bw = sb;
  if (db > 0 && db < bw) bw = db;
  return bw;
}

static double edge_bw(const cov_acg *g, const map_xfer *x) {
  return map_edge_bw(g, x->edge, x->src, x->dst);
}

double map_issue_cycles(const cov_acg *g, int node, int cap_index) {
  const acg_compute *cn = &g->compute[node - g->n_storage];
  const acg_capability *cap = &cn->caps[cap_index];
  double units = cn->kind == ACG_SIMD ? (cn->dims[0] ? cn->dims[0] : 1)
                                      : (double)(cap->tile_rank >= 2 ? cap->tile[0] * cap->tile[1]
                                                                     : cn->dims[0] * cn->dims[1]);
  if (units < 1) units = 1;
  return units / (cap->throughput > 0 ? cap->throughput : 1);
}

/* The edge between nodes a and b in either direction, -1 if none. */
static int edge_of(const cov_acg *g, int a, int b) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if ((ed->from == a && ed->to == b) || (ed->bidirectional && ed->from == b && ed->to == a)) return e;
  }
  return -1;
}

/* The storage node the SIMD node `simd` keeps epilogue registers in: one
 * it both reads and writes over a bidirectional edge (the code generator's
 * register buffer), else `fallback`. */
static int simd_reg_node(const cov_acg *g, int simd, int fallback) {
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if (!ed->bidirectional) continue;
    if (ed->from == simd && ed->to < g->n_storage) return ed->to;
    if (ed->to == simd && ed->from < g->n_storage) return ed->from;
  }
  return fallback;
}

/* Cycles per element of one vop reading in_b bytes per element over bw_in
 * and writing eo bytes over bw_out (ISA.md "Timing"). */
static double vop_per_elem(const acg_capability *vc, double in_b, double eo, double bw_in,
                           double bw_out) {
  double per = 1 / (vc->throughput > 0 ? vc->throughput : 1);
  if (bw_in < 1e29 && in_b / bw_in > per) per = in_b / bw_in;
  if (bw_out < 1e29 && eo / bw_out > per) per = eo / bw_out;
  return per;
}

/* The cycles of the epilogue's first nv vector ops. */
static double epi_cycles(const map_schedule *s, double par, int nv) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  int64_t out_elems = 1;
  const map_operand *out = &p->operands[p->output];
  for (int d = 0; d < out->rank; d++) out_elems *= out->shape[d];
  double cyc = 0, pooled = 1;
  int out_node = s->place[p->output][s->n_levels > 1 ? 1 : 0].node;
  const int64_t *box = map_epi_box(s);
  int64_t drain_max = nv > 0 ? map_epi_drain_max(s) : 0;
  for (int v = 0; v < nv; v++) {
    const map_vop *vo = &s->vops[v];
    if (vo->node < 0) continue;
    const acg_capability *vc = &g->compute[vo->node - g->n_storage].caps[vo->cap];
    /* The simulator's vop: max(elements / throughput, operand bytes over
     * the first operand's edge, result bytes over the result's edge)
     * (ISA.md "Timing"). Operands in memory: registers, rows and vector
     * operands (a scalar is an immediate), those with stride 0 along the
     * instructions' columns read once per row (map_vop_src_bytes); a pool's
     * window steps read the running result and the next element. The first
     * op reads the output tile where the main statement left it; the
     * others, and every result, the SIMD unit's register buffer. */
    int reg_node = simd_reg_node(g, vo->node, out_node);
    double ei = (double)cov_dtype_size(vc->in[0] ? vc->in[0] : COV_F32);
    double eo = (double)cov_dtype_size(vc->out ? vc->out : COV_F32);
    double in_b = vo->kind == MAP_VOP_POOL ? 2 * ei : map_vop_src_bytes(s, vo, box, ei);
    int src = v == 0 ? out_node : reg_node, ein = edge_of(g, src, vo->node);
    int eout = edge_of(g, vo->node, reg_node);
    double bw_in = ein >= 0 ? map_edge_bw(g, ein, src, src) : 1e30;
    double bw_out = eout >= 0 ? map_edge_bw(g, eout, reg_node, reg_node) : 1e30;
    /* a fused row sum writes one more value per row (per instruction row
     * of the box's columns, the row: npu_epilogue.c) over the same edge */
    double out_b = eo;
    if (vo->row_sum && box) {
      int cd = map_vop_cols_dim(p->operands[p->output].rank, box);
      if (box[cd] > 0) out_b += eo / (double)box[cd];
    }
    double per = vop_per_elem(vc, in_b, out_b, bw_in, vo->kind == MAP_VOP_ROW_REDUCE ? 1e30 : bw_out);
    /* instructions of a few rows each (map_epi_vop_rows): each rounds its
     * cycles up on its own, as the simulator times it */
    int64_t vr = map_epi_vop_rows(s, vo);
    if (vr > 0) {
      int cd = map_vop_cols_dim(p->operands[p->output].rank, box);
      double n = (double)vr * (double)box[cd], t = vc->throughput > 0 ? vc->throughput : 1;
      double cyc1 = ceil(n / t);
      if (bw_in < 1e29 && ceil(n * in_b / bw_in) > cyc1) cyc1 = ceil(n * in_b / bw_in);
      if (bw_out < 1e29 && ceil(n * out_b / bw_out) > cyc1) cyc1 = ceil(n * out_b / bw_out);
      per = cyc1 / n;
    }
    if (vo->kind == MAP_VOP_POOL) {
      /* per window of W elements (npu_epilogue.c): W - 1 steps of two
       * operands, plus one of one operand where it starts from a scalar
       * (a folded ReLU) or the window is 1x1 */
      double w = (double)vo->window[0] * vo->window[1];
      double one = vop_per_elem(vc, ei, eo, bw_in, bw_out);
      per = ((w - 1) * per + (vo->b.kind != MAP_VS_NONE || w <= 1 ? one : 0)) / w;
    }
    /* a row op works on one value per row of its loop */
    double elems = (double)out_elems * pooled;
    if (vo->kind == MAP_VOP_ROW_MAP) elems /= (double)p->extent[vo->loop];
    /* a row max over the drains' chunk maxes: one value per chunk */
    if (v == 0 && drain_max > 0) elems = elems * (double)drain_max / (double)p->extent[vo->loop];
    cyc += elems * per / par;
    /* ops after a pool see one element per window (map_bind_epilogue
     * moves the pool first where the ops before it commute with it) */
    if (vo->kind == MAP_VOP_POOL) pooled /= (double)vo->window[0] * vo->window[1];
  }
  return cyc;
}

double map_epilogue_cycles(const map_schedule *s, double par) { return epi_cycles(s, par, s->n_vops); }

double map_lane_bank_factor(const map_schedule *s) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  const acg_capability *cap = &cn->caps[s->cap];
  int li = -1;
  for (int i = 0; i < s->n_sloops; i++)
    if (s->sloops[i].spatial && s->sloops[i].axis == MAP_AX_LANES) li = i;
  if (li < 0) return 1;
  int64_t lanes = s->sloops[li].trips, thr = cap->throughput > 0 ? (int64_t)cap->throughput : 1;
  if (lanes > thr) lanes = thr;
  double worst = 1;
  for (int o = 0; o <= p->output; o++) {
    const map_operand *op = &p->operands[o];
    int lv = s->n_levels - 1;
    while (lv > 0 && !s->place[o][lv].present) lv--;
    const map_place *pl = &s->place[o][lv];
    if (lv == 0 || g->storage[pl->node].kind == ACG_DRAM) continue;
    /* tiles are dense, row-major in their box */
    int64_t st = 0, rm = 1;
    for (int d = op->rank - 1; d >= 0; d--) {
      st += op->acc.coef[d][s->sloops[li].loop] * s->sloops[li].step * rm;
      rm *= pl->shape[d];
    }
    /* the simulator's count (acg_bank_degree), for a tile at a bank boundary */
    int64_t bst = st * (int64_t)cov_dtype_size(pl->dtype);
    double f = acg_bank_degree(&g->storage[pl->node], 0, bst < 0 ? -bst : bst, (uint32_t)lanes);
    if (f > worst) worst = f;
  }
  return worst;
}

/* A SIMD main statement's issue as the simulator's vop times it (ISA.md
 * "Timing"): besides `throughput` elements a cycle, its memory operands'
 * bytes cross the edge from the first operand's buffer, and its result's
 * bytes the edge to the result's buffer. The code generator's vop
 * (leaf_simd) reads input 0 (a reduction: the running result and the
 * input) and input 1 where there is one, and writes the output, each from
 * its deepest tile; one VOP covers `elems` elements; `copy`: a reduction's
 * first step, which copies its input. */
static double map_simd_feed_cycles(const map_schedule *s, double elems, bool copy) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const acg_capability *cap = &g->compute[s->node - g->n_storage].caps[s->cap];
  double nsrc = p->kind == MAP_MAIN_REDUCE && !copy ? 2 : (p->n_inputs > 1 ? 2 : 1);
  double ei = (double)cov_dtype_size(cap->in[0] ? cap->in[0] : COV_F32);
  double eo = (double)cov_dtype_size(cap->out ? cap->out : COV_F32);
  int src = s->place[0][map_walk_deepest(s, 0)].node;
  int dst = s->place[p->output][map_walk_deepest(s, p->output)].node;
  int ein = edge_of(g, src, s->node), eout = edge_of(g, s->node, dst);
  double feed = ein >= 0 ? elems * nsrc * ei / map_edge_bw(g, ein, src, src) : 0;
  double drain = eout >= 0 ? elems * eo / map_edge_bw(g, eout, dst, dst) : 0;
  return feed > drain ? feed : drain;
}

/* A SIMD main statement as the code generator emits it: one VOP per trip
 * of the last level's loops but its rows and columns loops
 * (map_simd_vop_loops), each taking the simulator's time for rows x
 * columns elements: ceil(elements / throughput) cycles, times the worst
 * bank factor at the columns' stride (elements that share a bank
 * serialise, ISA.md "Bank factor"), or its operands' bytes over the edges
 * where those take longer; a reduction's first step in each output tile
 * is a copy reading one operand, not two (npu_codegen.c leaf_simd). inner:
 * the last level's trips; *vops: the VOPs among them, *per_issue: each
 * VOP's cycles on average. */
static void map_simd_issues(const map_schedule *s, double inner, double *vops, double *per_issue) {
  const cov_acg *g = s->acg;
  const acg_capability *cap = &g->compute[s->node - g->n_storage].caps[s->cap];
  int ml, nl;
  map_simd_vop_loops(s, &ml, &nl);
  double rows = ml >= 0 ? (double)s->sloops[ml].trips : 1, cols = nl >= 0 ? (double)s->sloops[nl].trips : 1;
  /* the temporal loops among them are inner trips the VOP absorbs */
  double absorbed = rows * (nl >= 0 && !s->sloops[nl].spatial ? cols : 1);
  *vops = absorbed > 1 && inner >= absorbed ? inner / absorbed : inner;
  double thr = cap->throughput > 0 ? (double)cap->throughput : 1;
  double vop = ceil(rows * cols / thr) * map_lane_bank_factor(s);
  double feed = map_simd_feed_cycles(s, rows * cols, false);
  *per_issue = feed > vop ? feed : vop;
  double steps = map_simd_reduce_steps(s);
  if (steps > 0) {
    double cf = map_simd_feed_cycles(s, rows * cols, true), copy = cf > vop ? cf : vop;
    *per_issue = (copy + (steps - 1) * *per_issue) / steps;
  }
}

/* The main statement's and the epilogue's time together, as the simulator
 * runs them. Where the output's level-1 tile is double-buffered and the
 * epilogue runs on another unit, the array fills one half while the SIMD
 * unit works on the other: per tile the longer of the two, and one tile of
 * the shorter exposed at the start or the end. If the code generator does
 * not alternate the epilogue's registers (map_epi_half), a tile's epilogue
 * also waits for the previous tile's store to read them: the SIMD unit's
 * chain then holds the stores' occupancy too (not their latency: a write
 * waits for the reads before it, not for the data to arrive). Otherwise (one
 * output buffer, one unit for both, or a deeper accumulator) they run in
 * series. */
static double map_busy_cycles(const map_schedule *s, double comp, double epi) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  if (epi <= 0 || s->n_levels < 2 || s->vops[0].node < 0 || s->vops[0].node == s->node ||
      !s->place[p->output][1].double_buffered)
    return comp + epi;
  /* Where the epilogue runs on each drained level-2 tile (map_epi_per_subtile)
   * the SIMD unit works on one while the array accumulates the next: per
   * level-2 tile the longer of the two (the drains stay serial transfers). */
  if (map_epi_per_subtile(s)) {
    double sub = 0;
    for (int i = 0; i < s->n_xfers; i++)
      if (s->xfers[i].operand == p->output && s->xfers[i].level == 2 && s->xfers[i].dir == MAP_STORE)
        sub = (double)s->xfers[i].count;
    if (sub >= 2) {
      double hi = comp > epi ? comp : epi, lo = comp > epi ? epi : comp;
      return hi + lo / sub;
    }
  }
  /* An array accumulating in a deeper place (an output-stationary one's
   * register file) drains each tile into level 1 before the epilogue, and
   * the drain waits for it: they stay in series. */
  double tiles = 0, store = 0;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    if (x->operand != p->output || x->level != 1 || x->dir != MAP_STORE) continue;
    tiles = (double)x->count;
    store = s->cost.xfer_cycles[i];
  }
  /* ... unless the code generator deals each tile's epilogue out between
   * the next tile's drains (map_epi_spread): then the SIMD unit's epilogue
   * runs beside the array, the last tile's after it. The drains (copies out
   * of the register file, which map_cost_eval adds as serial transfers)
   * then overlap too, but each drain into the register file waits for the
   * copy of the one before: per level-2 tile the array's latency, the
   * copy and the drain's cycle at least. The result leaves the copies for
   * map_cost_eval to add. */
  if (map_epi_spread(s) && tiles >= 2) {
    double copies = 0, subs = 0;
    for (int i = 0; i < s->n_xfers; i++)
      if (s->xfers[i].operand == p->output && s->xfers[i].level == 2 && s->xfers[i].dir == MAP_STORE) {
        copies = s->cost.xfer_cycles[i];
        subs = (double)s->xfers[i].count;
      }
    const acg_capability *cap = &g->compute[s->node - g->n_storage].caps[s->cap];
    double chain = subs * ((double)cap->latency + 1) + copies;
    double body = comp > chain ? comp : chain;
    if (epi + copies > body) body = epi + copies;
    return body + epi / tiles - copies;
  }
  for (int lv = 2; lv < s->n_levels; lv++)
    if (s->place[p->output][lv].present) return comp + epi;
  if (tiles < 2) return comp + epi;
  double chain = epi;
  if (s->epi_node >= 0) {
    uint64_t cap = g->storage[s->epi_node].capacity_bytes;
    if (!map_epi_half(s, cap > s->epi_addr ? cap - s->epi_addr : 0)) {
      /* The wait is for the first op that writes a tile-sized register
       * (the store reads one of them); the row ops before it (softmax's
       * row max and its negation: row registers, which no store reads) run
       * while the previous tile's store reads, so only the store's excess
       * over them is added. */
      int lead = 0;
      while (lead < s->n_vops &&
             (s->vops[lead].kind == MAP_VOP_ROW_REDUCE || s->vops[lead].kind == MAP_VOP_ROW_MAP))
        lead++;
      double all = epi_cycles(s, 1, s->n_vops);
      double before = lead > 0 && all > 0 ? epi * epi_cycles(s, 1, lead) / all : 0;
      if (store > before) chain += store - before;
    }
  }
  /* A chunked epilogue (map_epi_chunk_plan) starts on each chunk of a tile
   * once the GEMMs have filled it: of the shorter side one chunk's share
   * is exposed. */
  double hi = comp > chain ? comp : chain, lo = comp > chain ? chain : comp;
  return hi + lo / (tiles * (double)map_epi_chunks(s));
}

/* A DMA engine runs its transfers in order. Where it moves a large tile
 * seldom (a new weight block per outer iteration) between the small ones
 * of every tile (the input's), the next tile's load waits behind it: with
 * two buffers the array has one tile's work in hand when it starts, so
 * each such transfer but the first (issued with the fill) holds the work
 * for its occupancy, the small tile's and the latency beyond that tile
 * (resnet50_res4_3x3 on npu-32x32-os: a 12,288-cycle weight load every 7
 * tiles of 4,610 cycles, 8,742 idle cycles of the array after each). */
static double engine_hold(const map_schedule *s, const double *xocc, double busy) {
  const cov_acg *g = s->acg;
  double worst = 0;
  for (int e = 0; e < g->n_edges; e++) {
    int64_t nmax = 0;
    for (int i = 0; i < s->n_xfers; i++) {
      const map_xfer *x = &s->xfers[i];
      if (x->edge == e && s->place[x->operand][x->level].double_buffered && x->count > nmax)
        nmax = x->count;
    }
    if (nmax < 2) continue;
    double small = 0, hold = 0, lat = g->edges[e].latency_cycles;
    for (int i = 0; i < s->n_xfers; i++) {
      const map_xfer *x = &s->xfers[i];
      if (x->edge == e && s->place[x->operand][x->level].double_buffered && x->count == nmax)
        small += xocc[i];
    }
    for (int i = 0; i < s->n_xfers; i++) {
      const map_xfer *x = &s->xfers[i];
      if (x->edge != e || x->dir != MAP_LOAD || !s->place[x->operand][x->level].double_buffered ||
          x->count >= nmax || x->count < 2)
        continue;
      double over = xocc[i] + small + lat - busy / (double)nmax;
      if (over > 0) hold += over * (double)(x->count - 1);
    }
    if (hold > worst) worst = hold;
  }
  return worst;
}

/* How many engines carry transfer x's copies of `inst` workgroups at once:
 * on the cores of an NPU (map_cores: the array's instances, each core with its
 * own DMA engine on every edge: backends/npu-sim/ISA.md "Cores") one per
 * core where the edge's on-chip end is one per core, so each engine moves
 * its core's share at the edge's bandwidth (DRAM's interface stays shared:
 * dram_cost below); elsewhere (a GPU's workgroups) the ACG's edge figure is
 * the total of all of them. */
static double map_edge_copies(const map_schedule *s, const map_xfer *x, double inst) {
  const cov_acg *g = s->acg;
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  if (inst <= 1 || !map_cores(g, s->node) || cn->instances < inst) return 1;
  int local = g->storage[x->src].kind == ACG_DRAM ? x->dst : x->src;
  return g->storage[local].instances >= inst ? inst : 1;
}

/* The main statement's cycles: passes of issues, or on a unit with GEMMs
 * the code generator's GEMMs. passes, inner: the issue counts (energy);
 * gp: the GEMM plan where *gemm. */
static void compute_cost(map_schedule *s, double *passes_out, double *inner_out, bool *gemm_out,
                         map_gemm_plan *gp) {
  const cov_acg *g = s->acg;
  map_cost *c = &s->cost;
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  const acg_capability *cap = &cn->caps[s->cap];
  int L = s->n_levels;
  double passes = 1, inner = 1;
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->spatial && sl->axis > MAP_AX_LANES) continue; /* instances run in parallel */
    if (sl->level < L - 1) passes *= (double)sl->trips;
    else if (!sl->spatial) inner *= (double)sl->trips;
  }
  double per_issue = map_issue_cycles(g, s->node, s->cap);
  bool gemm = map_gemm_applies(s);
  double vops = inner; /* issues per pass; a SIMD main statement's are VOPs */
  if (cn->kind == ACG_SIMD && !gemm) map_simd_issues(s, inner, &vops, &per_issue);
  /* an array also walks the reduction depth tile[2] per issue where given */
  c->compute_cycles = passes * ((double)cap->latency + vops * per_issue);
  /* On a systolic array the code generator's GEMMs (map_gemm.c) at the
   * simulator's per-instruction cost: a weight-stationary GEMM loads its
   * weights before streaming, an output-stationary one spends its reduction
   * depth and preloads/drains unless chained; one latency for the last
   * result. Weight-stationary: never below the pass count's issues (its m
   * is streamed, one issue per row, as the passes count it; a plan that
   * misses a loop would otherwise look cheap) plus one latency, not one per
   * pass: a gemm's results are visible to the array after its occupancy
   * (in-place accumulation is pipelined, ISA.md "Timing"), so a pass's
   * latency hides behind the next pass's gemms (a latency per pass put
   * larger tiles ahead by 32 cycles each on the derived 16x16 designs of
   * examples/studies, where the simulator has them level). Output-stationary:
   * the GEMMs replace the pass count, which charges the loop a GEMM spreads
   * over the array's rows (its m) one issue per trip; map_bound.c bounds
   * them by MACs / throughput, which no GEMM beats. Likewise with k digits
   * (temporal reduction loops on the rows: no issue of their own). */
  if (gemm) {
    map_gemm_plan_make(s, gp);
    double gc = map_gemm_cycles(s, gp) + (double)cap->latency;
    double issues = passes * inner * per_issue + (double)cap->latency;
    /* tiles (a matrix, SIMD or scalar unit): the instructions' own count */
    bool tiles = cn->kind != ACG_SYSTOLIC;
    c->compute_cycles = gc > issues || gp->output_stationary || gp->n_kd > 1 || tiles ? gc : issues;
  }
  *passes_out = passes;
  *inner_out = inner;
  *gemm_out = gemm;
}

/* The transfers' running totals, one pass over them (xfer_cost). Per edge
 * the transfers use (at most one per transfer, so bounded by
 * MAP_MAX_XFERS whatever the ACG's edge count): its double-buffered
 * occupancy and the latencies it leaves exposed. Indexed in the order the
 * transfers first use them, so the cost does not depend on where the
 * edges sit in the ACG. */
typedef struct {
  double per_edge[MAP_MAX_XFERS], per_edge_lat[MAP_MAX_XFERS];
  int edge_id[MAP_MAX_XFERS], n_edges;
  double exposed_serial, dram_cost, first_fill, drain, head_occ, head_lat, head_all, head_feed, head_max;
  double xocc[MAP_MAX_XFERS];
} xfer_totals;

/* Transfer x's occupancy of its edge (bytes over bandwidth, or DRAM's
 * bursts); dbw: the DRAM node's own bandwidth where x touches DRAM, 0 if
 * not; adds x's DRAM bytes to t->dram_cost. */
static double xfer_occupancy(const map_schedule *s, const map_xfer *x, double bw, double *dbw_out,
                             xfer_totals *t) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  double occ = (double)x->bytes / bw;
  /* a drain that also writes each row's max (map_epi_drain_max): one
   * more value per row over the edge into the level-1 tile's storage */
  if (x->operand == p->output && x->level == 2 && x->dir == MAP_STORE && map_epi_drain_max(s) > 0) {
    const map_place *p2 = &s->place[p->output][2];
    int e2 = edge_of(g, s->vops[0].node, x->dst);
    double rows = (double)p2->elems / (double)p2->tile[s->vops[0].loop];
    double es = (double)cov_dtype_size(p2->dtype);
    if (e2 >= 0) {
      double o2 = ((double)x->bytes + rows * es) / map_edge_bw(g, e2, x->dst, x->dst);
      if (o2 > occ) occ = o2;
    }
  }
  bool dram_x = g->storage[x->src].kind == ACG_DRAM || g->storage[x->dst].kind == ACG_DRAM;
  double dbw = 0; /* the DRAM node's own bandwidth */
  if (dram_x) {
    /* DRAM serves whole bursts per contiguous run (map_dram.c), at its
     * own bandwidth, shared by every engine */
    double dc = map_dram_cost_bytes(s, x);
    dbw = g->storage[g->storage[x->src].kind == ACG_DRAM ? x->src : x->dst].bandwidth_bytes_per_cycle;
    if (dbw > 0 && dc / dbw > occ) occ = dc / dbw;
    t->dram_cost += (dc > (double)x->bytes ? dc : (double)x->bytes) * (double)x->count;
  }
  *dbw_out = dbw;
  return occ;
}

/* A double-buffered transfer x (occupancy occ, latency lat, all: its
 * engine time, one: one execution's time) into the totals: its edge's
 * occupancy and latencies, the drain, the first fill or the head of an
 * output-stationary chain. */
static void buffered_xfer(const map_schedule *s, const map_gemm_plan *gp, bool gemm, const map_xfer *x,
                          double occ, double lat, double all, double one, double bw, double dbw,
                          double inst, xfer_totals *t) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  bool dram_x = g->storage[x->src].kind == ACG_DRAM || g->storage[x->dst].kind == ACG_DRAM;
  if (x->edge >= 0 && x->edge < g->n_edges) {
    int k = 0;
    while (k < t->n_edges && t->edge_id[k] != x->edge) k++;
    if (k == t->n_edges) t->edge_id[t->n_edges++] = x->edge, t->per_edge[k] = 0, t->per_edge_lat[k] = 0;
    t->per_edge[k] += all;
    /* one tile's loads on an engine are issued together: their
     * latencies overlap, one per tile; the first two tiles' loads are
     * issued before any work (both buffers are free), so only the
     * later tiles' wait for a buffer the work releases (below) */
    double tl = lat * (double)(x->count > 2 ? x->count - 2 : 0) / inst;
    if (x->dir == MAP_LOAD && tl > t->per_edge_lat[k]) t->per_edge_lat[k] = tl;
  }
  /* after the last GEMM only the last part of the output's store
   * remains: a chunked epilogue's last chunk, or the last rectangle's
   * box (map_ir.h), its bytes over the edge or its bursts */
  if (x->dir == MAP_STORE && x->operand == p->output && x->level == 1 && s->n_rects > 0) {
    const map_rect *r = &s->rects[s->n_rects - 1];
    double share = (double)(r->ext[0] * r->ext[1]) /
                   (double)(p->extent[s->rect_loop[0]] * p->extent[s->rect_loop[1]]);
    double o1 = (double)x->bytes * share / bw;
    double d1 = dbw > 0 ? map_dram_cost_rect(s, x, s->n_rects - 1) / dbw : 0;
    one = (d1 > o1 ? d1 : o1) + lat;
  } else if (x->dir == MAP_STORE && x->operand == p->output && x->level == 1) {
    one = occ / (double)map_epi_chunks(s) + lat;
  }
  if (x->dir == MAP_STORE && one > t->drain) t->drain = one;
  /* Where the first GEMM's operand tiles are loaded in pieces (an
   * output-stationary chain folded at groups of kl, npu_head.c), it
   * waits for its operands' loads from DRAM one after another on the
   * engine (issued in the order the GEMMs read them), of each the
   * first piece (map_gemm_first_share), and one latency. Other loads
   * (the epilogue's operands, on-chip copies) only where longer.
   * Whole first loads keep the charge of the longest one: their sum
   * (what one engine serves) ranked schedules whose body the model
   * under-predicts ahead of better ones (convnet_layer1 on
   * npu-16x16-os: 3,378 -> 3,506 simulated after the re-ranking). */
  bool head = gemm && gp->output_stationary && dram_x && x->dir == MAP_LOAD &&
              (x->operand == gp->a_op || x->operand == gp->b_op);
  if (head) {
    double sh = map_gemm_first_share(s, gp, x);
    t->head_occ += occ * sh;
    t->head_all += occ;
    if (lat > t->head_lat) t->head_lat = lat;
    if (one > t->head_max) t->head_max = one;
    /* the work the rest of the pieces feed: at most one chain's
     * GEMMs (they read the tile in order), at most the work per load */
    if (sh < 1) {
      double feed = map_gemm_chain_cycles(s, gp) * (1 - sh), per = s->cost.compute_cycles / (double)x->count;
      if (per * (1 - sh) < feed) feed = per * (1 - sh);
      if (feed < t->head_feed) t->head_feed = feed;
    }
  } else if (x->dir == MAP_LOAD && one > t->first_fill) {
    t->first_fill = one;
  }
}

/* Transfer i's cycles (c->xfer_cycles, bytes per level) and its share of
 * the totals. */
static void xfer_cost(map_schedule *s, const map_gemm_plan *gp, bool gemm, int i, xfer_totals *t) {
  const cov_acg *g = s->acg;
  map_cost *c = &s->cost;
  const map_xfer *x = &s->xfers[i];
  double bw = edge_bw(g, x);
  double lat = x->edge >= 0 ? g->edges[x->edge].latency_cycles : 0;
  /* replicated instances (workgroups, waves) issue their copies at once:
   * bandwidth is shared (the ACG's edge figure is the total), latency is
   * paid once per round */
  double inst = 1;
  for (int k = 0; k <= x->after; k++)
    if (s->sloops[k].spatial && s->sloops[k].axis > MAP_AX_LANES) inst *= (double)s->sloops[k].trips;
  double dbw;
  double occ = xfer_occupancy(s, x, bw, &dbw, t);
  double one = occ + lat;
  t->xocc[i] = occ;
  bool db = s->place[x->operand][x->level].double_buffered;
  /* A DMA engine is busy for a transfer's occupancy only; its latency
   * delays when the data is visible (ISA.md "Timing"). Double-buffered
   * loads are issued ahead of the tile that uses them, so their latencies
   * overlap the next transfers and the work: the engine's time is their
   * occupancy, one latency is exposed (the fill below) and, with two
   * buffers, half of the others where they do not fit under the work
   * (below). A store's latency delays nothing but the end of the program
   * (the drain below): the next write of its buffer waits for the store's
   * read only. Other transfers wait for and are waited on: each pays its
   * latency. */
  double all = occ * (double)x->count / map_edge_copies(s, x, inst) + (!db ? lat * (double)x->count / inst : 0);
  c->xfer_cycles[i] = all;
  c->bytes_level[x->level] += (double)x->bytes * (double)x->count;
  if (db) buffered_xfer(s, gp, gemm, x, occ, lat, all, one, bw, dbw, inst, t);
  else t->exposed_serial += all;
}

/* The transfers' time that overlaps the work (busy): the busiest edge,
 * DRAM's bandwidth, and with two buffers half the latencies that do not
 * fit under the work. */
static double overlapped_cycles(const map_schedule *s, const xfer_totals *t, double busy) {
  const cov_acg *g = s->acg;
  double overlapped = 0;
  for (int e = 0; e < t->n_edges; e++)
    if (t->per_edge[e] > overlapped) overlapped = t->per_edge[e];
  double dram_bw = acg_dram_bandwidth(g);
  if (dram_bw > 0 && t->dram_cost / dram_bw > overlapped) overlapped = t->dram_cost / dram_bw;
  /* With two buffers a tile's load can start only once the work on the
   * tile two back has released its buffer: per two tiles the engine's
   * occupancy, its latency and the work run in series, so of an edge's
   * latencies half stays exposed where they do not fit under the work:
   * the body is at least (busy + occupancy + latencies) / 2 per edge. */
  for (int e = 0; e < t->n_edges; e++)
    if (t->per_edge_lat[e] > 0 && (busy + t->per_edge[e] + t->per_edge_lat[e]) / 2 > overlapped)
      overlapped = (busy + t->per_edge[e] + t->per_edge_lat[e]) / 2;
  /* The same holds for DRAM's interface, which every engine shares: its
   * occupancy, and the
   * latencies, which the engines pay side by side (the longest chain),
   * against the work (resnet50_res4_3x3 on npu-16x16: DRAM busy 98% of the
   * work, 566,305 simulated, 517,390 predicted without this). */
  double dram_lat = 0;
  for (int e = 0; e < t->n_edges; e++) {
    const acg_edge *ed = &g->edges[t->edge_id[e]];
    bool dram_e = g->storage[ed->from].kind == ACG_DRAM || g->storage[ed->to].kind == ACG_DRAM;
    if (dram_e && t->per_edge_lat[e] > dram_lat) dram_lat = t->per_edge_lat[e];
  }
  if (dram_bw > 0 && dram_lat > 0 && (busy + t->dram_cost / dram_bw + dram_lat) / 2 > overlapped)
    overlapped = (busy + t->dram_cost / dram_bw + dram_lat) / 2;
  return overlapped;
}

/* Utilisation of the main node and of the epilogue's unit. */
static void utilisation(map_schedule *s, int64_t out_elems) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  map_cost *c = &s->cost;
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  const acg_capability *cap = &cn->caps[s->cap];
  int ci = s->node - g->n_storage;
  if (ci < MAP_MAX_COMPUTE && c->cycles > 0)
    c->util[ci] = (double)p->ops / ((cap->throughput > 0 ? cap->throughput : 1) *
                                    (cn->instances ? cn->instances : 1) * c->cycles);
  if (s->n_vops && s->vops[0].node >= 0) {
    int vi = s->vops[0].node - g->n_storage;
    if (vi < MAP_MAX_COMPUTE && vi != ci && c->cycles > 0) {
      const acg_capability *vc = &g->compute[vi].caps[s->vops[0].cap];
      c->util[vi] = (double)out_elems * s->n_vops / ((vc->throughput > 0 ? vc->throughput : 1) * c->cycles);
    }
  }
}

void map_cost_eval(map_schedule *s) {
  const map_problem *p = &s->prob;
  map_cost *c = &s->cost;
  memset(c, 0, sizeof *c);
  double passes, inner;
  bool gemm;
  map_gemm_plan gp;
  compute_cost(s, &passes, &inner, &gemm, &gp);
  double par = 1; /* replicated instances working at once (workgroups x waves) */
  for (int i = 0; i < s->n_sloops; i++)
    if (s->sloops[i].spatial && s->sloops[i].axis > MAP_AX_LANES) par *= (double)s->sloops[i].trips;
  /* epilogue */
  int64_t out_elems = 1;
  const map_operand *out = &p->operands[p->output];
  for (int d = 0; d < out->rank; d++) out_elems *= out->shape[d];
  c->epilogue_cycles = map_epilogue_cycles(s, par);
  /* transfers */
  xfer_totals t = {.head_feed = INFINITY};
  for (int i = 0; i < s->n_xfers; i++) xfer_cost(s, &gp, gemm, i, &t);
  /* ... and the chain cannot run ahead of the pieces: the last piece
   * arrives after all of them, and only the GEMMs that do not read it can
   * run before (convnet_layer2 on npu-16x16-os: pieces of 10 + 8 cycles
   * of DRAM per channel feed GEMMs of 25, so the first GEMM's wait, 218
   * cycles, is the head; a chain faster than its pieces waits for the
   * last of them) */
  if (t.head_feed < INFINITY) {
    if (t.head_all - t.head_feed > t.head_occ) t.head_occ = t.head_all - t.head_feed;
    if (t.head_occ + t.head_lat > t.first_fill) t.first_fill = t.head_occ + t.head_lat;
  } else if (t.head_max > t.first_fill) {
    t.first_fill = t.head_max;
  }
  double busy = map_busy_cycles(s, c->compute_cycles, c->epilogue_cycles);
  double overlapped = overlapped_cycles(s, &t, busy);
  busy += engine_hold(s, t.xocc, busy);
  double body = busy > overlapped ? busy : overlapped;
  c->cycles = body + t.exposed_serial + t.first_fill + t.drain;
  c->exposed_cycles = c->cycles - busy;
  utilisation(s, out_elems);
  map_energy_eval(s, passes * inner * par); /* map_energy.c */
  if (!isfinite(c->cycles)) c->cycles = 1e300;
}
