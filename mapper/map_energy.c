/* mapper/map_energy.c: the predicted energy of a schedule, from ACG numbers
 * and the schedule's own counts.
 *
 * The definition is the simulator's (backends/npu-sim/npu_energy.c), with
 * predicted counts in place of counted ones:
 *   compute: the main statement's ops x its capability's energy_pj_per_op,
 *            and each epilogue op's elements x its own;
 *   storage: bytes read x read pJ/byte + bytes written x write pJ/byte at
 *            each node: every transfer (its bytes x its executions: read at
 *            the source, written at the destination; at DRAM its tile's
 *            elements inside the tensor, map_dram_valid_bytes), the array's operand
 *            reads at the innermost level, the epilogue's operands and
 *            results in its buffer;
 *   edges:   the transfers' bytes x the edge's pJ/byte.
 * Operand reads at the array: on a systolic array the code generator's GEMMs
 * (gemm_reads_pj: map_gemm.c's plan, A, B and the sums of each GEMM, as the
 * simulator counts them); on a SIMD main statement each issue (one temporal
 * step of the last level, covering the spatial loops) reads an input's
 * footprint over the spatial loops and reads and writes the output's, once
 * per run of the innermost temporal loops that do not index the operand.
 * Not modelled: the bias preload's reads; the epilogue's first op reading
 * the accumulators' buffer (charged at the epilogue's). Measured against the simulator: bench/npu-sim. */
#include <math.h>

#include "mapper/map_internal.h"
#include "mapper/map_walk.h"

/* Trips of the innermost temporal loops of the last level that do not index
 * operand o (a run over which it stays in the array). */
static double stationary_run(const map_schedule *s, const map_operand *op) {
  double run = 1;
  for (int i = s->n_sloops - 1; i >= 0; i--) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->level < s->n_levels - 1) break;
    if (sl->spatial) continue;
    bool indexes = false;
    for (int d = 0; d < op->rank; d++) indexes |= op->acc.coef[d][sl->loop] != 0;
    if (indexes) break;
    run *= (double)sl->trips;
  }
  return run;
}

/* Operand reads at the innermost level of a main statement that is not a
 * GEMM (a SIMD unit's): per issue each operand's footprint over the spatial
 * loops, once per run of the innermost temporal loops that do not index it. */
static double issue_reads_pj(const map_schedule *s, double issues) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  int L = s->n_levels;
  double e = 0;
  for (int o = 0; o < p->n_operands; o++) {
    const map_operand *op = &p->operands[o];
    if (op->role == MAP_ROLE_VECTOR) continue;
    int lv = L - 1;
    while (lv > 0 && !s->place[o][lv].present) lv--;
    const acg_storage *st = &g->storage[s->place[o][lv].node];
    if (!st->has_energy) continue;
    double foot = 1;
    for (int d = 0; d < op->rank; d++) {
      double ext = 1;
      for (int i = 0; i < s->n_sloops; i++)
        if (s->sloops[i].spatial) {
          int64_t k = op->acc.coef[d][s->sloops[i].loop];
          ext += (double)(k < 0 ? -k : k) * (double)(s->sloops[i].trips - 1);
        }
      foot *= ext;
    }
    double per = foot * (double)cov_dtype_size(s->place[o][lv].dtype);
    double reads = issues / stationary_run(s, op);
    e += reads * per * (op->role == MAP_ROLE_OUTPUT ? st->read_pj_per_byte + st->write_pj_per_byte
                                                      : st->read_pj_per_byte);
  }
  return e;
}

static double trips_of(const map_schedule *s, int i) { return i < 0 ? 1 : (double)s->sloops[i].trips; }

/* Pieces a GEMM dimension of extent x splits into at most mx per GEMM. */
static double pieces(double x, double mx) { return mx > 0 && mx < x ? ceil(x / mx) : 1; }

/* pJ per byte read from (or written to, write) the node holding operand o
 * at its deepest place, plus the edge between it and the array. */
static double at_array_pj(const map_schedule *s, int o, bool write) {
  const cov_acg *g = s->acg;
  int n = s->place[o][map_walk_deepest(s, o)].node;
  const acg_storage *st = &g->storage[n];
  double pj = st->has_energy ? (write ? st->write_pj_per_byte : st->read_pj_per_byte) : 0;
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    bool fwd = write ? ed->from == s->node && ed->to == n : ed->from == n && ed->to == s->node;
    bool back = write ? ed->from == n && ed->to == s->node : ed->from == s->node && ed->to == n;
    if (fwd || (back && ed->bidirectional)) return pj + ed->pj_per_byte;
  }
  return pj;
}

/* The code generator's GEMMs (map_gemm.c, the plan gemm_cycles walks): per
 * leaf, K, M and N in pieces of at most kmax, mmax, nmax; each GEMM reads
 * its m x k of A, its k x n of B, and writes its m x n of sums, reading
 * them first where it accumulates (not the first GEMM of an output tile's
 * reduction unless the tile starts from loaded sums); an output-stationary
 * chain (one m and n piece) writes once per run of GEMMs it holds, a
 * weight-stationary GEMM on the previous one's weights reads none (wkeep). */
static double gemm_reads_pj(const map_schedule *s) {
  const map_problem *p = &s->prob;
  const cov_acg *g = s->acg;
  map_gemm_plan gp;
  map_gemm_plan_make(s, &gp);
  double M = (double)map_gemm_m(s, &gp), K = (double)map_gemm_k(s, &gp), N = trips_of(s, gp.nl);
  double leaves = 1, red = 1, run = 1;
  bool in_run = true;
  for (int i = s->n_sloops - 1; i >= 0; i--) {
    const map_sloop *sl = &s->sloops[i];
    if (map_gemm_absorbs(&gp, i)) continue;
    leaves *= (double)sl->trips; /* instances (cores) each run their leaves */
    if (sl->spatial && sl->axis > MAP_AX_LANES) continue;
    bool r = i > gp.out_init_after && p->reduction[sl->loop];
    if (r) red *= (double)sl->trips;
    if (in_run && r) run *= (double)sl->trips;
    else in_run = false;
  }
  double kp = pieces(K, gp.kmax), mp = pieces(M, gp.mmax), np = pieces(N, gp.nmax);
  const acg_capability *cap = &g->compute[s->node - g->n_storage].caps[s->cap];
  int la = map_walk_deepest(s, gp.a_op), lb = map_walk_deepest(s, gp.b_op);
  double ea = (double)cov_dtype_size(s->place[gp.a_op][la].dtype);
  double eb = (double)cov_dtype_size(s->place[gp.b_op][lb].dtype);
  double eo = (double)cov_dtype_size(cap->out);
  double chain = gp.output_stationary && mp * np == 1 && run * kp > 1 ? run * kp : 1;
  /* weight-stationary: consecutive GEMMs on the same weight block keep it
   * (wkeep): one piece each, over the innermost leaf loops that do not
   * index B and move no B tile */
  double wrun = 1;
  const map_operand *bo = &p->operands[gp.b_op];
  for (int i = s->n_sloops - 1; i >= 0 && !gp.output_stationary && kp * mp * np == 1; i--) {
    const map_sloop *sl = &s->sloops[i];
    if (map_gemm_absorbs(&gp, i) || (sl->spatial && sl->axis > MAP_AX_LANES)) continue;
    bool indexes = sl->level < lb;
    for (int d = 0; d < bo->rank; d++) indexes |= bo->acc.coef[d][sl->loop] != 0;
    if (indexes) break;
    wrun *= (double)sl->trips;
  }
  double wr = leaves * M * N * kp * eo / chain;
  double chains_per_tile = red * kp / chain;
  double rd = gp.out_acc_load || chains_per_tile <= 1 ? (gp.out_acc_load ? wr : 0) : wr * (1 - 1 / chains_per_tile);
  return leaves * M * K * np * ea * at_array_pj(s, gp.a_op, false) +
         leaves * K * N * mp * eb / wrun * at_array_pj(s, gp.b_op, false) +
         wr * at_array_pj(s, p->output, true) + rd * at_array_pj(s, p->output, false);
}

/* The epilogue's ops on the SIMD unit: each over the elements it produces,
 * from the output tile's (the accumulators') down to a pool's output; a
 * pool of a w-element window is w - 1 two-operand ops over its output, as
 * the code generator emits it (npu_epilogue.c). */
static double epilogue_pj(const map_schedule *s, bool *any) {
  const cov_acg *g = s->acg;
  const map_operand *out = &s->prob.operands[s->prob.output];
  double n = 1;
  for (int d = 0; d < out->rank; d++) n *= (double)out->shape[d];
  const acg_storage *eb = s->epi_node >= 0 ? &g->storage[s->epi_node] : NULL;
  double e = 0;
  for (int i = 0; i < s->n_vops; i++) {
    const map_vop *v = &s->vops[i];
    if (v->node < 0) continue;
    const acg_capability *c = &g->compute[v->node - g->n_storage].caps[v->cap];
    double ops = n, srcs = 1 + (v->b.kind == MAP_VS_REG || v->b.kind == MAP_VS_VEC);
    if (v->kind == MAP_VOP_POOL) {
      double w = (double)(v->window[0] > 0 ? v->window[0] : 1) * (double)(v->window[1] > 0 ? v->window[1] : 1);
      n /= w;
      ops = n * (w - 1 > 0 ? w - 1 : 1);
      srcs = 2;
    }
    if (c->energy_pj_per_op > 0) e += ops * c->energy_pj_per_op, *any = true;
    if (!eb || !eb->has_energy) continue;
    double ei = (double)cov_dtype_size(v->din ? v->din : s->acc_dtype ? s->acc_dtype : COV_F32);
    double eo = (double)cov_dtype_size(v->dout ? v->dout : s->acc_dtype ? s->acc_dtype : COV_F32);
    e += ops * (srcs * ei * eb->read_pj_per_byte + eo * eb->write_pj_per_byte);
  }
  return e;
}

void map_energy_eval(map_schedule *s, double issues) {
  const cov_acg *g = s->acg;
  const acg_capability *cap = &g->compute[s->node - g->n_storage].caps[s->cap];
  map_cost *c = &s->cost;
  bool any = cap->energy_pj_per_op > 0;
  double e = (double)s->prob.ops * cap->energy_pj_per_op;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    const acg_storage *a = &g->storage[x->src], *b = &g->storage[x->dst];
    double bytes = (double)x->bytes * (double)x->count;
    /* DRAM reads and writes the tensor's elements only, the buffer the
     * whole tile (a halo's padding included), as a DMA moves them */
    double da = a->kind == ACG_DRAM ? map_dram_valid_bytes(s, x) * (double)x->count : bytes;
    double db = b->kind == ACG_DRAM ? map_dram_valid_bytes(s, x) * (double)x->count : bytes;
    if (a->has_energy) e += da * a->read_pj_per_byte, any = true;
    if (b->has_energy) e += db * b->write_pj_per_byte, any = true;
    if (x->edge >= 0) e += bytes * g->edges[x->edge].pj_per_byte, any |= g->edges[x->edge].pj_per_byte > 0;
  }
  e += map_gemm_applies(s) ? gemm_reads_pj(s) : issue_reads_pj(s, issues);
  e += epilogue_pj(s, &any);
  c->has_energy = any;
  c->energy_pj = any && isfinite(e) ? e : 0;
}
