/* frontend/ops/graph_taps.h: operators that sample their input at
 * data-dependent positions (GridSample, RoiAlign) describe each output point
 * as K taps, a source offset and a weight each; graph_taps.c gathers the
 * tapped elements (data movement) and the tap_sum codelet (pool.cdl) sums
 * them weighted (tap_max: their largest weighted value). */
#ifndef COV_FRONTEND_GRAPH_TAPS_H
#define COV_FRONTEND_GRAPH_TAPS_H

#include "frontend/graph.h"

/* Taps of `np` output points for each of `nb` sources: off[(b * np + p) *
 * k + t] is an element offset within one [H * W] plane of the source (-1:
 * the tap reads 0), w the same shape, src[b] the source image of row b. */
typedef struct graph_taps {
  int64_t nb, np, k;
  int64_t *off;
  double *w;
  int64_t *src;
} graph_taps;

/* Allocates the arrays for nb x np x k taps (zeroed, src[b] = b), each
 * size checked against the graph's memory limit first. */
cov_status graph_taps_alloc(const graph *g, const graph_node *n, graph_taps *t, int64_t nb,
                            int64_t np, int64_t k);
void graph_taps_free(graph_taps *t);
/* out[nb, C, np] (already shaped by inference) = the taps of src
 * ([N, C, H, W]) through `codelet` (tap_sum, or tap_max: the largest
 * weighted tap). */
cov_status graph_taps_run(graph_exec *x, const graph_node *n, const char *codelet,
                          const graph_value *src, const graph_taps *t, graph_value *out);

#endif
