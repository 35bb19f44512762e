/* frontend/ops/graph_geom.h: window geometry shared by the operators that slide a
 * kernel over spatial dims (Conv, ConvTranspose in graph_conv.c; the pools in
 * graph_pool.c): attribute reading, auto_pad, ceil_mode and output sizes. */
#ifndef COV_FRONTEND_GRAPH_GEOM_H
#define COV_FRONTEND_GRAPH_GEOM_H

#include <stdbool.h>

#include "frontend/graph.h"

/* Attribute values beyond this are refused: nothing real needs them and it
 * keeps every size computation far from int64 overflow. */
#define GEOM_MAX ((int64_t)1 << 30)

/* Window geometry of up to two spatial dims (a 1-D op uses index 1 only;
 * index 0 is then the trivial height 1). */
typedef struct geom {
  int sp; /* spatial dims as the model has them: 1 or 2 */
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3], extra[3];
} geom;

/* Reads the int list attribute `name` (one value per spatial dim, each in
 * [lo, GEOM_MAX]) into v, right-aligned to 3 dims; absent: all `def`. */
cov_status graph_geom_read_spatial(const graph *g, const graph_node *n, const char *name, int sp,
                                   int64_t def, int64_t lo, int64_t *v);
/* Strides, dilations, pads and auto_pad; kernel and input sizes already in
 * c->k and c->in (an input dim of -1 leaves the output dim unknown). */
cov_status graph_geom_window(const graph *g, const graph_node *n, geom *c, bool ceil_mode,
                             bool has_dilations);
/* The number of spatial dims of x ([N, C, spatial...]), refusing more than max_sp. */
cov_status graph_geom_spatial_rank(const graph *g, const graph_node *n, const graph_value *x,
                                   int max_sp, int *sp);
/* c->in from x's spatial dims (c->sp set). */
void graph_geom_set_in(geom *c, const graph_value *x);

#endif
