/* frontend/passes/graph_group.c: a layer group's codelet calls, described for a
 * backend that compiles the whole group as one layer (cov_model_group,
 * covenant/model.h).
 *
 * The calls a group makes are decided by each node's lowering
 * (graph_conv.c, graph_pool.c, graph_matmul.c, graph_compute.c): which
 * codelet, which attributes, which views of which values. Rather than
 * restate those rules here (and let them drift), the group's nodes are run
 * through the same lowering with a recorder in place of the codelets: it
 * notes every call and answers it with a zero tensor of the shape the
 * codelet would produce. Each input a call receives is then identified by
 * its data pointer: the previous call's result, a model constant, or one of
 * the group's external inputs (given placeholder buffers, or the run's real
 * ones); a tensor the lowering marked as computed from constants alone
 * (graph_lower_call_const) is described as a constant, its data copied.
 * Anything else was made inside a node (an expanded or transposed
 * copy) and the group is not a plain chain: that is reported, naming the
 * node, and a backend falls back to running the calls one by one.
 *
 * Described for a run (graph_group_describe_run: the run's concrete
 * values, offered to a group hook), such a tensor becomes an input of its
 * own where it can only come from the group's inputs: the node reads no
 * value the group computes and the call is the node's first. Its data,
 * computed by the node's own lowering from the run's values, is kept in
 * the description and offered like any input (graph_group_input_data); a
 * backend that follows its inputs' elements (the GPU model compiler's
 * capture) sees the node's rearrangement as a copy of earlier elements. A
 * load-time description has no such data and keeps refusing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "common/loc.h"

struct cov_model_group {
  cov_arena *arena;
  size_t index;
  const char *name, *kind;
  cov_model_group_call *calls;
  size_t n_calls, cap_calls;
  const char **in_names;
  cov_tensor *in_shapes;
  int *in_ids; /* graph value ids of the inputs (-1: computed inside a node) */
  void **in_data; /* inputs computed inside a node: their data (arena); else NULL */
  size_t n_in, cap_in;
  const char *out_name;
  cov_tensor out;
  int out_id;
  const cov_codelet_lib *lib; /* the model's, which its calls name codelets of */
};

/* One value the trace touches: a private copy, so the graph (or the run's
 * value table) is never written. */
typedef struct slot {
  int id;
  graph_value v;
  int input;        /* index in the group's inputs, or -1 */
  bool constant;    /* a model constant (data is the model's) */
  bool placeholder; /* v.data allocated here */
} slot;

typedef struct recorder {
  const graph *g;
  const graph_exec *x; /* the trace's executor (its const_inputs) */
  cov_model_group *d;
  slot *slots;
  int n_slots;
  const graph_node *node; /* the node being traced, for messages */
  const void **outs;      /* every call's result, in call order (identity only) */
  size_t n_outs, cap_outs;
  bool derive;           /* tensors computed inside a node may become inputs */
  size_t node_call0;     /* the index of the traced node's first call */
  bool node_reads_group; /* the traced node reads a value the group computes */
} recorder;

/* Inputs computed inside nodes one description may add. */
enum { GROUP_MAX_DERIVED = 8 };

static slot *find_slot(recorder *r, int id) {
  for (int i = 0; i < r->n_slots; i++)
    if (r->slots[i].id == id) return &r->slots[i];
  return NULL;
}

static cov_status oom(const graph *g, const graph_node *n) {
  return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory describing the layer group");
}

/* Input k of call `call`, which the node computed from model constants
 * alone (graph_lower_call_const): a constant of the description, its data
 * copied (the node frees its own), named after the node and the call. */
static cov_status derived_const(recorder *r, size_t call, size_t k, const cov_tensor *t,
                                cov_model_arg *a) {
  cov_model_group *d = r->d;
  int64_t numel = cov_tensor_numel(t);
  size_t es = cov_dtype_size(t->dtype);
  if (numel < 0 || es == 0 || (uint64_t)numel > COV_TENSOR_MAX_BYTES / es)
    return graph_node_error(r->g, r->node, COV_OUT_OF_RANGE,
                            "input %zu of call %zu (%s) is too large for a constant", k, call,
                            d->calls[call].codelet);
  size_t bytes = (size_t)numel * es;
  void *copy = cov_arena_alloc(d->arena, bytes ? bytes : 1);
  char name[256];
  snprintf(name, sizeof name, "%s:call%zu.in%zu", d->calls[call].node, call, k);
  a->value = cov_arena_strdup(d->arena, name);
  if (!copy || !a->value) return oom(r->g, r->node);
  if (bytes) memcpy(copy, t->data, bytes);
  a->kind = COV_MODEL_ARG_CONST;
  a->t.data = copy;
  return NULL;
}

/* Input k of call `call`, computed inside the node from the group's
 * inputs alone: a group input of its own, its data copied. */
static cov_status derived_input(recorder *r, size_t call, size_t k, const cov_tensor *t,
                                cov_model_arg *a) {
  cov_model_group *d = r->d;
  int64_t numel = cov_tensor_numel(t);
  size_t es = cov_dtype_size(t->dtype);
  if (d->n_in == d->cap_in)
    return graph_node_error(r->g, r->node, COV_UNSUPPORTED,
                            "input %zu of call %zu (%s) is computed inside the node, and the group "
                            "already has %zu inputs",
                            k, call, d->calls[call].codelet, d->n_in);
  if (numel < 0 || es == 0 || (uint64_t)numel > COV_TENSOR_MAX_BYTES / es)
    return graph_node_error(r->g, r->node, COV_OUT_OF_RANGE,
                            "input %zu of call %zu (%s) is too large for a group input", k, call,
                            d->calls[call].codelet);
  size_t bytes = (size_t)numel * es;
  void *copy = cov_arena_alloc(d->arena, bytes ? bytes : 1);
  char name[256];
  snprintf(name, sizeof name, "%s:call%zu.in%zu", d->calls[call].node, call, k);
  const char *nm = cov_arena_strdup(d->arena, name);
  if (!copy || !nm) return oom(r->g, r->node);
  if (bytes) memcpy(copy, t->data, bytes);
  cov_tensor *shape = &d->in_shapes[d->n_in];
  *shape = *t;
  shape->data = NULL;
  d->in_names[d->n_in] = nm;
  d->in_ids[d->n_in] = -1;
  d->in_data[d->n_in] = copy;
  a->kind = COV_MODEL_ARG_EXTERNAL;
  a->input = (int)d->n_in++;
  a->value = nm;
  return NULL;
}

/* The kind of input `t` of the call being recorded. */
static cov_status classify(recorder *r, size_t call, size_t k, const cov_tensor *t,
                           cov_model_arg *a) {
  const graph *g = r->g;
  memset(a, 0, sizeof *a);
  a->input = -1;
  a->t = *t;
  a->t.data = NULL;
  if (call > 0 && t->data && t->data == r->outs[call - 1]) {
    a->kind = COV_MODEL_ARG_PREV;
    return NULL;
  }
  for (int i = 0; t->data && i < r->n_slots; i++) {
    const slot *s = &r->slots[i];
    if (s->v.data != t->data || (!s->constant && s->input < 0)) continue;
    a->value = s->v.name;
    if (s->constant) {
      a->kind = COV_MODEL_ARG_CONST;
      a->t.data = s->v.data;
    } else {
      a->kind = COV_MODEL_ARG_EXTERNAL;
      a->input = s->input;
    }
    return NULL;
  }
  if (t->data && k < 32 && (r->x->const_inputs >> k & 1u)) return derived_const(r, call, k, t, a);
  for (size_t c = 0; t->data && call > 0 && c + 1 < call; c++)
    if (r->outs[c] == t->data)
      return graph_node_error(g, r->node, COV_UNSUPPORTED,
                              "call %zu (%s) reads the result of call %zu, not the previous one: "
                              "the group is not a chain",
                              call, r->d->calls[call].codelet, c);
  if (t->data && r->derive && call == r->node_call0 && !r->node_reads_group)
    return derived_input(r, call, k, t, a);
  return graph_node_error(g, r->node, COV_UNSUPPORTED,
                          "input %zu of call %zu (%s) is computed inside the node (a copy or "
                          "rearrangement), not a model value or the previous call's result",
                          k, call, r->d->calls[call].codelet);
}

/* The recorder standing in for the codelets (a cov_model_call_fn). */
static cov_status record(void *user, const cov_model_call *call, cov_tensor *out, size_t n_out,
                         int *handled) {
  recorder *r = user;
  const graph *g = r->g;
  cov_model_group *d = r->d;
  *handled = 0;
  if (n_out != 1)
    return graph_node_error(g, r->node, COV_UNSUPPORTED,
                            "codelet '%s' has %zu results; a fused layer chains single results",
                            call->codelet, n_out);
  const cov_codelet *c = g->lib ? cov_codelet_lib_find(g->lib, call->codelet) : NULL;
  if (!c)
    return graph_node_error(g, r->node, COV_NOT_FOUND,
                            "needs codelet '%s', which the codelet library does not have",
                            call->codelet);
  if (d->n_calls == d->cap_calls || r->n_outs == r->cap_outs) {
    size_t cap = d->cap_calls ? 2 * d->cap_calls : 8;
    cov_model_group_call *nc = cov_arena_array(d->arena, cap, sizeof *nc);
    const void **no = realloc(r->outs, cap * sizeof *no);
    if (!nc || !no) {
      if (no) r->outs = no;
      return oom(g, r->node);
    }
    if (d->n_calls) memcpy(nc, d->calls, d->n_calls * sizeof *nc);
    d->calls = nc;
    d->cap_calls = r->cap_outs = cap;
    r->outs = no;
  }
  size_t ci = d->n_calls;
  cov_model_group_call *mc = &d->calls[ci];
  memset(mc, 0, sizeof *mc);
  mc->node = cov_arena_strdup(d->arena, call->node);
  mc->codelet = cov_arena_strdup(d->arena, call->codelet);
  cov_attr *attrs = cov_arena_array(d->arena, call->n_attrs ? call->n_attrs : 1, sizeof *attrs);
  cov_model_arg *args = cov_arena_array(d->arena, call->n_in ? call->n_in : 1, sizeof *args);
  if (!mc->node || !mc->codelet || !attrs || !args) return oom(g, r->node);
  for (size_t i = 0; i < call->n_attrs; i++) {
    attrs[i] = call->attrs[i];
    if (!(attrs[i].name = cov_arena_strdup(d->arena, call->attrs[i].name))) return oom(g, r->node);
  }
  mc->attrs = attrs;
  mc->n_attrs = call->n_attrs;
  d->n_calls++; /* visible to classify's messages */
  for (size_t k = 0; k < call->n_in; k++) COV_RETURN_IF_ERROR(classify(r, ci, k, &call->in[k], &args[k]));
  mc->args = args;
  mc->n_args = call->n_in;
  cov_tensor shape;
  cov_status st = cov_codelet_output_shapes(c, call->attrs, call->n_attrs, call->in, call->n_in,
                                            &shape, 1);
  if (st) {
    char msg[512];
    cov_status_format(st, msg, sizeof msg);
    cov_code code = cov_status_code(st);
    cov_status_free(st);
    return graph_node_error(g, r->node, code, "codelet '%s': %s", call->codelet, msg);
  }
  mc->out = shape;
  /* A zero result of the right shape lets the node's lowering go on. */
  COV_RETURN_IF_ERROR(cov_tensor_alloc(&out[0], shape.dtype, shape.rank, shape.shape));
  r->outs[r->n_outs++] = out[0].data;
  *handled = 1;
  return NULL;
}

static bool in_group(const graph_value *v, size_t gi) {
  return v->producer && v->producer->group == (int)gi;
}

/* Creates the slots: every value the group's nodes read or write. */
static cov_status make_slots(recorder *r, const graph_group *grp, size_t gi,
                             const graph_value *run_vals) {
  const graph *g = r->g;
  cov_model_group *d = r->d;
  int cap = 0;
  for (int k = 0; k < grp->n_nodes; k++) cap += grp->nodes[k]->n_in + grp->nodes[k]->n_out;
  r->slots = calloc((size_t)(cap ? cap : 1), sizeof *r->slots);
  /* room for the values and for inputs computed inside nodes */
  d->cap_in = (size_t)cap + GROUP_MAX_DERIVED;
  d->in_names = cov_arena_array(d->arena, d->cap_in, sizeof *d->in_names);
  d->in_shapes = cov_arena_array(d->arena, d->cap_in, sizeof *d->in_shapes);
  d->in_ids = cov_arena_array(d->arena, d->cap_in, sizeof *d->in_ids);
  d->in_data = cov_arena_array(d->arena, d->cap_in, sizeof *d->in_data);
  if (!r->slots || !d->in_names || !d->in_shapes || !d->in_ids || !d->in_data)
    return oom(g, grp->nodes[0]);
  memset(d->in_data, 0, d->cap_in * sizeof *d->in_data);
  for (int k = 0; k < grp->n_nodes; k++) {
    const graph_node *n = grp->nodes[k];
    for (int j = 0; j < n->n_in + n->n_out; j++) {
      const graph_value *v = j < n->n_in ? n->in[j] : n->out[j - n->n_in];
      if (!v || find_slot(r, v->id)) continue;
      slot *s = &r->slots[r->n_slots++];
      s->id = v->id;
      s->input = -1;
      const graph_value *src = run_vals ? &run_vals[v->id] : v;
      s->v = *src;
      if (in_group(v, gi)) {
        s->v.data = NULL; /* written by the trace */
      } else if (g->values[v->id]->data) {
        s->constant = true;
        s->v.data = g->values[v->id]->data;
      } else {
        int64_t numel = graph_numel(src);
        if (numel < 0)
          return graph_node_error(g, n, COV_UNSUPPORTED,
                                  "input '%s' has no static shape; the group can only be "
                                  "described at run time",
                                  v->name);
        if (!s->v.data) {
          size_t bytes = (size_t)numel * cov_dtype_size(src->dtype);
          if (!(s->v.data = calloc(bytes ? bytes : 1, 1))) return oom(g, n);
          s->placeholder = true;
        }
        s->input = (int)d->n_in;
        d->in_names[d->n_in] = v->name;
        d->in_ids[d->n_in] = v->id;
        cov_tensor *t = &d->in_shapes[d->n_in];
        memset(t, 0, sizeof *t);
        t->dtype = src->dtype;
        t->rank = src->rank;
        for (int i = 0; i < src->rank; i++) t->shape[i] = src->dims[i];
        d->n_in++;
      }
    }
  }
  return NULL;
}

/* The group's one result read outside it, which must be the last call's. */
static cov_status find_output(recorder *r, const graph_group *grp, size_t gi) {
  const graph *g = r->g;
  cov_model_group *d = r->d;
  const graph_node *last = grp->nodes[grp->n_nodes - 1];
  const graph_value *res = NULL;
  int n_res = 0;
  for (int k = 0; k < grp->n_nodes; k++) {
    const graph_node *n = grp->nodes[k];
    for (int o = 0; o < n->n_out; o++) {
      const graph_value *v = n->out[o];
      if (!v) continue;
      int inside = 0;
      for (int q = 0; q < grp->n_nodes; q++)
        for (int j = 0; j < grp->nodes[q]->n_in; j++) inside += grp->nodes[q]->in[j] == v;
      bool outside = inside < v->n_uses;
      for (size_t q = 0; q < g->n_outputs && !outside; q++) outside = g->outputs[q] == v;
      if (outside) res = v, n_res++;
    }
  }
  (void)gi;
  if (n_res != 1)
    return graph_node_error(g, last, COV_UNSUPPORTED,
                            "the group has %d results read outside it; a fused layer has one",
                            n_res);
  const slot *s = find_slot(r, res->id);
  if (d->n_calls == 0)
    return graph_node_error(g, last, COV_UNSUPPORTED, "the group makes no codelet call");
  if (!s || !s->v.data || s->v.data != r->outs[d->n_calls - 1])
    return graph_node_error(g, res->producer, COV_UNSUPPORTED,
                            "the group's result '%s' is not its last call's result (the node "
                            "rearranges it after the call)",
                            res->name);
  d->out_name = res->name;
  d->out_id = res->id;
  memset(&d->out, 0, sizeof d->out);
  d->out.dtype = s->v.dtype;
  d->out.rank = s->v.rank;
  for (int i = 0; i < s->v.rank; i++) d->out.shape[i] = s->v.dims[i];
  return NULL;
}

static cov_status describe(const graph *g, size_t gi, const graph_value *run_vals, bool derive,
                           cov_model_group **out) {
  *out = NULL;
  if (gi >= g->n_groups)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_group_describe"), "no layer group %zu (the model has %zu)", gi,
                     g->n_groups);
  const graph_group *grp = &g->groups[gi];
  if (grp->layout || grp->n_nodes == 0)
    return graph_node_error(g, grp->n_nodes ? grp->nodes[0] : NULL, COV_UNSUPPORTED,
                            "group %zu (%s) is layout work, which the frontend runs itself", gi,
                            grp->kind);
  cov_model_group *d = calloc(1, sizeof *d);
  cov_arena *a = cov_arena_create();
  if (!d || !a) {
    free(d);
    cov_arena_destroy(a);
    return oom(g, grp->nodes[0]);
  }
  d->arena = a;
  d->index = gi;
  d->name = grp->nodes[0]->name;
  d->kind = grp->kind;
  d->lib = g->lib;
  d->out_id = -1;
  recorder r = {.g = g, .d = d, .derive = derive};
  graph_exec x = {.g = g, .lib = g->lib, .hook = record, .hook_user = &r};
  r.x = &x;
  cov_status st = make_slots(&r, grp, gi, run_vals);
  for (int k = 0; k < grp->n_nodes && !st; k++) {
    const graph_node *n = grp->nodes[k];
    graph_value *in[16], *o[16];
    if (n->n_in > 16 || n->n_out > 16) {
      st = graph_node_error(g, n, COV_UNSUPPORTED, "more than 16 inputs or outputs in a fused group");
      break;
    }
    for (int j = 0; j < n->n_in; j++) in[j] = n->in[j] ? &find_slot(&r, n->in[j]->id)->v : NULL;
    for (int j = 0; j < n->n_out; j++) o[j] = n->out[j] ? &find_slot(&r, n->out[j]->id)->v : NULL;
    r.node = n;
    r.node_call0 = d->n_calls;
    r.node_reads_group = false;
    for (int j = 0; j < n->n_in; j++) r.node_reads_group |= n->in[j] && in_group(n->in[j], gi);
    st = graph_exec_node(&x, n, in, o);
  }
  if (!st) st = find_output(&r, grp, gi);
  for (int i = 0; i < r.n_slots; i++)
    if (r.slots[i].placeholder || (!r.slots[i].constant && r.slots[i].input < 0))
      free(r.slots[i].v.data);
  free(r.slots);
  free(r.outs);
  if (st) {
    cov_model_group_free(d);
    return cov_status_annotate(st, "layer group %zu (%s): ", gi, grp->kind);
  }
  *out = d;
  return NULL;
}

cov_status graph_group_describe(const graph *g, size_t gi, const graph_value *run_vals,
                                cov_model_group **out) {
  return describe(g, gi, run_vals, false, out);
}

cov_status graph_group_describe_run(const graph *g, size_t gi, const graph_value *run_vals,
                                    cov_model_group **out) {
  return describe(g, gi, run_vals, run_vals != NULL, out);
}

/* The embedding lookup's Gather node of layout group gi, or NULL. */
static const graph_node *gather_node(const graph *g, size_t gi) {
  if (gi >= g->n_groups) return NULL;
  const graph_group *grp = &g->groups[gi];
  if (!grp->layout || grp->n_nodes != 1) return NULL;
  const graph_node *n = grp->nodes[0];
  if (strcmp(n->op_type, "Gather") != 0 || n->n_in != 2 || n->n_out != 1 || !n->in[0] || !n->in[1] || !n->out[0])
    return NULL;
  const graph_attr *a = graph_attr_find(n, "axis");
  const graph_value *x = n->in[0], *ids = n->in[1];
  if (a && (a->type != GA_INT || a->i != 0)) return NULL;
  if (!x->data || x->rank != 2 || !cov_dtype_is_float(x->dtype)) return NULL;
  if (ids->data || (ids->dtype != COV_I64 && ids->dtype != COV_I32)) return NULL;
  return n;
}

/* The codelet of codelets/cast.cdl that converts to dtype t, or NULL. */
static const char *cast_codelet(cov_dtype t) {
  switch (t) {
    case COV_F32: return "cast_f32";
    case COV_F16: return "cast_f16";
    case COV_BF16: return "cast_bf16";
    case COV_F64: return "cast_f64";
    case COV_I64: return "cast_i64";
    case COV_I32: return "cast_i32";
    case COV_I8: return "cast_i8";
    case COV_U8: return "cast_u8";
    case COV_BOOL: return "cast_bool";
    default: return NULL;
  }
}

/* The Cast (or CastLike) node of layout group gi when it converts run-time
 * values to another element type (the group's `alters`: not an exact widening)
 * between dtypes cast.cdl has codelets for, or NULL. */
static const graph_node *cast_node(const graph *g, size_t gi) {
  if (gi >= g->n_groups) return NULL;
  const graph_group *grp = &g->groups[gi];
  if (!grp->layout || grp->n_nodes != 1 || !grp->alters) return NULL;
  const graph_node *n = grp->nodes[0];
  int like = !strcmp(n->op_type, "CastLike"); /* its second input only names the type */
  if ((strcmp(n->op_type, "Cast") != 0 && !like) || n->n_in != 1 + like || n->n_out != 1 || !n->in[0] || !n->out[0])
    return NULL;
  if (!cast_codelet(n->in[0]->dtype) || !cast_codelet(n->out[0]->dtype)) return NULL;
  return n;
}

/* Any other lone Gather of layout group gi at run-time indices (the
 * group's `alters`), on a constant or run-time value of a numeric type, or
 * NULL: one call of gather_axis. */
static const graph_node *axis_gather_node(const graph *g, size_t gi) {
  if (gi >= g->n_groups || gather_node(g, gi)) return NULL;
  const graph_group *grp = &g->groups[gi];
  if (!grp->layout || grp->n_nodes != 1 || !grp->alters) return NULL;
  const graph_node *n = grp->nodes[0];
  if (strcmp(n->op_type, "Gather") != 0 || n->n_in != 2 || n->n_out != 1 || !n->in[0] || !n->in[1] || !n->out[0])
    return NULL;
  const graph_value *x = n->in[0], *ids = n->in[1];
  if (ids->data || (ids->dtype != COV_I64 && ids->dtype != COV_I32) || x->rank < 1) return NULL;
  if (x->dtype == COV_BOOL || !cast_codelet(x->dtype)) return NULL;
  return n;
}

bool graph_group_is_gather(const graph *g, size_t gi) {
  return gather_node(g, gi) != NULL || cast_node(g, gi) != NULL || axis_gather_node(g, gi) != NULL;
}

/* The general Gather's one call: gather_axis(x as [A, V, B], ids as [N])
 * -> [A, N, B], the node's output x dims before the axis, ids dims, x
 * dims after it. x is a constant of the call or the group's input 0 (ids
 * then input 1). */
static cov_status axis_gather_call(const graph *g, const graph_node *n, const graph_value *x, const graph_value *ids,
                                   cov_model_group *d) {
  int konst = n->in[0]->data != NULL; /* a model constant (x is the run's copy of the value) */
  int64_t axis;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "axis", 0, &axis));
  int r = x->rank, ax = (int)(axis < 0 ? axis + r : axis);
  int64_t nids = graph_numel(ids), A = 1, B = 1;
  if (ax < 0 || ax >= r) return graph_node_error(g, n, COV_INVALID_INPUT, "axis %lld is out of range", (long long)axis);
  if (nids < 0 || graph_numel(x) < 0 || r - 1 + ids->rank > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "its inputs have no static shape");
  for (int i = 0; i < ax; i++) A *= x->dims[i];
  for (int i = ax + 1; i < r; i++) B *= x->dims[i];
  int n_in = konst ? 1 : 2;
  cov_model_group_call *c = cov_arena_array(d->arena, 1, sizeof *c);
  cov_model_arg *args = cov_arena_array(d->arena, 2, sizeof *args);
  d->in_names = cov_arena_array(d->arena, 2, sizeof *d->in_names);
  d->in_shapes = cov_arena_array(d->arena, 2, sizeof *d->in_shapes);
  d->in_ids = cov_arena_array(d->arena, 2, sizeof *d->in_ids);
  if (!c || !args || !d->in_names || !d->in_shapes || !d->in_ids) return oom(g, n);
  memset(c, 0, sizeof *c);
  memset(args, 0, 2 * sizeof *args);
  c->node = n->name;
  c->codelet = "gather_axis";
  args[0] = (cov_model_arg){konst ? COV_MODEL_ARG_CONST : COV_MODEL_ARG_EXTERNAL, konst ? -1 : 0, x->name,
                            {.dtype = x->dtype, .rank = 3, .data = konst ? n->in[0]->data : NULL}};
  args[0].t.shape[0] = A, args[0].t.shape[1] = x->dims[ax], args[0].t.shape[2] = B;
  args[1] = (cov_model_arg){COV_MODEL_ARG_EXTERNAL, n_in - 1, ids->name, {.dtype = ids->dtype, .rank = 1}};
  args[1].t.shape[0] = nids;
  c->args = args, c->n_args = 2;
  c->out = (cov_tensor){.dtype = x->dtype, .rank = 3};
  c->out.shape[0] = A, c->out.shape[1] = nids, c->out.shape[2] = B;
  d->calls = c, d->n_calls = d->cap_calls = 1;
  const graph_value *ins[2] = {x, ids};
  for (int k = 0; k < n_in; k++) {
    const graph_value *v = ins[konst ? 1 : k];
    d->in_names[k] = v->name, d->in_ids[k] = v->id;
    d->in_shapes[k] = (cov_tensor){.dtype = v->dtype, .rank = v->rank};
    for (int i = 0; i < v->rank; i++) d->in_shapes[k].shape[i] = v->dims[i];
  }
  d->n_in = (size_t)n_in;
  d->out_name = n->out[0]->name, d->out_id = n->out[0]->id;
  d->out = (cov_tensor){.dtype = x->dtype, .rank = r - 1 + ids->rank};
  int o = 0;
  for (int i = 0; i < ax; i++) d->out.shape[o++] = x->dims[i];
  for (int i = 0; i < ids->rank; i++) d->out.shape[o++] = ids->dims[i];
  for (int i = ax + 1; i < r; i++) d->out.shape[o++] = x->dims[i];
  return NULL;
}

/* The Cast's one call: cast_<to>(x flattened to [N]; bool read as u8) ->
 * [N], the node's output of x's shape. */
static cov_status cast_call(const graph *g, const graph_node *n, const graph_value *x, cov_model_group *d) {
  int64_t numel = graph_numel(x);
  if (numel < 0) return graph_node_error(g, n, COV_UNSUPPORTED, "input '%s' has no static shape", x->name);
  cov_dtype to = n->out[0]->dtype;
  cov_model_group_call *c = cov_arena_array(d->arena, 1, sizeof *c);
  cov_model_arg *arg = cov_arena_array(d->arena, 1, sizeof *arg);
  d->in_names = cov_arena_array(d->arena, 1, sizeof *d->in_names);
  d->in_shapes = cov_arena_array(d->arena, 1, sizeof *d->in_shapes);
  d->in_ids = cov_arena_array(d->arena, 1, sizeof *d->in_ids);
  if (!c || !arg || !d->in_names || !d->in_shapes || !d->in_ids) return oom(g, n);
  memset(c, 0, sizeof *c);
  c->node = n->name;
  c->codelet = cast_codelet(to);
  /* bool as u8 (the same bytes): the codelets' type parameter admits numbers only */
  cov_dtype from = x->dtype == COV_BOOL ? COV_U8 : x->dtype;
  *arg = (cov_model_arg){COV_MODEL_ARG_EXTERNAL, 0, x->name, {.dtype = from, .rank = 1}};
  arg->t.shape[0] = numel;
  c->args = arg, c->n_args = 1;
  c->out = (cov_tensor){.dtype = to, .rank = 1};
  c->out.shape[0] = numel;
  d->calls = c, d->n_calls = d->cap_calls = 1;
  d->in_names[0] = x->name, d->in_ids[0] = x->id, d->n_in = 1;
  d->in_shapes[0] = (cov_tensor){.dtype = x->dtype, .rank = x->rank};
  d->out_name = n->out[0]->name, d->out_id = n->out[0]->id;
  d->out = (cov_tensor){.dtype = to, .rank = x->rank};
  for (int i = 0; i < x->rank; i++) d->in_shapes[0].shape[i] = d->out.shape[i] = x->dims[i];
  return NULL;
}

/* The gather's one call: gather_rows(x: the table [V, D], ids flattened to
 * [N]) -> [N, D], the node's output [ids dims..., D]. */
static cov_status gather_call(const graph *g, const graph_node *n, const graph_value *ids, cov_model_group *d) {
  const graph_value *x = n->in[0];
  int64_t nids = graph_numel(ids);
  if (nids < 0 || ids->rank + 1 > COV_MAX_RANK)
    return graph_node_error(g, n, COV_UNSUPPORTED, "indices '%s' have no static shape", ids->name);
  cov_model_group_call *c = cov_arena_array(d->arena, 1, sizeof *c);
  cov_model_arg *args = cov_arena_array(d->arena, 2, sizeof *args);
  d->in_names = cov_arena_array(d->arena, 1, sizeof *d->in_names);
  d->in_shapes = cov_arena_array(d->arena, 1, sizeof *d->in_shapes);
  d->in_ids = cov_arena_array(d->arena, 1, sizeof *d->in_ids);
  if (!c || !args || !d->in_names || !d->in_shapes || !d->in_ids) return oom(g, n);
  memset(c, 0, sizeof *c);
  memset(args, 0, 2 * sizeof *args);
  c->node = n->name;
  c->codelet = "gather_rows";
  args[0] = (cov_model_arg){COV_MODEL_ARG_CONST, -1, x->name, {.dtype = x->dtype, .rank = 2, .data = x->data}};
  args[0].t.shape[0] = x->dims[0], args[0].t.shape[1] = x->dims[1];
  args[1] = (cov_model_arg){COV_MODEL_ARG_EXTERNAL, 0, ids->name, {.dtype = ids->dtype, .rank = 1}};
  args[1].t.shape[0] = nids;
  c->args = args, c->n_args = 2;
  c->out = (cov_tensor){.dtype = x->dtype, .rank = 2};
  c->out.shape[0] = nids, c->out.shape[1] = x->dims[1];
  d->calls = c, d->n_calls = d->cap_calls = 1;
  d->in_names[0] = ids->name, d->in_ids[0] = ids->id, d->n_in = 1;
  d->in_shapes[0] = (cov_tensor){.dtype = ids->dtype, .rank = ids->rank};
  for (int i = 0; i < ids->rank; i++) d->in_shapes[0].shape[i] = ids->dims[i];
  d->out_name = n->out[0]->name, d->out_id = n->out[0]->id;
  d->out = (cov_tensor){.dtype = x->dtype, .rank = ids->rank + 1};
  for (int i = 0; i < ids->rank; i++) d->out.shape[i] = ids->dims[i];
  d->out.shape[ids->rank] = x->dims[1];
  return NULL;
}

cov_status graph_group_describe_gather(const graph *g, size_t gi, const graph_value *run_vals,
                                       cov_model_group **out) {
  *out = NULL;
  const graph_node *n = gather_node(g, gi), *cast = n ? NULL : cast_node(g, gi);
  const graph_node *axg = n || cast ? NULL : axis_gather_node(g, gi);
  if (!n && !cast && !axg)
    return cov_error(COV_UNSUPPORTED, COV_AT_CALL("graph_group_describe_gather"),
                     "layer group %zu is neither a Gather at run-time indices nor a Cast of run-time values", gi);
  if (!n) n = cast ? cast : axg;
  cov_model_group *d = calloc(1, sizeof *d);
  cov_arena *a = cov_arena_create();
  if (!d || !a) {
    free(d);
    cov_arena_destroy(a);
    return oom(g, n);
  }
  d->arena = a;
  d->index = gi;
  d->name = n->name;
  d->kind = g->groups[gi].kind;
  d->lib = g->lib;
  const graph_value *v0 = run_vals ? &run_vals[n->in[0]->id] : n->in[0];
  const graph_value *v1 = n->n_in < 2 ? NULL : run_vals ? &run_vals[n->in[1]->id] : n->in[1];
  const char *need = cast ? cast_codelet(n->out[0]->dtype) : axg ? "gather_axis" : "gather_rows";
  cov_status st = !g->lib || !cov_codelet_lib_find(g->lib, need)
                      ? graph_node_error(g, n, COV_NOT_FOUND, "needs codelet '%s', which the codelet library does not have", need)
                  : cast ? cast_call(g, n, v0, d)
                  : axg  ? axis_gather_call(g, n, v0, v1, d)
                         : gather_call(g, n, v1, d);
  if (st) {
    cov_model_group_free(d);
    return st;
  }
  *out = d;
  return NULL;
}

int graph_group_input_id(const cov_model_group *d, size_t k) {
  return k < d->n_in ? d->in_ids[k] : -1;
}
int graph_group_output_id(const cov_model_group *d) { return d->out_id; }
const void *graph_group_input_data(const cov_model_group *d, size_t k) {
  return k < d->n_in && d->in_data ? d->in_data[k] : NULL;
}

void cov_model_group_free(cov_model_group *d) {
  if (!d) return;
  cov_arena_destroy(d->arena);
  free(d);
}

size_t cov_model_group_index(const cov_model_group *d) { return d->index; }
const char *cov_model_group_name(const cov_model_group *d) { return d->name; }
const char *cov_model_group_kind(const cov_model_group *d) { return d->kind; }
const cov_codelet_lib *cov_model_group_codelets(const cov_model_group *d) { return d->lib; }
size_t cov_model_group_num_calls(const cov_model_group *d) { return d->n_calls; }
const cov_model_group_call *cov_model_group_call_at(const cov_model_group *d, size_t c) {
  return c < d->n_calls ? &d->calls[c] : NULL;
}
size_t cov_model_group_num_inputs(const cov_model_group *d) { return d->n_in; }
const char *cov_model_group_input(const cov_model_group *d, size_t k, cov_tensor *shape_only) {
  if (k >= d->n_in) return NULL;
  if (shape_only) *shape_only = d->in_shapes[k];
  return d->in_names[k];
}
const char *cov_model_group_output(const cov_model_group *d, cov_tensor *shape_only) {
  if (shape_only) *shape_only = d->out;
  return d->out_name;
}
