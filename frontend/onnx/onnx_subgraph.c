/* frontend/onnx/onnx_subgraph.c: reading graph attributes into subgraphs.
 *
 * A subgraph is read like the model's graph (onnx_read_body), with one
 * difference: a name it does not define is looked up in the enclosing
 * scopes, innermost first, and captured (graph_control.h). Nesting is
 * bounded (GRAPH_MAX_SUBGRAPH_DEPTH), and so are the nodes of all
 * subgraphs of a model together (GRAPH_MAX_SUBGRAPH_NODES), before a
 * subgraph's nodes are read. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/onnx/onnx_internal.h"

graph *graph_create_sub(graph *parent) {
  graph *g = cov_arena_alloc(parent->arena, sizeof *g);
  if (!g) return NULL;
  g->arena = parent->arena;
  g->file = parent->file;
  g->dir = parent->dir;
  g->opset = parent->opset;
  g->ir_version = parent->ir_version;
  g->producer = parent->producer;
  g->producer_version = parent->producer_version;
  g->lib = parent->lib;
  g->no_fold = parent->no_fold;
  g->compute_f32 = parent->compute_f32;
  g->rnn_cells = parent->rnn_cells;
  g->max_memory = parent->max_memory;
  g->parent = parent;
  g->depth = parent->depth + 1;
  return g;
}

/* The owner's input slot holding outer value o, appended when new. */
static int owner_slot(reader *R, graph_value *o) {
  graph_node *n = R->owner;
  for (int k = n->n_in - n->n_implicit; k < n->n_in; k++)
    if (n->in[k] == o) return k;
  graph_value **in = cov_arena_array(R->g->arena, (size_t)n->n_in + 1, sizeof *in);
  if (!in) return -1;
  if (n->n_in) memcpy(in, n->in, (size_t)n->n_in * sizeof *in);
  in[n->n_in] = o;
  n->in = in;
  n->n_implicit++;
  return n->n_in++;
}

graph_value *onnx_capture(reader *R, const char *name) {
  if (!R->parent) return NULL;
  graph_value *o = onnx_table_find(R->parent, name);
  if (!o) o = onnx_capture(R->parent, name);
  if (!o) return NULL;
  graph *g = R->g;
  for (const reader *r = R; r->parent; r = r->parent)
    if (o->producer && o->producer == r->owner) {
      onnx_add_error(R, graph_node_error(r->parent->g, r->owner, COV_INVALID_INPUT,
                                         "its subgraph reads '%s', an output of its own node",
                                         name));
      return NULL;
    }
  size_t k = g->n_captures;
  graph_value *v = graph_add_value(g, name);
  graph_value **caps = cov_arena_grow(g->arena, g->captures, k, k + 1, sizeof *caps);
  int *slots = cov_arena_grow(g->arena, g->capture_slot, k, k + 1, sizeof *slots);
  int slot = v && caps && slots ? owner_slot(R, o) : -1;
  if (slot < 0) {
    onnx_add_error(R, graph_node_error(g, R->owner, COV_OUT_OF_MEMORY, "out of memory"));
    R->fatal = true;
    return NULL;
  }
  v->kind = GV_INPUT; /* typed from the outer value when the owner is prepared */
  onnx_table_put(R, v);
  caps[k] = v;
  slots[k] = slot;
  g->captures = caps;
  g->capture_slot = slots;
  g->n_captures = k + 1;
  return v;
}

static void read_one(reader *R, graph_node *n, graph_attr *a, const Onnx__GraphProto *gp) {
  graph *g = R->g;
  if (g->depth + 1 > GRAPH_MAX_SUBGRAPH_DEPTH) {
    onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_RANGE,
                                       "attribute '%s': subgraphs nest deeper than %d levels",
                                       a->name, GRAPH_MAX_SUBGRAPH_DEPTH));
    R->fatal = true;
    return;
  }
  if (gp->n_node > GRAPH_MAX_SUBGRAPH_NODES - *R->sub_nodes) {
    onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_RANGE,
                                       "attribute '%s': with its %zu nodes the model's subgraphs "
                                       "would hold more than %d nodes",
                                       a->name, gp->n_node, GRAPH_MAX_SUBGRAPH_NODES));
    R->fatal = true;
    return;
  }
  *R->sub_nodes += gp->n_node;
  graph *sub = graph_create_sub(g);
  if (!sub) {
    onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory"));
    R->fatal = true;
    return;
  }
  sub->name = cov_arena_printf(g->arena, "%s.%s", n->name, a->name);
  reader S = {.g = sub, .gp = gp, .mp = R->mp, .parent = R, .owner = n,
              .sub_nodes = R->sub_nodes, .tensor_bytes = R->tensor_bytes};
  onnx_read_body(&S);
  free(S.slots);
  R->tensor_bytes = S.tensor_bytes;
  if (S.fatal) R->fatal = true;
  if (S.errors)
    onnx_add_error(R, cov_status_annotate(S.errors, "in subgraph '%s' of node '%s' (%s): ",
                                          a->name, n->name, n->op_type));
  else
    a->sub = sub;
}

void onnx_read_subgraphs(reader *R, graph_node *n, const Onnx__NodeProto *np) {
  for (size_t i = 0; i < np->n_attribute && (int)i < n->n_attrs && !R->fatal; i++) {
    const Onnx__AttributeProto *ap = np->attribute[i];
    graph_attr *a = &n->attrs[i];
    if (ap && a->type == GA_GRAPH && ap->g) read_one(R, n, a, ap->g);
  }
}
