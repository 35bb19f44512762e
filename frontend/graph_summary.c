/* frontend/graph_summary.c: each layer group's summary (MACs, elements it
 * reads and writes across its boundary, why a layout group alters values),
 * what cov_model_group_get_info reports.
 *
 * Computed once, when the graph is final, in passes over the nodes linear
 * in the number of nodes and values. Found per group, the same facts (which
 * values depend on run-time inputs, who reads a group's results) would
 * need a walk over the whole graph for each group, quadratic over a model
 * of many small groups. */
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "frontend/graph.h"

/* Whether each value depends on the model's run-time inputs (not only on
 * constants and shapes): forward over the nodes, repeated until nothing
 * changes, so the result does not depend on the node order (in
 * topological order, the second pass confirms the first). */
static unsigned char *runtime_values(const graph *g) {
  unsigned char *rt = calloc(g->n_values ? g->n_values : 1, 1);
  if (!rt) return NULL;
  for (size_t i = 0; i < g->n_inputs; i++)
    if (!g->inputs[i]->data) rt[g->inputs[i]->id] = 1;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t q = 0; q < g->n_nodes; q++) {
      const graph_node *n = g->nodes[q];
      if (n->dead || !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size")) continue;
      int any = 0;
      for (int s = 0; s < n->n_in && !any; s++) any = n->in[s] && rt[n->in[s]->id];
      for (int o = 0; o < n->n_out && any; o++)
        if (n->out[o] && !n->out[o]->data && !rt[n->out[o]->id]) rt[n->out[o]->id] = 1, changed = 1;
    }
  }
  return rt;
}

/* Every value of `from` is exactly a value of `to` (and back). */
static int exact_widening(cov_dtype from, cov_dtype to) {
  if (from == to) return 1;
  if (to == COV_F64) return from == COV_F32 || from == COV_F16 || from == COV_BF16;
  return to == COV_F32 && (from == COV_F16 || from == COV_BF16);
}

/* Whether input slot s of layout node n is data the node moves, never a
 * position, count or shape: the first input of the operators that only
 * rearrange their data or pick its elements (a Gather's data; its indices
 * are positions), every input of a Concat. Run-time integers there
 * (i8 activations flattened before an integer matmul) are moved like any
 * element; anywhere else they say where to read or write. */
static int moved_data(const graph_node *n, int s) {
  static const char *const ops[] = {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity",
                                    "Split", "Slice", "Expand", "Tile", "DepthToSpace", "SpaceToDepth",
                                    "Gather", "GatherElements", "GatherND", NULL};
  if (!strcmp(n->op_type, "Concat")) return 1;
  for (const char *const *o = ops; *o; o++)
    if (!strcmp(n->op_type, *o)) return s == 0;
  return 0;
}

/* Why layout node n does not only move run-time elements (NULL: it does). */
static const char *node_alters(const graph_node *n, const unsigned char *rt) {
  const graph_value *x = n->n_in > 0 ? n->in[0] : NULL;
  int x_rt = x && rt[x->id];
  if (!strcmp(n->op_type, "Cast") || !strcmp(n->op_type, "CastLike")) {
    if (x_rt && n->out[0] && !exact_widening(x->dtype, n->out[0]->dtype))
      return "it converts run-time values to another element type (not an exact widening)";
    return NULL;
  }
  if (!strcmp(n->op_type, "TopK") && x_rt) return "it selects run-time values by comparing them";
  if (n->def && n->def->dynamic) return "the size or the values it makes depend on run-time values";
  if (!strncmp(n->op_type, "Scatter", 7)) {
    const graph_attr *a = graph_attr_find(n, "reduction");
    if (a && a->type == GA_STRING && a->s && strcmp(a->s, "none") != 0)
      return "it combines run-time values (a Scatter with a reduction)";
  }
  for (int s = 0; s < n->n_in; s++) {
    const graph_value *v = n->in[s];
    if (v && rt[v->id] && !cov_dtype_is_float(v->dtype) && !moved_data(n, s))
      return "where it reads or writes depends on run-time integers";
  }
  return NULL;
}

/* Group gi's numbers. read_outside: per value, whether a node of another
 * group than its producer's (or the graph's outputs) reads it; seen: per
 * value, the last group (+1) that counted it as an input, so a value read
 * by several of a group's nodes counts once. */
static void summarize(graph *g, int gi, const unsigned char *rt,
                      const unsigned char *read_outside, int *seen) {
  graph_group *grp = &g->groups[gi];
  grp->macs = grp->in_elems = grp->const_elems = grp->out_elems = 0;
  grp->alters = NULL;
  for (int k = 0; grp->layout && k < grp->n_nodes && !grp->alters; k++)
    grp->alters = node_alters(grp->nodes[k], rt);
  for (int k = 0; k < grp->n_nodes; k++) {
    const graph_node *n = grp->nodes[k];
    int64_t mk = graph_node_macs(n);
    grp->macs = (grp->macs < 0 || mk < 0) ? -1 : grp->macs + mk;
    for (int s = 0; s < n->n_in; s++) {
      const graph_value *v = n->in[s];
      if (!v || (v->producer && v->producer->group == gi) || seen[v->id] == gi + 1) continue;
      seen[v->id] = gi + 1;
      int64_t e = graph_numel(v);
      if (e < 0) continue;
      if (v->data) grp->const_elems += e;
      else grp->in_elems += e;
    }
    for (int o = 0; o < n->n_out; o++) {
      const graph_value *v = n->out[o];
      if (v && read_outside[v->id] && graph_numel(v) > 0) grp->out_elems += graph_numel(v);
    }
  }
}

cov_status graph_summarize_groups(graph *g) {
  size_t nv = g->n_values ? g->n_values : 1;
  unsigned char *rt = runtime_values(g), *outside = calloc(nv, 1);
  int *seen = calloc(nv, sizeof *seen);
  cov_status st = NULL;
  if (!rt || !outside || !seen) {
    cov_loc loc = {.file = g->file};
    st = cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
    goto done;
  }
  for (size_t q = 0; q < g->n_outputs; q++)
    if (g->outputs[q]) outside[g->outputs[q]->id] = 1;
  for (size_t q = 0; q < g->n_nodes; q++) {
    const graph_node *r = g->nodes[q];
    for (int s = 0; s < r->n_in; s++) {
      const graph_value *v = r->in[s];
      if (v && v->producer && v->producer->group != r->group) outside[v->id] = 1;
    }
  }
  for (size_t i = 0; i < g->n_groups; i++) summarize(g, (int)i, rt, outside, seen);
done:
  free(rt);
  free(outside);
  free(seen);
  return st;
}
