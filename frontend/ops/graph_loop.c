/* frontend/ops/graph_loop.c: Loop and Scan, driven from the host.
 *
 * The body was prepared once at load (graph_control.c); each iteration
 * runs it through graph_run_sub, so its compute groups go to the backend's
 * hooks like the model's own. Loop-carried values and states pass from one
 * iteration to the next without copies; scan outputs are stacked as the
 * iterations make them. Bounds: GRAPH_MAX_LOOP_ITERATIONS iterations per
 * run (a constant trip count past it is refused before the first
 * iteration, a condition that never turns false when it is reached; the
 * body's condition counts only where the node has a condition input), and
 * the stacked outputs the memory limit, checked before they grow. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_control.h"
#include "frontend/graph_iter.h"
#include "frontend/ops/graph_sequence.h"
#include "frontend/graph_opfns.h"

cov_status graph_acc_append(const graph *g, const graph_node *n, stack_acc *a, int j,
                             const graph_value *v) {
  int64_t numel = graph_numel(v);
  if (numel < 0) return graph_node_error(g, n, COV_INTERNAL, "scan output %d has no shape", j);
  if (a->count == 0) {
    graph_copy_type(&a->slice, v);
  } else {
    bool same = v->dtype == a->slice.dtype && v->rank == a->slice.rank;
    for (int d = 0; same && d < v->rank; d++) same = v->dims[d] == a->slice.dims[d];
    if (!same) {
      char s0[256], s1[256];
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "scan output %d is %s in iteration %lld but %s in the first", j,
                              graph_type_str(v, s1, sizeof s1), (long long)a->count,
                              graph_type_str(&a->slice, s0, sizeof s0));
    }
  }
  size_t b = (size_t)numel * cov_dtype_size(v->dtype);
  if ((uint64_t)a->bytes + b > graph_memory_limit(g))
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "scan output %d would need more than the memory limit of %llu bytes "
                            "after %lld iterations (--max-memory)",
                            j, (unsigned long long)graph_memory_limit(g), (long long)a->count);
  if (a->bytes + b > a->cap) {
    size_t cap = a->cap ? a->cap : 64;
    while (cap < a->bytes + b) cap *= 2;
    unsigned char *p = realloc(a->data, cap);
    if (!p) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
    a->data = p;
    a->cap = cap;
  }
  if (b) memcpy(a->data + a->bytes, v->data, b);
  a->bytes += b;
  a->count++;
  return NULL;
}

/* The stacked result into out: [count, slice] with the axis of the
 * iterations moved to `axis` and their order reversed with `reverse`.
 * `decl` gives the slice's type when there were no iterations. */
cov_status graph_acc_finish(const graph *g, const graph_node *n, stack_acc *a,
                             const graph_value *decl, int64_t axis, bool reverse,
                             graph_value *out) {
  const graph_value *s = a->count ? &a->slice : decl;
  int r = s->rank < 0 ? 0 : s->rank;
  if (r + 1 > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "stacked output of rank %d", r + 1);
  int ax = 0;
  COV_RETURN_IF_ERROR(graph_axis(g, n, axis, r + 1, "scan output axis", &ax));
  int64_t dims[COV_MAX_RANK];
  dims[0] = a->count;
  for (int d = 0; d < r; d++) dims[d + 1] = a->count ? s->dims[d] : (s->dims[d] < 0 ? 0 : s->dims[d]);
  size_t es = cov_dtype_size(s->dtype), slice = a->count ? a->bytes / (size_t)a->count : 0;
  if (reverse && a->count > 1) {
    unsigned char *tmp = malloc(slice ? slice : 1);
    if (!tmp) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0, j = a->count - 1; i < j; i++, j--) {
      memcpy(tmp, a->data + (size_t)i * slice, slice);
      memcpy(a->data + (size_t)i * slice, a->data + (size_t)j * slice, slice);
      memcpy(a->data + (size_t)j * slice, tmp, slice);
    }
    free(tmp);
  }
  out->dtype = s->dtype;
  if (ax == 0 || a->bytes == 0) {
    int64_t od[COV_MAX_RANK];
    for (int d = 0, k = 1; d <= r; d++) od[d] = d == ax ? dims[0] : dims[k++];
    graph_set_shape(out, r + 1, od);
    out->data = a->data ? a->data : malloc(1);
    a->data = NULL;
    return out->data ? NULL : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  }
  int perm[COV_MAX_RANK];
  for (int p = 0; p <= r; p++) perm[p] = p < ax ? p + 1 : (p == ax ? 0 : p);
  (void)es;
  COV_RETURN_IF_ERROR(graph_transpose_data(g, n, a->data, s->dtype, r + 1, dims, perm, &out->data));
  int64_t od[COV_MAX_RANK];
  for (int p = 0; p <= r; p++) od[p] = dims[perm[p]];
  graph_set_shape(out, r + 1, od);
  return NULL;
}

void graph_state_free(loop_state *s) {
  for (int k = 0; s->v && k < s->n; k++)
    if (s->owned[k]) free(s->v[k].data);
  free(s->v);
  free(s->owned);
}

/* Takes the body's results res[0..n) as the new state. */
cov_status graph_state_take(const graph *g, const graph_node *n, loop_state *s, graph_value *res) {
  for (int k = 0; k < s->n; k++)
    if (res[k].dtype != s->v[k].dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "loop-carried value %d is %s, but the body made %s", k,
                              cov_dtype_name(s->v[k].dtype), cov_dtype_name(res[k].dtype));
  for (int k = 0; k < s->n; k++) {
    if (s->owned[k]) free(s->v[k].data);
    graph_copy_type(&s->v[k], &res[k]);
    s->v[k].data = res[k].data;
    s->owned[k] = true;
    res[k].data = NULL;
  }
  return NULL;
}

/* The final state into the node's outputs (copied where still borrowed). */
cov_status graph_state_out(const graph *g, const graph_node *n, loop_state *s,
                            graph_value *const *out) {
  for (int k = 0; k < s->n; k++) {
    if (!out[k]) continue;
    graph_copy_type(out[k], &s->v[k]);
    if (s->owned[k]) {
      out[k]->data = s->v[k].data;
      s->owned[k] = false;
      continue;
    }
    if (s->v[k].seq) {
      COV_RETURN_IF_ERROR(graph_seq_copy(g, n, &s->v[k], out[k]));
      continue;
    }
    COV_RETURN_IF_ERROR(graph_alloc_data(g, n, out[k]));
    size_t b = graph_value_bytes(&s->v[k]);
    if (b) memcpy(out[k]->data, s->v[k].data, b);
  }
  return NULL;
}

cov_status graph_state_init(const graph *g, const graph_node *n, loop_state *s,
                             graph_value *const *in, int count) {
  s->n = count;
  s->v = calloc((size_t)count + 1, sizeof *s->v);
  s->owned = calloc((size_t)count + 1, sizeof *s->owned);
  if (!s->v || !s->owned) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  for (int k = 0; k < count; k++) s->v[k] = *in[k];
  return NULL;
}

/* ---- Loop ------------------------------------------------------------- */

typedef struct loop_shape {
  const graph *body;
  int carried, scans;
} loop_shape;

static cov_status loop_shape_of(const graph *g, const graph_node *n, loop_shape *ls) {
  cov_status st;
  ls->body = graph_subgraph(g, n, "body", &st);
  if (!ls->body) return st;
  int nf = n->n_in - n->n_implicit;
  ls->carried = nf - 2;
  ls->scans = (int)ls->body->n_outputs - 1 - ls->carried;
  for (int i = 2; i < nf; i++)
    if (!n->in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d has no name", i);
  if (nf < 2 || ls->scans < 0 || n->n_out != ls->carried + ls->scans)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "has %d loop-carried values and %d outputs, but its body makes %zu "
                            "outputs: the body makes the condition, each carried value, then one "
                            "per scan output",
                            ls->carried, n->n_out, ls->body->n_outputs);
  return NULL;
}

cov_status graph_infer_loop(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  loop_shape ls;
  COV_RETURN_IF_ERROR(loop_shape_of(g, n, &ls));
  if (in[0] && (in[0]->dtype != COV_I64 || graph_numel(in[0]) == 0 || graph_numel(in[0]) > 1))
    return graph_node_error(g, n, COV_INVALID_INPUT, "the trip count M must be one int64");
  if (in[1] && (in[1]->dtype != COV_BOOL || graph_numel(in[1]) == 0 || graph_numel(in[1]) > 1))
    return graph_node_error(g, n, COV_INVALID_INPUT, "the condition must be one bool");
  if (in[0] && in[0]->data && !in[1]) {
    int64_t m = graph_load_int(in[0]->data, COV_I64, 0);
    if (m > GRAPH_MAX_LOOP_ITERATIONS)
      return graph_node_error(g, n, COV_OUT_OF_RANGE,
                              "trip count %lld is more than the limit of %d iterations",
                              (long long)m, GRAPH_MAX_LOOP_ITERATIONS);
  }
  const graph *b = ls.body;
  if (b->outputs[0]->dtype != COV_BOOL && b->outputs[0]->dtype != COV_DTYPE_INVALID)
    return graph_node_error(g, n, COV_INVALID_INPUT, "the body's first output (the condition) is %s, not bool",
                            cov_dtype_name(b->outputs[0]->dtype));
  for (int k = 0; k < ls.carried; k++) {
    const graph_value *init = in[2 + k], *res = b->outputs[1 + k];
    if (res->dtype != init->dtype || res->seq != init->seq)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "loop-carried value %d is %s, but the body makes %s%s", k,
                              cov_dtype_name(init->dtype), res->seq != init->seq ? "a sequence of " : "",
                              cov_dtype_name(res->dtype));
    if (out[k]) graph_merge_type(out[k], init, res);
  }
  for (int j = 0; j < ls.scans; j++) {
    const graph_value *s = b->outputs[1 + ls.carried + j];
    graph_value *o = out[ls.carried + j];
    if (!o) continue;
    o->dtype = s->dtype;
    graph_set_shape(o, s->rank >= 0 && s->rank < COV_MAX_RANK ? s->rank + 1 : -1, NULL);
    for (int d = 0; d < s->rank && o->rank > 0; d++) o->dims[d + 1] = s->dims[d];
  }
  return NULL;
}

/* One iteration's results into the state and the stacks; *cond the next
 * condition. Frees res's data. */
static cov_status loop_collect(const graph *g, const graph_node *n, const loop_shape *ls,
                               graph_value *res, loop_state *s, stack_acc *acc, bool *cond) {
  cov_status st = NULL;
  if (res[0].dtype != COV_BOOL || graph_numel(&res[0]) != 1)
    st = graph_node_error(g, n, COV_INVALID_INPUT, "the body's condition output is not one bool");
  else
    *cond = graph_load_int(res[0].data, COV_BOOL, 0) != 0;
  if (!st) st = graph_state_take(g, n, s, res + 1);
  for (int j = 0; j < ls->scans && !st; j++)
    st = graph_acc_append(g, n, &acc[j], j, &res[1 + ls->carried + j]);
  for (size_t k = 0; k < ls->body->n_outputs; k++) {
    free(res[k].data);
    res[k].data = NULL;
  }
  return st;
}

static cov_status loop_run(graph_exec *x, const graph_node *n, graph_value *const *in,
                           const loop_shape *ls, loop_state *s, stack_acc *acc, graph_value *res) {
  const graph *g = x->g, *b = ls->body;
  int64_t m = in[0] ? graph_load_int(in[0]->data, COV_I64, 0) : INT64_MAX;
  bool cond = in[1] ? graph_load_int(in[1]->data, COV_BOOL, 0) != 0 : true;
  if (!in[1] && m > GRAPH_MAX_LOOP_ITERATIONS)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "trip count %lld is more than the limit of %d iterations",
                            (long long)m, GRAPH_MAX_LOOP_ITERATIONS);
  int64_t iter = 0;
  uint8_t cond_byte = 0;
  graph_value it = {.name = "iteration_num", .dtype = COV_I64, .data = &iter};
  graph_value cv = {.name = "cond", .dtype = COV_BOOL, .data = &cond_byte};
  int64_t one = 1;
  graph_set_shape(&it, b->inputs[0]->rank == 1 ? 1 : 0, &one);
  graph_set_shape(&cv, b->inputs[1]->rank == 1 ? 1 : 0, &one);
  graph_value **bin = calloc((size_t)ls->carried + 2, sizeof *bin);
  if (!bin) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  bin[0] = &it;
  bin[1] = &cv;
  cov_status st = NULL;
  for (; iter < m && cond && !st; iter++) {
    if (iter >= GRAPH_MAX_LOOP_ITERATIONS) {
      st = graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "ran %d iterations and its condition is still true: the limit is %d",
                            GRAPH_MAX_LOOP_ITERATIONS, GRAPH_MAX_LOOP_ITERATIONS);
      break;
    }
    cond_byte = cond;
    for (int k = 0; k < ls->carried; k++) bin[2 + k] = &s->v[k];
    st = graph_run_sub(x, b, bin, (size_t)ls->carried + 2, in, res);
    if (st)
      st = cov_status_annotate(st, "iteration %lld of node '%s' (Loop): ", (long long)iter,
                               n->name);
    else
      st = loop_collect(g, n, ls, res, s, acc, &cond);
    /* Without a condition input the body's condition is ignored (ONNX's
     * Loop: "input (trip_count, \"\")" is a for loop). */
    if (!in[1]) cond = true;
  }
  free(bin);
  return st;
}

cov_status graph_exec_loop(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  const graph *g = x->g;
  loop_shape ls;
  COV_RETURN_IF_ERROR(loop_shape_of(g, n, &ls));
  loop_state s = {0};
  stack_acc *acc = calloc((size_t)ls.scans + 1, sizeof *acc);
  graph_value *res = calloc(ls.body->n_outputs + 1, sizeof *res);
  cov_status st = acc && res ? graph_state_init(g, n, &s, in + 2, ls.carried)
                             : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) st = loop_run(x, n, in, &ls, &s, acc, res);
  if (!st) st = graph_state_out(g, n, &s, out);
  for (int j = 0; j < ls.scans && !st; j++)
    if (out[ls.carried + j])
      st = graph_acc_finish(g, n, &acc[j], ls.body->outputs[1 + ls.carried + j], 0, false,
                      out[ls.carried + j]);
  for (int j = 0; acc && j < ls.scans; j++) free(acc[j].data);
  free(acc);
  free(res);
  graph_state_free(&s);
  return st;
}

