/* mapper/map_walk.c: the walk over a schedule shared by the interpreter and
 * the NPU code generator (map_walk.h says why there is one). */
#include "mapper/map_walk.h"

#include <string.h>

void map_walk_init(map_walk *w, const map_schedule *s, const map_walk_ops *ops, void *ctx,
                   const cov_status *err) {
  memset(w, 0, sizeof *w);
  w->s = s;
  w->ops = ops;
  w->ctx = ctx;
  w->err = err;
}

static bool stopped(const map_walk *w) { return w->err && *w->err; }

static bool has_load(const map_schedule *s, int o, int lv) {
  for (int j = 0; j < s->n_xfers; j++)
    if (s->xfers[j].operand == o && s->xfers[j].level == lv && s->xfers[j].dir == MAP_LOAD) return true;
  return false;
}

static void transfers_at(map_walk *w, int pos, bool top) {
  const map_schedule *s = w->s;
  /* loads outer level first; stores inner level first */
  for (int lv = top ? 1 : s->n_levels - 1; top ? lv < s->n_levels : lv >= 1; lv += top ? 1 : -1)
    for (int i = 0; i < s->n_xfers && !stopped(w); i++) {
      const map_xfer *x = &s->xfers[i];
      if (x->after != pos || x->level != lv) continue;
      int o = x->operand;
      bool out = s->prob.operands[o].role == MAP_ROLE_OUTPUT;
      if (top && x->dir == MAP_LOAD) {
        w->parity[o][lv]++;
        w->ops->load(w, o, lv);
      }
      /* an output tile starts from init unless a partial-sum load brings it */
      if (top && out && x->dir == MAP_STORE && !has_load(s, o, lv)) {
        w->parity[o][lv]++;
        if (w->ops->fresh) w->ops->fresh(w, o, lv);
      }
      if (!top && x->dir == MAP_STORE) w->ops->store(w, o, lv);
    }
}

static void walk(map_walk *w, int i) {
  if (stopped(w)) return;
  if (i == w->s->n_sloops) {
    w->ops->leaf(w);
    return;
  }
  if (w->ops->folded && w->ops->folded(w, i)) {
    w->iter[i] = 0;
    walk(w, i + 1);
    return;
  }
  int64_t n = map_walk_trips(w, i), it0 = 0;
  if (w->one_core && w->s->sloops[i].axis == MAP_AX_WORKGROUP) {
    it0 = w->core_iter[i];
    n = it0 + 1;
  }
  for (int64_t it = it0; it < n && !stopped(w); it++) {
    w->iter[i] = it;
    transfers_at(w, i, true);
    walk(w, i + 1);
    transfers_at(w, i, false);
  }
  w->iter[i] = 0;
}

int64_t map_walk_cores(const map_schedule *s) {
  int64_t n = 1;
  for (int i = 0; i < s->n_sloops; i++)
    if (s->sloops[i].axis == MAP_AX_WORKGROUP) n *= s->sloops[i].trips;
  return n;
}

void map_walk_set_core(map_walk *w, int64_t core) {
  w->one_core = true;
  for (int i = w->s->n_sloops - 1; i >= 0; i--) {
    w->core_iter[i] = 0;
    if (w->s->sloops[i].axis != MAP_AX_WORKGROUP) continue;
    w->core_iter[i] = core % w->s->sloops[i].trips;
    core /= w->s->sloops[i].trips;
  }
}

void map_walk_run(map_walk *w) {
  transfers_at(w, -1, true);
  walk(w, 0);
  if (!stopped(w)) transfers_at(w, -1, false);
}

void map_walk_values(const map_walk *w, int below_level, int64_t *v) {
  const map_schedule *s = w->s;
  for (int l = 0; l < s->prob.n_loops; l++) v[l] = 0;
  for (int i = 0; i < s->n_sloops; i++) {
    if (s->sloops[i].level >= below_level) continue;
    if (s->n_rects > 0 && i == s->rect_sloop) {
      const map_rect *r = &s->rects[w->iter[i]];
      v[s->rect_loop[0]] += r->org[0];
      v[s->rect_loop[1]] += r->org[1];
    } else {
      v[s->sloops[i].loop] += w->iter[i] * s->sloops[i].step;
    }
  }
}

int64_t map_walk_trips(const map_walk *w, int i) {
  const map_schedule *s = w->s;
  if (!map_rect_inner(s, i)) return s->sloops[i].trips;
  const map_rect *r = &s->rects[w->iter[s->rect_sloop]];
  return r->ext[s->sloops[i].loop == s->rect_loop[0] ? 0 : 1];
}

bool map_walk_in_rect(const map_schedule *s, int o, int lv) {
  return s->n_rects > 0 && lv > s->rect_level && s->place[o][lv].present;
}

void map_walk_box(const map_walk *w, int o, int lv, int64_t *shape) {
  const map_schedule *s = w->s;
  if (map_walk_in_rect(s, o, lv)) {
    map_rect_box(s, o, lv, (int)w->iter[s->rect_sloop], shape);
    return;
  }
  for (int d = 0; d < s->prob.operands[o].rank; d++) shape[d] = s->place[o][lv].shape[d];
}

void map_walk_index_of(const map_operand *o, const int64_t *v, int n_loops, int64_t *idx) {
  for (int d = 0; d < o->rank; d++) {
    int64_t x = o->acc.off[d];
    for (int l = 0; l < n_loops; l++) x += o->acc.coef[d][l] * v[l];
    idx[d] = x;
  }
}

void map_walk_tile_base(const map_walk *w, int o, int lv, int64_t *base) {
  const map_problem *p = &w->s->prob;
  const map_operand *op = &p->operands[o];
  int64_t v[MAP_MAX_LOOPS];
  map_walk_values(w, lv, v);
  const int64_t *t = w->s->place[o][lv].tile;
  for (int d = 0; d < op->rank; d++) {
    int64_t x = op->acc.off[d];
    for (int l = 0; l < p->n_loops; l++) {
      int64_t k = op->acc.coef[d][l];
      x += k * v[l];
      /* a negative coefficient (a flipped index) starts the box at the
       * tile's last value */
      if (k < 0) x += k * (t[l] - 1);
    }
    base[d] = x;
  }
}

uint64_t map_walk_place_addr(const map_walk *w, int o, int lv) {
  const map_place *pl = &w->s->place[o][lv];
  uint64_t half = pl->double_buffered ? (uint64_t)(w->parity[o][lv] & 1) : 0;
  return pl->addr + half * pl->bytes;
}

int map_walk_deepest(const map_schedule *s, int o) {
  int lv = s->n_levels - 1;
  while (lv > 0 && !s->place[o][lv].present) lv--;
  return lv;
}
