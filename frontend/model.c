/* frontend/model.c: the public model API (covenant/model.h).
 *
 * Loading runs the frontend's pipeline in order: read (onnx_reader.c), shape
 * inference with constant folding (graph_infer.c, graph_fold.c), Identity and
 * Dropout elimination, BatchNormalization folding, dead-code removal, fusion
 * into layer groups bound to codelets, and the verifier. Every stage that
 * finds problems returns all of them. */
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/loc.h"
#include "covenant/model.h"
#include "frontend/graph.h"
#include "frontend/onnx_internal.h"

struct cov_model {
  graph *g;
  cov_codelet_lib *owned_lib;
};

static unsigned char *runtime_values(const graph *g);

/* graph.runtime and graph.read_outside, in one pass over the nodes each. */
static cov_status index_values(graph *g) {
  unsigned char *rt = runtime_values(g);
  size_t nv = g->n_values ? g->n_values : 1;
  g->runtime = rt ? cov_arena_alloc(g->arena, nv) : NULL;
  g->read_outside = g->runtime ? cov_arena_alloc(g->arena, nv) : NULL;
  if (!g->read_outside) {
    free(rt);
    cov_loc loc = {.file = g->file};
    return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
  }
  memcpy(g->runtime, rt, nv);
  free(rt);
  memset(g->read_outside, 0, nv);
  for (size_t q = 0; q < g->n_outputs; q++)
    if (g->outputs[q]) g->read_outside[g->outputs[q]->id] = 1;
  for (size_t q = 0; q < g->n_nodes; q++) {
    const graph_node *r = g->nodes[q];
    for (int s = 0; s < r->n_in; s++) {
      const graph_value *v = r->in[s];
      if (v && v->producer && v->producer->group != r->group) g->read_outside[v->id] = 1;
    }
  }
  return NULL;
}

static cov_status prepare(graph *g, const cov_model_options *opts) {
  COV_RETURN_IF_ERROR(graph_fuse_qdq(g));
  COV_RETURN_IF_ERROR(graph_infer(g));
  COV_RETURN_IF_ERROR(graph_eliminate_identities(g));
  if (!opts || !opts->no_fold) COV_RETURN_IF_ERROR(graph_fold_batchnorm(g));
  COV_RETURN_IF_ERROR(graph_prepare_quant(g));
  graph_eliminate_dead(g);
  COV_RETURN_IF_ERROR(graph_fuse(g, opts && opts->no_fuse));
  cov_status st = graph_verify(g);
  if (st) return cov_status_annotate(st, "graph verifier (a bug in covenant): ");
  return index_values(g);
}

cov_status cov_model_load_buffer(const void *data, size_t size, const char *name,
                                 const char *base_dir, const cov_model_options *opts,
                                 cov_model **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_load_buffer"), "NULL out");
  *out = NULL;
  if (!data && size)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_load_buffer"), "NULL data");
  cov_loc loc = {.file = name ? name : "<model>"};
  if (size > COV_MODEL_MAX_FILE_BYTES)
    return cov_error(COV_OUT_OF_RANGE, &loc, "model is larger than the limit of %zu bytes",
                     COV_MODEL_MAX_FILE_BYTES);
  cov_model *m = calloc(1, sizeof *m);
  graph *g = m ? graph_create(name, base_dir) : NULL;
  if (!g) {
    free(m);
    return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
  }
  m->g = g;
  g->no_fold = opts && opts->no_fold;
  g->max_memory = opts && opts->max_memory ? opts->max_memory : COV_DEFAULT_MAX_MEMORY;
  if (g->max_memory > COV_TENSOR_MAX_BYTES) g->max_memory = COV_TENSOR_MAX_BYTES;
  cov_status st = NULL;
  if (opts && opts->codelets) {
    g->lib = opts->codelets;
  } else {
    st = cov_codelet_lib_load(NULL, &m->owned_lib);
    if (st) st = cov_status_annotate(st, "loading the shipped codelets: ");
    g->lib = m->owned_lib;
  }
  if (!st) st = onnx_read_graph(data, size, g);
  if (!st) st = prepare(g, opts);
  if (st) {
    cov_model_free(m);
    return st;
  }
  *out = m;
  return NULL;
}

cov_status cov_model_load_file(const char *path, const cov_model_options *opts, cov_model **out) {
  if (!out || !path) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_load_file"), "NULL");
  *out = NULL;
  char *data = NULL;
  size_t size = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, COV_MODEL_MAX_FILE_BYTES, &data, &size));
  /* External data are resolved against the model's own folder. */
  char *dir = strdup(path);
  if (!dir) {
    free(data);
    cov_loc loc = {.file = path};
    return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
  }
  char *slash = strrchr(dir, '/');
  if (!slash)
    strcpy(dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  cov_status st = cov_model_load_buffer(data, size, path, dir, opts, out);
  free(dir);
  free(data);
  return st;
}

void cov_model_free(cov_model *m) {
  if (!m) return;
  graph_destroy(m->g);
  cov_codelet_lib_free(m->owned_lib);
  free(m);
}

size_t cov_model_num_inputs(const cov_model *m) { return m ? m->g->n_inputs : 0; }
size_t cov_model_num_outputs(const cov_model *m) { return m ? m->g->n_outputs : 0; }
size_t cov_model_num_groups(const cov_model *m) { return m ? m->g->n_groups : 0; }

const char *cov_model_input_name(const cov_model *m, size_t i) {
  return m && i < m->g->n_inputs ? m->g->inputs[i]->name : NULL;
}

const char *cov_model_output_name(const cov_model *m, size_t i) {
  return m && i < m->g->n_outputs ? m->g->output_names[i] : NULL;
}

bool cov_model_input_has_default(const cov_model *m, size_t i) {
  if (!m || i >= m->g->n_inputs) return false;
  const graph_value *d = m->g->inputs[i]->default_value;
  return d && d->data;
}

int cov_model_find_input(const cov_model *m, const char *name) {
  if (!m || !name) return -1;
  for (size_t i = 0; i < m->g->n_inputs; i++)
    if (strcmp(m->g->inputs[i]->name, name) == 0) return (int)i;
  return -1;
}

/* A graph input's or output's declared dtype and shape (unknown dims -1). */
static cov_status value_info(const graph_value *v, cov_dtype *dtype, int *rank, int64_t shape[COV_MAX_RANK]) {
  if (dtype) *dtype = v->dtype;
  if (rank) *rank = v->rank;
  if (shape)
    for (int k = 0; k < COV_MAX_RANK; k++) shape[k] = k < v->rank ? v->dims[k] : -1;
  return NULL;
}

cov_status cov_model_input_info(const cov_model *m, size_t i, cov_dtype *dtype, int *rank,
                                int64_t shape[COV_MAX_RANK]) {
  if (!m || i >= m->g->n_inputs)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_input_info"), "no input %zu", i);
  return value_info(m->g->inputs[i], dtype, rank, shape);
}

cov_status cov_model_output_info(const cov_model *m, size_t i, cov_dtype *dtype, int *rank,
                                 int64_t shape[COV_MAX_RANK]) {
  if (!m || i >= m->g->n_outputs)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_output_info"), "no output %zu", i);
  return value_info(m->g->outputs[i], dtype, rank, shape);
}

cov_status cov_model_print_summary(const cov_model *m, FILE *out) {
  if (!m || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_print_summary"), "NULL");
  return graph_print_summary(m->g, out);
}

cov_status cov_model_print_graph(const cov_model *m, FILE *out) {
  if (!m || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_print_graph"), "NULL");
  return graph_print(m->g, out);
}

cov_status cov_model_run_ref(const cov_model *m, const cov_tensor *inputs, size_t n_inputs,
                             cov_tensor *outputs, size_t n_outputs) {
  if (!m || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_run_ref"), "NULL");
  return graph_run(m->g, inputs, n_inputs, outputs, n_outputs);
}

void cov_model_print_supported_ops(FILE *out) { graph_print_supported_ops(out); }

cov_status cov_model_run_with(const cov_model *m, const cov_tensor *inputs, size_t n_inputs,
                              cov_tensor *outputs, size_t n_outputs, cov_model_call_fn fn,
                              void *user) {
  if (!m || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_run_with"), "NULL");
  return graph_run_hooked(m->g, inputs, n_inputs, outputs, n_outputs, fn, user);
}

cov_status cov_model_run_groups(const cov_model *m, const cov_tensor *inputs, size_t n_inputs,
                                cov_tensor *outputs, size_t n_outputs, cov_model_group_fn group,
                                cov_model_call_fn call, void *user) {
  if (!m || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_run_groups"), "NULL");
  return graph_run_groups(m->g, inputs, n_inputs, outputs, n_outputs, group, call, user);
}

cov_status cov_model_group_describe(const cov_model *m, size_t i, cov_model_group **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_group_describe"), "NULL");
  *out = NULL;
  if (!m) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_group_describe"), "NULL");
  return graph_group_describe(m->g, i, NULL, out);
}

int cov_model_find_node_group(const cov_model *m, const char *name) {
  if (!m || !name) return -1;
  for (size_t i = 0; i < m->g->n_nodes; i++)
    if (strcmp(m->g->nodes[i]->name, name) == 0) return m->g->nodes[i]->group;
  return -1;
}

static int by_id(const void *a, const void *b) {
  int x = (*(const graph_value *const *)a)->id, y = (*(const graph_value *const *)b)->id;
  return (x > y) - (x < y);
}

/* The values group i reads from outside it, each once however many of its
 * nodes read it, sorted by id (so the work is in the group's size). *n_out
 * is their number; NULL when out of memory. */
static const graph_value **group_inputs(const graph *g, size_t i, size_t *n_out) {
  const graph_group *grp = &g->groups[i];
  size_t cap = 1, n = 0;
  for (int k = 0; k < grp->n_nodes; k++) cap += (size_t)grp->nodes[k]->n_in;
  const graph_value **vs = malloc(cap * sizeof *vs);
  if (!vs) return NULL;
  for (int k = 0; k < grp->n_nodes; k++)
    for (int s = 0; s < grp->nodes[k]->n_in; s++) {
      const graph_value *v = grp->nodes[k]->in[s];
      if (v && !(v->producer && v->producer->group == (int)i)) vs[n++] = v;
    }
  qsort(vs, n, sizeof *vs, by_id);
  size_t u = 0;
  for (size_t k = 0; k < n; k++)
    if (u == 0 || vs[u - 1] != vs[k]) vs[u++] = vs[k];
  *n_out = u;
  return vs;
}

/* Whether each value depends on the model's run-time inputs (not only on
 * constants and shapes): forward over the nodes, repeated until nothing
 * changes, so the result does not depend on the node order (in
 * topological order, the second pass confirms the first). */
static unsigned char *runtime_values(const graph *g) {
  unsigned char *rt = calloc(g->n_values ? g->n_values : 1, 1);
  if (!rt) return NULL;
  for (size_t i = 0; i < g->n_inputs; i++)
    if (!g->inputs[i]->data) rt[g->inputs[i]->id] = 1;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t q = 0; q < g->n_nodes; q++) {
      const graph_node *n = g->nodes[q];
      if (n->dead || !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size")) continue;
      int any = 0;
      for (int s = 0; s < n->n_in && !any; s++) any = n->in[s] && rt[n->in[s]->id];
      for (int o = 0; o < n->n_out && any; o++)
        if (n->out[o] && !n->out[o]->data && !rt[n->out[o]->id]) rt[n->out[o]->id] = 1, changed = 1;
    }
  }
  return rt;
}

/* Every value of `from` is exactly a value of `to` (and back). */
static int exact_widening(cov_dtype from, cov_dtype to) {
  if (from == to) return 1;
  if (to == COV_F64) return from == COV_F32 || from == COV_F16 || from == COV_BF16;
  return to == COV_F32 && (from == COV_F16 || from == COV_BF16);
}

/* Why layout node n does not only move run-time elements (NULL: it does). */
static const char *node_alters(const graph_node *n, const unsigned char *rt) {
  const graph_value *x = n->n_in > 0 ? n->in[0] : NULL;
  int x_rt = x && rt[x->id];
  if (!strcmp(n->op_type, "Cast") || !strcmp(n->op_type, "CastLike")) {
    if (x_rt && n->out[0] && !exact_widening(x->dtype, n->out[0]->dtype))
      return "it converts run-time values to another element type (not an exact widening)";
    return NULL;
  }
  if (!strcmp(n->op_type, "TopK") && x_rt) return "it selects run-time values by comparing them";
  if (!strncmp(n->op_type, "Scatter", 7)) {
    const graph_attr *a = graph_attr_find(n, "reduction");
    if (a && a->type == GA_STRING && a->s && strcmp(a->s, "none") != 0)
      return "it combines run-time values (a Scatter with a reduction)";
  }
  for (int s = 0; s < n->n_in; s++) {
    const graph_value *v = n->in[s];
    if (v && rt[v->id] && !cov_dtype_is_float(v->dtype))
      return "where it reads or writes depends on run-time integers";
  }
  return NULL;
}

cov_status cov_model_group_get_info(const cov_model *m, size_t i, cov_model_group_info *out) {
  if (!m || !out || i >= m->g->n_groups)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_group_get_info"), "no group %zu", i);
  const graph *g = m->g;
  const graph_group *grp = &g->groups[i];
  memset(out, 0, sizeof *out);
  out->kind = grp->kind;
  out->layout = grp->layout;
  out->node = grp->n_nodes ? grp->nodes[0]->name : "";
  if (grp->layout)
    for (int k = 0; k < grp->n_nodes && !out->alters; k++)
      out->alters = node_alters(grp->nodes[k], g->runtime);
  size_t n_in;
  const graph_value **ins = group_inputs(g, i, &n_in);
  if (!ins) return cov_error(COV_OUT_OF_MEMORY, COV_AT_CALL("cov_model_group_get_info"), "out of memory");
  for (size_t k = 0; k < n_in; k++) {
    int64_t e = graph_numel(ins[k]);
    if (e < 0) continue;
    if (ins[k]->data) out->const_elems += e;
    else out->in_elems += e;
  }
  free(ins);
  for (int k = 0; k < grp->n_nodes; k++) {
    const graph_node *n = grp->nodes[k];
    int64_t mk = graph_node_macs(n);
    out->macs = (out->macs < 0 || mk < 0) ? -1 : out->macs + mk;
    for (int o = 0; o < n->n_out; o++) {
      const graph_value *v = n->out[o];
      if (v && g->read_outside[v->id] && graph_numel(v) > 0) out->out_elems += graph_numel(v);
    }
  }
  return NULL;
}
