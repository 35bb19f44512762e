/* frontend/ops/graph_control.c: subgraphs prepared at load, and If.
 *
 * See graph_control.h for how subgraphs are read and run. Preparing types a
 * subgraph's formal inputs from its owner (Loop: iteration number,
 * condition, loop-carried values; Scan: states, one slice of each scanned
 * input; If: none) and its captures from the outer values they read, then
 * runs the model's pipeline on it. Loop-carried values and states may
 * change shape from one iteration to the next, so inside the body their
 * dims are unknown at load (their rank and dtype are kept); what the body
 * computes from them is resolved per run, like a model's symbolic dims. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"

bool graph_has_subgraphs(const graph_node *n) {
  for (int i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].type == GA_GRAPH && n->attrs[i].sub) return true;
  return false;
}

/* A formal input of the subgraph takes the dtype of `src` (its declared
 * one must agree) and src's rank; with `keep_dims`, src's dims too. */
static cov_status type_formal(const graph *g, const graph_node *n, const graph *sub, size_t i,
                              const graph_value *src, cov_dtype dtype, int rank, bool keep_dims) {
  graph_value *v = sub->inputs[i];
  if (v->dtype != COV_DTYPE_INVALID && v->dtype != dtype) {
    char want[64], got[64];
    graph_value w = {.dtype = dtype, .rank = -1}, d = {.dtype = v->dtype, .rank = -1};
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "subgraph '%s' declares its input %zu ('%s') %s, but it receives %s",
                            sub->name, i, v->name, graph_type_str(&d, got, sizeof got),
                            graph_type_str(&w, want, sizeof want));
  }
  v->dtype = dtype;
  if (src && src->seq) { /* a sequence (graph_sequence.h): no shape */
    v->seq = true;
    v->opt = src->opt;
    v->opt_seq = src->opt_seq;
    graph_set_shape(v, -1, NULL);
    return NULL;
  }
  if (v->rank >= 0 && rank >= 0 && v->rank != rank)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "subgraph '%s' declares its input %zu ('%s') of rank %d, but it "
                            "receives rank %d",
                            sub->name, i, v->name, v->rank, rank);
  if (keep_dims && src) {
    graph_copy_type(v, src);
    if (rank >= 0 && rank < src->rank) graph_set_shape(v, rank, NULL);
  } else {
    graph_set_shape(v, rank >= 0 ? rank : v->rank, NULL);
  }
  return NULL;
}

static cov_status arity_error(const graph *g, const graph_node *n, const graph *sub, size_t want,
                              const char *what) {
  return graph_node_error(g, n, COV_INVALID_INPUT, "subgraph '%s' takes %zu inputs; %s takes %zu",
                          sub->name, sub->n_inputs, what, want);
}

/* Loop's body: iteration number, condition, then the loop-carried values. */
static cov_status type_loop_body(const graph *g, const graph_node *n, const graph *sub) {
  int nf = n->n_in - n->n_implicit;
  if (nf < 2 || sub->n_inputs != (size_t)nf)
    return arity_error(g, n, sub, (size_t)(nf < 2 ? 2 : nf),
                       "with this node's loop-carried values its body");
  graph_value *it = sub->inputs[0], *cond = sub->inputs[1];
  if (it->dtype == COV_DTYPE_INVALID) it->dtype = COV_I64, it->rank = 0;
  if (cond->dtype == COV_DTYPE_INVALID) cond->dtype = COV_BOOL, cond->rank = 0;
  if (it->dtype != COV_I64 || cond->dtype != COV_BOOL || graph_numel(it) > 1 ||
      graph_numel(cond) > 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "the body's first two inputs must be the int64 iteration number and "
                            "the bool condition, one element each");
  for (int i = 2; i < nf; i++)
    if (!n->in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d has no name", i);
  for (int i = 2; i < nf; i++)
    COV_RETURN_IF_ERROR(
        type_formal(g, n, sub, (size_t)i, n->in[i], n->in[i]->dtype, n->in[i]->rank, false));
  return NULL;
}

/* Scan's body: the states, then one slice of each scanned input (the scan
 * axis removed; its other dims are fixed). Opset 8 is batched: its first
 * input is sequence_lens, and axis 0 of the others the batch, not seen by
 * the body, whose slices are along axis 1. */
static cov_status type_scan_body(const graph *g, const graph_node *n, const graph *sub) {
  int first = n->opset < 9 ? 1 : 0, nf = n->n_in - n->n_implicit - first;
  int64_t m = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "num_scan_inputs", 0, &m));
  if (m < 1 || m > nf)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "num_scan_inputs is %lld; it must be 1 to the node's %d inputs",
                            (long long)m, nf);
  if (sub->n_inputs != (size_t)nf) return arity_error(g, n, sub, (size_t)nf, "the node");
  const int64_t *axes = NULL;
  size_t n_axes = 0;
  if (!first) COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_input_axes", &axes, &n_axes));
  for (int i = 0; i < nf; i++) {
    const graph_value *src = n->in[first + i];
    if (!src) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d has no name", first + i);
    bool scanned = i >= nf - m;
    int drop = first + (scanned ? 1 : 0), ax = first; /* dims the body does not see */
    if (src->rank >= 0 && src->rank < drop)
      return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d", src->name,
                              src->rank);
    if (!scanned) {
      COV_RETURN_IF_ERROR(type_formal(g, n, sub, (size_t)i, src, src->dtype,
                                      src->rank < 0 ? -1 : src->rank - first, false));
      continue;
    }
    int k = i - (int)(nf - m);
    if (axes && (size_t)k < n_axes && src->rank >= 0)
      COV_RETURN_IF_ERROR(graph_axis(g, n, axes[k], src->rank, "scan_input_axes", &ax));
    graph_value slice = {.dtype = src->dtype, .rank = src->rank < 0 ? -1 : src->rank - drop};
    for (int d = first, o = 0; d < src->rank; d++)
      if (d != ax) slice.dims[o++] = src->dims[d];
    COV_RETURN_IF_ERROR(type_formal(g, n, sub, (size_t)i, &slice, src->dtype, slice.rank, true));
  }
  return NULL;
}

/* SequenceMap's body: one element of each sequence input (its dims left
 * to the run), the tensor inputs whole. */
static cov_status type_seqmap_body(const graph *g, const graph_node *n, const graph *sub) {
  int nf = n->n_in - n->n_implicit;
  if (sub->n_inputs != (size_t)nf) return arity_error(g, n, sub, (size_t)nf, "the node");
  for (int i = 0; i < nf; i++) {
    const graph_value *src = n->in[i];
    if (!src) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d has no name", i);
    graph_value elem = {.dtype = src->dtype, .rank = -1};
    COV_RETURN_IF_ERROR(type_formal(g, n, sub, (size_t)i, src->seq ? &elem : src, src->dtype,
                                    src->seq ? -1 : src->rank, !src->seq));
  }
  return NULL;
}

/* Captured outer constants become constants of the subgraph (so that its
 * layers see their weights); the rest stay inputs bound at run time. */
static void type_captures(const graph_node *n, graph *sub) {
  size_t kept = 0;
  for (size_t k = 0; k < sub->n_captures; k++) {
    graph_value *v = sub->captures[k];
    const graph_value *o = n->in[sub->capture_slot[k]];
    graph_copy_type(v, o);
    if (o->kind == GV_INITIALIZER || o->kind == GV_CONSTANT) {
      v->kind = GV_CONSTANT;
      v->data = o->data;
      continue;
    }
    sub->captures[kept] = v;
    sub->capture_slot[kept++] = sub->capture_slot[k];
  }
  sub->n_captures = kept;
}

cov_status graph_control_prepare(graph *g, graph_node *n) {
  for (int i = 0; i < n->n_attrs; i++) {
    graph_attr *a = &n->attrs[i];
    if (a->type != GA_GRAPH || !a->sub) continue;
    graph *sub = a->sub;
    cov_status st = NULL;
    if (!strcmp(n->op_type, "Loop"))
      st = type_loop_body(g, n, sub);
    else if (!strcmp(n->op_type, "Scan"))
      st = type_scan_body(g, n, sub);
    else if (!strcmp(n->op_type, "SequenceMap"))
      st = type_seqmap_body(g, n, sub);
    else if (sub->n_inputs)
      st = arity_error(g, n, sub, 0, "a branch of If");
    if (st) return st;
    type_captures(n, sub);
    st = graph_prepare(sub, g->no_fold, false);
    if (st)
      return cov_status_annotate(st, "in subgraph '%s' of node '%s' (%s): ", a->name, n->name,
                                 n->op_type);
  }
  return NULL;
}

/* ---- If ---------------------------------------------------------------- */

const graph *graph_subgraph(const graph *g, const graph_node *n, const char *name,
                            cov_status *st) {
  const graph_attr *a = graph_attr_find(n, name);
  *st = NULL;
  if (a && a->type == GA_GRAPH && a->sub) return a->sub;
  *st = graph_node_error(g, n, COV_INVALID_INPUT, "needs the graph attribute '%s'", name);
  return NULL;
}

void graph_merge_type(graph_value *out, const graph_value *a, const graph_value *b) {
  graph_copy_type(out, a);
  if (!b) return;
  if (a->rank != b->rank) {
    graph_set_shape(out, -1, NULL);
    return;
  }
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) out->dims[d] = -1;
}

cov_status graph_infer_if(const graph *g, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  cov_status st;
  const graph *t = graph_subgraph(g, n, "then_branch", &st);
  if (!t) return st;
  const graph *e = graph_subgraph(g, n, "else_branch", &st);
  if (!e) return st;
  if (t->n_outputs != (size_t)n->n_out || e->n_outputs != (size_t)n->n_out)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "has %d outputs, but its then branch makes %zu and its else branch "
                            "%zu: each branch makes one value per output",
                            n->n_out, t->n_outputs, e->n_outputs);
  if (in[0]->dtype != COV_BOOL || graph_numel(in[0]) > 1 || graph_numel(in[0]) == 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "cond must be one bool element");
  for (int i = 0; i < n->n_out; i++) {
    const graph_value *a = t->outputs[i], *b = e->outputs[i];
    if (a->dtype != b->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "output %d is %s in the then branch but %s in the else branch", i,
                              cov_dtype_name(a->dtype), cov_dtype_name(b->dtype));
    if (out[i]) graph_merge_type(out[i], a, b);
  }
  return NULL;
}

cov_status graph_adopt_results(const graph *g, const graph_node *n, graph_value *res,
                               graph_value *const *out, int n_out) {
  cov_status st = NULL;
  for (int i = 0; i < n_out; i++) {
    if (!st && out[i] && res[i].dtype != out[i]->dtype)
      st = graph_node_error(g, n, COV_INVALID_INPUT, "output %d is %s, but its subgraph made %s",
                            i, cov_dtype_name(out[i]->dtype), cov_dtype_name(res[i].dtype));
    if (st || !out[i]) {
      free(res[i].data);
      res[i].data = NULL;
      continue;
    }
    graph_set_shape(out[i], res[i].rank, res[i].dims);
    out[i]->data = res[i].data;
    res[i].data = NULL;
  }
  return st;
}

cov_status graph_exec_if(graph_exec *x, const graph_node *n, graph_value *const *in,
                         graph_value *const *out) {
  cov_status st;
  bool c = graph_load_int(in[0]->data, in[0]->dtype, 0) != 0;
  const graph *br = graph_subgraph(x->g, n, c ? "then_branch" : "else_branch", &st);
  if (!br) return st;
  graph_value *res = calloc((size_t)n->n_out, sizeof *res);
  if (!res) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  st = graph_run_sub(x, br, NULL, 0, in, res);
  if (st)
    st = cov_status_annotate(st, "in the %s branch of node '%s' (If): ", c ? "then" : "else",
                             n->name);
  else
    st = graph_adopt_results(x->g, n, res, out, n->n_out);
  free(res);
  return st;
}
