/* frontend/ops/graph_scan.c: Scan, driven from the host.
 *
 * Opset 9 on: the states, then the scanned inputs, each cut into slices
 * along its scan axis (scan_input_axes, in reverse with
 * scan_input_directions); each iteration runs the body (prepared once at
 * load, graph_control.c) on the states and one slice of each scanned input
 * through graph_run_sub; scan outputs are stacked along scan_output_axes
 * (reversed with scan_output_directions). Opset 8's Scan is batched: axis 0
 * of every input and output is a batch, each batch element scanned on its
 * own along axis 1 (`directions`); sequence_lens shorter than the sequence
 * are refused. Iterations are bounded by GRAPH_MAX_LOOP_ITERATIONS. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph_iter.h"
#include "frontend/graph_opfns.h"

typedef struct scan_attrs {
  const graph *body;
  bool batched;                  /* opset 8 */
  int first;                     /* the first state's input (1 after opset 8's sequence_lens) */
  int states, scanned, scans;    /* N, M, K */
  const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
  size_t n_in_axes, n_in_dirs, n_out_axes, n_out_dirs;
} scan_attrs;

static int64_t attr_at(const int64_t *v, size_t n, int k) { return v && (size_t)k < n ? v[k] : 0; }

static cov_status scan_ints(const graph *g, const graph_node *n, scan_attrs *a) {
  if (a->batched)
    return graph_attr_ints(g, n, "directions", &a->in_dirs, &a->n_in_dirs);
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_input_axes", &a->in_axes, &a->n_in_axes));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_input_directions", &a->in_dirs, &a->n_in_dirs));
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "scan_output_axes", &a->out_axes, &a->n_out_axes));
  return graph_attr_ints(g, n, "scan_output_directions", &a->out_dirs, &a->n_out_dirs);
}

static cov_status scan_attrs_of(const graph *g, const graph_node *n, graph_value *const *in,
                                scan_attrs *a) {
  cov_status st;
  memset(a, 0, sizeof *a);
  a->body = graph_subgraph(g, n, "body", &st);
  if (!a->body) return st;
  a->batched = n->opset < 9;
  a->first = a->batched ? 1 : 0;
  int64_t m = 0;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "num_scan_inputs", 0, &m));
  int nf = n->n_in - n->n_implicit - a->first;
  if (m < 1 || m > nf)
    return graph_node_error(g, n, COV_INVALID_INPUT, "num_scan_inputs %lld is not 1 to %d",
                            (long long)m, nf);
  for (int i = a->first; i < a->first + nf; i++)
    if (!in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d has no name", i);
  a->scanned = (int)m;
  a->states = nf - a->scanned;
  a->scans = n->n_out - a->states;
  if (a->scans < 0 || a->body->n_outputs != (size_t)n->n_out)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "has %d outputs and %d states, but its body makes %zu outputs (the "
                            "states, then one per scan output)",
                            n->n_out, a->states, a->body->n_outputs);
  return scan_ints(g, n, a);
}

cov_status graph_infer_scan(const graph *g, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  scan_attrs a;
  COV_RETURN_IF_ERROR(scan_attrs_of(g, n, in, &a));
  int extra = a.batched ? 2 : 1; /* dims a scan output has beyond the body's */
  for (int k = 0; k < a.states; k++) {
    const graph_value *init = in[a.first + k], *res = a.body->outputs[k];
    if (res->dtype != init->dtype)
      return graph_node_error(g, n, COV_INVALID_INPUT, "state %d is %s, but the body makes %s", k,
                              cov_dtype_name(init->dtype), cov_dtype_name(res->dtype));
    if (out[k]) graph_merge_type(out[k], init, a.batched ? NULL : res);
    if (out[k] && a.batched)
      for (int d = 1; d < out[k]->rank; d++) out[k]->dims[d] = -1;
  }
  for (int j = 0; j < a.scans; j++) {
    const graph_value *s = a.body->outputs[a.states + j];
    graph_value *o = out[a.states + j];
    if (!o) continue;
    o->dtype = s->dtype;
    graph_set_shape(o, s->rank >= 0 && s->rank + extra <= COV_MAX_RANK ? s->rank + extra : -1, NULL);
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

/* The scanned inputs' slice buffers, typed, and the slice count T. */
static cov_status scan_slices(const graph *g, const graph_node *n, const scan_attrs *a,
                              graph_value *const *sc, graph_value *sl, int *axes, int64_t *T) {
  *T = -1;
  for (int k = 0; k < a->scanned; k++) {
    const graph_value *v = sc[k];
    if (v->rank < 1)
      return graph_node_error(g, n, COV_INVALID_INPUT, "scanned input '%s' is a scalar", v->name);
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

typedef struct scan_run {
  loop_state s;
  stack_acc *acc;
  graph_value *res, *sl;
  graph_value **bin;
} scan_run;

static cov_status iterate(graph_exec *x, const graph_node *n, const scan_attrs *a,
                          graph_value *const *sc, graph_value *const *owner_in, scan_run *r) {
  const graph *g = x->g;
  int axes[GRAPH_MAX_NODE_IO];
  int64_t T;
  COV_RETURN_IF_ERROR(scan_slices(g, n, a, sc, r->sl, axes, &T));
  cov_status st = NULL;
  for (int64_t t = 0; t < T && !st; t++) {
    for (int k = 0; k < a->states; k++) r->bin[k] = &r->s.v[k];
    for (int k = 0; k < a->scanned; k++) {
      int64_t at = attr_at(a->in_dirs, a->n_in_dirs, k) ? T - 1 - t : t;
      take_slice(sc[k], axes[k], at, r->sl[k].data);
      r->bin[a->states + k] = &r->sl[k];
    }
    st = graph_run_sub(x, a->body, r->bin, (size_t)(a->states + a->scanned), owner_in, r->res);
    if (st) {
      st = cov_status_annotate(st, "iteration %lld of node '%s' (Scan): ", (long long)t, n->name);
      break;
    }
    st = graph_state_take(g, n, &r->s, r->res);
    for (int j = 0; j < a->scans && !st; j++)
      st = graph_acc_append(g, n, &r->acc[j], j, &r->res[a->states + j]);
    for (size_t k = 0; k < a->body->n_outputs; k++) {
      free(r->res[k].data);
      r->res[k].data = NULL;
    }
  }
  return st;
}

/* One scan over states st_in and scanned inputs sc into out[0..N+K). */
static cov_status scan_once(graph_exec *x, const graph_node *n, const scan_attrs *a,
                            graph_value *const *st_in, graph_value *const *sc,
                            graph_value *const *owner_in, graph_value *const *out) {
  const graph *g = x->g;
  scan_run r = {0};
  r.acc = calloc((size_t)a->scans + 1, sizeof *r.acc);
  r.res = calloc(a->body->n_outputs + 1, sizeof *r.res);
  r.sl = calloc((size_t)a->scanned + 1, sizeof *r.sl);
  r.bin = calloc((size_t)(a->states + a->scanned) + 1, sizeof *r.bin);
  cov_status st = r.acc && r.res && r.sl && r.bin
                      ? graph_state_init(g, n, &r.s, st_in, a->states)
                      : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  if (!st) st = iterate(x, n, a, sc, owner_in, &r);
  if (!st) st = graph_state_out(g, n, &r.s, out);
  for (int j = 0; j < a->scans && !st; j++)
    if (out[a->states + j])
      st = graph_acc_finish(g, n, &r.acc[j], a->body->outputs[a->states + j],
                            attr_at(a->out_axes, a->n_out_axes, j),
                            attr_at(a->out_dirs, a->n_out_dirs, j) != 0, out[a->states + j]);
  for (int j = 0; r.acc && j < a->scans; j++) free(r.acc[j].data);
  for (int k = 0; r.sl && k < a->scanned; k++) free(r.sl[k].data);
  free(r.acc);
  free(r.res);
  free(r.sl);
  free(r.bin);
  graph_state_free(&r.s);
  return st;
}

/* Batch element b of v (axis 0 dropped): a view of v's data. */
static graph_value batch_view(const graph_value *v, int64_t b) {
  graph_value e = {.name = v->name, .dtype = v->dtype, .rank = v->rank - 1};
  for (int d = 1; d < v->rank; d++) e.dims[d - 1] = v->dims[d];
  e.data = (unsigned char *)v->data + (size_t)b * (size_t)graph_numel(&e) * cov_dtype_size(v->dtype);
  return e;
}

/* Element b's results into the batched outputs (allocated at b == 0). */
static cov_status put_batch(const graph *g, const graph_node *n, graph_value *res, int64_t b,
                            int64_t B, graph_value *out) {
  if (!out) return NULL;
  if (b == 0) {
    int64_t dims[COV_MAX_RANK] = {B};
    if (res->rank + 1 > COV_MAX_RANK)
      return graph_node_error(g, n, COV_UNSUPPORTED, "output of rank %d", res->rank + 1);
    for (int d = 0; d < res->rank; d++) dims[d + 1] = res->dims[d];
    out->dtype = res->dtype;
    graph_set_shape(out, res->rank + 1, dims);
    COV_RETURN_IF_ERROR(graph_alloc_data(g, n, out));
  }
  graph_value e = batch_view(out, b);
  bool same = e.rank == res->rank && e.dtype == res->dtype;
  for (int d = 0; same && d < e.rank; d++) same = e.dims[d] == res->dims[d];
  if (!same)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "batch element %lld's results differ in shape from the first's",
                            (long long)b);
  size_t bytes = (size_t)graph_numel(&e) * cov_dtype_size(e.dtype);
  if (bytes) memcpy(e.data, res->data, bytes);
  return NULL;
}

static cov_status check_lens(const graph *g, const graph_node *n, const graph_value *lens,
                             int64_t B, int64_t T) {
  if (!lens) return NULL;
  if (graph_numel(lens) != B || (lens->dtype != COV_I32 && lens->dtype != COV_I64))
    return graph_node_error(g, n, COV_INVALID_INPUT, "sequence_lens must be %lld integers",
                            (long long)B);
  for (int64_t b = 0; b < B; b++)
    if (graph_load_int(lens->data, lens->dtype, (size_t)b) != T)
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "sequence_lens shorter than the sequence (%lld) are not supported",
                              (long long)T);
  return NULL;
}

/* Opset 8: each batch element scanned on its own. */
static cov_status exec_batched(graph_exec *x, const graph_node *n, const scan_attrs *a,
                               graph_value *const *in, graph_value *const *out) {
  const graph *g = x->g;
  int nv = a->states + a->scanned, no = n->n_out;
  int64_t B = in[1]->rank > 0 ? in[1]->dims[0] : -1;
  for (int i = 1; i <= nv; i++)
    if (in[i]->rank < (i > a->states ? 2 : 1) || in[i]->dims[0] != B)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "input %d must have the batch (%lld) as its first dim", i,
                              (long long)B);
  COV_RETURN_IF_ERROR(check_lens(g, n, in[0], B, in[1 + a->states]->dims[1]));
  graph_value *views = calloc((size_t)(nv + no) + 1, sizeof *views);
  graph_value **ptrs = calloc((size_t)(nv + no) + 1, sizeof *ptrs);
  cov_status st = views && ptrs ? NULL : graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
  graph_value *res = views + nv;
  for (int64_t b = 0; b < B && !st; b++) {
    for (int i = 0; i < nv; i++) {
      views[i] = batch_view(in[1 + i], b);
      ptrs[i] = &views[i];
    }
    for (int i = 0; i < no; i++) ptrs[nv + i] = out[i] ? &res[i] : NULL;
    st = scan_once(x, n, a, ptrs, ptrs + a->states, in, ptrs + nv);
    for (int i = 0; i < no && !st; i++) st = put_batch(g, n, &res[i], b, B, out[i]);
    for (int i = 0; i < no; i++) {
      free(res[i].data);
      res[i].data = NULL;
    }
  }
  free(views);
  free(ptrs);
  return st;
}

cov_status graph_exec_scan(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  scan_attrs a;
  COV_RETURN_IF_ERROR(scan_attrs_of(x->g, n, in, &a));
  if (a.batched) return exec_batched(x, n, &a, in, out);
  return scan_once(x, n, &a, in, in + a.states, in, out);
}
