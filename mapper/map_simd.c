/* mapper/map_simd.c: which scheduled loops one vector instruction covers
 * when a SIMD unit runs a layer's main statement (a map or a reduction).
 *
 * The NPU code generator emits one VOP over a rows loop x a columns loop
 * (npu_codegen.c leaf_simd), and the cost model charges those VOPs as the
 * simulator times them (ceil(rows x columns / throughput) cycles, the
 * operands' bytes over the edges, map_cost.c); both take the loops from
 * here. */
#include "mapper/map_internal.h"
#include "mapper/map_walk.h"

void map_simd_vop_loops(const map_schedule *s, int *rows, int *cols) {
  const map_problem *p = &s->prob;
  int last = s->n_levels - 1, ml = -1, nl = -1;
  int lv = map_walk_deepest(s, p->output), init_after = -1;
  for (int x = 0; x < s->n_xfers; x++)
    if (s->xfers[x].operand == p->output && s->xfers[x].level == lv && s->xfers[x].dir == MAP_STORE)
      init_after = s->xfers[x].after;
  /* columns: the lanes loop, else the innermost output loop; rows: the next
   * output loop of the last level (moving it inside the reduction loops
   * keeps each element's reduction order) */
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->level != last || p->reduction[sl->loop] || i <= init_after) continue;
    if (sl->spatial && sl->axis == MAP_AX_LANES) nl = i;
  }
  for (int i = s->n_sloops - 1; i >= 0; i--) {
    const map_sloop *sl = &s->sloops[i];
    if (sl->level != last || p->reduction[sl->loop] || i <= init_after || i == nl) continue;
    if (nl < 0) nl = i;
    else if (ml < 0) ml = i;
  }
  for (int x = 0; x < s->n_xfers; x++) {
    int a = s->xfers[x].after;
    if (a >= 0 && a == ml) ml = -1;
    if (a >= 0 && a == nl) nl = -1;
  }
  /* transfers between the rows loop and the statement would be reordered */
  for (int x = 0; x < s->n_xfers && ml >= 0; x++)
    if (s->xfers[x].after > ml) ml = -1;
  *rows = ml;
  *cols = nl;
}

double map_simd_reduce_steps(const map_schedule *s) {
  const map_problem *p = &s->prob;
  if (p->kind != MAP_MAIN_REDUCE) return 0;
  int lv = map_walk_deepest(s, p->output), init_after = -1;
  for (int x = 0; x < s->n_xfers; x++) {
    const map_xfer *xf = &s->xfers[x];
    if (xf->operand != p->output || xf->level != lv) continue;
    if (xf->dir == MAP_LOAD) return 0; /* partial results come back: no first step */
    if (xf->dir == MAP_STORE) init_after = xf->after;
  }
  double steps = 1;
  for (int i = init_after + 1; i < s->n_sloops; i++)
    if (p->reduction[s->sloops[i].loop]) steps *= (double)s->sloops[i].trips;
  return steps;
}
