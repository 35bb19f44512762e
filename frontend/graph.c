/* frontend/graph.c: graph construction, attributes, diagnostics, ordering
 * and the structural verifier. */
#include "frontend/graph.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

graph *graph_create(const char *file, const char *dir) {
  cov_arena *a = cov_arena_create();
  if (!a) return NULL;
  graph *g = cov_arena_alloc(a, sizeof *g);
  if (!g) {
    cov_arena_destroy(a);
    return NULL;
  }
  g->arena = a;
  g->file = cov_arena_strdup(a, file ? file : "<model>");
  g->dir = dir ? cov_arena_strdup(a, dir) : NULL;
  if (!g->file || (dir && !g->dir)) {
    cov_arena_destroy(a);
    return NULL;
  }
  return g;
}

void graph_destroy(graph *g) {
  if (g) cov_arena_destroy(g->arena);
}

graph_value *graph_add_value(graph *g, const char *name) {
  if (g->n_values >= GRAPH_MAX_VALUES) return NULL;
  if (g->n_values == g->cap_values) {
    size_t cap = g->cap_values ? g->cap_values * 2 : 64;
    graph_value **nv = cov_arena_grow(g->arena, g->values, g->n_values, cap, sizeof *nv);
    if (!nv) return NULL;
    g->values = nv;
    g->cap_values = cap;
  }
  graph_value *v = cov_arena_alloc(g->arena, sizeof *v);
  if (!v) return NULL;
  v->name = cov_arena_strdup(g->arena, name ? name : "");
  if (!v->name) return NULL;
  v->rank = -1;
  for (int i = 0; i < COV_MAX_RANK; i++) v->dims[i] = -1;
  v->id = (int)g->n_values;
  g->values[g->n_values++] = v;
  return v;
}

graph_node *graph_add_node(graph *g) {
  if (g->n_nodes >= GRAPH_MAX_NODES) return NULL;
  if (g->n_nodes == g->cap_nodes) {
    size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
    graph_node **nn = cov_arena_grow(g->arena, g->nodes, g->n_nodes, cap, sizeof *nn);
    if (!nn) return NULL;
    g->nodes = nn;
    g->cap_nodes = cap;
  }
  graph_node *n = cov_arena_alloc(g->arena, sizeof *n);
  if (!n) return NULL;
  n->group = -1;
  g->nodes[g->n_nodes++] = n;
  return n;
}

void graph_recount(graph *g) {
  for (size_t i = 0; i < g->n_values; i++) {
    g->values[i]->n_uses = 0;
    g->values[i]->producer = NULL;
  }
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j]) n->in[j]->n_uses++;
    for (int j = 0; j < n->n_out; j++)
      if (n->out[j]) n->out[j]->producer = n;
  }
}

void graph_compact(graph *g) {
  size_t k = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!g->nodes[i]->dead) g->nodes[k++] = g->nodes[i];
  g->n_nodes = k;
  graph_recount(g);
  /* A value survives if a node reads or writes it, or the graph exposes it. */
  bool *keep = calloc(g->n_values ? g->n_values : 1, sizeof *keep);
  if (!keep) return; /* keeping unused values is harmless */
  for (size_t i = 0; i < g->n_values; i++) {
    graph_value *v = g->values[i];
    keep[i] = v->n_uses > 0 || v->producer || v->kind == GV_INPUT;
  }
  for (size_t i = 0; i < g->n_outputs; i++) keep[g->outputs[i]->id] = true;
  k = 0;
  for (size_t i = 0; i < g->n_values; i++) {
    if (!keep[i]) continue;
    g->values[k] = g->values[i];
    g->values[k]->id = (int)k;
    k++;
  }
  g->n_values = k;
  free(keep);
}

/* ---- diagnostics ------------------------------------------------------ */

static cov_status located(const graph *g, const char *path, cov_code code, const char *fmt,
                          va_list ap) {
  cov_loc loc = {.file = g ? g->file : NULL, .path = path};
  return cov_status_makev_(code, &loc, __FILE__, __LINE__, fmt, ap);
}

cov_status graph_node_error(const graph *g, const graph_node *n, cov_code code, const char *fmt,
                            ...) {
  char path[512];
  if (n)
    snprintf(path, sizeof path, "node '%s' (%s)", n->name, *n->op_type ? n->op_type : "?");
  else
    path[0] = '\0';
  va_list ap;
  va_start(ap, fmt);
  cov_status st = located(g, path[0] ? path : NULL, code, fmt, ap);
  va_end(ap);
  return st;
}

cov_status graph_value_error(const graph *g, const graph_value *v, cov_code code, const char *fmt,
                             ...) {
  char path[512];
  const char *what = "tensor";
  if (v && v->kind == GV_INPUT) what = "input";
  if (v && v->kind == GV_INITIALIZER) what = "initializer";
  if (v) snprintf(path, sizeof path, "%s '%s'", what, v->name);
  va_list ap;
  va_start(ap, fmt);
  cov_status st = located(g, v ? path : NULL, code, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- attributes ------------------------------------------------------- */

const graph_attr *graph_attr_find(const graph_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

static const char *attr_type_name(graph_attr_type t) {
  static const char *const k[] = {"undefined",      "float",   "int",    "string",
                                  "tensor",         "graph",   "floats", "ints",
                                  "strings",        "tensors", "graphs", "sparse tensor",
                                  "sparse tensors", "type",    "types"};
  return (unsigned)t < sizeof k / sizeof *k ? k[t] : "unknown";
}

static cov_status wrong_type(const graph *g, const graph_node *n, const graph_attr *a,
                             const char *want) {
  return graph_node_error(g, n, COV_INVALID_INPUT, "attribute '%s' must be %s, not %s", a->name,
                          want, attr_type_name(a->type));
}

cov_status graph_attr_int(const graph *g, const graph_node *n, const char *name, int64_t def,
                          int64_t *out) {
  const graph_attr *a = graph_attr_find(n, name);
  *out = def;
  if (!a) return NULL;
  if (a->type != GA_INT) return wrong_type(g, n, a, "an int");
  *out = a->i;
  return NULL;
}

cov_status graph_attr_float(const graph *g, const graph_node *n, const char *name, float def,
                            float *out) {
  const graph_attr *a = graph_attr_find(n, name);
  *out = def;
  if (!a) return NULL;
  if (a->type != GA_FLOAT) return wrong_type(g, n, a, "a float");
  *out = a->f;
  return NULL;
}

cov_status graph_attr_ints(const graph *g, const graph_node *n, const char *name,
                           const int64_t **out, size_t *count) {
  const graph_attr *a = graph_attr_find(n, name);
  *out = NULL;
  *count = 0;
  if (!a) return NULL;
  if (a->type != GA_INTS) return wrong_type(g, n, a, "a list of ints");
  *out = a->ints;
  *count = a->n;
  return NULL;
}

cov_status graph_attr_floats(const graph *g, const graph_node *n, const char *name,
                             const float **out, size_t *count) {
  const graph_attr *a = graph_attr_find(n, name);
  *out = NULL;
  *count = 0;
  if (!a) return NULL;
  if (a->type != GA_FLOATS) return wrong_type(g, n, a, "a list of floats");
  *out = a->floats;
  *count = a->n;
  return NULL;
}

cov_status graph_attr_string(const graph *g, const graph_node *n, const char *name, const char *def,
                             const char **out) {
  const graph_attr *a = graph_attr_find(n, name);
  *out = def;
  if (!a) return NULL;
  if (a->type != GA_STRING) return wrong_type(g, n, a, "a string");
  *out = a->s;
  return NULL;
}

cov_status graph_attr_strings(const graph *g, const graph_node *n, const char *name,
                              const char *const **out, size_t *count) {
  const graph_attr *a = graph_attr_find(n, name);
  *out = NULL;
  *count = 0;
  if (!a) return NULL;
  if (a->type != GA_STRINGS) return wrong_type(g, n, a, "a list of strings");
  *out = a->strs;
  *count = a->n;
  return NULL;
}

/* ---- verifier --------------------------------------------------------- */

cov_status graph_verify(const graph *g) {
  cov_status errs = NULL;
  /* Position of each value's producer, to check that uses come after it. */
  int *def_at = malloc((g->n_values ? g->n_values : 1) * sizeof *def_at);
  if (!def_at) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory verifying the graph");
  for (size_t i = 0; i < g->n_values; i++) {
    const graph_value *v = g->values[i];
    def_at[i] = v->kind == GV_ACTIVATION ? -1 : 0;
    if (v->id != (int)i)
      errs = cov_status_join(errs,
                             graph_value_error(g, v, COV_INTERNAL, "id %d at slot %zu", v->id, i));
    if ((v->kind == GV_INITIALIZER || v->kind == GV_CONSTANT) && !v->data && graph_numel(v) != 0)
      errs = cov_status_join(errs, graph_value_error(g, v, COV_INTERNAL, "constant without data"));
  }
  for (size_t i = 0; i < g->n_nodes && !errs; i++) {
    const graph_node *n = g->nodes[i];
    if (n->dead) {
      errs = graph_node_error(g, n, COV_INTERNAL, "dead node left in the graph");
      break;
    }
    for (int j = 0; j < n->n_in; j++) {
      const graph_value *v = n->in[j];
      if (!v) continue;
      if (v->id < 0 || (size_t)v->id >= g->n_values || g->values[v->id] != v || def_at[v->id] < 0)
        errs = cov_status_join(
            errs, graph_node_error(g, n, COV_INTERNAL, "input '%s' is used before it is defined",
                                   v->name));
    }
    for (int j = 0; j < n->n_out; j++) {
      const graph_value *v = n->out[j];
      if (!v) continue;
      if (v->id < 0 || (size_t)v->id >= g->n_values || g->values[v->id] != v) {
        errs = cov_status_join(
            errs, graph_node_error(g, n, COV_INTERNAL, "output '%s' is not in the graph", v->name));
        continue;
      }
      if (def_at[v->id] >= 0 || v->kind != GV_ACTIVATION)
        errs = cov_status_join(
            errs, graph_node_error(g, n, COV_INTERNAL, "output '%s' is defined twice", v->name));
      def_at[v->id] = (int)i + 1;
    }
  }
  for (size_t i = 0; i < g->n_outputs && !errs; i++)
    if (def_at[g->outputs[i]->id] < 0)
      errs = graph_value_error(g, g->outputs[i], COV_INTERNAL, "graph output has no producer");
  free(def_at);
  return errs;
}
