/* frontend/ops/graph_index.c: data-movement operations that address elements:
 * Slice, Gather, Pad, and the ones that make or convert tensors: Shape,
 * Cast, Constant, ConstantOfShape.
 *
 * Like graph_layout.c, these are executed by the frontend rather than through
 * codelets: they select, convert or fill elements and never compute a value a
 * mapper would schedule (Cast converts one element at a time, as a DMA engine
 * with a format converter would). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"
#include "frontend/onnx/onnx_internal.h"

#define MAX_LIST 64

/* ---- Slice ------------------------------------------------------------ */

typedef struct slice_params {
  int64_t start[COV_MAX_RANK], step[COV_MAX_RANK], len[COV_MAX_RANK];
} slice_params;

static cov_status slice_lists(const graph *g, const graph_node *n, graph_value *const *in,
                              int64_t *starts, int64_t *ends, int64_t *axes, int64_t *steps,
                              size_t *count, bool *has_axes, bool *known) {
  size_t ns = 0, ne = 0, na = 0, nt = 0;
  *has_axes = false;
  *known = true;
  if (n->opset < 10) {
    const int64_t *a;
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "starts", &a, &ns));
    if (!a || ns > MAX_LIST) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'starts'");
    memcpy(starts, a, ns * sizeof *a);
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "ends", &a, &ne));
    if (!a || ne > MAX_LIST) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'ends'");
    memcpy(ends, a, ne * sizeof *a);
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "axes", &a, &na));
    if (a && na <= MAX_LIST) {
      memcpy(axes, a, na * sizeof *a);
      *has_axes = true;
    }
    nt = ns;
    for (size_t i = 0; i < nt; i++) steps[i] = 1;
  } else {
    if (n->n_in < 3 || !in[1] || !in[2])
      return graph_node_error(g, n, COV_INVALID_INPUT, "needs the 'starts' and 'ends' inputs");
    for (int i = 1; i < n->n_in; i++)
      if (in[i] && !in[i]->data) *known = false;
    if (!*known) return NULL;
    COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[1], "starts", starts, MAX_LIST, &ns));
    COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[2], "ends", ends, MAX_LIST, &ne));
    if (n->n_in > 3 && in[3]) {
      COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[3], "axes", axes, MAX_LIST, &na));
      *has_axes = true;
    }
    if (n->n_in > 4 && in[4]) {
      COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[4], "steps", steps, MAX_LIST, &nt));
    } else {
      nt = ns;
      for (size_t i = 0; i < nt; i++) steps[i] = 1;
    }
  }
  if (ne != ns || nt != ns || (*has_axes && na != ns))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "starts, ends, axes and steps must have the same length (%zu, %zu, "
                            "%zu, %zu)",
                            ns, ne, *has_axes ? na : ns, nt);
  if (!*has_axes)
    for (size_t i = 0; i < ns; i++) axes[i] = (int64_t)i;
  *count = ns;
  return NULL;
}

static cov_status slice_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                  slice_params *p, bool *known) {
  int64_t starts[MAX_LIST], ends[MAX_LIST], axes[MAX_LIST], steps[MAX_LIST];
  size_t count = 0;
  bool has_axes;
  COV_RETURN_IF_ERROR(slice_lists(g, n, in, starts, ends, axes, steps, &count, &has_axes, known));
  if (!*known) return NULL;
  int r = in[0]->rank;
  for (int i = 0; i < r; i++) {
    p->start[i] = 0;
    p->step[i] = 1;
    p->len[i] = in[0]->dims[i];
  }
  bool seen[COV_MAX_RANK] = {false};
  for (size_t i = 0; i < count; i++) {
    int a;
    COV_RETURN_IF_ERROR(graph_axis(g, n, axes[i], r, "axis", &a));
    if (seen[a]) return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d is sliced twice", a);
    seen[a] = true;
    int64_t dim = in[0]->dims[a], st = steps[i], s = starts[i], e = ends[i];
    if (st == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "step of axis %d is 0", a);
    if (dim < 0) {
      *known = false;
      p->len[a] = -1;
      continue;
    }
    /* ONNX's clamping rules; INT64_MIN/MAX are common "to the end" markers. */
    if (s < 0) s = (s < -dim ? -dim - 1 : s) + dim; /* -1 marks "before the start" */
    if (e < 0) e = (e < -dim ? -dim - 1 : e) + dim;
    int64_t len;
    if (st > 0) {
      s = s < 0 ? 0 : (s > dim ? dim : s);
      e = e < 0 ? 0 : (e > dim ? dim : e);
      len = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = s < 0 ? -1 : (s > dim - 1 ? dim - 1 : s);
      e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
      /* -st cannot overflow: st == INT64_MIN means "one element". */
      len = s > e ? (st == INT64_MIN ? 1 : (s - e - 1) / (-st) + 1) : 0;
    }
    p->start[a] = s;
    /* With at most one element the step is never taken; 1 keeps the
     * executor's offset arithmetic far from overflow for INT64_MAX steps. */
    p->step[a] = len > 1 ? st : 1;
    p->len[a] = len;
  }
  return NULL;
}

cov_status graph_infer_slice(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  out[0]->dtype = in[0]->dtype;
  int r = in[0]->rank;
  if (r < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  slice_params p;
  bool known;
  COV_RETURN_IF_ERROR(slice_params_of(g, n, in, &p, &known));
  if (!known) {
    int64_t d[COV_MAX_RANK];
    for (int i = 0; i < r; i++) d[i] = -1;
    graph_set_shape(out[0], r, d);
    return NULL;
  }
  graph_set_shape(out[0], r, p.len);
  return NULL;
}

cov_status graph_exec_slice(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  slice_params p;
  bool known;
  COV_RETURN_IF_ERROR(slice_params_of(x->g, n, in, &p, &known));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t numel = graph_numel(out[0]);
  if (numel <= 0) return NULL;
  int r = in[0]->rank;
  size_t es = cov_dtype_size(in[0]->dtype);
  int64_t stride[COV_MAX_RANK], idx[COV_MAX_RANK] = {0}, s = 1;
  for (int i = r - 1; i >= 0; i--) {
    stride[i] = s;
    s *= in[0]->dims[i];
  }
  int64_t off = 0;
  for (int i = 0; i < r; i++) off += p.start[i] * stride[i];
  const char *src = in[0]->data;
  char *dst = out[0]->data;
  for (int64_t k = 0; k < numel; k++) {
    memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
    for (int i = r - 1; i >= 0; i--) {
      off += p.step[i] * stride[i];
      if (++idx[i] < p.len[i]) break;
      off -= p.step[i] * stride[i] * p.len[i];
      idx[i] = 0;
    }
  }
  return NULL;
}

/* ---- Gather ----------------------------------------------------------- */

cov_status graph_infer_gather(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  if (in[1]->dtype != COV_I64 && in[1]->dtype != COV_I32)
    return graph_node_error(g, n, COV_INVALID_INPUT, "indices '%s' must be int32 or int64, not %s",
                            in[1]->name, cov_dtype_name(in[1]->dtype));
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0 || in[1]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int r = in[0]->rank, q = in[1]->rank;
  if (r == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "cannot gather from a scalar");
  int ax;
  COV_RETURN_IF_ERROR(graph_axis(g, n, axis, r, "axis", &ax));
  if (r - 1 + q > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "output rank %d is over the limit of %d",
                            r - 1 + q, COV_MAX_RANK);
  int64_t d[COV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < ax; i++) d[k++] = in[0]->dims[i];
  for (int i = 0; i < q; i++) d[k++] = in[1]->dims[i];
  for (int i = ax + 1; i < r; i++) d[k++] = in[0]->dims[i];
  graph_set_shape(out[0], k, d);
  /* Constant indices are checked now rather than at run time. */
  int64_t dim = in[0]->dims[ax], ni = graph_numel(in[1]);
  if (in[1]->data && dim >= 0 && ni > 0) {
    for (int64_t i = 0; i < ni; i++) {
      int64_t v = in[1]->dtype == COV_I64 ? ((const int64_t *)in[1]->data)[i]
                                          : ((const int32_t *)in[1]->data)[i];
      if (v < -dim || v >= dim)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "index %lld is out of range for axis %d of size %lld", (long long)v,
                                ax, (long long)dim);
    }
  }
  return NULL;
}

cov_status graph_exec_gather(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "axis", 0, &axis));
  int r = in[0]->rank, ax = (int)(axis < 0 ? axis + r : axis);
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  size_t es = cov_dtype_size(in[0]->dtype);
  int64_t outer = 1, inner = 1, dim = in[0]->dims[ax], ni = graph_numel(in[1]);
  for (int i = 0; i < ax; i++) outer *= in[0]->dims[i];
  for (int i = ax + 1; i < r; i++) inner *= in[0]->dims[i];
  size_t block = (size_t)inner * es;
  char *dst = out[0]->data;
  const char *src = in[0]->data;
  for (int64_t i = 0; i < ni; i++) {
    int64_t v = in[1]->dtype == COV_I64 ? ((const int64_t *)in[1]->data)[i]
                                        : ((const int32_t *)in[1]->data)[i];
    if (v < -dim || v >= dim)
      return graph_node_error(x->g, n, COV_INVALID_INPUT,
                              "index %lld is out of range for axis %d of size %lld", (long long)v,
                              ax, (long long)dim);
  }
  for (int64_t o = 0; o < outer && block; o++)
    for (int64_t i = 0; i < ni; i++) {
      int64_t v = in[1]->dtype == COV_I64 ? ((const int64_t *)in[1]->data)[i]
                                          : ((const int32_t *)in[1]->data)[i];
      if (v < 0) v += dim;
      memcpy(dst + (size_t)(o * ni + i) * block, src + (size_t)(o * dim + v) * block, block);
    }
  return NULL;
}

/* ---- Pad -------------------------------------------------------------- */

typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

typedef struct pad_params {
  int64_t begin[COV_MAX_RANK], end[COV_MAX_RANK];
  pad_mode mode;
  double value;
} pad_params;

static cov_status pad_params_of(const graph *g, const graph_node *n, graph_value *const *in,
                                pad_params *p, bool *known) {
  int r = in[0]->rank;
  *known = true;
  memset(p, 0, sizeof *p);
  const char *mode;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "mode", "constant", &mode));
  if (strcmp(mode, "constant") == 0)
    p->mode = PAD_CONSTANT;
  else if (strcmp(mode, "reflect") == 0)
    p->mode = PAD_REFLECT;
  else if (strcmp(mode, "edge") == 0)
    p->mode = PAD_EDGE;
  else if (strcmp(mode, "wrap") == 0 && n->opset >= 19)
    p->mode = PAD_WRAP;
  else
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "mode '%s' is not one of constant, reflect, edge%s", mode,
                            n->opset >= 19 ? ", wrap" : "");
  int64_t pads[2 * MAX_LIST], axes[MAX_LIST];
  size_t np = 0, na = 0;
  bool has_axes = false;
  if (n->opset < 11) {
    const int64_t *a;
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "pads", &a, &np));
    if (!a || np > 2 * MAX_LIST) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'pads'");
    memcpy(pads, a, np * sizeof *a);
    float v;
    COV_RETURN_IF_ERROR(graph_attr_float(g, n, "value", 0.0f, &v));
    p->value = v;
  } else {
    if (n->n_in < 2 || !in[1]) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'pads'");
    for (int i = 1; i < n->n_in; i++)
      if (in[i] && !in[i]->data) *known = false;
    if (!*known) return NULL;
    COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[1], "pads", pads, 2 * MAX_LIST, &np));
    if (n->n_in > 2 && in[2]) {
      if (in[2]->dtype != in[0]->dtype)
        return graph_node_error(g, n, COV_INVALID_INPUT, "constant_value has dtype %s, the data %s",
                                cov_dtype_name(in[2]->dtype), cov_dtype_name(in[0]->dtype));
      if (graph_numel(in[2]) != 0)
        COV_RETURN_IF_ERROR(graph_read_scalar(g, n, in[2], "constant_value", &p->value));
    }
    if (n->n_in > 3 && in[3]) {
      if (n->opset < 18)
        return graph_node_error(g, n, COV_INVALID_INPUT, "the 'axes' input needs opset 18");
      COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[3], "axes", axes, MAX_LIST, &na));
      has_axes = true;
    }
  }
  if (r < 0) return NULL;
  if (!has_axes) {
    na = (size_t)r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  if (np != 2 * na)
    return graph_node_error(g, n, COV_INVALID_INPUT, "pads has %zu entries; expected %zu", np,
                            2 * na);
  bool seen[COV_MAX_RANK] = {false};
  for (size_t i = 0; i < na; i++) {
    int a;
    COV_RETURN_IF_ERROR(graph_axis(g, n, axes[i], r, "axis", &a));
    if (seen[a]) return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d is padded twice", a);
    seen[a] = true;
    p->begin[a] = pads[i];
    p->end[a] = pads[na + i];
    const int64_t lim = (int64_t)COV_TENSOR_MAX_BYTES;
    if (pads[i] < -lim || pads[i] > lim || pads[na + i] < -lim || pads[na + i] > lim)
      return graph_node_error(g, n, COV_OUT_OF_RANGE, "pad of axis %d is too large", a);
  }
  return NULL;
}

cov_status graph_infer_pad(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  out[0]->dtype = in[0]->dtype;
  int r = in[0]->rank;
  pad_params p;
  bool known;
  COV_RETURN_IF_ERROR(pad_params_of(g, n, in, &p, &known));
  if (r < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t d[COV_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t dim = in[0]->dims[i];
    if (!known || dim < 0) {
      d[i] = -1;
      continue;
    }
    d[i] = dim + p.begin[i] + p.end[i];
    if (d[i] < 0)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "negative pads remove more than axis %d has (%lld)", i,
                              (long long)dim);
    if (p.mode != PAD_CONSTANT && dim == 0 && (p.begin[i] > 0 || p.end[i] > 0))
      return graph_node_error(g, n, COV_INVALID_INPUT, "cannot %s-pad an empty axis %d",
                              p.mode == PAD_EDGE   ? "edge"
                              : p.mode == PAD_WRAP ? "wrap"
                                                   : "reflect",
                              i);
  }
  graph_set_shape(out[0], r, d);
  return NULL;
}

/* Source index along one axis for output index o, or -1 for "constant". */
static int64_t pad_source(int64_t o, int64_t begin, int64_t dim, pad_mode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PAD_CONSTANT: return -1;
    case PAD_EDGE: return i < 0 ? 0 : dim - 1;
    case PAD_WRAP: return ((i % dim) + dim) % dim;
    case PAD_REFLECT: {
      if (dim == 1) return 0;
      int64_t period = 2 * (dim - 1);
      int64_t m = ((i % period) + period) % period;
      return m < dim ? m : period - m;
    }
  }
  return -1;
}

cov_status graph_exec_pad(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  pad_params p;
  bool known;
  COV_RETURN_IF_ERROR(pad_params_of(x->g, n, in, &p, &known));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t numel = graph_numel(out[0]);
  if (numel <= 0) return NULL;
  int r = in[0]->rank;
  size_t es = cov_dtype_size(in[0]->dtype);
  unsigned char fill[8] = {0};
  graph_store_elem(fill, in[0]->dtype, 0, p.value);
  /* an integer constant as given (int64 beyond 2^53 does not survive p.value) */
  if (!cov_dtype_is_float(in[0]->dtype) && n->n_in > 2 && in[2] && graph_numel(in[2]) == 1)
    memcpy(fill, in[2]->data, es);
  int64_t stride[COV_MAX_RANK], idx[COV_MAX_RANK] = {0}, s = 1;
  for (int i = r - 1; i >= 0; i--) {
    stride[i] = s;
    s *= in[0]->dims[i];
  }
  const char *src = in[0]->data;
  char *dst = out[0]->data;
  for (int64_t k = 0; k < numel; k++) {
    int64_t off = 0;
    bool outside = false;
    for (int i = 0; i < r && !outside; i++) {
      int64_t si = pad_source(idx[i], p.begin[i], in[0]->dims[i], p.mode);
      if (si < 0)
        outside = true;
      else
        off += si * stride[i];
    }
    memcpy(dst + (size_t)k * es, outside ? (const char *)fill : src + (size_t)off * es, es);
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < out[0]->dims[i]) break;
      idx[i] = 0;
    }
  }
  return NULL;
}

/* ---- Shape ------------------------------------------------------------ */

static void shape_range(const graph_node *n, int r, int64_t start, int64_t end, int64_t *s,
                        int64_t *e) {
  (void)n;
  if (start < 0) start += r;
  if (end < 0) end += r;
  *s = start < 0 ? 0 : (start > r ? r : start);
  *e = end < 0 ? 0 : (end > r ? r : end);
  if (*e < *s) *e = *s;
}

cov_status graph_infer_shape(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int64_t start = 0, end = INT64_MAX;
  if (n->opset >= 15) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "start", 0, &start));
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "end", INT64_MAX, &end));
  }
  out[0]->dtype = COV_I64;
  int64_t len = -1;
  if (in[0]->rank >= 0) {
    int64_t s, e;
    shape_range(n, in[0]->rank, start, end, &s, &e);
    len = e - s;
  }
  graph_set_shape(out[0], 1, &len);
  return NULL;
}

cov_status graph_exec_shape(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int64_t start = 0, end = INT64_MAX, s, e;
  if (n->opset >= 15) {
    COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "start", 0, &start));
    COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "end", INT64_MAX, &end));
  }
  shape_range(n, in[0]->rank, start, end, &s, &e);
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  for (int64_t i = s; i < e; i++) ((int64_t *)out[0]->data)[i - s] = in[0]->dims[i];
  return NULL;
}

/* ---- Cast ------------------------------------------------------------- */

cov_status graph_infer_cast(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  const graph_attr *a = graph_attr_find(n, "to");
  if (!a || a->type != GA_INT)
    return graph_node_error(g, n, COV_INVALID_INPUT, "needs the int attribute 'to'");
  if (a->i < INT32_MIN || a->i > INT32_MAX || onnx_dtype((int32_t)a->i) == COV_DTYPE_INVALID)
    return graph_node_error(
        g, n, COV_UNSUPPORTED, "casting to ONNX type %s (%lld) is not supported",
        a->i >= 0 && a->i <= 16 ? onnx_dtype_name((int32_t)a->i) : "?", (long long)a->i);
  graph_copy_type(out[0], in[0]);
  out[0]->dtype = onnx_dtype((int32_t)a->i);
  return NULL;
}

cov_status graph_exec_cast(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t numel = graph_numel(out[0]);
  cov_dtype from = in[0]->dtype, to = out[0]->dtype;
  if (from == to) {
    if (numel > 0) memcpy(out[0]->data, in[0]->data, (size_t)numel * cov_dtype_size(to));
    return NULL;
  }
  bool ints = !cov_dtype_is_float(from) && !cov_dtype_is_float(to) && from != COV_BOOL &&
              to != COV_BOOL;
  for (int64_t i = 0; i < numel; i++) {
    /* Integers convert in integer arithmetic (a double is not exact past
     * 2^53), narrowing by wrapping as numpy's astype does. */
    if (ints) {
      graph_store_int(out[0]->data, to, (size_t)i, graph_load_int(in[0]->data, from, (size_t)i));
      continue;
    }
    if (from == COV_I64 && to == COV_F32) {
      ((float *)out[0]->data)[i] = (float)((const int64_t *)in[0]->data)[i];
      continue;
    }
    double v = graph_load_elem(in[0]->data, from, (size_t)i);
    graph_store_elem(out[0]->data, to, (size_t)i, v);
  }
  return NULL;
}

/* ---- Constant, ConstantOfShape ----------------------------------------- */

/* The one value attribute a Constant carries, as dtype/shape/data. */
static cov_status constant_value(const graph *g, const graph_node *n, graph_value *tmp,
                                 const void **data) {
  static const char *const unsupported[] = {"sparse_value", "value_string", "value_strings"};
  for (size_t i = 0; i < 3; i++)
    if (graph_attr_find(n, unsupported[i]))
      return graph_node_error(g, n, COV_UNSUPPORTED, "attribute '%s' is not supported",
                              unsupported[i]);
  int found = 0;
  const graph_attr *a;
  memset(tmp, 0, sizeof *tmp);
  tmp->name = n->name;
  if ((a = graph_attr_find(n, "value"))) {
    found++;
    if (a->type != GA_TENSOR || !a->t)
      return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'value' must be a tensor");
    graph_copy_type(tmp, a->t);
    *data = a->t->data;
  }
  if ((a = graph_attr_find(n, "value_float"))) {
    found++;
    if (a->type != GA_FLOAT)
      return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'value_float' must be a float");
    tmp->dtype = COV_F32;
    graph_set_shape(tmp, 0, NULL);
    *data = &a->f;
  }
  if ((a = graph_attr_find(n, "value_int"))) {
    found++;
    if (a->type != GA_INT)
      return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'value_int' must be an int");
    tmp->dtype = COV_I64;
    graph_set_shape(tmp, 0, NULL);
    *data = &a->i;
  }
  if ((a = graph_attr_find(n, "value_floats"))) {
    found++;
    if (a->type != GA_FLOATS)
      return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'value_floats' must be floats");
    tmp->dtype = COV_F32;
    int64_t d = (int64_t)a->n;
    graph_set_shape(tmp, 1, &d);
    *data = a->floats;
  }
  if ((a = graph_attr_find(n, "value_ints"))) {
    found++;
    if (a->type != GA_INTS)
      return graph_node_error(g, n, COV_INVALID_INPUT, "attribute 'value_ints' must be ints");
    tmp->dtype = COV_I64;
    int64_t d = (int64_t)a->n;
    graph_set_shape(tmp, 1, &d);
    *data = a->ints;
  }
  if (found != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "needs exactly one value attribute (value, value_float, value_int, "
                            "value_floats or value_ints), found %d",
                            found);
  return NULL;
}

cov_status graph_infer_constant(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  (void)in;
  graph_value tmp;
  const void *data;
  COV_RETURN_IF_ERROR(constant_value(g, n, &tmp, &data));
  graph_copy_type(out[0], &tmp);
  return NULL;
}

cov_status graph_exec_constant(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  (void)in;
  graph_value tmp;
  const void *data;
  COV_RETURN_IF_ERROR(constant_value(x->g, n, &tmp, &data));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t numel = graph_numel(out[0]);
  if (numel > 0) memcpy(out[0]->data, data, (size_t)numel * cov_dtype_size(out[0]->dtype));
  return NULL;
}

static cov_status fill_value(const graph *g, const graph_node *n, cov_dtype *dtype,
                             const void **data) {
  static const float zero = 0.0f;
  const graph_attr *a = graph_attr_find(n, "value");
  *dtype = COV_F32;
  *data = &zero;
  if (!a) return NULL;
  if (a->type != GA_TENSOR || !a->t || graph_numel(a->t) != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "attribute 'value' must be a one-element tensor");
  *dtype = a->t->dtype;
  *data = a->t->data;
  return NULL;
}

cov_status graph_infer_constant_of_shape(const graph *g, const graph_node *n,
                                         graph_value *const *in, graph_value *const *out) {
  cov_dtype dt;
  const void *data;
  COV_RETURN_IF_ERROR(fill_value(g, n, &dt, &data));
  out[0]->dtype = dt;
  int64_t d[COV_MAX_RANK];
  int r;
  bool known;
  COV_RETURN_IF_ERROR(graph_read_shape_input(g, n, in[0], d, &r, &known));
  if (!known) {
    graph_set_shape(out[0], r, NULL);
    return NULL;
  }
  for (int i = 0; i < r; i++)
    if (d[i] < 0)
      return graph_node_error(g, n, COV_INVALID_INPUT, "shape[%d] is %lld", i, (long long)d[i]);
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_constant_of_shape(graph_exec *x, const graph_node *n, graph_value *const *in,
                                        graph_value *const *out) {
  (void)in;
  cov_dtype dt;
  const void *data;
  COV_RETURN_IF_ERROR(fill_value(x->g, n, &dt, &data));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t numel = graph_numel(out[0]);
  size_t es = cov_dtype_size(dt);
  for (int64_t i = 0; i < numel; i++) memcpy((char *)out[0]->data + (size_t)i * es, data, es);
  return NULL;
}
