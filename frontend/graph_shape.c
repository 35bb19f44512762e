/* frontend/graph_shape.c: shape arithmetic shared by inference and execution
 * (checked products, axes, broadcasting, integer operands, element access). */
#include <math.h>
#include <string.h>

#include "frontend/graph.h"

bool graph_shape_known(const graph_value *v) {
  if (v->rank < 0) return false;
  for (int i = 0; i < v->rank; i++)
    if (v->dims[i] < 0) return false;
  return true;
}

int64_t graph_numel(const graph_value *v) {
  if (!graph_shape_known(v)) return -1;
  uint64_t n = 1;
  for (int i = 0; i < v->rank; i++)
    if (__builtin_mul_overflow(n, (uint64_t)v->dims[i], &n)) return -1;
  uint64_t bytes;
  size_t es = cov_dtype_size(v->dtype) ? cov_dtype_size(v->dtype) : 1;
  if (__builtin_mul_overflow(n, (uint64_t)es, &bytes) || bytes > COV_TENSOR_MAX_BYTES) return -1;
  return (int64_t)n;
}

cov_status graph_check_shape(const graph *g, const graph_node *n, const graph_value *v) {
  if (v->rank < 0) return NULL;
  if (v->rank > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "output '%s' would have rank %d (the limit is %d)", v->name, v->rank,
                            COV_MAX_RANK);
  uint64_t prod = 1;
  for (int i = 0; i < v->rank; i++) {
    if (v->dims[i] < -1)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "output '%s' would have a negative dim (%lld)", v->name,
                              (long long)v->dims[i]);
    if (v->dims[i] >= 0 && __builtin_mul_overflow(prod, (uint64_t)v->dims[i], &prod))
      return graph_node_error(g, n, COV_OUT_OF_RANGE,
                              "output '%s': the product of its dims overflows", v->name);
  }
  uint64_t bytes;
  size_t es = cov_dtype_size(v->dtype) ? cov_dtype_size(v->dtype) : 1;
  uint64_t limit = graph_memory_limit(g);
  if (__builtin_mul_overflow(prod, (uint64_t)es, &bytes))
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "output '%s': its size in bytes overflows 64 bits", v->name);
  if (bytes > limit)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "output '%s' would need %llu bytes, more than the memory limit of "
                            "%llu bytes (--max-memory; nothing was allocated)",
                            v->name, (unsigned long long)bytes, (unsigned long long)limit);
  return NULL;
}

uint64_t graph_memory_limit(const graph *g) {
  uint64_t lim = g && g->max_memory ? g->max_memory : COV_DEFAULT_MAX_MEMORY;
  return lim < COV_TENSOR_MAX_BYTES ? lim : COV_TENSOR_MAX_BYTES;
}

void graph_set_shape(graph_value *v, int rank, const int64_t *dims) {
  v->rank = rank;
  for (int i = 0; i < COV_MAX_RANK; i++)
    v->dims[i] = (rank >= 0 && i < rank && dims) ? dims[i] : -1;
}

void graph_copy_type(graph_value *dst, const graph_value *src) {
  dst->dtype = src->dtype;
  dst->seq = src->seq;
  dst->opt = src->opt;
  dst->opt_seq = src->opt_seq;
  graph_set_shape(dst, src->rank, src->dims);
}

cov_status graph_axis(const graph *g, const graph_node *n, int64_t axis, int rank, const char *what,
                      int *out) {
  if (axis < -(int64_t)rank || axis >= (int64_t)rank)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s %lld is out of range for rank %d", what,
                            (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return NULL;
}

cov_status graph_broadcast(const graph *g, const graph_node *n, const graph_value *a,
                           const graph_value *b, int *rank, int64_t *dims) {
  if (a->rank < 0 || b->rank < 0) {
    *rank = -1;
    return NULL;
  }
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    int64_t d;
    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da < 0 || db < 0)
      d = da < 0 ? db : da; /* the known one (or 1, unknown) */
    else
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "inputs '%s' and '%s' cannot be broadcast: dim %d is %lld vs %lld",
                              a->name, b->name, i, (long long)da, (long long)db);
    /* An unknown dim against 1 stays unknown. */
    if ((da < 0 && db == 1) || (db < 0 && da == 1)) d = -1;
    dims[i] = d;
  }
  *rank = r;
  return NULL;
}

cov_status graph_read_ints(const graph *g, const graph_node *n, const graph_value *v,
                           const char *what, int64_t *out, size_t max, size_t *count) {
  if (v->dtype != COV_I64 && v->dtype != COV_I32)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be int64 or int32, not %s", what,
                            v->name, cov_dtype_name(v->dtype));
  if (v->rank > 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must be a scalar or 1-D, not rank %d",
                            what, v->name, v->rank);
  int64_t numel = graph_numel(v);
  if (numel < 0 || !v->data)
    return graph_node_error(g, n, COV_INTERNAL, "%s '%s' has no known contents", what, v->name);
  if ((uint64_t)numel > max)
    return graph_node_error(g, n, COV_OUT_OF_RANGE, "%s '%s' has %lld elements (at most %zu)", what,
                            v->name, (long long)numel, max);
  for (int64_t i = 0; i < numel; i++)
    out[i] = v->dtype == COV_I64 ? ((const int64_t *)v->data)[i] : ((const int32_t *)v->data)[i];
  *count = (size_t)numel;
  return NULL;
}

cov_status graph_read_shape_input(const graph *g, const graph_node *n, const graph_value *v,
                                  int64_t *dims, int *rank, bool *known) {
  if (v->rank != 1 || v->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT, "shape '%s' must be a 1-D int64 tensor",
                            v->name);
  *known = v->data != NULL;
  if (!*known) {
    int64_t r = v->dims[0];
    *rank = r >= 0 && r <= COV_MAX_RANK ? (int)r : -1;
    return NULL;
  }
  /* read more than the limit allows so that an over-long shape gets the
   * rank message, not a generic size one */
  int64_t buf[64];
  size_t r;
  COV_RETURN_IF_ERROR(graph_read_ints(g, n, v, "shape", buf, 64, &r));
  if (r > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "shape '%s' has rank %zu, over the limit of %d",
                            v->name, r, COV_MAX_RANK);
  memcpy(dims, buf, r * sizeof *buf);
  *rank = (int)r;
  return NULL;
}

double graph_load_elem(const void *data, cov_dtype t, size_t i) {
  switch (t) {
    case COV_F32: return ((const float *)data)[i];
    case COV_F64: return ((const double *)data)[i];
    case COV_F16: return cov_f16_to_f32(((const uint16_t *)data)[i]);
    case COV_BF16: return cov_bf16_to_f32(((const uint16_t *)data)[i]);
    case COV_I8: return ((const int8_t *)data)[i];
    case COV_U8: return ((const uint8_t *)data)[i];
    case COV_I32: return ((const int32_t *)data)[i];
    case COV_I64: return (double)((const int64_t *)data)[i];
    case COV_I16: return ((const int16_t *)data)[i];
    case COV_U16: return ((const uint16_t *)data)[i];
    case COV_U32: return ((const uint32_t *)data)[i];
    case COV_U64: return (double)((const uint64_t *)data)[i];
    case COV_BOOL: return ((const uint8_t *)data)[i] != 0;
    default: return 0;
  }
}

int64_t graph_load_int(const void *data, cov_dtype t, size_t i) {
  switch (t) {
    case COV_I8: return ((const int8_t *)data)[i];
    case COV_U8: return ((const uint8_t *)data)[i];
    case COV_I32: return ((const int32_t *)data)[i];
    case COV_I64: return ((const int64_t *)data)[i];
    case COV_I16: return ((const int16_t *)data)[i];
    case COV_U16: return ((const uint16_t *)data)[i];
    case COV_U32: return ((const uint32_t *)data)[i];
    case COV_U64: return (int64_t)((const uint64_t *)data)[i]; /* the bits: wraps past 2^63 */
    case COV_BOOL: return ((const uint8_t *)data)[i] != 0;
    default: return 0;
  }
}

void graph_store_int(void *data, cov_dtype t, size_t i, int64_t x) {
  switch (t) {
    case COV_I8: ((int8_t *)data)[i] = (int8_t)(uint8_t)(uint64_t)x; break;
    case COV_U8: ((uint8_t *)data)[i] = (uint8_t)(uint64_t)x; break;
    case COV_I32: ((int32_t *)data)[i] = (int32_t)(uint32_t)(uint64_t)x; break;
    case COV_I64: ((int64_t *)data)[i] = x; break;
    case COV_I16: ((int16_t *)data)[i] = (int16_t)(uint16_t)(uint64_t)x; break;
    case COV_U16: ((uint16_t *)data)[i] = (uint16_t)(uint64_t)x; break;
    case COV_U32: ((uint32_t *)data)[i] = (uint32_t)(uint64_t)x; break;
    case COV_U64: ((uint64_t *)data)[i] = (uint64_t)x; break;
    case COV_BOOL: ((uint8_t *)data)[i] = x != 0; break;
    default: break;
  }
}

/* Saturating conversion for integers (NaN becomes 0), as the codelet
 * interpreter converts: no undefined behaviour on any input. */
static int64_t sat_i64(double x, int64_t lo, int64_t hi) {
  if (isnan(x)) return 0;
  if (x <= (double)lo) return lo;
  if (x >= (double)hi) return hi;
  return (int64_t)x;
}

/* double -> f32 rounding to odd, so that the second rounding to f16/bf16
 * is the correct rounding of an f64 value (as the codelet interpreter and
 * numpy convert); exact for values that already are f32. */
static float f32_odd(double v) {
  float f = (float)v;
  if ((double)f == v || isinf(f) || isnan(f)) return f;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if (fabs((double)f) > fabs(v)) u--;
  u |= 1u;
  memcpy(&f, &u, sizeof f);
  return f;
}

void graph_store_elem(void *data, cov_dtype t, size_t i, double x) {
  switch (t) {
    case COV_F32: ((float *)data)[i] = (float)x; break;
    case COV_F64: ((double *)data)[i] = x; break;
    case COV_F16: ((uint16_t *)data)[i] = cov_f32_to_f16(f32_odd(x)); break;
    case COV_BF16: ((uint16_t *)data)[i] = cov_f32_to_bf16(f32_odd(x)); break;
    case COV_I8: ((int8_t *)data)[i] = (int8_t)sat_i64(x, INT8_MIN, INT8_MAX); break;
    case COV_U8: ((uint8_t *)data)[i] = (uint8_t)sat_i64(x, 0, UINT8_MAX); break;
    case COV_I32: ((int32_t *)data)[i] = (int32_t)sat_i64(x, INT32_MIN, INT32_MAX); break;
    case COV_I64:
      /* 2^63 is exactly representable; anything from it up saturates. */
      ((int64_t *)data)[i] =
          x >= 9223372036854775808.0 ? INT64_MAX : sat_i64(x, INT64_MIN, INT64_MAX);
      break;
    case COV_I16: ((int16_t *)data)[i] = (int16_t)sat_i64(x, INT16_MIN, INT16_MAX); break;
    case COV_U16: ((uint16_t *)data)[i] = (uint16_t)sat_i64(x, 0, UINT16_MAX); break;
    case COV_U32: ((uint32_t *)data)[i] = (uint32_t)sat_i64(x, 0, UINT32_MAX); break;
    case COV_U64:
      /* 2^64 is exactly representable; anything from it up saturates. */
      ((uint64_t *)data)[i] = isnan(x) || x <= 0                  ? 0
                              : x >= 18446744073709551616.0 ? UINT64_MAX
                                                            : (uint64_t)x;
      break;
    case COV_BOOL: ((uint8_t *)data)[i] = x != 0; break;
    default: break;
  }
}

cov_status graph_read_scalar(const graph *g, const graph_node *n, const graph_value *v,
                             const char *what, double *out) {
  if (graph_numel(v) != 1 || !v->data)
    return graph_node_error(g, n, COV_INVALID_INPUT, "%s '%s' must hold exactly one element", what,
                            v->name);
  *out = graph_load_elem(v->data, v->dtype, 0);
  return NULL;
}

const char *graph_type_str(const graph_value *v, char *buf, size_t size) {
  size_t k = (size_t)snprintf(buf, size, "%s", v->dtype ? cov_dtype_name(v->dtype) : "?");
  if (v->seq) { /* graph_sequence.h */
    snprintf(buf, size, "%s<%s>%s", v->opt_seq ? "optional<sequence" : v->opt ? "optional" : "sequence",
             v->dtype ? cov_dtype_name(v->dtype) : "?", v->opt_seq ? ">" : "");
    return buf;
  }
  if (v->rank < 0) {
    if (k < size) snprintf(buf + k, size - k, "[...]");
    return buf;
  }
  if (k < size) k += (size_t)snprintf(buf + k, size - k, "[");
  for (int i = 0; i < v->rank && k < size; i++) {
    if (v->dims[i] >= 0)
      k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)v->dims[i]);
    else if (v->sym[i])
      k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", v->sym[i]);
    else
      k += (size_t)snprintf(buf + k, size - k, "%s?", i ? ", " : "");
  }
  if (k < size) snprintf(buf + k, size - k, "]");
  return buf;
}
