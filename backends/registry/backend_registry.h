/* backends/registry/backend_registry.h: the backend interface and its
 * registry, the one module above every backend (cmake/modules.txt).
 *
 * In the manner of IREE's HAL driver registry: every backend is one row of
 * entry points (backend_info), and nothing above the registry asks which
 * backend it is talking to. A target is "ref" (the CPU reference
 * interpreter, the oracle every backend is checked against) or an ACG,
 * whose backend.name picks its row here; nothing else in covenant switches
 * on backend names (tests/arch/check_backend_names.py holds the CLI and
 * explore to it). A caller opens a target (backend_target_open), then
 * calls the row's entries: compile layers or a model, run a model (with its
 * report), open and run a layer (verify), map a layer with the backend's own
 * planner, prepare a tuning run. An entry a backend does not have is NULL,
 * and backend_lacks() words the refusal.
 *
 * Adding a backend: a module under backends/ (cmake/modules.txt, with
 * registry depending on it), its row in backend_registry.c (the entries
 * it has; the glue of the shipped ones is backend_ref.c, backend_npu*.c,
 * backend_gpu.c), and the name in acg/acg_load.c's list of backend.name
 * values. A GPU vendor also fills a gpu_vendor (backends/gpu/gpu_vendor.h),
 * which gpu_target_open finds through backend_gpu_vendors. */
#ifndef COV_BACKEND_REGISTRY_H
#define COV_BACKEND_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "covenant/acg.h"
#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/gpu/gpu_vendor.h"
#else
typedef struct gpu_vendor gpu_vendor;
#endif

/* The target of every command when --target is not given. */
#define BACKEND_DEFAULT_TARGET "npu-16x16"
/* The pseudo-target of the CPU reference interpreter (no ACG). */
#define BACKEND_REF "ref"

/* What a backend does (bits of backend_info.ops). */
enum {
  BACKEND_MAP = 1,       /* the mapper schedules layers for its ACGs (covenant map) */
  BACKEND_COMPILE = 2,   /* compiles layers and models to code (covenant compile) */
  BACKEND_RUN = 4,       /* runs models (covenant run) */
  BACKEND_VERIFY = 8,    /* runs the correctness protocol on suite layers (covenant verify) */
  BACKEND_ORACLE = 16,   /* is the reference the others are checked against */
};

/* The options of the entries (bits of backend_info.options: which of them a
 * row takes beyond the target and the suite). */
enum {
  BACKEND_OPT_SCALE = 1,        /* scale: layers' sizes divided */
  BACKEND_OPT_DTYPE = 2,        /* dtype: the kernels' input dtype */
  BACKEND_OPT_REPORT = 4,       /* report: per-kernel resources of compiled layers */
  BACKEND_OPT_UNFUSED = 8,      /* allow_unfused */
  BACKEND_OPT_CODE_OBJECT = 16, /* code_object_version */
  BACKEND_OPT_TUNING = 32,      /* tuning */
  BACKEND_OPT_TRACE = 64,       /* run: trace and per_call */
  BACKEND_OPT_SHAPE = 128,      /* compile_model: shapes */
  BACKEND_OPT_PRECISION = 256,  /* compile_model: f32_activations, f16_operands */
};

typedef struct backend_options {
  const char *target;   /* the --target as given (for messages and code that reopens it) */
  const char *suite;    /* layer suite file; NULL: the shipped one */
  int scale;            /* BACKEND_OPT_SCALE: divide the layer's sizes by it (1) */
  cov_dtype dtype;      /* BACKEND_OPT_DTYPE; COV_DTYPE_INVALID: the backend's default */
  int report;           /* BACKEND_OPT_REPORT */
  int allow_unfused;    /* BACKEND_OPT_UNFUSED */
  unsigned code_object_version; /* BACKEND_OPT_CODE_OBJECT; 0: the ACG's */
  const char *tuning;   /* BACKEND_OPT_TUNING: a tuning file (covenant tune --record) */
  int per_call;         /* BACKEND_OPT_TRACE: every call one by one */
  FILE *trace;          /* BACKEND_OPT_TRACE: where a run's trace goes (the caller opens it) */
  FILE *notes;          /* where notes on what was left out go; NULL: nowhere */
  /* BACKEND_OPT_SHAPE: model input shapes bound at load (cov_model_options.shapes) */
  const cov_model_shape *shapes;
  size_t n_shapes;
  int f32_activations; /* BACKEND_OPT_PRECISION: activations f32 between kernels (cov_gpu_options) */
  int f16_operands;    /* BACKEND_OPT_PRECISION: every matrix kernel on f16 operands (cov_gpu_options) */
} backend_options;

/* Fills a model's n_inputs inputs (cov_model_input_name order). */
typedef cov_status (*backend_inputs_fn)(void *user, const cov_model *model, cov_tensor *inputs, size_t n_inputs);

typedef struct backend_target backend_target;
/* One model of several run at once (run_models): as run_model's arguments. */
typedef struct backend_model_io {
  const cov_model *model;
  const char *name;
  const cov_tensor *inputs;
  size_t n_inputs;
  cov_tensor *outputs;
  size_t n_outputs;
} backend_model_io;
/* What a model run tells beyond its outputs (the row's report_* read it). */
typedef struct backend_report backend_report;

/* A suite layer compiled and loaded for runs (open_layer). */
typedef struct backend_layer {
  const cov_layer *layer; /* what runs: its inputs and reference */
  /* the dtype the code multiplies input i in (inputs 0..7): f16 or bf16
   * where it narrows it, else f32 */
  cov_dtype in_dtype[8];
  void *impl;             /* the row's */
} backend_layer;

typedef struct backend_layer_stats {
  uint64_t cycles;   /* device cycles of the run */
  double array_util; /* the compute array's utilisation, [0, 1] */
} backend_layer_stats;

/* Where an ONNX operator runs on a target (backend_op_support,
 * backend_ops.h; `covenant ops`). */
typedef enum backend_op_where {
  BACKEND_OP_ACCEL = 1, /* runs on the accelerator (NPU programs) */
  BACKEND_OP_CPU,       /* falls back to the CPU: layout work in the frontend, calls in the interpreter */
  BACKEND_OP_GPU,       /* compiles to GPU kernels (compute) or copies (layout) */
  BACKEND_OP_REF,       /* the CPU reference interpreter (the ref target) */
  BACKEND_OP_REFUSED,   /* a model with it is refused */
  BACKEND_OP_DEPENDS,   /* its codelets depend on the node's attributes (Einsum's equation) */
} backend_op_where;

/* A program file of the backend's own (program.npu), opened for the
 * program tools (covenant disasm, covenant sim): the row's. */
typedef struct backend_program backend_program;

/* How program_sim runs a program. */
typedef struct backend_sim_options {
  unsigned long long seed;      /* the pseudo-random inputs' seed */
  unsigned long long max_insns; /* refuse a program running more instructions; 0: the simulator's default */
  unsigned long long max_work;  /* likewise for its element work; 0: the default */
  const char *trace;            /* a Chrome/Perfetto trace file to write; NULL: none */
} backend_sim_options;

/* What simulating one layer on an ACG gives (simulate_layer): unknown
 * figures NaN. */
typedef struct backend_layer_figures {
  double cycles;
  double utilisation; /* of the compute array, [0, 1] */
  double energy_pj;
  double *bytes;      /* the caller's: bytes read plus written per storage node, ACG order */
  int n_bytes;        /* entries of bytes filled (the first n_bytes storage nodes) */
} backend_layer_figures;

/* A layer simulator of a backend, as explore's evaluators see it: a study's
 * CSV rows name it. */
typedef struct backend_simulator {
  const char *name;  /* the evaluator's name (--eval) */
  const char *about; /* one line */
  /* Maps the suite layer `layer` with the generic mapper on g (any ACG of
   * this backend, a derived design included, which has no target name to
   * open), generates its code and simulates it into *out. */
  cov_status (*simulate_layer)(const cov_acg *g, const cov_layer *layer, backend_layer_figures *out);
} backend_simulator;

typedef struct backend_info {
  const char *name;    /* an ACG's backend.name, or BACKEND_REF */
  const char *summary; /* one line for listings and errors */
  const char *kind;    /* what its targets are, for messages: "NPU", "GPU", "CPU" */
  unsigned ops;        /* BACKEND_* */
  unsigned options;    /* BACKEND_OPT_* its entries take */
  int max_layers;      /* compile_layers: at most this many layers at once; 0: any */
  /* The command that checks this backend's code where verify does not
   * (`covenant CHECK_WITH LAYER --target T`); NULL: none. */
  const char *check_with;

  /* Compiles suite layers (names; "all": every layer it takes) into the
   * directory out_dir, saying what it wrote on out. */
  cov_status (*compile_layers)(const backend_target *t, const backend_options *o, const char *const *layers,
                               int n, const char *out_dir, FILE *out);
  /* Compiles the model in the file `model` into one artifact `out_path`
   * (runtime/README.md), saying what it wrote on out. */
  cov_status (*compile_model)(const backend_target *t, const backend_options *o, const char *model,
                              const char *out_path, FILE *out);
  /* Runs a loaded model (read from the file `name`, which diagnostics
   * name) on inputs (cov_model_input_name order) into outputs (allocated
   * here, cov_model_output_name order): the model-level entry point of
   * every backend. ref interprets it, npu-sim maps, compiles and simulates
   * it, the GPU backends compile it whole and run it on the device through
   * the runtime (without the vendor's driver: COV_DEVICE_ERROR, nothing
   * run). *report (when report is not NULL): what the run tells beyond its
   * outputs, or NULL when the backend tells nothing; release it with
   * report_free. */
  cov_status (*run_model)(const backend_target *t, const backend_options *o, const cov_model *m, const char *name,
                          const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs, size_t n_outputs,
                          backend_report **report);
  /* Co-schedules n models on the target at once (npu-sim: each on cores
   * of its own of a multi-core NPU, cov_npu_corun_models): io[i] as
   * run_model's arguments; each[i] (n of them) the report of model i's run
   * as run_model gives it, *joint the run's own (report_details prints
   * its table, report_json gives it as data). stream > 0 (n 1): the model
   * pipelined over the cores for a stream of that many inputs instead
   * (npu-sim: cov_npu_pipeline_model). NULL: runs one model at a time. */
  cov_status (*run_models)(const backend_target *t, const backend_model_io *io, size_t n, unsigned stream,
                           backend_report **each, backend_report **joint);
  /* A run's report: the line after the header (where each group ran), the
   * backend's own check of its code (prints its line; 1 passed, 0 failed,
   * -1 none made), the details after the checks, the times inside the run
   * (appended to the wall-time line, whose run took run_s), release. */
  void (*report_summary)(const backend_report *r, const backend_target *t, size_t n_compute, FILE *out);
  int (*report_check)(const backend_report *r, FILE *out);
  /* The fewest significand bits (cov_dtype_precision_bits) of the dtypes
   * that check rounded operands to (the datapath's narrowest float); 0 where
   * it rounded none. NULL: the backend rounds nothing. */
  int (*report_narrowed_bits)(const backend_report *r);
  void (*report_details)(const backend_report *r, const backend_target *t, FILE *out);
  void (*report_times)(const backend_report *r, double run_s, FILE *out);
  void (*report_free)(backend_report *r);
  /* Compiles the suite layer `name` and loads it for runs (verify): *out's
   * layer says what it computes; run_layer runs it on inputs (f32, the
   * layer's input order) into *output (allocated, f32). */
  cov_status (*open_layer)(const backend_target *t, const backend_options *o, const char *name, backend_layer *out);
  cov_status (*run_layer)(backend_layer *l, const cov_tensor *inputs, int n_inputs, cov_tensor *output,
                          backend_layer_stats *stats);
  void (*close_layer)(backend_layer *l);
  /* Runs suite layers on the device, each checked against a CPU loop nest
   * (results on out). */
  cov_status (*run_layers)(const backend_target *t, const backend_options *o, const char *const *layers, int n,
                           FILE *out);
  /* Compiles the model in `path` whole, runs it on the device on inputs
   * from `inputs` and checks its outputs against the reference interpreter
   * within tolerance (results on out). */
  cov_status (*check_model)(const backend_target *t, const backend_options *o, const char *path, double tolerance,
                            backend_inputs_fn inputs, void *user, FILE *out);
  /* The backend's own planner on a layer (covenant map): its pick (or with
   * explain, its ranking) on out. NULL: the generic mapper (cov_map) plans
   * this backend's layers. */
  cov_status (*map_layer)(const backend_target *t, const cov_layer *layer, int explain, FILE *out);
  /* The planner's `top` best schedules of each suite layer, on out. */
  cov_status (*map_candidates)(const backend_target *t, const backend_options *o, const char *const *layers, int n,
                               int top, FILE *out);
  /* Measured tuning, step 1: the `top` best schedules of the layers or
   * model (specs) compiled into the tuning artifact directory out_dir. */
  cov_status (*tune_prepare)(const backend_target *t, const backend_options *o, const char *const *specs, int n,
                             int top, const char *out_dir, FILE *out);

  /* Where operator op runs on this backend's target, once
   * backend_op_support (backend_ops.h) has answered what every target
   * shares (the reference runs everything; an operator whose codelets
   * follow its attributes depends on them): *where and, when not on the
   * accelerator, why (size bytes). An error only when the question could
   * not be answered (out of memory). */
  cov_status (*op_support)(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                           size_t size);
  /* A run's report as JSON (*json malloc'ed; cov_run_model). */
  cov_status (*report_json)(const backend_report *r, char **json);

  /* Program files (covenant disasm, covenant sim). program_open reads the
   * file at path (errors located there, saying what to pass instead of a
   * file that is not a program); program_acg loads the ACG it runs on:
   * `target` (a path or shipped name), or with NULL the one its header
   * names, looked up as a shipped target only; program_disasm prints it
   * (without an ACG loaded: units and buffers by number); program_sim runs
   * it on pseudo-random inputs, and program_sim_report prints what the run
   * gave; program_close releases it. NULL: no program files. */
  cov_status (*program_open)(const char *path, backend_program **out);
  cov_status (*program_acg)(backend_program *p, const char *target);
  cov_status (*program_disasm)(const backend_program *p, FILE *out);
  cov_status (*program_sim)(backend_program *p, const backend_sim_options *o);
  cov_status (*program_sim_report)(const backend_program *p, FILE *out);
  void (*program_close)(backend_program *p);
  /* The layer simulator explore evaluates designs of this backend with;
   * NULL: none. */
  const backend_simulator *simulator;

  /* GPU vendors: their gpu_vendor (the shared GPU code's view of them);
   * NULL otherwise. Read inside backends/ only. */
  const gpu_vendor *gpu;
} backend_info;

/* An opened target: its backend and (except for ref) its ACG. */
struct backend_target {
  const backend_info *backend;
  cov_acg *acg; /* NULL for ref */
  const char *name; /* the ACG's name, or BACKEND_REF */
};

/* Opens `name` (an ACG path or shipped target name, or "ref"; NULL means
 * BACKEND_DEFAULT_TARGET) and finds its backend. An ACG whose backend.name
 * no built-in backend serves (a GPU target in a build without LLVM, or no
 * backend.name) is COV_UNSUPPORTED, naming the backends there are. */
cov_status backend_target_open(const char *name, backend_target *out);

/* An ACG's backend section against covenant's backends, built in this
 * build or not (backend_acg.c): a known backend.name, and the fields that
 * backend takes (mcpu and calibration for a GPU, code_object_version for
 * amdgpu), each error at its line:col. The ACG loader checks types and
 * ranges only, and names no backend. */
cov_status backend_check_acg(const cov_acg *g);
/* cov_acg_load_target, then backend_check_acg (*out NULL on an error). */
cov_status backend_acg_load(const char *name, cov_acg **out);
void backend_target_close(backend_target *t);

/* The refusal of an entry the target's backend lacks: COV_UNSUPPORTED,
 * located at the call `what` (a command: "covenant compile"), naming the
 * target, its backend and what it does instead (check_with). */
cov_status backend_lacks(const backend_target *t, const char *what, const char *entry);

/* The option names of BACKEND_OPT_* bits, as the command line spells
 * them ("--dtype, --report and --tuning"), into buf. */
const char *backend_option_names(unsigned bits, char *buf, size_t n);

/* Opens the program file at path for `what` (a command: "covenant sim"):
 * with a target, by the row of its backend (backend_lacks when that row
 * reads no program files); without one, or with one that does not open
 * (the row's program_acg then reports it, as it loads the ACG), by the
 * rows that read program files in table order, the first that reads it
 * (else the first one's error). */
cov_status backend_program_open(const char *path, const char *target, const char *what, const backend_info **row,
                                backend_program **out);

/* Measured tuning, step 3: the times a device measured (covenant-run
 * --tune) into the tuning file `out` that compiles read (--tuning). The
 * times name their target, so no target is opened. */
cov_status backend_tune_record(const char *times, const char *out, FILE *msg);

/* The backend called `name` (backend.name or "ref"); NULL if none is built. */
const backend_info *backend_find(const char *name);
/* Every built-in backend, i in [0, backend_count()). */
int backend_count(void);
const backend_info *backend_at(int i);

#ifdef COV_HAVE_GPU_BACKENDS
/* The GPU vendors of the table, NULL-terminated (for gpu_target_open). */
gpu_vendors backend_gpu_vendors(void);
#endif

#endif
