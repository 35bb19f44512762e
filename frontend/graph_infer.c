/* frontend/graph_infer.c: shape and dtype inference over the whole graph.
 *
 * Nodes are visited in topological order; each operator's rule (the same
 * function the executor applies at run time) derives its outputs' dtypes and
 * shapes from its inputs, reading constant inputs (Reshape's shape, Slice's
 * starts) where it needs them. Constants are folded as soon as a node's
 * inputs are all known, so a chain such as Shape -> Gather -> Concat ->
 * Reshape resolves in this single pass. A node whose rule fails poisons its
 * outputs and its dependents are skipped, so each independent problem is
 * reported once, not as a cascade. */
#include <stdlib.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_control.h"

cov_status graph_infer(graph *g) {
  cov_status errs = NULL;
  size_t n_errs = 0;
  bool *poisoned = calloc(g->n_values ? g->n_values : 1, sizeof *poisoned);
  if (!poisoned) return graph_node_error(g, NULL, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < g->n_nodes && n_errs < 100; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead) continue;
    if (!n->def) { /* the reader refuses such models; never trust that blindly */
      errs = cov_status_join(errs, graph_node_error(g, n, COV_INTERNAL, "no operator definition"));
      break;
    }
    bool skip = false;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j] && (poisoned[n->in[j]->id] || n->in[j]->dtype == COV_DTYPE_INVALID)) skip = true;
    cov_status st = NULL;
    if (!skip && graph_has_subgraphs(n)) st = graph_control_prepare(g, n);
    if (!skip && !st) st = n->def->infer(g, n, n->in, n->out);
    for (int j = 0; j < n->n_out && !st && !skip; j++)
      if (n->out[j]) st = graph_check_shape(g, n, n->out[j]);
    if (skip || st) {
      for (int j = 0; j < n->n_out; j++)
        if (n->out[j]) poisoned[n->out[j]->id] = true;
      if (st) {
        n_errs++;
        errs = cov_status_join(errs, st);
      }
      continue;
    }
    if (g->no_fold && n->n_in > 0) continue;
    bool folded;
    st = graph_fold_node(g, n, &folded);
    if (st) {
      n_errs++;
      errs = cov_status_join(errs, st);
      for (int j = 0; j < n->n_out; j++)
        if (n->out[j]) poisoned[n->out[j]->id] = true;
    }
  }
  free(poisoned);
  return errs;
}
