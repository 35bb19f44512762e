/* frontend/ops/graph_sequence.c: sequences and optionals of tensors
 * (graph_sequence.h): SequenceEmpty, SequenceConstruct, SequenceAt,
 * SequenceInsert, SequenceErase, SequenceLength, SplitToSequence,
 * ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement;
 * optionals of tensors and of sequences.
 *
 * They run in the frontend (layout operators whose kernels set their
 * outputs' shapes, graph_opdef.dynamic), where an exported loop keeps a
 * list it appends to (SequenceInsert in a Loop's body, ConcatFromSequence
 * after it) or a detector its per-image results. A model's inputs and
 * outputs may be sequences and optionals too (model_sequence.c); inside
 * it, and as a Loop's carried values or an If's results, they pass like
 * tensors. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_opfns.h"
#include "frontend/ops/graph_sequence.h"
#include "frontend/onnx/onnx_internal.h"

size_t graph_seq_length(const graph_value *v) { return v->data ? ((const graph_seq *)v->data)->n : 0; }

size_t graph_value_bytes(const graph_value *v) {
  if (v->seq) return v->data ? ((const graph_seq *)v->data)->total : 0;
  int64_t numel = graph_numel(v);
  return numel > 0 ? (size_t)numel * cov_dtype_size(v->dtype) : 0;
}

graph_value graph_seq_at(const graph_value *v, size_t k) {
  const graph_seq *s = v->data;
  const graph_seq_item *it = &s->items[k];
  graph_value e = {.name = v->name, .dtype = it->dtype, .rank = it->rank};
  for (int d = 0; d < it->rank; d++) e.dims[d] = it->dims[d];
  e.data = (unsigned char *)v->data + it->offset;
  return e;
}

cov_status graph_seq_make(const graph *g, const graph_node *n, const graph_value *const *items,
                          size_t count, graph_value *out) {
  if (count > GRAPH_MAX_SEQUENCE_LENGTH)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "a sequence of %zu tensors, more than the limit of %d", count,
                            GRAPH_MAX_SEQUENCE_LENGTH);
  uint64_t total = sizeof(graph_seq) + count * sizeof(graph_seq_item);
  for (size_t k = 0; k < count; k++) total += (graph_value_bytes(items[k]) + 15) / 16 * 16;
  if (total > graph_memory_limit(g))
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "output '%s' would need %llu bytes, more than the memory limit of %llu "
                            "bytes (--max-memory)",
                            out->name, (unsigned long long)total,
                            (unsigned long long)graph_memory_limit(g));
  graph_seq *s = calloc(1, (size_t)total);
  if (!s) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  s->n = count;
  s->total = (size_t)total;
  size_t off = sizeof(graph_seq) + count * sizeof(graph_seq_item);
  for (size_t k = 0; k < count; k++) {
    graph_seq_item *it = &s->items[k];
    it->dtype = items[k]->dtype;
    it->rank = items[k]->rank;
    for (int d = 0; d < it->rank; d++) it->dims[d] = items[k]->dims[d];
    it->offset = off;
    it->bytes = graph_value_bytes(items[k]);
    if (it->bytes) memcpy((unsigned char *)s + off, items[k]->data, it->bytes);
    off += (it->bytes + 15) / 16 * 16;
  }
  free(out->data);
  out->data = s;
  out->seq = true;
  graph_set_shape(out, -1, NULL);
  return NULL;
}

cov_status graph_seq_copy(const graph *g, const graph_node *n, const graph_value *src,
                          graph_value *dst) {
  size_t b = graph_value_bytes(src);
  graph_copy_type(dst, src);
  dst->data = malloc(b ? b : 1);
  if (!dst->data) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (b) memcpy(dst->data, src->data, b);
  return NULL;
}

/* ---- shape rules ------------------------------------------------------- */

static cov_status need_seq(const graph *g, const graph_node *n, const graph_value *v) {
  if (!v || !v->seq || v->opt_seq)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input '%s' is not a sequence%s",
                            v ? v->name : "",
                            v && v->opt_seq ? " (it is an optional sequence: OptionalGetElement "
                                              "gives its sequence)"
                                            : "");
  return NULL;
}

static void set_seq(graph_value *o, cov_dtype dt, bool opt) {
  o->dtype = dt;
  o->seq = true;
  o->opt = opt;
  o->opt_seq = false;
  graph_set_shape(o, -1, NULL);
}

static void set_tensor(graph_value *o, cov_dtype dt, int rank) {
  o->dtype = dt;
  o->seq = o->opt = o->opt_seq = false;
  graph_set_shape(o, rank, NULL);
}

/* Optional's output: of its input (a tensor or a sequence), or of the
 * type its `type` attribute gives when it has none (an optional holding
 * none). An optional of an optional is refused. */
static cov_status infer_optional(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *o) {
  const graph_value *src = n->n_in > 0 && in[0] ? in[0] : NULL;
  if (!src) {
    const graph_attr *a = graph_attr_find(n, "type");
    if (!a)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "has no input and no 'type' attribute (the type of the empty "
                              "optional)");
    if (!a->t || a->t->dtype == COV_DTYPE_INVALID)
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "attribute 'type' is not a tensor or a sequence of tensors of a "
                              "dtype covenant supports");
    src = a->t;
  }
  if (src->opt || src->opt_seq)
    return graph_node_error(g, n, COV_UNSUPPORTED, "an optional of an optional is not supported");
  set_seq(o, src->dtype, !src->seq);
  o->opt_seq = src->seq;
  return NULL;
}

static bool op_is(const graph_node *n, const char *op) { return strcmp(n->op_type, op) == 0; }

cov_status graph_infer_sequence(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  if (op_is(n, "SequenceEmpty")) {
    int64_t dt = 1;
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "dtype", 1, &dt));
    cov_dtype d = onnx_dtype((int32_t)dt);
    if (d == COV_DTYPE_INVALID)
      return graph_node_error(g, n, COV_UNSUPPORTED, "dtype %lld is not supported", (long long)dt);
    set_seq(out[0], d, false);
    return NULL;
  }
  if (op_is(n, "SequenceConstruct")) {
    for (int i = 0; i < n->n_in; i++)
      if (!in[i] || in[i]->seq || in[i]->dtype != in[0]->dtype)
        return graph_node_error(g, n, COV_INVALID_INPUT,
                                "takes tensors of one dtype (input %d differs)", i);
    set_seq(out[0], in[0]->dtype, false);
    return NULL;
  }
  if (op_is(n, "SplitToSequence")) {
    if (in[0]->seq) return graph_node_error(g, n, COV_INVALID_INPUT, "splits a tensor");
    set_seq(out[0], in[0]->dtype, false);
    return NULL;
  }
  if (op_is(n, "Optional")) return infer_optional(g, n, in, out[0]);
  if (op_is(n, "OptionalHasElement")) {
    set_tensor(out[0], COV_BOOL, 0);
    out[0]->dims[0] = -1;
    return NULL;
  }
  /* A tensor or a sequence passes through, as opset 18 defines it for
   * every opset: a Loop carries the sequence its body makes into a formal
   * declared an optional sequence (the next iteration reads it so). */
  if (op_is(n, "OptionalGetElement")) {
    if (in[0]->opt)
      set_tensor(out[0], in[0]->dtype, -1);
    else if (in[0]->opt_seq)
      set_seq(out[0], in[0]->dtype, false);
    else
      graph_copy_type(out[0], in[0]);
    return NULL;
  }
  COV_RETURN_IF_ERROR(need_seq(g, n, in[0]));
  if (op_is(n, "SequenceInsert")) {
    if (in[1]->seq || in[1]->dtype != in[0]->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "inserts a %s tensor into a sequence of %s",
                              cov_dtype_name(in[1]->dtype), cov_dtype_name(in[0]->dtype));
    set_seq(out[0], in[0]->dtype, false);
  } else if (op_is(n, "SequenceErase")) {
    set_seq(out[0], in[0]->dtype, false);
  } else if (op_is(n, "SequenceLength")) {
    set_tensor(out[0], COV_I64, 0);
  } else {
    set_tensor(out[0], in[0]->dtype, -1); /* SequenceAt, ConcatFromSequence */
  }
  return NULL;
}

/* ---- kernels ----------------------------------------------------------- */

/* A position input (one i32/i64) normalized into [0, len + extra). */
static cov_status position(const graph *g, const graph_node *n, const graph_value *p, size_t len,
                           size_t extra, size_t def, size_t *out) {
  *out = def;
  if (!p) return NULL;
  if (graph_numel(p) != 1 || (p->dtype != COV_I32 && p->dtype != COV_I64))
    return graph_node_error(g, n, COV_INVALID_INPUT, "position must be one int32 or int64");
  int64_t k = graph_load_int(p->data, p->dtype, 0), l = (int64_t)len;
  if (k < 0) k += l;
  if (k < 0 || k >= l + (int64_t)extra)
    return graph_node_error(g, n, COV_OUT_OF_RANGE, "position %lld is outside a sequence of %zu",
                            (long long)graph_load_int(p->data, p->dtype, 0), len);
  *out = (size_t)k;
  return NULL;
}

/* The elements of sequence s with `skip` left out (SIZE_MAX: none) and
 * `add` put at `at` (add NULL: none), as a new sequence in out. */
static cov_status rebuild(const graph *g, const graph_node *n, const graph_value *s, size_t skip,
                          const graph_value *add, size_t at, graph_value *out) {
  size_t len = graph_seq_length(s), m = 0;
  graph_value *vals = calloc(len + 2, sizeof *vals);
  const graph_value **ptrs = calloc(len + 2, sizeof *ptrs);
  cov_status st = vals && ptrs ? NULL : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t k = 0; !st && k <= len; k++) {
    if (add && k == at) ptrs[m++] = add;
    if (k == len || k == skip) continue;
    vals[k] = graph_seq_at(s, k);
    ptrs[m++] = &vals[k];
  }
  if (!st) st = graph_seq_make(g, n, ptrs, m, out);
  free(vals);
  free(ptrs);
  return st;
}

/* Slices [start, start + len) of x along axis into a tensor `piece`. */
static cov_status cut(const graph *g, const graph_node *n, const graph_value *x, int axis,
                      int64_t start, int64_t len, bool keep, graph_value *piece) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x->rank; d++) {
    if (d < axis) outer *= x->dims[d];
    if (d > axis) inner *= x->dims[d];
  }
  piece->dtype = x->dtype;
  int r = 0;
  for (int d = 0; d < x->rank; d++)
    if (d != axis || keep) piece->dims[r++] = d == axis ? len : x->dims[d];
  piece->rank = r;
  size_t es = cov_dtype_size(x->dtype), row = (size_t)(len * inner) * es;
  piece->data = malloc((size_t)outer * row > 0 ? (size_t)outer * row : 1);
  if (!piece->data) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int64_t o = 0; o < outer; o++)
    memcpy((unsigned char *)piece->data + (size_t)o * row,
           (const unsigned char *)x->data + ((size_t)(o * x->dims[axis] + start) * (size_t)inner) * es,
           row);
  return NULL;
}

/* The chunk lengths SplitToSequence cuts axis (of length dim) into. */
static cov_status split_lengths(const graph *g, const graph_node *n, const graph_value *sp,
                                int64_t dim, int64_t *lens, size_t *count) {
  if (!sp) {
    for (int64_t k = 0; k < dim && k < GRAPH_MAX_SEQUENCE_LENGTH; k++) lens[k] = 1;
    *count = (size_t)dim;
  } else if (graph_numel(sp) == 1 && sp->rank == 0) {
    int64_t c = graph_load_int(sp->data, sp->dtype, 0);
    if (c <= 0) return graph_node_error(g, n, COV_INVALID_INPUT, "split %lld is not positive", (long long)c);
    if ((dim + c - 1) / c > GRAPH_MAX_SEQUENCE_LENGTH)
      return graph_node_error(g, n, COV_OUT_OF_RANGE, "more than %d pieces", GRAPH_MAX_SEQUENCE_LENGTH);
    *count = 0;
    for (int64_t at = 0; at < dim; at += c) lens[(*count)++] = dim - at < c ? dim - at : c;
  } else {
    int64_t sum = 0, m = graph_numel(sp);
    if (m > GRAPH_MAX_SEQUENCE_LENGTH)
      return graph_node_error(g, n, COV_OUT_OF_RANGE, "more than %d pieces", GRAPH_MAX_SEQUENCE_LENGTH);
    for (int64_t k = 0; k < m; k++) {
      lens[k] = graph_load_int(sp->data, sp->dtype, (size_t)k);
      if (lens[k] < 0) return graph_node_error(g, n, COV_INVALID_INPUT, "a negative split");
      sum += lens[k];
    }
    if (sum != dim)
      return graph_node_error(g, n, COV_INVALID_INPUT, "splits sum to %lld, not the axis' %lld",
                              (long long)sum, (long long)dim);
    *count = (size_t)m;
  }
  return NULL;
}

static cov_status exec_split(graph_exec *x, const graph_node *n, graph_value *const *in,
                             graph_value *out) {
  const graph *g = x->g;
  const graph_value *v = in[0], *sp = n->n_in > 1 ? in[1] : NULL;
  int64_t ax = 0, keep = 1;
  int axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &ax));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "keepdims", 1, &keep));
  COV_RETURN_IF_ERROR(graph_axis(g, n, ax, v->rank, "axis", &axis));
  if (v->dims[axis] > GRAPH_MAX_SEQUENCE_LENGTH && !sp)
    return graph_node_error(g, n, COV_OUT_OF_RANGE, "more than %d pieces", GRAPH_MAX_SEQUENCE_LENGTH);
  int64_t *lens = malloc((GRAPH_MAX_SEQUENCE_LENGTH + 1) * sizeof *lens);
  graph_value *pieces = calloc(GRAPH_MAX_SEQUENCE_LENGTH + 1, sizeof *pieces);
  const graph_value **ptrs = calloc(GRAPH_MAX_SEQUENCE_LENGTH + 1, sizeof *ptrs);
  size_t count = 0, made = 0;
  cov_status st = lens && pieces && ptrs ? split_lengths(g, n, sp, v->dims[axis], lens, &count)
                                         : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int64_t at = 0; !st && made < count; at += lens[made++]) {
    st = cut(g, n, v, axis, at, lens[made], sp || keep, &pieces[made]);
    ptrs[made] = &pieces[made];
  }
  if (!st) st = graph_seq_make(g, n, ptrs, count, out);
  for (size_t k = 0; pieces && k < made; k++) free(pieces[k].data);
  free(lens);
  free(pieces);
  free(ptrs);
  return st;
}

static cov_status exec_concat(graph_exec *x, const graph_node *n, const graph_value *s,
                              graph_value *out) {
  const graph *g = x->g;
  size_t len = graph_seq_length(s);
  int64_t ax = 0, new_axis = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &ax));
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "new_axis", 0, &new_axis));
  if (len == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "concatenates an empty sequence");
  graph_value e0 = graph_seq_at(s, 0);
  int r = e0.rank + (new_axis ? 1 : 0), axis;
  COV_RETURN_IF_ERROR(graph_axis(g, n, ax, r, "axis", &axis));
  int64_t dims[COV_MAX_RANK], outer = 1, inner = 1, total = 0;
  for (size_t k = 0; k < len; k++) {
    graph_value e = graph_seq_at(s, k);
    bool ok = e.rank == e0.rank && e.dtype == e0.dtype;
    for (int d = 0, src = 0; ok && d < r; d++) {
      if (d == axis && new_axis) continue;
      if (d != axis) ok = e.dims[src] == e0.dims[src];
      src++;
    }
    if (!ok) return graph_node_error(g, n, COV_INVALID_INPUT, "element %zu's shape does not match element 0's", k);
    total += new_axis ? 1 : e.dims[axis];
  }
  for (int d = 0, src = 0; d < r; d++) {
    if (d == axis) {
      dims[d] = total;
      src += new_axis ? 0 : 1;
      continue;
    }
    dims[d] = e0.dims[src++];
    if (d < axis) outer *= dims[d]; else inner *= dims[d];
  }
  COV_RETURN_IF_ERROR(graph_dynamic_alloc(g, n, out, r, dims));
  size_t es = cov_dtype_size(e0.dtype), at = 0;
  for (int64_t o = 0; o < outer; o++)
    for (size_t k = 0; k < len; k++) {
      graph_value e = graph_seq_at(s, k);
      size_t row = (size_t)((new_axis ? 1 : e.dims[axis]) * inner) * es;
      memcpy((unsigned char *)out->data + at, (unsigned char *)e.data + (size_t)o * row, row);
      at += row;
    }
  return NULL;
}

/* One element (SequenceAt, OptionalGetElement) into out, copied. */
static cov_status take_element(const graph *g, const graph_node *n, const graph_value *s,
                               size_t k, graph_value *out) {
  graph_value e = graph_seq_at(s, k);
  COV_RETURN_IF_ERROR(graph_dynamic_alloc(g, n, out, e.rank, e.dims));
  size_t b = graph_value_bytes(&e);
  if (b) memcpy(out->data, e.data, b);
  return NULL;
}

/* Whether an optional (of a tensor or of a sequence) holds none. A plain
 * tensor or sequence (a value an optional input was given) holds one. */
static bool holds_none(const graph_value *v) {
  if (v->opt) return graph_seq_length(v) == 0;
  return v->opt_seq && (!v->data || ((const graph_seq *)v->data)->none);
}

/* Optional: its input wrapped, or none of the `type` attribute's type. */
static cov_status exec_optional(const graph *g, const graph_node *n, graph_value *const *in,
                                graph_value *o) {
  const graph_value *src = n->n_in > 0 && in[0] ? in[0] : NULL;
  bool as_seq = src ? src->seq : graph_attr_find(n, "type")->t->seq; /* checked by the rule */
  if (!as_seq) {
    cov_status st = graph_seq_make(g, n, src ? &src : NULL, src ? 1 : 0, o);
    o->opt = true;
    return st;
  }
  if (src) {
    COV_RETURN_IF_ERROR(graph_seq_copy(g, n, src, o));
  } else {
    COV_RETURN_IF_ERROR(graph_seq_make(g, n, NULL, 0, o));
    ((graph_seq *)o->data)->none = true;
  }
  o->opt = false;
  o->opt_seq = true;
  return NULL;
}

cov_status graph_exec_sequence(graph_exec *x, const graph_node *n, graph_value *const *in,
                               graph_value *const *out) {
  const graph *g = x->g;
  graph_value *o = out[0];
  size_t len = n->n_in && in[0] && in[0]->seq ? graph_seq_length(in[0]) : 0, k = 0;
  if (op_is(n, "SequenceEmpty")) return graph_seq_make(g, n, NULL, 0, o);
  if (op_is(n, "Optional")) return exec_optional(g, n, in, o);
  if (op_is(n, "SequenceConstruct")) return graph_seq_make(g, n, (const graph_value *const *)in, (size_t)n->n_in, o);
  if (op_is(n, "SplitToSequence")) return exec_split(x, n, in, o);
  if (op_is(n, "ConcatFromSequence")) return exec_concat(x, n, in[0], o);
  if (op_is(n, "SequenceLength")) {
    int64_t zero = 0;
    COV_RETURN_IF_ERROR(graph_dynamic_alloc(g, n, o, 0, &zero));
    *(int64_t *)o->data = (int64_t)len;
    return NULL;
  }
  if (op_is(n, "OptionalHasElement")) {
    int64_t zero = 0;
    COV_RETURN_IF_ERROR(graph_dynamic_alloc(g, n, o, 0, &zero));
    *(uint8_t *)o->data = n->n_in > 0 && in[0] && !holds_none(in[0]);
    return NULL;
  }
  if (op_is(n, "OptionalGetElement")) {
    if (holds_none(in[0])) return graph_node_error(g, n, COV_INVALID_INPUT, "the optional is empty");
    if (in[0]->opt) return take_element(g, n, in[0], 0, o);
    if (!in[0]->seq) return graph_seq_copy(g, n, in[0], o); /* a tensor passes through */
    COV_RETURN_IF_ERROR(graph_seq_copy(g, n, in[0], o));
    o->opt_seq = false; /* the sequence an optional of one holds */
    ((graph_seq *)o->data)->none = false;
    return NULL;
  }
  const graph_value *p = n->n_in > 1 ? in[n->n_in - 1] : NULL;
  if (op_is(n, "SequenceInsert")) {
    p = n->n_in > 2 ? in[2] : NULL;
    COV_RETURN_IF_ERROR(position(g, n, p, len, 1, len, &k));
    return rebuild(g, n, in[0], SIZE_MAX, in[1], k, o);
  }
  COV_RETURN_IF_ERROR(position(g, n, p, len, 0, len ? len - 1 : 0, &k));
  if (len == 0) return graph_node_error(g, n, COV_OUT_OF_RANGE, "the sequence is empty");
  if (op_is(n, "SequenceErase")) return rebuild(g, n, in[0], k, NULL, 0, o);
  return take_element(g, n, in[0], k, o); /* SequenceAt */
}
