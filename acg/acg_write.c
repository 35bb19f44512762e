/* acg/acg_write.c: canonical JSON for an ACG (`covenant acg fmt`).
 *
 * Every default is written out and capabilities listing several ops are
 * expanded one per op, so the output is a complete statement of what
 * covenant understood. Sweeps (covenant explore) derive designs from it. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "acg/acg_ir.h"
#include "common/loc.h"

/* Integral values print as integers ("256", not "256.0"). */
static json_t *num(double x) {
  if (x == floor(x) && fabs(x) < 9007199254740992.0) return json_integer((json_int_t)x);
  return json_real(x);
}

static json_t *storage_json(const acg_storage *s) {
  char cap[32];
  acg_format_size(s->capacity_bytes, cap, sizeof cap);
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(s->name));
  json_object_set_new(o, "kind", json_string(acg_storage_kind_name(s->kind)));
  json_object_set_new(o, "capacity", json_string(cap));
  json_object_set_new(o, "instances", json_integer(s->instances));
  json_object_set_new(o, "banks", json_integer(s->banks));
  json_object_set_new(o, "width_bits", json_integer(s->width_bits));
  json_object_set_new(o, "ports", json_integer(s->ports));
  json_object_set_new(o, "double_buffer", json_boolean(s->double_buffer));
  if (s->bandwidth_bytes_per_cycle > 0)
    json_object_set_new(o, "bandwidth_bytes_per_cycle", num(s->bandwidth_bytes_per_cycle));
  if (s->has_energy) {
    json_object_set_new(o, "energy_pj_per_byte",
                        json_pack("{s:o, s:o}", "read", num(s->read_pj_per_byte), "write",
                                  num(s->write_pj_per_byte)));
  }
  if (s->area_mm2 > 0) json_object_set_new(o, "area_mm2", num(s->area_mm2));
  if (s->about) json_object_set_new(o, "about", json_string(s->about));
  return o;
}

static json_t *cap_json(const acg_capability *c) {
  json_t *o = json_object();
  json_object_set_new(o, "op", json_string(common_op_name(c->op)));
  json_t *in = json_array();
  for (int i = 0; i < c->n_in; i++) json_array_append_new(in, json_string(cov_dtype_name(c->in[i])));
  json_object_set_new(o, "in", in);
  json_object_set_new(o, "out", json_string(cov_dtype_name(c->out)));
  json_t *tile = json_array();
  for (int i = 0; i < c->tile_rank; i++) json_array_append_new(tile, json_integer(c->tile[i]));
  json_object_set_new(o, "tile", tile);
  json_object_set_new(o, "throughput", num(c->throughput));
  json_object_set_new(o, "latency", json_integer(c->latency));
  if (c->energy_pj_per_op > 0) json_object_set_new(o, "energy_pj_per_op", num(c->energy_pj_per_op));
  if (c->waves > 1) json_object_set_new(o, "waves", json_integer(c->waves));
  if (c->operands_in_scratchpad) json_object_set_new(o, "operands", json_string("scratchpad"));
  if (c->fused) {
    json_t *f = json_array();
    if (c->fused & ACG_FUSE_BIAS) json_array_append_new(f, json_string("bias"));
    if (c->fused & ACG_FUSE_ROW_SUM) json_array_append_new(f, json_string("row_sum"));
    if (c->fused & ACG_FUSE_ROW_MAX) json_array_append_new(f, json_string("row_max"));
    json_object_set_new(o, "fused", f);
  }
  return o;
}

static json_t *compute_json(const acg_compute *c) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(c->name));
  json_object_set_new(o, "kind", json_string(acg_compute_kind_name(c->kind)));
  if (c->kind == ACG_SIMD) {
    json_object_set_new(o, "lanes", json_integer(c->dims[0]));
  } else if (c->n_dims) {
    json_t *d = json_array();
    for (int i = 0; i < c->n_dims; i++) json_array_append_new(d, json_integer(c->dims[i]));
    json_object_set_new(o, "dims", d);
  }
  json_object_set_new(o, "instances", json_integer(c->instances));
  if (c->weight_buffers > 1) json_object_set_new(o, "weight_buffers", json_integer(c->weight_buffers));
  json_t *caps = json_array();
  for (int k = 0; k < c->n_caps; k++) json_array_append_new(caps, cap_json(&c->caps[k]));
  json_object_set_new(o, "capabilities", caps);
  if (c->area_mm2 > 0) json_object_set_new(o, "area_mm2", num(c->area_mm2));
  if (c->about) json_object_set_new(o, "about", json_string(c->about));
  return o;
}

static json_t *edge_json(const cov_acg *g, const acg_edge *e) {
  json_t *o = json_object();
  json_object_set_new(o, "from", json_string(acg_node_name(g, e->from)));
  json_object_set_new(o, "to", json_string(acg_node_name(g, e->to)));
  json_object_set_new(o, "bandwidth_bytes_per_cycle", num(e->bandwidth_bytes_per_cycle));
  json_object_set_new(o, "latency_cycles", json_integer(e->latency_cycles));
  json_object_set_new(o, "bidirectional", json_boolean(e->bidirectional));
  if (e->async) json_object_set_new(o, "async", json_true());
  if (e->pj_per_byte > 0) json_object_set_new(o, "energy_pj_per_byte", num(e->pj_per_byte));
  if (e->about) json_object_set_new(o, "about", json_string(e->about));
  return o;
}

cov_status cov_acg_write_json(const cov_acg *g, FILE *out) {
  json_t *o = json_object();
  json_object_set_new(o, "acg_version", json_integer(ACG_VERSION));
  json_object_set_new(o, "name", json_string(g->name));
  if (g->about) json_object_set_new(o, "about", json_string(g->about));
  json_object_set_new(o, "clock_mhz", num(g->clock_mhz));
  json_t *be = json_object();
  json_object_set_new(be, "name", json_string(g->backend.name));
  if (g->backend.mcpu) json_object_set_new(be, "mcpu", json_string(g->backend.mcpu));
  if (g->backend.wave_size) json_object_set_new(be, "wave_size", json_integer(g->backend.wave_size));
  if (g->backend.max_workgroup_threads)
    json_object_set_new(be, "max_workgroup_threads", json_integer(g->backend.max_workgroup_threads));
  if (g->backend.code_object_version)
    json_object_set_new(be, "code_object_version", json_integer(g->backend.code_object_version));
  if (g->backend.max_thread_registers)
    json_object_set_new(be, "max_thread_registers", json_integer(g->backend.max_thread_registers));
  json_object_set_new(o, "backend", be);
  const acg_calibration *c = &g->calibration;
  if (c->given) {
    json_t *cal = json_object();
    if (c->about) json_object_set_new(cal, "about", json_string(c->about));
    const struct {
      const char *key;
      double v;
    } f[] = {{"overlap", c->overlap},
             {"reg_eff", c->reg_eff},
             {"lat_mul", c->lat_mul},
             {"waves_per_unit", c->waves_per_unit},
             {"copy_ops_gather", c->copy_ops_gather},
             {"copy_ops_elem", c->copy_ops_elem},
             {"copy_ops_nhwc_row", c->copy_ops_nhwc_row},
             {"ws_step_cycles", c->ws_step_cycles},
             {"ws_scale", c->ws_scale},
             {"wg_step_cycles", c->wg_step_cycles}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) json_object_set_new(cal, f[i].key, num(f[i].v));
    json_object_set_new(o, "calibration", cal);
  }
  json_t *st = json_array(), *cp = json_array(), *ed = json_array();
  for (int i = 0; i < g->n_storage; i++) json_array_append_new(st, storage_json(&g->storage[i]));
  for (int i = 0; i < g->n_compute; i++) json_array_append_new(cp, compute_json(&g->compute[i]));
  for (int i = 0; i < g->n_edges; i++) json_array_append_new(ed, edge_json(g, &g->edges[i]));
  json_object_set_new(o, "storage", st);
  json_object_set_new(o, "compute", cp);
  json_object_set_new(o, "edges", ed);
  int rc = json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  json_decref(o);
  if (rc != 0 || fputc('\n', out) == EOF || ferror(out))
    return cov_error(COV_IO_ERROR, COV_AT_CALL("cov_acg_write_json"), "write error while writing JSON");
  return NULL;
}

cov_status cov_acg_to_json(const cov_acg *g, char **out, size_t *size) {
  if (out) *out = NULL;
  if (size) *size = 0;
  if (!g || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_acg_to_json"), "NULL ACG or out");
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  if (!f) return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_acg_to_json"), "out of memory");
  cov_status st = cov_acg_write_json(g, f);
  if (fclose(f) != 0 && !st) st = cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_acg_to_json"), "out of memory");
  if (st) {
    free(text);
    return st;
  }
  *out = text;
  if (size) *size = n;
  return NULL;
}
