/* acg/acg_validate.c: graph-level rules of an ACG.
 *
 * Field-level checks and unique names are checked while loading; these need
 * the whole graph: a DRAM to start from, sane edges, and every unit reachable,
 * because the mapper can only place data where some path can bring it. */
#include <stdarg.h>
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
