/* frontend/passes/graph_simplify.c: Identity and inference-mode Dropout
 * elimination, and dead-code removal.
 *
 * An Identity, or a Dropout whose mask nobody reads, is removed by pointing
 * every reader of its output at its input. When that output is a graph
 * output, the graph output is re-pointed and keeps the model's name for it.
 * Dead-code removal drops nodes none of whose outputs reach a graph output. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"

static void replace_uses(graph *g, graph_value *from, graph_value *to) {
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead) continue;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j] == from) n->in[j] = to;
  }
  for (size_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
}

static bool is_graph_output(const graph *g, const graph_value *v) {
  for (size_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return true;
  return false;
}

cov_status graph_eliminate_identities(graph *g) {
  graph_recount(g);
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    if (n->dead || !n->out[0] || !n->in[0]) continue;
    bool identity = strcmp(n->op_type, "Identity") == 0;
    if (strcmp(n->op_type, "Dropout") == 0) {
      /* The mask must be unread, and training_mode and ratio (if given)
       * known at load: shape inference refused the pairs that are not a
       * copy (training with a ratio above 0), and a value fed at run time
       * is checked by the run's own inference. */
      bool mask_used =
          n->n_out > 1 && n->out[1] && (n->out[1]->n_uses > 0 || is_graph_output(g, n->out[1]));
      bool mode_known = !(n->n_in > 2 && n->in[2] && !n->in[2]->data) &&
                        !(n->n_in > 1 && n->in[1] && !n->in[1]->data);
      identity = !mask_used && mode_known;
    }
    if (!identity) continue;
    /* Two graph outputs cannot become one value, and a graph input cannot
     * be a graph output under another name without a copy: keep the node. */
    if (is_graph_output(g, n->out[0]) &&
        (is_graph_output(g, n->in[0]) || n->in[0]->kind == GV_INPUT))
      continue;
    replace_uses(g, n->out[0], n->in[0]);
    n->dead = true;
  }
  graph_recount(g);
  return NULL;
}

void graph_eliminate_dead(graph *g) {
  graph_recount(g);
  /* Reverse topological order: a node's readers are decided before it. */
  for (size_t i = g->n_nodes; i-- > 0;) {
    graph_node *n = g->nodes[i];
    if (n->dead) continue;
    bool live = false;
    for (int j = 0; j < n->n_out && !live; j++)
      if (n->out[j] && (n->out[j]->n_uses > 0 || is_graph_output(g, n->out[j]))) live = true;
    if (live) continue;
    n->dead = true;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j]) n->in[j]->n_uses--;
  }
  graph_compact(g);
}
