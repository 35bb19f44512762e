/* frontend/ops/graph_select.c: data-movement operators that select, scatter,
 * rearrange or generate elements: Size, CastLike, Range, EyeLike, Trilu,
 * Tile, DepthToSpace, SpaceToDepth, GatherElements, GatherND,
 * ScatterElements, ScatterND, OneHot and TopK. Like Gather and Slice
 * (graph_index.c) they run in the frontend: no element is computed except
 * Range's start + i * delta and the reductions of ScatterElements /
 * ScatterND (add, mul, max, min of an update into one element, on
 * scattered positions that no codelet's affine indexing can express).
 *
 * Indices are checked against their axis before anything is written:
 * out-of-range indices are a located error, never an out-of-bounds access. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"
#include "frontend/onnx/onnx_internal.h"

/* Sizes a generator (Range, OneHot depth) may produce. */
#define GEN_MAX ((int64_t)1 << 28)

static cov_status check_index_dtype(const graph *g, const graph_node *n, const graph_value *v) {
  if (v->dtype == COV_I64 || v->dtype == COV_I32) return NULL;
  return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' must be int32 or int64, not %s", v->name,
                          cov_dtype_name(v->dtype));
}

static int64_t index_at(const graph_value *v, int64_t i) {
  return v->dtype == COV_I64 ? ((const int64_t *)v->data)[i] : ((const int32_t *)v->data)[i];
}

static void strides_of(const graph_value *v, int64_t *s) {
  int64_t k = 1;
  for (int i = v->rank - 1; i >= 0; i--) s[i] = k, k *= v->dims[i];
}

static cov_status copy_input(graph_exec *x, const graph_node *n, const graph_value *v,
                             graph_value *out) {
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out));
  int64_t k = graph_numel(v);
  if (k > 0) memcpy(out->data, v->data, (size_t)k * cov_dtype_size(v->dtype));
  return NULL;
}

/* ---- Size, CastLike ----------------------------------------------------- */

cov_status graph_infer_size(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  (void)g, (void)n, (void)in;
  out[0]->dtype = COV_I64;
  graph_set_shape(out[0], 0, NULL);
  return NULL;
}

cov_status graph_exec_size(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  *(int64_t *)out[0]->data = graph_numel(in[0]);
  return NULL;
}

cov_status graph_infer_cast_like(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  if (in[1]->dtype == COV_DTYPE_INVALID)
    return graph_node_error(g, n, COV_INVALID_INPUT, "target_type '%s' has no dtype", in[1]->name);
  graph_copy_type(out[0], in[0]);
  out[0]->dtype = in[1]->dtype;
  return NULL;
}

cov_status graph_exec_cast_like(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  return graph_exec_cast(x, n, in, out); /* converts to out[0]'s dtype */
}

/* ---- Range -------------------------------------------------------------- */

/* Range's operands: as doubles for float dtypes, as exact int64 for integer
 * ones (int64 start/limit/delta beyond 2^53 do not survive a double, and
 * limit - start may overflow int64: the count is computed in 128 bits). */
typedef struct range_args {
  bool integer;
  double v[3];
  int64_t iv[3];
} range_args;

static cov_status range_len_int(const graph *g, const graph_node *n, const int64_t *iv,
                                int64_t *len) {
  if (iv[2] == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "delta must be non-zero");
  __int128 diff = (__int128)iv[1] - iv[0], d = iv[2];
  __int128 k = diff / d;
  if (diff % d != 0 && (diff > 0) == (d > 0)) k++; /* ceil */
  if (k > GEN_MAX) return graph_node_error(g, n, COV_INVALID_INPUT, "the range has too many elements");
  *len = k > 0 ? (int64_t)k : 0;
  return NULL;
}

static cov_status range_params(const graph *g, const graph_node *n, graph_value *const *in,
                               range_args *a, int64_t *len) {
  for (int i = 0; i < 3; i++) {
    COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[i]));
    if (in[i]->dtype != in[0]->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "start, limit and delta differ in dtype");
    if (in[i]->rank > 1 || (in[i]->rank == 1 && in[i]->dims[0] != 1))
      return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' must be a scalar", in[i]->name);
  }
  *len = -1;
  if (!in[0]->data || !in[1]->data || !in[2]->data) return NULL;
  static const char *const what[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; i++) COV_RETURN_IF_ERROR(graph_read_scalar(g, n, in[i], what[i], &a->v[i]));
  a->integer = !cov_dtype_is_float(in[0]->dtype);
  if (a->integer) {
    for (int i = 0; i < 3; i++) a->iv[i] = graph_load_int(in[i]->data, in[i]->dtype, 0);
    return range_len_int(g, n, a->iv, len);
  }
  double *v = a->v;
  if (v[2] == 0 || !isfinite(v[2]))
    return graph_node_error(g, n, COV_INVALID_INPUT, "delta must be finite and non-zero");
  double k = ceil((v[1] - v[0]) / v[2]);
  if (!(k <= (double)GEN_MAX))
    return graph_node_error(g, n, COV_INVALID_INPUT, "the range has too many elements");
  *len = k > 0 ? (int64_t)k : 0;
  return NULL;
}

cov_status graph_infer_range(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  range_args a;
  int64_t len;
  COV_RETURN_IF_ERROR(range_params(g, n, in, &a, &len));
  out[0]->dtype = in[0]->dtype;
  graph_set_shape(out[0], 1, &len);
  return NULL;
}

cov_status graph_exec_range(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  range_args a;
  int64_t len;
  COV_RETURN_IF_ERROR(range_params(x->g, n, in, &a, &len));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  const double *v = a.v;
  for (int64_t i = 0; i < len; i++) {
    if (a.integer) {
      /* between start and limit, so within the dtype's range */
      __int128 e = (__int128)a.iv[0] + (__int128)i * a.iv[2];
      graph_store_int(out[0]->data, out[0]->dtype, (size_t)i, (int64_t)e);
    } else if (out[0]->dtype == COV_F32) {
      /* in the operands' precision, as numpy's arange for float32 */
      ((float *)out[0]->data)[i] = (float)v[0] + (float)i * (float)v[2];
    } else {
      graph_store_elem(out[0]->data, out[0]->dtype, (size_t)i, v[0] + (double)i * v[2]);
    }
  }
  return NULL;
}

/* ---- EyeLike, Trilu ----------------------------------------------------- */

cov_status graph_infer_eye_like(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  int64_t k, dt;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "k", 0, &k));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "dtype", -1, &dt));
  graph_copy_type(out[0], in[0]);
  if (dt >= 0) {
    if (dt > INT32_MAX || onnx_dtype((int32_t)dt) == COV_DTYPE_INVALID)
      return graph_node_error(g, n, COV_UNSUPPORTED, "dtype %lld is not supported", (long long)dt);
    out[0]->dtype = onnx_dtype((int32_t)dt);
  }
  if (in[0]->rank >= 0 && in[0]->rank != 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected 2",
                            in[0]->name, in[0]->rank);
  return NULL;
}

cov_status graph_exec_eye_like(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  (void)in;
  int64_t k;
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "k", 0, &k));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t r = out[0]->dims[0], c = out[0]->dims[1];
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++)
      graph_store_elem(out[0]->data, out[0]->dtype, (size_t)(i * c + j), j - i == k ? 1 : 0);
  return NULL;
}

static cov_status trilu_k(const graph *g, const graph_node *n, graph_value *const *in, int64_t *k,
                          bool *known) {
  *k = 0;
  *known = true;
  if (n->n_in < 2 || !in[1]) return NULL;
  COV_RETURN_IF_ERROR(check_index_dtype(g, n, in[1]));
  if (graph_numel(in[1]) != 1 && in[1]->rank >= 0)
    return graph_node_error(g, n, COV_INVALID_INPUT, "k '%s' must be a scalar", in[1]->name);
  if (!in[1]->data) {
    *known = false;
    return NULL;
  }
  *k = index_at(in[1], 0);
  return NULL;
}

cov_status graph_infer_trilu(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  int64_t k, upper;
  bool known;
  COV_RETURN_IF_ERROR(trilu_k(g, n, in, &k, &known));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "upper", 1, &upper));
  if (in[0]->rank >= 0 && in[0]->rank < 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected >= 2",
                            in[0]->name, in[0]->rank);
  graph_copy_type(out[0], in[0]);
  return NULL;
}

/* Keeps the elements with j - i >= k (upper) or <= k (lower), zeroes the
 * rest: a mask, so data movement. */
cov_status graph_exec_trilu(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int64_t k, upper;
  bool known;
  COV_RETURN_IF_ERROR(trilu_k(x->g, n, in, &k, &known));
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "upper", 1, &upper));
  COV_RETURN_IF_ERROR(copy_input(x, n, in[0], out[0]));
  const graph_value *v = in[0];
  int64_t rows = v->dims[v->rank - 2], cols = v->dims[v->rank - 1];
  int64_t mats = rows * cols != 0 ? graph_numel(v) / (rows * cols) : 0;
  size_t es = cov_dtype_size(v->dtype);
  char *d = out[0]->data;
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) memset(d + (size_t)((m * rows + i) * cols + j) * es, 0, es);
      }
  return NULL;
}

/* ---- Tile, DepthToSpace, SpaceToDepth ----------------------------------- */

static cov_status tile_repeats(const graph *g, const graph_node *n, graph_value *const *in,
                               int64_t *rep, bool *known) {
  COV_RETURN_IF_ERROR(check_index_dtype(g, n, in[1]));
  *known = in[1]->data != NULL && in[0]->rank >= 0;
  if (!*known) return NULL;
  size_t k;
  COV_RETURN_IF_ERROR(graph_read_ints(g, n, in[1], "repeats", rep, COV_MAX_RANK, &k));
  if ((int)k != in[0]->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT, "repeats has %zu values for rank %d", k,
                            in[0]->rank);
  for (size_t i = 0; i < k; i++)
    if (rep[i] < 0 || rep[i] > GEN_MAX)
      return graph_node_error(g, n, COV_INVALID_INPUT, "repeat %lld is out of range",
                              (long long)rep[i]);
  return NULL;
}

cov_status graph_infer_tile(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int64_t rep[COV_MAX_RANK], d[COV_MAX_RANK];
  bool known;
  COV_RETURN_IF_ERROR(tile_repeats(g, n, in, rep, &known));
  out[0]->dtype = in[0]->dtype;
  if (in[0]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  for (int i = 0; i < in[0]->rank; i++)
    d[i] = known && in[0]->dims[i] >= 0 ? in[0]->dims[i] * rep[i] : -1;
  graph_set_shape(out[0], in[0]->rank, d);
  return NULL;
}

cov_status graph_exec_tile(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  const graph_value *v = in[0];
  int r = v->rank;
  int64_t st[COV_MAX_RANK], idx[COV_MAX_RANK] = {0}, total = graph_numel(out[0]);
  strides_of(v, st);
  size_t es = cov_dtype_size(v->dtype);
  for (int64_t e = 0; e < total; e++) {
    int64_t off = 0;
    for (int i = 0; i < r; i++) off += (idx[i] % v->dims[i]) * st[i];
    memcpy((char *)out[0]->data + (size_t)e * es, (const char *)v->data + (size_t)off * es, es);
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < out[0]->dims[i]) break;
      idx[i] = 0;
    }
  }
  return NULL;
}

typedef struct d2s {
  int64_t b;
  bool crd;
} d2s;

static cov_status d2s_params(const graph *g, const graph_node *n, const graph_value *v, d2s *p,
                             bool to_space) {
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "blocksize", 0, &p->b));
  if (p->b < 1 || p->b > 4096)
    return graph_node_error(g, n, COV_INVALID_INPUT, "blocksize %lld must be from 1 to 4096",
                            (long long)p->b);
  p->crd = false;
  if (to_space) {
    const char *mode;
    COV_RETURN_IF_ERROR(graph_attr_string(g, n, "mode", "DCR", &mode));
    if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
      return graph_node_error(g, n, COV_INVALID_INPUT, "mode '%s' is not DCR or CRD", mode);
    p->crd = strcmp(mode, "CRD") == 0;
  }
  if (v->rank >= 0 && v->rank != 4)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' has rank %d; expected 4", v->name,
                            v->rank);
  return NULL;
}

cov_status graph_infer_depth_space(const graph *g, const graph_node *n, graph_value *const *in,
                                   graph_value *const *out) {
  bool to_space = strcmp(n->op_type, "DepthToSpace") == 0;
  d2s p;
  const graph_value *v = in[0];
  COV_RETURN_IF_ERROR(d2s_params(g, n, v, &p, to_space));
  out[0]->dtype = v->dtype;
  if (v->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t b = p.b, d[4] = {v->dims[0], -1, -1, -1};
  if (to_space) {
    if (v->dims[1] >= 0 && v->dims[1] % (b * b))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "%lld channels do not divide by blocksize^2 = %lld",
                              (long long)v->dims[1], (long long)(b * b));
    d[1] = v->dims[1] >= 0 ? v->dims[1] / (b * b) : -1;
    d[2] = v->dims[2] >= 0 ? v->dims[2] * b : -1;
    d[3] = v->dims[3] >= 0 ? v->dims[3] * b : -1;
  } else {
    if ((v->dims[2] >= 0 && v->dims[2] % b) || (v->dims[3] >= 0 && v->dims[3] % b))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "height and width must divide by blocksize %lld", (long long)b);
    d[1] = v->dims[1] >= 0 ? v->dims[1] * b * b : -1;
    d[2] = v->dims[2] >= 0 ? v->dims[2] / b : -1;
    d[3] = v->dims[3] >= 0 ? v->dims[3] / b : -1;
  }
  graph_set_shape(out[0], 4, d);
  return NULL;
}

/* A 6-D reshape and transpose (the ONNX definitions). */
cov_status graph_exec_depth_space(graph_exec *x, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  bool to_space = strcmp(n->op_type, "DepthToSpace") == 0;
  d2s p;
  const graph_value *v = in[0];
  COV_RETURN_IF_ERROR(d2s_params(x->g, n, v, &p, to_space));
  int64_t N = v->dims[0], C = v->dims[1], H = v->dims[2], W = v->dims[3], b = p.b;
  int64_t d[6];
  int perm[6];
  if (to_space && !p.crd) {
    int64_t dd[6] = {N, b, b, C / (b * b), H, W};
    int pp[6] = {0, 3, 4, 1, 5, 2};
    memcpy(d, dd, sizeof d), memcpy(perm, pp, sizeof perm);
  } else if (to_space) {
    int64_t dd[6] = {N, C / (b * b), b, b, H, W};
    int pp[6] = {0, 1, 4, 2, 5, 3};
    memcpy(d, dd, sizeof d), memcpy(perm, pp, sizeof perm);
  } else {
    int64_t dd[6] = {N, C, H / b, b, W / b, b};
    int pp[6] = {0, 3, 5, 1, 2, 4};
    memcpy(d, dd, sizeof d), memcpy(perm, pp, sizeof perm);
  }
  return graph_transpose_data(x->g, n, v->data, v->dtype, 6, d, perm, &out[0]->data);
}

/* ---- GatherElements, ScatterElements ------------------------------------ */

static const char *const k_reductions[] = {"none", "add", "mul", "max", "min"};

static cov_status reduction_of(const graph *g, const graph_node *n, int *red) {
  const char *s;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "reduction", "none", &s));
  for (int i = 0; i < 5; i++)
    if (strcmp(s, k_reductions[i]) == 0) {
      *red = i;
      return NULL;
    }
  return graph_node_error(g, n, COV_INVALID_INPUT,
                          "reduction '%s' is not none, add, mul, max or min", s);
}

/* Integer reductions in integer arithmetic: add and mul wrap (as numpy's
 * do; unsigned, so no overflow is undefined), max and min exact. */
static void combine_int(void *dst, cov_dtype t, size_t i, const void *src, size_t j, int red) {
  int64_t a = graph_load_int(dst, t, i), b = graph_load_int(src, t, j), r;
  if (red == 1) r = (int64_t)((uint64_t)a + (uint64_t)b);
  else if (red == 2) r = (int64_t)((uint64_t)a * (uint64_t)b);
  else if (red == 3) r = a > b ? a : b;
  else r = a < b ? a : b;
  graph_store_int(dst, t, i, r);
}

static void combine(void *dst, cov_dtype t, size_t i, const void *src, size_t j, int red) {
  if (red == 0) {
    size_t es = cov_dtype_size(t);
    memcpy((char *)dst + i * es, (const char *)src + j * es, es);
    return;
  }
  if (!cov_dtype_is_float(t)) {
    combine_int(dst, t, i, src, j, red);
    return;
  }
  double a = graph_load_elem(dst, t, i), b = graph_load_elem(src, t, j), r;
  switch (red) {
    case 1:
      r = a + b;
      break;
    case 2:
      r = a * b;
      break;
    case 3:
      r = a > b ? a : b;
      break;
    default:
      r = a < b ? a : b;
      break;
  }
  graph_store_elem(dst, t, i, r);
}

static cov_status elements_check(const graph *g, const graph_node *n, graph_value *const *in,
                                 int *ax, bool scatter) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  COV_RETURN_IF_ERROR(check_index_dtype(g, n, in[1]));
  if (in[0]->rank < 0 || in[1]->rank < 0) return NULL;
  if (in[0]->rank < 1 || in[1]->rank != in[0]->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "data and indices must have the same rank >= 1 (got %d and %d)",
                            in[0]->rank, in[1]->rank);
  bool same = !scatter || in[2]->rank == in[1]->rank;
  for (int i = 0; scatter && same && i < in[1]->rank; i++)
    same = in[1]->dims[i] < 0 || in[2]->dims[i] < 0 || in[1]->dims[i] == in[2]->dims[i];
  if (scatter && (!same || in[2]->dtype != in[0]->dtype))
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "updates must have the indices' shape and the data's dtype");
  return graph_axis(g, n, axis, in[0]->rank, "axis", ax);
}

/* Visits every element of indices: e (its flat index) and the data offset
 * with the axis coordinate replaced by the index; errors on a bad index. */
static cov_status elements_offsets(const graph *g, const graph_node *n, const graph_value *data,
                                   const graph_value *ind, int ax, int64_t *offs) {
  int r = ind->rank;
  int64_t ds[COV_MAX_RANK], idx[COV_MAX_RANK] = {0}, total = graph_numel(ind);
  strides_of(data, ds);
  for (int64_t e = 0; e < total; e++) {
    int64_t off = 0;
    for (int i = 0; i < r; i++) {
      int64_t c = idx[i];
      if (i == ax) {
        c = index_at(ind, e);
        if (c < -data->dims[ax] || c >= data->dims[ax])
          return graph_node_error(g, n, COV_INVALID_INPUT,
                                  "index %lld is out of range for axis %d of size %lld",
                                  (long long)c, ax, (long long)data->dims[ax]);
        if (c < 0) c += data->dims[ax];
      } else if (c >= data->dims[i]) {
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "indices dim %d (%lld) is larger than the data's (%lld)", i,
                                (long long)ind->dims[i], (long long)data->dims[i]);
      }
      off += c * ds[i];
    }
    offs[e] = off;
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < ind->dims[i]) break;
      idx[i] = 0;
    }
  }
  return NULL;
}

cov_status graph_infer_gather_elements(const graph *g, const graph_node *n, graph_value *const *in,
                                       graph_value *const *out) {
  int ax;
  COV_RETURN_IF_ERROR(elements_check(g, n, in, &ax, false));
  graph_copy_type(out[0], in[1]);
  out[0]->dtype = in[0]->dtype;
  return NULL;
}

cov_status graph_exec_gather_elements(graph_exec *x, const graph_node *n, graph_value *const *in,
                                      graph_value *const *out) {
  int ax;
  COV_RETURN_IF_ERROR(elements_check(x->g, n, in, &ax, false));
  int64_t total = graph_numel(in[1]);
  int64_t *offs = malloc((size_t)(total > 0 ? total : 1) * sizeof *offs);
  if (!offs) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  cov_status st = elements_offsets(x->g, n, in[0], in[1], ax, offs);
  if (!st) st = graph_alloc_data(x->g, n, out[0]);
  size_t es = cov_dtype_size(in[0]->dtype);
  for (int64_t e = 0; !st && e < total; e++)
    memcpy((char *)out[0]->data + (size_t)e * es, (const char *)in[0]->data + (size_t)offs[e] * es,
           es);
  free(offs);
  return st;
}

cov_status graph_infer_scatter_elements(const graph *g, const graph_node *n, graph_value *const *in,
                                        graph_value *const *out) {
  int ax, red;
  COV_RETURN_IF_ERROR(elements_check(g, n, in, &ax, true));
  COV_RETURN_IF_ERROR(reduction_of(g, n, &red));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_scatter_elements(graph_exec *x, const graph_node *n, graph_value *const *in,
                                       graph_value *const *out) {
  int ax = 0, red = 0; /* set on success (gcc -O3 cannot see it) */
  COV_RETURN_IF_ERROR(elements_check(x->g, n, in, &ax, true));
  COV_RETURN_IF_ERROR(reduction_of(x->g, n, &red));
  int64_t total = graph_numel(in[1]);
  int64_t *offs = malloc((size_t)(total > 0 ? total : 1) * sizeof *offs);
  if (!offs) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  cov_status st = elements_offsets(x->g, n, in[0], in[1], ax, offs);
  if (!st) st = copy_input(x, n, in[0], out[0]);
  for (int64_t e = 0; !st && e < total; e++)
    combine(out[0]->data, in[0]->dtype, (size_t)offs[e], in[2]->data, (size_t)e, red);
  free(offs);
  return st;
}

/* ---- GatherND, ScatterND ------------------------------------------------ */

typedef struct nd {
  int b, k;                   /* batch dims, index tuple length */
  int64_t batch, tuples, blk; /* batch count, tuples per batch, elements per slice */
} nd;

static cov_status nd_params(const graph *g, const graph_node *n, const graph_value *data,
                            const graph_value *ind, nd *p) {
  int64_t b = 0;
  if (strcmp(n->op_type, "GatherND") == 0 && n->opset >= 12)
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "batch_dims", 0, &b));
  COV_RETURN_IF_ERROR(check_index_dtype(g, n, ind));
  if (data->rank < 0 || ind->rank < 0) {
    p->k = -1;
    return NULL;
  }
  if (data->rank < 1 || ind->rank < 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "data and indices must have rank >= 1");
  if (b < 0 || b >= ind->rank || b >= data->rank)
    return graph_node_error(g, n, COV_INVALID_INPUT, "batch_dims %lld is out of range",
                            (long long)b);
  p->b = (int)b;
  int64_t k = ind->dims[ind->rank - 1];
  if (k < 1 || k > data->rank - b)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "index tuples of length %lld do not fit data of rank %d", (long long)k,
                            data->rank);
  p->k = (int)k;
  p->batch = 1;
  for (int i = 0; i < p->b; i++) {
    if (ind->dims[i] != data->dims[i])
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "batch dim %d differs between data and indices", i);
    p->batch *= data->dims[i];
  }
  p->tuples = 1;
  for (int i = p->b; i < ind->rank - 1; i++) p->tuples *= ind->dims[i];
  p->blk = 1;
  for (int i = p->b + p->k; i < data->rank; i++) p->blk *= data->dims[i];
  return NULL;
}

/* Offset (in elements) of tuple t of batch bt in data. */
static cov_status nd_offset(const graph *g, const graph_node *n, const graph_value *data,
                            const graph_value *ind, const nd *p, int64_t bt, int64_t t,
                            int64_t *off) {
  int64_t ds[COV_MAX_RANK];
  strides_of(data, ds);
  int64_t o = bt * (p->b ? ds[p->b - 1] : 0);
  for (int j = 0; j < p->k; j++) {
    int ax = p->b + j;
    int64_t c = index_at(ind, (bt * p->tuples + t) * p->k + j);
    if (c < -data->dims[ax] || c >= data->dims[ax])
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "index %lld is out of range for axis %d of size %lld", (long long)c,
                              ax, (long long)data->dims[ax]);
    if (c < 0) c += data->dims[ax];
    o += c * ds[ax];
  }
  *off = o;
  return NULL;
}

cov_status graph_infer_gather_nd(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  nd p;
  COV_RETURN_IF_ERROR(nd_params(g, n, in[0], in[1], &p));
  out[0]->dtype = in[0]->dtype;
  if (p.k < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t d[2 * COV_MAX_RANK];
  int r = 0;
  for (int i = 0; i < in[1]->rank - 1; i++) d[r++] = in[1]->dims[i];
  for (int i = p.b + p.k; i < in[0]->rank; i++) d[r++] = in[0]->dims[i];
  if (r > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "output rank %d is over the limit", r);
  graph_set_shape(out[0], r, d);
  return NULL;
}

cov_status graph_exec_gather_nd(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  nd p;
  COV_RETURN_IF_ERROR(nd_params(x->g, n, in[0], in[1], &p));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  size_t es = cov_dtype_size(in[0]->dtype), blk = (size_t)p.blk * es;
  for (int64_t bt = 0; bt < p.batch; bt++)
    for (int64_t t = 0; t < p.tuples; t++) {
      int64_t off = 0; /* set on success (gcc -O3 cannot see it) */
      COV_RETURN_IF_ERROR(nd_offset(x->g, n, in[0], in[1], &p, bt, t, &off));
      memcpy((char *)out[0]->data + (size_t)(bt * p.tuples + t) * blk,
             (const char *)in[0]->data + (size_t)off * es, blk);
    }
  return NULL;
}

cov_status graph_infer_scatter_nd(const graph *g, const graph_node *n, graph_value *const *in,
                                  graph_value *const *out) {
  nd p = {0}; /* set on success (gcc -O3 cannot see it) */
  int red;
  COV_RETURN_IF_ERROR(nd_params(g, n, in[0], in[1], &p));
  COV_RETURN_IF_ERROR(reduction_of(g, n, &red));
  if (in[2]->dtype != in[0]->dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "updates must have the data's dtype");
  if (p.k >= 0 && graph_numel(in[2]) >= 0 && graph_numel(in[2]) != p.tuples * p.blk)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "updates '%s' has %lld elements; expected %lld", in[2]->name,
                            (long long)graph_numel(in[2]), (long long)(p.tuples * p.blk));
  graph_copy_type(out[0], in[0]);
  return NULL;
}

cov_status graph_exec_scatter_nd(graph_exec *x, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  nd p;
  int red = 0; /* set on success (gcc -O3 cannot see it) */
  COV_RETURN_IF_ERROR(nd_params(x->g, n, in[0], in[1], &p));
  COV_RETURN_IF_ERROR(reduction_of(x->g, n, &red));
  COV_RETURN_IF_ERROR(copy_input(x, n, in[0], out[0]));
  for (int64_t t = 0; t < p.tuples; t++) {
    int64_t off = 0; /* set on success (gcc -O3 cannot see it) */
    COV_RETURN_IF_ERROR(nd_offset(x->g, n, in[0], in[1], &p, 0, t, &off));
    for (int64_t j = 0; j < p.blk; j++)
      combine(out[0]->data, in[0]->dtype, (size_t)(off + j), in[2]->data, (size_t)(t * p.blk + j),
              red);
  }
  return NULL;
}

/* ---- OneHot ------------------------------------------------------------- */

static cov_status onehot_params(const graph *g, const graph_node *n, graph_value *const *in,
                                int64_t *depth, int *ax) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", -1, &axis));
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  if (in[2]->rank != 1 || in[2]->dims[0] != 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "values '%s' must be [off, on]", in[2]->name);
  *depth = -1;
  if (in[1]->data) {
    double d;
    COV_RETURN_IF_ERROR(graph_read_scalar(g, n, in[1], "depth", &d));
    if (!(d >= 1 && d <= (double)GEN_MAX))
      return graph_node_error(g, n, COV_INVALID_INPUT, "depth %g is out of range", d);
    *depth = (int64_t)d;
  }
  if (in[0]->rank < 0) return NULL;
  return graph_axis(g, n, axis, in[0]->rank + 1, "axis", ax);
}

cov_status graph_infer_one_hot(const graph *g, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  int64_t depth = 0; /* set on success (gcc -O3 cannot see it) */
  int ax = 0;
  COV_RETURN_IF_ERROR(onehot_params(g, n, in, &depth, &ax));
  out[0]->dtype = in[2]->dtype;
  if (in[0]->rank < 0) {
    graph_set_shape(out[0], -1, NULL);
    return NULL;
  }
  int64_t d[COV_MAX_RANK];
  if (in[0]->rank + 1 > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "output rank is over the limit");
  for (int i = 0, k = 0; i <= in[0]->rank; i++) d[i] = i == ax ? depth : in[0]->dims[k++];
  graph_set_shape(out[0], in[0]->rank + 1, d);
  return NULL;
}

cov_status graph_exec_one_hot(graph_exec *x, const graph_node *n, graph_value *const *in,
                              graph_value *const *out) {
  int64_t depth = 0; /* set on success (gcc -O3 cannot see it) */
  int ax;
  COV_RETURN_IF_ERROR(onehot_params(x->g, n, in, &depth, &ax));
  COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[0]));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < ax; i++) outer *= in[0]->dims[i];
  for (int i = ax; i < in[0]->rank; i++) inner *= in[0]->dims[i];
  size_t es = cov_dtype_size(in[2]->dtype);
  const char *vals = in[2]->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t d = 0; d < depth; d++)
      for (int64_t i = 0; i < inner; i++) {
        double iv = graph_load_elem(in[0]->data, in[0]->dtype, (size_t)(o * inner + i));
        int64_t c = (int64_t)iv;
        if (c < 0) c += depth;
        memcpy((char *)out[0]->data + (size_t)((o * depth + d) * inner + i) * es,
               vals + (c == d ? es : 0), es);
      }
  return NULL;
}

/* ---- TopK --------------------------------------------------------------- */

/* v orders floats; iv (0 for floats) breaks the ties of integers that one
 * double holds (int64 beyond 2^53). */
typedef struct topk_item {
  double v;
  int64_t iv, i;
} topk_item;

/* NaN orders above every number (numpy's sort), so the order is total. */
static int topk_cmp(double a, double b) {
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na - nb;
  return (a > b) - (a < b);
}

static int topk_largest(const void *a, const void *b) {
  const topk_item *x = a, *y = b;
  int c = topk_cmp(x->v, y->v);
  if (!c) c = (x->iv > y->iv) - (x->iv < y->iv);
  if (c) return -c;
  return x->i < y->i ? -1 : x->i > y->i; /* ties: the lower index first */
}

static int topk_smallest(const void *a, const void *b) {
  const topk_item *x = a, *y = b;
  int c = topk_cmp(x->v, y->v);
  if (!c) c = (x->iv > y->iv) - (x->iv < y->iv);
  if (c) return c;
  return x->i < y->i ? -1 : x->i > y->i;
}

static cov_status topk_params(const graph *g, const graph_node *n, graph_value *const *in, int *ax,
                              int64_t *k) {
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", -1, &axis));
  COV_RETURN_IF_ERROR(graph_check_numeric(g, n, in[0]));
  *k = -1;
  if (n->opset < 10) {
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "k", -1, k));
  } else {
    if (n->n_in < 2 || !in[1])
      return graph_node_error(g, n, COV_INVALID_INPUT, "needs the K input");
    COV_RETURN_IF_ERROR(check_index_dtype(g, n, in[1]));
    if (in[1]->rank >= 0 && (in[1]->rank != 1 || (in[1]->dims[0] >= 0 && in[1]->dims[0] != 1)))
      return graph_node_error(g, n, COV_INVALID_INPUT, "K '%s' must be 1-D with one element",
                              in[1]->name);
    if (in[1]->data) {
      *k = index_at(in[1], 0);
      if (*k < 0)
        return graph_node_error(g, n, COV_INVALID_INPUT, "K = %lld is negative", (long long)*k);
    }
  }
  if (in[0]->rank < 0) return NULL;
  if (in[0]->rank < 1) return graph_node_error(g, n, COV_INVALID_INPUT, "input is a scalar");
  COV_RETURN_IF_ERROR(graph_axis(g, n, axis, in[0]->rank, "axis", ax));
  int64_t dim = in[0]->dims[*ax];
  if (*k != -1 && (*k < 0 || (dim >= 0 && *k > dim)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "K = %lld is out of range for axis size %lld",
                            (long long)*k, (long long)dim);
  return NULL;
}

cov_status graph_infer_topk(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int ax = 0;
  int64_t k;
  COV_RETURN_IF_ERROR(topk_params(g, n, in, &ax, &k));
  for (int o = 0; o < 2; o++) {
    if (!out[o]) continue;
    graph_copy_type(out[o], in[0]);
    if (o == 1) out[o]->dtype = COV_I64;
    if (in[0]->rank >= 0) out[o]->dims[ax] = k;
  }
  return NULL;
}

/* Sorting is selection (data movement): each slice along the axis is
 * sorted by value (stable in the index), the first K kept. */
cov_status graph_exec_topk(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  int ax;
  int64_t k, largest;
  COV_RETURN_IF_ERROR(topk_params(x->g, n, in, &ax, &k));
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "largest", 1, &largest));
  const graph_value *v = in[0];
  int64_t dim = v->dims[ax], outer = 1, inner = 1;
  for (int i = 0; i < ax; i++) outer *= v->dims[i];
  for (int i = ax + 1; i < v->rank; i++) inner *= v->dims[i];
  for (int o = 0; o < 2; o++)
    if (out[o]) COV_RETURN_IF_ERROR(graph_alloc_data(x->g, n, out[o]));
  topk_item *items = malloc((size_t)(dim > 0 ? dim : 1) * sizeof *items);
  if (!items) return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t j = 0; j < dim; j++) {
        size_t at = (size_t)((o * dim + j) * inner + i);
        items[j].v = graph_load_elem(v->data, v->dtype, at);
        items[j].iv = graph_load_int(v->data, v->dtype, at);
        items[j].i = j;
      }
      qsort(items, (size_t)dim, sizeof *items, largest ? topk_largest : topk_smallest);
      for (int64_t j = 0; j < k; j++) {
        size_t at = (size_t)((o * k + j) * inner + i);
        if (out[0]) {
          size_t es = cov_dtype_size(v->dtype);
          memcpy((char *)out[0]->data + at * es,
                 (const char *)v->data + (size_t)((o * dim + items[j].i) * inner + i) * es, es);
        }
        if (out[1]) ((int64_t *)out[1]->data)[at] = items[j].i;
      }
    }
  free(items);
  return NULL;
}
