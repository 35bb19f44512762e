/* frontend/ops/graph_rnn.c: LSTM, GRU and RNN: their attributes and inputs
 * checked, and their shape rule.
 *
 * A recurrent node never runs as one operation: after inference
 * graph_rnn_expand.c unrolls it over its static sequence length into
 * ordinary nodes (MatMul, Add, the gates' activations, Mul, Slice, Gather,
 * Concat), or into one cell node per step (graph_rnn_cell.c) when the
 * model is loaded with recurrent_cells, so that every target runs it
 * through the operators it already has. Its kernel here therefore only reports that a node reached execution
 * without being unrolled, which the load pipeline never lets happen. */
#include "frontend/ops/graph_rnn.h"

#include <math.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/graph_opfns.h"

/* ---- activations ------------------------------------------------------ */

typedef struct act_def {
  const char *name;
  rnn_act_kind kind;
  int n_alpha, n_beta;
  float alpha, beta; /* defaults, as onnxruntime takes them */
} act_def;

static const act_def k_acts[] = {
    {"Relu", RNN_ACT_RELU, 0, 0, 0, 0},
    {"Tanh", RNN_ACT_TANH, 0, 0, 0, 0},
    {"Sigmoid", RNN_ACT_SIGMOID, 0, 0, 0, 0},
    {"Affine", RNN_ACT_AFFINE, 1, 1, 1.0f, 0.0f},
    {"LeakyRelu", RNN_ACT_LEAKY_RELU, 1, 0, 0.01f, 0},
    {"ThresholdedRelu", RNN_ACT_THRESHOLDED_RELU, 1, 0, 1.0f, 0},
    {"ScaledTanh", RNN_ACT_SCALED_TANH, 1, 1, 1.0f, 1.0f},
    {"HardSigmoid", RNN_ACT_HARD_SIGMOID, 1, 1, 0.2f, 0.5f},
    {"Elu", RNN_ACT_ELU, 1, 0, 1.0f, 0},
    {"Softsign", RNN_ACT_SOFTSIGN, 0, 0, 0, 0},
    {"Softplus", RNN_ACT_SOFTPLUS, 0, 0, 0, 0},
};

/* ASCII case-insensitive equality (onnxruntime lower-cases the names);
 * independent of the locale. */
static bool name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
    char y = (*b >= 'A' && *b <= 'Z') ? (char)(*b - 'A' + 'a') : *b;
    if (x != y) return false;
  }
  return *a == *b;
}

static int default_acts(rnn_kind k, rnn_act_kind *out) {
  out[0] = k == RNN_SIMPLE ? RNN_ACT_TANH : RNN_ACT_SIGMOID;
  out[1] = RNN_ACT_TANH;
  out[2] = RNN_ACT_TANH;
  return k == RNN_SIMPLE ? 1 : k == RNN_GRU ? 2 : 3;
}

/* activations, activation_alpha and activation_beta: the listed functions
 * take their alphas and betas in order from the two lists, each function
 * as many as it uses (its default when the list has run out). */
static cov_status read_acts(const graph *g, const graph_node *n, rnn_params *p) {
  rnn_act_kind defs[RNN_MAX_ACTS];
  p->n_acts = default_acts(p->kind, defs);
  const char *const *names;
  const float *alphas, *betas;
  size_t n_names, n_alpha, n_beta, ia = 0, ib = 0;
  COV_RETURN_IF_ERROR(graph_attr_strings(g, n, "activations", &names, &n_names));
  COV_RETURN_IF_ERROR(graph_attr_floats(g, n, "activation_alpha", &alphas, &n_alpha));
  COV_RETURN_IF_ERROR(graph_attr_floats(g, n, "activation_beta", &betas, &n_beta));
  size_t want = (size_t)(p->n_acts * p->dirs);
  if (names && n_names != want)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "attribute 'activations' lists %zu functions; %s with %d direction%s "
                            "takes %zu (%d per direction)",
                            n_names, n->op_type, p->dirs, p->dirs > 1 ? "s" : "", want, p->n_acts);
  for (size_t k = 0; k < want; k++) {
    const act_def *d = NULL;
    for (size_t j = 0; j < sizeof k_acts / sizeof *k_acts && !d; j++)
      if (names ? name_eq(names[k], k_acts[j].name) : k_acts[j].kind == defs[k % (size_t)p->n_acts])
        d = &k_acts[j];
    if (!d)
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "activation '%.64s' is not one the recurrent operators define "
                              "(Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                              "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                              names[k]);
    rnn_act *a = &p->acts[k / (size_t)p->n_acts][k % (size_t)p->n_acts];
    a->kind = d->kind;
    a->alpha = d->n_alpha && ia < n_alpha ? alphas[ia++] : d->alpha;
    a->beta = d->n_beta && ib < n_beta ? betas[ib++] : d->beta;
  }
  if (ia < n_alpha || ib < n_beta)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "activation_alpha has %zu values and activation_beta %zu; the "
                            "activations take %zu and %zu",
                            n_alpha, n_beta, ia, ib);
  return NULL;
}

/* ---- attributes ------------------------------------------------------- */

static cov_status read_attrs(const graph *g, const graph_node *n, rnn_params *p) {
  const char *dir;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "direction", "forward", &dir));
  p->dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  p->reverse = strcmp(dir, "reverse") == 0;
  if (p->dirs == 1 && !p->reverse && strcmp(dir, "forward") != 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "direction '%.64s' is not forward, reverse or bidirectional", dir);
  int64_t layout = 0, hidden = -1, flag = 0;
  if (n->opset >= 14) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "layout", 0, &layout));
  if (layout != 0 && layout != 1)
    return graph_node_error(g, n, COV_INVALID_INPUT, "layout %lld is not 0 or 1",
                            (long long)layout);
  p->layout = (int)layout;
  COV_RETURN_IF_ERROR(graph_attr_int(g, n, "hidden_size", -1, &hidden));
  if (graph_attr_find(n, "hidden_size") && (hidden < 1 || hidden > RNN_MAX_HIDDEN))
    return graph_node_error(g, n, COV_INVALID_INPUT, "hidden_size %lld is not in [1, %lld]",
                            (long long)hidden, (long long)RNN_MAX_HIDDEN);
  p->hidden = hidden;
  p->has_clip = graph_attr_find(n, "clip") != NULL;
  COV_RETURN_IF_ERROR(graph_attr_float(g, n, "clip", 0, &p->clip));
  if (p->has_clip && !(p->clip > 0 && isfinite(p->clip)))
    return graph_node_error(g, n, COV_INVALID_INPUT, "clip %g is not a positive number",
                            (double)p->clip);
  if (p->kind == RNN_LSTM) COV_RETURN_IF_ERROR(graph_attr_int(g, n, "input_forget", 0, &flag));
  p->input_forget = flag != 0;
  flag = 0;
  if (p->kind == RNN_GRU)
    COV_RETURN_IF_ERROR(graph_attr_int(g, n, "linear_before_reset", 0, &flag));
  p->linear_before_reset = flag != 0;
  return read_acts(g, n, p);
}

/* ---- inputs ----------------------------------------------------------- */

/* v (optional) must be `dtype` with the given rank and, where both are
 * known, these dims; `form` names them for the message. */
static cov_status check_input(const graph *g, const graph_node *n, const graph_value *v,
                              const char *what, cov_dtype dtype, int rank, const int64_t *want,
                              const char *form) {
  if (!v) return NULL;
  char buf[160], wbuf[160];
  if (v->dtype != dtype)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input %s '%s' is %s; it must be %s", what,
                            v->name, graph_type_str(v, buf, sizeof buf), cov_dtype_name(dtype));
  bool ok = v->rank < 0 || v->rank == rank;
  for (int i = 0; ok && v->rank == rank && i < rank; i++)
    ok = v->dims[i] < 0 || want[i] < 0 || v->dims[i] == want[i];
  if (ok) return NULL;
  size_t k = (size_t)snprintf(wbuf, sizeof wbuf, "[");
  for (int i = 0; i < rank && k < sizeof wbuf; i++)
    k += (size_t)snprintf(wbuf + k, sizeof wbuf - k, want[i] < 0 ? "%s?" : "%s%lld", i ? ", " : "",
                          (long long)want[i]);
  if (k < sizeof wbuf) snprintf(wbuf + k, sizeof wbuf - k, "]");
  return graph_node_error(g, n, COV_INVALID_INPUT, "input %s '%s' is %s; %s takes %s = %s", what,
                          v->name, graph_type_str(v, buf, sizeof buf), n->op_type, form, wbuf);
}

/* A dim from v (rank `rank`, dim i) where *d is still unknown. */
static void learn(int64_t *d, const graph_value *v, int rank, int i) {
  if (*d < 0 && v && v->rank == rank && v->dims[i] >= 0) *d = v->dims[i];
}

static cov_status learn_hidden(const graph *g, const graph_node *n, graph_value *const *in,
                               rnn_params *p) {
  learn(&p->hidden, rnn_in(n, RNN_R), 3, 2);
  const graph_value *w = in[RNN_W];
  if (p->hidden < 0 && w->rank == 3 && w->dims[1] >= 0 && w->dims[1] % p->gates == 0)
    p->hidden = w->dims[1] / p->gates;
  const graph_value *r = rnn_in(n, RNN_R);
  for (int i = 0; i < 3; i++)
    if ((w->rank == 3 && w->dims[i] > RNN_MAX_HIDDEN * p->gates) ||
        (r && r->rank == 3 && r->dims[i] > RNN_MAX_HIDDEN * p->gates))
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "W or R has a dim past %lld * %d, the largest this operator takes",
                              (long long)RNN_MAX_HIDDEN, p->gates);
  if (p->hidden > RNN_MAX_HIDDEN)
    return graph_node_error(g, n, COV_INVALID_INPUT, "hidden size %lld is past %lld",
                            (long long)p->hidden, (long long)RNN_MAX_HIDDEN);
  return NULL;
}

static cov_status read_inputs(const graph *g, const graph_node *n, graph_value *const *in,
                              rnn_params *p) {
  const graph_value *x = in[RNN_X];
  COV_RETURN_IF_ERROR(graph_check_float(g, n, x));
  if (x->rank >= 0 && x->rank != 3)
    return graph_node_error(g, n, COV_INVALID_INPUT, "input X '%s' has rank %d; %s takes rank 3",
                            x->name, x->rank,
                            p->layout ? "[batch, seq, input]" : "[seq, batch, input]");
  learn(&p->seq, x, 3, p->layout ? 1 : 0);
  learn(&p->batch, x, 3, p->layout ? 0 : 1);
  learn(&p->input, x, 3, 2);
  COV_RETURN_IF_ERROR(learn_hidden(g, n, in, p));
  const graph_value *sl = rnn_in(n, RNN_SEQ_LENS);
  learn(&p->batch, sl, 1, 0);
  learn(&p->batch, rnn_in(n, RNN_INIT_H), 3, p->layout ? 0 : 1);
  learn(&p->input, in[RNN_W], 3, 2);
  int64_t d = p->dirs, h = p->hidden, gh = h < 0 ? -1 : p->gates * h, b = p->batch;
  cov_dtype t = x->dtype;
  const int64_t w_dims[3] = {d, gh, p->input}, r_dims[3] = {d, gh, h},
                b_dims[2] = {d, gh < 0 ? -1 : 2 * gh};
  const int64_t s_dims[3] = {p->layout ? b : d, p->layout ? d : b, h},
                p_dims[2] = {d, h < 0 ? -1 : 3 * h};
  const char *s_form =
      p->layout ? "[batch, num_directions, hidden]" : "[num_directions, batch, hidden]";
  COV_RETURN_IF_ERROR(
      check_input(g, n, in[RNN_W], "W", t, 3, w_dims, "[num_directions, gates*hidden, input]"));
  COV_RETURN_IF_ERROR(
      check_input(g, n, in[RNN_R], "R", t, 3, r_dims, "[num_directions, gates*hidden, hidden]"));
  COV_RETURN_IF_ERROR(
      check_input(g, n, rnn_in(n, RNN_B), "B", t, 2, b_dims, "[num_directions, 2*gates*hidden]"));
  if (sl && sl->dtype != COV_I32 && sl->dtype != COV_I64)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "input sequence_lens '%s' is %s; it must be i32", sl->name,
                            cov_dtype_name(sl->dtype));
  COV_RETURN_IF_ERROR(check_input(g, n, sl, "sequence_lens", sl ? sl->dtype : t, 1, &b, "[batch]"));
  COV_RETURN_IF_ERROR(check_input(g, n, rnn_in(n, RNN_INIT_H), "initial_h", t, 3, s_dims, s_form));
  if (p->kind != RNN_LSTM) return NULL;
  COV_RETURN_IF_ERROR(check_input(g, n, rnn_in(n, RNN_INIT_C), "initial_c", t, 3, s_dims, s_form));
  return check_input(g, n, rnn_in(n, RNN_P), "P", t, 2, p_dims, "[num_directions, 3*hidden]");
}

cov_status graph_rnn_params(const graph *g, const graph_node *n, graph_value *const *in,
                            rnn_params *p) {
  memset(p, 0, sizeof *p);
  p->kind = strcmp(n->op_type, "LSTM") == 0  ? RNN_LSTM
            : strcmp(n->op_type, "GRU") == 0 ? RNN_GRU
                                             : RNN_SIMPLE;
  p->gates = p->kind == RNN_LSTM ? 4 : p->kind == RNN_GRU ? 3 : 1;
  p->seq = p->batch = p->input = -1;
  COV_RETURN_IF_ERROR(read_attrs(g, n, p));
  return read_inputs(g, n, in, p);
}

/* ---- the operator ----------------------------------------------------- */

cov_status graph_infer_rnn(const graph *g, const graph_node *n, graph_value *const *in,
                           graph_value *const *out) {
  rnn_params p;
  COV_RETURN_IF_ERROR(graph_rnn_params(g, n, in, &p));
  int64_t t = p.seq, d = p.dirs, b = p.batch, h = p.hidden;
  const int64_t y0[4] = {t, d, b, h}, y1[4] = {b, t, d, h};
  const int64_t s0[3] = {d, b, h}, s1[3] = {b, d, h};
  for (int k = 0; k < n->n_out; k++) {
    if (!out[k]) continue;
    out[k]->dtype = in[RNN_X]->dtype;
    if (k == RNN_Y)
      graph_set_shape(out[k], 4, p.layout ? y1 : y0);
    else
      graph_set_shape(out[k], 3, p.layout ? s1 : s0);
  }
  return NULL;
}

cov_status graph_exec_rnn(graph_exec *x, const graph_node *n, graph_value *const *in,
                          graph_value *const *out) {
  (void)in;
  (void)out;
  return graph_node_error(x->g, n, COV_INTERNAL,
                          "a recurrent node runs unrolled into its steps (graph_rnn_expand.c), "
                          "never as one operation");
}

/* The codelets its unrolled steps call. */
int graph_codelets_rnn(const graph_node *n, const char **names, int max) {
  static const char *const lstm[] = {"matmul", "add", "sigmoid", "tanh", "mul"};
  static const char *const gru[] = {"matmul", "add", "sigmoid", "tanh", "mul", "sub"};
  static const char *const rnn[] = {"matmul", "add", "tanh"};
  const char *const *l = strcmp(n->op_type, "LSTM") == 0  ? lstm
                         : strcmp(n->op_type, "GRU") == 0 ? gru
                                                          : rnn;
  int c = l == lstm ? 5 : l == gru ? 6 : 3;
  for (int i = 0; i < c && i < max; i++) names[i] = l[i];
  return c < max ? c : max;
}
