/* frontend/model_sequence.c: sequences and optionals as a model's inputs
 * and outputs (covenant/model.h's cov_sequence), and their conversion to
 * and from the interpreter's sequence blocks (graph_sequence.h).
 *
 * A cov_sequence is a growable array of tensors it owns; the run copies
 * an input's elements into one block (graph_seq_make) and an output's block
 * back into tensors, so neither side holds the other's memory. */
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"
#include "covenant/model.h"
#include "frontend/graph.h"
#include "frontend/ops/graph_sequence.h"

struct cov_sequence {
  cov_dtype dtype;
  bool optional;     /* optional(tensor(T)) */
  bool opt_seq, none; /* optional(seq(tensor(T))), and holding none */
  size_t n, cap;
  cov_tensor *items;
};

cov_status cov_sequence_create(cov_dtype dtype, bool optional, cov_sequence **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_sequence_create"), "NULL");
  *out = NULL;
  if (!cov_dtype_size(dtype))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_sequence_create"), "invalid dtype");
  cov_sequence *s = calloc(1, sizeof *s);
  if (!s) return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_sequence_create"), "out of memory");
  s->dtype = dtype;
  s->optional = optional;
  *out = s;
  return NULL;
}

cov_status cov_sequence_create_optional_sequence(cov_dtype dtype, bool none, cov_sequence **out) {
  cov_status st = cov_sequence_create(dtype, false, out);
  if (st) {
    cov_status_free(st);
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_sequence_create_optional_sequence"),
                     out ? "invalid dtype" : "NULL");
  }
  (*out)->opt_seq = true;
  (*out)->none = none;
  return NULL;
}

cov_value_kind cov_sequence_kind(const cov_sequence *s) {
  return !s ? COV_VALUE_TENSOR
         : s->opt_seq ? COV_VALUE_OPTIONAL_SEQUENCE
         : s->optional ? COV_VALUE_OPTIONAL
                       : COV_VALUE_SEQUENCE;
}

bool cov_sequence_is_none(const cov_sequence *s) { return s && s->opt_seq && s->none; }

cov_status cov_sequence_append(cov_sequence *s, const cov_tensor *t) {
  const cov_loc *at = COV_AT_CALL("cov_sequence_append");
  if (!s || !t || (!t->data && cov_tensor_numel(t) > 0))
    return cov_error(COV_INVALID_ARGUMENT, at, "NULL");
  if (s->none) return cov_error(COV_INVALID_ARGUMENT, at, "the optional holds no sequence");
  size_t max = s->optional ? 1 : COV_SEQUENCE_MAX_LENGTH;
  if (s->n >= max)
    return cov_error(COV_OUT_OF_RANGE, at, "%s holds at most %zu tensor%s",
                     s->optional ? "an optional" : "a sequence", max, max == 1 ? "" : "s");
  if (t->dtype != s->dtype)
    return cov_error(COV_INVALID_ARGUMENT, at, "a %s tensor in a sequence of %s", cov_dtype_name(t->dtype),
                     cov_dtype_name(s->dtype));
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 4;
    cov_tensor *items = realloc(s->items, cap * sizeof *items);
    if (!items) return cov_error(COV_OUT_OF_MEMORY, at, "out of memory");
    s->items = items;
    s->cap = cap;
  }
  cov_tensor *e = &s->items[s->n];
  COV_RETURN_IF_ERROR(cov_tensor_alloc(e, t->dtype, t->rank, t->shape));
  size_t bytes = (size_t)cov_tensor_numel(t) * cov_dtype_size(t->dtype);
  if (bytes) memcpy(e->data, t->data, bytes);
  s->n++;
  return NULL;
}

size_t cov_sequence_length(const cov_sequence *s) { return s ? s->n : 0; }
const cov_tensor *cov_sequence_at(const cov_sequence *s, size_t k) {
  return s && k < s->n ? &s->items[k] : NULL;
}
cov_dtype cov_sequence_dtype(const cov_sequence *s) { return s ? s->dtype : COV_DTYPE_INVALID; }
bool cov_sequence_is_optional(const cov_sequence *s) { return s && s->optional; }

void cov_sequence_free(cov_sequence *s) {
  if (!s) return;
  for (size_t k = 0; k < s->n; k++) cov_tensor_release(&s->items[k]);
  free(s->items);
  free(s);
}

/* ---- the run's side ----------------------------------------------------- */

static const char *kind_word(cov_value_kind k) {
  return k == COV_VALUE_OPTIONAL_SEQUENCE ? "an optional sequence"
         : k == COV_VALUE_OPTIONAL        ? "an optional"
                                          : "a sequence";
}

static cov_value_kind decl_kind(const graph_value *v) {
  return v->opt_seq ? COV_VALUE_OPTIONAL_SEQUENCE : v->opt ? COV_VALUE_OPTIONAL : COV_VALUE_SEQUENCE;
}

cov_status graph_seq_bind_input(const graph *g, const graph_value *decl, const cov_sequence *in,
                                graph_value *v) {
  cov_value_kind want = decl_kind(decl);
  if (!in)
    return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "is %s of %s tensors; none was given",
                             kind_word(want), cov_dtype_name(decl->dtype));
  if (cov_sequence_kind(in) != want || in->dtype != decl->dtype)
    return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "expected %s of %s tensors, got %s of %s",
                             kind_word(want), cov_dtype_name(decl->dtype),
                             kind_word(cov_sequence_kind(in)), cov_dtype_name(in->dtype));
  graph_value *items = calloc(in->n ? in->n : 1, sizeof *items);
  const graph_value **ptrs = calloc(in->n ? in->n : 1, sizeof *ptrs);
  cov_status st = NULL;
  if (!items || !ptrs) st = graph_value_error(g, decl, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t k = 0; k < in->n && !st; k++) {
    const cov_tensor *t = &in->items[k];
    items[k] = (graph_value){.name = decl->name, .dtype = t->dtype, .data = t->data};
    graph_set_shape(&items[k], t->rank, t->shape);
    ptrs[k] = &items[k];
  }
  v->data = NULL; /* an input's slot holds no data of its own yet */
  if (!st) st = graph_seq_make(g, NULL, ptrs, in->n, v);
  if (!st) {
    v->opt = decl->opt;
    v->opt_seq = decl->opt_seq;
    ((graph_seq *)v->data)->none = in->none;
  }
  free(items);
  free(ptrs);
  return st;
}

cov_status graph_seq_take_output(const graph *g, const graph_value *decl, const graph_value *v,
                                 cov_sequence **out) {
  *out = NULL;
  cov_sequence *s = NULL;
  bool none = v->opt_seq && v->data && ((const graph_seq *)v->data)->none;
  cov_status st = v->opt_seq ? cov_sequence_create_optional_sequence(v->dtype, none, &s)
                             : cov_sequence_create(v->dtype, v->opt, &s);
  size_t n = graph_seq_length(v);
  for (size_t k = 0; k < n && !st; k++) {
    graph_value e = graph_seq_at(v, k);
    cov_tensor t = {.dtype = e.dtype, .rank = e.rank, .data = e.data};
    for (int d = 0; d < e.rank; d++) t.shape[d] = e.dims[d];
    st = cov_sequence_append(s, &t);
  }
  (void)g, (void)decl;
  if (st) {
    cov_sequence_free(s);
    return st;
  }
  *out = s;
  return NULL;
}
