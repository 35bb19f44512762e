/* frontend/ops/graph_batchnorm.c: BatchNormalization, lowered onto the
 * codelets of codelets/norm.cdl.
 *
 * Inference (training_mode 0, every opset): y = batchnorm(x, scale, B,
 * input_mean, input_var) over an [N, C, spatial, 1] view.
 *
 * Training mode (opset 14 on, training_mode 1) is deterministic: the
 * statistics are the batch's own, over N and the spatial dims of an
 * [N, C, spatial] view:
 *   y = batchnorm_train(x, scale, B)
 * and the optional outputs
 *   running_mean = running_mean(x, input_mean) = input_mean * momentum + mean * (1 - momentum)
 *   running_var = running_var(x, input_var) (the biased variance, likewise).
 * Each codelet computes the batch's statistics itself, so every call reads
 * only the node's inputs (a Y-only node is one call, as in inference).
 * Opset 15 lets scale and B (T1) and the statistics (T2) have another float
 * type than X (T): they are converted to T for the calls, and the running
 * statistics back to T2.
 *
 * The outputs mean, var, saved_mean and saved_var of opsets before 14
 * (training mode chosen by asking for them) are refused. */
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

typedef struct bn_params {
  bool training;
  float eps, momentum;
} bn_params;

static cov_status bn_outputs(const graph *g, const graph_node *n, bool training) {
  for (int i = 1; i < n->n_out; i++) {
    if (!n->out[i]) continue;
    if (n->opset < 14)
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "output %d: the mean, var, saved_mean and saved_var outputs of "
                              "opsets before 14 (training mode) are not supported; opset 14 on "
                              "has training_mode",
                              i);
    if (i > 2)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "has %d outputs; from opset 14 on it has at most 3 (Y, "
                              "running_mean, running_var)",
                              n->n_out);
    if (!training)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "output %d (%s) exists only in training mode (training_mode=1)", i,
                              i == 1 ? "running_mean" : "running_var");
  }
  return NULL;
}

static cov_status bn_check(const graph *g, const graph_node *n, graph_value *const *in,
                           bn_params *p) {
  COV_RETURN_IF_ERROR(graph_check_float(g, n, in[0]));
  int64_t training = 0;
  if (n->opset >= 14) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "training_mode", 0, &training));
  if (training != 0 && training != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "training_mode is %lld; it must be 0 or 1",
                            (long long)training);
  p->training = training == 1;
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "epsilon", 1e-5f, &p->eps));
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "momentum", 0.9f, &p->momentum));
  int64_t spatial = 1;
  if (n->opset < 9) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "spatial", 1, &spatial));
  if (!spatial)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "spatial=0 (statistics per activation, opsets 7 and 8) is not "
                            "supported");
  COV_RETURN_IF_ERROR(bn_outputs(g, n, p->training));
  if (in[0]->rank >= 0 && in[0]->rank < 2)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input must have rank >= 2 ([N, C, ...])");
  for (int i = 1; i < 5; i++) {
    if (!in[i]) return graph_node_error(g, n, COV_INVALID_INPUT, "input %d is missing", i);
    COV_RETURN_IF_ERROR(graph_check_float(g, n, in[i]));
    if (in[i]->rank != 1 || (in[0]->rank >= 0 && in[0]->dims[1] >= 0 && in[i]->dims[0] >= 0 &&
                             in[i]->dims[0] != in[0]->dims[1]))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "'%s' must be 1-D with one value per channel", in[i]->name);
  }
  return NULL;
}

cov_status graph_infer_batchnorm(const graph *g, const graph_node *n, graph_value *const *in,
                                 graph_value *const *out) {
  bn_params p;
  COV_RETURN_IF_ERROR(bn_check(g, n, in, &p));
  graph_copy_type(out[0], in[0]);
  for (int i = 1; i < 3 && i < n->n_out; i++)
    if (out[i]) graph_copy_type(out[i], in[2 + i]); /* running_mean, running_var: T2[C] */
  return NULL;
}

/* The parameters scale, B, mean, var as tensors of X's dtype t (converted
 * copies in casts[] where they differ; the caller frees them). */
static cov_status bn_params_as(graph_exec *x, const graph_node *n, graph_value *const *in,
                               cov_dtype t, cov_tensor p[5], graph_value casts[5]) {
  for (int i = 1; i < 5; i++) {
    if (in[i]->dtype == t) {
      p[i] = graph_view(in[i]);
      continue;
    }
    COV_RETURN_IF_ERROR(graph_lower_cast_copy(x->g, n, in[i], t, &casts[i]));
    p[i] = graph_view(&casts[i]);
  }
  return NULL;
}

/* out = codelet(x3, run) (running_mean or running_var) in X's dtype,
 * stored as out's dtype. */
static cov_status bn_running(graph_exec *x, const graph_node *n, const char *codelet,
                             float momentum, const cov_tensor *x3, const cov_tensor *run,
                             graph_value *out) {
  cov_tensor in[2] = {*x3, *run}, y = {0};
  cov_attr a = graph_lower_attr_f("momentum", momentum);
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, codelet, &a, 1, in, 2, &y, 1));
  if (y.dtype == out->dtype) return graph_lower_adopt(x, n, &y, out);
  graph_value tmp = {.name = out->name, .dtype = y.dtype, .rank = 1, .dims = {y.shape[0]},
                     .data = y.data};
  graph_value conv = {0};
  cov_status st = graph_lower_cast_copy(x->g, n, &tmp, out->dtype, &conv);
  cov_tensor_release(&y);
  if (!st) out->data = conv.data; /* the converted copy becomes the output */
  return st;
}

/* Training mode: y from the batch's statistics, then the running ones. */
static cov_status bn_train(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out, const bn_params *bp, cov_tensor p[5]) {
  const graph_value *v = in[0];
  int64_t sp = 1;
  for (int i = 2; i < v->rank; i++) sp *= v->dims[i];
  cov_tensor x3 = graph_view_as(v, 3, (int64_t[]){v->dims[0], v->dims[1], sp});
  cov_tensor t[3] = {x3, p[1], p[2]}, y = {0};
  cov_attr a = graph_lower_attr_f("epsilon", bp->eps);
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "batchnorm_train", &a, 1, t, 3, &y, 1));
  COV_RETURN_IF_ERROR(graph_lower_adopt(x, n, &y, out[0]));
  if (n->n_out > 1 && out[1])
    COV_RETURN_IF_ERROR(bn_running(x, n, "running_mean", bp->momentum, &x3, &p[3], out[1]));
  if (n->n_out > 2 && out[2])
    COV_RETURN_IF_ERROR(bn_running(x, n, "running_var", bp->momentum, &x3, &p[4], out[2]));
  return NULL;
}

cov_status graph_exec_batchnorm(graph_exec *x, const graph_node *n, graph_value *const *in,
                                graph_value *const *out) {
  bn_params bp;
  COV_RETURN_IF_ERROR(bn_check(x->g, n, in, &bp));
  const graph_value *v = in[0];
  int64_t sp = 1;
  for (int i = 2; i < v->rank; i++) sp *= v->dims[i];
  cov_tensor p[5];
  graph_value casts[5] = {{0}};
  cov_status st = bn_params_as(x, n, in, v->dtype, p, casts);
  if (!st && bp.training) {
    st = bn_train(x, n, in, out, &bp, p);
  } else if (!st) {
    p[0] = graph_view_as(v, 4, (int64_t[]){v->dims[0], v->dims[1], sp, 1});
    cov_tensor y = {0};
    cov_attr a = graph_lower_attr_f("epsilon", bp.eps);
    st = graph_call_codelet(x, n, "batchnorm", &a, 1, p, 5, &y, 1);
    if (!st) st = graph_lower_adopt(x, n, &y, out[0]);
  }
  for (int i = 1; i < 5; i++) free(casts[i].data);
  return st;
}

/* Training mode's chain where training_mode is set or the running
 * statistics are asked for (only training mode gives them). */
int graph_codelets_batchnorm(const graph_node *n, const char **names, int max) {
  bool training = (n->n_out > 1 && n->out[1]) || (n->n_out > 2 && n->out[2]);
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, "training_mode") == 0) training |= n->attrs[i].i != 0;
  if (!training) return graph_lower_single("batchnorm", names, max);
  static const char *const chain[] = {"batchnorm_train", "running_mean", "running_var"};
  int k = 0;
  for (int i = 0; i < 3 && k < max; i++)
    if (i == 0 || (n->n_out > i && n->out[i])) names[k++] = chain[i];
  return k;
}
