/* frontend/ops/graph_gridsample.c: GridSample (4-D input), sampled as
 * PyTorch's grid_sample computes (the ONNX test data's origin): each output
 * point's grid (x, y) in [-1, 1] is unnormalised to a source position
 * (align_corners: the corner pixels' centres, else their outer edges),
 * moved inside by padding_mode (border: clipped; reflection: reflected,
 * then clipped; zeros: left, its outside taps read 0) and interpolated
 * (nearest: the nearest pixel, halves to even; bilinear: 4 taps; bicubic:
 * 16 taps with A = -0.75, each tap's coordinate padded on its own). The
 * taps' offsets and weights are computed here, the weighted sum by the
 * tap_sum codelet (graph_taps.c). A non-finite grid value samples 0. */
#include <math.h>
#include <string.h>

#include "common/op_table.h"
#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"
#include "frontend/ops/graph_taps.h"

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

typedef struct gs_params {
  int mode, pad;
  bool align;
} gs_params;

static cov_status gs_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                               gs_params *p) {
  const char *mode, *pad;
  int64_t align;
  const char *def_mode = n->opset >= 20 ? "linear" : "bilinear";
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "mode", def_mode, &mode));
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "padding_mode", "zeros", &pad));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "align_corners", 0, &align));
  if (strcmp(mode, "nearest") == 0)
    p->mode = GS_NEAREST;
  else if (strcmp(mode, n->opset >= 20 ? "linear" : "bilinear") == 0)
    p->mode = GS_LINEAR;
  else if (strcmp(mode, n->opset >= 20 ? "cubic" : "bicubic") == 0)
    p->mode = GS_CUBIC;
  else
    return graph_node_error(g, n, COV_INVALID_INPUT, "mode '%s' is not one of nearest, %s", mode,
                            n->opset >= 20 ? "linear, cubic" : "bilinear, bicubic");
  if (strcmp(pad, "zeros") == 0)
    p->pad = GS_ZEROS;
  else if (strcmp(pad, "border") == 0)
    p->pad = GS_BORDER;
  else if (strcmp(pad, "reflection") == 0)
    p->pad = GS_REFLECTION;
  else
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "padding_mode '%s' is not zeros, border or reflection", pad);
  if (align != 0 && align != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "align_corners %lld is not 0 or 1",
                            (long long)align);
  p->align = align != 0;
  const graph_value *x = in[0], *grid = in[1];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (grid->dtype != x->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "grid '%s' is %s but the input is %s",
                            grid->name, cov_dtype_name(grid->dtype), cov_dtype_name(x->dtype));
  if (x->rank >= 0 && x->rank != 4)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "input '%s' has rank %d; covenant samples 2-D images [N, C, H, W]",
                            x->name, x->rank);
  if (grid->rank >= 0 && (grid->rank != 4 || (grid->dims[3] >= 0 && grid->dims[3] != 2)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "grid '%s' must be [N, H_out, W_out, 2]",
                            grid->name);
  if (x->rank == 4 && grid->rank == 4 && x->dims[0] >= 0 && grid->dims[0] >= 0 &&
      x->dims[0] != grid->dims[0])
    return graph_node_error(g, n, COV_INVALID_INPUT, "grid '%s' has batch %lld, the input %lld",
                            grid->name, (long long)grid->dims[0], (long long)x->dims[0]);
  return NULL;
}

cov_status graph_infer_grid_sample(const graph *g, const graph_node *n, graph_value *const *in,
                                   graph_value *const *out) {
  gs_params p;
  COV_RETURN_IF_ERROR(gs_params_of(g, n, in, &p));
  out[0]->dtype = in[0]->dtype;
  int64_t d[4] = {in[0]->rank == 4 ? in[0]->dims[0] : -1, in[0]->rank == 4 ? in[0]->dims[1] : -1,
                  in[1]->rank == 4 ? in[1]->dims[1] : -1, in[1]->rank == 4 ? in[1]->dims[2] : -1};
  graph_set_shape(out[0], 4, d);
  return NULL;
}

static double reflect(double v, double twice_lo, double twice_hi) {
  if (twice_lo == twice_hi) return 0;
  double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
  v = fabs(v - lo);
  double extra = fmod(v, span), flips = floor(v / span);
  return fmod(flips, 2.0) == 0 ? extra + lo : span - extra + lo;
}

/* A source coordinate moved inside by the padding mode (zeros: unchanged). */
static double pad_coord(const gs_params *p, double v, int64_t size) {
  if (p->pad == GS_REFLECTION)
    v = p->align ? reflect(v, 0, 2.0 * (double)(size - 1)) : reflect(v, -1, 2.0 * (double)size - 1);
  if (p->pad != GS_ZEROS) v = fmin(fmax(v, 0), (double)(size - 1));
  return v;
}

static double unnormalize(const gs_params *p, double v, int64_t size) {
  return p->align ? (v + 1) / 2 * (double)(size - 1) : ((v + 1) * (double)size - 1) / 2;
}

/* Cubic convolution weights (A = -0.75) for fraction t. */
static void cubic_w(double t, double w[4]) {
  const double a = -0.75;
  double x;
  x = t + 1, w[0] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  x = t, w[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  x = 1 - t, w[2] = ((a + 2) * x - (a + 3)) * x * x + 1;
  x = 2 - t, w[3] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/* One tap at integer (ix, iy) given as doubles, weight wt; outside: 0. */
static void put_tap(int64_t *off, double *w, double ix, double iy, double wt, int64_t h,
                    int64_t wd) {
  if (ix >= 0 && iy >= 0 && ix < (double)wd && iy < (double)h) {
    *off = (int64_t)iy * wd + (int64_t)ix;
    *w = wt;
  } else {
    *off = -1;
    *w = 0;
  }
}

static void point_taps(const gs_params *p, double gx, double gy, int64_t h, int64_t wd,
                       int64_t *off, double *w) {
  int k = p->mode == GS_CUBIC ? 16 : p->mode == GS_LINEAR ? 4 : 1;
  for (int t = 0; t < k; t++) off[t] = -1, w[t] = 0;
  double x = unnormalize(p, gx, wd), y = unnormalize(p, gy, h);
  if (!isfinite(x) || !isfinite(y)) return;
  /* Positions stay doubles until put_tap converts one inside the image:
   * no conversion of a far-away coordinate to an integer. */
  if (p->mode == GS_CUBIC) {
    double x0 = floor(x), y0 = floor(y), wx[4], wy[4];
    cubic_w(x - x0, wx);
    cubic_w(y - y0, wy);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++)
        put_tap(&off[i * 4 + j], &w[i * 4 + j], pad_coord(p, x0 - 1 + j, wd),
                pad_coord(p, y0 - 1 + i, h), wy[i] * wx[j], h, wd);
    return;
  }
  x = pad_coord(p, x, wd), y = pad_coord(p, y, h);
  if (p->mode == GS_NEAREST) {
    put_tap(off, w, common_round_even(x), common_round_even(y), 1, h, wd);
    return;
  }
  double x0 = floor(x), y0 = floor(y), fx = x - x0, fy = y - y0;
  put_tap(&off[0], &w[0], x0, y0, (1 - fx) * (1 - fy), h, wd);
  put_tap(&off[1], &w[1], x0 + 1, y0, fx * (1 - fy), h, wd);
  put_tap(&off[2], &w[2], x0, y0 + 1, (1 - fx) * fy, h, wd);
  put_tap(&off[3], &w[3], x0 + 1, y0 + 1, fx * fy, h, wd);
}

cov_status graph_exec_grid_sample(graph_exec *x, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  gs_params p;
  COV_RETURN_IF_ERROR(gs_params_of(x->g, n, in, &p));
  const graph_value *src = in[0], *grid = in[1];
  int64_t nb = src->dims[0], h = src->dims[2], wd = src->dims[3];
  int64_t np = grid->dims[1] * grid->dims[2];
  int k = p.mode == GS_CUBIC ? 16 : p.mode == GS_LINEAR ? 4 : 1;
  graph_taps t;
  COV_RETURN_IF_ERROR(graph_taps_alloc(x->g, n, &t, nb, np, k));
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < np; i++) {
      size_t e = (size_t)((b * np + i) * 2);
      double gx = graph_load_elem(grid->data, grid->dtype, e);
      double gy = graph_load_elem(grid->data, grid->dtype, e + 1);
      point_taps(&p, gx, gy, h, wd, &t.off[(b * np + i) * k], &t.w[(b * np + i) * k]);
    }
  cov_status st = graph_taps_run(x, n, "tap_sum", src, &t, out[0]);
  graph_taps_free(&t);
  return st;
}

int graph_codelets_grid_sample(const graph_node *n, const char **names, int max) {
  (void)n;
  return graph_lower_single("tap_sum", names, max);
}
