/* backends/gpu/gpu_plan.h: what the shared GPU lowering is asked to build.
 *
 * A gpu_problem is one contraction layer (matmul/GEMM, batched matmul, or
 * conv2d as an implicit GEMM) with its fused epilogue. A gpu_plan adds the
 * schedule: the workgroup tile (the shared-memory/LDS level of the mapper's
 * GPU schedule), the warp/wave tile (its register level), the matrix
 * instruction shape (one of the ACG's capability tiles, or the plain-FMA
 * fragment), the pipeline depth and the threads per workgroup. Every
 * compiler (suite layers, model groups; AMDGPU and NVPTX) takes its plan
 * from the mapper's GPU search (gpu_plan_map over mapper/map_gpu.h), which
 * fills a plan field by field from its cheapest schedule the lowering takes.
 *
 * Every layer is viewed as  C[g][m][n] = sum_k A[g][m][k] * B[g][k][n]:
 *   matmul: g = batch, A = a[g] (M x K row-major), B = b[g] (K x N row-major),
 *           C = y[g] (M x N row-major, f32).
 *   conv2d: g = group, m = (n, oh, ow), n = output channel in the group,
 *           k = (c, r, s); A is gathered from the NCHW input (zero padding),
 *           B[k][n] = w[g*Kg + n][k] (OIHW weights), C is the NCHW output.
 * Kernel arguments, in order: A/input, B/weights (both of the input dtype),
 * output (f32; f16 with plan.out_f16), bias (f32, one per output channel / column; may be null
 * when the epilogue has no bias); with split-K the workspace and counters
 * (4, 5), with epi.residual the addend (6), with a_pro its gate (7). */
#ifndef COV_GPU_PLAN_H
#define COV_GPU_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "covenant/status.h"
#include "covenant/types.h"
#include "mapper/map_gpu.h"

typedef struct cov_acg cov_acg;

/* The input location of a diagnostic: the file (a model, a suite) and the
 * ONNX node or suite layer it is about (either may be NULL); for
 * cov_error(code, GPU_LOC(file, node), ...). */
static inline const cov_loc *gpu_loc_(cov_loc *l, const char *file, const char *node) {
  l->file = file, l->path = node;
  return l;
}
#define GPU_LOC(file, node) gpu_loc_(&(cov_loc){0}, (file), (node))

/* GPU_OP_MAXPOOL is the one non-contraction: a standalone max pool (NCHW,
 * padding reads as -inf, as in torch's max_pool2d), one output element per
 * thread; kernel arguments (input, unused, output f32, unused). */
typedef enum gpu_op_kind { GPU_OP_MATMUL, GPU_OP_CONV2D, GPU_OP_MAXPOOL } gpu_op_kind;

/* GPU_ACT_HSWISH: x * clip(x / 6 + 1/2, 0, 1); GPU_ACT_HSIGMOID: clip(clip_lo
 * * x + clip_hi, 0, 1) (ONNX HardSigmoid's alpha and beta) */
typedef enum gpu_act {
  GPU_ACT_NONE, GPU_ACT_RELU, GPU_ACT_CLIP, GPU_ACT_GELU, GPU_ACT_HSWISH, GPU_ACT_HSIGMOID,
  GPU_ACT_SILU,      /* x * sigmoid(x) */
  GPU_ACT_GELU_TANH, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's gelu_new */
} gpu_act;

typedef struct gpu_epilogue {
  bool bias;
  gpu_act act;
  float clip_lo, clip_hi; /* GPU_ACT_CLIP: relu6 is [0, 6]; GPU_ACT_HSIGMOID: alpha, beta */
  /* conv2d only: 2x2/stride-2 max pooling (floor) of the activated output.
   * Needs an activation whose results are >= 0 (relu, clip with lo >= 0):
   * the output is then reduced with an atomic max on zero-initialised
   * memory, which is order-independent and so deterministic. */
  bool maxpool2x2;
  /* matmul only: softmax over each output row (the last dimension), after
   * bias and activation. Needs a workgroup tile as wide as the row (one
   * workgroup holds whole rows: grid[0] == 1); the row max and sum are taken
   * in shared memory after the K loop. */
  bool softmax;
  /* matmuls without softmax, channels-last convs (nhwc_io): a residual
   * addend R (f32, laid out as the output, kernel argument 6) added after
   * bias and activation, y = act(acc + bias) + R: a transformer's residual
   * Add in the epilogue of the matmul writing its other input, a
   * ConvNeXt block's in that of its last 1x1 conv (gpu_mfuse_epi.c). With
   * split-K only the tile's last workgroup, which sums the partials, runs
   * the epilogue, so R is added once. A channels-last conv with a residual
   * stores f32 NCHW (the residual stream's layout; plan.out_f16 false)
   * through the staged NCHW store, OH*OW a multiple of 4. */
  bool residual;
} gpu_epilogue;

/* A prologue applied to the A operand's elements as they are loaded
 * (gpu_lower_gate.c). GPU_APRO_GATE, conv2d on the NCHW gather (guarded
 * element copies): the input (argument 0) is read as f32 NCHW and each
 * element x[n][c][h][w] is scaled by its image's per-channel gate
 * g[n][c] (f32 [cn][cc], argument 7), the product rounded once to the
 * operand's 16-bit type: a squeeze-excite gate applied where the
 * projection reads its operand (gpu_mfuse_gate.c). GPU_APRO_CAST: the
 * same without a gate (argument 7 unused): an f32 input (a model's image)
 * rounded to f16 as its conv loads it, in place of an f16 copy kernel. */
typedef enum gpu_a_prologue { GPU_APRO_NONE, GPU_APRO_GATE, GPU_APRO_CAST } gpu_a_prologue;
enum { GPU_APRO_ARG = 7 };

typedef struct gpu_problem {
  gpu_op_kind kind;
  gpu_a_prologue a_pro;
  cov_dtype in_dtype; /* f16, bf16 or f32 (matrix units where the ACG and lowering have them, else the FMA fragment); accumulation and output f32 */
  /* matmul */
  int64_t batch, m, n, k;
  /* conv2d: input [cn, cc, ch, cw], weights [ck, cc/groups, cr, cs];
   * maxpool: input [cn, cc, ch, cw], window cr x cs, stride, pad */
  int64_t cn, cc, ch, cw, ck, cr, cs, stride, pad, dilation, groups;
  gpu_epilogue epi;
  /* conv2d: the layer's tensors are channels-last as cuDNN takes them
   * (spec NAME@cl, NAME@bN@cl): the channels-last kernel (plan.nhwc) reads the input
   * as given, NHWC (no transform kernel), and writes the output NHWC in f16
   * (rounded once from the f32 accumulators after bias and activation;
   * plan.out_f16) through its staged epilogue. */
  bool nhwc_io;
  /* conv2d on the NCHW gather (not the channels-last kernel, which takes
   * only whole 16-byte rows of input channels): the output NHWC in f16
   * all the same (plan.out_f16), stored from the registers as a matmul's
   * rows (row = pixel, column = channel). A stem of 3 input channels so
   * hands its activation to channels-last consumers (gpu_mlayout.c)
   * instead of writing f32 NCHW that a conversion launch reads back.
   * Ungrouped, no fused pool, no residual, not with nhwc_io. */
  bool nhwc_out;
  /* f16 outputs (rounded once from the f32 result), as the vendor's GEMM
   * writes them: matmuls on the warp-specialised kernel only (plan.tma) */
  bool out_f16;
  /* the caller binds a split-K workspace and counters (plan.split; kernel
   * arguments 4 and 5): the model compiler, which allocates them; suite
   * layers and tuning runs leave it false and never split */
  bool split_ok;
  /* conv2d: the channels-last kernel only where C and the output channels
   * are multiples of the K and N tiles (no zero-filled channel tails). The
   * model compiler sets it except for the two convs of an MLP, one
   * widening the channels that hands its activation whole to one
   * narrowing them (gpu_model_pad_link); suite layers and tuning runs
   * leave it false. */
  bool exact_channels;
  /* where the layer comes from, for diagnostics only (plan keys, kernel
   * names and code ignore it): the model or suite file (borrowed from the
   * caller for the compilation; may be NULL) and the ONNX node or suite
   * layer name (a copy, cut to fit; may be empty) */
  const char *file;
  char node[128];
} gpu_problem;

/* The location of a diagnostic about problem q: its file and node. */
#define GPU_PROB_LOC(q) GPU_LOC((q)->file, (q)->node[0] ? (q)->node : NULL)

typedef struct gpu_plan {
  gpu_problem prob;
  /* the GEMM view: C[G][M][N] += A[G][M][K] * B[G][K][N] */
  int64_t G, M, N, K;
  int64_t oh, ow; /* conv2d output size before pooling */
  /* schedule */
  int bm, bn, bk;     /* workgroup tile (shared memory / LDS) */
  int wm, wn;         /* warp/wave tile (registers) */
  int fm, fn, fk;     /* matrix instruction (or FMA fragment) shape */
  bool matrix;        /* matrix instruction; false: plain FMA fragment */
  int stages;         /* shared-memory pipeline depth (2 = double buffering) */
  int warp_size;
  int threads;        /* per workgroup: warp_size * (bm/wm) * (bn/wn), 4x that with wgmma */
  /* warpgroup matrix instructions (NVPTX sm_90a wgmma.mma_async m64nNk16,
   * both operands read from shared memory through descriptors): wm x wn is
   * then a warpgroup's tile (4 warps, wm = fm = 64, fn = wn), fed by
   * asynchronous copies into 128-byte-swizzled tiles (bk = 128 bytes of K;
   * A rows K-contiguous, B as 64-column slabs of [bk][64]). Matmuls that
   * the tiles divide only; 1 KiB of shared memory more, to align the tiles
   * to the swizzle pattern's 1024 bytes. */
  bool wgmma;
  /* warpgroup MMA: batches (a K tile's instructions) left in flight at the
   * end of a K step, 0 or 1; with 1 the next batch is issued before the
   * previous one has drained, and copies run stages - 2 tiles ahead instead
   * of stages - 1 */
  int wg_inflight;
  /* warpgroup MMA fed by bulk tensor copies (NVPTX sm_90a
   * cp.async.bulk.tensor with mbarriers): warpgroup 0 is the producer (one
   * thread issues a K tile's copies into a free stage and counts its bytes
   * on the stage's "full" barrier), warpgroups 1.. consume (wait "full",
   * issue their batch, wait it, arrive on the stage's "empty" barrier), and
   * the grid is persistent: min(tiles, cores) workgroups walk the output
   * tiles (rasterised like gpu_raster) with the producer loading the next
   * tile while the consumers store this one. The kernel's first two
   * arguments then point to the CUtensorMaps of A ([G*M][K], box bk x bm)
   * and B ([G*K][N], box 64 x bk), both 128-byte swizzled, built by the host
   * (the manifest's "tma"). ws_regs: registers per consumer thread after
   * setmaxnreg (the producer drops to GPU_TMA_PRODUCER_REGS); 0 keeps the
   * launch's. */
  bool tma;
  int ws_regs;
  /* plan.tma only: two consumer warpgroups ping-pong over alternate output
   * tiles (each owns a whole 64 x bn tile: bm = wm = 64, bn = wn): one runs
   * its tile's K loop while the other stores the previous tile, so the
   * epilogue overlaps the matrix work; named barriers hand the K loop from
   * one to the other in tile order */
  bool ws_pingpong;
  /* plan.tma matmuls, and channels-last convolutions with prob.nhwc_io:
   * the output is written as f16 (rounded once from the f32 accumulators
   * after bias and activation), as the vendor libraries write it; argument
   * 2 then points to f16 */
  bool out_f16;
  /* matmuls of one batch through the direct epilogue: output row m is
   * stored (and a residual addend read) at row (m / out_rq) * out_r1 +
   * (m % out_rq) * out_r0, a permutation of the rows (a seq-first
   * transformer's result turned batch-first: gpu_mfuse_epi.c); 0: row m */
  int64_t out_rq, out_r0, out_r1;
  /* tiles are copied as whole 16-byte vectors without bounds checks: only
   * for matmuls whose M, N, K are multiples of the tile and rows 16-byte
   * aligned; everything else takes element-wise guarded copies */
  bool vector_copy;
  /* conv2d: a table of the K offsets (input offset of (c, r, s) and the
   * row/column shift r*dilation, s*dilation), built in shared memory at the
   * start, so that the gathers do not divide k by R*S and S per element */
  bool ktable;
  /* conv2d, channels-last: the kernel reads the input as NHWC and the
   * weights as [R][S][C][K] (B[k][n] row-major with k = (r, s, c)), so a K
   * tile (bk | C) is one filter tap and bk contiguous channels: every A row
   * is whole 16-byte chunks of one input pixel, copied with zero-filling
   * asynchronous copies (padding and rows past M read nothing), B like a
   * matmul's. C and the output channels need only be multiples of 8 (whole
   * chunks): a tap's last K tile zero-fills the A and B chunks of channels
   * past C (gpu_k_tiles), B's chunks of columns past N are zero-filled and
   * the epilogue stores none of them. The NCHW -> NHWC input transform
   * is a second kernel in the same module (gpu_nhwc_kernel_name),
   * launched first into a workspace
   * of gpu_nhwc_workspace_bytes (not with prob.nhwc_io: the input is NHWC
   * already); weights are reordered once (constants). */
  bool nhwc;
  /* input to gpu_plan_derive: keep the NCHW gather even where channels-last
   * copies fit (the mapper's operand-layout choice) */
  bool keep_nchw;
  /* the epilogue goes through shared memory (reusing the pipeline's): the
   * activated tile is staged column-major (cstride floats per column), then
   * read back for coalesced NCHW stores of 4 pixels at once, NHWC f16
   * stores of 8 channels at once (prob.nhwc_io), a 2x2 max pool of 4
   * consecutive rows, or the row softmax */
  bool staged;
  int cstride;
  /* conv2d with maxpool2x2 and a staged epilogue: m enumerates (n, py, px,
   * dy, dx), so every 2x2 window is 4 consecutive rows of one tile and
   * pooling needs no atomics (M = cn * (oh/2) * (ow/2) * 4: rows the floor
   * pooling drops are not computed) */
  bool pool_order;
  /* conv2d, depthwise on channels-last tensors (groups == C == K,
   * prob.nhwc_io, 16-bit; gpu_lower_dw.c, the mapper's map_gpu_dw_plan):
   * no contraction tiles. Each thread computes dw_pw consecutive output
   * pixels of a row times 8 channels (16-byte NHWC vectors), neighbouring
   * threads on neighbouring channel groups, then pixel runs; the taps read
   * the input straight from global memory (the halo's re-reads hit L1),
   * the weights are [R][S][C] 16-bit, bias and activation fused, f16 NHWC
   * stores; `threads` per workgroup, a 1-D grid, no shared memory. */
  bool dw;
  int dw_pw;
  /* split-K (prob.split_ok; not with plan.tma or softmax): the K tiles are
   * cut into `split` ranges of `split_kt` tiles (the last may be shorter,
   * none empty), one workgroup each: grid[2] = G * split, workgroup z
   * computing batch z / split, range z % split. Each stores its f32 partial
   * tile into the workspace (argument 4: gpu_split_ws_floats floats, in the
   * accumulators' register order, thread-major for coalescing), then bumps
   * the tile's counter (argument 5: gpu_split_counters u32, zero at rest);
   * the workgroup that sees split - 1 arrived resets the counter, sums the
   * split partials in order 0 .. split-1 (so the result is independent of
   * arrival order) and runs the plan's normal epilogue. 1 (or 0): no split. */
  int split, split_kt;
  unsigned grid[3];
  unsigned shared_bytes;
} gpu_plan;

/* Whether conv q's output is NHWC f16 (prob.nhwc_io without a residual,
 * or prob.nhwc_out). */
static inline bool gpu_conv_out_nhwc(const gpu_problem *q) {
  return q->kind == GPU_OP_CONV2D && ((q->nhwc_io && !q->epi.residual) || q->nhwc_out);
}

/* A depthwise conv the dedicated kernel takes (plan.dw): channels-last
 * tensors, one channel per group, 16-bit, whole 16-byte channel vectors. */
static inline bool gpu_is_dw(const gpu_problem *q) {
  return q->kind == GPU_OP_CONV2D && q->nhwc_io && q->groups > 1 && q->groups == q->cc && q->groups == q->ck &&
         (q->in_dtype == COV_F16 || q->in_dtype == COV_BF16) && q->cc % 8 == 0 && !q->epi.maxpool2x2;
}

/* plan.dw: the threads of the whole grid (one per pixel run x 8 channels). */
static inline int64_t gpu_dw_units(const gpu_plan *p) {
  return p->prob.cn * p->oh * ((p->ow + p->dw_pw - 1) / p->dw_pw) * (p->prob.cc / 8);
}

/* The K loop's tiles: cdiv(K, bk), except on channels-last copies
 * (plan.nhwc), where a K tile is bk channels of one filter tap: each tap
 * takes cdiv(C, bk) tiles, the last one's channels past C zero-filled
 * (C = 40 at bk = 32: two tiles, 8 + 24 zero channels in the second). */
static inline int64_t gpu_k_tiles(const gpu_plan *p) {
  if (p->nhwc) return p->prob.cr * p->prob.cs * ((p->prob.cc + p->bk - 1) / p->bk);
  return (p->K + p->bk - 1) / p->bk;
}

/* plan.split: K splits (1 when the plan has none), the output tiles, and
 * the workspace floats / counters the kernel takes as arguments 4 and 5. */
static inline int64_t gpu_split_of(const gpu_plan *p) { return p->split > 1 ? p->split : 1; }
static inline int64_t gpu_split_tiles(const gpu_plan *p) {
  return p->G * ((p->M + p->bm - 1) / p->bm) * ((p->N + p->bn - 1) / p->bn);
}
static inline int64_t gpu_split_ws_floats(const gpu_plan *p) {
  return gpu_split_of(p) > 1 ? gpu_split_tiles(p) * gpu_split_of(p) * p->bm * p->bn : 0;
}
static inline int64_t gpu_split_counters(const gpu_plan *p) { return gpu_split_of(p) > 1 ? gpu_split_tiles(p) : 0; }

/* What a target offers the planner, read from its ACG. */
typedef struct gpu_target_caps {
  int warp_size;
  int max_threads;
  uint64_t shared_bytes;     /* per workgroup */
  uint64_t regfile_bytes;    /* per SM / CU */
  int cores;                 /* SMs / CUs: instances of the shared memory */
  int n_tiles;               /* matrix capability tiles for the problem's dtype */
  int tiles[8][3];           /* (m, n, k) */
  int has_async_copy;        /* global->shared copies that bypass registers */
  int has_wgmma;             /* warpgroup matrix instructions on shared-memory operands */
  int has_tma;               /* bulk tensor copies with transaction barriers (plan.tma) */
} gpu_target_caps;

/* Bytes of the conv2d K-offset table (8 per k, for every K tile). */
static inline uint64_t gpu_ktable_bytes(const gpu_plan *p) {
  return p->ktable ? (uint64_t)((p->K + p->bk - 1) / p->bk) * (uint64_t)p->bk * 8u : 0;
}

/* Bytes of the staged epilogue: the tile, and for softmax a max and a
 * 1/sum per row. */
static inline uint64_t gpu_stage_out_bytes(const gpu_plan *p) {
  if (!p->staged) return 0;
  return (uint64_t)p->bn * (uint64_t)p->cstride * 4u + (p->prob.epi.softmax ? (uint64_t)p->bm * 8u : 0);
}

/* plan.tma: the "full" and "empty" barriers (8 bytes each per stage, at
 * most 16 stages) after the pipeline; the producer warpgroup's registers
 * after setmaxnreg; the consumers' default (232 x 256 + 40 x 128 fits the
 * 64 K registers of an SM with one workgroup of three warpgroups). */
enum { GPU_TMA_BARRIER_BYTES = 256, GPU_TMA_PRODUCER_REGS = 40, GPU_TMA_CONSUMER_REGS = 232 };

/* plan.tma: the consumers' registers after setmaxnreg for a workgroup of
 * `threads` (the producer warpgroup included): GPU_TMA_CONSUMER_REGS where
 * the launch could not give every thread that many, else 0 (no setmaxnreg:
 * two warpgroups have 256 registers each already). */
static inline int gpu_ws_regs(int threads) {
  return threads > 0 && 65536 / threads < GPU_TMA_CONSUMER_REGS ? GPU_TMA_CONSUMER_REGS : 0;
}

/* plan.tma: the two tensor maps the kernel takes as arguments 0 and 1,
 * {rows, cols, box_rows, box_cols} of A as [G*M][K] (boxes bm x bk) and of
 * B as [G*K][N] (boxes of bk x one 128-byte slab), 128-byte swizzled: the
 * manifest's "tma" and an artifact's tensor-map arguments. */
static inline void gpu_tma_dims(const gpu_plan *p, int64_t a[4], int64_t b[4]) {
  a[0] = p->G * p->M, a[1] = p->K, a[2] = p->bm, a[3] = p->bk;
  b[0] = p->G * p->K, b[1] = p->N, b[2] = p->bk, b[3] = 128 / (int64_t)cov_dtype_size(p->prob.in_dtype);
}

/* plan.tma: the persistent grid, one workgroup per core (SM) or one per
 * output tile where there are fewer. */
static inline int64_t gpu_tma_grid(const gpu_plan *p, const gpu_target_caps *caps) {
  int64_t tiles = p->G * ((p->M + p->bm - 1) / p->bm) * ((p->N + p->bn - 1) / p->bn);
  int64_t cores = caps->cores > 0 ? caps->cores : 1;
  return tiles < cores ? tiles : cores;
}

/* Shared memory a plan needs: the pipeline (and K table), or the staged
 * epilogue, which reuses it after the K loop. */
static inline uint64_t gpu_plan_shared_need(const gpu_plan *p, int esize) {
  uint64_t pipe = (uint64_t)p->stages * (uint64_t)(p->bm * p->bk + p->bk * p->bn) * (uint64_t)esize +
                  gpu_ktable_bytes(p);
  uint64_t out = gpu_stage_out_bytes(p);
  return (pipe > out ? pipe : out) + (p->wgmma ? 1024u : 0u) + (p->tma ? GPU_TMA_BARRIER_BYTES : 0u);
}

/* Pipeline depth of warpgroup-MMA plans (the H100 sweep,
 * bench/nvptx/README.md). */
enum { GPU_WGMMA_STAGES = 4, GPU_WGMMA_INFLIGHT = 0 };

/* The channels-last transform's launch: 64 channels x 32 pixels per
 * workgroup of 256 threads. */
enum { GPU_NHWC_TC = 64, GPU_NHWC_TP = 32, GPU_NHWC_THREADS = 256 };
static inline void gpu_nhwc_grid(const gpu_plan *p, unsigned grid[3]) {
  grid[0] = (unsigned)((p->prob.ch * p->prob.cw + GPU_NHWC_TP - 1) / GPU_NHWC_TP);
  grid[1] = (unsigned)((p->prob.cc + GPU_NHWC_TC - 1) / GPU_NHWC_TC);
  grid[2] = (unsigned)p->prob.cn;
}
static inline uint64_t gpu_nhwc_workspace_bytes(const gpu_plan *p, int esize) {
  return (uint64_t)(p->prob.cn * p->prob.cc * p->prob.ch * p->prob.cw) * (uint64_t)esize;
}
/* Shared bytes of the transform: a [TC][TP+2] tile of 2-byte elements. */
static inline unsigned gpu_nhwc_shared_bytes(void) { return GPU_NHWC_TC * (GPU_NHWC_TP + 2) * 2; }

/* Derives the rest of a plan whose tile fields (bm, bn, bk, wm, wn, stages,
 * fm/fn/fk, matrix, wgmma, warp_size) are set: threads, copy kinds, channels-last,
 * staged epilogue, shared bytes, grid; then checks it. stages == 0 lets it
 * choose the pipeline depth. */
cov_status gpu_plan_derive(gpu_plan *p, const gpu_target_caps *caps);

/* Reads warp size, shared memory/LDS capacity, register file and the
 * matrix capability tiles for `in` inputs with f32 results from the ACG. */
cov_status gpu_caps_from_acg(const cov_acg *acg, cov_dtype in, gpu_target_caps *out);

/* Fills the derived GEMM view of `prob` and checks it (positive sizes,
 * divisible groups, supported dtype and epilogue). */
cov_status gpu_problem_check(const gpu_problem *prob, gpu_plan *plan);

/* A hand-fixed workgroup tile (`covenant gpu compile LAYER:BMxBNxBK:WMxWN:STAGES[:wg]`):
 * inflight < 0 takes the default batches in flight. */
typedef struct gpu_fixed_tile {
  int bm, bn, bk, wm, wn, stages;
  bool wgmma;
  int inflight;
  /* the warp-specialised persistent kernel: plan.tma, ws_regs, out_f16,
   * ws_pingpong */
  bool tma;
  int ws_regs;
  bool out_f16;
  bool pingpong;
  /* split-K ranges (plan.split; the problem's split_ok): 0 or 1 none */
  int split;
} gpu_fixed_tile;

/* The plan of `prob` with the hand-fixed tile f: the matrix instruction is
 * the first ACG capability tile the lowering implements (supported), the
 * rest derived (gpu_plan_derive: channels-last wherever the tile allows). */
cov_status gpu_plan_fixed(const gpu_problem *prob, const gpu_target_caps *caps, const int (*supported)[3],
                          int n_supported, const gpu_fixed_tile *f, gpu_plan *out);

/* The plan of `prob` from the mapper's GPU search (mapper/map_gpu.h): the
 * cheapest of its ranked schedules that this lowering takes, given the
 * matrix instruction shapes it implements (`supported`) and its copy and
 * warpgroup capabilities (caps). A pool has nothing to search (one output
 * per thread). ranked, when not NULL, receives the mapper's ranking. */
cov_status gpu_plan_map(const gpu_problem *prob, const cov_acg *acg, const gpu_target_caps *caps,
                        const int (*supported)[3], int n_supported, gpu_plan *out, map_gpu_result *ranked);

/* The depthwise kernel's plan (plan.dw) for a problem that gpu_is_dw
 * takes, checked by gpu_problem_check into `checked`: pw pixels per thread
 * (the mapper's map_gpu_dw_plan, or a hand-fixed :dwP). */
cov_status gpu_plan_dw(const gpu_plan *checked, const gpu_target_caps *caps, int pw, gpu_plan *out);

/* Plan p (its problem checked by gpu_problem_check) from the mapper's
 * candidate c; NULL when the lowering takes it as the mapper described it. */
cov_status gpu_plan_from_candidate(gpu_plan *p, const map_gpu_sched *c, const gpu_target_caps *caps);

/* Checks a plan (hand-written or from the mapper) for consistency. */
cov_status gpu_plan_check(const gpu_plan *plan, const gpu_target_caps *caps);

/* Chunks of 16 bytes are swizzled within a shared-memory tile row so that
 * eight consecutive rows read at the same logical chunk hit eight distinct
 * 16-byte bank groups (ldmatrix, ds_read_b128 patterns). `row_chunks` is the
 * row length in chunks (a power of two). */
static inline int gpu_swizzle_chunk(int row, int chunk, int row_chunks) {
  if (row_chunks >= 8) return chunk ^ (row & 7);
  int rows_per_line = 8 / row_chunks;
  return chunk ^ ((row / rows_per_line) & (row_chunks - 1));
}

/* Workgroup rasterisation: linear workgroup ids walk the output tiles in
 * column strips `group` tile-rows tall, so workgroups resident together share
 * A row-blocks and B column-blocks in L2. Maps launch ids (bx, by) of a
 * gx x gy grid to the tile (*tx, *ty) it computes; a bijection. */
static inline void gpu_raster(unsigned bx, unsigned by, unsigned gx, unsigned gy, unsigned group, unsigned *tx,
                              unsigned *ty) {
  unsigned pid = by * gx + bx, per = group * gx, first = pid / per * group;
  unsigned rows = gy - first < group ? gy - first : group;
  *ty = first + (pid % per) % rows;
  *tx = (pid % per) / rows;
}

#endif
