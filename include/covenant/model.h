/* covenant/model.h: ONNX models, read into covenant's graph IR.
 *
 * Loading a model reads the ONNX protobuf (initializers inline or in external
 * data files next to it), infers every shape and dtype it can, folds constant
 * subgraphs (shape arithmetic such as Shape->Gather->Concat->Reshape), removes
 * Identity and inference-mode Dropout, folds BatchNormalization into the Conv
 * before it, and fuses the operations into layer groups (conv+bias+relu
 * [+maxpool], gemm/matmul+bias+activation, matmul+softmax, ...), each bound to
 * the codelets that compute it. A loaded model is immutable: several threads
 * may run it at once. Supported operators and opsets are listed in
 * frontend/README.md. */
#ifndef COVENANT_MODEL_H
#define COVENANT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "covenant/api.h"
#include "covenant/codelet.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_model cov_model;

/* Largest .onnx file accepted (protobuf's own 2 GiB ceiling). Weights past
 * that belong in external data files, which are limited per tensor by
 * COV_TENSOR_MAX_BYTES. */
#define COV_MODEL_MAX_FILE_BYTES ((size_t)2 << 30)

/* A concrete shape for a model input (cov_model_options.shapes): binds the
 * dims the model leaves symbolic or unknown; the model's static dims must
 * be given as they are. A symbolic dim's name (ONNX dim_param) takes the
 * value in every input that shares it and is not bound itself. */
typedef struct cov_model_shape {
  const char *name; /* the input's name */
  int rank;
  int64_t dims[COV_MAX_RANK]; /* each >= 1 */
} cov_model_shape;

typedef struct cov_model_options {
  /* Codelets the layer groups are bound to and run with; NULL loads the
   * shipped library (cov_codelet_lib_load(NULL, ...)), owned by the model.
   * A library passed here must outlive the model. */
  const cov_codelet_lib *codelets;
  int no_fold; /* keep constant subgraphs as operations (debugging) */
  int no_fuse; /* one layer group per operation (debugging) */
  /* The largest tensor the model may make, in bytes, checked wherever a
   * shape is inferred (loading) or made concrete (running) before anything
   * is allocated; 0: COV_DEFAULT_MAX_MEMORY (2 GiB). At most
   * COV_TENSOR_MAX_BYTES. */
  uint64_t max_memory;
  /* Input shapes bound before shape inference (n_shapes of them, one per
   * input at most): the loaded model then has those inputs static, and
   * every shape inferred from them. An input not named keeps the dims the
   * model gives it. */
  const cov_model_shape *shapes;
  size_t n_shapes;
  /* Compute a 16-bit model in f32: after shape inference every f16 / bf16
   * value (inputs, weights, activations, outputs; casts to them) is f32,
   * so runs take and give f32 and every group binds f32 codelets;
   * cov_model_io_dtype still says what the model declares. */
  int compute_f32;
  /* Describe each time step of an LSTM, GRU or RNN node (one direction)
   * as one codelet call (lstm_cell, gru_cell, rnn_cell: codelets/rnn.cdl)
   * that reads the step's row of the input projection and the previous
   * state and computes the recurrent product, the gates and the new
   * state, rather than as its unrolled matmul and element-wise nodes: a
   * backend that compiles a call into one kernel then runs a step in one
   * launch (two for a GRU without linear_before_reset). Nodes the cells
   * do not cover (other activations, LSTM's input_forget, a batch not
   * known at load) are unrolled as without it. */
  int recurrent_cells;
  /* > 0: dim 0 of every input (rank >= 1) becomes this, whether the model
   * leaves it symbolic or fixes it, before shape inference: a model
   * exported at one batch loaded at another (a compiler's batch-1 sibling
   * for estimates). A model whose nodes hard-code its batch (a Reshape to
   * [32, -1]) then fails to load, naming the node. */
  int64_t rebatch;
} cov_model_options;

/* Reads and prepares a model. `opts` may be NULL. On failure *out is NULL and
 * the chain holds every error found (all unsupported operators in one
 * diagnostic), each naming the node or tensor. */
COV_API cov_status cov_model_load_file(const char *path, const cov_model_options *opts, cov_model **out);
/* `name` is the file name used in diagnostics; `base_dir` is the folder that
 * external data locations are relative to (NULL refuses external data). */
COV_API cov_status cov_model_load_buffer(const void *data, size_t size, const char *name,
                                         const char *base_dir, const cov_model_options *opts,
                                         cov_model **out);
COV_API void cov_model_free(cov_model *model);

/* Graph inputs (initializers excluded) and outputs, in the model's order.
 * From ONNX IR version 4 on, an input that shares an initializer's name
 * has that initializer as its default value: a run given a tensor with
 * data NULL for it (dtype and shape ignored) uses the default; one given
 * data overrides it. (Before IR version 4 such initializers are constants,
 * not inputs.) */
COV_API size_t cov_model_num_inputs(const cov_model *model);
COV_API size_t cov_model_num_outputs(const cov_model *model);
COV_API const char *cov_model_input_name(const cov_model *model, size_t i);
COV_API const char *cov_model_output_name(const cov_model *model, size_t i);
/* Whether input i has a default value (above). */
COV_API bool cov_model_input_has_default(const cov_model *model, size_t i);
/* Index of the input called `name`, or -1. */
COV_API int cov_model_find_input(const cov_model *model, const char *name);
/* Declared dtype and shape of input i: dims the model leaves symbolic or
 * unknown are -1. */
COV_API cov_status cov_model_input_info(const cov_model *model, size_t i, cov_dtype *dtype, int *rank,
                                        int64_t shape[COV_MAX_RANK]);
/* The same for output i, as shape inference left it at load time (rank -1
 * when unknown). */
/* The dtype input i (output: nonzero) is declared with in the model: that of
 * cov_model_input_info / cov_model_output_info, except where compute_f32
 * widened it (f16 or bf16 there, f32 here). INVALID for no such one. */
COV_API cov_dtype cov_model_io_dtype(const cov_model *model, int output, size_t i);
/* The values integer input i may take, [*lo, *hi], for random inputs that
 * are valid ones: 1 where the model tells (bool {0, 1}; i8 / u8 their
 * range; an i32 / i64 read as a Gather's indices, directly or through
 * value-keeping data movement: the rows of the smallest table it indexes),
 * 2 for an i32 / i64 it does not ({0, 1}, a mask's values), 0 for a
 * floating-point input. */
COV_API int cov_model_input_range(const cov_model *model, size_t i, int64_t *lo, int64_t *hi);
/* Which dims of input i the model itself leaves symbolic or unknown (bit d
 * for dim d), whether or not cov_model_options.shapes bound them since. */
COV_API unsigned cov_model_input_symbolic(const cov_model *model, size_t i);
/* Whether loading unrolled an LSTM, GRU or RNN node of the model's graph
 * into its time steps (cov_model_options.recurrent_cells says how). */
COV_API bool cov_model_unrolls_recurrence(const cov_model *model);
/* Parses "NAME=DIMS" (DIMS: positive integers separated by 'x' or ',', e.g.
 * "input=3x3x32x32"; "NAME=" with no dims is a scalar) into *out; out->name
 * points into text, whose '=' becomes a NUL, so text must be writable and
 * outlive *out. `what` names the text in errors (an option). */
COV_API cov_status cov_model_shape_parse(char *text, const char *what, cov_model_shape *out);
COV_API cov_status cov_model_output_info(const cov_model *model, size_t i, cov_dtype *dtype, int *rank,
                                         int64_t shape[COV_MAX_RANK]);
COV_API size_t cov_model_num_groups(const cov_model *model);

/* `covenant inspect`: inputs, outputs, operators, parameters, and each layer
 * group with its nodes, shapes, codelets and MACs. Deterministic. */
COV_API cov_status cov_model_print_summary(const cov_model *model, FILE *out);
/* Every node after the passes, with attributes and inferred types. */
COV_API cov_status cov_model_print_graph(const cov_model *model, FILE *out);

/* Runs the model on the CPU reference target: layout operations directly,
 * every compute operation through the codelet interpreter. `inputs` are in
 * cov_model_input_name order and must match the declared dtypes and static
 * dims. On success the n_outputs outputs (cov_model_output_name order) are
 * allocated here; release each with cov_tensor_release. */
COV_API cov_status cov_model_run_ref(const cov_model *model, const cov_tensor *inputs, size_t n_inputs,
                                     cov_tensor *outputs, size_t n_outputs);

/* The supported ONNX operators, one "OpType<TAB>layout|compute" per line,
 * sorted (layout operations run in the frontend, compute ones through
 * codelets). */
COV_API void cov_model_print_supported_ops(FILE *out);

/* Reads an ONNX TensorProto file (the conformance suite's input_0.pb) into
 * a tensor; `out_name` (may be NULL) receives the tensor's name or "" in a
 * buffer of `name_size` bytes. */
COV_API cov_status cov_onnx_tensor_read(const char *path, cov_tensor *out, char *out_name,
                                        size_t name_size);

/* ---- backend hook (appended) --------------------------------------------
 * Lets a backend execute the model's compute work: for every codelet call of
 * a compute node, in execution order, `fn` is called first. It either
 * computes the call's outputs (allocating out[0..n_out-1], the dtypes and
 * element counts shape inference expects) and sets *handled = 1, or sets
 * *handled = 0 and the frontend runs the codelet interpreter as usual.
 * Layout operations always run in the frontend. */
typedef struct cov_model_call {
  const char *node;    /* ONNX node name (or its op type when unnamed) */
  int group;           /* layer group index */
  const char *codelet; /* codelet name */
  const cov_attr *attrs;
  size_t n_attrs;
  const cov_tensor *in;
  size_t n_in;
} cov_model_call;
typedef cov_status (*cov_model_call_fn)(void *user, const cov_model_call *call, cov_tensor *out,
                                        size_t n_out, int *handled);
COV_API cov_status cov_model_run_with(const cov_model *model, const cov_tensor *inputs, size_t n_inputs,
                                      cov_tensor *outputs, size_t n_outputs, cov_model_call_fn fn,
                                      void *user);

/* One layer group's work, for cost estimates (exploration studies): MACs,
 * and the elements it reads and writes across its boundary. */
typedef struct cov_model_group_info {
  const char *kind;    /* "conv+bias+relu", "layout", ... (owned by the model) */
  int layout;          /* data movement run by the frontend itself */
  int64_t macs;        /* -1 when a shape is unknown */
  int64_t in_elems;    /* non-constant values read from outside the group */
  int64_t const_elems; /* constants (weights, bias) read */
  int64_t out_elems;   /* values the group produces that others (or outputs) read */
  const char *node;    /* its first node's name (owned by the model) */
  /* Layout groups only: NULL when the group moves run-time elements bit for
   * bit (or touches only constants and shapes), else why it does not (a
   * static string): a Cast/CastLike of run-time values to another element
   * type that is not an exact widening, TopK (it selects by value), a
   * Scatter with a reduction, or element positions that depend on run-time
   * integers. Backends that run data movement as copies refuse these. */
  const char *alters;
} cov_model_group_info;
COV_API cov_status cov_model_group_get_info(const cov_model *model, size_t i, cov_model_group_info *out);

/* ---- a group's codelet calls (appended) --------------------------------
 * What a backend needs to compile one compute layer group as a single layer
 * (e.g. a mapper layer with an epilogue): the group's codelet calls in order,
 * each with its codelet, attributes, and inputs, each input being
 *   - COV_MODEL_ARG_EXTERNAL: a value from outside the group (a graph input
 *     or another group's result), by index into the group's inputs;
 *   - COV_MODEL_ARG_CONST: a model constant (weights, bias), with its data;
 *   - COV_MODEL_ARG_PREV: the previous call's result;
 * seen with the dtype and shape the codelet sees (views: a relu sees its
 * input flattened). The description is found by running the group's nodes
 * through the same lowering the interpreter uses, with a recorder in place of
 * the codelets, so it is exactly what the reference target computes.
 *
 * Only groups that are one chain of single-result calls with one result read
 * outside the group are described; any other group (layout work, a node that
 * rearranges data between its calls, a call reading an older result, shapes
 * not known until run time) gives an error saying why, naming the node. */
typedef struct cov_model_group cov_model_group;
typedef enum cov_model_arg_kind {
  COV_MODEL_ARG_EXTERNAL = 1,
  COV_MODEL_ARG_CONST,
  COV_MODEL_ARG_PREV,
} cov_model_arg_kind;
typedef struct cov_model_arg {
  cov_model_arg_kind kind;
  int input;         /* EXTERNAL: index in the group's inputs; else -1 */
  const char *value; /* EXTERNAL, CONST: the model value's name; PREV: NULL */
  cov_tensor t;      /* dtype and shape as the codelet sees them; data only for
                        CONST (read-only, owned by the model) */
} cov_model_arg;
typedef struct cov_model_group_call {
  const char *node;    /* ONNX node that makes this call */
  const char *codelet; /* codelet name */
  const cov_attr *attrs;
  size_t n_attrs;
  const cov_model_arg *args; /* the codelet's inputs, in its order */
  size_t n_args;
  cov_tensor out;      /* dtype and shape of the result (data NULL) */
} cov_model_group_call;

/* Describes group i with the shapes known at load time (every input of the
 * group must have a static shape). The description refers to the model's
 * constants: free it before the model. */
COV_API cov_status cov_model_group_describe(const cov_model *model, size_t i, cov_model_group **out);
COV_API void cov_model_group_free(cov_model_group *grp);
COV_API size_t cov_model_group_index(const cov_model_group *grp);
/* The name of its first node, and its kind ("conv+bias+relu+maxpool"). */
COV_API const char *cov_model_group_name(const cov_model_group *grp);
COV_API const char *cov_model_group_kind(const cov_model_group *grp);
/* The codelet library its calls' codelets come from (the model's, owned by
 * it or by the caller that passed cov_model_options.codelets). */
COV_API const cov_codelet_lib *cov_model_group_codelets(const cov_model_group *grp);
COV_API size_t cov_model_group_num_calls(const cov_model_group *grp);
COV_API const cov_model_group_call *cov_model_group_call_at(const cov_model_group *grp, size_t c);
/* The group's inputs from outside it (what EXTERNAL args index), in order of
 * first use: the model value's name and its dtype and shape (data NULL). */
COV_API size_t cov_model_group_num_inputs(const cov_model_group *grp);
COV_API const char *cov_model_group_input(const cov_model_group *grp, size_t k, cov_tensor *shape_only);
/* The one result read outside the group (the last call's result, which may
 * be reshaped: a 1-D conv's [N, C, 1, W] is the value's [N, C, W]). */
COV_API const char *cov_model_group_output(const cov_model_group *grp, cov_tensor *shape_only);
/* The group containing the node called `name`; -1 when there is none. */
COV_API int cov_model_find_node_group(const cov_model *model, const char *name);

/* ---- group-level backend hook (appended) -------------------------------
 * cov_model_run_groups offers each compute group to `group` first, in
 * execution order, with the group's external inputs (concrete values) and
 * its description at the run's concrete shapes. `desc` is NULL when the group
 * cannot be described (why_not says why, e.g. "node 'ln' (LayerNormalization):
 * call 2 reads the result of call 0"). The backend either computes the
 * group's result into out[0] (allocated with cov_tensor_alloc; the dtype and
 * element count of the description's output) and sets *handled = 1, and
 * none of the group's calls runs; or sets *handled = 0, and the group runs
 * node by node with `call` offered each codelet call as in
 * cov_model_run_with (NULL: the interpreter runs them). Either hook may be
 * NULL. Layout groups always run in the frontend.
 *
 * An offered description may have inputs that are no model value: a tensor
 * a node computes from the group's inputs before its first call (the copy
 * of a value a reduction over non-trailing axes makes with those axes
 * moved last). Such an input is named "NODE:callC.inK" (call C's input K)
 * and offered, like the others, with its concrete data in `in`; a
 * description made by cov_model_group_describe, which has no data, refuses
 * such a group instead. */
typedef struct cov_model_group_offer {
  int group;                    /* group index */
  const char *kind;             /* "conv+bias+relu+maxpool" */
  const cov_model_group *desc;  /* NULL when not describable */
  const char *why_not;          /* when desc is NULL: the reason (first line) */
  const cov_tensor *in;         /* the group's inputs (desc order), concrete */
  size_t n_in;
} cov_model_group_offer;
typedef cov_status (*cov_model_group_fn)(void *user, const cov_model_group_offer *offer,
                                         cov_tensor *out, size_t n_out, int *handled);
COV_API cov_status cov_model_run_groups(const cov_model *model, const cov_tensor *inputs, size_t n_inputs,
                                        cov_tensor *outputs, size_t n_outputs, cov_model_group_fn group,
                                        cov_model_call_fn call, void *user);
/* As cov_model_run_groups, and the layout groups that are embedding
 * lookups (a lone Gather on axis 0 of a constant float [V, D] table at
 * run-time integer indices) are offered too, described as one call of
 * codelet gather_rows (x: the table, ids: the indices flattened to [N]);
 * the group's output is the Gather's [ids dims..., D]. So are the other
 * lone Gathers at run-time indices (any axis; codelet gather_axis, the
 * data as [A, V, B] around the axis) and the lone Casts and CastLikes of
 * run-time values that are not exact widenings, described as one
 * call of codelet cast_<to> (codelets/cast.cdl: cast_f32, cast_i64,
 * cast_bool, ...) on the input flattened to [N]; the output is the Cast's.
 * Other layout groups run in the frontend as always. */
COV_API cov_status cov_model_run_groups_gathering(const cov_model *model, const cov_tensor *inputs, size_t n_inputs,
                                                  cov_tensor *outputs, size_t n_outputs, cov_model_group_fn group,
                                                  cov_model_call_fn call, void *user);

/* ---- the operator table (appended) --------------------------------------
 * Every ONNX operator the frontend reads, in the order of its table (sorted
 * by op type within a domain): for listings such as `covenant ops`. */
#define COV_ONNX_OP_CODELET_SLOTS 8
typedef struct cov_onnx_op {
  const char *op_type;  /* "Conv" */
  const char *domain;   /* "ai.onnx" or "com.microsoft" */
  int since, until;     /* the opsets of its domain covenant reads it at */
  const int *versions;  /* opsets where its definition changed, 0-terminated */
  int layout;           /* data movement the frontend runs itself (no codelet) */
  /* the codelets a node of this type lowers to, with every optional input
   * given and default attributes (some attributes choose others) */
  const char *codelets[COV_ONNX_OP_CODELET_SLOTS];
  int n_codelets;
} cov_onnx_op;
COV_API size_t cov_onnx_op_count(void);
/* Fills *out with operator i (static strings); COV_OUT_OF_RANGE past the end. */
COV_API cov_status cov_onnx_op_at(size_t i, cov_onnx_op *out);

/* ---- sequences and optionals as model inputs and outputs ---------------
 * An ONNX model's inputs and outputs may be sequences of tensors or
 * optionals (ONNX's seq(tensor(T)) and optional(tensor(T))); covenant runs
 * those on the reference target. A cov_sequence holds one such value: a
 * list of tensors of one dtype (each with its own shape), at most
 * COV_SEQUENCE_MAX_LENGTH of them; an optional is a sequence of at most one
 * tensor (empty: the optional has no value); an optional of a sequence
 * (optional(seq(tensor(T)))) holds a sequence or none. Sequences of
 * sequences, and optionals of optionals, are not supported. */
typedef struct cov_sequence cov_sequence;
#define COV_SEQUENCE_MAX_LENGTH 65536

typedef enum cov_value_kind {
  COV_VALUE_TENSOR = 0,
  COV_VALUE_SEQUENCE = 1, /* seq(tensor(T)) */
  COV_VALUE_OPTIONAL = 2, /* optional(tensor(T)) */
  COV_VALUE_OPTIONAL_SEQUENCE = 3, /* optional(seq(tensor(T))) */
} cov_value_kind;

/* What input i (output: nonzero) is; COV_VALUE_TENSOR for no such one. */
COV_API cov_value_kind cov_model_io_kind(const cov_model *model, int output, size_t i);

/* An empty sequence (optional: an optional with no value) of dtype. */
COV_API cov_status cov_sequence_create(cov_dtype dtype, bool optional, cov_sequence **out);
/* An optional of a sequence of dtype: none (holding no sequence; nothing
 * may be appended), or holding an empty sequence that takes appends. */
COV_API cov_status cov_sequence_create_optional_sequence(cov_dtype dtype, bool none,
                                                         cov_sequence **out);
/* COV_VALUE_SEQUENCE, COV_VALUE_OPTIONAL or COV_VALUE_OPTIONAL_SEQUENCE. */
COV_API cov_value_kind cov_sequence_kind(const cov_sequence *seq);
/* An optional of a sequence that holds none. */
COV_API bool cov_sequence_is_none(const cov_sequence *seq);
/* Appends a copy of t, which must have the sequence's dtype; an optional
 * takes one tensor, a sequence up to COV_SEQUENCE_MAX_LENGTH. */
COV_API cov_status cov_sequence_append(cov_sequence *seq, const cov_tensor *t);
COV_API size_t cov_sequence_length(const cov_sequence *seq);
/* Element k (NULL past the end), owned by the sequence. */
COV_API const cov_tensor *cov_sequence_at(const cov_sequence *seq, size_t k);
COV_API cov_dtype cov_sequence_dtype(const cov_sequence *seq);
COV_API bool cov_sequence_is_optional(const cov_sequence *seq);
COV_API void cov_sequence_free(cov_sequence *seq);

/* cov_model_run_ref for models with sequence or optional inputs and
 * outputs: input i is seq_inputs[i] where cov_model_io_kind says it is not
 * a tensor (inputs[i] is then ignored), inputs[i] otherwise; output k goes
 * to seq_outputs[k] (allocated here; free with cov_sequence_free) or to
 * outputs[k]. seq_inputs and seq_outputs may be NULL for a model with only
 * tensors there. */
COV_API cov_status cov_model_run_ref_values(const cov_model *model, const cov_tensor *inputs,
                                            const cov_sequence *const *seq_inputs, size_t n_inputs,
                                            cov_tensor *outputs, cov_sequence **seq_outputs,
                                            size_t n_outputs);

/* Reads an ONNX SequenceProto (optional: OptionalProto) file of tensors,
 * as the conformance suite ships a sequence's or an optional's data, into
 * a new sequence; `dtype` is the one an empty sequence or optional gets.
 * Nested sequences, maps and sparse tensors are refused. */
COV_API cov_status cov_onnx_sequence_read(const char *path, cov_dtype dtype, bool optional,
                                          cov_sequence **out);
/* Reads an ONNX OptionalProto file that holds a SequenceProto of tensors,
 * or nothing (none), into a new optional of a sequence of dtype. */
COV_API cov_status cov_onnx_optional_sequence_read(const char *path, cov_dtype dtype,
                                                   cov_sequence **out);

/* ---- the model as a program (appended) ----------------------------------
 * For compilers of artifacts whose control runs on the host (runtime/
 * README.md, "Host steps and control"): the model's layer groups in
 * execution order, a Loop or If node opened into its subgraphs' groups
 * between markers, each data movement the program can hold a copy, and
 * every value at one shape. Shapes are the load-time ones where static;
 * inside subgraphs (whose loop-carried values have no static shape at
 * load) they are the ones a run on `probe` gives, which must be the same
 * in every iteration and branch run; a value whose shape changes, or that
 * an operator makes with a data-dependent size, has none, and the steps
 * that need it are COV_PSTEP_MISSING saying so. */
typedef enum cov_model_pstep_kind {
  COV_PSTEP_GROUP = 1, /* a compute group: desc */
  COV_PSTEP_COPY,      /* vals[0]'s bytes into vals[1] (Identity, reshapes, loop state) */
  COV_PSTEP_LOOP,      /* a loop begins: vals = trip count, condition, the body's iteration
                          number and condition inputs (each NULL when absent or unused) */
  COV_PSTEP_NEXT,      /* the body ends: vals = the body's condition result (or NULL), then
                          pairs (body result, body input) copied before the next iteration */
  COV_PSTEP_IF,        /* vals[0]: the condition; the then branch follows */
  COV_PSTEP_ELSE,      /* the else branch follows */
  COV_PSTEP_END,       /* the If ends */
  COV_PSTEP_MISSING,   /* work the program cannot hold: why */
  COV_PSTEP_PART,      /* part of the top-level graph run on the host (cov_model_run_part):
                          vals = its n_in inputs, then its outputs. One node the program has
                          no other step for (layout work), or, last, everything whose size
                          depends on the data, its outputs graph outputs with a capacity
                          (cov_model_program_capacity) */
} cov_model_pstep_kind;
typedef struct cov_model_pstep {
  cov_model_pstep_kind kind;
  size_t group;                /* the group's index in its graph */
  const char *node;            /* its first node */
  const char *kind_name;       /* "gemm+bias", "layout", "loop" */
  const cov_model_group *desc; /* GROUP */
  const char *const *vals;
  size_t n_vals;
  const char *why;             /* MISSING */
  size_t n_carried;            /* NEXT: the carried pairs (the rest of vals are scan pairs) */
  size_t n_in;                 /* PART: its inputs among vals */
} cov_model_pstep;
typedef struct cov_model_program cov_model_program;
/* probe: one tensor per model input (the run that gives subgraphs their
 * shapes; not run when the model has no subgraph). */
COV_API cov_status cov_model_program_build(const cov_model *model, const cov_tensor *probe, size_t n_probe,
                                           cov_model_program **out);
COV_API size_t cov_model_program_count(const cov_model_program *p);
COV_API const cov_model_pstep *cov_model_program_step(const cov_model_program *p, size_t i);
/* A value a step names: its dtype and shape (rank -1: none), data for a
 * constant (owned by the model), else NULL; false when no step names it. */
/* Capacities (runtime/README.md, "Data-dependent sizes"): the most
 * elements any one value whose size depends on the data may hold in an
 * artifact; a larger bound is an error when the program is built. */
#define COV_PROGRAM_MAX_CAPACITY_ELEMS ((int64_t)1 << 24)
/* An output of the PART step: its capacity (the shape a run in bound mode
 * gives it, each dim the most it takes) in *cap and, in *dynamic, bit d
 * for each dim whose size depends on the data. False for other names. */
COV_API bool cov_model_program_capacity(const cov_model_program *p, const char *name, cov_tensor *cap,
                                        unsigned *dynamic);
/* Runs the part of a model that makes out_names[] from in_names[] (given
 * at concrete shapes, data borrowed) in the reference interpreter: the
 * nodes those outputs need that nothing given makes, constants read from
 * the model. out[k] is allocated at the shape the run gives. */
typedef struct cov_model_part {
  const char *const *in_names;
  const cov_tensor *in;
  size_t n_in;
  const char *const *out_names;
  cov_tensor *out;
  size_t n_out;
} cov_model_part;
COV_API cov_status cov_model_run_part(const cov_model *model, const cov_model_part *part);
COV_API bool cov_model_program_value(const cov_model_program *p, const char *name, cov_tensor *out);
COV_API void cov_model_program_free(cov_model_program *p);
/* cov_model_program_build on the probe every artifact compiler uses
 * (frontend/model_probe.c): each input at its fixed shape (a symbolic dim
 * is refused, located at the input in `path`, naming --shape) and
 * deterministic values, so that an artifact's bytes depend on nothing
 * else: floats uniform in [-1, 1), integers in the input's range
 * (cov_model_input_range) or 0, bools true. At most 64 inputs. */
COV_API cov_status cov_model_program_build_probe(const cov_model *model, const char *path,
                                                 cov_model_program **out);
/* Model input i (output != 0: output i) as an artifact's buffer holds it:
 * the model's dtype, and the shape of a part output's capacity (*dynamic:
 * the dims set at run time, cov_model_program_capacity), else the
 * program's (a value a Loop or If makes), else the model's. A value with
 * no fixed shape or a symbolic dim is refused, located at it in `path`. */
COV_API cov_status cov_model_program_io(const cov_model_program *p, const cov_model *model, const char *path,
                                        int output, size_t i, cov_tensor *shape, unsigned *dynamic);

#ifdef __cplusplus
}
#endif
#endif
