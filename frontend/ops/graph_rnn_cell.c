/* frontend/ops/graph_rnn_cell.c: one time step of an unrolled LSTM, GRU or
 * RNN node (one direction) as one operation, which runs as one codelet
 * call: lstm_cell, gru_cell or rnn_cell (codelets/rnn.cdl, where the
 * operands are described). graph_rnn_expand.c makes these nodes when the
 * model is loaded with cov_model_options.recurrent_cells; they are in no
 * table the ONNX reader searches, so no model can name them.
 *
 * Inputs: xw [S, B, G*H] (the projection of every step), r [G*H, H], then
 * LSTM: p [3H] and s [2, B, H]; GRU: rbh [H] and s [B, H] with
 * linear_before_reset, else s alone (two calls: gru_reset, gru_cell_rh);
 * RNN: s [B, H]; the codelets see the gates as a dim of their own (views,
 * no copy).
 * Attributes: t (the step), lo and hi (the clip bounds; infinite when the
 * node has no clip). The output has the state's shape. */
#include <math.h>
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"
#include "frontend/ops/graph_lower.h"
#include "frontend/ops/graph_rnn.h"

static const char *cell_codelet(const graph_node *n) {
  return n->def == &graph_rnn_cell_ops[RNN_LSTM]  ? "lstm_cell"
         : n->def == &graph_rnn_cell_ops[RNN_GRU] ? "gru_cell"
                                                  : "rnn_cell";
}

static cov_status infer_cell(const graph *g, const graph_node *n, graph_value *const *in,
                             graph_value *const *out) {
  const graph_value *xw = in[0], *s = in[n->n_in - 1];
  int rank = n->def == &graph_rnn_cell_ops[RNN_LSTM] ? 3 : 2;
  if (xw->rank != 3 || in[1]->rank != 2 || s->rank != rank || xw->dtype != s->dtype)
    return graph_node_error(g, n, COV_INTERNAL, "a recurrent cell's operands have the wrong ranks or types");
  out[0]->dtype = s->dtype;
  graph_set_shape(out[0], s->rank, s->dims);
  return NULL;
}

static cov_status exec_cell(graph_exec *x, const graph_node *n, graph_value *const *in,
                            graph_value *const *out) {
  int64_t t;
  float lo, hi;
  COV_RETURN_IF_ERROR(graph_attr_int(x->g, n, "t", 0, &t));
  COV_RETURN_IF_ERROR(graph_attr_float(x->g, n, "lo", -INFINITY, &lo));
  COV_RETURN_IF_ERROR(graph_attr_float(x->g, n, "hi", INFINITY, &hi));
  cov_attr a[3] = {graph_lower_attr_i("t", t), graph_lower_attr_f("lo", lo), graph_lower_attr_f("hi", hi)};
  /* the gates as a dim of their own: xw [S, B, G, H], r [G, H, H], LSTM's
   * p [3, H] */
  const graph_value *xw = in[0], *r = in[1];
  int64_t h = r->dims[1], gates = h > 0 ? r->dims[0] / h : 0;
  const int64_t xw_dims[4] = {xw->dims[0], xw->dims[1], gates, h}, r_dims[3] = {gates, h, h}, p_dims[2] = {3, h};
  int g_rank = n->def == &graph_rnn_cell_ops[RNN_SIMPLE] ? 0 : 1;
  cov_tensor t_in[4];
  for (int i = 0; i < n->n_in && i < 4; i++) t_in[i] = graph_view(in[i]);
  if (g_rank) t_in[0] = graph_view_as(xw, 4, xw_dims), t_in[1] = graph_view_as(r, 3, r_dims);
  if (n->def == &graph_rnn_cell_ops[RNN_LSTM]) t_in[2] = graph_view_as(in[2], 2, p_dims);
  cov_tensor y = {0};
  if (n->def == &graph_rnn_cell_ops[RNN_GRU] && n->n_in == 3) { /* without linear_before_reset */
    cov_tensor rh = {0};
    COV_RETURN_IF_ERROR(graph_call_codelet(x, n, "gru_reset", a, 3, t_in, 3, &rh, 1));
    cov_tensor in4[4] = {t_in[0], t_in[1], rh, t_in[2]};
    cov_status st = graph_call_codelet(x, n, "gru_cell_rh", a, 3, in4, 4, &y, 1);
    cov_tensor_release(&rh);
    COV_RETURN_IF_ERROR(st);
    return graph_lower_adopt(x, n, &y, out[0]);
  }
  COV_RETURN_IF_ERROR(graph_call_codelet(x, n, cell_codelet(n), a, 3, t_in, (size_t)n->n_in, &y, 1));
  return graph_lower_adopt(x, n, &y, out[0]);
}

static int codelets_cell(const graph_node *n, const char **names, int max) {
  if (n->def != &graph_rnn_cell_ops[RNN_GRU]) return graph_lower_single(cell_codelet(n), names, max);
  static const char *const gru[] = {"gru_cell", "gru_reset", "gru_cell_rh"};
  for (int i = 0; i < 3 && i < max; i++) names[i] = gru[i];
  return max < 3 ? max : 3;
}

#define CELL(op, n_in) {op, n_in, n_in, 1, 1, false, infer_cell, exec_cell, codelets_cell, (const int[]){1, 0}, false}
const graph_opdef graph_rnn_cell_ops[3] = {
    [RNN_SIMPLE] = CELL("RNNCell", 3),
    [RNN_GRU] = {"GRUCell", 3, 4, 1, 1, false, infer_cell, exec_cell, codelets_cell, (const int[]){1, 0}, false},
    [RNN_LSTM] = CELL("LSTMCell", 4),
};
