/* frontend/onnx/onnx_unroll.c: a Loop with a small constant trip count is
 * unrolled when the model is read.
 *
 * Conditions (else the Loop stays and runs driven from the host,
 * graph_loop.c): the trip count M is an initializer of the Loop's own graph
 * with 0 <= M <= GRAPH_UNROLL_MAX_TRIPS, the condition input is absent or
 * an initializer holding true, the body passes its condition through
 * unchanged (its first output is its condition input, or an Identity of
 * it), it has no scan outputs and no subgraphs of its own, and M copies of
 * it hold at most GRAPH_UNROLL_MAX_NODES nodes. Then the body's nodes are
 * copied M times into the Loop's graph, iteration t reading the iteration
 * number t (a constant), the previous iteration's carried values and the
 * outer values the body captured, and Identity nodes hand the last
 * iteration's values to the Loop's outputs (the simplifier removes them).
 * The copies then go through the pipeline with the rest of the graph:
 * their layers fold, fuse and compile like any other. */
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/onnx/onnx_internal.h"

static bool is_init(const graph_value *v, cov_dtype dt) {
  return v && v->kind == GV_INITIALIZER && v->data && v->dtype == dt && graph_numel(v) == 1;
}

/* Whether the body's first output is its condition input passed through. */
static bool passes_cond(const graph *b) {
  const graph_value *c = b->outputs[0], *in = b->inputs[1];
  if (c == in) return true;
  const graph_node *p = c->producer;
  return p && !strcmp(p->op_type, "Identity") && p->n_in == 1 && p->in[0] == in;
}

static const graph *unrollable(const graph_node *n, int64_t *trips) {
  const graph_attr *a = graph_attr_find(n, "body");
  const graph *b = a && a->type == GA_GRAPH ? a->sub : NULL;
  int nf = n->n_in - n->n_implicit;
  if (!b || strcmp(n->op_type, "Loop") != 0 || nf < 2 || !is_init(n->in[0], COV_I64)) return NULL;
  if (n->in[1] && !(is_init(n->in[1], COV_BOOL) && *(const uint8_t *)n->in[1]->data)) return NULL;
  int64_t m = *(const int64_t *)n->in[0]->data;
  if (m < 0 || m > GRAPH_UNROLL_MAX_TRIPS || b->n_inputs != (size_t)nf ||
      b->n_outputs != (size_t)nf - 1 || n->n_out != nf - 2 || !passes_cond(b) ||
      (int64_t)b->n_nodes * m > GRAPH_UNROLL_MAX_NODES)
    return NULL;
  for (int i = 2; i < nf; i++)
    if (!n->in[i] || !n->out[i - 2]) return NULL;
  for (size_t i = 0; i < b->n_nodes; i++)
    if (graph_has_subgraphs(b->nodes[i])) return NULL;
  *trips = m;
  return b;
}

/* An outer value standing for body value v in iteration t (map[v->id]). */
static graph_value *outer_value(reader *R, const graph_node *n, const graph_value *v, int64_t t) {
  graph *g = R->g;
  graph_value *o = graph_add_value(g, cov_arena_printf(g->arena, "%s/%lld/%s", n->name, (long long)t, v->name));
  if (!o) return NULL;
  if (v->kind == GV_INITIALIZER || v->data) {
    graph_copy_type(o, v);
    o->kind = GV_INITIALIZER;
    o->data = v->data;
  }
  return o;
}

static graph_node *copy_node(reader *R, const graph_node *src, const char *name) {
  graph *g = R->g;
  graph_node *c = graph_add_node(g);
  if (!c) return NULL;
  graph_node *keep_idx = c;
  *c = *src;
  c->name = name;
  c->in = cov_arena_array(g->arena, (size_t)src->n_in + 1, sizeof *c->in);
  c->out = cov_arena_array(g->arena, (size_t)src->n_out + 1, sizeof *c->out);
  c->group = -1;
  return c->in && c->out ? keep_idx : NULL;
}

/* One iteration: the body's nodes copied, map[] from body value ids to
 * outer values (inputs set by the caller). */
static bool copy_iteration(reader *R, const graph_node *n, const graph *b, int64_t t,
                           graph_value **map) {
  graph *g = R->g;
  for (size_t i = 0; i < b->n_values; i++) {
    const graph_value *v = b->values[i];
    if (map[i] || (v->kind == GV_INPUT)) continue;
    if (!(map[i] = outer_value(R, n, v, t))) return false;
  }
  for (size_t i = 0; i < b->n_nodes; i++) {
    const graph_node *s = b->nodes[i];
    graph_node *c = copy_node(R, s, cov_arena_printf(g->arena, "%s/%lld/%s", n->name, (long long)t, s->name));
    if (!c) return false;
    for (int k = 0; k < s->n_in; k++) c->in[k] = s->in[k] ? map[s->in[k]->id] : NULL;
    for (int k = 0; k < s->n_out; k++) {
      c->out[k] = s->out[k] ? map[s->out[k]->id] : NULL;
      if (c->out[k]) c->out[k]->producer = c;
    }
  }
  return true;
}

/* The iteration number t as a constant of the body's declared rank. */
static graph_value *iteration_const(reader *R, const graph_node *n, const graph *b, int64_t t) {
  graph *g = R->g;
  graph_value *v = graph_add_value(g, cov_arena_printf(g->arena, "%s/%lld/iteration", n->name, (long long)t));
  int64_t *d = cov_arena_alloc(g->arena, sizeof *d), one = 1;
  if (!v || !d) return NULL;
  *d = t;
  v->kind = GV_INITIALIZER;
  v->dtype = COV_I64;
  graph_set_shape(v, b->inputs[0]->rank == 1 ? 1 : 0, &one);
  v->data = d;
  return v;
}

/* Replaces Loop n by its unrolled body; false when out of memory. */
static bool unroll(reader *R, graph_node *n, const graph *b, int64_t m) {
  graph *g = R->g;
  int carried = n->n_in - n->n_implicit - 2;
  graph_value **map = cov_arena_array(g->arena, b->n_values + 1, sizeof *map);
  graph_value **cur = cov_arena_array(g->arena, (size_t)carried + 1, sizeof *cur);
  graph_value *cond = graph_add_value(g, cov_arena_printf(g->arena, "%s/cond", n->name));
  uint8_t *yes = cov_arena_alloc(g->arena, 1);
  if (!map || !cur || !cond || !yes) return false;
  *yes = 1;
  cond->kind = GV_INITIALIZER, cond->dtype = COV_BOOL, cond->data = yes;
  graph_set_shape(cond, b->inputs[1]->rank == 1 ? 1 : 0, (const int64_t[]){1});
  for (int k = 0; k < carried; k++) cur[k] = n->in[2 + k];
  for (int64_t t = 0; t < m; t++) {
    memset(map, 0, (b->n_values + 1) * sizeof *map);
    if (!(map[b->inputs[0]->id] = iteration_const(R, n, b, t))) return false;
    map[b->inputs[1]->id] = cond;
    for (int k = 0; k < carried; k++) map[b->inputs[2 + k]->id] = cur[k];
    for (size_t j = 0; j < b->n_captures; j++) map[b->captures[j]->id] = n->in[b->capture_slot[j]];
    if (!copy_iteration(R, n, b, t, map)) return false;
    for (int k = 0; k < carried; k++) cur[k] = map[b->outputs[1 + k]->id];
  }
  const graph_opdef *id = graph_opdef_find("Identity");
  for (int k = 0; k < carried; k++) {
    graph_node *c = copy_node(R, n, cov_arena_printf(g->arena, "%s/out%d", n->name, k));
    if (!c) return false;
    c->op_type = "Identity", c->def = id, c->n_in = 1, c->n_out = 1, c->n_implicit = 0;
    c->attrs = NULL, c->n_attrs = 0;
    c->in[0] = cur[k];
    c->out[0] = n->out[k];
    n->out[k]->producer = c;
  }
  n->dead = true;
  return true;
}

void onnx_unroll_loops(reader *R) {
  graph *g = R->g;
  size_t count = g->n_nodes;
  bool any = false;
  for (size_t i = 0; i < count && !R->fatal; i++) {
    graph_node *n = g->nodes[i];
    int64_t m;
    const graph *b = n->def ? unrollable(n, &m) : NULL;
    if (!b) continue;
    if (!unroll(R, n, b, m)) {
      onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory unrolling it"));
      R->fatal = true;
      return;
    }
    any = true;
  }
  if (!any) return;
  size_t k = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!g->nodes[i]->dead) g->nodes[k++] = g->nodes[i];
  g->n_nodes = k;
}
