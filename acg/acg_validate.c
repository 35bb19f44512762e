/* acg/acg_validate.c: graph-level rules of an ACG.
 *
 * Field-level checks and unique names are checked while loading; these need
 * the whole graph: a DRAM to start from, sane edges, and every unit reachable,
 * because the mapper can only place data where some path can bring it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "acg/acg_ir.h"

typedef struct {
  const cov_acg *g;
  cov_status errors;
} checker;

static void fail(checker *C, const acg_src *src, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(checker *C, const acg_src *src, const char *fmt, ...) {
  cov_loc loc = {.file = C->g->file, .line = src->line, .col = src->col, .path = src->path};
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(COV_INVALID_INPUT, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  C->errors = cov_status_join(C->errors, st);
}

/* Reverse reachability: can data written at `node` flow back to a DRAM? */
static void reaches_dram(const cov_acg *g, int *out) {
  int n = acg_n_nodes(g);
  for (int i = 0; i < n; i++) out[i] = i < g->n_storage && g->storage[i].kind == ACG_DRAM;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int e = 0; e < g->n_edges; e++) {
      const acg_edge *ed = &g->edges[e];
      if (out[ed->to] && !out[ed->from]) out[ed->from] = changed = 1;
      if (ed->bidirectional && out[ed->from] && !out[ed->to]) out[ed->to] = changed = 1;
    }
  }
}

/* A systolic array's capability covers at most the array: its tile's rows
 * and columns within the dims, and at most one MAC per cycle per PE of the
 * tile. (Left out, both follow the dims: acg_load.c.) A copy of a target
 * whose dims were edited while its tile or throughput still spell out the
 * old array would otherwise run on PEs that are not there. A matrix unit's
 * instructions may cover several of its basic blocks (MFMA 32x32 on a
 * 16x16 unit, wgmma 64xN), so its tile is not bounded by its dims. */
static void check_array_fit(checker *C, const acg_compute *c) {
  if (c->kind != ACG_SYSTOLIC) return;
  for (int k = 0; k < c->n_caps; k++) {
    const acg_capability *cap = &c->caps[k];
    if (k > 0 && cap->src.path && c->caps[k - 1].src.path && !strcmp(cap->src.path, c->caps[k - 1].src.path))
      continue; /* one object listing several ops: checked once */
    char shape[64] = "", path[512];
    double pes = 1;
    for (int i = 0; i < cap->tile_rank; i++) {
      size_t u = strlen(shape);
      snprintf(shape + u, sizeof shape - u, "%s%u", i ? "x" : "", cap->tile[i]);
      if (i < 2) pes *= cap->tile[i];
    }
    acg_src at = {cap->src.line, cap->src.col, path};
    int fits = 1;
    for (int i = 0; i < c->n_dims && i < 2 && i < cap->tile_rank; i++)
      if (cap->tile[i] > c->dims[i]) {
        snprintf(path, sizeof path, "%s.tile", cap->src.path ? cap->src.path : "$");
        fail(C, &at, "tile %s does not fit the array's dims %ux%u of '%s' (%u %s > %u); leave \"tile\" out "
             "to cover the whole array", shape, c->dims[0], c->n_dims > 1 ? c->dims[1] : 1, c->name,
             cap->tile[i], i ? "columns" : "rows", c->dims[i]);
        fits = 0;
        break;
      }
    if (fits && cap->throughput > pes) {
      snprintf(path, sizeof path, "%s.throughput", cap->src.path ? cap->src.path : "$");
      fail(C, &at, "throughput %g is more MACs per cycle than the %g PEs of tile %s; leave \"throughput\" "
           "out to take one per PE", cap->throughput, pes, shape);
    }
  }
}

cov_status acg_validate(const cov_acg *g) {
  checker C = {g, NULL};
  int n = acg_n_nodes(g);

  int drams = 0;
  for (int i = 0; i < g->n_storage; i++) {
    const acg_storage *s = &g->storage[i];
    drams += s->kind == ACG_DRAM;
    uint64_t total;
    if (__builtin_mul_overflow(s->capacity_bytes, (uint64_t)s->instances, &total))
      fail(&C, &s->src, "total capacity of '%s' (capacity x instances) overflows 64 bits",
           s->name);
  }
  if (drams == 0) {
    acg_src top = {1, 1, "$.storage"};
    fail(&C, &top,
         "no storage node of kind 'dram' (the mapper needs a main memory where model tensors "
         "start and end)");
  }

  for (int k = 0; k < g->n_compute; k++) check_array_fit(&C, &g->compute[k]);
  for (int e = 0; e < g->n_edges; e++) {
    const acg_edge *ed = &g->edges[e];
    if (ed->from == ed->to)
      fail(&C, &ed->src, "edge from '%s' to itself", acg_node_name(g, ed->from));
    for (int f = 0; f < e; f++) {
      const acg_edge *o = &g->edges[f];
      if ((o->from == ed->from && o->to == ed->to) ||
          ((o->bidirectional || ed->bidirectional) && o->from == ed->to && o->to == ed->from)) {
        fail(&C, &ed->src, "duplicate edge '%s' -> '%s' (already given at %s)",
             acg_node_name(g, ed->from), acg_node_name(g, ed->to),
             o->src.path ? o->src.path : "?");
        break;
      }
    }
  }
  if (C.errors || drams == 0) return C.errors;

  int level[ACG_MAX_NODES], back[ACG_MAX_NODES];
  acg_levels_from_dram(g, level);
  reaches_dram(g, back);
  for (int i = 0; i < n; i++) {
    const char *what = i < g->n_storage ? "storage" : "compute unit";
    if (level[i] < 0)
      fail(&C, acg_node_src(g, i),
           "%s '%s' is not reachable from any DRAM (add an edge into it from a node that DRAM "
           "reaches)",
           what, acg_node_name(g, i));
    else if (!back[i] && i >= g->n_storage)
      fail(&C, acg_node_src(g, i),
           "%s '%s' has no path back to DRAM, so its results could never be stored (add an "
           "edge from it to a storage node)",
           what, acg_node_name(g, i));
  }
  return C.errors;
}
