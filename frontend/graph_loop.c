/* frontend/graph_loop.c: Loop and Scan, driven from the host.
 *
 * The body was prepared once at load (graph_control.c); each iteration
 * runs it through graph_run_sub, so its compute groups go to the backend's
 * hooks like the model's own. Loop-carried values and states pass from one
 * iteration to the next without copies; scan outputs are stacked as the
 * iterations make them. Bounds: GRAPH_MAX_LOOP_ITERATIONS iterations per
 * run (a constant trip count past it is refused before the first
 * iteration, a condition that never turns false when it is reached), and
 * the stacked outputs the memory limit, checked before they grow. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph_control.h"
#include "frontend/graph_opfns.h"

/* One stacked output: the slices so far, [count, slice dims]. */
typedef struct stack_acc {
  unsigned char *data;
  size_t bytes, cap;
  int64_t count;
  graph_value slice; /* the first slice's type: every later one must match */
} stack_acc;

static cov_status acc_append(const graph *g, const graph_node *n, stack_acc *a, int j,
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
static cov_status acc_finish(const graph *g, const graph_node *n, stack_acc *a,
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

/* The running state: borrowed from the node's inputs at first, then the
 * body's results, owned. */
typedef struct loop_state {
  graph_value *v;
  bool *owned;
  int n;
} loop_state;

static void state_free(loop_state *s) {
  for (int k = 0; s->v && k < s->n; k++)
    if (s->owned[k]) free(s->v[k].data);
  free(s->v);
  free(s->owned);
}

/* Takes the body's results res[0..n) as the new state. */
static cov_status state_take(const graph *g, const graph_node *n, loop_state *s, graph_value *res) {
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
static cov_status state_out(const graph *g, const graph_node *n, loop_state *s,
                            graph_value *const *out) {
  for (int k = 0; k < s->n; k++) {
    if (!out[k]) continue;
    graph_copy_type(out[k], &s->v[k]);
    if (s->owned[k]) {
      out[k]->data = s->v[k].data;
      s->owned[k] = false;
      continue;
    }
    COV_RETURN_IF_ERROR(graph_alloc_data(g, n, out[k]));
    size_t b = (size_t)graph_numel(&s->v[k]) * cov_dtype_size(s->v[k].dtype);
    if (b) memcpy(out[k]->data, s->v[k].data, b);
  }
  return NULL;
}

static cov_status state_init(const graph *g, const graph_node *n, loop_state *s,
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
    if (res->dtype != init->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "loop-carried value %d is %s, but the body makes %s", k,
                              cov_dtype_name(init->dtype), cov_dtype_name(res->dtype));
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
  if (!st) st = state_take(g, n, s, res + 1);
  for (int j = 0; j < ls->scans && !st; j++)
    st = acc_append(g, n, &acc[j], j, &res[1 + ls->carried + j]);
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
  cov_status st = acc && res ? state_init(g, n, &s, in + 2, ls.carried)
                             : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) st = loop_run(x, n, in, &ls, &s, acc, res);
  if (!st) st = state_out(g, n, &s, out);
  for (int j = 0; j < ls.scans && !st; j++)
    if (out[ls.carried + j])
      st = acc_finish(g, n, &acc[j], ls.body->outputs[1 + ls.carried + j], 0, false,
                      out[ls.carried + j]);
  for (int j = 0; acc && j < ls.scans; j++) free(acc[j].data);
  free(acc);
  free(res);
  state_free(&s);
  return st;
}

/* ---- Scan (opset 9 on) ------------------------------------------------ */

typedef struct scan_attrs {
  const graph *body;
  int states, scanned, scans; /* N, M, K */
  const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
  size_t n_in_axes, n_in_dirs, n_out_axes, n_out_dirs;
} scan_attrs;

static int64_t attr_at(const int64_t *v, size_t n, int k) { return v && (size_t)k < n ? v[k] : 0; }

static cov_status scan_attrs_of(const graph *g, const graph_node *n, scan_attrs *a) {
  cov_status st;
  memset(a, 0, sizeof *a);
  a->body = graph_subgraph(g, n, "body", &st);
  if (!a->body) return st;
  int64_t m = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "num_scan_inputs", 0, &m));
  int nf = n->n_in - n->n_implicit;
  if (m < 1 || m > nf)
    return graph_node_error(g, n, COV_INVALID_INPUT, "num_scan_inputs %lld is not 1 to %d",
                            (long long)m, nf);
  a->scanned = (int)m;
  a->states = nf - a->scanned;
  a->scans = n->n_out - a->states;
  if (a->scans < 0 || a->body->n_outputs != (size_t)n->n_out)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "has %d outputs and %d states, but its body makes %zu outputs (the "
                            "states, then one per scan output)",
                            n->n_out, a->states, a->body->n_outputs);
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_input_axes", &a->in_axes, &a->n_in_axes));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_input_directions", &a->in_dirs, &a->n_in_dirs));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_output_axes", &a->out_axes, &a->n_out_axes));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_output_directions", &a->out_dirs, &a->n_out_dirs));
  return NULL;
}

cov_status graph_infer_scan(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  scan_attrs a;
  COV_RETURN_IF_ERROR(scan_attrs_of(g, n, &a));
  for (int k = 0; k < a.states; k++) {
    if (a.body->outputs[k]->dtype != in[k]->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "state %d is %s, but the body makes %s", k,
                              cov_dtype_name(in[k]->dtype), cov_dtype_name(a.body->outputs[k]->dtype));
    if (out[k]) graph_merge_type(out[k], in[k], a.body->outputs[k]);
  }
  for (int j = 0; j < a.scans; j++) {
    const graph_value *s = a.body->outputs[a.states + j];
    graph_value *o = out[a.states + j];
    if (!o) continue;
    o->dtype = s->dtype;
    graph_set_shape(o, s->rank >= 0 && s->rank < COV_MAX_RANK ? s->rank + 1 : -1, NULL);
  }
  return NULL;
}

/* Slice t of scanned input v along axis ax into dst (its rank - 1 dims). */
static void take_slice(const graph_value *v, int ax, int64_t t, unsigned char *dst) {
  size_t es = cov_dtype_size(v->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; d++) outer *= v->dims[d];
  for (int d = ax + 1; d < v->rank; d++) inner *= v->dims[d];
  size_t row = (size_t)inner * es;
  const unsigned char *src = v->data;
  for (int64_t o = 0; o < outer; o++)
    memcpy(dst + (size_t)o * row, src + ((size_t)o * (size_t)v->dims[ax] + (size_t)t) * row, row);
}

/* The scanned inputs' slices: one buffer each, typed, and the count T. */
static cov_status scan_slices(const graph *g, const graph_node *n, const scan_attrs *a,
                              graph_value *const *in, graph_value *sl, int *axes, int64_t *T) {
  *T = -1;
  for (int k = 0; k < a->scanned; k++) {
    const graph_value *v = in[a->states + k];
    COV_RETURN_IF_ERROR(graph_axis(g, n, attr_at(a->in_axes, a->n_in_axes, k), v->rank,
                                   "scan_input_axes", &axes[k]));
    if (*T >= 0 && v->dims[axes[k]] != *T)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "scanned inputs have %lld and %lld slices: they must agree",
                              (long long)*T, (long long)v->dims[axes[k]]);
    *T = v->dims[axes[k]];
    sl[k].dtype = v->dtype;
    sl[k].rank = v->rank - 1;
    for (int d = 0, o = 0; d < v->rank; d++)
      if (d != axes[k]) sl[k].dims[o++] = v->dims[d];
    int64_t numel = graph_numel(&sl[k]);
    sl[k].data = malloc(numel > 0 ? (size_t)numel * cov_dtype_size(v->dtype) : 1);
    if (!sl[k].data) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  }
  if (*T > GRAPH_MAX_LOOP_ITERATIONS)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "scans %lld slices, more than the limit of %d iterations",
                            (long long)*T, GRAPH_MAX_LOOP_ITERATIONS);
  return NULL;
}

static cov_status scan_run(graph_exec *x, const graph_node *n, graph_value *const *in,
                           const scan_attrs *a, loop_state *s, stack_acc *acc, graph_value *res,
                           graph_value *sl) {
  const graph *g = x->g;
  int axes[GRAPH_MAX_NODE_IO];
  int64_t T;
  COV_RETURN_IF_ERROR(scan_slices(g, n, a, in, sl, axes, &T));
  graph_value **bin = calloc((size_t)(a->states + a->scanned), sizeof *bin);
  if (!bin) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  cov_status st = NULL;
  for (int64_t t = 0; t < T && !st; t++) {
    for (int k = 0; k < a->states; k++) bin[k] = &s->v[k];
    for (int k = 0; k < a->scanned; k++) {
      int64_t at = attr_at(a->in_dirs, a->n_in_dirs, k) ? T - 1 - t : t;
      take_slice(in[a->states + k], axes[k], at, sl[k].data);
      bin[a->states + k] = &sl[k];
    }
    st = graph_run_sub(x, a->body, bin, (size_t)(a->states + a->scanned), in, res);
    if (st) {
      st = cov_status_annotate(st, "iteration %lld of node '%s' (Scan): ", (long long)t, n->name);
      break;
    }
    st = state_take(g, n, s, res);
    for (int j = 0; j < a->scans && !st; j++)
      st = acc_append(g, n, &acc[j], j, &res[a->states + j]);
    for (size_t k = 0; k < a->body->n_outputs; k++) {
      free(res[k].data);
      res[k].data = NULL;
    }
  }
  free(bin);
  return st;
}

cov_status graph_exec_scan(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  const graph *g = x->g;
  scan_attrs a;
  COV_RETURN_IF_ERROR(scan_attrs_of(g, n, &a));
  loop_state s = {0};
  stack_acc *acc = calloc((size_t)a.scans + 1, sizeof *acc);
  graph_value *res = calloc(a.body->n_outputs + 1, sizeof *res);
  graph_value *sl = calloc((size_t)a.scanned + 1, sizeof *sl);
  cov_status st = acc && res && sl ? state_init(g, n, &s, in, a.states)
                                   : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) st = scan_run(x, n, in, &a, &s, acc, res, sl);
  if (!st) st = state_out(g, n, &s, out);
  for (int j = 0; j < a.scans && !st; j++)
    if (out[a.states + j])
      st = acc_finish(g, n, &acc[j], a.body->outputs[a.states + j],
                      attr_at(a.out_axes, a.n_out_axes, j),
                      attr_at(a.out_dirs, a.n_out_dirs, j) != 0, out[a.states + j]);
  for (int j = 0; acc && j < a.scans; j++) free(acc[j].data);
  for (int k = 0; sl && k < a.scanned; k++) free(sl[k].data);
  free(acc);
  free(res);
  free(sl);
  state_free(&s);
  return st;
}
