/* frontend/passes/graph_range.c: the values an integer input may take
 * (cov_model_input_range), so random inputs are valid ones.
 *
 * Token ids index an embedding table: a random int64 in [-2^63, 2^63) is an
 * out-of-range Gather, not a test of the model. An input read as a
 * Gather's indices, directly or through data movement that keeps values
 * (Reshape, Unsqueeze, Squeeze, Flatten, Identity, Cast between integers,
 * Expand), ranges over the rows of the gathered axis: [0, rows - 1] (the
 * smallest such table where there are several). A bool input is {0, 1}; an
 * i8 / u8 one its whole range. Other integer inputs (attention masks,
 * counts) have no range the graph tells: {0, 1}, what a mask takes, and
 * the caller says so. */
#include <string.h>

#include "frontend/graph.h"

static int keeps_values(const graph_node *n) {
  static const char *const ops[] = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand", "Cast", NULL};
  for (const char *const *o = ops; *o; o++)
    if (!strcmp(n->op_type, *o)) return !strcmp(*o, "Cast") ? !cov_dtype_is_float(n->out[0]->dtype) : 1;
  return 0;
}

/* The fewest rows of the tables v indexes (through value-keeping
 * movement), at most `depth` nodes deep; INT64_MAX when it indexes none. */
static int64_t rows_indexed(const graph *g, const graph_value *v, int depth) {
  int64_t best = INT64_MAX;
  for (size_t k = 0; k < g->n_nodes && depth > 0; k++) {
    const graph_node *n = g->nodes[k];
    for (int j = 0; j < n->n_in; j++) {
      if (n->in[j] != v) continue;
      if (!strcmp(n->op_type, "Gather") && j == 1 && n->in[0] && n->in[0]->rank > 0) {
        int64_t axis = 0;
        const graph_attr *a = graph_attr_find(n, "axis");
        if (a && a->type == GA_INT) axis = a->i;
        if (axis < 0) axis += n->in[0]->rank;
        if (axis >= 0 && axis < n->in[0]->rank && n->in[0]->dims[axis] > 0 && n->in[0]->dims[axis] < best)
          best = n->in[0]->dims[axis];
      } else if (keeps_values(n) && j == 0 && n->out[0]) {
        int64_t r = rows_indexed(g, n->out[0], depth - 1);
        if (r < best) best = r;
      }
    }
  }
  return best;
}

int graph_input_range(const graph *g, const graph_value *v, int64_t *lo, int64_t *hi) {
  switch (v->dtype) {
    case COV_BOOL: *lo = 0, *hi = 1; return 1;
    case COV_I8: *lo = -128, *hi = 127; return 1;
    case COV_U8: *lo = 0, *hi = 255; return 1;
    case COV_I32:
    case COV_I64: break;
    default: return 0;
  }
  int64_t rows = rows_indexed(g, v, 8);
  *lo = 0, *hi = rows != INT64_MAX ? rows - 1 : 1;
  return rows != INT64_MAX ? 1 : 2;
}
