/* frontend/ops/graph_resize.c: Resize (opsets 10 to 19) and Upsample (7, 9).
 *
 * Every mode is separable: each output coordinate of an axis maps back to
 * an input coordinate (the coordinate transformation mode), and the value
 * is a weighted sum of input elements along that axis.
 *
 * * nearest picks one input element per output element: that is data
 *   movement, done here (an index table per axis, then one gather pass);
 * * linear and cubic are compute: per resized axis the frontend builds the
 *   interpolation matrix W[out, in] from the coefficients ONNX defines
 *   (index arithmetic only) and the matmul / batch_matmul codelets apply it
 *   along that axis ([A, in, B] -> [A, out, B]). Neighbours past the edge
 *   take the edge element (as onnx's reference pads with edge values), or
 *   with exclude_outside drop out and the rest are renormalised.
 *
 * tf_crop_and_resize writes extrapolation_value wherever a coordinate falls
 * outside the input (nearest: in the gather; linear and cubic: the
 * matrices have zero rows there and the add codelet adds the value). Scales and sizes must be known when the node runs
 * (constants, or values computed from shapes); antialias is refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

/* Output dims beyond this are refused (an absurd scale is bad input). */
#define RESIZE_MAX_DIM ((int64_t)1 << 24)

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum {
  C_HALF_PIXEL,
  C_HALF_PIXEL_SYMMETRIC,
  C_PYTORCH_HALF_PIXEL,
  C_ALIGN_CORNERS,
  C_ASYMMETRIC,
  C_TF_HALF_PIXEL_FOR_NEAREST,
  C_TF_CROP_AND_RESIZE
};
enum { N_ROUND_PREFER_FLOOR, N_ROUND_PREFER_CEIL, N_FLOOR, N_CEIL, N_SIMPLE };

typedef struct resize_params {
  int rank;
  bool known; /* scales / sizes (and roi) known */
  int mode, ctm, nearest;
  double cubic_a, extrapolation;
  bool exclude_outside;
  double scale[COV_MAX_RANK], roi[2 * COV_MAX_RANK];
  int64_t out[COV_MAX_RANK];
} resize_params;

static int find_name(const char *s, const char *const *names, int count) {
  for (int i = 0; i < count; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

static cov_status read_floats(const graph *g, const graph_node *n, const graph_value *v,
                              const char *what, double *out, int max, int *count) {
  int64_t k = graph_numel(v);
  if (v->rank != 1 || k > max)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "%s '%s' must be a 1-D tensor of at most %d values", what, v->name,
                            max);
  if (!cov_dtype_is_float(v->dtype))
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be floating point (got %s)",
                            what, v->name, cov_dtype_name(v->dtype));
  for (int64_t i = 0; i < k; i++) out[i] = graph_load_elem(v->data, v->dtype, (size_t)i);
  *count = (int)k;
  return NULL;
}

/* Resize-18's attributes that covenant takes only at their defaults. */
static cov_status resize18_attrs(const graph *g, const graph_node *n) {
  int64_t anti;
  const int64_t *axes;
  size_t naxes;
  const char *policy;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "antialias", 0, &anti));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "axes", &axes, &naxes));
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "keep_aspect_ratio_policy", "stretch", &policy));
  if (anti) return graph_node_error(g, n, COV_UNSUPPORTED, "antialias=1 is not supported");
  if (axes) return graph_node_error(g, n, COV_UNSUPPORTED, "the 'axes' attribute is not supported (give every axis)");
  if (strcmp(policy, "stretch") != 0)
    return graph_node_error(g, n, COV_UNSUPPORTED, "keep_aspect_ratio_policy '%s' is not supported (only stretch)",
                            policy);
  return NULL;
}

/* Resize-11 and later: the coordinate transformation, nearest rounding,
 * cubic coefficient, extrapolation value and exclude_outside. */
static cov_status resize11_attrs(const graph *g, const graph_node *n, resize_params *p) {
  static const char *const ctms[] = {
      "half_pixel", "half_pixel_symmetric",      "pytorch_half_pixel", "align_corners",
      "asymmetric", "tf_half_pixel_for_nearest", "tf_crop_and_resize"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char *s;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "coordinate_transformation_mode", "half_pixel", &s));
  p->ctm = find_name(s, ctms, 7);
  if (p->ctm < 0 || (p->ctm == C_HALF_PIXEL_SYMMETRIC && n->opset < 19) ||
      (p->ctm == C_TF_HALF_PIXEL_FOR_NEAREST && n->opset >= 13))
    return graph_node_error(g, n, COV_INVALID_INPUT, "coordinate_transformation_mode '%s' is not defined in opset %d",
                            s, n->opset);
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "nearest_mode", "round_prefer_floor", &s));
  p->nearest = find_name(s, nms, 4);
  if (p->nearest < 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "nearest_mode '%s' is not round_prefer_floor, round_prefer_ceil, "
                            "floor or ceil",
                            s);
  float a, e;
  int64_t excl;
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "cubic_coeff_a", -0.75f, &a));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "extrapolation_value", 0.0f, &e));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "exclude_outside", 0, &excl));
  p->cubic_a = a;
  p->extrapolation = e;
  p->exclude_outside = excl != 0;
  return n->opset >= 18 ? resize18_attrs(g, n) : NULL;
}

/* Where the scales, sizes and region of interest are: Upsample-7's
 * attribute (read into sc), Upsample's and Resize-10's scales input, or
 * Resize-11's roi, scales and sizes inputs (exactly one of the last two). */
static cov_status resize_inputs(const graph *g, const graph_node *n, graph_value *const *in, bool upsample,
                                const graph_value **roi, const graph_value **scales, const graph_value **sizes,
                                double *sc, int *nsc) {
  int rank = in[0]->rank;
  if (upsample && n->opset < 9) {
    const float *f;
    size_t nf;
    COV_RETURN_IF_ERROR(graph_attr_floats(g, n, "scales", &f, &nf));
    if (!f) return graph_node_error(g, n, COV_INVALID_INPUT, "needs the 'scales' attribute");
    if ((int)nf != rank)
      return graph_node_error(g, n, COV_INVALID_INPUT, "'scales' has %zu values for rank %d", nf, rank);
    for (size_t i = 0; i < nf; i++) sc[i] = f[i];
    *nsc = (int)nf;
  } else if (upsample || n->opset < 11) {
    if (n->n_in < 2 || !in[1]) return graph_node_error(g, n, COV_INVALID_INPUT, "needs the 'scales' input");
    *scales = in[1];
  } else {
    *roi = n->n_in > 1 ? in[1] : NULL;
    *scales = n->n_in > 2 ? in[2] : NULL;
    *sizes = n->n_in > 3 ? in[3] : NULL;
    if (*scales && (*scales)->rank == 1 && (*scales)->dims[0] == 0) *scales = NULL;
    if (*roi && (*roi)->rank == 1 && (*roi)->dims[0] == 0) *roi = NULL;
    if (!!*scales == !!*sizes)
      return graph_node_error(g, n, COV_INVALID_INPUT, "needs exactly one of 'scales' and 'sizes' (got %s)",
                              *scales ? "both" : "neither");
  }
  return NULL;
}

/* Axis i's output size and scale, from sizes (sz) or scales (sc). */
static cov_status resize_axis(const graph *g, const graph_node *n, int64_t d, int i, int rank, const int64_t *sz,
                              const double *sc, resize_params *p) {
  if (sz) {
    if (sz[i] < 1 || sz[i] > RESIZE_MAX_DIM)
      return graph_node_error(g, n, COV_INVALID_INPUT, "size %lld of axis %d is out of range", (long long)sz[i], i);
    p->out[i] = sz[i];
    p->scale[i] = d > 0 ? (double)sz[i] / (double)d : 1.0;
    return NULL;
  }
  if (!(sc[i] > 0) || !isfinite(sc[i]))
    return graph_node_error(g, n, COV_INVALID_INPUT, "scale %g of axis %d is not positive", sc[i], i);
  p->scale[i] = sc[i];
  if (d < 0) {
    p->out[i] = -1;
    return NULL;
  }
  double o = floor((double)d * (p->roi[rank + i] - p->roi[i]) * sc[i]);
  if (!(o >= 1 && o <= (double)RESIZE_MAX_DIM))
    return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d: %lld x scale %g gives %g elements (1 to %lld allowed)",
                            i, (long long)d, sc[i], o, (long long)RESIZE_MAX_DIM);
  p->out[i] = (int64_t)o;
  return NULL;
}

static cov_status resize_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                   resize_params *p) {
  const graph_value *x = in[0];
  bool upsample = strcmp(n->op_type, "Upsample") == 0;
  memset(p, 0, sizeof *p);
  p->rank = x->rank;
  p->known = true;
  const char *mode;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "mode", "nearest", &mode));
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  p->mode = find_name(mode, modes, upsample || n->opset < 11 ? 2 : 3);
  if (strcmp(mode, "bilinear") == 0 && upsample) p->mode = M_LINEAR; /* Upsample-7's old name */
  if (p->mode < 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "mode '%s' is not %s", mode,
                            upsample || n->opset < 11 ? "nearest or linear" : "nearest, linear or cubic");
  p->ctm = C_ASYMMETRIC;
  p->nearest = N_SIMPLE;
  p->cubic_a = -0.75;
  if (!upsample && n->opset >= 11) COV_RETURN_IF_ERROR(resize11_attrs(g, n, p));
  if (x->rank < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected >= 1", x->name, x->rank);
  const graph_value *scales = NULL, *sizes = NULL, *roi = NULL;
  double sc[COV_MAX_RANK];
  int nsc = 0;
  COV_RETURN_IF_ERROR(resize_inputs(g, n, in, upsample, &roi, &scales, &sizes, sc, &nsc));
  if ((scales && !scales->data) || (sizes && !sizes->data) || (roi && !roi->data && p->ctm == C_TF_CROP_AND_RESIZE)) {
    p->known = false;
    return NULL;
  }
  for (int i = 0; i < x->rank; i++) p->roi[i] = 0, p->roi[x->rank + i] = 1;
  if (roi && p->ctm == C_TF_CROP_AND_RESIZE) {
    int nr;
    COV_RETURN_IF_ERROR(read_floats(g, n, roi, "roi", p->roi, 2 * COV_MAX_RANK, &nr));
    if (nr != 2 * x->rank)
      return graph_node_error(g, n, COV_INVALID_INPUT, "roi has %d values; expected %d", nr, 2 * x->rank);
  }
  if (scales) {
    COV_RETURN_IF_ERROR(read_floats(g, n, scales, "scales", sc, COV_MAX_RANK, &nsc));
    if (nsc != x->rank)
      return graph_node_error(g, n, COV_INVALID_INPUT, "scales has %d values for rank %d", nsc, x->rank);
  }
  /* Upsample only enlarges (onnxruntime refuses a scale below 1 too). */
  for (int i = 0; upsample && i < nsc; i++)
    if (!(sc[i] >= 1))
      return graph_node_error(g, n, COV_INVALID_INPUT, "scale %g of axis %d is below 1; Upsample's scales must be >= 1",
                              sc[i], i);
  int64_t sz[COV_MAX_RANK];
  size_t nsz = 0;
  if (sizes) {
    COV_RETURN_IF_ERROR(graph_read_ints(g, n, sizes, "sizes", sz, COV_MAX_RANK, &nsz));
    if ((int)nsz != x->rank)
      return graph_node_error(g, n, COV_INVALID_INPUT, "sizes has %zu values for rank %d", nsz, x->rank);
  }
  for (int i = 0; i < x->rank; i++)
    COV_RETURN_IF_ERROR(resize_axis(g, n, x->dims[i], i, x->rank, sizes ? sz : NULL, sc, p));
  return NULL;
}

cov_status graph_infer_resize(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  const graph_value *x = in[0];
  out[0]->dtype = x->dtype;
  if (x->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  resize_params p;
  COV_RETURN_IF_ERROR(resize_params_of(g, n, in, &p));
  if (p.mode != M_NEAREST) COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (!p.known) {
    int64_t d[COV_MAX_RANK];
    for (int i = 0; i < x->rank; i++) d[i] = -1;
    graph_set_shape(out[0], x->rank, d);
    return NULL;
  }
  graph_set_shape(out[0], x->rank, p.out);
  return NULL;
}

/* The input coordinate of output index o along axis i. */
static double source_coord(const resize_params *p, int i, int64_t o, int64_t len_in) {
  /* The resized length is in x scale, not the floored output dim (as in
   * onnx's reference: they differ for scales that do not divide evenly). */
  double s = p->scale[i], lo = s * (double)len_in;
  switch (p->ctm) {
    case C_HALF_PIXEL:
      return ((double)o + 0.5) / s - 0.5;
    case C_HALF_PIXEL_SYMMETRIC: {
      double adj = (double)p->out[i] / lo, center = (double)len_in / 2;
      return center * (1 - adj) + ((double)o + 0.5) / s - 0.5;
    }
    case C_PYTORCH_HALF_PIXEL:
      return lo > 1 ? ((double)o + 0.5) / s - 0.5 : 0;
    case C_ALIGN_CORNERS:
      return lo > 1 ? (double)o * (double)(len_in - 1) / (lo - 1) : 0;
    case C_TF_HALF_PIXEL_FOR_NEAREST:
      return ((double)o + 0.5) / s;
    case C_TF_CROP_AND_RESIZE: {
      double a = p->roi[i], b = p->roi[p->rank + i];
      return lo > 1
                 ? a * (double)(len_in - 1) + (double)o * (b - a) * (double)(len_in - 1) / (lo - 1)
                 : 0.5 * (a + b) * (double)(len_in - 1);
    }
    default:
      return (double)o / s; /* asymmetric */
  }
}

static bool outside(const resize_params *p, double xo, int64_t len_in) {
  return p->ctm == C_TF_CROP_AND_RESIZE && (xo < 0 || xo > (double)(len_in - 1));
}

static int64_t clamp_i(int64_t v, int64_t len) { return v < 0 ? 0 : v >= len ? len - 1 : v; }

static int64_t nearest_index(const resize_params *p, int i, double xo) {
  switch (p->nearest) {
    case N_ROUND_PREFER_CEIL:
      return (int64_t)floor(xo + 0.5);
    case N_FLOOR:
      return (int64_t)floor(xo);
    case N_CEIL:
      return (int64_t)ceil(xo);
    case N_SIMPLE:
      return p->scale[i] < 1 ? (int64_t)ceil(xo) : (int64_t)xo;
    default: /* round_prefer_floor */
      return xo == floor(xo) + 0.5 ? (int64_t)floor(xo) : (int64_t)floor(xo + 0.5);
  }
}

/* Coefficients of the neighbours x0-1 .. x0+2 (cubic) or x0 .. x0+1
 * (linear), r in (0, 1]: onnx's reference picks the neighbours of an exact
 * input coordinate k as if r were 1 from k-1, which gives the same values. */
static int interp_coeffs(const resize_params *p, double r, double *c) {
  if (p->mode == M_LINEAR) {
    c[0] = 1 - r;
    c[1] = r;
    return 2;
  }
  double A = p->cubic_a, s = r + 1, t = 1 - r, u = 2 - r;
  c[0] = ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
  c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
  c[2] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[3] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  return 4;
}

/* The interpolation matrix W[out, in] of axis i, in double. */
static void interp_matrix(const resize_params *p, int i, int64_t len_in, double *w) {
  int64_t lo = p->out[i];
  memset(w, 0, (size_t)(lo * len_in) * sizeof *w);
  for (int64_t o = 0; o < lo; o++) {
    double xo = source_coord(p, i, o, len_in);
    if (outside(p, xo, len_in)) continue; /* filled with the extrapolation value later */
    double x0 = floor(xo), r = xo - x0, c[4];
    if (r == 0) x0 -= 1, r = 1;
    int k = interp_coeffs(p, r, c);
    int64_t first = (int64_t)x0 - (k == 4 ? 1 : 0);
    double sum = 0;
    for (int j = 0; j < k; j++) {
      int64_t idx = first + j;
      if (p->exclude_outside && (idx < 0 || idx >= len_in)) c[j] = 0;
      sum += c[j];
    }
    for (int j = 0; j < k; j++) {
      double cj = p->exclude_outside && sum != 0 ? c[j] / sum : c[j];
      w[o * len_in + clamp_i(first + j, len_in)] += cj;
    }
  }
}

/* Gather for nearest, or extrapolation fill: one pass over the output with
 * a per-axis table of input indices (-1: outside, the fill value). */
static cov_status gather_nearest(graph_exec *x, const graph_node *n, const resize_params *p,
                                 const graph_value *v, graph_value *out) {
  int r = v->rank;
  int64_t *tab[COV_MAX_RANK] = {0};
  cov_status st = NULL;
  for (int i = 0; i < r && !st; i++) {
    tab[i] = malloc((size_t)p->out[i] * sizeof **tab);
    if (!tab[i]) {
      st = graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
      break;
    }
    for (int64_t o = 0; o < p->out[i]; o++) {
      double xo = source_coord(p, i, o, v->dims[i]);
      tab[i][o] = outside(p, xo, v->dims[i]) ? -1 : clamp_i(nearest_index(p, i, xo), v->dims[i]);
    }
  }
  if (!st) st = graph_alloc_data(x->g, n, out);
  if (!st) {
    size_t es = cov_dtype_size(v->dtype);
    int64_t total = graph_numel(out), idx[COV_MAX_RANK] = {0}, stride[COV_MAX_RANK];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) stride[i] = s, s *= v->dims[i];
    unsigned char fill[16];
    graph_store_elem(fill, v->dtype, 0, p->extrapolation);
    const unsigned char *src = v->data;
    unsigned char *dst = out->data;
    for (int64_t e = 0; e < total; e++) {
      int64_t off = 0;
      bool ext = false;
      for (int i = 0; i < r; i++) {
        int64_t t = tab[i][idx[i]];
        if (t < 0) ext = true;
        off += t * stride[i];
      }
      memcpy(dst + (size_t)e * es, ext ? fill : src + (size_t)off * es, es);
      for (int i = r - 1; i >= 0; i--) {
        if (++idx[i] < p->out[i]) break;
        idx[i] = 0;
      }
    }
  }
  for (int i = 0; i < r; i++) free(tab[i]);
  return st;
}

/* 1 when the node's roi, scales and sizes are model constants: then the
 * matrices and the extrapolation tensor, which depend on nothing else
 * than them and the shapes, are constants of a layer group; else 0 (made
 * from run-time integers, a group refuses them). */
static unsigned params_const(const graph_exec *x, const graph_node *n) {
  for (int i = 1; i < n->n_in; i++)
    if (n->in[i] && !x->g->values[n->in[i]->id]->data) return 0;
  return 1;
}

/* tf_crop_and_resize: every output element with a coordinate outside the
 * input takes the extrapolation value. The interpolation matrices have
 * zero rows there, so those elements are 0; adding a constant E (the
 * value there, 0 elsewhere) through the add codelet keeps the node's work
 * a chain of codelet calls. out->data is the last call's result. */
static cov_status add_outside(graph_exec *x, const graph_node *n, const resize_params *p,
                              const graph_value *v, graph_value *out) {
  int r = v->rank;
  bool any = false;
  for (int i = 0; i < r; i++)
    for (int64_t o = 0; o < p->out[i]; o++)
      any |= outside(p, source_coord(p, i, o, v->dims[i]), v->dims[i]);
  if (!any || p->extrapolation == 0) return NULL;
  int64_t total = graph_numel(out), idx[COV_MAX_RANK] = {0};
  void *e = calloc(total > 0 ? (size_t)total : 1, cov_dtype_size(out->dtype));
  if (!e) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int64_t k = 0; k < total; k++) {
    bool ext = false;
    for (int i = 0; i < r && !ext; i++)
      ext = outside(p, source_coord(p, i, idx[i], v->dims[i]), v->dims[i]);
    if (ext) graph_store_elem(e, out->dtype, (size_t)k, p->extrapolation);
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < p->out[i]) break;
      idx[i] = 0;
    }
  }
  cov_tensor t[2] = {{.dtype = out->dtype, .rank = 4, .shape = {1, 1, 1, total}, .data = out->data},
                     {.dtype = out->dtype, .rank = 4, .shape = {1, 1, 1, total}, .data = e}}, y;
  cov_status st = graph_lower_call_const(x, n, "add", NULL, 0, t, 2, &y, params_const(x, n) << 1);
  free(e);
  if (st) return st;
  free(out->data);
  out->data = NULL;
  return graph_lower_adopt(x, n, &y, out);
}

/* Axis i of cur ([A, in, B]) through W: matmul when B is 1, else
 * batch_matmul with W as a batch of one. W depends only on the scales,
 * sizes and roi, so a layer group sees it as a constant when they are. */
static cov_status interp_axis(graph_exec *x, const graph_node *n, const resize_params *p,
                              graph_value *cur, int i, cov_tensor *y) {
  int64_t lin = cur->dims[i], lo = p->out[i], a = 1, b = 1;
  for (int k = 0; k < cur->rank; k++)
    if (k != i) *(k < i ? &a : &b) *= cur->dims[k];
  double *w = malloc((size_t)(lo * lin) * sizeof *w);
  void *wt = malloc((size_t)(lo * lin) * cov_dtype_size(cur->dtype));
  cov_status st = NULL;
  if (!w || !wt) st = graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) {
    interp_matrix(p, i, lin, w);
    if (b == 1) { /* y[A, out] = x[A, in] @ W^T[in, out] */
      for (int64_t o = 0; o < lo; o++)
        for (int64_t k = 0; k < lin; k++)
          graph_store_elem(wt, cur->dtype, (size_t)(k * lo + o), w[o * lin + k]);
      int64_t xd[2] = {a, lin};
      cov_tensor t[2] = {graph_view_as(cur, 2, xd),
                         {.dtype = cur->dtype, .rank = 2, .shape = {lin, lo}, .data = wt}};
      st = graph_lower_call_const(x, n, "matmul", NULL, 0, t, 2, y, params_const(x, n) << 1);
    } else { /* y[A, out, B] = W[1, out, in] @ x[A, in, B] */
      for (int64_t k = 0; k < lo * lin; k++) graph_store_elem(wt, cur->dtype, (size_t)k, w[k]);
      int64_t xd[3] = {a, lin, b};
      cov_tensor t[2] = {{.dtype = cur->dtype, .rank = 3, .shape = {1, lo, lin}, .data = wt},
                         graph_view_as(cur, 3, xd)};
      st = graph_lower_call_const(x, n, "batch_matmul", NULL, 0, t, 2, y, params_const(x, n));
    }
  }
  free(w);
  free(wt);
  return st;
}

static bool axis_is_identity(const resize_params *p, const graph_value *v, int i) {
  if (p->out[i] != v->dims[i] || p->ctm == C_TF_CROP_AND_RESIZE) return false;
  /* Same length: an identity unless the transform shifts coordinates. */
  for (int64_t o = 0; o < p->out[i]; o++)
    if (source_coord(p, i, o, v->dims[i]) != (double)o) return false;
  return true;
}

cov_status graph_exec_resize(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  resize_params p;
  const graph_value *v = in[0];
  COV_RETURN_IF_ERROR(resize_params_of(x->g, n, in, &p));
  if (!p.known) return graph_node_error(x->g, n, COV_INVALID_INPUT, "scales / sizes are not known");
  if (p.mode == M_NEAREST) return gather_nearest(x, n, &p, v, out[0]);
  graph_value cur = *v;
  void *owned = NULL;
  for (int i = 0; i < v->rank; i++) {
    if (axis_is_identity(&p, v, i)) continue;
    cov_tensor y;
    cov_status st = interp_axis(x, n, &p, &cur, i, &y);
    free(owned);
    COV_RETURN_IF_ERROR(st);
    owned = y.data;
    cur.data = y.data;
    cur.dims[i] = p.out[i];
  }
  if (!owned) {
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
    memcpy(out[0]->data, v->data, (size_t)graph_numel(v) * cov_dtype_size(v->dtype));
  } else {
    out[0]->data = owned;
  }
  return add_outside(x, n, &p, v, out[0]);
}

/* The calls depend on which axes change; at load time the shapes may not be
 * known, so name the codelets a linear/cubic resize may use. */
int graph_codelets_resize(const graph_node *n, const char **names, int max) {
  const graph_attr *a = graph_attr_find(n, "mode");
  if (!a || a->type != GA_STRING || !a->s || strcmp(a->s, "nearest") == 0) return 0;
  int k = 0;
  if (k < max) names[k++] = "matmul";
  if (k < max) names[k++] = "batch_matmul";
  if (k < max) names[k++] = "add"; /* tf_crop_and_resize's extrapolation value */
  return k;
}
