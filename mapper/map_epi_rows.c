/* mapper/map_epi_rows.c: the epilogue around an output-stationary array's
 * drains, where its SIMD unit copies each accumulator tile out: a tile's
 * epilogue dealt out between the next tile's drains (map_epi_spread), in
 * instructions of a few rows (map_epi_vop_rows), and softmax's row max from
 * the maxes the drains write (map_epi_drain_max, ACG "fused": "row_max").
 * Split from map_epilogue.c. */
#include "mapper/map_internal.h"

/* Whether an output-stationary array's latency is at most half the
 * reduction it streams per tile: where it is longer (npu-32x32-os: 64
 * cycles against attn_qk's 64 k steps) each drain waits for it and the
 * array for the drain's copy, one after the other, which the cost model's
 * overlap of the two does not charge (attn_qk there: 60,306 predicted,
 * 98,710 simulated with softmax dealt out between the drains). Softmax's
 * drains then stay as they were (map_epi_spread, map_epi_drain_max). */
static bool rows_os_short(const map_schedule *s) {
  const map_problem *p = &s->prob;
  double k = 1;
  for (int l = 0; l < p->n_loops; l++)
    if (p->reduction[l]) k *= (double)p->extent[l];
  const acg_compute *cn = &s->acg->compute[s->node - s->acg->n_storage];
  return 2 * (double)cn->caps[s->cap].latency <= k;
}

int64_t map_epi_spread(const map_schedule *s) {
  const map_problem *p = &s->prob;
  int o = p->output;
  if (s->n_vops == 0 || s->n_levels < 3 || !s->place[o][1].present || !s->place[o][2].present ||
      !s->place[o][1].double_buffered || map_epi_per_subtile(s) || s->vops[0].node < 0 ||
      s->vops[0].node == s->node)
    return 0;
  int64_t l1 = 0, l2 = 0;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    if (x->operand != o || x->dir != MAP_STORE) continue;
    if (x->level == 1) l1 = x->count;
    if (x->level == 2) l2 = x->count;
  }
  int64_t per = l1 > 0 ? l2 / l1 : 0;
  if (per < MAP_EPI_SPREAD_DRAINS || !map_gemm_applies(s)) return 0;
  /* row reductions too (softmax, bert_base_attn_qk on npu-16x16-os: the
   * next tile's eight drains had queued behind its row max, exp, and
   * scale): the tile's row registers are touched by its own ops only, which
   * keep their order, and the next tile's ops come after them */
  /* one GEMM's output per level-2 tile (its loops over the output all in
   * the GEMM): the next drain then waits for this one's copy only, not for
   * several chains' (npu-32x32-os's [10, 3, 15] tiles of three chains held
   * the array for the latency and all the copies either way) */
  map_gemm_plan gp;
  map_gemm_plan_make(s, &gp);
  /* a row reduction's epilogue (softmax) is dealt out only where one GEMM
   * fills the level-2 tile: npu-32x32-os's [16, 64] tiles of two column
   * chains held the array for the latency and the copy of each, and the
   * dealt-out exps between the drains made attn_qk 71,287 -> 93,164 cycles */
  bool rows_reduced = false;
  for (int v = 0; v < s->n_vops; v++) rows_reduced |= s->vops[v].kind == MAP_VOP_ROW_REDUCE;
  if (rows_reduced && ((double)s->place[o][2].elems > (double)gp.mmax * (double)gp.nmax || !rows_os_short(s)))
    return 0;
  const map_operand *out = &p->operands[o];
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->level < 2 || p->reduction[sl->loop] || map_gemm_absorbs(&gp, i) || sl->trips <= 1) continue;
    for (int d = 0; d < out->rank; d++)
      if (out->acc.coef[d][sl->loop]) return 0;
  }
  return per;
}

/* The bytes of map_epi_drain_max's chunk maxes for n chunks: one value per
 * row of the level-1 tile and chunk, rounded up to MAP_PLACE_ALIGN. */
static uint64_t pmax_bytes(const map_schedule *s, int64_t n, int l) {
  const map_place *pl = &s->place[s->prob.output][1];
  uint64_t rows = 1;
  for (int k = 0; k < s->prob.n_loops; k++)
    if (!s->prob.reduction[k] && k != l) rows *= (uint64_t)pl->tile[k];
  uint64_t b = rows * (uint64_t)n * 4;
  return (b + MAP_PLACE_ALIGN - 1) / MAP_PLACE_ALIGN * MAP_PLACE_ALIGN;
}

int64_t map_epi_drain_max(const map_schedule *s) {
  const map_problem *p = &s->prob;
  int o = p->output;
  const cov_acg *g = s->acg;
  if (s->n_vops == 0 || s->n_levels < 3 || !g || !s->place[o][1].present || !s->place[o][2].present)
    return 0;
  for (int lv = 3; lv < s->n_levels; lv++)
    if (s->place[o][lv].present) return 0;
  for (int i = 0; i < s->n_xfers; i++) /* drains of final sums, none loaded back */
    if (s->xfers[i].operand == o && s->xfers[i].level >= 2 && s->xfers[i].dir == MAP_LOAD) return 0;
  const map_vop *v = &s->vops[0];
  if (v->kind != MAP_VOP_ROW_REDUCE || v->op != COV_OP_MAX || v->a.kind != MAP_VS_REG || v->a.index != 0 ||
      v->node < 0 || v->node == s->node || map_epi_per_subtile(s) || !rows_os_short(s))
    return 0;
  const map_place *p1 = &s->place[o][1], *p2 = &s->place[o][2];
  int l = v->loop;
  if (p1->dtype != p2->dtype || !cov_dtype_is_float(p1->dtype) || p2->tile[l] <= 0 ||
      p2->tile[l] >= p1->tile[l] || p1->tile[l] % p2->tile[l] || p1->tile[l] != p->extent[l])
    return 0;
  /* the drain copy's columns must be the row: the loop's output dim is the
   * innermost dim of the accumulator tile longer than 1 */
  const map_operand *out = &p->operands[o];
  int dl = -1;
  for (int d = 0; d < out->rank; d++)
    if (out->acc.coef[d][l] == 1) dl = d;
  if (dl < 0 || map_vop_cols_dim(out->rank, p2->shape) != dl) return 0;
  int cap = -1, mover = map_onchip_mover(g, p2->node, p1->node, p2->dtype, p1->dtype, &cap);
  if (mover < 0 || g->n_storage + mover != v->node || !(g->compute[mover].caps[cap].fused & ACG_FUSE_ROW_MAX))
    return 0;
  /* room for the chunk maxes above the epilogue's registers */
  int64_t n = p1->tile[l] / p2->tile[l];
  if (s->epi_node != p1->node) return 0;
  map_epi_layout lay;
  map_epi_plan(s, s->epi_in_place, p1->tile, &lay);
  uint64_t used = s->epi_addr + (uint64_t)lay.elems * cov_dtype_size(s->acc_dtype ? s->acc_dtype : COV_F32);
  if (!map_fits(g, p1->node, used + pmax_bytes(s, n, l) + MAP_PLACE_ALIGN)) return 0;
  return n;
}

int64_t map_epi_vop_rows(const map_schedule *s, const map_vop *v) {
  const int64_t *box = map_epi_box(s);
  if (v->kind != MAP_VOP_MAP || v->node < 0 || !box || map_epi_spread(s) <= 0) return 0;
  const map_operand *out = &s->prob.operands[s->prob.output];
  int cd = map_vop_cols_dim(out->rank, box);
  if (v->row_sum) cd = -1;
  for (int d = 0; d < out->rank && cd < 0; d++) /* a row sum's columns are its row */
    if (out->acc.coef[d][v->loop] == 1) cd = d;
  double thr = s->acg->compute[v->node - s->acg->n_storage].caps[v->cap].throughput;
  int64_t rows = cd >= 0 && box[cd] > 0 ? (int64_t)(MAP_EPI_SPREAD_CYCLES * (thr > 0 ? thr : 1) / (double)box[cd]) : 1;
  return rows > 1 ? rows : 1;
}

void map_epi_pmax(const map_schedule *s, uint64_t *addr, uint64_t *bytes) {
  int64_t n = map_epi_drain_max(s);
  *bytes = n > 0 ? pmax_bytes(s, n, s->vops[0].loop) : 0;
  uint64_t cap_b = n > 0 ? s->acg->storage[s->place[s->prob.output][1].node].capacity_bytes : 0;
  *addr = n > 0 ? (cap_b - *bytes) / MAP_PLACE_ALIGN * MAP_PLACE_ALIGN : 0;
}

