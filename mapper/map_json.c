/* mapper/map_json.c: a schedule as data (cov_schedule_json): what
 * `covenant map --explain` prints, as one JSON document, for programs that
 * read it (the Python package). Built with Jansson, whose number output is
 * locale-independent; members in a fixed order, so the text is
 * deterministic. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "mapper/map_internal.h"

/* A real, or null where it is not finite (JSON has no NaN). */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* What a printer of schedules writes for s, as a JSON string (NULL when
 * out of memory). */
static json_t *printed(void (*print)(const map_schedule *, FILE *), const map_schedule *s) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) return NULL;
  print(s, f);
  fclose(f);
  json_t *j = text ? json_string(text) : NULL;
  free(text);
  return j;
}

static json_t *line_of(const map_schedule *s) { return printed(map_schedule_line, s); }

static json_t *loops_of(const map_schedule *s) {
  json_t *a = json_array();
  for (int i = 0; a && i < s->n_sloops; i++) {
    const map_sloop *sl = &s->sloops[i];
    json_array_append_new(a, json_pack("{s:i, s:s, s:I, s:b}", "level", sl->level, "loop",
                                       s->prob.loop_name[sl->loop], "trips", (json_int_t)sl->trips,
                                       "spatial", sl->spatial));
  }
  return a;
}

static json_t *transfers_of(const map_schedule *s) {
  const cov_acg *g = s->acg;
  json_t *a = json_array();
  for (int i = 0; a && i < s->n_xfers; i++) {
    const map_xfer *x = &s->xfers[i];
    json_array_append_new(
        a, json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:I, s:o, s:b}", "direction",
                     x->dir == MAP_LOAD ? "load" : "store", "operand", s->prob.operands[x->operand].name,
                     "level", x->level, "from", acg_node_name(g, x->src), "to", acg_node_name(g, x->dst),
                     "bytes", (json_int_t)x->bytes, "count", (json_int_t)x->count, "cycles",
                     num(s->cost.xfer_cycles[i]), "overlapped", s->place[x->operand][x->level].double_buffered));
  }
  return a;
}

/* The cost model's prediction split into its parts (map_dump_cost). */
static json_t *cost_of(const map_schedule *s) {
  const map_cost *c = &s->cost;
  const cov_acg *g = s->acg;
  json_t *bytes = json_array(), *util = json_object();
  for (int l = 1; bytes && l < s->n_levels; l++) json_array_append_new(bytes, num(c->bytes_level[l]));
  for (int k = 0; util && k < g->n_compute && k < MAP_MAX_COMPUTE; k++)
    if (c->util[k] > 0) json_object_set_new(util, g->compute[k].name, num(c->util[k]));
  return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "cycles", num(c->cycles), "time_us",
                   g->clock_mhz > 0 ? num(c->cycles / g->clock_mhz) : json_null(), "compute_cycles",
                   num(c->compute_cycles), "epilogue_cycles", num(c->epilogue_cycles), "exposed_transfer_cycles",
                   num(c->exposed_cycles), "bytes_per_level", bytes ? bytes : json_null(), "utilization",
                   util ? util : json_null(), "energy_pj", c->has_energy ? num(c->energy_pj) : json_null());
}

static json_t *schedule_of(const map_schedule *s) {
  int k = s->node - s->acg->n_storage;
  const char *node = k >= 0 && k < s->acg->n_compute ? s->acg->compute[k].name : "?";
  return json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:s, s:b}", "compute_node", node, "line", line_of(s),
                   "loops", loops_of(s), "transfers", transfers_of(s), "cost", cost_of(s), "multiply_dtype",
                   cov_dtype_name(s->mul_dtype), "accumulate_dtype", cov_dtype_name(s->acc_dtype), "narrowed",
                   s->narrowed);
}

static json_t *document_of(const cov_schedule *cs) {
  const map_schedule *m = &cs->s;
  json_t *dump = printed(map_dump, m);
  if (!dump) return NULL;
  json_t *alts = json_array();
  for (int i = 0; alts && i < cs->n_alts; i++) json_array_append_new(alts, schedule_of(&cs->alts[i]));
  json_t *doc = json_pack("{s:s, s:s, s:f, s:I, s:I, s:o, s:o, s:o}", "layer", m->prob.layer ? m->prob.layer : "", "acg",
                          m->acg->name, "ops", (double)m->prob.ops, "evaluations", (json_int_t)cs->evaluations,
                          "candidates", (json_int_t)cs->candidates, "schedule", schedule_of(m), "dump",
                          dump, "alternatives", alts ? alts : json_null());
  return doc;
}

cov_status cov_schedule_json(const cov_schedule *s, char **out, size_t *size) {
  if (out) *out = NULL;
  if (size) *size = 0;
  if (!s || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_schedule_json"), "NULL schedule or out");
  json_t *doc = document_of(s);
  char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) : NULL;
  json_decref(doc);
  if (!text) return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_schedule_json"), "out of memory");
  *out = text;
  if (size) *size = strlen(text);
  return NULL;
}
