/* frontend/model.c: the public model API (covenant/model.h).
 *
 * Loading runs the frontend's pipeline in order: read (onnx_reader.c), shape
 * inference with constant folding (graph_infer.c, graph_fold.c), Identity and
 * Dropout elimination, BatchNormalization folding, per-channel constant
 * scales and offsets folded into the Conv, MatMul or Gemm before them
 * (graph_scalefold.c), dead-code removal, fusion into layer groups bound
 * to codelets, and the verifier. Every stage that
 * finds problems returns all of them. */
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/loc.h"
#include "covenant/model.h"
#include "frontend/graph.h"
#include "frontend/onnx/onnx_internal.h"

struct cov_model {
  graph *g;
  cov_codelet_lib *owned_lib;
};

const graph *graph_of_model(const cov_model *m) { return m ? m->g : NULL; }

cov_status graph_prepare(graph *g, bool no_fold, bool no_fuse) {
  COV_RETURN_IF_ERROR(graph_fuse_qdq(g));
  COV_RETURN_IF_ERROR(graph_infer(g));
  COV_RETURN_IF_ERROR(graph_expand_rnn(g));
  if (g->compute_f32) COV_RETURN_IF_ERROR(graph_widen_16(g));
  COV_RETURN_IF_ERROR(graph_eliminate_identities(g));
  if (!no_fold) COV_RETURN_IF_ERROR(graph_fold_batchnorm(g));
  if (!no_fold) COV_RETURN_IF_ERROR(graph_fold_channel_scale(g));
  COV_RETURN_IF_ERROR(graph_prepare_quant(g));
  graph_eliminate_dead(g);
  COV_RETURN_IF_ERROR(graph_fuse(g, no_fuse));
  cov_status st = graph_verify(g);
  if (st) return cov_status_annotate(st, "graph verifier (a bug in covenant): ");
  return graph_summarize_groups(g);
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
  g->compute_f32 = opts && opts->compute_f32;
  g->rnn_cells = opts && opts->recurrent_cells;
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
  if (!st && opts && opts->n_shapes) st = graph_bind_shapes(g, opts->shapes, opts->n_shapes);
  if (!st && opts && opts->rebatch > 0) st = graph_rebatch(g, opts->rebatch);
  if (!st) st = graph_prepare(g, opts && opts->no_fold, opts && opts->no_fuse);
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

cov_dtype cov_model_io_dtype(const cov_model *m, int output, size_t i) {
  if (!m || i >= (output ? m->g->n_outputs : m->g->n_inputs)) return COV_DTYPE_INVALID;
  if (output) return m->g->output_io_dtypes ? m->g->output_io_dtypes[i] : m->g->outputs[i]->dtype;
  const graph_value *v = m->g->inputs[i];
  return v->io_dtype != COV_DTYPE_INVALID ? v->io_dtype : v->dtype;
}

int cov_model_input_range(const cov_model *m, size_t i, int64_t *lo, int64_t *hi) {
  if (!m || i >= m->g->n_inputs || !lo || !hi) return 0;
  return graph_input_range(m->g, m->g->inputs[i], lo, hi);
}

unsigned cov_model_input_symbolic(const cov_model *m, size_t i) {
  return m && i < m->g->n_inputs ? m->g->inputs[i]->symbolic : 0;
}

bool cov_model_unrolls_recurrence(const cov_model *m) { return m && m->g->unrolled_rnn; }

cov_status cov_model_shape_parse(char *text, const char *what, cov_model_shape *out) {
  memset(out, 0, sizeof *out);
  cov_loc loc = {.path = what};
  char *eq = text ? strchr(text, '=') : NULL;
  if (!eq || eq == text)
    return cov_error(COV_INVALID_ARGUMENT, &loc, "'%s' is not NAME=DIMS (e.g. input=1x3x224x224)", text ? text : "");
  *eq = '\0';
  out->name = text;
  const char *p = eq + 1;
  while (*p) {
    if (out->rank == COV_MAX_RANK)
      return cov_error(COV_INVALID_ARGUMENT, &loc, "'%s': more than %d dims", eq + 1, COV_MAX_RANK);
    int64_t v = 0;
    const char *d0 = p;
    while (*p >= '0' && *p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return cov_error(COV_INVALID_ARGUMENT, &loc, "'%s': a dim is too large", eq + 1);
      v = v * 10 + (*p++ - '0');
    }
    if (p == d0 || v < 1 || (*p && *p != 'x' && *p != ',') || ((*p == 'x' || *p == ',') && !p[1]))
      return cov_error(COV_INVALID_ARGUMENT, &loc, "'%s': dims are integers >= 1 separated by 'x' or ',' (e.g. 3x224x224)",
                       eq + 1);
    out->dims[out->rank++] = v;
    if (*p) p++;
  }
  return NULL;
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

cov_status cov_model_run_ref_values(const cov_model *m, const cov_tensor *inputs,
                                    const cov_sequence *const *seq_inputs, size_t n_inputs,
                                    cov_tensor *outputs, cov_sequence **seq_outputs, size_t n_outputs) {
  if (!m || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_run_ref_values"), "NULL");
  graph_run_io io = {inputs, seq_inputs, n_inputs, outputs, seq_outputs, n_outputs, false, NULL, NULL, false};
  return graph_run_values(m->g, &io, NULL, NULL, NULL);
}

cov_value_kind cov_model_io_kind(const cov_model *m, int output, size_t i) {
  if (!m || i >= (output ? m->g->n_outputs : m->g->n_inputs)) return COV_VALUE_TENSOR;
  const graph_value *v = output ? m->g->outputs[i] : m->g->inputs[i];
  return !v->seq       ? COV_VALUE_TENSOR
         : v->opt_seq ? COV_VALUE_OPTIONAL_SEQUENCE
         : v->opt     ? COV_VALUE_OPTIONAL
                      : COV_VALUE_SEQUENCE;
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

cov_status cov_model_run_groups_gathering(const cov_model *m, const cov_tensor *inputs, size_t n_inputs,
                                          cov_tensor *outputs, size_t n_outputs, cov_model_group_fn group,
                                          cov_model_call_fn call, void *user) {
  if (!m || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_run_groups_gathering"), "NULL");
  return graph_run_groups_x(m->g, inputs, n_inputs, outputs, n_outputs, group, call, user, true);
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

cov_status cov_model_group_get_info(const cov_model *m, size_t i, cov_model_group_info *out) {
  if (!m || !out || i >= m->g->n_groups)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_group_get_info"), "no group %zu", i);
  const graph_group *grp = &m->g->groups[i];
  memset(out, 0, sizeof *out);
  out->kind = grp->kind;
  out->layout = grp->layout;
  out->node = grp->n_nodes ? grp->nodes[0]->name : "";
  out->macs = grp->macs;
  out->in_elems = grp->in_elems;
  out->const_elems = grp->const_elems;
  out->out_elems = grp->out_elems;
  out->alters = grp->alters;
  return NULL;
}
