/* frontend/graph_iter.h: what Loop (graph_loop.c) and Scan (graph_scan.c)
 * share: the running state passed from one iteration to the next, and the
 * stacks their scan outputs are built in. */
#ifndef COV_FRONTEND_GRAPH_ITER_H
#define COV_FRONTEND_GRAPH_ITER_H

#include "frontend/ops/graph_control.h"

/* One stacked output: the slices so far, [count, slice dims]. */
typedef struct stack_acc {
  unsigned char *data;
  size_t bytes, cap;
  int64_t count;
  graph_value slice; /* the first slice's type: every later one must match */
} stack_acc;

/* The running state: borrowed from the node's inputs at first, then the
 * body's results, owned. */
typedef struct loop_state {
  graph_value *v;
  bool *owned;
  int n;
} loop_state;

/* Appends slice v (iteration a->count) to scan output j: every slice must
 * have the first one's type; the stack is bounded by the memory limit. */
cov_status graph_acc_append(const graph *g, const graph_node *n, stack_acc *a, int j,
                            const graph_value *v);
/* The stacked result into out: [count, slice] with the iterations' axis
 * moved to `axis` and their order reversed with `reverse`; `decl` gives
 * the slice's type when there were no iterations. Takes a->data. */
cov_status graph_acc_finish(const graph *g, const graph_node *n, stack_acc *a,
                            const graph_value *decl, int64_t axis, bool reverse, graph_value *out);
/* The state borrows in[0..count) until the first iteration's results. */
cov_status graph_state_init(const graph *g, const graph_node *n, loop_state *s,
                            graph_value *const *in, int count);
/* Takes the body's results res[0..s->n) as the new state. */
cov_status graph_state_take(const graph *g, const graph_node *n, loop_state *s, graph_value *res);
/* The final state into the node's outputs (copied where still borrowed). */
cov_status graph_state_out(const graph *g, const graph_node *n, loop_state *s,
                           graph_value *const *out);
void graph_state_free(loop_state *s);

#endif
