/* frontend/ops/graph_control.h: control flow (If, Loop, Scan) and its limits.
 *
 * A graph attribute (If's branches, Loop's and Scan's body) is read into a
 * subgraph (onnx_subgraph.c): a graph of its own, in its owner's arena,
 * whose names not defined in it are the enclosing scopes' values. Each such
 * value is captured: the subgraph gets a value of that name and the owner
 * node an implicit input reading the outer value, so that ordering, use
 * counts and liveness in the outer graph see the dependency. When the
 * owner is inferred at load, its subgraphs go through the model's pipeline
 * (graph_prepare: inference with folding, fusion into layer groups, ...),
 * their captured constants becoming constants inside them; at run time each
 * iteration or branch runs its subgraph with graph_run_sub, whose compute
 * groups are offered to the backend's hooks like the model's own. */
#ifndef COV_FRONTEND_GRAPH_CONTROL_H
#define COV_FRONTEND_GRAPH_CONTROL_H

#include "frontend/graph.h"

/* How deep subgraphs may nest (a Loop in a Loop's body is depth 2). */
#define GRAPH_MAX_SUBGRAPH_DEPTH 8
/* Nodes in all subgraphs of a model together. */
#define GRAPH_MAX_SUBGRAPH_NODES 100000
/* A Loop is unrolled when read (onnx_unroll.c) when its constant trip
 * count is at most GRAPH_UNROLL_MAX_TRIPS and its copies hold at most
 * GRAPH_UNROLL_MAX_NODES nodes; else it runs driven from the host. */
#define GRAPH_UNROLL_MAX_TRIPS 16
#define GRAPH_UNROLL_MAX_NODES 4096
/* Iterations of one Loop or Scan run. */
#define GRAPH_MAX_LOOP_ITERATIONS 100000

/* Elements of one output of an operator whose output size depends on the
 * data (NonZero, Compress, Unique, NonMaxSuppression: graph_dynamic.c,
 * graph_nms.c), checked before it is allocated. Each is also bounded by
 * its input (NonZero: rank x elements; Compress, Unique: the input's
 * elements; NonMaxSuppression: batches x classes x boxes x 3) and by the
 * memory limit. */
#define GRAPH_MAX_DYNAMIC_ELEMS ((int64_t)1 << 28)
/* Boxes per batch NonMaxSuppression compares (its work grows with their
 * square per class). */
#define GRAPH_MAX_NMS_BOXES 65536
/* Box pairs NonMaxSuppression may compare in one run: batches x classes x
 * boxes x min(boxes, max_output_boxes_per_class). */
#define GRAPH_MAX_NMS_PAIRS ((int64_t)1 << 32)

/* Sets v's shape (an operator's data-dependent result) and allocates it,
 * within GRAPH_MAX_DYNAMIC_ELEMS and the memory limit (graph_dynamic.c). */
cov_status graph_dynamic_alloc(const graph *g, const graph_node *n, graph_value *v, int rank,
                               const int64_t *dims);

/* A subgraph of `parent`, allocated in its arena (freed with it). */
graph *graph_create_sub(graph *parent);
/* Types n's subgraphs' inputs (formal inputs from n's inputs, captures
 * from the outer values they read) and runs the pipeline on them; once. */
cov_status graph_control_prepare(graph *g, graph_node *n);
/* Whether n has subgraphs. */
bool graph_has_subgraphs(const graph_node *n);
/* n's graph attribute `name`, prepared; NULL and *st set when it has none. */
const graph *graph_subgraph(const graph *g, const graph_node *n, const char *name,
                            cov_status *st);
/* out's type where it is one of several possible results (If's branches,
 * a Loop's iterations): dims that differ become unknown; b may be NULL. */
void graph_merge_type(graph_value *out, const graph_value *a, const graph_value *b);
/* Moves a subgraph's results res[0..n_out) into out[] (dtypes checked);
 * res's data is taken or freed. */
cov_status graph_adopt_results(const graph *g, const graph_node *n, graph_value *res,
                               graph_value *const *out, int n_out);

#endif
