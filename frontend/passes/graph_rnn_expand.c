/* frontend/passes/graph_rnn_expand.c: LSTM, GRU and RNN nodes unrolled over their
 * static sequence length into ordinary nodes.
 *
 * Why unroll in the frontend rather than run a recurrent codelet: every
 * step is a small matrix product and element-wise gates, which every target
 * already runs (the reference interpreter, the NPU mapper's matmul and
 * element-wise layers, the GPU model path's kernels). Unrolled, a recurrent
 * model reaches each backend as ordinary layer groups through the mapper,
 * with no backend code of its own, and the input projection X·Wᵀ of all
 * steps is one MatMul, the largest piece of work, which maps as well as any
 * matmul. The price is a node count proportional to the sequence length,
 * bounded by RNN_MAX_STEPS (steps times directions), and a sequence length
 * that must be known when the model is loaded: a symbolic one is refused.
 *
 * Per direction d (W, R, B, P, initial_h, initial_c taken at d by Gather;
 * constants fold):
 *   XW = X·W_dᵀ + Wb_d + Rb_d             one MatMul over [T, B, I]
 *   per step t: gates = XW[t] + H·R_dᵀ    (no H·Rᵀ at the first step
 *                                           without initial_h: H is zero)
 * then the cell's equations exactly as the ONNX operators state them, each
 * gate's input clipped to [-clip, clip] when `clip` is set. GRU keeps Rbh
 * out of the sum when linear_before_reset (r multiplies H·Rhᵀ + Rbh).
 * With sequence_lens, step t of batch row b is live when t < lens[b]: a
 * dead step keeps the state (Where) and writes zeros to Y, which gives both
 * directions their ONNX meaning (the reverse direction starts at
 * lens[b] - 1 with the initial state). Outputs are concatenated per step
 * and per direction in the order `layout` asks for.
 *
 * With graph.rnn_cells (cov_model_options.recurrent_cells) a node the cells
 * state (cells_cover) has each step as one cell node (graph_rnn_cell.c):
 * the same equations in one codelet call, the state carried as its result
 * ([h; c] for LSTM), so a backend may run a step as one kernel. */
#include <string.h>

#include "frontend/graph.h"
#include "frontend/graph_opfns.h"
#include "frontend/ops/graph_rnn.h"

/* Steps times directions of one node: bounds the nodes one recurrent node
 * becomes (about 20 per step) and the Concat of its steps. */
#define RNN_MAX_STEPS 4096
/* Opset of the nodes made (Slice, Unsqueeze, Clip with inputs). */
#define RNN_NODE_OPSET 13

typedef struct node_list {
  graph_node **v;
  size_t n, cap;
} node_list;

typedef struct rx { /* the unrolling of one node */
  graph *g;
  const graph_node *rnn;
  const rnn_params *p;
  node_list *list;
  cov_dtype dt;
  int serial;
  cov_status err;
  graph_value **masks; /* per step: bool [B, 1] live rows (sequence_lens), else NULL */
  bool cells;          /* each step one cell node (graph_rnn_cell.c) */
  int dir;             /* the direction being unrolled */
} rx;

static graph_value *fail(rx *e, cov_code code, const char *what) {
  if (!e->err && e->g->n_values >= GRAPH_MAX_VALUES)
    e->err = graph_node_error(e->g, e->rnn, COV_OUT_OF_RANGE,
                              "unrolled, the graph would have more than %d values", GRAPH_MAX_VALUES);
  if (!e->err) e->err = graph_node_error(e->g, e->rnn, code, "%s", what);
  return NULL;
}

static cov_status push(graph *g, node_list *l, graph_node *n) {
  if (l->n >= GRAPH_MAX_NODES)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "unrolled, the graph would have more than %d nodes", GRAPH_MAX_NODES);
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    graph_node **v = cov_arena_grow(g->arena, l->v, l->n, cap, sizeof *v);
    if (!v) return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory");
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = n;
  return NULL;
}

/* Infers the node made, folds it when its inputs are constants (as
 * graph_infer does) and appends it unless it folded. */
static graph_value *settle(rx *e, graph_node *n) {
  cov_status st = n->def->infer(e->g, n, n->in, n->out);
  if (!st) st = graph_check_shape(e->g, n, n->out[0]);
  bool folded = false;
  if (!st && !(e->g->no_fold && n->n_in > 0)) st = graph_fold_node(e->g, n, &folded);
  if (!st && !folded) {
    n->out[0]->producer = n;
    st = push(e->g, e->list, n);
  }
  if (st) {
    if (!e->err)
      e->err = st;
    else
      cov_status_free(st);
    return NULL;
  }
  return n->out[0];
}

/* A node of operator def on the inputs, its one output `into` or a new
 * value. */
static graph_value *emit_def(rx *e, const graph_opdef *def, int n_in, graph_value *const *ins,
                             const graph_attr *attrs, int n_attrs, graph_value *into) {
  if (e->err) return NULL;
  if (!def) return fail(e, COV_INTERNAL, "an unrolled step names no operator");
  for (int i = 0; i < n_in; i++)
    if (!ins[i]) return fail(e, COV_INTERNAL, "an unrolled step lost an operand");
  graph *g = e->g;
  graph_node *n = cov_arena_alloc(g->arena, sizeof *n);
  graph_value **in = cov_arena_array(g->arena, (size_t)n_in, sizeof *in);
  graph_value **out = cov_arena_array(g->arena, 1, sizeof *out);
  graph_attr *at = cov_arena_array(g->arena, n_attrs ? (size_t)n_attrs : 1, sizeof *at);
  if (!n || !in || !out || !at) return fail(e, COV_OUT_OF_MEMORY, "out of memory unrolling");
  n->name = cov_arena_printf(g->arena, "%s/%s_%d", e->rnn->name, def->op_type, e->serial++);
  n->op_type = def->op_type;
  n->domain = "";
  n->def = def;
  n->opset = RNN_NODE_OPSET;
  n->index = e->rnn->index;
  n->group = -1;
  memcpy(in, ins, (size_t)n_in * sizeof *in);
  if (n_attrs) memcpy(at, attrs, (size_t)n_attrs * sizeof *at);
  n->in = in;
  n->n_in = n_in;
  n->attrs = at;
  n->n_attrs = n_attrs;
  out[0] = into ? into : (n->name ? graph_add_value(g, n->name) : NULL);
  n->out = out;
  n->n_out = 1;
  if (!n->name || !out[0]) return fail(e, COV_OUT_OF_MEMORY, "out of memory unrolling");
  return settle(e, n);
}

/* A node `op` (an ONNX operator) of the inputs. */
static graph_value *emit(rx *e, const char *op, int n_in, graph_value *const *ins,
                         const graph_attr *attrs, int n_attrs, graph_value *into) {
  return emit_def(e, graph_opdef_find(op), n_in, ins, attrs, n_attrs, into);
}

/* ---- constants and one-node helpers ----------------------------------- */

static graph_value *constant(rx *e, cov_dtype t, int rank, const int64_t *dims) {
  if (e->err) return NULL;
  graph_value *v =
      graph_add_value(e->g, cov_arena_printf(e->g->arena, "%s/c%d", e->rnn->name, e->serial++));
  if (!v) return fail(e, COV_OUT_OF_MEMORY, "out of memory unrolling");
  v->kind = GV_CONSTANT;
  v->dtype = t;
  graph_set_shape(v, rank, dims);
  int64_t numel = graph_numel(v);
  v->data = numel < 0
                ? NULL
                : cov_arena_alloc(e->g->arena, (size_t)(numel ? numel : 1) * cov_dtype_size(t));
  return v->data ? v : fail(e, COV_OUT_OF_MEMORY, "out of memory unrolling");
}

static graph_value *const_ints(rx *e, cov_dtype t, int rank, const int64_t *vals, int64_t count) {
  graph_value *v = constant(e, t, rank, &count);
  for (int64_t i = 0; v && i < count; i++) graph_store_int(v->data, t, (size_t)i, vals[i]);
  return v;
}

static graph_value *scalar(rx *e, double x) {
  graph_value *v = constant(e, e->dt, 0, NULL);
  if (v) graph_store_elem(v->data, e->dt, 0, x);
  return v;
}

static graph_attr attr_i(const char *name, int64_t i) {
  graph_attr a = {.name = name, .type = GA_INT, .i = i};
  return a;
}

static graph_attr attr_f(const char *name, float f) {
  graph_attr a = {.name = name, .type = GA_FLOAT, .f = f};
  return a;
}

static graph_value *op1(rx *e, const char *op, graph_value *x) {
  return emit(e, op, 1, &x, NULL, 0, NULL);
}

static graph_value *op2(rx *e, const char *op, graph_value *a, graph_value *b) {
  graph_value *in[2] = {a, b};
  return emit(e, op, 2, in, NULL, 0, NULL);
}

/* a + b where b may be absent (a zero term). */
static graph_value *add_opt(rx *e, graph_value *a, graph_value *b) {
  return b ? op2(e, "Add", a, b) : a;
}

static graph_value *gather(rx *e, graph_value *x, int64_t index, int64_t axis) {
  graph_value *in[2] = {x, const_ints(e, COV_I64, 0, &index, 1)};
  graph_attr a = attr_i("axis", axis);
  return emit(e, "Gather", 2, in, &a, 1, NULL);
}

static graph_value *slice(rx *e, graph_value *x, int64_t axis, int64_t start, int64_t end) {
  graph_value *in[4] = {x, const_ints(e, COV_I64, 1, &start, 1), const_ints(e, COV_I64, 1, &end, 1),
                        const_ints(e, COV_I64, 1, &axis, 1)};
  return emit(e, "Slice", 4, in, NULL, 0, NULL);
}

static graph_value *unsqueeze(rx *e, graph_value *x, int n_axes, const int64_t *axes) {
  graph_value *in[2] = {x, const_ints(e, COV_I64, 1, axes, n_axes)};
  return emit(e, "Unsqueeze", 2, in, NULL, 0, NULL);
}

static graph_value *transpose(rx *e, graph_value *x, int rank, const int64_t *perm) {
  int64_t *kept = cov_arena_array(e->g->arena, (size_t)rank, sizeof *kept); /* the node's own */
  if (!kept) return fail(e, COV_OUT_OF_MEMORY, "out of memory unrolling");
  memcpy(kept, perm, (size_t)rank * sizeof *kept);
  graph_attr a = {.name = "perm", .type = GA_INTS, .ints = kept, .n = (size_t)rank};
  return emit(e, "Transpose", 1, &x, &a, 1, NULL);
}

static graph_value *concat(rx *e, graph_value **xs, int n, int64_t axis) {
  if (n == 1) return xs[0];
  graph_attr a = attr_i("axis", axis);
  return emit(e, "Concat", n, xs, &a, 1, NULL);
}

/* ---- activations ------------------------------------------------------ */

static graph_value *activate(rx *e, const rnn_act *a, graph_value *x) {
  static const char *const plain[] = {[RNN_ACT_RELU] = "Relu",
                                      [RNN_ACT_TANH] = "Tanh",
                                      [RNN_ACT_SIGMOID] = "Sigmoid",
                                      [RNN_ACT_SOFTSIGN] = "Softsign",
                                      [RNN_ACT_SOFTPLUS] = "Softplus"};
  graph_attr at[2] = {attr_f("alpha", a->alpha), attr_f("beta", a->beta)};
  switch (a->kind) {
    case RNN_ACT_AFFINE:
      return op2(e, "Add", op2(e, "Mul", x, scalar(e, a->alpha)), scalar(e, a->beta));
    case RNN_ACT_SCALED_TANH:
      return op2(e, "Mul", op1(e, "Tanh", op2(e, "Mul", x, scalar(e, a->beta))),
                 scalar(e, a->alpha));
    case RNN_ACT_LEAKY_RELU:
      return emit(e, "LeakyRelu", 1, &x, at, 1, NULL);
    case RNN_ACT_THRESHOLDED_RELU:
      return emit(e, "ThresholdedRelu", 1, &x, at, 1, NULL);
    case RNN_ACT_ELU:
      return emit(e, "Elu", 1, &x, at, 1, NULL);
    case RNN_ACT_HARD_SIGMOID:
      return emit(e, "HardSigmoid", 1, &x, at, 2, NULL);
    default:
      return op1(e, plain[a->kind], x);
  }
}

/* act(clip(x)): a gate's input clipped when the node sets `clip`. */
static graph_value *gate(rx *e, const rnn_act *a, graph_value *x) {
  if (e->p->has_clip) {
    graph_value *in[3] = {x, scalar(e, -e->p->clip), scalar(e, e->p->clip)};
    x = emit(e, "Clip", 3, in, NULL, 0, NULL);
  }
  return activate(e, a, x);
}

/* ---- one direction's operands ----------------------------------------- */

typedef struct rnn_dir {
  graph_value *xw;      /* [T, B, G*H]: X·Wᵀ plus the biases that are constant terms */
  graph_value *steps;   /* the shape [T, B, G*H] of xw (a Reshape's constant) */
  graph_value *rt;      /* Rᵀ [H, G*H] (GRU without linear_before_reset: z, r part [H, 2H]) */
  graph_value *rt_h;    /* GRU without linear_before_reset: Rhᵀ [H, H] */
  graph_value *rb_h;    /* GRU with linear_before_reset: Rbh [H], or NULL */
  graph_value *peep[3]; /* LSTM: Pi, Po, Pf [H], or NULL */
  graph_value *h, *c;   /* the state; NULL: zero */
  const rnn_act *act;   /* f, g, h */
} rnn_dir;

static graph_value *in_at(const graph_node *n, int slot) {
  return slot < n->n_in ? n->in[slot] : NULL;
}

/* X·W_dᵀ of every step as one [T*B, I] x [I, G*H] product, 2-D (steps_of
 * sees it as [T, B, G*H]). */
static void project(rx *e, int d, graph_value *xs, rnn_dir *s) {
  int64_t perm[2] = {1, 0}, flat[2] = {-1, e->p->input};
  int64_t back[3] = {e->p->seq, -1, e->p->gates * e->p->hidden};
  graph_value *wt = transpose(e, gather(e, e->rnn->in[RNN_W], d, 0), 2, perm);
  graph_value *x2 = op2(e, "Reshape", xs, const_ints(e, COV_I64, 1, flat, 2));
  s->steps = const_ints(e, COV_I64, 1, back, 3);
  s->xw = op2(e, "MatMul", x2, wt);
}

/* The projection as [T, B, G*H]. */
static void steps_of(rx *e, rnn_dir *s) { s->xw = op2(e, "Reshape", s->xw, s->steps); }

/* The biases Wb + Rb, added once to X·Wᵀ; GRU with linear_before_reset
 * keeps Rbh apart (it is multiplied by r). */
static void biases(rx *e, int d, rnn_dir *s) {
  graph_value *b = in_at(e->rnn, RNN_B);
  if (!b) return;
  int64_t h = e->p->hidden, gh = e->p->gates * h;
  graph_value *bd = gather(e, b, d, 0);
  graph_value *wb = slice(e, bd, 0, 0, gh), *rb = slice(e, bd, 0, gh, 2 * gh), *sum;
  if (e->p->kind == RNN_GRU && e->p->linear_before_reset) {
    s->rb_h = slice(e, rb, 0, 2 * h, gh);
    graph_value *parts[2] = {op2(e, "Add", slice(e, wb, 0, 0, 2 * h), slice(e, rb, 0, 0, 2 * h)),
                             slice(e, wb, 0, 2 * h, gh)};
    sum = concat(e, parts, 2, 0);
  } else {
    sum = op2(e, "Add", wb, rb);
  }
  s->xw = op2(e, "Add", s->xw, sum);
}

static void setup_dir(rx *e, int d, graph_value *xs, rnn_dir *s) {
  const rnn_params *p = e->p;
  int64_t h = p->hidden, gh = p->gates * h, perm[2] = {1, 0};
  memset(s, 0, sizeof *s);
  s->act = p->acts[d];
  project(e, d, xs, s);
  steps_of(e, s);
  biases(e, d, s);
  graph_value *rt = transpose(e, gather(e, e->rnn->in[RNN_R], d, 0), 2, perm);
  bool split = p->kind == RNN_GRU && !p->linear_before_reset;
  s->rt = split ? slice(e, rt, 1, 0, 2 * h) : rt;
  if (split) s->rt_h = slice(e, rt, 1, 2 * h, gh);
  graph_value *pp = p->kind == RNN_LSTM ? in_at(e->rnn, RNN_P) : NULL;
  for (int k = 0; pp && k < 3; k++)
    s->peep[k] = slice(e, gather(e, pp, d, 0), 0, k * h, (k + 1) * h);
  graph_value *h0 = in_at(e->rnn, RNN_INIT_H),
              *c0 = p->kind == RNN_LSTM ? in_at(e->rnn, RNN_INIT_C) : NULL;
  if (h0) s->h = gather(e, h0, d, p->layout ? 1 : 0);
  if (c0) s->c = gather(e, c0, d, p->layout ? 1 : 0);
}

/* ---- the cells -------------------------------------------------------- */

/* H·Rᵀ, or NULL while H is zero. */
static graph_value *recur(rx *e, const rnn_dir *s) {
  return s->h ? op2(e, "MatMul", s->h, s->rt) : NULL;
}

static void lstm_step(rx *e, const rnn_dir *s, graph_value *xw_t, graph_value **h_out,
                      graph_value **c_out) {
  int64_t h = e->p->hidden;
  graph_value *gates = add_opt(e, xw_t, recur(e, s)), *pre[4]; /* i, o, f, c */
  for (int k = 0; k < 4; k++) pre[k] = slice(e, gates, 1, k * h, (k + 1) * h);
  if (s->c && s->peep[0]) {
    pre[0] = op2(e, "Add", pre[0], op2(e, "Mul", s->peep[0], s->c));
    pre[2] = op2(e, "Add", pre[2], op2(e, "Mul", s->peep[2], s->c));
  }
  graph_value *i = gate(e, &s->act[0], pre[0]);
  graph_value *c = op2(e, "Mul", i, gate(e, &s->act[1], pre[3]));
  if (s->c) {
    graph_value *f =
        e->p->input_forget ? op2(e, "Sub", scalar(e, 1), i) : gate(e, &s->act[0], pre[2]);
    c = op2(e, "Add", op2(e, "Mul", f, s->c), c);
  }
  if (s->peep[1]) pre[1] = op2(e, "Add", pre[1], op2(e, "Mul", s->peep[1], c));
  graph_value *o = gate(e, &s->act[0], pre[1]);
  *h_out = op2(e, "Mul", o, activate(e, &s->act[2], c));
  *c_out = c;
}

static graph_value *gru_step(rx *e, const rnn_dir *s, graph_value *xw_t) {
  int64_t h = e->p->hidden;
  bool lbr = e->p->linear_before_reset;
  graph_value *hr = recur(e, s); /* [B, 3H] with linear_before_reset, else [B, 2H] */
  graph_value *zr =
      add_opt(e, slice(e, xw_t, 1, 0, 2 * h), hr && lbr ? slice(e, hr, 1, 0, 2 * h) : hr);
  graph_value *z = gate(e, &s->act[0], slice(e, zr, 1, 0, h));
  graph_value *r = gate(e, &s->act[0], slice(e, zr, 1, h, 2 * h));
  graph_value *rec = NULL; /* the candidate's recurrent term */
  if (lbr) {
    graph_value *lin = hr ? slice(e, hr, 1, 2 * h, 3 * h) : NULL;
    if (s->rb_h) lin = lin ? op2(e, "Add", lin, s->rb_h) : s->rb_h;
    if (lin) rec = op2(e, "Mul", r, lin);
  } else if (s->h) {
    rec = op2(e, "MatMul", op2(e, "Mul", r, s->h), s->rt_h);
  }
  graph_value *cand = gate(e, &s->act[1], add_opt(e, slice(e, xw_t, 1, 2 * h, 3 * h), rec));
  /* (1 - z) * cand + z * H = cand + z * (H - cand) */
  if (!s->h) return op2(e, "Sub", cand, op2(e, "Mul", z, cand));
  return op2(e, "Add", cand, op2(e, "Mul", z, op2(e, "Sub", s->h, cand)));
}

/* ---- steps, sequence lengths and outputs ------------------------------ */

/* Bool [B, 1]: the rows for which step t is inside the sequence. */
static graph_value *mask_at(rx *e, int64_t t) {
  if (!e->masks) return NULL;
  if (!e->masks[t]) {
    graph_value *sl = in_at(e->rnn, RNN_SEQ_LENS);
    int64_t ax = 1;
    e->masks[t] = unsqueeze(e, op2(e, "Less", const_ints(e, sl->dtype, 0, &t, 1), sl), 1, &ax);
  }
  return e->masks[t];
}

/* x where the step is live, else prev (zero when NULL). */
static graph_value *hold(rx *e, graph_value *m, graph_value *x, graph_value *prev) {
  if (!m) return x;
  graph_value *in[3] = {m, x, prev ? prev : scalar(e, 0)};
  return emit(e, "Where", 3, in, NULL, 0, NULL);
}

/* ---- steps as cells ---------------------------------------------------- */

/* Whether the cells state this node's steps: the default activations (the
 * cells' own), no input_forget, and a batch known at load (the zero
 * initial state). */
static bool cells_cover(const rnn_params *p) {
  static const rnn_act_kind want[3][RNN_MAX_ACTS] = {
      [RNN_SIMPLE] = {RNN_ACT_TANH},
      [RNN_GRU] = {RNN_ACT_SIGMOID, RNN_ACT_TANH},
      [RNN_LSTM] = {RNN_ACT_SIGMOID, RNN_ACT_TANH, RNN_ACT_TANH},
  };
  if (p->batch < 1 || p->hidden < 1 || p->input_forget) return false;
  for (int d = 0; d < p->dirs; d++)
    for (int k = 0; k < p->n_acts; k++)
      if (p->acts[d][k].kind != want[p->kind][k]) return false;
  return true;
}

static graph_value *zeros(rx *e, int rank, const int64_t *dims) {
  graph_value *v = constant(e, e->dt, rank, dims);
  if (v) memset(v->data, 0, (size_t)graph_numel(v) * cov_dtype_size(e->dt));
  return v;
}

/* The state the first step reads: h0 ([B, H]), for LSTM [h0; c0]; zeros
 * where the node gives no initial state. */
static graph_value *first_state(rx *e, const rnn_dir *s) {
  int64_t dims[2] = {e->p->batch, e->p->hidden}, ax = 0;
  graph_value *h0 = s->h ? s->h : zeros(e, 2, dims);
  if (e->p->kind != RNN_LSTM) return h0;
  graph_value *parts[2] = {unsqueeze(e, h0, 1, &ax), unsqueeze(e, s->c ? s->c : zeros(e, 2, dims), 1, &ax)};
  return concat(e, parts, 2, 0);
}

/* The cell of step t reading state `st`: xw, r, then LSTM's peepholes or
 * GRU's Rbh (zeros when the node has none), then the state. */
static graph_value *cell(rx *e, const rnn_dir *s, graph_value *r, graph_value *st, int64_t t) {
  const rnn_params *p = e->p;
  int64_t h = p->hidden, three = 3 * h;
  graph_value *in[4] = {s->xw, r}, *pp = in_at(e->rnn, RNN_P);
  int n = 2;
  if (p->kind == RNN_LSTM) in[n++] = pp ? gather(e, pp, e->dir, 0) : zeros(e, 1, &three);
  if (p->kind == RNN_GRU && p->linear_before_reset) in[n++] = s->rb_h ? s->rb_h : zeros(e, 1, &h);
  in[n++] = st;
  graph_attr at[3] = {attr_i("t", t), attr_f("lo", -p->clip), attr_f("hi", p->clip)};
  return emit_def(e, &graph_rnn_cell_ops[p->kind], n, in, at, p->has_clip ? 3 : 1, NULL);
}

/* run_dir with each step one cell; the state after each step is the
 * cell's result (held where sequence_lens ends the row), h its first
 * part for LSTM. */
static void run_dir_cells(rx *e, int d, graph_value *xs, graph_value **ys, graph_value **h_out,
                          graph_value **c_out) {
  const rnn_params *p = e->p;
  rnn_dir s;
  memset(&s, 0, sizeof s);
  e->dir = d;
  project(e, d, xs, &s);
  biases(e, d, &s); /* before steps_of: the GPU's matrix kernel adds them in its epilogue */
  steps_of(e, &s);
  graph_value *r = gather(e, e->rnn->in[RNN_R], d, 0), *h0 = in_at(e->rnn, RNN_INIT_H),
              *c0 = p->kind == RNN_LSTM ? in_at(e->rnn, RNN_INIT_C) : NULL;
  if (h0) s.h = gather(e, h0, d, p->layout ? 1 : 0);
  if (c0) s.c = gather(e, c0, d, p->layout ? 1 : 0);
  graph_value *st = first_state(e, &s);
  bool lstm = p->kind == RNN_LSTM, back = d == 1 || p->reverse;
  for (int64_t k = 0; k < p->seq && !e->err; k++) {
    int64_t t = back ? p->seq - 1 - k : k;
    graph_value *y = cell(e, &s, r, st, t), *m = mask_at(e, t);
    if (ys) ys[t] = hold(e, m, lstm ? gather(e, y, 0, 0) : y, NULL);
    st = hold(e, m, y, st);
  }
  *h_out = lstm ? gather(e, st, 0, 0) : st;
  *c_out = lstm ? gather(e, st, 1, 0) : NULL;
}

/* Direction d over every step; ys[t] (when wanted) its output at step t. */
static void run_dir(rx *e, int d, graph_value *xs, graph_value **ys, graph_value **h_out,
                    graph_value **c_out) {
  if (e->cells) {
    run_dir_cells(e, d, xs, ys, h_out, c_out);
    return;
  }
  rnn_dir s;
  setup_dir(e, d, xs, &s);
  int64_t T = e->p->seq;
  bool back = d == 1 || e->p->reverse;
  for (int64_t k = 0; k < T && !e->err; k++) {
    int64_t t = back ? T - 1 - k : k;
    graph_value *xw_t = gather(e, s.xw, t, 0), *h, *c = NULL;
    if (e->p->kind == RNN_LSTM)
      lstm_step(e, &s, xw_t, &h, &c);
    else if (e->p->kind == RNN_GRU)
      h = gru_step(e, &s, xw_t);
    else
      h = gate(e, &s.act[0], add_opt(e, xw_t, recur(e, &s)));
    graph_value *m = mask_at(e, t);
    if (ys) ys[t] = hold(e, m, h, NULL);
    s.h = hold(e, m, h, s.h);
    if (c) s.c = hold(e, m, c, s.c);
  }
  *h_out = s.h;
  *c_out = s.c;
}

/* Y from the steps' outputs (ys[d * T + t]), Y_h and Y_c from the final
 * states, each written into the node's own output value. */
static void write_outputs(rx *e, graph_value **ys, graph_value **hs, graph_value **cs) {
  const rnn_params *p = e->p;
  int64_t T = p->seq, lay = p->layout, step_axes[2] = {lay ? 1 : 0, lay ? 2 : 1};
  graph_value *y = e->rnn->n_out > RNN_Y ? e->rnn->out[RNN_Y] : NULL;
  if (y && ys) {
    graph_value *per_dir[2];
    for (int d = 0; d < p->dirs; d++) {
      graph_value **col = ys + d * T;
      for (int64_t t = 0; t < T; t++) col[t] = unsqueeze(e, col[t], 2, step_axes);
      per_dir[d] = concat(e, col, (int)T, lay ? 1 : 0);
    }
    graph_value *all = concat(e, per_dir, p->dirs, lay ? 2 : 1);
    emit(e, "Identity", 1, &all, NULL, 0, y);
  }
  for (int k = RNN_Y_H; k <= RNN_Y_C && k < e->rnn->n_out; k++) {
    graph_value *o = e->rnn->out[k], *u[2];
    for (int d = 0; o && d < p->dirs; d++)
      u[d] = unsqueeze(e, (k == RNN_Y_H ? hs : cs)[d], 1, &lay);
    if (o) {
      graph_value *all = concat(e, u, p->dirs, lay);
      emit(e, "Identity", 1, &all, NULL, 0, o);
    }
  }
}

/* ---- the pass --------------------------------------------------------- */

/* What unrolling needs known at load: the sequence length (bounded) and
 * the weights' shapes. */
static cov_status check_static(const graph *g, const graph_node *n, const rnn_params *p) {
  const graph_value *x = n->in[RNN_X];
  int ax = p->layout ? 1 : 0;
  if (p->seq < 0)
    return graph_node_error(
        g, n, COV_UNSUPPORTED,
        "the sequence length (dim %d of X '%s') is %s%s%s; covenant unrolls "
        "the recurrence over a sequence length known at load (export the "
        "model with a fixed sequence length)",
        ax, x->name, x->rank > ax && x->sym[ax] ? "symbolic ('" : "not known at load",
        x->rank > ax && x->sym[ax] ? x->sym[ax] : "", x->rank > ax && x->sym[ax] ? "')" : "");
  if (p->seq == 0) return graph_node_error(g, n, COV_INVALID_INPUT, "the sequence length is 0");
  if (p->seq > RNN_MAX_STEPS / p->dirs)
    return graph_node_error(g, n, COV_OUT_OF_RANGE,
                            "sequence length %lld x %d direction%s is more than the %d steps one "
                            "recurrent node may unroll into",
                            (long long)p->seq, p->dirs, p->dirs > 1 ? "s" : "", RNN_MAX_STEPS);
  static const int slots[] = {RNN_W, RNN_R, RNN_B, RNN_P};
  for (size_t k = 0; k < sizeof slots / sizeof *slots; k++) {
    const graph_value *v = in_at(n, slots[k]);
    if (v && (slots[k] != RNN_P || p->kind == RNN_LSTM) && !graph_shape_known(v))
      return graph_node_error(g, n, COV_UNSUPPORTED,
                              "the shape of '%s' is not known at load; unrolling needs the "
                              "weights' shapes",
                              v->name);
  }
  if (p->hidden < 0 || p->input < 0)
    return graph_node_error(g, n, COV_UNSUPPORTED, "the hidden or input size is not known at load");
  return NULL;
}

/* Masks are needed unless sequence_lens is absent or a constant that
 * keeps every step live; constant lengths must lie in [0, T]. */
static cov_status needs_masks(const graph *g, const graph_node *n, const rnn_params *p, bool *out) {
  const graph_value *sl = in_at(n, RNN_SEQ_LENS);
  *out = sl != NULL;
  if (!sl || !sl->data) return NULL;
  *out = false;
  for (int64_t i = 0; i < graph_numel(sl); i++) {
    int64_t v = graph_load_int(sl->data, sl->dtype, (size_t)i);
    if (v < 0 || v > p->seq)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)i,
                              (long long)v, (long long)p->seq);
    if (v < p->seq) *out = true;
  }
  return NULL;
}

static cov_status expand_node(graph *g, graph_node *n, node_list *l) {
  rnn_params p;
  bool masked;
  COV_RETURN_IF_ERROR(graph_rnn_params(g, n, n->in, &p));
  COV_RETURN_IF_ERROR(check_static(g, n, &p));
  COV_RETURN_IF_ERROR(needs_masks(g, n, &p, &masked));
  rx e = {.g = g, .rnn = n, .p = &p, .list = l, .dt = n->in[RNN_X]->dtype,
          .cells = g->rnn_cells && cells_cover(&p)};
  size_t steps = (size_t)(p.seq * p.dirs);
  graph_value **ys =
      n->n_out > RNN_Y && n->out[RNN_Y] ? cov_arena_array(g->arena, steps, sizeof *ys) : NULL;
  e.masks = masked ? cov_arena_array(g->arena, (size_t)p.seq, sizeof *e.masks) : NULL;
  if ((n->n_out > RNN_Y && n->out[RNN_Y] && !ys) || (masked && !e.masks))
    return graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory unrolling");
  graph_value *xs = n->in[RNN_X], *hs[2] = {NULL, NULL}, *cs[2] = {NULL, NULL};
  int64_t perm[3] = {1, 0, 2};
  if (p.layout) xs = transpose(&e, xs, 3, perm);
  for (int d = 0; d < p.dirs; d++) run_dir(&e, d, xs, ys ? ys + d * p.seq : NULL, &hs[d], &cs[d]);
  write_outputs(&e, ys, hs, cs);
  return e.err;
}

static bool is_rnn(const graph_node *n) {
  return !n->dead && n->def && n->def->infer == graph_infer_rnn;
}

cov_status graph_expand_rnn(graph *g) {
  bool any = false;
  for (size_t i = 0; i < g->n_nodes && !any; i++) any = is_rnn(g->nodes[i]);
  if (!any) return NULL;
  node_list l = {0};
  cov_status errs = NULL;
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    cov_status st = is_rnn(n) ? expand_node(g, n, &l) : push(g, &l, n);
    if (st) errs = cov_status_join(errs, st);
  }
  if (errs) return errs;
  g->unrolled_rnn = true;
  g->nodes = l.v;
  g->n_nodes = l.n;
  g->cap_nodes = l.cap;
  graph_recount(g);
  return NULL;
}
