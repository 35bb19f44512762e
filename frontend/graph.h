/* frontend/graph.h: covenant's graph IR, internal to the frontend.
 *
 * A graph is what an ONNX model becomes: values (tensors: graph inputs,
 * initializers, folded constants, activations) and nodes (one ONNX operation
 * each) in topological order, then layer groups once fusion has run. Every
 * object lives in the graph's arena; passes mark nodes dead and
 * graph_compact() drops them, so nothing is ever freed one by one.
 *
 * Shapes: rank -1 is unknown, a dim of -1 is unknown (a symbolic input dim,
 * or one that depends on data only known at run time). Shape inference and
 * execution share one function per operation (graph_opdef.infer): at load
 * time it sees constants only, at run time every input is concrete, so the
 * executor checks the same rules with the real shapes. */
#ifndef COV_FRONTEND_GRAPH_H
#define COV_FRONTEND_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "covenant/arena.h"
#include "covenant/codelet.h"
#include "covenant/model.h"
#include "covenant/status.h"
#include "covenant/tensor.h"
#include "covenant/types.h"

/* Limits that keep a hostile model from exhausting memory or time. */
#define GRAPH_MAX_NODES 1000000
#define GRAPH_MAX_VALUES 4000000
#define GRAPH_MAX_NODE_IO 4096                  /* inputs or outputs of one node (Concat, Split) */
#define GRAPH_MAX_ATTR_ELEMS 65536              /* ints/floats of one attribute */
#define GRAPH_FOLD_MAX_BYTES ((size_t)64 << 20) /* one folded constant */
/* All initializers and tensor attributes of a model together, as much as a
 * model file may hold inline (each one is also bounded by the memory limit,
 * --max-memory): external data lets a file of a few hundred bytes ask for
 * any amount. Checked on the declared shapes before any tensor is read. */
#define GRAPH_MAX_TENSOR_DATA_BYTES ((uint64_t)COV_MODEL_MAX_FILE_BYTES)
#define GRAPH_FOLD_BUDGET_BYTES ((size_t)512 << 20) /* all folded constants */
/* Compute ops are folded only when small: folding exists for shape
 * arithmetic and parameter preprocessing, not to run the model at load. */
#define GRAPH_FOLD_MAX_COMPUTE_ELEMS 65536
#define GRAPH_FOLD_MAX_COMPUTE_COST ((int64_t)1 << 22) /* about MACs */

typedef enum graph_value_kind {
  GV_ACTIVATION = 0, /* produced by a node at run time */
  GV_INPUT,          /* a graph input fed by the caller */
  GV_INITIALIZER,    /* an initializer of the model */
  GV_CONSTANT,       /* a Constant node's value or a folded result */
} graph_value_kind;

typedef struct graph_node graph_node;

typedef struct graph_value {
  const char *name;
  graph_value_kind kind;
  cov_dtype dtype;               /* COV_DTYPE_INVALID until known */
  int rank;                      /* -1: unknown */
  int64_t dims[COV_MAX_RANK];    /* -1: unknown */
  const char *sym[COV_MAX_RANK]; /* dim_param names of declared input dims */
  unsigned symbolic;             /* inputs: bit d when the model leaves dim d symbolic or unknown */
  cov_dtype io_dtype;            /* inputs of a widened model: the dtype it declares (else INVALID) */
  void *data;                    /* contents of constants; NULL otherwise */
  /* GV_INPUT that shares an initializer's name (IR version >= 4): the
   * initializer, its default value where the caller feeds none. A fed
   * input overrides it, so it is never folded. NULL otherwise. */
  const struct graph_value *default_value;
  /* A sequence of tensors of dtype (an optional: of at most one), its data
   * a graph_seq block (graph_sequence.h); rank -1. opt_seq (with seq): an
   * optional of a sequence, its block's `none` saying it holds none. */
  bool seq, opt, opt_seq;
  graph_node *producer;          /* NULL for inputs and constants */
  int n_uses;                    /* node input slots that read it (graph_recount) */
  int id;                        /* index in graph.values */
} graph_value;

/* ONNX AttributeProto types, numbered as in onnx.proto. */
typedef enum graph_attr_type {
  GA_UNDEFINED = 0,
  GA_FLOAT = 1,
  GA_INT = 2,
  GA_STRING = 3,
  GA_TENSOR = 4,
  GA_GRAPH = 5,
  GA_FLOATS = 6,
  GA_INTS = 7,
  GA_STRINGS = 8,
  GA_TENSORS = 9,
  GA_GRAPHS = 10,
  GA_SPARSE_TENSOR = 11,
  GA_SPARSE_TENSORS = 12,
  GA_TYPE_PROTO = 13,
  GA_TYPE_PROTOS = 14,
} graph_attr_type;

typedef struct graph_attr {
  const char *name;
  graph_attr_type type;
  int64_t i;
  float f;
  const char *s; /* NUL-terminated copy (strings with a NUL are refused) */
  int64_t *ints;
  float *floats;
  const char **strs; /* GA_STRINGS: NUL-terminated copies */
  size_t n;          /* elements of ints/floats/strs */
  graph_value *t; /* a tensor attribute, decoded (not in graph.values) */
  struct graph *sub; /* a graph attribute (If's branches, Loop's and Scan's body) */
} graph_attr;

typedef struct graph_opdef graph_opdef;

struct graph_node {
  const char *name; /* the model's name, or "<OpType>_<index>" when it has none */
  const char *op_type;
  const char *domain; /* "" for ai.onnx */
  const graph_opdef *def;
  int opset;        /* the model's ai.onnx opset: operator semantics follow it */
  int index;        /* position in the model's node list (stable, for messages) */
  graph_value **in; /* NULL entries: omitted optional inputs */
  int n_in;
  graph_value **out; /* NULL entries: omitted optional outputs */
  int n_out;
  graph_attr *attrs;
  int n_attrs;
  int group; /* layer group, -1 before fusion */
  bool dead;
  /* Inputs appended after the operator's own: the outer-scope values its
   * subgraphs read (graph_control.h), in[n_in - n_implicit .. n_in). */
  int n_implicit;
};

/* A layer group: what the mapper will schedule as one unit. */
typedef struct graph_group {
  const char *kind; /* "conv+bias+relu+maxpool", "gemm+bias", "layout", ... */
  graph_node **nodes;
  int n_nodes;
  const char **codelets; /* bound codelet names, in call order; empty for layout */
  int n_codelets;
  bool layout; /* data movement run by the frontend itself */
  /* cov_model_group_info's numbers, set by graph_summarize_groups */
  int64_t macs, in_elems, const_elems, out_elems;
  const char *alters;
} graph_group;

typedef struct graph {
  cov_arena *arena;
  const char *file; /* for diagnostics */
  const char *dir;  /* folder external data is resolved against; NULL refuses it */
  int opset;
  int64_t ir_version;
  const char *producer, *producer_version, *name;
  graph_value **values;
  size_t n_values, cap_values;
  graph_node **nodes; /* topological order */
  size_t n_nodes, cap_nodes;
  graph_value **inputs;
  size_t n_inputs;
  graph_value **outputs;     /* may change as passes rewrite producers */
  const char **output_names; /* the names the model gave its outputs */
  cov_dtype *output_io_dtypes; /* a widened model's outputs: the dtypes it declares (else NULL) */
  size_t n_outputs;
  graph_group *groups;
  size_t n_groups;
  const cov_codelet_lib *lib;
  size_t folded_bytes;
  bool no_fold;
  bool compute_f32; /* cov_model_options.compute_f32: 16-bit values widened (graph_widen.c) */
  bool rnn_cells;   /* cov_model_options.recurrent_cells: a step of a recurrent node is one call */
  bool unrolled_rnn; /* graph_expand_rnn unrolled a recurrent node */
  uint64_t max_memory; /* largest tensor in bytes (cov_model_options.max_memory) */
  /* A subgraph (graph_control.h): its owner's graph and its nesting depth
   * (0 for a model's graph); the values it reads from outer scopes, each
   * read at run time from owner->in[capture_slot[k]]. */
  const struct graph *parent;
  int depth;
  graph_value **captures;
  int *capture_slot;
  size_t n_captures;
} graph;

/* ---- operation table (graph_ops.c) ------------------------------------ */

typedef struct graph_exec graph_exec;

/* Shape and dtype rule: reads in[] (data where known), writes out[]'s dtype,
 * rank and dims; reports every violated rule as an error naming the node. */
typedef cov_status (*graph_infer_fn)(const graph *g, const graph_node *n, graph_value *const *in,
                                     graph_value *const *out);
/* Computes out[] (shapes already inferred, data NULL) from in[] (all data
 * present); sets each non-NULL out[i]->data to a malloc'ed buffer. */
typedef cov_status (*graph_exec_fn)(graph_exec *x, const graph_node *n, graph_value *const *in,
                                    graph_value *const *out);
/* The codelets a compute node calls, in order (names from codelets/README.md). */
typedef int (*graph_codelets_fn)(const graph_node *n, const char **names, int max);

struct graph_opdef {
  const char *op_type;
  int min_in, max_in, min_out, max_out;
  bool layout; /* executed by the frontend (data movement), not through codelets */
  graph_infer_fn infer;
  graph_exec_fn exec;
  graph_codelets_fn codelets;
  const int *versions; /* opsets where the definition changed, 0-terminated */
  /* Output shapes depend on run-time values (control flow, NonZero, ...):
   * the kernel sets them; never folded. */
  bool dynamic;
};

/* The ONNX (ai.onnx) operator, or NULL when covenant does not support it. */
const graph_opdef *graph_opdef_find(const char *op_type);
/* The operator of a domain: ai.onnx (or ""), or the few com.microsoft
 * operators covenant supports (QGemm); NULL otherwise. */
const graph_opdef *graph_opdef_find_domain(const char *domain, const char *op_type);
/* The version of the operator in effect at `opset` (0: it does not exist yet). */
int graph_op_version(const graph_opdef *d, int opset);
/* Every supported op type, sorted, one per line (for tests and --list-ops). */
void graph_print_supported_ops(FILE *out);

/* Operator semantics are implemented as of opset 7 onwards. A model with an
 * older opset is read when each of its operators is still the same version at
 * opset 7 (GlobalAveragePool, Conv, ...); it then runs with opset-7 rules. */
#define GRAPH_OPSET_MIN 7
#define GRAPH_OPSET_MAX 21

/* ---- construction and utilities (graph.c) ------------------------------ */

graph *graph_create(const char *file, const char *dir);
void graph_destroy(graph *g);
graph_value *graph_add_value(graph *g, const char *name);
graph_node *graph_add_node(graph *g);
/* Recomputes n_uses and producers from the live nodes. */
void graph_recount(graph *g);
/* Drops dead nodes and values nothing refers to any more. */
void graph_compact(graph *g);
/* Structural checks every pass must preserve (SSA, order, arity). */
cov_status graph_verify(const graph *g);

/* "node 'conv1' (Conv)" and "tensor 'w'": the cov_loc.path of diagnostics. */
cov_status graph_node_error(const graph *g, const graph_node *n, cov_code code, const char *fmt,
                            ...) __attribute__((format(printf, 4, 5)));
cov_status graph_value_error(const graph *g, const graph_value *v, cov_code code, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

const graph_attr *graph_attr_find(const graph_node *n, const char *name);
cov_status graph_attr_int(const graph *g, const graph_node *n, const char *name, int64_t def,
                          int64_t *out);
cov_status graph_attr_float(const graph *g, const graph_node *n, const char *name, float def,
                            float *out);
/* *out NULL and *count 0 when absent. */
cov_status graph_attr_ints(const graph *g, const graph_node *n, const char *name,
                           const int64_t **out, size_t *count);
cov_status graph_attr_floats(const graph *g, const graph_node *n, const char *name,
                             const float **out, size_t *count);
cov_status graph_attr_string(const graph *g, const graph_node *n, const char *name, const char *def,
                             const char **out);
/* *out NULL and *count 0 when absent. */
cov_status graph_attr_strings(const graph *g, const graph_node *n, const char *name,
                              const char *const **out, size_t *count);

/* ---- shapes (graph_shape.c) ------------------------------------------- */

/* Elements of a value with known shape; -1 if unknown or over the limits. */
int64_t graph_numel(const graph_value *v);
bool graph_shape_known(const graph_value *v);
/* Rejects negative dims and shapes past COV_TENSOR_MAX_BYTES. */
cov_status graph_check_shape(const graph *g, const graph_node *n, const graph_value *v);
/* The largest tensor a model may make (max_memory, else the default). */
uint64_t graph_memory_limit(const graph *g);
void graph_set_shape(graph_value *v, int rank, const int64_t *dims);
void graph_copy_type(graph_value *dst, const graph_value *src);
/* Normalizes axis (negative counts from the end) into [0, rank). */
cov_status graph_axis(const graph *g, const graph_node *n, int64_t axis, int rank, const char *what,
                      int *out);
/* numpy broadcasting of two shapes (unknown dims stay unknown). */
cov_status graph_broadcast(const graph *g, const graph_node *n, const graph_value *a,
                           const graph_value *b, int *rank, int64_t *dims);
/* Reads an integer tensor (i32/i64, at most max elements) as int64. */
cov_status graph_read_ints(const graph *g, const graph_node *n, const graph_value *v,
                           const char *what, int64_t *out, size_t max, size_t *count);
/* A shape given as an input (Reshape, Expand, ConstantOfShape): a 1-D int64
 * tensor of at most COV_MAX_RANK entries. When its contents are known,
 * *known = true and dims[0..*rank) hold them (not yet checked for sign:
 * each operator has its own rules); otherwise *known = false and *rank is
 * its length where that is known and within the limit, else -1. */
cov_status graph_read_shape_input(const graph *g, const graph_node *n, const graph_value *v,
                                  int64_t *dims, int *rank, bool *known);
/* A scalar or 1-element tensor as double. */
cov_status graph_read_scalar(const graph *g, const graph_node *n, const graph_value *v,
                             const char *what, double *out);
/* Formats "f32[1, 3, ?, 224]" into buf. */
const char *graph_type_str(const graph_value *v, char *buf, size_t size);
double graph_load_elem(const void *data, cov_dtype t, size_t i);
void graph_store_elem(void *data, cov_dtype t, size_t i, double x);
/* Integer dtypes (i8, u8, i32, i64, bool) element by element, exactly:
 * int64 values beyond 2^53 do not survive a double. Stores wrap, as numpy's
 * astype does; both return/store 0 for float dtypes. */
int64_t graph_load_int(const void *data, cov_dtype t, size_t i);
void graph_store_int(void *data, cov_dtype t, size_t i, int64_t x);

/* ---- passes ----------------------------------------------------------- */

/* The load pipeline after reading (model.c): inference with folding,
 * simplification, fusion into layer groups, the verifier, summaries. */
cov_status graph_prepare(graph *g, bool no_fold, bool no_fuse);
/* The graph of a loaded model (model.c). */
const graph *graph_of_model(const cov_model *m);

/* Shape/dtype inference for every node, folding constants as it goes. */
cov_status graph_infer(graph *g);
/* Evaluates a node whose inputs are all constant (or whose result is
 * determined by shapes alone) and turns its outputs into constants; sets
 * *folded. Declines quietly when the result would be too large. */
cov_status graph_fold_node(graph *g, graph_node *n, bool *folded);
cov_status graph_eliminate_identities(graph *g);
/* Each group's MACs, boundary elements and (layout groups) why it alters
 * values, in passes linear in the graph (graph_summary.c); run last. */
cov_status graph_summarize_groups(graph *g);
/* QDQ patterns (DQ -> Conv/Gemm/MatMul -> Q, DQ -> MaxPool/Flatten/... -> Q
 * with one scale) become integer operators, as onnxruntime fuses them
 * (graph_qdq.c). Runs before inference, on the graph as read. */
cov_status graph_fuse_qdq(graph *g);
/* Binds input shapes before inference (graph_bind.c, cov_model_options.shapes). */
cov_status graph_bind_shapes(graph *g, const cov_model_shape *s, size_t n);
/* Dim 0 of every input set to n (cov_model_options.rebatch, graph_bind.c). */
cov_status graph_rebatch(graph *g, int64_t n);
/* The values integer input v may take (graph_range.c, cov_model_input_range). */
int graph_input_range(const graph *g, const graph_value *v, int64_t *lo, int64_t *hi);
/* Every f16 / bf16 value widened to f32 after inference (graph_widen.c). */
cov_status graph_widen_16(graph *g);
/* Quantized operators whose parameters are constants become integer layers
 * with every derived operand a constant (u8 activations moved to i8), so
 * that a backend can compile each as one program (graph_qprep.c). Runs
 * after inference. */
cov_status graph_prepare_quant(graph *g);
/* Drops nodes whose outputs reach no graph output, then compacts. */
void graph_eliminate_dead(graph *g);
cov_status graph_fold_batchnorm(graph *g);
/* A Mul (or a Conv's Add) by a per-output-channel constant after a Conv,
 * MatMul or Gemm folded into its weights and bias where the weights keep
 * their f16 precision (graph_scalefold.c). */
cov_status graph_fold_channel_scale(graph *g);
/* LSTM, GRU and RNN nodes become their recurrence unrolled over the static
 * sequence length into ordinary nodes, each inferred and folded as it is
 * made (graph_rnn_expand.c). Runs after inference. */
cov_status graph_expand_rnn(graph *g);
cov_status graph_fuse(graph *g, bool no_fuse);
cov_status graph_print_summary(const graph *g, FILE *out);
cov_status graph_print(const graph *g, FILE *out);
/* Multiply-accumulates of one node (0 for layout ops; -1 when unknown). */
int64_t graph_node_macs(const graph_node *n);

/* ---- group descriptions (graph_group.c) -------------------------------- */

/* Describes group gi (cov_model_group in covenant/model.h) by tracing its
 * nodes' lowering. run_vals: a run's value table (concrete shapes and data,
 * indexed by value id), or NULL for the load-time shapes. */
cov_status graph_group_describe(const graph *g, size_t gi, const graph_value *run_vals,
                                cov_model_group **out);
/* As graph_group_describe for a run's concrete values (run_vals non-NULL),
 * where a tensor a node computes before its first call from the group's
 * inputs alone becomes a group input of its own (graph value id -1, its
 * data graph_group_input_data). */
cov_status graph_group_describe_run(const graph *g, size_t gi, const graph_value *run_vals,
                                    cov_model_group **out);
/* Layout group gi as one codelet call when it is an embedding lookup (a
 * lone Gather on axis 0 of a constant float [V, D] table at run-time
 * integer indices: gather_rows) or a lone Cast of run-time values that is
 * not an exact widening (cast_<dtype>, codelets/cast.cdl, on the flattened
 * tensor); COV_UNSUPPORTED saying why not. */
bool graph_group_is_gather(const graph *g, size_t gi);
cov_status graph_group_describe_gather(const graph *g, size_t gi, const graph_value *run_vals,
                                       cov_model_group **out);
/* Graph value ids of a description's k-th input and of its output. */
int graph_group_input_id(const cov_model_group *d, size_t k);
int graph_group_output_id(const cov_model_group *d);
/* The data of input k when a node computed it (id -1), else NULL. */
const void *graph_group_input_data(const cov_model_group *d, size_t k);

/* ---- execution (graph_exec.c, graph_layout.c, graph_compute.c) -------- */

struct graph_exec {
  const graph *g;
  const cov_codelet_lib *lib;
  cov_model_call_fn hook; /* backend hook (cov_model_run_with), or NULL */
  void *hook_user;
  cov_model_group_fn group; /* group hook (cov_model_run_groups), or NULL; user is hook_user */
  /* During one codelet call: bit k set when input k was computed by the
   * node from model constants alone (an interpolation matrix, flipped
   * weights), so a layer group may describe it as a constant. */
  unsigned const_inputs;
  bool offer_gathers;       /* embedding gathers offered to `group` too (cov_model_run_groups_gathering) */
  void (*trace)(void *user, const graph *g, const graph_value *vals); /* graph_run_io.trace */
  void *trace_user;
  bool bound; /* graph_run_io.bound */
};

/* Runs subgraph `sub` (graph_control.c): in[] its inputs' concrete values
 * (data borrowed), captures read from owner_in (the owner node's inputs);
 * fills out[] (n_out = sub->n_outputs) with malloc'ed data. Each compute
 * group is offered to x's hooks as in a model's run. */
cov_status graph_run_sub(graph_exec *x, const graph *sub, graph_value *const *in, size_t n_in,
                         graph_value *const *owner_in, graph_value *out);

/* Runs one node on concrete values: infers output shapes, then computes. */
cov_status graph_exec_node(graph_exec *x, const graph_node *n, graph_value *const *in,
                           graph_value *const *out);
cov_status graph_run(const graph *g, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                     size_t n_outputs);
/* A run's inputs and outputs; seq_in[i] / seq_out[k] for those that are
 * sequences or optionals (graph_value.seq), either array NULL when the
 * caller has none (a sequence output is then an error). */
typedef struct graph_run_io {
  const cov_tensor *inputs;
  const cov_sequence *const *seq_in;
  size_t n_inputs;
  cov_tensor *outputs;
  cov_sequence **seq_out;
  size_t n_outputs;
  bool offer_gathers; /* embedding gathers offered to the group hook too */
  /* Called when a graph (the model's or a subgraph) finished a run, with
   * that run's values (indexed by value id, shapes concrete; data may be
   * freed): how a compiler learns the shapes a run gives each value. */
  void (*trace)(void *user, const graph *g, const graph_value *vals);
  void *trace_user;
  /* Bound mode: each operator whose output size depends on the data makes
   * the most its inputs allow (NonZero: every element; NonMaxSuppression:
   * every box up to max_output_boxes_per_class; Compress: every slice), so
   * the sizes the run gives are capacities (model_region.c). */
  bool bound;
} graph_run_io;
/* graph_run_groups with sequences. */
cov_status graph_run_values(const graph *g, const graph_run_io *io, cov_model_group_fn group,
                            cov_model_call_fn hook, void *user);
/* graph_run with a backend hook called before each codelet call. */
cov_status graph_run_hooked(const graph *g, const cov_tensor *inputs, size_t n_inputs,
                            cov_tensor *outputs, size_t n_outputs, cov_model_call_fn hook,
                            void *user);
/* graph_run with a group hook offered each compute group first (its
 * description at the run's shapes), then `hook` for the calls of groups it
 * did not take (cov_model_run_groups). */
cov_status graph_run_groups(const graph *g, const cov_tensor *inputs, size_t n_inputs,
                            cov_tensor *outputs, size_t n_outputs, cov_model_group_fn group,
                            cov_model_call_fn hook, void *user);
/* graph_run_groups with the embedding gathers offered as well. */
cov_status graph_run_groups_x(const graph *g, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                              size_t n_outputs, cov_model_group_fn group, cov_model_call_fn hook, void *user,
                              bool offer_gathers);
/* Allocates out->data for its (known) shape. */
cov_status graph_alloc_data(const graph *g, const graph_node *n, graph_value *v);
/* Runs codelet `name` with tensors viewing the given values' data. */
cov_status graph_call_codelet(graph_exec *x, const graph_node *n, const char *name,
                              const cov_attr *attrs, size_t n_attrs, const cov_tensor *in,
                              size_t n_in, cov_tensor *out, size_t n_out);
/* A tensor viewing a value's data (no copy), optionally reshaped. */
cov_tensor graph_view(const graph_value *v);
cov_tensor graph_view_as(const graph_value *v, int rank, const int64_t *dims);

/* Shared layout kernels that compute lowering reuses (graph_layout.c). */
cov_status graph_expand_to(const graph *g, const graph_node *n, const graph_value *src, int rank,
                           const int64_t *dims, void **out);
cov_status graph_transpose_data(const graph *g, const graph_node *n, const void *src,
                                cov_dtype dtype, int rank, const int64_t *dims, const int *perm,
                                void **out);

/* Layout and compute operations (their infer and exec functions). */
#define GRAPH_DECLARE_OP(name)                                                               \
  cov_status graph_infer_##name(const graph *g, const graph_node *n, graph_value *const *in, \
                                graph_value *const *out);                                    \
  cov_status graph_exec_##name(graph_exec *x, const graph_node *n, graph_value *const *in,   \
                               graph_value *const *out)
#define GRAPH_DECLARE_COMPUTE(name) \
  GRAPH_DECLARE_OP(name);           \
  int graph_codelets_##name(const graph_node *n, const char **names, int max)

#endif
