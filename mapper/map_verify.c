/* mapper/map_verify.c: checks a schedule's invariants (map_ir.h), so that a
 * code generator may trust it: divisor-based tiling, steps, spatial loops
 * within the unit counts, places within capacities and not overlapping,
 * the epilogue's temporaries within their storage's capacity, transfers
 * along ACG edges and placed where their tile changes.
 */
#include <string.h>

#include "mapper/map_internal.h"
#include "common/loc.h"

#define FAIL(...) return cov_error(COV_INTERNAL, COV_AT(NULL, ln), "schedule of %s: " __VA_ARGS__)

/* Rectangular pixel tiles (map_ir.h): one loop over them at rect_level,
 * no other tiling of their two loops outside it, the nominal tile inside,
 * and rectangles that cover the two loops' extents exactly once, each no
 * larger than the places inside hold. */
static cov_status rect_check(const map_schedule *s) {
  const map_problem *p = &s->prob;
  const char *ln = p->layer;
  if (s->n_rects < 2 || s->n_rects > MAP_MAX_RECTS || s->rect_sloop < 0 || s->rect_sloop >= s->n_sloops ||
      s->rect_nominal < 0 || s->rect_nominal >= s->n_rects)
    FAIL("bad rectangle list", ln);
  int l0 = s->rect_loop[0], l1 = s->rect_loop[1];
  if (l0 < 0 || l0 >= p->n_loops || l1 < 0 || l1 >= p->n_loops || l0 == l1)
    FAIL("bad rectangle loops", ln);
  const map_sloop *rs = &s->sloops[s->rect_sloop];
  if (rs->loop != l0 || rs->level != s->rect_level || rs->trips != s->n_rects || rs->step != 0 || rs->spatial)
    FAIL("loop %d does not iterate the %d rectangles", ln, s->rect_sloop, s->n_rects);
  const map_rect *nom = &s->rects[s->rect_nominal];
  int64_t inside[2] = {1, 1};
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (i == s->rect_sloop || (sl->loop != l0 && sl->loop != l1)) continue;
    if (i < s->rect_sloop || sl->spatial) FAIL("loop %d tiles a rectangle loop outside the rectangles", ln, i);
    inside[sl->loop == l0 ? 0 : 1] *= sl->trips;
  }
  if (inside[0] != nom->ext[0] || inside[1] != nom->ext[1])
    FAIL("the tile inside the rectangles is not the nominal %lldx%lld", ln, (long long)nom->ext[0],
         (long long)nom->ext[1]);
  int64_t area = 0;
  for (int i = 0; i < s->n_rects; i++) {
    const map_rect *a = &s->rects[i];
    for (int d = 0; d < 2; d++)
      if (a->ext[d] < 1 || a->org[d] < 0 || a->org[d] + a->ext[d] > p->extent[s->rect_loop[d]])
        FAIL("rectangle %d is outside the loops' extents", ln, i);
    if (a->ext[0] * a->ext[1] > nom->ext[0] * nom->ext[1])
      FAIL("rectangle %d is larger than the nominal tile", ln, i);
    for (int j = 0; j < i; j++) {
      const map_rect *b = &s->rects[j];
      if (a->org[0] < b->org[0] + b->ext[0] && b->org[0] < a->org[0] + a->ext[0] &&
          a->org[1] < b->org[1] + b->ext[1] && b->org[1] < a->org[1] + a->ext[1])
        FAIL("rectangles %d and %d overlap", ln, j, i);
    }
    area += a->ext[0] * a->ext[1];
  }
  if (area != p->extent[l0] * p->extent[l1]) FAIL("the rectangles do not cover the loops' extents", ln);
  for (int o = 0; o < p->n_operands; o++) {
    const map_operand *op = &p->operands[o];
    for (int lv = 1; lv < s->n_levels; lv++) {
      const map_place *pl = &s->place[o][lv];
      if (!pl->present) continue;
      bool dep = map_operand_depends(op, l0) || map_operand_depends(op, l1);
      if (lv <= s->rect_level && dep && (pl->tile[l0] != p->extent[l0] || pl->tile[l1] != p->extent[l1]))
        FAIL("%s's level-%d tile is not whole along the rectangle loops", ln, op->name, lv);
      if (lv > s->rect_level && dep && op->role != MAP_ROLE_OUTPUT)
        FAIL("%s has a tile inside the rectangles", ln, op->name);
    }
  }
  return NULL;
}

/* Divisor-based tiling and steps, loop order, and spatial loops within the
 * unit counts of compute node cn. */
static cov_status check_loops(const map_schedule *s, const acg_compute *cn) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const char *ln = p->layer;
  int64_t prod[MAP_MAX_LOOPS];
  for (int l = 0; l < p->n_loops; l++) prod[l] = 1;
  int64_t used_axis[MAP_AX_COUNT];
  for (int a = 0; a < MAP_AX_COUNT; a++) used_axis[a] = 1;
  bool rect = s->n_rects > 0;
  if (rect) {
    cov_status rs = rect_check(s);
    if (rs) return rs;
  }
  for (int i = s->n_sloops - 1; i >= 0; i--) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->loop < 0 || sl->loop >= p->n_loops) FAIL("loop %d: bad problem loop", ln, i);
    if (sl->trips < 2) FAIL("loop %d has %lld trips", ln, i, (long long)sl->trips);
    if (rect && i == s->rect_sloop) continue; /* checked by rect_check */
    if (sl->step != prod[sl->loop])
      FAIL("loop %d (%s) has step %lld, expected %lld", ln, i, p->loop_name[sl->loop],
           (long long)sl->step, (long long)prod[sl->loop]);
    prod[sl->loop] *= sl->trips;
    if (sl->spatial != (sl->axis != MAP_AX_NONE)) FAIL("loop %d: spatial without axis", ln, i);
    if (sl->spatial) used_axis[sl->axis] *= sl->trips;
  }
  for (int i = 1; i < s->n_sloops; i++) {
    if (s->sloops[i].level < s->sloops[i - 1].level) FAIL("loop %d: levels out of order", ln, i);
    if (s->sloops[i - 1].spatial && !s->sloops[i].spatial && s->sloops[i].level == s->n_levels - 1 &&
        s->sloops[i - 1].level == s->n_levels - 1 && s->sloops[i - 1].axis <= MAP_AX_LANES)
      FAIL("loop %d: temporal inside an array/lane loop", ln, i);
  }
  for (int l = 0; l < p->n_loops; l++)
    if (prod[l] != p->extent[l] && !(rect && (l == s->rect_loop[0] || l == s->rect_loop[1])))
      FAIL("loop %s: trip counts multiply to %lld, not its extent %lld (tiling must be "
           "divisor-based)",
           ln, p->loop_name[l], (long long)prod[l], (long long)p->extent[l]);
  uint64_t rows = cn->kind == ACG_SIMD ? cn->dims[0] : cn->caps[s->cap].tile[0];
  uint64_t cols = cn->kind == ACG_SIMD ? 1 : cn->caps[s->cap].tile[1];
  uint64_t lanes = cn->kind == ACG_SIMD ? rows : 1;
  acg_mac_form form;
  if (map_gemm_applies(s) && map_mac_tiles(g, s->node, s->cap, &form)) { /* k x n per instruction */
    rows = form.rows;
    cols = form.cols;
    lanes = 1;
  }
  if ((uint64_t)used_axis[MAP_AX_ROWS] > rows || (uint64_t)used_axis[MAP_AX_COLS] > cols ||
      (uint64_t)used_axis[MAP_AX_LANES] > lanes)
    FAIL("spatial loops use more units than %s has", ln, cn->name);
  if (used_axis[MAP_AX_WORKGROUP] > 1) {
    int l1 = s->place[0][1].node;
    if (!s->place[0][1].present || (uint64_t)used_axis[MAP_AX_WORKGROUP] > g->storage[l1].instances)
      FAIL("more workgroups than instances of the level-1 storage", ln);
    if ((uint64_t)(used_axis[MAP_AX_WORKGROUP] * used_axis[MAP_AX_WAVE]) > cn->instances)
      FAIL("more waves than instances of %s", ln, cn->name);
  }
  return NULL;
}

/* Places: in DRAM at level 0, within capacities, allowed double buffers,
 * shapes that agree with the accesses, disjoint allocations. */
static cov_status check_places(const map_schedule *s) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const char *ln = p->layer;
  for (int o = 0; o < p->n_operands; o++) {
    if (!s->place[o][0].present || g->storage[s->place[o][0].node].kind != ACG_DRAM)
      FAIL("operand %s is not in DRAM at level 0", ln, p->operands[o].name);
    for (int lv = 1; lv < s->n_levels; lv++) {
      const map_place *a = &s->place[o][lv];
      if (!a->present) continue;
      const acg_storage *st = &g->storage[a->node];
      uint64_t end = a->addr + a->bytes * (a->double_buffered ? 2 : 1);
      if (!map_fits(g, a->node, end))
        FAIL("%s's tile at level %d ends at byte %llu of %s (capacity %llu)", ln,
             p->operands[o].name, lv, (unsigned long long)end, st->name,
             (unsigned long long)st->capacity_bytes);
      if (a->double_buffered && !st->double_buffer)
        FAIL("%s is double-buffered in %s, which does not allow it", ln, p->operands[o].name, st->name);
      int64_t box[COV_MAX_RANK];
      map_tile_box(&p->operands[o], p->n_loops, a->tile, box);
      for (int d = 0; d < p->operands[o].rank; d++)
        if (box[d] != a->shape[d]) FAIL("%s's tile shape disagrees with its access", ln, p->operands[o].name);
      for (int o2 = 0; o2 < p->n_operands; o2++)
        for (int lv2 = 1; lv2 < s->n_levels; lv2++) {
          const map_place *b = &s->place[o2][lv2];
          if ((o2 == o && lv2 == lv) || !b->present || b->node != a->node) continue;
          uint64_t bend = b->addr + b->bytes * (b->double_buffered ? 2 : 1);
          if (a->addr < bend && b->addr < end)
            FAIL("%s and %s overlap in %s", ln, p->operands[o].name, p->operands[o2].name, st->name);
        }
    }
  }
  return NULL;
}

/* The epilogue's temporaries: as large as its layout needs for the
 * level-1 output tile, inside their storage, clear of every place there. */
static cov_status check_epilogue(const map_schedule *s) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const char *ln = p->layer;
  if (s->epi_node < 0 || s->epi_node >= g->n_storage || g->storage[s->epi_node].kind == ACG_DRAM)
    FAIL("the epilogue has no on-chip storage for its temporaries", ln);
  const acg_storage *st = &g->storage[s->epi_node];
  map_epi_layout lay;
  map_epi_plan(s, s->epi_in_place, s->place[p->output][1].tile, &lay);
  uint64_t need = (uint64_t)lay.elems * cov_dtype_size(s->acc_dtype);
  if (s->epi_bytes < need)
    FAIL("the epilogue's temporaries need %llu bytes of %s, the schedule reserves %llu", ln,
         (unsigned long long)need, st->name, (unsigned long long)s->epi_bytes);
  if (s->epi_in_place && s->place[p->output][1].node != s->epi_node)
    FAIL("epilogue register 0 is in place, but the output's level-1 tile is not in %s", ln,
         st->name);
  uint64_t end = s->epi_addr + s->epi_bytes;
  if (!map_fits(g, s->epi_node, end))
    FAIL("the epilogue's temporaries end at byte %llu of %s (capacity %llu)", ln,
         (unsigned long long)end, st->name, (unsigned long long)st->capacity_bytes);
  for (int o = 0; o < p->n_operands && s->epi_bytes; o++)
    for (int lv = 1; lv < s->n_levels; lv++) {
      const map_place *b = &s->place[o][lv];
      if (!b->present || b->node != s->epi_node) continue;
      uint64_t bend = b->addr + b->bytes * (b->double_buffered ? 2 : 1);
      if (s->epi_addr < bend && b->addr < end)
        FAIL("the epilogue's temporaries overlap %s in %s", ln, p->operands[o].name, st->name);
    }
  return NULL;
}

/* Transfers: operands, levels, edges, positions and counts. */
static cov_status check_xfers(const map_schedule *s) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const char *ln = p->layer;
  for (int i = 0; i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    if (x->operand < 0 || x->operand >= p->n_operands || x->level < 1 || x->level >= s->n_levels)
      FAIL("transfer %d: bad operand or level", ln, i);
    if (x->after >= s->n_sloops || (x->after >= 0 && s->sloops[x->after].level >= x->level))
      FAIL("transfer %d placed inside a loop of its own level", ln, i);
    if (x->edge < -1 || x->edge >= g->n_edges) FAIL("transfer %d: bad edge", ln, i);
    int64_t count = 1;
    for (int k = 0; k <= x->after; k++) count *= s->sloops[k].trips;
    if (count != x->count) FAIL("transfer %d: count %lld, expected %lld", ln, i,
                                (long long)x->count, (long long)count);
  }
  return NULL;
}

cov_status map_verify(const map_schedule *s) {
  const cov_acg *g = s->acg;
  const map_problem *p = &s->prob;
  const char *ln = p->layer;
  if (s->n_levels < 2 || s->n_levels > MAP_MAX_LEVELS) FAIL("%d levels", ln, s->n_levels);
  if (s->node < g->n_storage || s->node >= acg_n_nodes(g)) FAIL("bad compute node", ln);
  const acg_compute *cn = &g->compute[s->node - g->n_storage];
  if (s->cap < 0 || s->cap >= cn->n_caps || cn->caps[s->cap].op != p->op)
    FAIL("capability %d of %s does not run %s", ln, s->cap, cn->name, common_op_name(p->op));
  COV_RETURN_IF_ERROR(check_loops(s, cn));
  COV_RETURN_IF_ERROR(check_places(s));
  if (s->n_vops > 0 && s->n_levels > 1) COV_RETURN_IF_ERROR(check_epilogue(s));
  return check_xfers(s);
}
