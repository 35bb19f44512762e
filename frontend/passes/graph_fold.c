/* frontend/passes/graph_fold.c: constant folding.
 *
 * A node whose inputs are all constants is evaluated once, at load, with the
 * same kernels and codelets the executor uses, and its outputs become
 * constants; Shape folds as soon as its input's shape is static. This is what
 * makes the shape arithmetic of exported models (Shape -> Gather -> Unsqueeze
 * -> Concat -> Reshape) disappear, so that Reshape sees a constant shape and
 * the layer groups see static sizes.
 *
 * Folding is bounded: one result may not exceed GRAPH_FOLD_MAX_BYTES, all of
 * them together GRAPH_FOLD_BUDGET_BYTES, and compute operations are folded
 * only on small tensors (their purpose here is index arithmetic, not running
 * the model at load time). A node past those limits simply stays a node. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"

/* Work a compute node would do, roughly in multiply-accumulates. */
static int64_t fold_cost(const graph_node *n) {
  int64_t macs = graph_node_macs(n);
  if (macs != 0) return macs;
  int64_t total = 0;
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]) total += graph_numel(n->in[i]);
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]) total += graph_numel(n->out[i]);
  if (strcmp(n->op_type, "MaxPool") == 0 || strcmp(n->op_type, "AveragePool") == 0) {
    const graph_attr *k = graph_attr_find(n, "kernel_shape");
    for (size_t i = 0; k && k->type == GA_INTS && i < k->n; i++) {
      if (k->ints[i] <= 0 || __builtin_mul_overflow(total, k->ints[i], &total)) return -1;
    }
  }
  return total;
}

static bool foldable(const graph *g, const graph_node *n) {
  if (n->def->dynamic) return false; /* its result's size is known only by running it */
  bool shape_only = strcmp(n->op_type, "Shape") == 0;
  for (int i = 0; i < n->n_in; i++) {
    const graph_value *v = n->in[i];
    if (!v) continue;
    if (shape_only ? !graph_shape_known(v) : (!v->data && graph_numel(v) != 0)) return false;
    if (!n->def->layout && graph_numel(v) > GRAPH_FOLD_MAX_COMPUTE_ELEMS) return false;
    if (graph_numel(v) < 0 && !(shape_only && graph_shape_known(v))) return false;
  }
  size_t total = 0;
  for (int i = 0; i < n->n_out; i++) {
    const graph_value *v = n->out[i];
    if (!v) continue;
    int64_t numel = graph_numel(v);
    if (numel < 0) return false;
    if (!n->def->layout && numel > GRAPH_FOLD_MAX_COMPUTE_ELEMS) return false;
    size_t bytes = (size_t)numel * cov_dtype_size(v->dtype);
    if (bytes > GRAPH_FOLD_MAX_BYTES) return false;
    total += bytes;
  }
  if (!n->def->layout) {
    int64_t cost = fold_cost(n);
    if (cost < 0 || cost > GRAPH_FOLD_MAX_COMPUTE_COST) return false;
  }
  return g->folded_bytes + total <= GRAPH_FOLD_BUDGET_BYTES;
}

/* Gather(Shape(x), k) is a constant when the dims it picks are static even
 * if others are not: exported models with a dynamic batch ask for the
 * channel count this way (x.size(1)), and folding it lets the arithmetic
 * after it fold too. An index out of range is left for the run-time check. */
static cov_status fold_shape_gather(graph *g, graph_node *n, bool *folded) {
  graph_value *s = n->in[0], *idx = n->in[1], *out = n->out[0];
  if (strcmp(n->op_type, "Gather") != 0 || !idx->data || s->data || !s->producer ||
      strcmp(s->producer->op_type, "Shape") != 0 || s->producer->dead)
    return NULL;
  const graph_node *sh = s->producer;
  const graph_value *x = sh->in[0];
  int64_t axis = 0, start = 0, end = INT64_MAX;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  if (sh->opset >= 15) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, sh, "start", 0, &start));
    COV_RETURN_IF_ERROR(graph_attr_int(g, sh, "end", INT64_MAX, &end));
  }
  if (x->rank < 0 || (axis != 0 && axis != -1) || graph_numel(out) < 0) return NULL;
  int64_t r = x->rank;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : (start > r ? r : start);
  end = end < start ? start : (end > r ? r : end);
  int64_t len = end - start, count = graph_numel(idx);
  if (count != graph_numel(out) || count > COV_MAX_RANK * 8) return NULL;
  int64_t vals[COV_MAX_RANK * 8];
  for (int64_t i = 0; i < count; i++) {
    int64_t v =
        idx->dtype == COV_I64 ? ((const int64_t *)idx->data)[i] : ((const int32_t *)idx->data)[i];
    if (v < 0) v += len;
    if (v < 0 || v >= len || x->dims[start + v] < 0) return NULL;
    vals[i] = x->dims[start + v];
  }
  void *data = cov_arena_alloc(g->arena, (size_t)count * sizeof(int64_t));
  if (!data) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory folding constants");
  if (count) memcpy(data, vals, (size_t)count * sizeof(int64_t));
  out->data = data;
  out->kind = GV_CONSTANT;
  out->producer = NULL;
  n->dead = true;
  *folded = true;
  return NULL;
}

cov_status graph_fold_node(graph *g, graph_node *n, bool *folded) {
  *folded = false;
  if (n->dead) return NULL;
  if (!foldable(g, n)) return fold_shape_gather(g, n, folded);
  /* Run on copies of the outputs so that a failure leaves the graph as it
   * was (the node then simply runs at run time, or fails there). */
  graph_value tmp[64];
  graph_value *outs[64];
  if (n->n_out > 64) return NULL;
  for (int i = 0; i < n->n_out; i++) {
    outs[i] = NULL;
    if (!n->out[i]) continue;
    tmp[i] = *n->out[i];
    tmp[i].data = NULL;
    outs[i] = &tmp[i];
  }
  graph_exec x = {.g = g, .lib = g->lib};
  cov_status st = graph_exec_node(&x, n, n->in, outs);
  if (st) {
    /* A missing codelet is reported once, when the groups are bound; here
     * it only means the node cannot be folded. */
    if (cov_status_code(st) == COV_NOT_FOUND) {
      cov_status_free(st);
      return NULL;
    }
    return st;
  }
  for (int i = 0; i < n->n_out; i++) {
    if (!outs[i]) continue;
    graph_value *v = n->out[i];
    size_t bytes = (size_t)graph_numel(outs[i]) * cov_dtype_size(outs[i]->dtype);
    void *data = cov_arena_alloc(g->arena, bytes);
    if (!data)
      st = graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory folding constants");
    else if (bytes)
      memcpy(data, outs[i]->data, bytes);
    free(outs[i]->data);
    if (st) continue;
    graph_copy_type(v, outs[i]);
    v->data = data;
    v->kind = GV_CONSTANT;
    v->producer = NULL;
    g->folded_bytes += bytes;
  }
  if (st) return st;
  n->dead = true;
  *folded = true;
  return NULL;
}
