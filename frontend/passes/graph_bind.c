/* frontend/passes/graph_bind.c: input shapes bound at load (cov_model_options.shapes).
 *
 * A model exported with a symbolic batch (or sequence length) declares those
 * dims without a value. Binding gives them one before shape inference, so
 * every shape of the loaded model is static and every backend compiles it
 * at that size. The model's own static dims are kept: a shape that
 * contradicts one is an error, as is a rank other than the declared one. A
 * dim's symbol (dim_param) bound in one input binds the same symbol in the
 * inputs that are not bound themselves (input_ids and attention_mask share
 * "batch" and "sequence"); two bindings that give one symbol two values are
 * an error. The dims the model left symbolic stay recorded
 * (graph_value.symbolic) for the artifacts that say which they were. */
#include <stdio.h>
#include <string.h>

#include "common/loc.h"
#include "common/text.h"
#include "frontend/graph.h"

/* The input a binding names, or an error listing the inputs. */
static cov_status find_input(graph *g, const char *name, graph_value **out) {
  for (size_t i = 0; i < g->n_inputs; i++)
    if (!strcmp(g->inputs[i]->name, name)) {
      *out = g->inputs[i];
      return NULL;
    }
  char list[512];
  size_t k = 0;
  list[0] = '\0';
  for (size_t i = 0; i < g->n_inputs && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", i ? ", " : "", g->inputs[i]->name);
  cov_loc loc = {.file = g->file};
  char esc[160];
  common_escape(name, esc, sizeof esc);
  return cov_error(COV_INVALID_ARGUMENT, &loc, "a shape is given for '%s', which is not an input of the model (%s: %s)",
                   esc, g->n_inputs == 1 ? "its input" : "its inputs", g->n_inputs ? list : "none");
}

/* One binding against the input's declaration. */
static cov_status bind_one(graph *g, graph_value *v, const cov_model_shape *s) {
  if (s->rank < 0 || s->rank > COV_MAX_RANK)
    return graph_value_error(g, v, COV_INVALID_ARGUMENT, "the shape given has %d dims (%d at most)", s->rank,
                             COV_MAX_RANK);
  if (v->rank >= 0 && v->rank != s->rank)
    return graph_value_error(g, v, COV_INVALID_ARGUMENT, "the shape given has %d dim%s; the model declares rank %d",
                             s->rank, s->rank == 1 ? "" : "s", v->rank);
  for (int d = 0; d < s->rank; d++) {
    if (s->dims[d] < 1)
      return graph_value_error(g, v, COV_INVALID_ARGUMENT, "dim %d of the shape given is %lld (dims are >= 1)", d,
                               (long long)s->dims[d]);
    if (v->rank >= 0 && v->dims[d] >= 0 && v->dims[d] != s->dims[d])
      return graph_value_error(g, v, COV_INVALID_ARGUMENT,
                               "dim %d is %lld in the model, not symbolic; the shape given says %lld", d,
                               (long long)v->dims[d], (long long)s->dims[d]);
  }
  if (v->rank < 0) v->symbolic = (1u << s->rank) - 1u;
  graph_set_shape(v, s->rank, s->dims);
  if (graph_numel(v) < 0)
    return graph_value_error(g, v, COV_OUT_OF_RANGE,
                             "the shape given has more elements than covenant can hold (over %llu bytes)",
                             (unsigned long long)COV_TENSOR_MAX_BYTES);
  return NULL;
}

/* The value a bound symbol takes (0: none yet), or an error when two
 * bindings disagree. */
static cov_status symbol_value(graph *g, const cov_model_shape *s, size_t n, const char *sym, int64_t *out,
                               const graph_value **from) {
  *out = 0;
  for (size_t k = 0; k < n; k++) {
    graph_value *v = NULL;
    COV_RETURN_IF_ERROR(find_input(g, s[k].name, &v));
    for (int d = 0; d < v->rank && d < s[k].rank; d++) {
      if (!v->sym[d] || strcmp(v->sym[d], sym)) continue;
      if (*out && *out != s[k].dims[d])
        return graph_value_error(g, v, COV_INVALID_ARGUMENT,
                                 "dim %d ('%s') is given as %lld; input '%s' gives '%s' as %lld", d, sym,
                                 (long long)s[k].dims[d], (*from)->name, sym, (long long)*out);
      *out = s[k].dims[d], *from = v;
    }
  }
  return NULL;
}

cov_status graph_bind_shapes(graph *g, const cov_model_shape *s, size_t n) {
  if (n && !s) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_load"), "NULL shapes");
  unsigned char bound[1024] = {0};
  for (size_t k = 0; k < n; k++) {
    if (!s[k].name) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_load"), "shape %zu has no name", k);
    graph_value *v = NULL;
    COV_RETURN_IF_ERROR(find_input(g, s[k].name, &v));
    size_t i = 0;
    while (g->inputs[i] != v) i++;
    if (i < sizeof bound && bound[i])
      return graph_value_error(g, v, COV_INVALID_ARGUMENT, "two shapes are given for it");
    if (i < sizeof bound) bound[i] = 1;
  }
  /* symbols first, from the declarations as the model gives them */
  for (size_t i = 0; i < g->n_inputs; i++) {
    graph_value *v = g->inputs[i];
    if (i < sizeof bound && bound[i]) continue;
    for (int d = 0; d < v->rank; d++) {
      if (v->dims[d] >= 0 || !v->sym[d]) continue;
      int64_t val;
      const graph_value *from = NULL;
      COV_RETURN_IF_ERROR(symbol_value(g, s, n, v->sym[d], &val, &from));
      if (val) v->dims[d] = val;
    }
  }
  for (size_t k = 0; k < n; k++) {
    graph_value *v = NULL;
    COV_RETURN_IF_ERROR(find_input(g, s[k].name, &v));
    for (int d = 0; d < v->rank && d < s[k].rank; d++) { /* bindings that disagree on a symbol */
      int64_t val;
      const graph_value *from = NULL;
      if (v->sym[d] && v->dims[d] < 0) COV_RETURN_IF_ERROR(symbol_value(g, s, n, v->sym[d], &val, &from));
    }
    COV_RETURN_IF_ERROR(bind_one(g, v, &s[k]));
  }
  return NULL;
}

/* The batch given over: a dim 0 the model fixed is replaced like one it
 * left symbolic (and is recorded as symbolic: the loaded model runs at n
 * only). The graph's own constants are not touched, so a node that
 * hard-codes the old batch fails shape inference, naming itself. */
cov_status graph_rebatch(graph *g, int64_t n) {
  for (size_t i = 0; i < g->n_inputs; i++) {
    graph_value *v = g->inputs[i];
    if (v->rank < 1) continue;
    int64_t dims[COV_MAX_RANK];
    memcpy(dims, v->dims, (size_t)v->rank * sizeof *dims);
    dims[0] = n;
    v->symbolic |= 1u;
    graph_set_shape(v, v->rank, dims);
    int known = 1;
    for (int d = 0; d < v->rank; d++) known &= dims[d] >= 0;
    if (known && graph_numel(v) < 0)
      return graph_value_error(g, v, COV_OUT_OF_RANGE, "at batch %lld it has more elements than covenant can hold",
                               (long long)n);
  }
  return NULL;
}
