/* mapper/map_api.c: the public API (include/covenant/mapper.h): extract the
 * problem and epilogue, bind them to the ACG, search, verify. */
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "common/loc.h"

cov_status map_prepare(const cov_layer *layer, const cov_acg *acg, map_schedule *proto,
                       map_target *t, cov_arena *arena) {
  return map_prepare_on(layer, acg, -1, proto, t, arena);
}

cov_status map_prepare_on(const cov_layer *layer, const cov_acg *acg, int only, map_schedule *proto,
                          map_target *t, cov_arena *arena) {
  int first = 1;
  COV_RETURN_IF_ERROR(map_extract(layer, proto, &first, arena));
  COV_RETURN_IF_ERROR(map_lower_epilogue(layer, first, proto, arena));
  COV_RETURN_IF_ERROR(map_bind_target_on(&proto->prob, acg, only, t));
  proto->acg = acg;
  proto->acc_dtype = t->acc_dtype;
  COV_RETURN_IF_ERROR(map_bind_epilogue(acg, proto));
  return map_bind_epilogue_storage(proto, t);
}

int64_t cov_layer_macs(const cov_layer *layer) {
  if (!layer || layer->n_calls < 1) return -1;
  cov_arena *a = cov_arena_create();
  map_schedule *s = a ? cov_arena_alloc(a, sizeof *s) : NULL;
  int64_t macs = -1;
  int first = 1;
  cov_status st = s ? map_extract(layer, s, &first, a) : NULL;
  if (s && !st) macs = s->prob.kind == MAP_MAIN_MAC && s->prob.op == COV_OP_MAC ? s->prob.ops : 0;
  cov_status_free(st);
  cov_arena_destroy(a);
  return macs;
}

/* One binding's search: the main statement on compute node `only` (-1: the
 * default rule); *units (when not NULL) receives the compute nodes the
 * layer's mac could bind to. */
static cov_status map_one(const cov_layer *layer, const cov_acg *acg, const cov_map_options *opt, int only,
                          int *units, double *floor, int *n_units, cov_schedule **out) {
  *out = NULL;
  cov_schedule *cs = calloc(1, sizeof *cs);
  if (!cs) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cs->arena = cov_arena_create();
  map_schedule *proto = calloc(1, sizeof *proto);
  map_target *t = calloc(1, sizeof *t);
  cov_status st = NULL;
  if (!cs->arena || !proto || !t) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = map_prepare_on(layer, acg, only, proto, t, cs->arena);
  if (!st && units) *n_units = map_mac_units(&proto->prob, acg, units, floor, MAP_MAX_COMPUTE);
  if (!st) st = map_search(t, proto, opt, cs);
  if (!st) st = map_rewrite_search(proto, t, opt, cs, map_dw_rewrite);
  if (!st) st = map_rewrite_search(proto, t, opt, cs, map_pad_rewrite);
  /* A preloaded bias only takes work off the SIMD unit: it is searched
   * where the epilogue is at least 40% of the best schedule's time.
   * Elsewhere it gains little and its schedules, which the cost model
   * ranks slightly ahead, can crowd out of the kept alternatives the one
   * that simulates fastest (shufflenet_v2's conv5: 114,048 -> 163,449). */
  bool epi_heavy = !st && cs->s.cost.epilogue_cycles >= 0.4 * cs->s.cost.cycles;
  if (!st && epi_heavy) st = map_rewrite_search(proto, t, opt, cs, map_bias_rewrite);
  if (!st && epi_heavy) st = map_rewrite_search(proto, t, opt, cs, map_pad_bias_rewrite);
  if (!st && epi_heavy) st = map_rewrite_search(proto, t, opt, cs, map_dw_bias_rewrite);
  if (!st) st = map_rect_search(proto, cs);
  if (!st) {
    st = map_verify(&cs->s);
    for (int i = 0; i < cs->n_alts && !st; i++) st = map_verify(&cs->alts[i]);
  }
  free(proto);
  free(t);
  if (st) {
    cov_schedule_free(cs);
    return st;
  }
  *out = cs;
  return NULL;
}

/* Every compute unit whose capability runs the layer's mac (map_units.c)
 * is searched, and the binding the cost model ranks cheapest is kept (ties:
 * the default rule's, arrays first). */
cov_status cov_map(const cov_layer *layer, const cov_acg *acg, const cov_map_options *opt,
                   cov_schedule **out) {
  *out = NULL;
  if (!layer || !acg) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_map"), "NULL layer or ACG");
  int units[MAP_MAX_COMPUTE], n_units = 0;
  double floor[MAP_MAX_COMPUTE];
  cov_schedule *best = NULL;
  COV_RETURN_IF_ERROR(map_one(layer, acg, opt, -1, units, floor, &n_units, &best));
  for (int i = 0; i < n_units; i++) {
    /* a unit whose MACs alone take longer than the best schedule's cycles
     * cannot do better (its cost model charges at least that) */
    if (units[i] == best->s.node || floor[i] >= best->s.cost.cycles) continue;
    cov_schedule *cs = NULL;
    cov_status st = map_one(layer, acg, opt, units[i], NULL, NULL, NULL, &cs);
    if (st && cov_status_code(st) != COV_MAPPING_FAILED) { /* out of memory, ... */
      cov_schedule_free(best);
      return st;
    }
    if (st) { /* a unit whose search finds no schedule: the others stand */
      cov_status_free(st);
      continue;
    }
    if (cs->s.cost.cycles < best->s.cost.cycles) {
      cov_schedule_free(best);
      best = cs;
    } else {
      cov_schedule_free(cs);
    }
  }
  *out = best;
  return NULL;
}

const map_schedule *map_schedule_of(const cov_schedule *s) { return &s->s; }

void cov_schedule_free(cov_schedule *s) {
  if (!s) return;
  cov_arena_destroy(s->arena);
  free(s);
}

double cov_schedule_cycles(const cov_schedule *s) { return s->s.cost.cycles; }
double cov_schedule_energy_pj(const cov_schedule *s) {
  return s->s.cost.has_energy ? s->s.cost.energy_pj : -1;
}
int64_t cov_schedule_evaluations(const cov_schedule *s) { return s->evaluations; }
int cov_schedule_narrowed(const cov_schedule *s) { return s->s.narrowed; }

cov_dtype cov_schedule_input_dtype(const cov_schedule *s, int input) {
  const map_schedule *ms = &s->s;
  cov_dtype dt = COV_F32;
  for (int o = 0; o < ms->prob.n_operands; o++)
    if (ms->prob.operands[o].role != MAP_ROLE_OUTPUT && ms->prob.operands[o].layer_input == input &&
        ms->place[o][1].present)
      dt = ms->place[o][1].dtype;
  return dt;
}

const char *cov_schedule_compute_node(const cov_schedule *s) {
  const cov_acg *g = s->s.acg;
  int k = s->s.node - g->n_storage;
  return k >= 0 && k < g->n_compute ? g->compute[k].name : "?";
}

double cov_schedule_utilization(const cov_schedule *s) {
  int k = s->s.node - s->s.acg->n_storage;
  return k >= 0 && k < MAP_MAX_COMPUTE ? s->s.cost.util[k] : 0;
}

/* Level 1 is the first on-chip level: what crosses into or out of it
 * crosses the DRAM interface. */
double cov_schedule_dram_bytes(const cov_schedule *s) {
  return s->s.n_levels > 1 ? s->s.cost.bytes_level[1] : 0;
}

double cov_schedule_onchip_bytes(const cov_schedule *s) {
  double b = 0;
  for (int l = 2; l < s->s.n_levels; l++) b += s->s.cost.bytes_level[l];
  return b;
}

cov_status cov_schedule_dump(const cov_schedule *s, FILE *out) {
  map_dump(&s->s, out);
  return ferror(out) ? cov_error(COV_IO_ERROR, COV_AT_CALL("cov_schedule_dump"), "write error") : NULL;
}

void map_schedule_line(const map_schedule *s, FILE *out) {
  const map_problem *p = &s->prob;
  fputs("L0", out);
  int lv = 0;
  for (int i = 0; i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    while (lv < sl->level) fprintf(out, " | L%d", ++lv);
    if (s->n_rects > 0 && i == s->rect_sloop)
      fprintf(out, " %s,%s:%d rectangles", p->loop_name[s->rect_loop[0]], p->loop_name[s->rect_loop[1]], s->n_rects);
    else
      fprintf(out, " %s%s%lld", p->loop_name[sl->loop], sl->spatial ? "@" : ":", (long long)sl->trips);
  }
  bool db = false;
  for (int o = 0; o < p->n_operands; o++)
    for (int l = 1; l < s->n_levels; l++) db |= s->place[o][l].double_buffered;
  fprintf(out, "%s", db ? "  (double-buffered)" : "");
}

cov_status cov_schedule_explain(const cov_schedule *s, FILE *out) {
  const map_schedule *m = &s->s;
  map_dump(m, out);
  if (m->narrowed)
    fprintf(out, "note: %s has no %s mac; multiplicands are rounded to %s and accumulated in %s\n",
            m->acg->name, cov_dtype_name(m->prob.operands[0].dtype), cov_dtype_name(m->mul_dtype),
            cov_dtype_name(m->acc_dtype));
  map_dump_cost(m, out);
  fprintf(out, "search: %lld cost-model evaluations over %lld tilings\n", (long long)s->evaluations,
          (long long)s->candidates);
  fprintf(out, "next best alternatives:\n");
  if (!s->n_alts) fprintf(out, "  (none)\n");
  for (int i = 0; i < s->n_alts; i++) {
    fprintf(out, "  %d. %.0f cycles (+%.1f%%): ", i + 1, s->alts[i].cost.cycles,
            100.0 * (s->alts[i].cost.cycles / m->cost.cycles - 1));
    map_schedule_line(&s->alts[i], out);
    fputc('\n', out);
  }
  fprintf(out, "chosen: ");
  map_schedule_line(m, out);
  fputc('\n', out);
  return ferror(out) ? cov_error(COV_IO_ERROR, COV_AT_CALL("cov_schedule_explain"), "write error") : NULL;
}

cov_status cov_schedule_interpret(const cov_schedule *s, const cov_tensor *inputs, int n_inputs,
                                  cov_tensor *out) {
  return map_interp(&s->s, inputs, n_inputs, out);
}

int cov_schedule_num_alternatives(const cov_schedule *s) { return s ? s->n_alts : 0; }

double cov_schedule_ops(const cov_schedule *s) { return s ? (double)s->s.prob.ops : 0; }

cov_status cov_schedule_select_alternative(cov_schedule *s, int i) {
  if (!s || i < 0 || i >= s->n_alts)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_schedule_select_alternative"), "schedule alternative %d of %d", i,
                     s ? s->n_alts : 0);
  map_schedule tmp = s->s;
  s->s = s->alts[i];
  s->alts[i] = tmp;
  return NULL;
}
