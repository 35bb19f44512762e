/* frontend/ops/graph_rnn.h: the parameters of an LSTM, GRU or RNN node, read
 * and checked once (graph_rnn.c) for its shape rule and for its unrolling
 * into ordinary nodes (graph_rnn_expand.c). */
#ifndef COV_FRONTEND_GRAPH_RNN_H
#define COV_FRONTEND_GRAPH_RNN_H

#include "frontend/graph.h"

/* hidden_size, and every dim of W, R, B and P, at most this: keeps
 * gates * hidden_size and the weights' element counts far from overflow
 * before the memory limit is applied to them. */
#define RNN_MAX_HIDDEN ((int64_t)1 << 24)

/* Input slots, as the ONNX operators number them. */
enum { RNN_X, RNN_W, RNN_R, RNN_B, RNN_SEQ_LENS, RNN_INIT_H, RNN_INIT_C, RNN_P };
/* Output slots. */
enum { RNN_Y, RNN_Y_H, RNN_Y_C };

typedef enum rnn_kind { RNN_SIMPLE, RNN_GRU, RNN_LSTM } rnn_kind;

/* The activation functions the operators' attribute `activations` names. */
typedef enum rnn_act_kind {
  RNN_ACT_RELU,
  RNN_ACT_TANH,
  RNN_ACT_SIGMOID,
  RNN_ACT_AFFINE,           /* alpha * x + beta */
  RNN_ACT_LEAKY_RELU,       /* alpha */
  RNN_ACT_THRESHOLDED_RELU, /* alpha */
  RNN_ACT_SCALED_TANH,      /* alpha * tanh(beta * x) */
  RNN_ACT_HARD_SIGMOID,     /* alpha, beta */
  RNN_ACT_ELU,              /* alpha */
  RNN_ACT_SOFTSIGN,
  RNN_ACT_SOFTPLUS,
} rnn_act_kind;

typedef struct rnn_act {
  rnn_act_kind kind;
  float alpha, beta;
} rnn_act;

/* Activations per direction: RNN f; GRU f, g; LSTM f, g, h. */
#define RNN_MAX_ACTS 3

typedef struct rnn_params {
  rnn_kind kind;
  int gates;    /* G: 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c) */
  int dirs;     /* 1, or 2 for bidirectional */
  bool reverse; /* the one direction runs from the last step to the first */
  int layout;   /* 0: X [T, B, I], Y [T, D, B, H]; 1: X [B, T, I], Y [B, T, D, H] */
  int64_t seq, batch, input, hidden; /* T, B, I, H; -1 where not known */
  bool has_clip;
  float clip;
  bool input_forget;        /* LSTM: f = 1 - i */
  bool linear_before_reset; /* GRU: r multiplies H·Rhᵀ + Rbh */
  int n_acts;               /* per direction */
  rnn_act acts[2][RNN_MAX_ACTS];
} rnn_params;

/* Reads and checks the node's attributes and its inputs' dtypes and known
 * dims; every problem is an error naming the node. */
cov_status graph_rnn_params(const graph *g, const graph_node *n, graph_value *const *in,
                            rnn_params *p);

/* One time step of one direction as one operation, by kind
 * (graph_rnn_cell.c): RNNCell, GRUCell, LSTMCell. */
extern const graph_opdef graph_rnn_cell_ops[3];

static inline const graph_value *rnn_in(const graph_node *n, int slot) {
  return slot < n->n_in ? n->in[slot] : NULL;
}

#endif
