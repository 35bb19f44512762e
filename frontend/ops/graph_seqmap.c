/* frontend/ops/graph_seqmap.c: SequenceMap (opset 17): its body (a subgraph,
 * graph_control.h) runs once per element of the input sequence, reading
 * that element, the same element of each further sequence input and the
 * tensor inputs whole; each of its outputs becomes a sequence of the
 * iterations' results. Elements are bounded by GRAPH_MAX_SEQUENCE_LENGTH. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"
#include "frontend/ops/graph_sequence.h"

cov_status graph_infer_seqmap(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  cov_status st;
  const graph *b = graph_subgraph(g, n, "body", &st);
  if (!b) return st;
  if (!in[0]->seq)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' is not a sequence", in[0]->name);
  if (b->n_outputs != (size_t)n->n_out)
    return graph_node_error(g, n, COV_INVALID_INPUT, "has %d outputs, but its body makes %zu",
                            n->n_out, b->n_outputs);
  for (int j = 0; j < n->n_out; j++) {
    if (!out[j]) continue;
    out[j]->dtype = b->outputs[j]->dtype;
    out[j]->seq = true;
    out[j]->opt = false;
    graph_set_shape(out[j], -1, NULL);
  }
  return NULL;
}

/* Iteration k's results (owned) into store[k * n_out + j]. */
static cov_status map_all(graph_exec *x, const graph_node *n, graph_value *const *in,
                          const graph *b, size_t len, graph_value *store) {
  int nf = n->n_in - n->n_implicit;
  graph_value *elems = calloc((size_t)nf + 1, sizeof *elems);
  graph_value **bin = calloc((size_t)nf + 1, sizeof *bin);
  cov_status st = elems && bin ? NULL : graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t k = 0; k < len && !st; k++) {
    for (int i = 0; i < nf; i++) {
      if (in[i]->seq) elems[i] = graph_seq_at(in[i], k);
      bin[i] = in[i]->seq ? &elems[i] : in[i];
    }
    st = graph_run_sub(x, b, bin, (size_t)nf, in, store + k * (size_t)n->n_out);
    if (st) st = cov_status_annotate(st, "element %zu of node '%s' (SequenceMap): ", k, n->name);
  }
  free(elems);
  free(bin);
  return st;
}

cov_status graph_exec_seqmap(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  const graph *g = x->g;
  cov_status st;
  const graph *b = graph_subgraph(g, n, "body", &st);
  if (!b) return st;
  size_t len = graph_seq_length(in[0]), no = (size_t)n->n_out;
  for (int i = 1; i < n->n_in - n->n_implicit; i++)
    if (in[i]->seq && graph_seq_length(in[i]) != len)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "input %d has %zu elements, input 0 %zu: they must agree", i,
                              graph_seq_length(in[i]), len);
  graph_value *store = calloc(len * no + 1, sizeof *store);
  const graph_value **items = calloc(len + 1, sizeof *items);
  st = store && items ? map_all(x, n, in, b, len, store)
                      : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t j = 0; j < no && !st; j++) {
    if (!out[j]) continue;
    for (size_t k = 0; k < len; k++) items[k] = &store[k * no + j];
    st = graph_seq_make(g, n, items, len, out[j]);
  }
  for (size_t k = 0; store && k < len * no; k++) free(store[k].data);
  free(store);
  free(items);
  return st;
}
