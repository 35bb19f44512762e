/* frontend/ops/graph_roialign.c: RoiAlign, as onnxruntime computes it. Each
 * region of interest (x1, y1, x2, y2, scaled by spatial_scale; half_pixel
 * shifts it by -0.5, output_half_pixel makes it at least 1 x 1) is divided
 * into output_height x output_width bins, each sampled at a grid of points
 * (sampling_ratio per side, or ceil(bin size) when it is 0); each point is
 * bilinearly interpolated from 4 pixels (a point more than one pixel
 * outside contributes 0). avg: the mean of the points, the 4 taps of each
 * weighted by bilinear weight / count and summed by tap_sum; max: the
 * largest weighted tap (tap_max). Taps are computed here (graph_taps.c),
 * every region's batch index and coordinates checked first. */
#include <math.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"
#include "frontend/ops/graph_taps.h"

/* The most sampling points per bin side (an adaptive grid is ceil(bin size)). */
#define ROI_MAX_GRID 1024

typedef struct roi_params {
  int64_t oh, ow, ratio;
  float scale;
  bool half, max;
} roi_params;

static cov_status roi_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                roi_params *p) {
  const char *mode, *ctm = "output_half_pixel";
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "mode", "avg", &mode));
  if (n->opset >= 16)
    COV_RETURN_IF_ERROR(
        graph_attr_string(g, n, "coordinate_transformation_mode", "half_pixel", &ctm));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "output_height", 1, &p->oh));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "output_width", 1, &p->ow));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "sampling_ratio", 0, &p->ratio));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "spatial_scale", 1.0f, &p->scale));
  if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "mode '%s' is not avg or max", mode);
  if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "coordinate_transformation_mode '%s' is not half_pixel or "
                            "output_half_pixel",
                            ctm);
  p->max = strcmp(mode, "max") == 0;
  p->half = strcmp(ctm, "half_pixel") == 0;
  if (p->oh < 1 || p->ow < 1 || p->oh > (1 << 16) || p->ow > (1 << 16) || p->ratio < 0 ||
      p->ratio > ROI_MAX_GRID || !isfinite(p->scale))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "output_height %lld and output_width %lld must be in 1..65536, "
                            "sampling_ratio %lld in 0..%d, spatial_scale finite",
                            (long long)p->oh, (long long)p->ow, (long long)p->ratio, ROI_MAX_GRID);
  const graph_value *x = in[0], *rois = in[1], *bi = in[2];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (rois->dtype != x->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "rois '%s' is %s but the input is %s",
                            rois->name, cov_dtype_name(rois->dtype), cov_dtype_name(x->dtype));
  if (bi->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "batch_indices '%s' must be int64, not %s",
                            bi->name, cov_dtype_name(bi->dtype));
  if (x->rank >= 0 && x->rank != 4)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input '%s' has rank %d; expected [N, C, H, W]",
                            x->name, x->rank);
  if (rois->rank >= 0 && (rois->rank != 2 || (rois->dims[1] >= 0 && rois->dims[1] != 4)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "rois '%s' must be [num_rois, 4]", rois->name);
  if (bi->rank >= 0 && (bi->rank != 1 || (rois->rank == 2 && bi->dims[0] >= 0 &&
                                          rois->dims[0] >= 0 && bi->dims[0] != rois->dims[0])))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "batch_indices '%s' must be [num_rois], one per row of '%s'", bi->name,
                            rois->name);
  return NULL;
}

cov_status graph_infer_roi_align(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  roi_params p;
  COV_RETURN_IF_ERROR(roi_params_of(g, n, in, &p));
  int64_t d[4] = {in[1]->rank == 2 ? in[1]->dims[0] : -1, in[0]->rank == 4 ? in[0]->dims[1] : -1,
                  p.oh, p.ow};
  out[0]->dtype = in[0]->dtype;
  graph_set_shape(out[0], 4, d);
  return NULL;
}

/* One region's geometry: start, bin size and sampling grid per axis. */
typedef struct roi_box {
  double y0, x0, bh, bw;
  int64_t gh, gw;
} roi_box;

static cov_status roi_box_of(const graph *g, const graph_node *n, const roi_params *p,
                             const graph_value *rois, int64_t r, roi_box *b) {
  double c[4];
  for (int i = 0; i < 4; i++) {
    c[i] = graph_load_elem(rois->data, rois->dtype, (size_t)(r * 4 + i)) * (double)p->scale;
    if (!isfinite(c[i]))
      return graph_node_error(g, n, COV_INVALID_INPUT, "region %lld of '%s' is not finite",
                              (long long)r, rois->name);
  }
  double off = p->half ? 0.5 : 0, h = c[3] - c[1], w = c[2] - c[0];
  if (!p->half) h = fmax(h, 1), w = fmax(w, 1);
  b->y0 = c[1] - off, b->x0 = c[0] - off;
  b->bh = h / (double)p->oh, b->bw = w / (double)p->ow;
  double gh = p->ratio > 0 ? (double)p->ratio : ceil(h / (double)p->oh);
  double gw = p->ratio > 0 ? (double)p->ratio : ceil(w / (double)p->ow);
  if (!(gh <= ROI_MAX_GRID && gw <= ROI_MAX_GRID))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "region %lld of '%s' needs a %g x %g sampling grid per bin; at most %d "
                            "per side (give sampling_ratio)",
                            (long long)r, rois->name, gh, gw, ROI_MAX_GRID);
  b->gh = gh > 0 ? (int64_t)gh : 0, b->gw = gw > 0 ? (int64_t)gw : 0;
  return NULL;
}

/* The 4 taps of the point (y, x), weighted by wt; 0 when it is more than
 * one pixel outside. */
static void point_taps(double y, double x, int64_t h, int64_t w, double wt, int64_t *off,
                       double *tw) {
  for (int i = 0; i < 4; i++) off[i] = 0, tw[i] = 0;
  if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w) return;
  y = fmax(y, 0), x = fmax(x, 0);
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= h - 1) yh = yl = h - 1, y = (double)yl; else yh = yl + 1;
  if (xl >= w - 1) xh = xl = w - 1, x = (double)xl; else xh = xl + 1;
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
  off[0] = yl * w + xl, tw[0] = hy * hx * wt;
  off[1] = yl * w + xh, tw[1] = hy * lx * wt;
  off[2] = yh * w + xl, tw[2] = ly * hx * wt;
  off[3] = yh * w + xh, tw[3] = ly * lx * wt;
}

static void bin_taps(const roi_params *p, const roi_box *b, int64_t ph, int64_t pw, int64_t h,
                     int64_t w, int64_t k, int64_t *off, double *tw) {
  int64_t cnt = b->gh * b->gw, t = 0;
  double wt = p->max ? 1.0 : 1.0 / (double)(cnt > 0 ? cnt : 1);
  for (int64_t iy = 0; iy < b->gh; iy++)
    for (int64_t ix = 0; ix < b->gw; ix++, t += 4) {
      double y = b->y0 + (double)ph * b->bh + ((double)iy + 0.5) * b->bh / (double)b->gh;
      double x = b->x0 + (double)pw * b->bw + ((double)ix + 0.5) * b->bw / (double)b->gw;
      point_taps(y, x, h, w, wt, off + t, tw + t);
    }
  /* pad to k: zero weight (avg) or a copy of the first tap (max) */
  for (; t < k; t++) {
    off[t] = p->max && cnt ? off[0] : -1;
    tw[t] = p->max && cnt ? tw[0] : 0;
  }
}

cov_status graph_exec_roi_align(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  roi_params p;
  COV_RETURN_IF_ERROR(roi_params_of(x->g, n, in, &p));
  const graph_value *src = in[0], *rois = in[1];
  const int64_t *bi = in[2]->data;
  int64_t nr = rois->dims[0], h = src->dims[2], w = src->dims[3], k = 4;
  for (int64_t r = 0; r < nr; r++) {
    roi_box b;
    if (bi[r] < 0 || bi[r] >= src->dims[0])
      return graph_node_error(x->g, n, COV_INVALID_INPUT,
                              "batch index %lld (element %lld of '%s') is outside 0..%lld",
                              (long long)bi[r], (long long)r, in[2]->name,
                              (long long)src->dims[0] - 1);
    COV_RETURN_IF_ERROR(roi_box_of(x->g, n, &p, rois, r, &b));
    if (b.gh * b.gw * 4 > k) k = b.gh * b.gw * 4;
  }
  graph_taps t;
  int64_t np = p.oh * p.ow;
  COV_RETURN_IF_ERROR(graph_taps_alloc(x->g, n, &t, nr, np, k));
  for (int64_t r = 0; r < nr; r++) {
    roi_box b;
    cov_status st = roi_box_of(x->g, n, &p, rois, r, &b);
    if (st) {
      graph_taps_free(&t);
      return st;
    }
    t.src[r] = bi[r];
    for (int64_t i = 0; i < np; i++)
      bin_taps(&p, &b, i / p.ow, i % p.ow, h, w, k, &t.off[(r * np + i) * k],
               &t.w[(r * np + i) * k]);
  }
  cov_status st = graph_taps_run(x, n, p.max ? "tap_max" : "tap_sum", src, &t, out[0]);
  graph_taps_free(&t);
  return st;
}

int graph_codelets_roi_align(const graph_node *n, const char **names, int max) {
  const graph_attr *a = graph_attr_find(n, "mode");
  bool is_max = a && a->type == GA_STRING && a->s && strcmp(a->s, "max") == 0;
  return graph_lower_single(is_max ? "tap_max" : "tap_sum", names, max);
}
