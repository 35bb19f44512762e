/* frontend/graph_exec.c: running a graph on the CPU reference target.
 *
 * The graph itself is never modified while it runs (several threads may run
 * one model): each run keeps its own table of values, a copy of the graph's
 * with concrete shapes and data. Layer groups run in order; inside a group
 * each node runs in turn, layout nodes by the frontend's kernels and
 * compute nodes through the codelet interpreter. Before any node runs, its
 * shape rule is applied again to the concrete inputs, so every size a kernel
 * or codelet sees has been checked. Activations are freed after their last
 * use. */
#include <stdlib.h>
#include <string.h>

#include "frontend/ops/graph_sequence.h"
#include "frontend/graph.h"
#include "frontend/ops/graph_sequence.h"

cov_status graph_alloc_data(const graph *g, const graph_node *n, graph_value *v) {
  int64_t numel = graph_numel(v);
  if (numel < 0)
    return graph_node_error(g, n, COV_INTERNAL, "output '%s' has no concrete shape", v->name);
  size_t bytes = (size_t)numel * cov_dtype_size(v->dtype);
  if ((uint64_t)bytes > graph_memory_limit(g))
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "output '%s' would need %zu bytes, more than the memory limit of "
                            "%llu bytes (--max-memory; nothing was allocated)",
                            v->name, bytes, (unsigned long long)graph_memory_limit(g));
  v->data = calloc(bytes ? bytes : 1, 1);
  if (!v->data)
    return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory allocating %zu bytes for '%s'",
                            bytes, v->name);
  return NULL;
}

cov_tensor graph_view(const graph_value *v) { return graph_view_as(v, v->rank, v->dims); }

cov_tensor graph_view_as(const graph_value *v, int rank, const int64_t *dims) {
  cov_tensor t = {.dtype = v->dtype, .rank = rank, .data = v->data};
  for (int i = 0; i < rank && i < COV_MAX_RANK; i++) t.shape[i] = dims[i];
  return t;
}

cov_status graph_call_codelet(graph_exec *x, const graph_node *n, const char *name,
                              const cov_attr *attrs, size_t n_attrs, const cov_tensor *in,
                              size_t n_in, cov_tensor *out, size_t n_out) {
  for (size_t i = 0; i < n_out; i++) memset(&out[i], 0, sizeof out[i]);
  if (x->hook) {
    cov_model_call call = {n->name && *n->name ? n->name : n->op_type, n->group, name, attrs,
                           n_attrs, in, n_in};
    int handled = 0;
    cov_status hs = x->hook(x->hook_user, &call, out, n_out, &handled);
    if (hs) {
      for (size_t i = 0; i < n_out; i++) cov_tensor_release(&out[i]);
      return hs;
    }
    if (handled) return NULL;
  }
  const cov_codelet *c = x->lib ? cov_codelet_lib_find(x->lib, name) : NULL;
  if (!c)
    return graph_node_error(x->g, n, COV_NOT_FOUND,
                            "needs codelet '%s', which the codelet library does not have", name);
  cov_status st = cov_codelet_run(c, attrs, n_attrs, in, n_in, out, n_out);
  if (!st) return NULL;
  /* Keep the codelet's own message but locate it at the node. */
  char msg[1024];
  cov_status_format(st, msg, sizeof msg);
  cov_code code = cov_status_code(st);
  cov_status_free(st);
  for (size_t i = 0; i < n_out; i++) cov_tensor_release(&out[i]);
  return graph_node_error(x->g, n, code, "codelet '%s': %s", name, msg);
}

/* A dynamic operator (graph_opdef.dynamic) sets its outputs' shapes itself:
 * whatever it made is checked as a shaped operator's result would be. */
static cov_status check_dynamic_outputs(const graph *g, const graph_node *n,
                                        graph_value *const *out) {
  for (int i = 0; i < n->n_out; i++) {
    if (!out[i]) continue;
    COV_RETURN_IF_ERROR(graph_check_shape(g, n, out[i]));
    if ((!out[i]->seq && graph_numel(out[i]) < 0) || !out[i]->data)
      return graph_node_error(g, n, COV_INTERNAL, "produced no data for output '%s'",
                              out[i]->name);
  }
  return NULL;
}

cov_status graph_exec_node(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  const graph *g = x->g;
  for (int i = 0; i < n->n_out; i++)
    if (out[i]) out[i]->data = NULL;
  /* an Identity the simplifier kept, of a sequence (graph_sequence.h) */
  if (n->n_in == 1 && in[0] && in[0]->seq && n->n_out == 1 && !strcmp(n->op_type, "Identity"))
    return graph_seq_copy(g, n, in[0], out[0]);
  COV_RETURN_IF_ERROR(n->def->infer(g, n, in, out));
  bool all_empty = !n->def->dynamic;
  for (int i = 0; i < n->n_out && !n->def->dynamic; i++) {
    if (!out[i]) continue;
    COV_RETURN_IF_ERROR(graph_check_shape(g, n, out[i]));
    int64_t numel = graph_numel(out[i]);
    if (numel < 0)
      return graph_node_error(g, n, COV_INTERNAL, "output '%s' has no concrete shape at run time",
                              out[i]->name);
    if (numel > 0) all_empty = false;
  }
  /* Shape reads only its input's dims; every other kernel reads data. */
  bool shape_only = strcmp(n->op_type, "Shape") == 0;
  for (int i = 0; i < n->n_in && !shape_only; i++)
    if (in[i] && !in[i]->data && graph_numel(in[i]) != 0)
      return graph_node_error(g, n, COV_INTERNAL, "input '%s' has no data", in[i]->name);
  cov_status st = NULL;
  if (all_empty) {
    for (int i = 0; i < n->n_out && !st; i++)
      if (out[i]) st = graph_alloc_data(g, n, out[i]);
  } else {
    st = n->def->exec(x, n, in, out);
  }
  if (!st && n->def->dynamic) st = check_dynamic_outputs(g, n, out);
  for (int i = 0; i < n->n_out && !st; i++)
    if (out[i] && !out[i]->data)
      st = graph_node_error(g, n, COV_INTERNAL, "produced no data for output '%s'", out[i]->name);
  if (st) {
    for (int i = 0; i < n->n_out; i++)
      if (out[i]) {
        free(out[i]->data);
        out[i]->data = NULL;
      }
  }
  return st;
}

/* ---- whole-graph runs ------------------------------------------------- */

typedef struct run_state {
  graph_value *vals; /* per-run copies of g->values */
  bool *owned;
  int *left; /* uses left before the value can be freed */
} run_state;

static void free_state(const graph *g, run_state *s) {
  if (s->vals && s->owned)
    for (size_t i = 0; i < g->n_values; i++)
      if (s->owned[i]) free(s->vals[i].data);
  free(s->vals);
  free(s->owned);
  free(s->left);
}

/* Checks a caller's tensor against the declared input and binds symbolic
 * dims, which must agree across inputs. */
static cov_status bind_input(const graph *g, const graph_value *decl, const cov_tensor *t,
                             const char **sym_names, int64_t *sym_values, int *n_sym) {
  char want[256], got[256];
  graph_value gv = {.name = decl->name, .dtype = t->dtype, .rank = t->rank};
  if (t->rank < 0 || t->rank > COV_MAX_RANK)
    return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "tensor of rank %d", t->rank);
  for (int i = 0; i < t->rank; i++) gv.dims[i] = t->shape[i];
  graph_type_str(decl, want, sizeof want);
  graph_type_str(&gv, got, sizeof got);
  /* numpy has no bfloat16: u16 arrays (and onnx's own test data, written
   * as UINT16 tensors before onnx 1.14) carry a bf16 input's bit patterns. */
  bool bf16_bits = t->dtype == COV_U16 && decl->dtype == COV_BF16;
  if (t->dtype != decl->dtype && !bf16_bits)
    return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "expected %s, got %s", want, got);
  if (decl->rank >= 0 && t->rank != decl->rank)
    return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "expected %s, got %s (rank %d)", want,
                             got, t->rank);
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0)
      return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "dim %d is %lld; dims must not be negative", i,
                               (long long)t->shape[i]);
    if (decl->rank >= 0 && decl->dims[i] >= 0 && decl->dims[i] != t->shape[i])
      return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "expected %s, got %s", want, got);
    if (decl->rank >= 0 && decl->sym[i]) {
      int k = 0;
      while (k < *n_sym && strcmp(sym_names[k], decl->sym[i]) != 0) k++;
      if (k < *n_sym && sym_values[k] != t->shape[i])
        return graph_value_error(g, decl, COV_INVALID_ARGUMENT,
                                 "dim '%s' is %lld here but %lld in an earlier input", decl->sym[i],
                                 (long long)t->shape[i], (long long)sym_values[k]);
      if (k == *n_sym && k < 64) {
        sym_names[k] = decl->sym[i];
        sym_values[k] = t->shape[i];
        (*n_sym)++;
      }
    }
  }
  if (graph_numel(&gv) < 0)
    return graph_value_error(g, decl, COV_OUT_OF_RANGE, "input is larger than covenant can hold");
  if (!t->data && graph_numel(&gv) > 0)
    return graph_value_error(g, decl, COV_INVALID_ARGUMENT, "tensor has no data");
  return NULL;
}

/* Counts n's reads as done; frees activations nothing else will read. */
static void release_inputs(run_state *s, const graph_node *n) {
  for (int i = 0; i < n->n_in; i++) {
    if (!n->in[i]) continue;
    int id = n->in[i]->id;
    if (--s->left[id] == 0 && s->owned[id]) {
      free(s->vals[id].data);
      s->vals[id].data = NULL;
      s->owned[id] = false;
    }
  }
}

static cov_status run_node(graph_exec *x, run_state *s, const graph_node *n) {
  graph_value *in_buf[16], *out_buf[16];
  graph_value **in = n->n_in <= 16 ? in_buf : malloc((size_t)n->n_in * sizeof *in);
  graph_value **out = n->n_out <= 16 ? out_buf : malloc((size_t)n->n_out * sizeof *out);
  if (!in || !out) {
    if (in != in_buf) free(in);
    if (out != out_buf) free(out);
    return graph_node_error(x->g, n, COV_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < n->n_in; i++) in[i] = n->in[i] ? &s->vals[n->in[i]->id] : NULL;
  for (int i = 0; i < n->n_out; i++) out[i] = n->out[i] ? &s->vals[n->out[i]->id] : NULL;
  cov_status st = graph_exec_node(x, n, in, out);
  if (!st) {
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]) s->owned[n->out[i]->id] = true;
    release_inputs(s, n);
  }
  if (in != in_buf) free(in);
  if (out != out_buf) free(out);
  return st;
}

/* Offers compute group gi to the backend's group hook; on *handled the
 * group's result is in the value table and its inputs' reads are counted. */
static cov_status offer_group(graph_exec *x, run_state *s, size_t gi, cov_model_group_fn fn,
                              void *user, bool *handled) {
  const graph *g = x->g;
  const graph_group *grp = &g->groups[gi];
  *handled = false;
  cov_model_group *d = NULL;
  char why[512] = "";
  cov_status ds = grp->layout ? graph_group_describe_gather(g, gi, s->vals, &d) : graph_group_describe_run(g, gi, s->vals, &d);
  /* A group that cannot be described runs node by node, unless what
   * failed was memory: then the run fails rather than take another path. */
  if (ds && cov_status_code(ds) == COV_OUT_OF_MEMORY) return ds;
  if (ds) {
    cov_status_format(ds, why, sizeof why);
    char *nl = strchr(why, '\n');
    if (nl) *nl = '\0';
    cov_status_free(ds);
  }
  size_t n_in = d ? cov_model_group_num_inputs(d) : 0;
  cov_tensor in[64];
  if (n_in > 64) {
    cov_model_group_free(d);
    return NULL; /* more inputs than any fused layer takes: run it node by node */
  }
  for (size_t k = 0; k < n_in; k++) {
    int id = graph_group_input_id(d, k);
    if (id >= 0) {
      in[k] = graph_view(&s->vals[id]);
    } else { /* computed inside a node from the group's inputs */
      cov_model_group_input(d, k, &in[k]);
      in[k].data = (void *)graph_group_input_data(d, k);
    }
  }
  cov_model_group_offer offer = {(int)gi, grp->kind, d, d ? NULL : why, in, n_in};
  cov_tensor out = {0};
  int took = 0;
  cov_status st = fn(user, &offer, &out, 1, &took);
  if (!st && took) {
    cov_tensor want;
    const char *name = d ? cov_model_group_output(d, &want) : NULL;
    if (!d || out.dtype != want.dtype || cov_tensor_numel(&out) != cov_tensor_numel(&want) ||
        !out.data) {
      st = graph_node_error(g, grp->nodes[grp->n_nodes - 1], COV_INTERNAL,
                            "the backend's result for layer group %zu is not %s's dtype and size",
                            gi, name ? name : "the group output");
    } else {
      graph_value *v = &s->vals[graph_group_output_id(d)];
      graph_set_shape(v, want.rank, want.shape);
      v->data = out.data;
      out.data = NULL;
      s->owned[v->id] = true;
      for (int k = 0; k < grp->n_nodes; k++) release_inputs(s, grp->nodes[k]);
      *handled = true;
    }
  }
  cov_tensor_release(&out);
  cov_model_group_free(d);
  return st;
}

cov_status graph_run(const graph *g, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                     size_t n_outputs) {
  return graph_run_groups(g, inputs, n_inputs, outputs, n_outputs, NULL, NULL, NULL);
}

cov_status graph_run_hooked(const graph *g, const cov_tensor *inputs, size_t n_inputs,
                            cov_tensor *outputs, size_t n_outputs, cov_model_call_fn hook,
                            void *user) {
  return graph_run_groups(g, inputs, n_inputs, outputs, n_outputs, NULL, hook, user);
}

/* Every codelet the graph's compute nodes need, checked before anything runs. */
static cov_status check_codelets(const graph *g) {
  cov_status missing = NULL;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    if (n->def->layout) continue;
    const char *names[16];
    int k = n->def->codelets(n, names, 16);
    for (int j = 0; j < k; j++) {
      bool dup = false;
      for (int m = 0; m < j; m++) dup |= strcmp(names[m], names[j]) == 0;
      if (!dup && (!g->lib || !cov_codelet_lib_find(g->lib, names[j])))
        missing = cov_status_join(missing, graph_node_error(g, n, COV_NOT_FOUND,
                                                            "needs codelet '%s', which the codelet "
                                                            "library does not have",
                                                            names[j]));
    }
  }
  return missing;
}

/* The run's value table: copies of g's values, activations without data. */
static cov_status init_state(const graph *g, run_state *s) {
  memset(s, 0, sizeof *s);
  size_t nv = g->n_values ? g->n_values : 1;
  s->vals = calloc(nv, sizeof *s->vals);
  s->owned = calloc(nv, sizeof *s->owned);
  s->left = calloc(nv, sizeof *s->left);
  if (!s->vals || !s->owned || !s->left) {
    free_state(g, s);
    cov_loc loc = {.file = g->file};
    return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
  }
  for (size_t i = 0; i < g->n_values; i++) {
    s->vals[i] = *g->values[i];
    s->left[i] = g->values[i]->n_uses;
    if (g->values[i]->kind == GV_ACTIVATION) s->vals[i].data = NULL;
  }
  /* Graph outputs are never freed early. */
  for (size_t i = 0; i < g->n_outputs; i++) s->left[g->outputs[i]->id] = -1;
  return NULL;
}

/* Runs g's nodes group by group, each compute group offered to x->group first. */
static cov_status run_nodes(graph_exec *x, run_state *s) {
  const graph *g = x->g;
  cov_status st = NULL;
  /* Groups are contiguous in node order (graph_fuse). */
  for (size_t i = 0; i < g->n_nodes && !st;) {
    int gi = g->nodes[i]->group;
    size_t end = i + 1;
    while (end < g->n_nodes && g->nodes[end]->group == gi) end++;
    if (x->group && gi >= 0 && (!g->groups[gi].layout || (x->offer_gathers && graph_group_is_gather(g, (size_t)gi)))) {
      bool handled = false;
      st = offer_group(x, s, (size_t)gi, x->group, x->hook_user, &handled);
      if (st || handled) {
        i = end;
        continue;
      }
    }
    for (; i < end && !st; i++) st = run_node(x, s, g->nodes[i]);
  }
  return st;
}

cov_status graph_run_groups(const graph *g, const cov_tensor *inputs, size_t n_inputs,
                            cov_tensor *outputs, size_t n_outputs, cov_model_group_fn group,
                            cov_model_call_fn hook, void *user) {
  graph_run_io io = {inputs, NULL, n_inputs, outputs, NULL, n_outputs, false, NULL, NULL, false};
  return graph_run_values(g, &io, group, hook, user);
}

cov_status graph_run_groups_x(const graph *g, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                              size_t n_outputs, cov_model_group_fn group, cov_model_call_fn hook, void *user,
                              bool offer_gathers) {
  graph_run_io io = {inputs, NULL, n_inputs, outputs, NULL, n_outputs, offer_gathers, NULL, NULL, false};
  return graph_run_values(g, &io, group, hook, user);
}

/* Binds the caller's inputs to the run's values: tensors checked against
 * their declarations (symbolic dims agreeing), sequences copied in. */
static cov_status bind_inputs(const graph *g, const graph_run_io *io, run_state *s) {
  const char *sym_names[64];
  int64_t sym_values[64];
  int n_sym = 0;
  for (size_t i = 0; i < io->n_inputs; i++) {
    const graph_value *decl = g->inputs[i];
    if (decl->seq) {
      COV_RETURN_IF_ERROR(graph_seq_bind_input(g, decl, io->seq_in ? io->seq_in[i] : NULL,
                                               &s->vals[decl->id]));
      s->owned[decl->id] = true;
      continue;
    }
    cov_tensor t = io->inputs[i];
    /* not fed (no data): the initializer of its name, where it has one */
    const graph_value *d = decl->default_value;
    if (!t.data && d && d->data) {
      t.dtype = d->dtype;
      t.rank = d->rank;
      for (int k = 0; k < d->rank; k++) t.shape[k] = d->dims[k];
      t.data = d->data;
    }
    COV_RETURN_IF_ERROR(bind_input(g, decl, &t, sym_names, sym_values, &n_sym));
    graph_value *v = &s->vals[decl->id];
    graph_set_shape(v, t.rank, t.shape);
    v->data = t.data;
  }
  return NULL;
}

/* Hands the run's outputs to the caller: tensors copied out, sequences
 * (where the caller takes them) as cov_sequences. */
static cov_status take_outputs(const graph *g, const graph_run_io *io, run_state *s) {
  for (size_t i = 0; i < g->n_outputs; i++) {
    const graph_value *v = &s->vals[g->outputs[i]->id];
    if (v->seq) {
      if (!io->seq_out)
        return graph_value_error(g, g->outputs[i], COV_UNSUPPORTED,
                                 "is a sequence or an optional; this run returns tensors only "
                                 "(cov_model_run_ref_values returns both)");
      COV_RETURN_IF_ERROR(graph_seq_take_output(g, g->outputs[i], v, &io->seq_out[i]));
      continue;
    }
    COV_RETURN_IF_ERROR(cov_tensor_alloc(&io->outputs[i], v->dtype, v->rank, v->dims));
    int64_t numel = graph_numel(v);
    if (numel > 0) memcpy(io->outputs[i].data, v->data, (size_t)numel * cov_dtype_size(v->dtype));
  }
  return NULL;
}

cov_status graph_run_values(const graph *g, const graph_run_io *io, cov_model_group_fn group,
                            cov_model_call_fn hook, void *user) {
  size_t n_inputs = io->n_inputs, n_outputs = io->n_outputs;
  const cov_tensor *inputs = io->inputs;
  cov_tensor *outputs = io->outputs;
  cov_loc loc = {.file = g->file};
  if (n_inputs != g->n_inputs)
    return cov_error(COV_INVALID_ARGUMENT, &loc, "the model takes %zu inputs, %zu were given",
                     g->n_inputs, n_inputs);
  if (n_outputs != g->n_outputs)
    return cov_error(COV_INVALID_ARGUMENT, &loc,
                     "the model has %zu outputs, room for %zu was given", g->n_outputs, n_outputs);
  if (n_inputs && !inputs) return cov_error(COV_INVALID_ARGUMENT, &loc, "inputs is NULL");
  for (size_t i = 0; i < n_outputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  COV_RETURN_IF_ERROR(check_codelets(g));
  if (io->seq_out)
    for (size_t i = 0; i < n_outputs; i++) io->seq_out[i] = NULL;
  run_state s;
  COV_RETURN_IF_ERROR(init_state(g, &s));
  cov_status st = bind_inputs(g, io, &s);
  graph_exec x = {.g = g, .lib = g->lib, .hook = hook, .hook_user = user, .group = group,
                  .offer_gathers = io->offer_gathers, .trace = io->trace, .trace_user = io->trace_user,
                  .bound = io->bound};
  if (!st) st = run_nodes(&x, &s);
  if (!st && x.trace) x.trace(x.trace_user, g, s.vals);
  if (!st) st = take_outputs(g, io, &s);
  if (st)
    for (size_t i = 0; i < n_outputs; i++) {
      cov_tensor_release(&outputs[i]);
      if (io->seq_out) cov_sequence_free(io->seq_out[i]), io->seq_out[i] = NULL;
    }
  free_state(g, &s);
  return st;
}

/* Moves (or, when the run does not own it, copies) a subgraph's output. */
static cov_status take_output(const graph *sub, run_state *s, const graph_value *decl,
                              graph_value *out) {
  graph_value *v = &s->vals[decl->id];
  int64_t numel = v->seq ? 1 : graph_numel(v);
  if (numel < 0 || (!v->data && numel > 0))
    return graph_value_error(sub, decl, COV_INTERNAL, "subgraph output has no data");
  graph_copy_type(out, v);
  if (s->owned[decl->id] && v->data) {
    out->data = v->data;
    s->owned[decl->id] = false;
    return NULL;
  }
  size_t bytes = graph_value_bytes(v);
  out->data = malloc(bytes ? bytes : 1);
  if (!out->data) return graph_value_error(sub, decl, COV_OUT_OF_MEMORY, "out of memory");
  if (bytes) memcpy(out->data, v->data, bytes);
  return NULL;
}

cov_status graph_run_sub(graph_exec *x, const graph *sub, graph_value *const *in, size_t n_in,
                         graph_value *const *owner_in, graph_value *out) {
  if (n_in != sub->n_inputs)
    return graph_node_error(sub, NULL, COV_INTERNAL, "subgraph takes %zu inputs, %zu given",
                            sub->n_inputs, n_in);
  run_state s;
  COV_RETURN_IF_ERROR(init_state(sub, &s));
  for (size_t i = 0; i < n_in; i++) {
    graph_value *v = &s.vals[sub->inputs[i]->id];
    graph_copy_type(v, in[i]);
    v->data = in[i]->data;
  }
  for (size_t k = 0; k < sub->n_captures; k++) {
    graph_value *v = &s.vals[sub->captures[k]->id];
    const graph_value *o = owner_in[sub->capture_slot[k]];
    graph_copy_type(v, o);
    v->data = o->data;
  }
  graph_exec sx = *x;
  sx.g = sub;
  cov_status st = run_nodes(&sx, &s);
  if (!st && sx.trace) sx.trace(sx.trace_user, sub, s.vals);
  size_t done = 0;
  for (; done < sub->n_outputs && !st; done++)
    st = take_output(sub, &s, sub->outputs[done], &out[done]);
  if (st)
    for (size_t k = 0; k < done; k++) {
      free(out[k].data);
      out[k].data = NULL;
    }
  free_state(sub, &s);
  return st;
}
