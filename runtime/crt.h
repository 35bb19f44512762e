/* runtime/crt.h: covenant's compiled-model artifacts and the runtime that
 * runs them (prefix crt_).
 *
 * An artifact (format in runtime/README.md) is one file: a fixed header, a
 * JSON manifest and a data section of blobs (code objects, NPU programs,
 * weights). The manifest names the target, the buffers (inputs, outputs,
 * weights, intermediates placed in one arena by lifetime, views), the model
 * inputs and outputs, and the steps that run the model (kernel launches,
 * fills, NPU programs) with their arguments.
 *
 * Producers (covenant compile) build artifacts with crt_builder; the
 * runtime (covenant-run, covenant run) reads them with crt_artifact_read and
 * runs them with crt_session. This part depends on libc and
 * covenant/status.h only, so it builds on a GPU machine without LLVM or
 * Jansson (runtime/CMakeLists.txt). */
#ifndef CRT_H
#define CRT_H

#include <stddef.h>
#include <stdint.h>

#include "covenant/status.h"
#include "covenant/tensor.h"

/* the format this runtime writes at most and reads: version 2 adds
 * tensor-map arguments ({"tmap": ...}), version 3 the embedded ACG of an
 * npu-sim artifact ("acg": blob); an artifact needing neither is written
 * as version 1, byte for byte as before */
#define CRT_FORMAT_VERSION 5
#define CRT_FORMAT_VERSION_MIN 1
#define CRT_FORMAT_VERSION_TMAP 2
#define CRT_FORMAT_VERSION_ACG 3
#define CRT_FORMAT_VERSION_SYMBOLIC 4 /* an input's symbolic dims or value range */
#define CRT_FORMAT_VERSION_CONTROL 5  /* host steps (copy, codelet calls) and control (loop, if) */
#define CRT_MAGIC "\x7f" "COVART\n"
#define CRT_HEADER_BYTES 64
#define CRT_ALIGN 256 /* blobs, weights and arena offsets */

/* Limits a reader enforces (bad input gets an error, never a huge allocation). */
#define CRT_MAX_MANIFEST_BYTES (64u << 20)
#define CRT_MAX_ITEMS 100000 /* blobs, modules, buffers, steps, args of one step */
#define CRT_MAX_BYTES (1ull << 40)
/* Iterations of one loop step per run (as the frontend's
 * GRAPH_MAX_LOOP_ITERATIONS), and steps one run may execute in all. */
#define CRT_MAX_LOOP_ITERATIONS 100000
#define CRT_MAX_RUN_STEPS ((int64_t)1 << 26)
/* Values one part step names (its inputs and outputs). */
#define CRT_MAX_PART_VALUES 4096

typedef enum crt_buf_kind {
  CRT_BUF_INPUT,        /* a model input: written by the caller before each run */
  CRT_BUF_OUTPUT,       /* a model output: read back after each run */
  CRT_BUF_WEIGHT,       /* constant; initial contents from a blob, uploaded once */
  CRT_BUF_INTERMEDIATE, /* lives in the arena at `offset` (lifetime-based reuse) */
  CRT_BUF_VIEW,         /* bytes [offset, offset + bytes) of buffer `of` (a reshape) */
} crt_buf_kind;

typedef struct crt_buffer {
  const char *name;
  crt_buf_kind kind;
  cov_dtype dtype; /* of the elements, as the kernels see them */
  int rank;
  int64_t shape[COV_MAX_RANK];
  uint64_t bytes;
  int blob;        /* weights: the blob holding the contents; else -1 */
  uint64_t offset; /* intermediates: in the arena; views: in `of` */
  int of;          /* views: the buffer viewed; else -1 */
  int first, last; /* intermediates: the first and last step using it */
  unsigned dynamic; /* bit d: dim d's size is set at run time (by a part step), shape[d] its capacity */
} crt_buffer;

typedef enum crt_arg_kind { CRT_ARG_BUFFER, CRT_ARG_I32, CRT_ARG_I64, CRT_ARG_F32, CRT_ARG_TMAP } crt_arg_kind;

/* A kernel argument: a device address (buffer + byte offset), a scalar, or
 * (format version 2) the device address of a tensor map over a buffer: the
 * runtime builds the driver's 2-D CUtensorMap of the row-major
 * [rows][cols] matrix of 16-bit elements (the buffer's dtype, f16 or bf16)
 * at buffer + offset, boxes of box_rows x box_cols, 128-byte swizzle (what
 * the warp-specialised kernels' bulk tensor copies read), uploads it once
 * when the session opens and passes its address. */
typedef struct crt_arg {
  crt_arg_kind kind;
  int buffer;
  uint64_t offset;
  int64_t i;
  float f;
  uint64_t rows, cols;        /* CRT_ARG_TMAP */
  uint32_t box_rows, box_cols, swizzle;
} crt_arg;

typedef enum crt_step_op {
  CRT_STEP_LAUNCH,
  CRT_STEP_FILL,
  CRT_STEP_NPU,
  /* format version 5 (runtime/README.md, "Host steps and control") */
  CRT_STEP_COPY, /* refs: from, to (the same bytes) */
  CRT_STEP_HOST, /* a codelet call on the host: views = its arguments, then its result */
  CRT_STEP_LOOP, /* refs: trip count, condition, iteration number, body condition (-1: none); target: its next */
  CRT_STEP_NEXT, /* refs: the body's condition (-1: none), then n_carry (from, to) pairs carried, then
                    (slice, stacked) pairs of scan outputs (row k of stacked <- slice in iteration k);
                    target: its loop */
  CRT_STEP_IF,   /* refs: the condition; target: the first step of the else branch */
  CRT_STEP_JUMP, /* target: the step after the If */
  CRT_STEP_PART, /* part of the model (the artifact's "onnx") run in the reference interpreter on the
                    host: refs = n_in input buffers, then output buffers; values = their value names */
} crt_step_op;

/* A buffer as a host step's codelet sees it (its bytes, another shape). */
typedef struct crt_view {
  int buffer;
  cov_dtype dtype;
  int rank;
  int64_t shape[COV_MAX_RANK];
} crt_view;

/* A host step's attribute (as cov_attr). */
typedef struct crt_attr {
  const char *name;
  int is_float;
  int64_t i;
  double f;
} crt_attr;

/* An NPU program tensor bound to a buffer. */
typedef struct crt_bind {
  const char *tensor;
  int buffer;
} crt_bind;

typedef struct crt_step {
  crt_step_op op;
  const char *label; /* the layer group's first node, for reports */
  int group;         /* the model's layer group, -1 if none */
  /* launch */
  int module;
  const char *kernel;
  uint32_t grid[3], block[3], shared_bytes;
  crt_arg *args;
  int n_args;
  /* fill: `bytes` bytes of `value` at `offset` of `buffer` */
  int buffer;
  uint64_t offset, bytes;
  unsigned value;
  /* npu: the program in `blob`, its DRAM tensors bound to buffers */
  int blob;
  crt_bind *binds;
  int n_binds;
  /* copy, host and control steps (format version 5) */
  int *refs;
  int n_refs;
  int n_carry; /* next: the carried pairs among refs */
  int target;
  const char *codelet;
  crt_attr *attrs;
  int n_attrs;
  crt_view *views;
  int n_views;
  const char **values; /* part: the model values refs[] hold */
  int n_in;            /* part: its inputs among refs */
} crt_step;

typedef struct crt_blob {
  const char *name;
  uint64_t offset, bytes; /* in the data section */
  uint64_t fnv1a64;
} crt_blob;

typedef struct crt_module {
  const char *name;
  const char *format; /* "ptx" (nvptx) or "hsaco" (amdgpu) */
  int blob;
} crt_module;

/* A model input or output: the host-side dtype and shape, and its buffer
 * (whose dtype may differ: the runtime converts f32 <-> f16/bf16). */
typedef struct crt_io {
  const char *name;
  cov_dtype dtype;
  int rank;
  int64_t shape[COV_MAX_RANK];
  int buffer;
  unsigned symbolic; /* inputs: bit d when the model left dim d symbolic (compiled at shape[d]) */
  int has_range;     /* integer inputs: the values the model takes, [lo, hi] (random inputs use it) */
  int64_t lo, hi;
} crt_io;

typedef struct crt_artifact {
  const char *file; /* the name errors use */
  unsigned version;
  const char *target;   /* the ACG's name, e.g. nvptx-sm90 */
  const char *backend;  /* nvptx | amdgpu | npu-sim */
  const char *arch;     /* sm_90a, gfx942, or the NPU ACG's name */
  const char *model;    /* the source model's file name (no directories) */
  const char *producer; /* "covenant 0.1.0" */
  int acg_blob;         /* npu-sim: the blob holding the ACG the programs were compiled for, or -1 */
  int codelets_blob;    /* version 5: the blob holding the codelets host steps call, or -1 */
  int onnx_blob;        /* version 5: the blob holding the model part steps run, or -1 */
  /* groups the producer could not compile (the runtime refuses to run) */
  const char **missing;
  int n_missing;
  crt_blob *blobs;
  int n_blobs;
  crt_module *modules;
  int n_modules;
  crt_buffer *buffers;
  int n_buffers;
  crt_io *inputs, *outputs;
  int n_inputs, n_outputs;
  crt_step *steps;
  int n_steps;
  uint64_t arena_bytes;  /* all intermediates */
  uint64_t weight_bytes; /* all weights, each at a CRT_ALIGN multiple */
  const uint8_t *data;   /* the data section */
  uint64_t data_bytes;
  const char *manifest; /* the manifest text (NUL-terminated) */
  size_t manifest_bytes;
  void *priv_;
} crt_artifact;

/* Reads an artifact from memory (the bytes are copied) or a file; every
 * error names the file and, for the manifest, line:col and the JSON path
 * (truncated, corrupt, wrong version, inconsistent). */
cov_status crt_artifact_read(const void *bytes, size_t size, const char *name, crt_artifact **out);
cov_status crt_artifact_load(const char *path, crt_artifact **out);
void crt_artifact_free(crt_artifact *a);
const uint8_t *crt_blob_data(const crt_artifact *a, int blob);
/* The buffer a buffer's bytes belong to: itself, or for a view (of a
 * view ...) the buffer at the end of the chain; computed once when read. */
int crt_buffer_root(const crt_artifact *a, int buffer);
/* The weight buffer's offset in the weight region. */
uint64_t crt_weight_offset(const crt_artifact *a, int buffer);
const char *crt_buf_kind_name(crt_buf_kind k);
/* What one inference launches and moves between kernels (crt_traffic.c):
 * kernel launches, fills and NPU programs, and the activation bytes: for
 * every launch each distinct non-weight buffer argument (input, output,
 * intermediate, view) at its full size, read or written, plus the bytes
 * fills zero. An upper bound of the traffic (a kernel may touch part of a
 * buffer) computed the same way for every plan, so plans of one model
 * compare; `covenant compile` and `covenant-run --info` print it. */
typedef struct crt_traffic {
  int launches, fills, npu;
  uint64_t act_bytes;  /* all of the above */
  uint64_t f32_bytes;  /* of which in f32 buffers */
  uint64_t half_bytes; /* of which in 16-bit buffers */
  uint64_t fill_bytes; /* of which zeroed by fills */
} crt_traffic;
void crt_artifact_traffic(const crt_artifact *a, crt_traffic *t);
/* FNV-1a, 64-bit: the artifact's checksum. */
uint64_t crt_fnv1a64(const void *data, size_t n);

/* ---- building artifacts ----------------------------------------------
 * Functions that add return the new item's index, or -1 after an error,
 * which the builder keeps (the first one) and crt_builder_finish returns.
 * Intermediates get their arena offsets at finish, from the steps that use
 * them: buffers whose lifetimes (first..last step) do not overlap share
 * bytes (greedy by size, deterministic). The same calls give the same
 * bytes. */
typedef struct crt_builder crt_builder;

cov_status crt_builder_new(const char *target, const char *backend, const char *arch, const char *model,
                           crt_builder **out);
void crt_builder_free(crt_builder *b);
int crt_add_blob(crt_builder *b, const char *name, const void *data, size_t bytes);
int crt_add_module(crt_builder *b, const char *name, const char *format, const void *code, size_t bytes);
int crt_add_buffer(crt_builder *b, const char *name, crt_buf_kind kind, cov_dtype dtype, int rank,
                   const int64_t *shape, uint64_t bytes);
/* A weight with its contents (bytes of them). */
int crt_add_weight(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape,
                   const void *data, uint64_t bytes);
int crt_add_view(crt_builder *b, const char *name, int of, uint64_t offset, cov_dtype dtype, int rank,
                 const int64_t *shape, uint64_t bytes);
int crt_add_input(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape, int buffer);
/* Input `input` (crt_add_input's index): which of its dims the model left
 * symbolic (bit d), compiled at the shape given; nonzero makes the format
 * version 4. */
void crt_set_symbolic(crt_builder *b, int input, unsigned mask);
/* Integer input `input`: the values the model takes, [lo, hi] (token ids:
 * the rows of the table they index; cov_model_input_range); format
 * version 4. */
void crt_set_range(crt_builder *b, int input, int64_t lo, int64_t hi);
int crt_add_output(crt_builder *b, const char *name, cov_dtype dtype, int rank, const int64_t *shape, int buffer);
int crt_add_launch(crt_builder *b, int group, const char *label, int module, const char *kernel,
                   const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, const crt_arg *args,
                   int n_args);
int crt_add_fill(crt_builder *b, int group, const char *label, int buffer, uint64_t offset, uint64_t bytes,
                 unsigned value);
int crt_add_npu(crt_builder *b, int group, const char *label, int blob, const crt_bind *binds, int n_binds);
/* Embeds the ACG (its canonical JSON, cov_acg_write_json) an npu-sim
 * artifact's programs were compiled for, so the runtime never resolves the
 * manifest's arch as a file name; returns the blob's index. */
int crt_add_acg(crt_builder *b, const char *json, size_t bytes);
/* Format version 5: the codelets' source (host steps call them by name),
 * a copy, a codelet call on the host, and control steps; a loop's and an
 * if's target is set once its end is known. */
int crt_add_codelets(crt_builder *b, const char *text, size_t bytes);
int crt_add_copy(crt_builder *b, int group, const char *label, int from, int to);
int crt_add_host(crt_builder *b, int group, const char *label, const char *codelet, const crt_attr *attrs,
                 int n_attrs, const crt_view *views, int n_views);
int crt_add_control(crt_builder *b, crt_step_op op, int group, const char *label, const int *refs, int n_refs);
void crt_set_target(crt_builder *b, int step, int target);
/* Format version 5: the model (ONNX bytes) part steps run, and a part
 * step: the values values[0..n_in) in buffers[0..n_in) make values
 * [n_in..n_in+n_out) into the rest of buffers (runtime/README.md,
 * "Data-dependent sizes"). */
int crt_add_onnx(crt_builder *b, const void *bytes, size_t n);
int crt_add_part(crt_builder *b, int group, const char *label, const char *const *values, const int *buffers,
                 int n_in, int n_out);
/* crt_add_part for a compiler: the model file at model_path goes into
 * the artifact with the first part step (crt_add_onnx), read here; that
 * read's error is returned, located at the file (the builder's own stay
 * in the builder, as for every crt_add_). Every backend that compiles a
 * model program emits its part steps through this. */
cov_status crt_add_model_part(crt_builder *b, const char *model_path, int group, const char *label,
                              const char *const *values, const int *buffers, int n_in, int n_out);
/* Buffer `buffer`'s dims whose size a part step sets at run time (bit d),
 * its shape their capacity. */
void crt_set_dynamic(crt_builder *b, int buffer, unsigned mask);
/* Whether what a part step made (t) fits a buffer of dtype dt and shape
 * (rank, shape) whose dims `dynamic` (bit d) are capacities: the same
 * dtype and rank, every fixed dim equal, every dynamic one at most its
 * capacity. The runtime's check (crt_host.c) and the compilers'
 * emulations of part steps use this one rule. */
int crt_part_fits(cov_dtype dt, int rank, const int64_t *shape, unsigned dynamic, const cov_tensor *t);
/* A next step's first n_carry pairs are carried values, the rest scan
 * outputs (by default all are carried). */
void crt_set_carried(crt_builder *b, int step, int n_carry);
int crt_builder_num_steps(const crt_builder *b);
/* A group the producer could not compile; the artifact is written (for
 * inspection) but the runtime refuses to run it, listing these. */
void crt_add_missing(crt_builder *b, const char *why);
/* Records an error in the builder (a producer's failure; the builder takes st). */
void crt_builder_fail(crt_builder *b, cov_status st);
/* The builder's first error, borrowed (NULL while all is well). */
cov_status crt_builder_status(const crt_builder *b);
int crt_builder_num_buffers(const crt_builder *b);
/* Plans the arena and writes the artifact bytes (*out malloc'ed); the
 * builder's first error, if any, is returned instead (the caller owns it). */
cov_status crt_builder_finish(crt_builder *b, uint8_t **out, size_t *size);
/* crt_builder_finish into a file. */
cov_status crt_builder_write(crt_builder *b, const char *path);

static inline crt_arg crt_buf_arg(int buffer, uint64_t offset) {
  crt_arg a = {CRT_ARG_BUFFER, buffer, offset, 0, 0.0f, 0, 0, 0, 0, 0};
  return a;
}

/* A tensor-map argument (128-byte swizzle; crt_arg). */
static inline crt_arg crt_tmap_arg(int buffer, uint64_t offset, uint64_t rows, uint64_t cols, uint32_t box_rows,
                                   uint32_t box_cols) {
  crt_arg a = {CRT_ARG_TMAP, buffer, offset, 0, 0.0f, rows, cols, box_rows, box_cols, 128};
  return a;
}

/* The checks of a tensor-map argument over a buffer of `bytes` bytes and
 * element size `esize`: NULL, or what is wrong (static text). */
const char *crt_tmap_problem(const crt_arg *x, uint64_t bytes, int esize);

/* ---- running artifacts ----------------------------------------------- */
typedef struct crt_session crt_session;

typedef struct crt_options {
  const char *expect_target; /* NULL, or refuse artifacts for another target */
  int no_graph;              /* time with plain launches instead of a CUDA graph */
  uint64_t max_npu_insns;    /* npu-sim: dynamic instructions a program may run (0: the simulator's default) */
  uint64_t max_npu_work;     /* npu-sim: element work a program may do (0: the simulator's default) */
  uint64_t max_dynamic_elems; /* elements a part step's output may hold in a run, below its capacity (0: none) */
} crt_options;

/* Opens the device the artifact's backend names (CUDA driver for nvptx, HIP
 * for amdgpu, the NPU simulator for npu-sim; dlopen'ed), checks that the
 * device is the one the code was compiled for, loads the code, allocates
 * the arena, the weights (uploaded once) and the inputs/outputs. Without a
 * driver: COV_DEVICE_ERROR "no NVIDIA driver: ...". */
cov_status crt_session_open(const crt_artifact *a, const crt_options *opts, crt_session **out);
void crt_session_close(crt_session *s);
const char *crt_session_device(const crt_session *s);
/* One run: inputs (in the artifact's input order, host dtype and shape)
 * uploaded, every step run on the device (intermediates stay there),
 * outputs (allocated here, f32 or the output's dtype) downloaded. */
/* Whether inputs (the artifact's order) have the dtypes and shapes it was
 * compiled for; an input whose differing dims the model left symbolic is
 * told how to compile for it (--shape). crt_session_run checks this first. */
cov_status crt_check_inputs(const crt_artifact *a, const cov_tensor *inputs, size_t n_inputs);
cov_status crt_session_run(crt_session *s, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                           size_t n_outputs);
/* Times the steps alone on the inputs of the last run: `warmup` runs, then
 * `iters` runs between two device events (captured once in a CUDA graph and
 * replayed, unless opts.no_graph); *ms = mean time of one run. */
cov_status crt_session_time(crt_session *s, int warmup, int iters, double *ms, const char **how);
/* Where a run's time goes: after one warm-up run, `iters` runs in which
 * every device step, after running once in order, is launched alone 10
 * times back to back between two CUDA events; step_ms[i] (a->n_steps
 * entries) = its mean time per run (a step in a loop counts each time the
 * loop runs it), 0 for host steps. Launches back to back, not replayed
 * from a graph: the smallest kernels read about their launch interval.
 * The outputs of the run before are no longer in the buffers. CUDA only. */
cov_status crt_session_profile(crt_session *s, int iters, double *step_ms);

#endif
