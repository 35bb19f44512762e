/* frontend/model_region.h: the part of a model's top-level graph whose
 * sizes depend on the data (model_region.c), for the model as a program
 * (model_program.c): found, then bounded by a run in bound mode. */
#ifndef MODEL_REGION_H
#define MODEL_REGION_H

#include <stdbool.h>

#include "frontend/graph.h"

typedef struct graph_region {
  bool *node;                    /* per node index of the graph: in the region */
  const graph_value **inputs;    /* values the region reads that the rest makes (or graph inputs) */
  size_t n_inputs;
  const graph_value **outputs;   /* graph outputs the region makes */
  size_t n_outputs;
  graph_value *bound;            /* per value id: its shape in the bound run (rank -1: not run) */
} graph_region;

/* Whether a value of graph g has one shape in every run. */
typedef bool (*graph_fixed_fn)(void *user, const graph *g, const graph_value *v);

/* The region of g: every node with an output that is not fixed, or whose
 * subgraphs hold an operator with a data-dependent output size, every node
 * that reads what a region node makes (through its subgraphs too), and
 * every node of a layer group one of them is in. Empty (n_outputs 0, node
 * all false) when the model has none, or when it holds a Loop or a Scan
 * (whose sizes no run bounds). */
cov_status graph_region_find(const graph *g, graph_fixed_fn fixed, void *user, graph_region *r);
/* Runs g on probe in bound mode (graph_run_io.bound) and records the
 * shape each value had: the capacities of the region's outputs. */
cov_status graph_region_bound(const graph *g, const cov_tensor *probe, size_t n_probe, graph_region *r);
void graph_region_free(graph_region *r);

#endif
