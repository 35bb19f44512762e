/* backends/gpu/gpu_mplan.h: a whole model compiled for a GPU: buffers, code
 * modules and the launch sequence (what a compiled-model artifact holds).
 *
 * gpu_model_compile (gpu_mcompile.c) reaches the model only through the
 * frontend's public group interface: it runs the model once per encoding
 * with every compute group handled by a hook that records the group's
 * description (cov_model_run_groups) and writes, in place of results,
 * element provenance (buffer id, then element index, as 32-bit patterns);
 * the frontend's layout operations (Reshape, Transpose, Concat, Split,
 * Slice, Flatten, ...) copy elements bit for bit, so every input a compute
 * group (or the model's output) receives tells exactly which element of
 * which earlier buffer it is. Layout work thus becomes copy runs (or an
 * index table) into the consumer's input, or nothing where the input is an
 * earlier buffer as it is (a reshape).
 *
 * Every compute group then becomes kernels: convolutions, Gemm, MatMul and
 * batched MatMul the tiled matrix kernel of gpu_lower.c (f16 operands,
 * f32 accumulation and results; bias, relu/clip, 2x2 max pool or row
 * softmax fused where the plan allows), depthwise convolutions the direct
 * kernel of gpu_lower_ew.c, every other call its codelet's kernel lowered
 * from the loop nest (gpu_cdl.h); attention chains (Q Kᵀ, scale, causal
 * mask, softmax, · V) the fused attention kernel (gpu_mattn.c). Nothing is
 * refused for its shape.
 *
 * Kernel ABI: global pointers (four, or a codelet kernel's one per input,
 * output and workspace), launched with `grid`, `block`, `shared_bytes`
 * dynamic shared memory; each argument is a buffer (plus a byte offset) or
 * null (-1). */
#ifndef COV_GPU_MPLAN_H
#define COV_GPU_MPLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backends/gpu/gpu_attn.h"
#include "backends/gpu/gpu_cdl.h"
#include "backends/gpu/gpu_plan.h"
#include "covenant/model.h"

typedef enum gpu_buf_kind {
  GPU_BUF_INPUT,        /* a model input (f32, as the caller gives it) */
  GPU_BUF_OUTPUT,       /* a model output (f32, or a quantized group's i8 / u8 / i32 result) */
  GPU_BUF_WEIGHT,       /* a constant in the layout and dtype its kernel reads (data set) */
  GPU_BUF_INTERMEDIATE, /* everything else: group results, f16 operand copies, workspaces */
} gpu_buf_kind;

typedef struct gpu_mbuf {
  char name[128];
  gpu_buf_kind kind;
  cov_dtype dtype;
  int rank;
  int64_t shape[COV_MAX_RANK];
  int64_t numel;
  void *data; /* weights: numel elements of dtype (owned) */
  int io;     /* inputs / outputs: the model's index */
  /* bit d: dim d's size is set at run time by a part step (shape[d] its
   * capacity: a model output whose size depends on the data) */
  unsigned dynamic;
} gpu_mbuf;

/* ---- generic kernels (gpu_lower_ew.c, gpu_lower_cdl.c) ------------------ */

typedef enum gpu_ew_kind {
  GPU_EW_COPY,      /* strided runs: y[dst(i)] = x[src(i)], i < n (gpu_ew_copy_at; dtype conversion to y's;
                       integer and bool elements moved as they are, gpu_ew_raw) */
  GPU_EW_TABLE,     /* y[i] = x[t[i]] where t[i] >= 0 (i32 table, argument 1), i < n */
  GPU_EW_CONV,      /* direct conv2d, NCHW / OIHW, thread per output element, or per run of 4 along a row
                     * for depthwise ones (the depthwise path) */
  GPU_EW_CODELET,   /* any codelet call, lowered from its loop nest (gpu_cdl.h); n = its work items */
  GPU_EW_ROWS,      /* y[i] = x[ids[i / D] * D + i % D], rows of an f32 [V, D] table at i64 ids (argument 1) */
  GPU_EW_QDOT,      /* an i8 conv / matmul with its integer bias and requantisation (gpu_qdot.h) */
  GPU_EW_LNORM,     /* layer normalisation over the middle axis of x [N][C][W] (gpu_lnorm.h), below */
  GPU_EW_MAXPOOL,   /* max pooling of NCHW f32 or NHWC f16 x [N, C, H, W] (gpu_pool.h; CONV's fields) */
  GPU_EW_GAVGPOOL,  /* global average pooling to f32 [N, C], a workgroup per image and channel block (gpu_pool.h) */
  GPU_EW_SEHEAD,    /* a squeeze-excite head: fc1, activation, fc2, activation, a workgroup per image (gpu_pool.h) */
} gpu_ew_kind;

/* An activation fused into a direct convolution's store; the codelets the
 * fusing paths recognise (gpu_kernels.c). */
typedef enum gpu_ew_fn {
  GPU_FN_NONE,
  GPU_FN_RELU,
  GPU_FN_CLIP,
  GPU_FN_GELU,
  GPU_FN_SILU, /* x * sigmoid(x): a Sigmoid and the Mul of its input by it (gpu_mfuse_act.c, gpu_mfuse.c) */
  GPU_FN_HSWISH,   /* x * clip(x + 3, 0, 6) / 6 (ONNX HardSwish) */
  GPU_FN_HSIGMOID, /* clip(p0 * x + p1, 0, 1) (ONNX HardSigmoid, alpha p0, beta p1) */
  GPU_FN_SIGMOID,  /* 1 / (1 + exp(-x)): a squeeze-excite head's gate once its Mul is the projection's prologue
                      (gpu_mfuse_gate.c); no matrix epilogue takes it */
} gpu_ew_fn;

/* The activation of a unary codelet the matrix kernels' epilogues and the
 * depthwise kernel fuse; GPU_FN_NONE for any other. */
gpu_ew_fn gpu_unary_fn(const char *codelet);
/* The same activation as a matrix epilogue's, and back. */
gpu_ew_fn gpu_act_fn(gpu_act a);
gpu_act gpu_fn_act(gpu_ew_fn f);

enum { GPU_COPY_LEVELS = 3 };

typedef struct gpu_ew {
  gpu_ew_kind kind;
  cov_dtype out_dtype;  /* f32, or f16 for operand copies of the matrix kernels */
  cov_dtype in_dtype;   /* COPY: COV_F16, an f16 source (channels-last activations back to f32); else f32 */
  int64_t n;            /* threads that do work (output elements, rows) */
  int64_t s0, d0;       /* COPY: source and destination offsets (elements) */
  /* COPY: n = run * rep[0] * rep[1] * rep[2] elements in runs of `run`
   * contiguous elements, repeated rep[0] times with strides ss[0] (source)
   * / ds[0] (destination), that block rep[1] times with ss[1] / ds[1], that
   * rep[2] times; run 0: one run of n. Concat, Split, Slice, channel
   * shuffles and transposes of up to 4 axes, at any batch, are a few such
   * copies per source. With `bias`, argument 3 (f32, laid out as y) is
   * added at the destination, then `post` applied: y[dst] = post(x[src] +
   * a3[dst]), a residual add and its activation fused into the copy that
   * turns a channels-last result back to NCHW (gpu_mfuse.c); with `also`
   * the value is stored a second time, as f16 at argument 1 in NHWC order
   * (y seen as [N][C][H][W] by the CONV fields N, C, H, W): the next
   * convolution's channels-last input, written by the same launch; also 2:
   * that store only (argument 2 null). bias 2: the addend is f16 NHWC (a
   * shortcut's channels-last form), read at the NHWC index of dst. */
  int64_t run, rep[GPU_COPY_LEVELS], ss[GPU_COPY_LEVELS], ds[GPU_COPY_LEVELS];
  /* CONV: x [N, C, H, W], w [K, C/g, R, S] -> [N, K, P, Q] */
  int64_t N, C, H, W, K, R, S, P, Q, sh, sw, pt, pl, dh, dw, groups;
  /* CONV: post-ops applied before the store (bias per channel: argument 3
   * non-null; the activation); COPY: the addend and activation above */
  int bias;
  int also; /* COPY: the NHWC f16 second store above */
  /* COPY: > 0: y[dst] = x[src] * sigmoid(a3[dst / scale_hw]), argument 3
   * f32 (a squeeze-excite's per-channel gate, before its sigmoid) */
  int64_t scale_hw;
  /* COPY: mul_c > 0: v = x[src] * fn(a1[dst / mul_hw % mul_c]) before the
   * addend, argument 1 f32 (a per-channel scale: a layer scale, a
   * squeeze-excite's gate through mul_fn with mul0, mul1 as post's
   * parameters); never with `also`. mul_img > 0: the factor's index is
   * dst / mul_img * mul_c + dst / mul_hw % mul_c (an image's mul_img
   * elements, an NHWC value's per-(image, channel) gate: mul_hw 1) */
  int64_t mul_c, mul_hw, mul_img;
  gpu_ew_fn mul_fn;
  float mul0, mul1;
  gpu_ew_fn post;
  /* LNORM: x [N][C][W] (argument 0) normalised over C for each of the
   * N * W pairs, f32 statistics in two passes, then * a1[c] + a3[c] (f32
   * [C]); post0 is the epsilon; y (argument 2) in x's layout or, with
   * `also`, [N][W][C]; f32 or f16. D threads (lanes) per pair, a power of
   * two up to a workgroup, and n whole workgroups (gpu_lnorm.h) */
  float post0, post1;
  /* LNORM over rows (W == 1): row n stored at row (n / rq) * r1 + (n % rq)
   * * r0 (a seq-first transformer's operand; gpu_mfuse_ln.c); rq 0: row n */
  int64_t rq, r0, r1;
  /* LNORM (f32 y in x's layout): the result also stored rounded to f16 at
   * argument 4 (a post-LN transformer's next matmul operand, while the f32
   * y is the residual; gpu_mfuse_ln.c) */
  int dual;
  int64_t V, D;     /* ROWS: the table's rows and their length (with N > 0: N indices, x [n / (N*D), V, D]) */
  gpu_cdl_call cdl; /* CODELET: the call (arguments: its inputs, outputs, workspaces) */
} gpu_ew;

enum { GPU_EW_THREADS = 256 }; /* threads per workgroup of every generic kernel */
/* The launch grid and shared-memory bytes of a generic kernel. */
void gpu_ew_grid(const gpu_ew *e, unsigned grid[3]);
unsigned gpu_ew_shared_bytes(const gpu_ew *e);

/* A float COPY of a whole [N][HW][C] value to [N][C][HW] (any transpose
 * of the last two axes: NCHW to NHWC is the same with C and HW swapped),
 * scheduled so both sides coalesce (gpu_lower_ew.c): REORDER, a
 * conversion to NCHW whose every access is NHWC (an NHWC addend, only the
 * NHWC store), its threads on NHWC elements; TILES (with any other fused
 * work), a workgroup per tile of GPU_CT_TILE channels x GPU_CT_TILE pixels
 * through shared memory, read along the source's fast axis and written
 * along the destination's. */
typedef enum gpu_ct_kind { GPU_CT_NONE, GPU_CT_REORDER, GPU_CT_TILES } gpu_ct_kind;
typedef struct gpu_ct_shape {
  int64_t n, c, hw;
} gpu_ct_shape;
enum { GPU_CT_TILE = 32 };
gpu_ct_kind gpu_ew_transpose(const gpu_ew *e, gpu_ct_shape *out);
/* The runs of source `src` among runs[0 .. n_runs) (destination order,
 * gpu_cap_run's fields: src, d0, s0, n) as at most `max` strided copies
 * (gpu_ew COPY, f32 out: runs of equal length at constant strides, blocks
 * of those, blocks of blocks; gpu_mruns.c): how many, -1 when more would
 * be needed or out of memory. */
struct gpu_cap_run;
int gpu_runs_copies(const struct gpu_cap_run *runs, int n_runs, int src, gpu_ew *out, int max);
/* COPY: the source and destination elements of work item i. */
void gpu_ew_copy_at(const gpu_ew *e, int64_t i, int64_t *src, int64_t *dst);
/* The bytes of each element a COPY or TABLE moves as it is (an integer or
 * bool copy's dtype: 8, 4 or 1), 0 for f32 / f16 copies and other kernels. */
size_t gpu_ew_raw(const gpu_ew *e);
/* The CPU meaning of a copy, table or direct-conv kernel, on f32 views of
 * its arguments (f16 buffers converted by the caller; an integer or bool
 * copy's x and y are its elements as they are); codelet kernels are
 * emulated by the reference interpreter (gpu_model_emulate). */
void gpu_ew_emulate(const gpu_ew *e, const float *x, const float *w, float *y, const float *bias,
                    const int32_t *table);

/* ---- the compiled model ------------------------------------------------ */

/* LAUNCH and FILL run on the device; the rest are the host steps and
 * control of a model with a Loop or If (gpu_mprogram.c), the artifact's
 * steps of the same names (runtime/README.md, "Host steps and control"):
 * their buffers are args[0 .. n_args) as the artifact's refs list them. */
typedef enum gpu_step_op {
  GPU_STEP_LAUNCH,
  GPU_STEP_FILL,
  GPU_STEP_COPY, /* args: from, to (the same bytes) */
  GPU_STEP_LOOP, /* args: trip count, condition, iteration number, body condition (-1: none); target: its next */
  GPU_STEP_NEXT, /* args: the body's condition (-1: none), n_carry (from, to) pairs, then (slice, stacked)
                    scan pairs; target: its loop */
  GPU_STEP_IF,   /* args: the condition; target: the first step of the else branch */
  GPU_STEP_JUMP, /* target: the step after the If */
  GPU_STEP_PART, /* part of the model run in the reference interpreter on the host: parts[part] */
} gpu_step_op;
/* ATTN: fused attention (gpu_attn.h), arguments Q, K, V, O */
typedef enum gpu_kernel_kind { GPU_KERNEL_MATRIX, GPU_KERNEL_EW, GPU_KERNEL_ATTN } gpu_kernel_kind;

typedef struct gpu_mstep {
  gpu_step_op op;
  int group;        /* the layer group it computes (-1: the model's outputs) */
  char label[128];  /* the group's first ONNX node */
  /* launch */
  gpu_kernel_kind kkind;
  gpu_plan plan;    /* MATRIX: the matrix kernel's plan */
  gpu_ew ew;        /* EW: the generic kernel */
  gpu_attn attn;    /* ATTN: the fused attention kernel (gpu_mattn.c) */
  int module;       /* index in modules */
  char kernel[160];
  unsigned grid[3], block[3], shared_bytes;
  int args[GPU_CDL_MAX_ARGS]; /* buffer ids, -1: null */
  int n_args;       /* 4, or a codelet kernel's inputs + outputs + workspaces */
  /* a channels-last MATRIX plan runs its NHWC transform first into the
   * workspace buffer args... (pre_kernel with pre_grid etc.) */
  int pre;          /* 1: this launch is the transform of the next one */
  /* fill: bytes of zeros over buffer `fill_buf` */
  int fill_buf;
  /* control (LOOP, NEXT, IF, JUMP): the step it names; NEXT: carried pairs */
  int target, n_carry;
  int part; /* PART: its index in the plan's parts */
} gpu_mstep;

/* A PART step's values (cov_model_pstep PART): the model values values[k]
 * in buffers bufs[k], its n_in inputs first, then what it makes. */
typedef struct gpu_mpart {
  char **values;
  int *bufs;
  int n_in, n;
} gpu_mpart;

typedef struct gpu_mmodule {
  char name[160];
  char *code; /* PTX (NUL-terminated) or HSACO */
  size_t size;
  long vgprs, agprs, lds_bytes, scratch_bytes; /* AMDGPU: from the assembly; -1 unknown */
} gpu_mmodule;

/* What the precision plan decided (gpu_mprec.c), for the compile's notes. */
typedef struct gpu_mprec {
  int ran;          /* 1: the error was estimated */
  char why[200];    /* where it was not although the plan has f16 matrix groups: why (else empty) */
  double budget;    /* the estimate's bound */
  double err_f16;   /* estimated error with every matrix group on f16 operands */
  double err;       /* estimated error of the plan compiled */
  int n_groups;     /* matrix groups on f16 operands in the all-f16 plan, in plan order */
  int n_f32;        /* the first n_f32 of them compiled with f32 operands */
  int evals;        /* plans emulated */
  int64_t batch;    /* the first input's dim 0 the estimate ran at */
  /* the GPU cost model's time of the promoted groups' matrix kernels on
   * f32 operands and of the same problems on f16 (us) */
  double us_f32, us_f16;
} gpu_mprec;

typedef struct gpu_model_plan {
  char target[64], backend[16], mcpu[32];
  const struct gpu_vendor *vendor; /* the target's (code objects' form and extension) */
  gpu_mbuf *bufs;
  int n_bufs, cap_bufs;
  gpu_mstep *steps;
  int n_steps, cap_steps;
  gpu_mmodule *mods;
  int n_mods, cap_mods;
  int n_inputs, n_outputs;
  int input_buf[16], output_buf[16];
  unsigned in_symbolic[16]; /* per input: the dims the model leaves symbolic (cov_model_input_symbolic) */
  /* per integer input: the values it may take (cov_model_input_range: token
   * ids index their table's rows), so random inputs are valid ones */
  int in_has_range[16];
  int64_t in_lo[16], in_hi[16];
  /* the dtypes callers give and get (cov_model_io_dtype): a 16-bit model
   * loaded with compute_f32 has f32 buffers, the runtime converts */
  cov_dtype in_io[16], out_io[16];
  gpu_mpart *parts; /* the PART steps' values */
  int n_parts, cap_parts;
  /* the model the plan was compiled from (borrowed; it outlives the plan):
   * the emulation runs PART steps in its reference interpreter */
  const cov_model *model;
  gpu_mprec prec; /* the precision plan's findings (gpu_model_compile_with) */
} gpu_model_plan;

void gpu_model_plan_free(gpu_model_plan *p);

/* Compiles model `m` (loaded from `path`, named in messages) for target
 * `t` (gpu_driver.h): every compute group into kernels, layout work into
 * copies, each kernel emitted as a module. On failure the one error lists
 * every group that cannot be compiled, each located at its first node.
 * Symbolic input dims are taken as 1 (bind them at load:
 * cov_model_options.shapes); a 16-bit model compiles when loaded with
 * compute_f32 (f32 buffers, its inputs and outputs in their declared
 * dtypes: in_io / out_io). emit == 0 plans every kernel
 * without generating code (the CPU emulation's tests); t == NULL also
 * leaves the matrix problems unplanned (checked only). */
struct gpu_target;
/* (gpu_mprec.c: the precision plan picks which groups take f32 operands,
 * then gpu_model_compile_fixed compiles) */
cov_status gpu_model_compile_with(const cov_model *m, const char *path, const struct gpu_target *t, int emit,
                                  gpu_model_plan *out);
/* Says on notes (NULL: nowhere) what the precision plan of p decided: the
 * estimated error at f16 and as compiled, the groups given f32 operands
 * and the cost model's time of their kernels (gpu_mprec.c). */
void gpu_mprec_note(const gpu_model_plan *p, FILE *notes);
/* gpu_model_compile_with at the operand dtypes the target fixes (t->dtype,
 * t->f32_groups), no precision plan (gpu_mprogram.c: a model with control
 * flow is compiled from its program, any other by
 * gpu_model_compile_straight). */
cov_status gpu_model_compile_fixed(const cov_model *m, const char *path, const struct gpu_target *t, int emit,
                                   gpu_model_plan *out);
/* gpu_model_compile_with for a model without control flow: its groups
 * captured in one run (gpu_mcapture.c) and lowered (gpu_mcompile.c). */
cov_status gpu_model_compile_straight(const cov_model *m, const char *path, const struct gpu_target *t, int emit,
                                      gpu_model_plan *out);
/* Whether m is compiled from its program (gpu_mprogram.c): it holds
 * control flow (a Loop, If or Scan group), or an output whose size
 * depends on the data (run as a part step). */
int gpu_model_has_control(const cov_model *m);
/* A model with control flow (gpu_mprogram.c): its program
 * (cov_model_program_build) as straight stretches of launches, each group
 * lowered as gpu_model_compile_with lowers it, joined by host copies and
 * the loop / next / if / jump steps. */
cov_status gpu_model_compile_program(const cov_model *m, const char *path, const struct gpu_target *t, int emit,
                                     gpu_model_plan *out);
/* What gpu_mprogram.c builds plans with (gpu_mcompile.c). */
int gpu_mplan_add_buf(gpu_model_plan *p, const char *name, gpu_buf_kind kind, cov_dtype dt, int rank,
                      const int64_t *shape, cov_status *st);
gpu_mstep *gpu_mplan_add_step(gpu_model_plan *p, int group, const char *label, cov_status *st);
/* Lowers group g of capture cap (inputs as runs over cap's buffer ids,
 * id_buf mapping them to plan buffers, g's result into id_buf[g->buf_id]);
 * *file_error: the error is the tuning file's, not the group's. */
struct gpu_capture;
struct gpu_cap_group;
cov_status gpu_model_lower_group(gpu_model_plan *p, const struct gpu_capture *cap, const struct gpu_target *t,
                                 const char *path, int *id_buf, int gi, const struct gpu_cap_group *g,
                                 int *file_error);
/* Binds the split-K launches' workspaces and counters (gpu_mcompile.c),
 * after the plan-level passes of a straight model. */
cov_status gpu_model_split_bind(gpu_model_plan *p);

/* A control step's CPU meaning (gpu_mctl_emu.c) over the emulation's
 * buffers v (each in its own dtype's bytes); count / trip: per step, a
 * loop's iterations done and its trip count; *next: the step after. */
cov_status gpu_mctl_emulate(const gpu_model_plan *p, int s, float **v, int64_t *count, int64_t *trip, int *next);
/* A PART step's CPU meaning: p->model's part run in the reference
 * interpreter on the buffers v at the shapes they hold (rank / shape per
 * buffer, updated for what it makes: a dynamic buffer at the run's shape,
 * at most its capacity; every other at its own shape). */
cov_status gpu_mpart_emulate(const gpu_model_plan *p, int s, float **v, int *rank, int64_t (*shape)[COV_MAX_RANK]);

/* Every launch's code for `t` (gpu_mmodules.c): matrix kernels through
 * gpu_build_kernel, generic ones through gpu_build_ew_kernel, one module
 * each; launches of an equal kernel share its module and name. */
cov_status gpu_model_build_modules(gpu_model_plan *p, const struct gpu_target *t);

/* Rewrites the convolutions of a compiled plan that the channels-last
 * kernels take (the conv kernel with prob.nhwc_io, the depthwise kernel)
 * to pass NHWC f16 activations from one to the next, conversions only
 * where other kernels or the caller read them (gpu_mlayout.c says how).
 * Nothing on targets without asynchronous copies. */
cov_status gpu_model_channels_last(gpu_model_plan *p, const struct gpu_target *t);

/* Joins unary activations (and GELU as exported: Div, Erf, Add, Mul, Mul)
 * to the matrix kernel or direct convolution producing their input, or
 * makes a GELU chain one copy (gpu_mfuse_act.c says when); run before
 * gpu_model_channels_last. */
cov_status gpu_model_fuse_act(gpu_model_plan *p);

/* Fuses element-wise work across groups (gpu_mfuse.c says when): each
 * residual add reading a channels-last conv's result, and the activation
 * after it, into the copy that turns that result back to NCHW; each SiLU
 * (a Sigmoid and the Mul of its input by it) and each squeeze-excite gate
 * (a Sigmoid and the Mul broadcasting it) into one copy; each LayerNorm
 * into one kernel (gpu_mfuse_ln.c); each per-channel Mul with the residual
 * Add after it into one copy; f16 operand copies into the kernel writing
 * their source; residual adds onto NHWC f16 shortcuts. */
cov_status gpu_model_fuse(gpu_model_plan *p);

/* Runs a compiled plan on the CPU: every step through its CPU meaning
 * (matrix kernels through gpu_reference on f16-rounded operands, codelet
 * kernels through the reference interpreter, the layout and depthwise
 * kernels through gpu_ew_emulate), inputs f32 in model order, outputs
 * allocated here (f32). The model the plan was compiled from must still
 * be loaded: codelet steps name codelets of its library. */
cov_status gpu_model_emulate(const gpu_model_plan *p, const cov_tensor *inputs, size_t n_inputs,
                             cov_tensor *outputs, size_t n_outputs);

/* The CPU meaning of a fused attention step on f32 views of its 16-bit
 * arguments (gpu_mattn.c): f32 scores, the additive mask (a->mask), and
 * softmax, P rounded to 16 bits as the kernel rounds it, O rounded once
 * (or f32, a->out_f32). */
cov_status gpu_attn_emulate(const gpu_attn *a, const float *q, const float *k, const float *v, float *o,
                            const float *mask);

/* Writes every module and manifest.json (buffers, steps) into `dir`. */
cov_status gpu_model_plan_write(const gpu_model_plan *p, const char *model_path, const char *dir, FILE *report);

#endif
