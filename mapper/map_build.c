/* mapper/map_build.c: a whole schedule from one mapping decision
 * (map_choice): scheduled loops with steps, per-level tiles and places, a
 * static allocation per storage node, and the transfers with their positions
 * and counts. Tiles that do not fit make the choice invalid (return -1).
 *
 * map_build turns one choice into a schedule in stages (scheduled loops,
 * steps, tiles, places, the epilogue's temporaries, transfers), each its
 * own function over the loop and tile tables.
 */
#include <string.h>

#include "mapper/map_internal.h"

/* Bytes are counted per storage node id below this (the search's capacity
 * cut and the layout). */
#define USED_NODES (ACG_MAX_NODES > 256 ? 256 : ACG_MAX_NODES)

void map_tile_box(const map_operand *op, int n_loops, const int64_t *tile, int64_t *shape) {
  for (int d = 0; d < op->acc.rank; d++) {
    int64_t e = 1;
    for (int l = 0; l < n_loops; l++) {
      int64_t c = op->acc.coef[d][l];
      e += (c < 0 ? -c : c) * (tile[l] - 1);
    }
    /* a tile never needs more than the tensor (broadcast dims have coef 0) */
    shape[d] = e;
  }
}

/* A compute node relays data only if it can copy it (a SIMD unit with the
 * `copy` capability); an array computes, it does not forward tiles. */
static bool relays(const cov_acg *g, int node) {
  if (acg_is_storage(g, node)) return true;
  const acg_compute *c = &g->compute[node - g->n_storage];
  for (int k = 0; k < c->n_caps; k++)
    if (c->caps[k].op == COV_OP_COPY) return true;
  return false;
}

/* Whether data can be moved from node `from` to node `to` along the ACG's
 * directed edges (bidirectional ones both ways) through relaying nodes.
 * Partial sums that leave an accumulator level may only come back where such
 * a path exists (npu-32x32-os: acc -> vec -> ubuf, and no way back into acc). */
static bool flows(const cov_acg *g, int from, int to) {
  int n = acg_n_nodes(g);
  if (n > ACG_MAX_NODES) return false;
  bool seen[ACG_MAX_NODES] = {false};
  int queue[ACG_MAX_NODES], head = 0, tail = 0;
  queue[tail++] = from;
  seen[from] = true;
  while (head < tail) {
    int u = queue[head++];
    if (u == to) return true;
    for (int e = 0; e < g->n_edges; e++) {
      const acg_edge *E = &g->edges[e];
      int v = E->from == u ? E->to : (E->bidirectional && E->to == u ? E->from : -1);
      if (v >= 0 && !seen[v] && (v == to || relays(g, v))) {
        seen[v] = true;
        queue[tail++] = v;
      }
    }
  }
  return false;
}

/* The scheduled loops of one level, outermost first (steps not set): the
 * level's loops in the order the choice gives; level 0 keeps reductions
 * innermost so that the outermost on-chip output tile sees its whole
 * reduction (the epilogue and the DRAM store happen once per tile);
 * workgroups sit at level 0 between the output loops and the reductions,
 * waves outermost at level 1. An NPU's cores (map_cores) may also be the
 * outermost loops (ch->wg_outer): each core runs its slice as its own
 * program, and every tile in a core's buffers is loaded inside the
 * workgroup loops (build_xfer), so below the output loops they reload a
 * tile the core's slice could keep on chip across them (bert_base_ffn1 on
 * npu-64x64-bf16 at 192 B/cycle of DRAM: its whole-k activation tile once
 * per weight tile, 48 times, and 2 cores simulated slower than one). Loops
 * of one trip are left out. The search's bounds read the same sequence, so both
 * agree on where transfers go. */
int map_level_sloops(const map_target *t, const map_problem *p, const map_choice *ch, int lv,
                     map_sloop *out, int max) {
  int L = t->n_levels, k = 0;
  int order[MAP_MAX_LOOPS], n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < p->n_loops; i++) {
      int l = ch->order[lv][i];
      if (lv == 0 && (pass == 0) == p->reduction[l]) continue;
      if (lv != 0 && pass == 1) continue;
      order[n++] = l;
    }
  for (int i = 0; i <= n; i++) {
    bool wg_here = lv == 0 && (ch->wg_outer ? i == 0
                                            : (i == n || p->reduction[order[i]]) &&
                                                  (i == 0 || !p->reduction[order[i - 1]]));
    if ((wg_here || (lv == 1 && i == 0)) && L > 1)
      for (int l = 0; l < p->n_loops; l++) {
        int64_t f = lv == 0 ? ch->wg[l] : ch->wave[l];
        if (f <= 1) continue;
        if (k >= max) return -1;
        out[k++] = (map_sloop){l, lv, true, lv == 0 ? MAP_AX_WORKGROUP : MAP_AX_WAVE, f, 0};
      }
    if (i == n) break;
    int l = order[i];
    if (ch->fac[lv][l] <= 1) continue;
    if (k >= max) return -1;
    out[k++] = (map_sloop){l, lv, false, MAP_AX_NONE, ch->fac[lv][l], 0};
  }
  return k;
}

/* The element type of operand o's tile at level lv: the model's in DRAM; on
 * chip, the multiplicand type for mac inputs, the accumulator type for the
 * output, the model's for the rest. */
cov_dtype map_place_dtype(const map_target *t, const map_problem *p, int o, int lv) {
  const map_operand *op = &p->operands[o];
  if (lv == 0) return op->dtype;
  if (op->role == MAP_ROLE_INPUT) return p->kind == MAP_MAIN_MAC ? t->mul_dtype : op->dtype;
  return op->role == MAP_ROLE_OUTPUT ? t->acc_dtype : op->dtype;
}

/* Bytes one transfer of operand o into (or out of) level lv moves for a tile
 * of `elems` elements: inputs in their type at level lv (the NPU program
 * holds a narrowed input in DRAM in its tiles' type: cov_npu_compile); the output
 * leaves level 1 for DRAM in the model's type, pooled by the epilogue, and
 * moves between on-chip levels as accumulators. */
uint64_t map_xfer_bytes(const map_target *t, const map_schedule *s, int o, int lv, int64_t elems) {
  const map_problem *p = &s->prob;
  if (p->operands[o].role != MAP_ROLE_OUTPUT)
    return (uint64_t)elems * cov_dtype_size(map_place_dtype(t, p, o, lv));
  if (lv >= 2) return (uint64_t)elems * cov_dtype_size(map_place_dtype(t, p, o, lv));
  uint64_t bytes = (uint64_t)elems * cov_dtype_size(p->operands[o].dtype);
  for (int v = 0; v < s->n_vops; v++)
    if (s->vops[v].kind == MAP_VOP_POOL)
      bytes /= (uint64_t)(s->vops[v].window[0] * s->vops[v].window[1]);
  return bytes;
}

/* The on-chip places, in operand then level order (each buffer's halves
 * together), then the epilogue's temporaries, each node from address 0:
 * with every place and half on a multiple of `align`. */
static bool lay_out(const cov_acg *g, map_schedule *s, uint64_t align) {
  const map_problem *p = &s->prob;
  uint64_t used[USED_NODES];
  memset(used, 0, sizeof used);
  for (int o = 0; o < p->n_operands; o++)
    for (int l = 1; l < s->n_levels; l++) {
      map_place *pl = &s->place[o][l];
      if (!pl->present) continue;
      pl->bytes = (pl->bytes + align - 1) / align * align;
      pl->addr = used[pl->node];
      used[pl->node] += pl->bytes * (pl->double_buffered ? 2 : 1);
      if (!map_fits(g, pl->node, used[pl->node])) return false;
    }
  if (s->epi_node >= 0 && s->n_levels > 1) {
    s->epi_addr = used[s->epi_node];
    if (!map_fits(g, s->epi_node, used[s->epi_node] + s->epi_bytes)) return false;
  }
  return true;
}

/* Lays the places out on MAP_PLACE_ALIGN where the storage has room for
 * that, else packed (a tiny test ACG's 128-byte register file). k digits
 * pad A's layout, an output-stationary array B's (map_gemm_tile_strides):
 * such a tile then spans more than its box. */
static int place_all(const map_target *t, map_schedule *s, const char **why) {
  const map_problem *p = &s->prob;
  if (map_gemm_applies(s)) {
    map_gemm_plan gp;
    map_gemm_plan_make(s, &gp);
    for (int k = 0; k < 2; k++) {
      int o = k ? gp.b_op : gp.a_op, lv = s->n_levels - 1;
      while (lv > 0 && !s->place[o][lv].present) lv--;
      map_place *pa = &s->place[o][lv];
      if (lv > 0 && (k ? gp.output_stationary : gp.n_kd > 1)) {
        uint64_t span = (uint64_t)map_gemm_tile_elems(s, &gp, o, lv) * cov_dtype_size(pa->dtype);
        if (span > pa->bytes) pa->bytes = span;
      }
    }
  }
  uint64_t packed[MAP_MAX_OPERANDS][MAP_MAX_LEVELS];
  for (int o = 0; o < p->n_operands; o++)
    for (int l = 0; l < s->n_levels; l++) packed[o][l] = s->place[o][l].bytes;
  if (lay_out(t->acg, s, MAP_PLACE_ALIGN)) return 0;
  for (int o = 0; o < p->n_operands; o++)
    for (int l = 0; l < s->n_levels; l++) s->place[o][l].bytes = packed[o][l];
  if (lay_out(t->acg, s, 1)) return 0;
  if (why) *why = "tiles exceed a storage capacity";
  return -1;
}

/* The scheduled loops: each level's temporal loops (and the rectangles'
 * loop where the schedule has them), then the spatial ones innermost at
 * the last level. */
static int build_sloops(const map_target *t, const map_choice *ch, map_schedule *s, bool rect, const char **why) {
  const map_problem *p = &s->prob;
  int L = t->n_levels;
  for (int lv = 0; lv < L; lv++) {
    int n = map_level_sloops(t, p, ch, lv, s->sloops + s->n_sloops, MAP_MAX_SLOOPS - s->n_sloops);
    if (n < 0 || (rect && lv == s->rect_level && s->n_sloops + n >= MAP_MAX_SLOOPS)) {
      if (why) *why = "too many scheduled loops";
      return -1;
    }
    s->n_sloops += n;
    if (rect && lv == s->rect_level) {
      s->rect_sloop = s->n_sloops;
      s->sloops[s->n_sloops++] = (map_sloop){s->rect_loop[0], lv, false, MAP_AX_NONE, s->n_rects, 0};
    }
  }
  for (int ax = MAP_AX_ROWS; ax <= MAP_AX_LANES; ax++)
    for (int l = 0; l < p->n_loops; l++) {
      if (ch->sp[l] <= 1 || ch->sp_axis[l] != (map_axis)ax) continue;
      map_sloop *sl = &s->sloops[s->n_sloops++];
      sl->loop = l;
      sl->level = L - 1;
      sl->spatial = true;
      sl->axis = (map_axis)ax;
      sl->trips = ch->sp[l];
    }
  return 0;
}

/* Each scheduled loop's step, from the inside out; the factors of a loop
 * must multiply to its extent. */
static int build_steps(map_schedule *s, bool rect, const char **why) {
  const map_problem *p = &s->prob;
  int64_t inner[MAP_MAX_LOOPS];
  for (int l = 0; l < p->n_loops; l++) inner[l] = 1;
  for (int i = s->n_sloops - 1; i >= 0; i--) {
    if (rect && i == s->rect_sloop) continue; /* step 0: the rectangles' origins */
    s->sloops[i].step = inner[s->sloops[i].loop];
    inner[s->sloops[i].loop] *= s->sloops[i].trips;
  }
  for (int l = 0; l < p->n_loops; l++)
    if (inner[l] != p->extent[l] && !(rect && (l == s->rect_loop[0] || l == s->rect_loop[1]))) {
      if (why) *why = "factors do not multiply to the extents";
      return -1;
    }
  return 0;
}

/* The tile of every loop at each level, and the epilogue's demands on the
 * level-1 output tile (whole rows for a row reduction, whole windows). */
static int build_tiles(const map_schedule *s, int L, bool rect, int64_t tile[][MAP_MAX_LOOPS], const char **why) {
  const map_problem *p = &s->prob;
  for (int lv = 0; lv < L; lv++) {
    for (int l = 0; l < p->n_loops; l++) tile[lv][l] = 1;
    for (int i = 0; i < s->n_sloops; i++)
      if (s->sloops[i].level >= lv && !(rect && i == s->rect_sloop))
        tile[lv][s->sloops[i].loop] *= s->sloops[i].trips;
    /* outside the rectangles: their loops whole */
    if (rect && lv <= s->rect_level)
      for (int d = 0; d < 2; d++) tile[lv][s->rect_loop[d]] = p->extent[s->rect_loop[d]];
  }
  for (int v = 0; v < s->n_vops; v++) {
    const map_vop *vo = &s->vops[v];
    if (vo->kind == MAP_VOP_ROW_REDUCE && L > 1 && tile[1][vo->loop] != p->extent[vo->loop]) {
      if (why) *why = "a row reduction needs whole rows on chip";
      return -1;
    }
    if (vo->kind == MAP_VOP_POOL && L > 1)
      for (int k = 0; k < 2; k++)
        if (tile[1][vo->pool_loop[k]] % vo->window[k]) {
          if (why) *why = "pooled tiles must hold whole windows";
          return -1;
        }
  }
  return 0;
}

/* Every operand's place at every level of its path, and the search's
 * capacity cut: the places packed, as place_all's fallback lays them out. */
static int build_places(const map_target *t, const map_choice *ch, map_schedule *s, bool rect,
                        int64_t tile[][MAP_MAX_LOOPS], uint64_t *used, const char **why) {
  const map_problem *p = &s->prob;
  for (int o = 0; o < p->n_operands; o++) {
    const map_operand *op = &p->operands[o];
    for (int lv = 0; lv < t->n_levels; lv++) {
      int node = t->path[o][lv];
      if (node < 0) continue;
      map_place *pl = &s->place[o][lv];
      if (rect && lv > s->rect_level && op->role != MAP_ROLE_OUTPUT &&
          (map_operand_depends(op, s->rect_loop[0]) || map_operand_depends(op, s->rect_loop[1]))) {
        if (why) *why = "only the output may have tiles inside the rectangles";
        return -1;
      }
      pl->present = true;
      pl->node = node;
      for (int l = 0; l < p->n_loops; l++) pl->tile[l] = tile[lv][l];
      if (lv == 0) {
        for (int d = 0; d < op->rank; d++) pl->shape[d] = op->shape[d];
      } else {
        map_tile_box(op, p->n_loops, tile[lv], pl->shape);
      }
      pl->dtype = map_place_dtype(t, p, o, lv);
      pl->elems = 1;
      for (int d = 0; d < op->rank; d++) pl->elems *= pl->shape[d];
      pl->bytes = (uint64_t)pl->elems * cov_dtype_size(pl->dtype);
      if (lv == 0) continue;
      const acg_storage *st = &t->acg->storage[node];
      pl->double_buffered = ch->dbuf && st->double_buffer;
      if (node >= USED_NODES) {
        if (why) *why = "storage node id out of range";
        return -1;
      }
      used[node] += pl->bytes * (pl->double_buffered ? 2 : 1);
      if (!map_fits(t->acg, node, used[node])) {
        if (why) *why = "tiles exceed a storage capacity";
        return -1;
      }
    }
  }
  return 0;
}

/* The epilogue's temporaries, after the places of their storage. */
static int build_epi_temps(const map_target *t, map_schedule *s, const int64_t *tile1, uint64_t *used,
                           const char **why) {
  s->epi_node = t->epi_node;
  s->epi_in_place = t->epi_in_place;
  s->epi_addr = s->epi_bytes = 0;
  if (t->epi_node < 0 || t->n_levels <= 1) return 0;
  int node = t->epi_node;
  if (node >= USED_NODES) {
    if (why) *why = "storage node id out of range";
    return -1;
  }
  s->epi_bytes = map_epi_bytes(t, s, tile1);
  used[node] += s->epi_bytes;
  if (!map_fits(t->acg, node, used[node])) {
    if (why) *why = "the epilogue's temporaries exceed a storage capacity";
    return -1;
  }
  return 0;
}

/* The transfers of operand o into level lv: after the outermost scheduled
 * loop it depends on (a tile in replicated storage is loaded by each
 * instance: inside the spatial loops that spread over those instances);
 * an output stores, and reloads its partial sums where a reduction loop
 * runs outside. */
static int build_xfer(const map_target *t, map_schedule *s, bool rect, int o, int lv, const char **why) {
  const map_problem *p = &s->prob;
  const map_operand *op = &p->operands[o];
  int after = -1;
  bool red_outside = false;
  for (int i = 0; i < s->n_sloops; i++) {
    if (s->sloops[i].level >= lv) break;
    if (map_operand_depends(op, s->sloops[i].loop) || s->sloops[i].spatial ||
        (rect && i == s->rect_sloop && map_operand_depends(op, s->rect_loop[1])))
      after = i;
  }
  int64_t count = 1;
  for (int i = 0; i <= after; i++) {
    count *= s->sloops[i].trips;
    if (p->reduction[s->sloops[i].loop]) red_outside = true;
  }
  if (s->n_xfers + 2 > MAP_MAX_XFERS) {
    if (why) *why = "too many transfers";
    return -1;
  }
  int outer = s->place[o][lv - 1].node, here = s->place[o][lv].node;
  uint64_t bytes = map_xfer_bytes(t, s, o, lv, s->place[o][lv].elems);
  if (op->role != MAP_ROLE_OUTPUT) {
    s->xfers[s->n_xfers++] = (map_xfer){o, MAP_LOAD, lv, outer, here, t->edge_in[o][lv], after, false, bytes, count};
    return 0;
  }
  if (lv >= 2 && red_outside) {
    if (!flows(t->acg, outer, here)) {
      if (why) *why = "partial sums would have to return to an accumulator level no ACG path reaches";
      return -1;
    }
    uint64_t pb = (uint64_t)s->place[o][lv].elems * cov_dtype_size(s->place[o][lv].dtype);
    s->xfers[s->n_xfers++] = (map_xfer){o, MAP_LOAD, lv, outer, here, t->edge_in[o][lv], after, true, pb, count};
  }
  s->xfers[s->n_xfers++] = (map_xfer){o, MAP_STORE, lv, here, outer, t->edge_in[o][lv], after, false, bytes, count};
  return 0;
}

int map_build(const map_target *t, const map_schedule *proto, const map_choice *ch,
              map_schedule *s, const char **why) {
  *s = *proto;
  int L = t->n_levels;
  s->acg = t->acg;
  s->node = t->node;
  s->cap = t->cap;
  s->mul_dtype = t->mul_dtype;
  s->acc_dtype = t->acc_dtype;
  s->narrowed = t->narrowed;
  s->n_levels = L;
  s->n_sloops = 0;
  s->n_xfers = 0;
  s->epi_chunk = 0;
  s->epi_chunk_dim = -1;
  bool rect = s->n_rects > 0; /* rectangular pixel tiles (map_ir.h, map_rect.c) */
  if (rect && (s->rect_level < 0 || s->rect_level >= L - 1)) {
    if (why) *why = "rectangle loop at a bad level";
    return -1;
  }
  int64_t tile[MAP_MAX_LEVELS][MAP_MAX_LOOPS];
  uint64_t used[USED_NODES];
  memset(used, 0, sizeof used);
  memset(s->place, 0, sizeof s->place);
  if (build_sloops(t, ch, s, rect, why) < 0 || build_steps(s, rect, why) < 0 ||
      build_tiles(s, L, rect, tile, why) < 0 || build_places(t, ch, s, rect, tile, used, why) < 0 ||
      build_epi_temps(t, s, tile[1], used, why) < 0)
    return -1;
  for (int lv = 1; lv < L; lv++)
    for (int o = 0; o < s->prob.n_operands; o++)
      if (s->place[o][lv].present && build_xfer(t, s, rect, o, lv, why) < 0) return -1;
  /* before the layout: a chunked epilogue puts its dim outermost */
  map_epi_chunk_plan(s);
  if (place_all(t, s, why) < 0) return -1;
  if (!map_bias_fits(s)) {
    if (why) *why = "a GEMM's streamed rows would need different preloaded biases";
    return -1;
  }
  map_cost_eval(s);
  return 0;
}
