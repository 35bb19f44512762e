/* mapper/map_ir.h: the scheduled IR, the contract between the mapper and the
 * code generators (npu-sim now, the GPU lowerings later).
 *
 * A schedule says, for one layer group on one ACG, everything a code
 * generator needs without re-deriving it:
 *   - the *problem*: the layer's main loop nest, extracted generically from
 *     the verified codelet IR (map_problem);
 *   - the *epilogue*: the following elementwise / pool / softmax codelets as
 *     a short list of vector operations on the finished output tile
 *     (map_vop), each bound to a SIMD capability of the ACG;
 *   - the *binding* of the main statement to an ACG compute node and one of
 *     its capabilities, and the dtypes the computation really uses;
 *   - the *loop nest*: a flattened list of scheduled loops, outermost first
 *     (map_sloop);
 *   - per operand and storage level: the ACG storage node holding its tile,
 *     the tile's shape, bytes, double buffering and address (map_place);
 *   - the *transfers* between levels (map_xfer), placed in the loop nest;
 *   - the predicted cost (map_cost).
 *
 * Everything lives in the arena of the cov_schedule that owns it, and is
 * read-only once map_verify() accepted it.
 *
 * ---- Levels --------------------------------------------------------------
 * Storage levels are numbered from DRAM outwards-in: level 0 is DRAM (where
 * model tensors live), level 1 the first software-managed on-chip storage on
 * an operand's path (ibuf, wbuf, obuf, ubuf, LDS), level 2 the next (acc,
 * VGPRs), ... up to n_levels-1. Hardware-managed caches (ACG_CACHE) are not
 * levels: a path through one simply skips it. Operands may have shorter paths
 * than others; an operand whose path ends at level e has no place at levels
 * > e and the compute unit reads (or writes) its level-e tile directly.
 *
 * Scheduled loops carry a level too: the loops of level l iterate over the
 * level-(l+1) tiles inside one level-l tile; the loops of the last level
 * (n_levels-1) iterate over single compute issues, and that is where the
 * spatial loops are. So the tile of an operand at level l is the footprint,
 * through its affine access, of all scheduled loops whose level is >= l, and
 * its level-0 "tile" is the whole tensor.
 *
 * ---- Divisor-based tiling (an invariant, checked by map_verify) ----------
 * For every problem loop, the trip counts of its scheduled loops multiply to
 * its extent exactly, and the step of each scheduled loop is the product of
 * the trip counts of the scheduled loops of the same problem loop inside it.
 * Hence every tile at every level has the same shape: there are no partial
 * tiles anywhere, spatial factors included (C=3 on a 16-row array uses 3
 * rows and leaves 13 idle; the cost model counts them as idle).
 *
 * ---- Loop values ---------------------------------------------------------
 * The value of problem loop l at any point is the sum over its scheduled
 * loops s of iter_s * step_s. A tile's origin at level v is that sum over the
 * scheduled loops of level < v only.
 *
 * ---- Affine accesses -----------------------------------------------------
 * Operand element index in dimension d:
 *     index[d] = off[d] + sum_l coef[d][l] * value(loop l)
 * Reads outside [0, shape[d]) give the operand's pad_value (0 for the mac
 * operands of a convolution's padding, -inf for max pooling), as the
 * codelet language defines. A tile of extent t_l per loop covers, in
 * dimension d, the box [base[d], base[d] + extent[d]) with
 *     extent[d] = 1 + sum_l |coef[d][l]| * (t_l - 1)
 *     base[d]   = off[d] + sum_l coef[d][l] * origin_l
 *                        + sum_{l: coef[d][l] < 0} coef[d][l] * (t_l - 1)
 * which includes convolution halos. Tiles are stored dense, row-major, in
 * that box's shape.
 */
#ifndef MAP_IR_H
#define MAP_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "acg/acg_ir.h"
#include "common/op_table.h"
#include "covenant/arena.h"
#include "covenant/mapper.h"
#include "covenant/tensor.h"
#include "covenant/types.h"

#define MAP_MAX_LOOPS 10     /* problem loops (conv2d has 8) */
#define MAP_MAX_OPERANDS 8   /* main statement inputs, output, epilogue vectors */
#define MAP_MAX_LEVELS 4     /* storage levels, DRAM included */
#define MAP_MAX_SLOOPS 48    /* scheduled loops */
#define MAP_MAX_VOPS 16      /* epilogue vector operations */
#define MAP_MAX_VREGS 4      /* epilogue registers (tiles of the output's shape) */
#define MAP_MAX_XFERS 32
#define MAP_MAX_ALTS 3       /* next best alternatives kept for --explain */
#define MAP_MAX_COMPUTE 16   /* compute nodes of an ACG the cost reports on */

/* ---- the problem ------------------------------------------------------ */

typedef enum map_role {
  MAP_ROLE_INPUT,  /* read by the main statement */
  MAP_ROLE_OUTPUT, /* written by the main statement (exactly one) */
  MAP_ROLE_VECTOR, /* read by the epilogue only: a per-channel constant (bias) */
} map_role;

typedef struct map_access {
  int rank;
  int64_t off[COV_MAX_RANK];
  int64_t coef[COV_MAX_RANK][MAP_MAX_LOOPS];
} map_access;

typedef struct map_operand {
  const char *name;     /* as in the codelet ("x", "w", "y", "bias.b") */
  map_role role;
  cov_dtype dtype;      /* in DRAM: the model's dtype */
  cov_dtype compute_dtype; /* as the compute unit consumes/produces it (f16 inputs
                              of an f16 x f16 -> f32 mac; the accumulator dtype
                              for the output) */
  int rank;
  int64_t shape[COV_MAX_RANK]; /* concrete, from the binding */
  map_access acc;       /* over the problem loops. For MAP_ROLE_VECTOR: over the
                           problem loops too (bias[c] has coef 1 on the loop
                           that indexes the output's channel dimension) */
  double pad_value;     /* value of reads outside the tensor */
  int layer_input;      /* which input of the layer this is (-1 for the output) */
} map_operand;

/* Whether operand op's access moves with problem loop `loop` (its tile
 * changes when the loop steps); false for loop < 0, "no loop". Passes and
 * code generators all ask this, so it lives with the IR. */
static inline bool map_operand_depends(const map_operand *op, int loop) {
  for (int d = 0; loop >= 0 && d < op->acc.rank; d++)
    if (op->acc.coef[d][loop]) return true;
  return false;
}

/* How the main statement combines its operands:
 *   MAP_MAIN_MAC:     out = init; out = out + in0 * in1 over the reduction loops
 *   MAP_MAIN_REDUCE:  out = init; out = op(out, in0) over the reduction loops
 *                     (max pooling: op MAX, init -inf)
 *   MAP_MAIN_MAP:     out = op(in0[, in1]) (no reduction loops; op COPY for a
 *                     layer that is all epilogue, e.g. a standalone softmax) */
typedef enum map_main_kind { MAP_MAIN_MAC, MAP_MAIN_REDUCE, MAP_MAIN_MAP } map_main_kind;

typedef struct map_problem {
  const char *layer;    /* layer name ("resnet50_conv1", "conv2d") */
  const char *codelet;  /* the codelet holding the main statement */
  map_main_kind kind;
  cov_op op;            /* MAC, MAX, ADD, COPY, ... */
  double init;          /* initial accumulator value (MAC: 0, MAX: -inf) */
  int n_loops;
  const char *loop_name[MAP_MAX_LOOPS]; /* the codelet's loop variables */
  int64_t extent[MAP_MAX_LOOPS];
  bool reduction[MAP_MAX_LOOPS];        /* absent from the output's access */
  int n_inputs;         /* operands[0 .. n_inputs-1] are the main inputs */
  int output;           /* index of the output operand (== n_inputs) */
  int n_operands;       /* inputs, output, then epilogue vectors */
  map_operand operands[MAP_MAX_OPERANDS];
  int64_t ops;          /* main statement executions (MACs for a mac layer) */
  /* The accumulation starts from a vector operand instead of init: a bias
   * the array preloads into its accumulators (map_bias.c). The epilogue's
   * add of it is gone, and bias_op's path leads to the array, not the SIMD
   * unit. Its one dimension is read as one of the output's dimensions. */
  bool bias_init;
  int bias_op;
} map_problem;

/* ---- the epilogue ----------------------------------------------------- */

/* A vector source: a register (register 0 holds the main statement's result
 * when the epilogue starts; the epilogue's result is register 0 when it
 * ends), a per-channel constant vector (operand, indexed through its access
 * by the output loops), a scalar, or a row register (one value per output
 * position with the row loop fixed, written by MAP_VOP_ROW_REDUCE). */
typedef enum map_vsrc_kind { MAP_VS_NONE, MAP_VS_REG, MAP_VS_VEC, MAP_VS_SCALAR, MAP_VS_ROW } map_vsrc_kind;

typedef struct map_vsrc {
  map_vsrc_kind kind;
  int index;    /* REG/ROW: register number; VEC: operand index */
  double value; /* SCALAR */
} map_vsrc;

typedef enum map_vop_kind {
  MAP_VOP_MAP,        /* reg[dst] = op(a[, b]) elementwise */
  MAP_VOP_ROW_REDUCE, /* row[dst] = reduce(op) of a over problem loop `loop`
                         (the whole extent of that loop is inside the tile) */
  MAP_VOP_ROW_MAP,    /* row[dst] = op(row[a][, scalar b]) once per row of problem
                         loop `loop` (softmax's reciprocal of each row's sum) */
  MAP_VOP_POOL,       /* reg[dst] = reduce(op) of a over non-overlapping windows
                         (window == stride) of problem loops pool_loop[0..1];
                         the result, and the stored output, shrink by window */
} map_vop_kind;

typedef struct map_vop {
  map_vop_kind kind;
  cov_op op;
  int dst;
  map_vsrc a, b;        /* b.kind == MAP_VS_NONE for unary ops; POOL: a
                           scalar b is the window's starting value (a
                           folded ReLU: map_fold_relu_into_pool) */
  int loop;             /* ROW_REDUCE, ROW_MAP; MAP with row_sum */
  /* MAP of a unary op in an ACG-declared fused form (acg_capability.fused,
   * map_epilogue.c fuse_bias_row_sum): bias: reg[dst] = op(a + b), b one
   * value per row (a row register); row_sum: also row[sum_row] = the sum
   * of the results along problem loop `loop` (softmax's exp(x - max) and
   * its row sum in one pass) */
  bool bias, row_sum;
  int sum_row;
  int pool_loop[2];     /* POOL: the output loops pooled (h, w) */
  int window[2];        /* POOL: window == stride */
  int node, cap;        /* the ACG SIMD compute node and capability running it */
  const char *from;     /* the codelet this op was lowered from ("relu6") */
  /* dtypes the op reads and writes, from the codelet's declarations (an
   * integer layer's requantisation goes i32 -> f32 -> i8); 0: the
   * accumulator's dtype (f32 epilogues) */
  cov_dtype din, dout;
} map_vop;

/* ---- the schedule ----------------------------------------------------- */

typedef enum map_axis {
  MAP_AX_NONE,      /* temporal */
  MAP_AX_ROWS,      /* systolic/matrix array rows (tile[0]) */
  MAP_AX_COLS,      /* array columns (tile[1]) */
  MAP_AX_LANES,     /* SIMD lanes */
  MAP_AX_WORKGROUP, /* GPU: one per instance of the level-1 storage (LDS per CU) */
  MAP_AX_WAVE,      /* GPU: one per instance of the compute node inside a workgroup */
  MAP_AX_INSTANCE,  /* other replicated instances */
  MAP_AX_COUNT
} map_axis;

typedef struct map_sloop {
  int loop;       /* problem loop */
  int level;      /* storage level whose tile it iterates inside (see above) */
  bool spatial;   /* all iterations run at once on parallel units */
  map_axis axis;  /* MAP_AX_NONE iff !spatial */
  int64_t trips;  /* > 1 (loops of one trip are left out) */
  int64_t step;   /* added to the problem loop per iteration */
} map_sloop;

/* On-chip places (and so the two halves of a double buffer) start on
 * multiples of this many bytes: the NPU tracks dependencies per 64-byte
 * block of a buffer (backends/npu-sim/ISA.md "Timing"), so two tiles that
 * shared a block would serialise, the next tile's load waiting for the one
 * being computed (a 2,088-byte input tile: its second half's load waited
 * 200 cycles for the first's latency). */
#define MAP_PLACE_ALIGN 64

/* Whether `bytes` from the start of storage node `node` fit its capacity:
 * the one fit check of places, epilogue temporaries and partial tiles
 * (the search, the builder, the verifier, the interpreter). */
static inline bool map_fits(const cov_acg *g, int node, uint64_t bytes) {
  return bytes <= g->storage[node].capacity_bytes;
}

/* Where one operand's tile lives at one level. */
typedef struct map_place {
  bool present;         /* the operand has storage at this level */
  int node;             /* ACG storage node id */
  int64_t tile[MAP_MAX_LOOPS];   /* tile extent per problem loop */
  int64_t shape[COV_MAX_RANK];   /* tile box per dimension (halos included) */
  int64_t elems;
  cov_dtype dtype;      /* element type stored at this level */
  uint64_t bytes;       /* one buffer, rounded up to MAP_PLACE_ALIGN */
  bool double_buffered; /* two buffers, alternating (only where the ACG allows) */
  uint64_t addr;        /* byte offset of the (first) buffer in the storage; the
                           second buffer, if any, follows at addr + bytes */
} map_place;

typedef enum map_dir {
  MAP_LOAD,  /* outer level -> inner level */
  MAP_STORE, /* inner -> outer: the output, once its reduction is complete
                (into DRAM, after the epilogue) or as a partial sum between
                two on-chip levels (then loaded back by the matching LOAD) */
} map_dir;

/* One copy of a tile between two levels. It executes once per iteration of
 * scheduled loop `after` (-1: once, outside every loop): `after` is the
 * innermost scheduled loop of a level < `level` that the operand's tile
 * depends on. A LOAD happens at the top of that loop's body, a STORE at its
 * bottom. The region copied is the operand's level-`level` tile box at the
 * current loop values (see "Affine accesses"). */
typedef struct map_xfer {
  int operand;
  map_dir dir;
  int level;         /* the inner level (>= 1) */
  int src, dst;      /* ACG storage node ids */
  int edge;          /* ACG edge used (index into acg->edges); for a path
                        through a cache, the first edge */
  int after;         /* scheduled loop index, or -1 */
  bool accumulate;   /* LOAD of partial sums (the output between on-chip levels) */
  uint64_t bytes;    /* per execution */
  int64_t count;     /* executions */
} map_xfer;

typedef struct map_cost {
  double cycles;            /* predicted total */
  double compute_cycles;    /* main statement, at the bound capability's rate */
  double epilogue_cycles;   /* vector ops on the SIMD node */
  double xfer_cycles[MAP_MAX_XFERS]; /* per transfer: bytes / edge bandwidth + latency */
  double exposed_cycles;    /* transfer cycles not hidden behind compute */
  double bytes_level[MAP_MAX_LEVELS]; /* bytes moved into/out of each level */
  double util[MAP_MAX_COMPUTE]; /* per compute node (index id - n_storage):
                                   useful ops / (peak ops per cycle * cycles) */
  double energy_pj;         /* 0 when the ACG gives no energies */
  bool has_energy;
} map_cost;

/* ---- Rectangular pixel tiles (map_rect.c) ------------------------------
 * Where an output-stationary array streams a block of two output loops
 * through its rows (m digits: a convolution's output rows x columns) and
 * no divisor tiling fills the rows (convnet_layer2's 11 x 11 pixels: 4 x 4
 * blocks of a 12 x 12 padding run 9 tiles, where ceil(121 / 16) = 8 would
 * do), the two loops may instead be covered by a list of rectangles of up
 * to the array's rows pixels each, of several shapes (1 x 11, five 2 x 8,
 * two 5 x 3). The one exception to divisor-based tiling:
 *   - scheduled loop rect_sloop (level rect_level, loop rect_loop[0],
 *     step 0) iterates over the rectangles: at its iteration i, problem
 *     loop rect_loop[d] adds rects[i].org[d] (map_walk_values);
 *   - the two loops have no scheduled loops of a level <= rect_level but
 *     it, and their tiles at those levels are the whole extents;
 *   - inside, their scheduled loops (of the last level) have the trips of
 *     the largest rectangle (ext of rects[rect_nominal]), which is the
 *     tile every place and the cost model see; walks and code generators
 *     run each rectangle's own ext (map_walk_trips, map_walk_box), and
 *     tiles inside rect_sloop are laid out dense in the rectangle's box;
 *   - only the output has places inside rect_sloop (the accumulators), its
 *     epilogue runs per rectangle (map_epi_per_subtile) and each
 *     rectangle is stored to DRAM after its epilogue.
 * map_verify checks that the rectangles cover the extents exactly once. */
#define MAP_MAX_RECTS 32
typedef struct map_rect {
  int64_t org[2], ext[2]; /* per rect_loop[d] */
} map_rect;

typedef struct map_schedule {
  const cov_acg *acg;
  map_problem prob;
  /* binding of the main statement */
  int node;                 /* ACG compute node id */
  int cap;                  /* capability index in that node */
  cov_dtype mul_dtype;      /* dtype of the multiplicands as computed */
  cov_dtype acc_dtype;      /* dtype of the accumulator */
  bool narrowed;            /* mul_dtype narrower than the model's dtype */
  int n_vops;
  map_vop vops[MAP_MAX_VOPS];
  int n_vregs, n_rows;      /* epilogue registers used */
  /* Where the epilogue's temporaries live, one set per level-1 output tile
   * (layout: map_epi_plan in mapper/map_internal.h): the registers other
   * than register 0 when register 0 is the output's level-1 tile itself
   * (epi_in_place: the SIMD unit reads and writes that storage), all of them
   * otherwise, the row registers and the pooled result, in acc_dtype
   * elements. They are allocated after the places of epi_node, counted
   * against its capacity, and checked by map_verify. */
  int epi_node;             /* ACG storage node; -1: no epilogue */
  bool epi_in_place;
  uint64_t epi_addr, epi_bytes;
  /* The epilogue in chunks of epi_chunk elements of output dim
   * epi_chunk_dim, as the GEMMs finish them (map_epi_chunk_plan); 0: once
   * on the whole level-1 tile. */
  int epi_chunk_dim;
  int64_t epi_chunk;
  int n_levels;
  int n_sloops;
  map_sloop sloops[MAP_MAX_SLOOPS];
  map_place place[MAP_MAX_OPERANDS][MAP_MAX_LEVELS];
  int n_xfers;
  map_xfer xfers[MAP_MAX_XFERS];
  /* rectangular pixel tiles (above); n_rects 0: none */
  int n_rects, rect_sloop, rect_level, rect_nominal;
  int rect_loop[2];
  map_rect rects[MAP_MAX_RECTS];
  map_cost cost;
} map_schedule;

/* Whether scheduled loop i runs each rectangle's own extent (a loop of a
 * rectangle loop inside rect_sloop). */
/* The box of operand o's level-lv tile with rectangle r's extents; the
 * DRAM cost (map_dram_cost_bytes) of transfer x for that box alone (a
 * rectangle's store). */
void map_rect_box(const map_schedule *s, int o, int lv, int r, int64_t *box);
double map_dram_cost_rect(const map_schedule *s, const map_xfer *x, int r);

static inline bool map_rect_inner(const map_schedule *s, int i) {
  return s->n_rects > 0 && i > s->rect_sloop &&
         (s->sloops[i].loop == s->rect_loop[0] || s->sloops[i].loop == s->rect_loop[1]);
}

/* The dtype the epilogue leaves the output in, which the tile is stored to
 * DRAM as: the last op writing register 0's dtype; without one, the
 * accumulator's (an integer array's i32) or f32. */
cov_dtype map_epi_out_dtype(const map_schedule *s);

/* Whether the code generator alternates the epilogue's registers between
 * two halves of the `have` bytes it finds free in its register buffer (the
 * epilogue of a tile then need not wait for the previous tile's store, and
 * the array's next tile overlaps this one's epilogue and store): the offset
 * of the second half, 0 when two tiles' registers (and MAP_EPI_SLOTS
 * 64-byte slots each) do not fit. The code generator decides with it, the
 * cost model predicts the overlap with it. */
#define MAP_EPI_SLOTS 8
uint64_t map_epi_half(const map_schedule *s, uint64_t have);

/* Whether the code generator runs the epilogue on each level-2 output tile
 * as it is drained into the level-1 tile (an output-stationary array's
 * accumulator tile, holding final sums: no partial sums loaded back), not
 * once on the whole level-1 tile: every op element-wise on the SIMD unit,
 * in place in the level-1 tile, which is stored as the epilogue leaves it.
 * The SIMD unit then works on one sub-tile while the array accumulates the
 * next, where a whole tile's epilogue held the next drain and so the array
 * (mobilenetv2_dw3x3 on npu-16x16-os). The cost model overlaps them too. */
bool map_epi_per_subtile(const map_schedule *s);

/* The dimension of a box of `rank` dims with extents `shape` that one
 * SIMD instruction runs along (its columns): the innermost one longer than
 * 1, else the last. The code generator splits every epilogue op into
 * instructions along it; the cost model counts what a source with stride 0
 * along it (ISA.md "Timing": read once per row) saves with it. */
int map_vop_cols_dim(int rank, const int64_t *shape);

/* Bytes per element the epilogue op v reads from memory, at `ei` bytes per
 * element of a source: each register, row or vector source once per element,
 * but once per row of the SIMD instructions (`cols` elements) where its
 * stride along their columns is 0 (a row's max or reciprocal along its own
 * row, a per-channel bias along a row of pixels); a scalar is an immediate.
 * cols_shape: the output tile the epilogue works on (NULL: not placed yet,
 * such a source then counts nothing, which is a lower bound). */
double map_vop_src_bytes(const map_schedule *s, const map_vop *v, const int64_t *cols_shape,
                         double ei);

/* The output box each instruction of the epilogue covers: the level-2 tile
 * where map_epi_per_subtile, else the level-1 tile; NULL when the schedule
 * has no places yet (the search's bound works on the prototype). */
const int64_t *map_epi_box(const map_schedule *s);

/* Otherwise, where the array accumulates in a level-2 tile drained into a
 * double-buffered level-1 tile at least MAP_EPI_SPREAD_DRAINS times per
 * level-1 tile, the code generator deals a tile's epilogue out between the
 * next tile's drains on the SIMD unit (backends/npu-sim/npu_spread.c) so
 * that no drain, and so no accumulation into the register file, waits for a
 * whole epilogue (convnet_layer1 on npu-16x16-os: 4,007 -> 3,553 cycles);
 * the cost model overlaps them. The drains per level-1 tile, or 0. */
#define MAP_EPI_SPREAD_DRAINS 3
#define MAP_EPI_SPREAD_CYCLES 32 /* map_epi_vop_rows */
int64_t map_epi_spread(const map_schedule *s);

/* Sets s->epi_chunk / epi_chunk_dim (map_build, once the transfers are
 * known). Where a weight-stationary array's GEMMs fill a double-buffered
 * level-1 output tile one pooling row of windows after another (the first
 * loop of the tile the GEMMs do not absorb drives a pool window's dim), the
 * code generator runs the epilogue and the store chunk by chunk along that
 * dim (npu_cg_store_final), the tile laid out with that dim outermost
 * (map_gemm_tile_strides) so that a chunk is one contiguous range, which
 * the simulator's scoreboard sees ready once its own GEMMs are done: after
 * the last GEMM only the last chunk's epilogue, store and latency remain
 * (convnet_layer1 on npu-16x16). A chunk is the fewest whole windows whose
 * pooled elements fill the SIMD unit's lanes (the capability's
 * throughput), so no instruction runs on fewer lanes than the whole tile's
 * would. The cost model charges the last chunk's epilogue and store. */
void map_epi_chunk_plan(map_schedule *s);

/* The chunks of the level-1 output tile's epilogue: 1 without chunking. */
int64_t map_epi_chunks(const map_schedule *s);

/* Where the epilogue starts with a row max over a loop that the level-2
 * (accumulator) tile splits into chunks, and the SIMD unit drains each
 * accumulator tile with a copy that also writes each row's max (ACG
 * "fused": "row_max", ISA.md "vop" flag rmax): the drains write the row
 * maxes of their chunks beside the level-1 tile (map_epi_pmax), and the
 * epilogue's row max reads those, one value per chunk, instead of the whole
 * tile (softmax on an output-stationary array: bert_base_attn_qk on
 * npu-16x16-os, 128 scores a row in chunks of 16, the row max pass 12,288 ->
 * 768 cycles). Bit-identical: a max of maxes is the max. The chunks per
 * row, or 0. */
int64_t map_epi_drain_max(const map_schedule *s);
/* Rows per SIMD instruction of the epilogue's element-wise ops where it is
 * spread between drains (map_epi_spread; 0: one instruction per row block
 * of the tile): npu_spread moves whole instructions, and one of a 16 x 128
 * exp at 4 lanes held the next drain, and so the array, for 512 cycles.
 * The cost model charges each instruction's own rounding. */
int64_t map_epi_vop_rows(const map_schedule *s, const map_vop *v);
/* Its buffer of chunk maxes, in the epilogue's storage at the top of the
 * area the code generator's registers may use: byte offset and size. */
void map_epi_pmax(const map_schedule *s, uint64_t *addr, uint64_t *bytes);

/* The chosen schedule of a cov_schedule (include/covenant/mapper.h), for
 * the code generators and evaluators that read the scheduled IR. */
const map_schedule *map_schedule_of(const cov_schedule *s);

/* map_gemm.c: the GEMM instructions of a schedule bound to a systolic array
 * (the NPU code generator emits these) and their cost under the simulator's
 * timing rules. */
typedef struct map_gemm_plan {
  int ml, kl, nl;         /* scheduled loops one GEMM absorbs (m streamed,
                             k on the rows, n on the columns), -1 if none */
  int ml2;                /* a second streamed loop, outside ml (m runs over
                             ml2 x ml: one stride through A's and the
                             output's tiles), -1 if none */
  bool m_dig;             /* ml2 joins ml as a second digit of m (ISA.md "m
                             digits": A's and the output's rows need not be
                             one stride apart) */
  int kd[3], n_kd;        /* with kx: the reduction loops one GEMM's k runs
                             over, outermost first (kl and the temporal loops
                             it absorbs), as the digits of k (ISA.md "k
                             digits"); n_kd <= 1: k is kl alone */
  int a_op, b_op;         /* A: indexed by m and k; B: by k and n */
  int out_init_after;     /* the output's deepest tile restarts at this loop */
  bool out_acc_load;      /* ... or is loaded with partial sums */
  bool output_stationary; /* the array accumulates in a register file next to it */
  uint32_t mmax, kmax, nmax; /* largest m, k, n of one GEMM */
} map_gemm_plan;
/* Whether the schedule's main statement runs as GEMMs (a two-input MAC on
 * a systolic array, or as tiles on a matrix, SIMD or scalar unit:
 * map_mac_tiles): then the cost model charges map_gemm_cycles. */
bool map_gemm_applies(const map_schedule *s);
/* The same for problem p on compute node `node` (the search's bound asks it
 * of the target's node before any schedule is built). */
bool map_gemm_applies_on(const cov_acg *g, int node, int cap, const map_problem *p);
/* How a tile moves between two on-chip storage nodes: the SIMD compute
 * node (index into acg->compute) that reads `from`, writes `to` and copies
 * (or casts) din -> dout, its capability in *cap (the NPU code generator's
 * on-chip copy, a VOP), or -1. The storage path search
 * offers an input a hop from one scratchpad into another only where this
 * finds a mover, so every path it binds is one the code generator runs
 * (hops from DRAM are DMAs; out of a cache or into a register file, loads
 * of the unit reading it). */
int map_onchip_mover(const cov_acg *acg, int from, int to, cov_dtype din, cov_dtype dout, int *cap);
/* An array is output-stationary when it has an edge to a register file. */
bool map_output_stationary(const cov_acg *g, int node);
void map_gemm_plan_make(const map_schedule *s, map_gemm_plan *gp);
/* A SIMD main statement's VOP (map_simd.c): the scheduled loops it spans
 * as rows and as columns (lanes), -1 where none; the code generator emits
 * one VOP per iteration of the others, the cost model charges each. */
void map_simd_vop_loops(const map_schedule *s, int *rows, int *cols);
/* A SIMD reduction's steps per output tile (the reduction trips inside the
 * tile's lifetime), the first a copy; 0 for a map, or where the tile's
 * partial results are loaded back. */
double map_simd_reduce_steps(const map_schedule *s);
/* Element strides of operand o's tile at level lv: row-major over the tile
 * box, except that an array operand's tile at its deepest level keeps the
 * dimension the array reads in one cycle innermost (k of A on a
 * weight-stationary array, m of A on an output-stationary one, n of B), so
 * those elements fall in different banks. gp NULL: row-major (SIMD main
 * statements). The NPU code generator lays tiles out by this, and the plan
 * merges streamed loops by it. */
void map_gemm_tile_strides(const map_schedule *s, const map_gemm_plan *gp, int o, int lv, int64_t *st);
/* Elements operand o's level-lv tile spans in that layout (above its box
 * where k digits pad A's strides). */
int64_t map_gemm_tile_elems(const map_schedule *s, const map_gemm_plan *gp, int o, int lv);
/* M of one GEMM: the trips of ml and ml2. */
int64_t map_gemm_m(const map_schedule *s, const map_gemm_plan *gp);
/* K of the GEMMs before splitting at kmax: the trips of kl, or of every
 * k digit. */
int64_t map_gemm_k(const map_schedule *s, const map_gemm_plan *gp);
/* Whether one GEMM covers scheduled loop i whole (its m, k or n). */
bool map_gemm_absorbs(const map_gemm_plan *gp, int i);
/* Cycles the array is busy with the schedule's GEMMs (chaining included). */
double map_gemm_cycles(const map_schedule *s, const map_gemm_plan *gp);
/* DRAM bytes one execution of a DRAM transfer costs: contiguous runs in
 * whole bursts of the DRAM node's width. */
double map_dram_cost_bytes(const map_schedule *s, const map_xfer *x);

#endif
