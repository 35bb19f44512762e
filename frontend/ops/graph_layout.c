/* frontend/ops/graph_layout.c: data-movement operations the frontend executes
 * itself: Identity, Dropout (inference), Reshape, Flatten, Squeeze,
 * Unsqueeze, Transpose, Concat, Split, Expand.
 *
 * These only rearrange or copy elements; none computes a value. A mapper
 * never schedules them onto compute units (they become address arithmetic or
 * DMA), so the reference target runs them here instead of through codelets.
 * Each has one shape rule (graph_infer_*) used at load time and again, with
 * concrete shapes, at run time, and one kernel (graph_exec_*). */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"

#define MAX_LIST 64 /* axes, shapes and split sizes read from tensors */

static size_t esize(const graph_value *v) { return cov_dtype_size(v->dtype); }

/* Copies input 0 into output 0 unchanged: every op that only relabels the
 * shape of dense row-major data. */
static cov_status copy_through(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t numel = graph_numel(out[0]);
  if (numel > 0) memcpy(out[0]->data, in[0]->data, (size_t)numel * esize(out[0]));
  return NULL;
}

/* ---- Identity, Dropout ------------------------------------------------ */

cov_status graph_infer_identity(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  (void)g, (void)n;
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_identity(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  return copy_through(x, n, in, out);
}

/* Inference mode: the output is the input and the mask is all true. So is
 * training mode with ratio 0: no element is dropped and the scale
 * 1 / (1 - ratio) is 1. Training mode with a ratio above 0 draws a random
 * mask, which a deterministic compiler does not reproduce: refused. A
 * training_mode or ratio fed at run time is decided then (the run re-checks
 * this rule with the fed values). */
static cov_status dropout_mode(const graph *g, const graph_node *n, graph_value *const *in) {
  const graph_value *r = n->n_in > 1 ? in[1] : NULL;
  if (r && !cov_dtype_is_float(r->dtype))
    return graph_node_error(g, n, COV_INVALID_INPUT, "ratio must be a float scalar");
  if (r && r->data) {
    double ratio;
    COV_RETURN_IF_ERROR(graph_read_scalar(g, n, r, "ratio", &ratio));
    if (!(ratio >= 0 && ratio < 1))
      return graph_node_error(g, n, COV_INVALID_INPUT, "ratio is %g; it must be in [0, 1)", ratio);
  }
  if (n->n_in <= 2 || !in[2]) return NULL;
  if (in[2]->dtype != COV_BOOL)
    return graph_node_error(g, n, COV_INVALID_INPUT, "training_mode must be bool");
  if (!in[2]->data) return NULL; /* decided when the caller feeds it */
  if (graph_numel(in[2]) != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "training_mode must hold exactly one element");
  if (!((const uint8_t *)in[2]->data)[0]) return NULL;
  if (r && !r->data) return NULL; /* training: decided when the ratio is fed */
  double ratio = 0.5;
  if (r) COV_RETURN_IF_ERROR(graph_read_scalar(g, n, r, "ratio", &ratio));
  if (ratio != 0)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "training_mode is true and ratio is %g: the output and mask depend on "
                            "a random draw (random-number generation is not supported; only ratio "
                            "0 is deterministic)",
                            ratio);
  return NULL;
}

cov_status graph_infer_dropout(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  COV_RETURN_IF_ERROR(dropout_mode(g, n, in));
  graph_copy_type(out[0], in[0]);
  if (n->n_out > 1 && out[1]) {
    graph_copy_type(out[1], in[0]);
    out[1]->dtype = COV_BOOL;
  }
  return NULL;
}

cov_status graph_exec_dropout(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  COV_RETURN_IF_ERROR(copy_through(x, n, in, out));
  if (n->n_out > 1 && out[1]) {
    COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[1]));
    int64_t numel = graph_numel(out[1]);
    if (numel > 0) memset(out[1]->data, 1, (size_t)numel);
  }
  return NULL;
}

/* ---- Reshape ---------------------------------------------------------- */

cov_status graph_infer_reshape(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  if (n->n_in < 2 || !in[1])
    return graph_node_error(g, n, COV_INVALID_INPUT, "needs the 'shape' input");
  int64_t allowzero = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "allowzero", 0, &allowzero));
  out[0]->dtype = in[0]->dtype;
  int64_t shape[COV_MAX_RANK];
  int shape_rank;
  bool known_shape;
  COV_RETURN_IF_ERROR(graph_read_shape_input(g, n, in[1], shape, &shape_rank, &known_shape));
  if (!known_shape) { /* only the rank is known until the shape is */
    graph_set_shape(out[0], shape_rank, NULL);
    return NULL;
  }
  size_t r = (size_t)shape_rank;
  int infer_at = -1;
  int64_t known = 1;
  bool known_ok = true;
  int64_t dims[COV_MAX_RANK];
  for (size_t i = 0; i < r; i++) {
    int64_t d = shape[i];
    if (d == 0 && !allowzero) {
      if ((int)i >= in[0]->rank && in[0]->rank >= 0)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "shape[%zu] is 0 (copy the input dim) but the input has rank %d", i,
                                in[0]->rank);
      d = in[0]->rank >= 0 ? in[0]->dims[i] : -1;
      if (d < 0) known_ok = false;
    } else if (d == -1) {
      if (infer_at >= 0)
        return graph_node_error(g, n, COV_INVALID_INPUT, "shape has more than one -1");
      infer_at = (int)i;
      d = -1;
    } else if (d < 0) {
      return graph_node_error(g, n, COV_INVALID_INPUT, "shape[%zu] is %lld", i, (long long)d);
    }
    if (d >= 0 && __builtin_mul_overflow(known, d, &known))
      return graph_node_error(g, n, COV_OUT_OF_RANGE, "the product of the shape overflows");
    dims[i] = d;
  }
  if (allowzero && infer_at >= 0)
    for (size_t i = 0; i < r; i++)
      if (shape[i] == 0)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "shape has both 0 and -1, which allowzero=1 forbids");
  int64_t numel = graph_numel(in[0]);
  if (numel >= 0 && known_ok) {
    if (infer_at >= 0) {
      if (known == 0 || numel % known)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "cannot reshape %lld elements into a shape whose other dims "
                                "multiply to %lld",
                                (long long)numel, (long long)known);
      dims[infer_at] = numel / known;
    } else if (known != numel) {
      char a[256];
      return graph_node_error(
          g, n, COV_INVALID_INPUT, "cannot reshape %s (%lld elements) into %lld elements",
          graph_type_str(in[0], a, sizeof a), (long long)numel, (long long)known);
    }
  }
  graph_set_shape(out[0], (int)r, dims);
  return NULL;
}

cov_status graph_exec_reshape(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  return copy_through(x, n, in, out);
}

/* ---- Flatten ---------------------------------------------------------- */

cov_status graph_infer_flatten(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 1, &axis));
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0) {
    int64_t d[2] = {-1, -1};
    graph_set_shape(out[0], 2, d);
    return NULL;
  }
  int r = in[0]->rank;
  if (axis < -r || axis > r)
    return graph_node_error(g, n, COV_INVALID_INPUT, "axis %lld is out of range for rank %d",
                            (long long)axis, r);
  if (axis < 0) axis += r;
  int64_t d[2] = {1, 1};
  for (int i = 0; i < r; i++) {
    int64_t *p = &d[i < axis ? 0 : 1];
    if (in[0]->dims[i] < 0 || *p < 0)
      *p = -1;
    else if (__builtin_mul_overflow(*p, in[0]->dims[i], p))
      return graph_node_error(g, n, COV_OUT_OF_RANGE, "the product of the dims overflows");
  }
  graph_set_shape(out[0], 2, d);
  return NULL;
}

cov_status graph_exec_flatten(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  return copy_through(x, n, in, out);
}

/* ---- Squeeze, Unsqueeze ----------------------------------------------- */

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input
 * from 13. *known is false when the input's contents are not known yet. */
static cov_status read_axes(const graph *g, const graph_node *n, graph_value *const *in,
                            int64_t *axes, size_t *count, bool *present, bool *known) {
  *count = 0;
  *present = false;
  *known = true;
  if (n->opset >= 13) {
    if (n->n_in < 2 || !in[1]) return NULL;
    *present = true;
    if (!in[1]->data) {
      *known = false;
      return NULL;
    }
    return graph_read_ints(g, n, in[1], "axes", axes, MAX_LIST, count);
  }
  if (n->n_in > 1)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "takes its axes as an attribute before opset 13, not as an input");
  const int64_t *a;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "axes", &a, count));
  if (*count > MAX_LIST) return graph_node_error(g, n, COV_OUT_OF_RANGE, "too many axes");
  if (a) memcpy(axes, a, *count * sizeof *axes);
  *present = a != NULL;
  return NULL;
}

cov_status graph_infer_squeeze(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  int64_t axes[MAX_LIST];
  size_t na;
  bool present, known;
  COV_RETURN_IF_ERROR(read_axes(g, n, in, axes, &na, &present, &known));
  out[0]->dtype = in[0]->dtype;
  int r = in[0]->rank;
  if (r < 0 || !known) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  bool drop[COV_MAX_RANK] = {false};
  if (present && na) {
    for (size_t i = 0; i < na; i++) {
      int a;
      COV_RETURN_IF_ERROR(graph_axis(g, n, axes[i], r, "axis", &a));
      if (in[0]->dims[a] >= 0 && in[0]->dims[a] != 1)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "cannot squeeze axis %d of '%s': its size is %lld, not 1", a,
                                in[0]->name, (long long)in[0]->dims[a]);
      drop[a] = true;
    }
  } else {
    for (int i = 0; i < r; i++) {
      if (in[0]->dims[i] < 0) {
        graph_set_shape(out[0], -1, NULL); /* which dims are 1 is not known yet */
        return NULL;
      }
      drop[i] = in[0]->dims[i] == 1;
    }
  }
  int64_t d[COV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r; i++)
    if (!drop[i]) d[k++] = in[0]->dims[i];
  graph_set_shape(out[0], k, d);
  return NULL;
}

cov_status graph_exec_squeeze(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  return copy_through(x, n, in, out);
}

cov_status graph_infer_unsqueeze(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  int64_t axes[MAX_LIST];
  size_t na;
  bool present, known;
  COV_RETURN_IF_ERROR(read_axes(g, n, in, axes, &na, &present, &known));
  if (!present) return graph_node_error(g, n, COV_INVALID_INPUT, "needs 'axes'");
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0 || !known) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int r = in[0]->rank + (int)na;
  if (r > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "output rank %d is over the limit of %d", r,
                            COV_MAX_RANK);
  bool added[COV_MAX_RANK] = {false};
  for (size_t i = 0; i < na; i++) {
    int a;
    COV_RETURN_IF_ERROR(graph_axis(g, n, axes[i], r, "axis", &a));
    if (added[a]) return graph_node_error(g, n, COV_INVALID_INPUT, "axis %d is given twice", a);
    added[a] = true;
  }
  int64_t d[COV_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++) d[i] = added[i] ? 1 : in[0]->dims[k++];
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_unsqueeze(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  return copy_through(x, n, in, out);
}

/* ---- Transpose -------------------------------------------------------- */

static cov_status read_perm(const graph *g, const graph_node *n, int r, int *perm) {
  const int64_t *p;
  size_t np;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "perm", &p, &np));
  if (!p) {
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    return NULL;
  }
  if ((int)np != r)
    return graph_node_error(g, n, COV_INVALID_INPUT, "perm has %zu entries for an input of rank %d",
                            np, r);
  bool seen[COV_MAX_RANK] = {false};
  for (int i = 0; i < r; i++) {
    if (p[i] < 0 || p[i] >= r || seen[p[i]])
      return graph_node_error(g, n, COV_INVALID_INPUT, "perm is not a permutation of 0..%d", r - 1);
    seen[p[i]] = true;
    perm[i] = (int)p[i];
  }
  return NULL;
}

cov_status graph_infer_transpose(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  out[0]->dtype = in[0]->dtype;
  int r = in[0]->rank;
  if (r < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int perm[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(read_perm(g, n, r, perm));
  int64_t d[COV_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = in[0]->dims[perm[i]];
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_transpose_data(const graph *g, const graph_node *n, const void *src,
                                cov_dtype dtype, int rank, const int64_t *dims, const int *perm,
                                void **out) {
  size_t es = cov_dtype_size(dtype);
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= dims[i];
  unsigned char *dst = malloc(numel > 0 ? (size_t)numel * es : 1);
  if (!dst) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  *out = dst;
  if (numel <= 0) return NULL;
  /* Walk the output in order; step the source by the permuted strides. */
  int64_t src_stride[COV_MAX_RANK], stride[COV_MAX_RANK], odims[COV_MAX_RANK], idx[COV_MAX_RANK];
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    src_stride[i] = s;
    s *= dims[i];
  }
  for (int i = 0; i < rank; i++) {
    stride[i] = src_stride[perm[i]];
    odims[i] = dims[perm[i]];
    idx[i] = 0;
  }
  const unsigned char *in = src;
  int64_t off = 0;
  for (int64_t k = 0; k < numel; k++) {
    memcpy(dst + (size_t)k * es, in + (size_t)off * es, es);
    for (int i = rank - 1; i >= 0; i--) {
      off += stride[i];
      if (++idx[i] < odims[i]) break;
      off -= stride[i] * odims[i];
      idx[i] = 0;
    }
  }
  return NULL;
}

cov_status graph_exec_transpose(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  int perm[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(read_perm(x->g, n, in[0]->rank, perm));
  return graph_transpose_data(x->g, n, in[0]->data, in[0]->dtype, in[0]->rank, in[0]->dims, perm,
                              &out[0]->data);
}

/* ---- Concat ----------------------------------------------------------- */

cov_status graph_infer_concat(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  const graph_attr *a = graph_attr_find(n, "axis");
  if (!a) return graph_node_error(g, n, COV_INVALID_INPUT, "needs the 'axis' attribute");
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  int r = -1;
  for (int i = 0; i < n->n_in; i++) {
    if (!in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d is empty", i);
    if (in[i]->dtype != in[0]->dtype)
      return graph_node_error(
          g, n, COV_INVALID_INPUT, "inputs '%s' (%s) and '%s' (%s) have different dtypes",
          in[0]->name, cov_dtype_name(in[0]->dtype), in[i]->name, cov_dtype_name(in[i]->dtype));
    if (in[i]->rank >= 0) {
      if (r >= 0 && in[i]->rank != r)
        return graph_node_error(g, n, COV_INVALID_INPUT, "inputs have different ranks (%d and %d)",
                                r, in[i]->rank);
      r = in[i]->rank;
    }
  }
  out[0]->dtype = in[0]->dtype;
  if (r < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  if (r == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "cannot concatenate scalars");
  int ax;
  COV_RETURN_IF_ERROR(graph_axis(g, n, axis, r, "axis", &ax));
  int64_t d[COV_MAX_RANK];
  for (int k = 0; k < r; k++) d[k] = k == ax ? 0 : -1;
  for (int i = 0; i < n->n_in; i++) {
    if (in[i]->rank < 0) {
      d[ax] = -1;
      continue;
    }
    for (int k = 0; k < r; k++) {
      int64_t v = in[i]->dims[k];
      if (k == ax) {
        if (v < 0 || d[ax] < 0)
          d[ax] = -1;
        else if (__builtin_add_overflow(d[ax], v, &d[ax]))
          return graph_node_error(g, n, COV_OUT_OF_RANGE, "the concatenated dim overflows");
        continue;
      }
      if (v < 0) continue;
      if (d[k] >= 0 && d[k] != v)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "input '%s' has dim %d = %lld, but another input has %lld",
                                in[i]->name, k, (long long)v, (long long)d[k]);
      d[k] = v;
    }
  }
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_concat(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "axis", 0, &axis));
  int r = out[0]->rank, ax = (int)(axis < 0 ? axis + r : axis);
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  size_t es = esize(out[0]);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < ax; k++) outer *= out[0]->dims[k];
  for (int k = ax + 1; k < r; k++) inner *= out[0]->dims[k];
  size_t row = (size_t)(out[0]->dims[ax] * inner) * es;
  size_t at = 0;
  for (int i = 0; i < n->n_in; i++) {
    size_t chunk = (size_t)(in[i]->dims[ax] * inner) * es;
    for (int64_t o = 0; o < outer && chunk; o++)
      memcpy((char *)out[0]->data + (size_t)o * row + at,
             (const char *)in[i]->data + (size_t)o * chunk, chunk);
    at += chunk;
  }
  return NULL;
}

/* ---- Split ------------------------------------------------------------ */

/* Sizes of the pieces along the axis; *known false when they depend on a
 * dim or an input not known yet. */
static cov_status split_sizes(const graph *g, const graph_node *n, graph_value *const *in, int ax,
                              int64_t *sizes, bool *known) {
  int parts = n->n_out;
  int64_t dim = in[0]->dims[ax];
  *known = true;
  const int64_t *attr = NULL;
  size_t na = 0;
  int64_t list[GRAPH_MAX_NODE_IO];
  if (n->opset >= 13) {
    if (n->n_in > 1 && in[1]) {
      if (!in[1]->data) {
        *known = false;
        return NULL;
      }
      COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[1], "split", list, GRAPH_MAX_NODE_IO, &na));
      attr = list;
    }
  } else {
    if (n->n_in > 1)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "takes 'split' as an attribute before opset 13, not as an input");
    COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "split", &attr, &na));
  }
  if (attr) {
    if ((int)na != parts)
      return graph_node_error(g, n, COV_INVALID_INPUT, "split has %zu sizes for %d outputs", na,
                              parts);
    int64_t sum = 0;
    for (int i = 0; i < parts; i++) {
      if (attr[i] < 0)
        return graph_node_error(g, n, COV_INVALID_INPUT, "split size %lld is negative",
                                (long long)attr[i]);
      if (__builtin_add_overflow(sum, attr[i], &sum))
        return graph_node_error(g, n, COV_OUT_OF_RANGE, "split sizes overflow");
      sizes[i] = attr[i];
    }
    if (dim >= 0 && sum != dim)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "split sizes add up to %lld, but the axis has %lld", (long long)sum,
                              (long long)dim);
    return NULL;
  }
  if (dim < 0) {
    *known = false;
    return NULL;
  }
  int64_t num_outputs = parts;
  if (n->opset >= 18) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "num_outputs", parts, &num_outputs));
    if (num_outputs != parts)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "num_outputs is %lld but the node has %d outputs",
                              (long long)num_outputs, parts);
    /* Opset 18: pieces of ceil(dim / n), the last one smaller. */
    int64_t piece = (dim + parts - 1) / parts;
    for (int i = 0; i < parts; i++) {
      int64_t left = dim - piece * i;
      sizes[i] = left < 0 ? 0 : (left < piece ? left : piece);
    }
    return NULL;
  }
  if (dim % parts)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "axis of size %lld cannot be split evenly into %d outputs",
                            (long long)dim, parts);
  for (int i = 0; i < parts; i++) sizes[i] = dim / parts;
  return NULL;
}

cov_status graph_infer_split(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  for (int i = 0; i < n->n_out; i++)
    if (out[i]) out[i]->dtype = in[0]->dtype;
  int r = in[0]->rank;
  if (r < 0) {
    for (int i = 0; i < n->n_out; i++)
      if (out[i]) graph_set_shape(out[i], -1, NULL);
    return NULL;
  }
  int ax;
  COV_RETURN_IF_ERROR(graph_axis(g, n, axis, r, "axis", &ax));
  int64_t *sizes = malloc((size_t)n->n_out * sizeof *sizes);
  if (!sizes) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  bool known;
  cov_status st = split_sizes(g, n, in, ax, sizes, &known);
  for (int i = 0; !st && i < n->n_out; i++) {
    if (!out[i]) continue;
    graph_set_shape(out[i], r, in[0]->dims);
    out[i]->dims[ax] = known ? sizes[i] : -1;
  }
  free(sizes);
  return st;
}

cov_status graph_exec_split(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "axis", 0, &axis));
  int r = in[0]->rank, ax = (int)(axis < 0 ? axis + r : axis);
  int64_t *sizes = malloc((size_t)n->n_out * sizeof *sizes);
  if (!sizes) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  bool known;
  cov_status st = split_sizes(x->g, n, in, ax, sizes, &known);
  size_t es = esize(in[0]);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < ax; k++) outer *= in[0]->dims[k];
  for (int k = ax + 1; k < r; k++) inner *= in[0]->dims[k];
  size_t row = (size_t)(in[0]->dims[ax] * inner) * es, at = 0;
  for (int i = 0; !st && i < n->n_out; i++) {
    size_t chunk = (size_t)(sizes[i] * inner) * es;
    if (out[i]) {
      st = graph_alloc_data(x->g, n, out[i]);
      for (int64_t o = 0; !st && o < outer && chunk; o++)
        memcpy((char *)out[i]->data + (size_t)o * chunk,
               (const char *)in[0]->data + (size_t)o * row + at, chunk);
    }
    at += chunk;
  }
  free(sizes);
  return st;
}

/* ---- Expand (bidirectional broadcast to a shape) ----------------------- */

cov_status graph_infer_expand(const graph *g, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  out[0]->dtype = in[0]->dtype;
  int64_t shape[COV_MAX_RANK];
  int shape_rank;
  bool known;
  COV_RETURN_IF_ERROR(graph_read_shape_input(g, n, in[1], shape, &shape_rank, &known));
  if (!known) { /* broadcasting may raise the rank: nothing is known */
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  size_t r = (size_t)shape_rank;
  graph_value target = {.name = in[1]->name, .dtype = in[0]->dtype, .rank = (int)r};
  for (size_t i = 0; i < r; i++) {
    if (shape[i] < 0)
      return graph_node_error(g, n, COV_INVALID_INPUT, "shape[%zu] is %lld", i,
                              (long long)shape[i]);
    target.dims[i] = shape[i];
  }
  int rank;
  int64_t dims[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(graph_broadcast(g, n, in[0], &target, &rank, dims));
  graph_set_shape(out[0], rank, dims);
  return NULL;
}

cov_status graph_expand_to(const graph *g, const graph_node *n, const graph_value *src, int rank,
                           const int64_t *dims, void **out) {
  size_t es = cov_dtype_size(src->dtype);
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= dims[i];
  unsigned char *dst = malloc(numel > 0 ? (size_t)numel * es : 1);
  if (!dst) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  *out = dst;
  if (numel <= 0) return NULL;
  /* Source strides aligned to the output's rank, 0 along broadcast dims. */
  int64_t stride[COV_MAX_RANK], idx[COV_MAX_RANK];
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    int si = i - (rank - src->rank);
    if (si >= 0 && src->dims[si] != 1) {
      stride[i] = s;
      s *= src->dims[si];
    } else {
      stride[i] = 0;
      if (si >= 0) s *= src->dims[si];
    }
    idx[i] = 0;
  }
  const unsigned char *in = src->data;
  int64_t off = 0;
  for (int64_t k = 0; k < numel; k++) {
    memcpy(dst + (size_t)k * es, in + (size_t)off * es, es);
    for (int i = rank - 1; i >= 0; i--) {
      off += stride[i];
      if (++idx[i] < dims[i]) break;
      off -= stride[i] * dims[i];
      idx[i] = 0;
    }
  }
  return NULL;
}

cov_status graph_exec_expand(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  return graph_expand_to(x->g, n, in[0], out[0]->rank, out[0]->dims, &out[0]->data);
}
