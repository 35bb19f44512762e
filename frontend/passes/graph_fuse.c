/* frontend/passes/graph_fuse.c: fusion into layer groups, and binding each group
 * to the codelets that compute it.
 *
 * A layer group is what a mapper schedules as one unit, keeping the
 * intermediates between its operations on chip. The patterns are the ones
 * accelerators fuse:
 *   conv[+bias][+relu|clip|leakyrelu|sigmoid|tanh][+maxpool]
 *   gemm|matmul[+bias][+activation]
 *   matmul[+scale]+softmax            (attention scores)
 * An operation joins a group only if it is the sole reader of the group's
 * last result (which is no graph output) and its other inputs are constants,
 * so a group can run as soon as its first node's inputs are ready. Nodes are
 * then reordered so that every group is contiguous (still a topological
 * order). Every other node is a group of its own. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"

typedef struct fuser {
  graph *g;
  graph_node **consumer; /* the only reader of a value, else NULL */
  bool *is_output;
} fuser;

static bool op_is(const graph_node *n, const char *op) { return strcmp(n->op_type, op) == 0; }

/* The node that alone reads v, if it may join a group. */
static graph_node *sole_reader(const fuser *F, const graph_value *v) {
  if (!v || v->n_uses != 1 || F->is_output[v->id]) return NULL;
  graph_node *c = F->consumer[v->id];
  return c && c->group < 0 ? c : NULL;
}

/* Every input of n other than `from` is a constant (or omitted). */
static bool others_constant(const graph_node *n, const graph_value *from) {
  int seen = 0;
  for (int i = 0; i < n->n_in; i++) {
    if (n->in[i] == from) {
      seen++;
      continue;
    }
    if (n->in[i] && !n->in[i]->data) return false;
  }
  return seen == 1;
}

static bool is_activation(const graph_node *n) {
  static const char *const acts[] = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "Gelu"};
  for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
    if (op_is(n, acts[i])) return true;
  return false;
}

/* An Add of a constant that does not change the shape: a bias. */
static bool is_bias_add(const graph_node *n, const graph_value *from) {
  if (!op_is(n, "Add") || !others_constant(n, from) || !n->out[0]) return false;
  const graph_value *o = n->out[0];
  if (o->rank != from->rank) return false;
  for (int i = 0; i < o->rank; i++)
    if (o->dims[i] != from->dims[i] || o->dims[i] < 0) return false;
  return true;
}

static bool is_scalar_scale(const graph_node *n, const graph_value *from) {
  if (!(op_is(n, "Mul") || op_is(n, "Div")) || !others_constant(n, from)) return false;
  const graph_value *other = n->in[0] == from ? n->in[1] : n->in[0];
  return op_is(n, "Mul") || n->in[0] == from ? graph_numel(other) == 1 : false;
}

static char *lower_op(graph *g, const char *op) {
  char *s = cov_arena_strdup(g->arena, op);
  for (char *p = s; p && *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  return s;
}

typedef struct chain {
  graph_node *nodes[8];
  int n;
  char kind[128];
} chain;

static void take(chain *c, graph_node *n, const char *part) {
  c->nodes[c->n++] = n;
  size_t k = strlen(c->kind);
  snprintf(c->kind + k, sizeof c->kind - k, "%s%s", k ? "+" : "", part);
}

static void grow_conv(const fuser *F, chain *c, graph_node *n) {
  take(c, n, op_is(n, "Conv") ? "conv" : "convtranspose");
  graph_value *v = n->out[0];
  graph_node *next = sole_reader(F, v);
  bool bias = n->n_in > 2 && n->in[2];
  if (next && is_bias_add(next, v)) {
    take(c, next, "bias");
    v = next->out[0];
    next = sole_reader(F, v);
  } else if (bias) {
    size_t k = strlen(c->kind);
    snprintf(c->kind + k, sizeof c->kind - k, "+bias");
  }
  if (next && is_activation(next) && others_constant(next, v)) {
    take(c, next, lower_op(F->g, next->op_type));
    v = next->out[0];
    next = sole_reader(F, v);
  }
  if (next && op_is(next, "MaxPool") && next->n_out == 1) take(c, next, "maxpool");
}

static void grow_matmul(const fuser *F, chain *c, graph_node *n) {
  take(c, n, op_is(n, "Gemm") ? "gemm" : "matmul");
  graph_value *v = n->out[0];
  graph_node *next = sole_reader(F, v);
  if (op_is(n, "Gemm") && n->n_in > 2 && n->in[2]) {
    size_t k = strlen(c->kind);
    snprintf(c->kind + k, sizeof c->kind - k, "+bias");
  }
  if (op_is(n, "MatMul") && next && (is_scalar_scale(next, v) || op_is(next, "Softmax"))) {
    graph_node *scale = is_scalar_scale(next, v) ? next : NULL;
    graph_node *sm = scale ? sole_reader(F, scale->out[0]) : next;
    if (sm && op_is(sm, "Softmax")) {
      if (scale) take(c, scale, "scale");
      take(c, sm, "softmax");
      return;
    }
  }
  if (next && is_bias_add(next, v)) {
    take(c, next, "bias");
    v = next->out[0];
    next = sole_reader(F, v);
  }
  if (next && is_activation(next) && others_constant(next, v))
    take(c, next, lower_op(F->g, next->op_type));
}

/* Binds the group's codelets: the compute nodes' codelets, in order. */
static cov_status bind(graph *g, graph_group *grp) {
  const char *names[64];
  int k = 0;
  for (int i = 0; i < grp->n_nodes; i++) {
    const graph_node *n = grp->nodes[i];
    if (n->def->layout) continue;
    k += n->def->codelets(n, names + k, 64 - k);
  }
  grp->n_codelets = k;
  grp->codelets = cov_arena_array(g->arena, k ? (size_t)k : 1, sizeof *grp->codelets);
  if (!grp->codelets) return graph_node_error(g, NULL, COV_OUT_OF_MEMORY, "out of memory");
  memcpy(grp->codelets, names, (size_t)k * sizeof *names);
  return NULL;
}

cov_status graph_fuse(graph *g, bool no_fuse) {
  graph_recount(g);
  size_t nv = g->n_values ? g->n_values : 1;
  fuser F = {.g = g};
  F.consumer = calloc(nv, sizeof *F.consumer);
  F.is_output = calloc(nv, sizeof *F.is_output);
  graph_node **order = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *order);
  g->groups = cov_arena_array(g->arena, g->n_nodes ? g->n_nodes : 1, sizeof *g->groups);
  cov_status st = NULL;
  if (!F.consumer || !F.is_output || !order || !g->groups) {
    st = graph_node_error(g, NULL, COV_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < g->n_outputs; i++) F.is_output[g->outputs[i]->id] = true;
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    n->group = -1;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j]) F.consumer[n->in[j]->id] = n->in[j]->n_uses == 1 ? n : NULL;
  }
  g->n_groups = 0;
  size_t placed = 0;
  for (size_t i = 0; i < g->n_nodes && !st; i++) {
    graph_node *n = g->nodes[i];
    if (n->group >= 0) continue;
    chain c = {.n = 0};
    c.kind[0] = '\0';
    if (!no_fuse && (op_is(n, "Conv") || op_is(n, "ConvTranspose")) && n->out[0])
      grow_conv(&F, &c, n);
    else if (!no_fuse && (op_is(n, "Gemm") || op_is(n, "MatMul")) && n->out[0])
      grow_matmul(&F, &c, n);
    else
      take(&c, n, lower_op(g, n->op_type));
    graph_group *grp = &g->groups[g->n_groups];
    grp->kind = cov_arena_strdup(g->arena, c.kind);
    grp->n_nodes = c.n;
    grp->nodes = cov_arena_array(g->arena, (size_t)c.n, sizeof *grp->nodes);
    if (!grp->kind || !grp->nodes) {
      st = graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
      break;
    }
    grp->layout = c.n == 1 && n->def->layout;
    for (int k = 0; k < c.n; k++) {
      grp->nodes[k] = c.nodes[k];
      c.nodes[k]->group = (int)g->n_groups;
      order[placed++] = c.nodes[k];
    }
    st = bind(g, grp);
    g->n_groups++;
  }
  if (!st && placed) memcpy(g->nodes, order, placed * sizeof *order);
done:
  free(F.consumer);
  free(F.is_output);
  free(order);
  return st;
}
