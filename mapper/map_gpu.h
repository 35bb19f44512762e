/* mapper/map_gpu.h: the mapper's GPU search, which plans the GPU backend's
 * matrix kernels.
 *
 * A GPU target's ACG gives the levels (DRAM, the scratchpad = shared memory /
 * LDS per workgroup, the register file), the matrix capabilities (tile,
 * dtypes, throughput, how many waves issue one instruction and whether its
 * multiplicands come from the scratchpad) and the paths between them (an
 * asynchronous L2 -> scratchpad path lets copies bypass registers). The
 * search enumerates GPU schedules of a contraction seen as
 *     C[G][M][N] += A[G][M][K] * B[G][K][N]
 * (a matmul, or a convolution as an implicit GEMM): the workgroup tile
 * (bm x bn, the scratchpad level), the wave tile (wm x wn, the register
 * level), the K step bk, the matrix instruction, the pipeline depth and the
 * operand layout of A (the NCHW gather or channels-last 16-byte rows), keeps
 * those that fit the ACG's capacities and predicts each one's time with a
 * per-core resource model (map_gpu.c). The GPU backend (backends/gpu)
 * fills its kernel plan from the best candidate its lowering accepts;
 * `covenant map LAYER --target <GPU> --explain` prints the same ranking.
 * The search knows no target by name. */
#ifndef MAP_GPU_H
#define MAP_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "covenant/acg.h"
#include "covenant/mapper.h"
#include "covenant/status.h"
#include "covenant/types.h"

/* The input location of a diagnostic: the ACG file or the layer. */
static inline const cov_loc *map_loc_(cov_loc *l, const char *file, const char *path) {
  l->file = file, l->path = path;
  return l;
}
#define MAP_LOC(file, path) map_loc_(&(cov_loc){0}, (file), (path))

#define MAP_GPU_MAX_CANDS 1024 /* candidates kept, best first */
#define MAP_GPU_MAX_SHAPES 8

typedef enum map_gpu_kind { MAP_GPU_MATMUL, MAP_GPU_CONV } map_gpu_kind;

typedef struct map_gpu_problem {
  map_gpu_kind kind;
  cov_dtype in;            /* multiplicands; accumulation and output f32 */
  int64_t G, M, N, K;      /* the GEMM view */
  int64_t conv_c, groups;  /* conv: input channels per group, groups */
  bool exact_channels;     /* conv: channels-last only where the K tile divides conv_c and the N tile N */
  bool rows_whole;         /* a row epilogue (softmax): one workgroup holds whole rows of N */
  int out_bytes;           /* bytes per output element: 4 (f32; 0 reads as 4) or 2 (f16, which only the
                            * warp-specialised matmul and the channels-last conv write: the search
                            * keeps their candidates only) */
  bool out_rows;           /* conv: f16 outputs stored from the registers as the GEMM's rows (NHWC), which
                            * the NCHW gather's epilogue writes: its candidates only */
} map_gpu_problem;

/* What the target's lowering implements beside the ACG (the backend passes
 * it; `covenant map` assumes every ACG capability is implemented). */
typedef struct map_gpu_lowering {
  int n_shapes;            /* < 0: every matrix tile of the ACG */
  int shapes[MAP_GPU_MAX_SHAPES][3];
  bool async_copy;         /* implements the asynchronous path's copies */
  bool warpgroup;          /* implements multi-wave (warpgroup) instructions */
  /* implements the warp-specialised persistent kernel: warpgroup
   * instructions fed by bulk tensor copies that one producer warpgroup
   * issues into an mbarrier ring, one workgroup per core walking the tiles
   * (`covenant map` without a lowering: wherever the ACG has warpgroup
   * instructions and an asynchronous path into the scratchpad) */
  bool tma;
  /* implements split-K on the tiled kernels and the caller binds its
   * workspace (map_gpu_sched.split) */
  bool split_k;
} map_gpu_lowering;

typedef struct map_gpu_sched {
  int bm, bn, bk;          /* workgroup tile (scratchpad level) */
  int wm, wn;              /* wave tile (register level); a warpgroup's with multi-wave instructions */
  int fm, fn, fk;          /* matrix instruction, or the FMA fragment */
  bool matrix, warpgroup;
  bool tma;                /* warp-specialised persistent (map_gpu_lowering.tma): a producer warpgroup more */
  bool pingpong;           /* tma: two consumer warpgroups on alternate tiles of one warpgroup's (bm = wm,
                            * bn = wn), one's epilogue under the other's K loop */
  bool channels_last;      /* A as channels-last 16-byte rows (convolutions), else the NCHW gather */
  bool vector_copy;        /* whole 16-byte copies (matmuls the tiles divide) */
  int stages;              /* scratchpad pipeline depth */
  int split;               /* K cut into this many ranges, one workgroup each (1: none), the partial
                            * tiles summed in a fixed order by the last workgroup of a tile */
  int threads;
  int per_core;            /* workgroups resident per core (scratchpad and register limits) */
  int resident;            /* of those, how many the busiest core runs at once (at most its tiles) */
  uint64_t shared_bytes;   /* pipeline tiles (the lowering may add a K table or staging) */
  int regs;                /* estimated registers per thread */
  int64_t tiles;           /* workgroups */
  /* predicted time on the busiest core, and its parts (cycles) */
  double cycles;
  double mma, smem, copy, issue, chain, epilogue, dram;
} map_gpu_sched;

typedef struct map_gpu_result {
  int n;                                /* candidates kept, best first */
  map_gpu_sched c[MAP_GPU_MAX_CANDS];
  int64_t enumerated, feasible;
  double clock_mhz;
} map_gpu_result;

/* Enumerates, checks and ranks GPU schedules of p on acg (the cheapest
 * first; ties keep the enumeration order: the ACG's capability order,
 * larger tiles first). low NULL: every ACG capability. COV_UNSUPPORTED when
 * nothing fits. */
cov_status map_gpu_search(const cov_acg *acg, const map_gpu_problem *p, const map_gpu_lowering *low,
                          map_gpu_result *out);

/* The GEMM view of a layer's main statement (the codelet's loops: those of
 * A only are M, of B only N, of both G, the reduction loops K), with
 * multiplicands of dtype `in`. COV_UNSUPPORTED for a layer that is not a
 * contraction (a pool: the backend runs one output per thread). */
cov_status map_gpu_problem_of_layer(const cov_layer *layer, const cov_acg *acg, cov_dtype in,
                                    map_gpu_problem *out);

/* One line describing candidate c ("tile 128x256x64 warpgroup 64x256 ..."). */
void map_gpu_sched_text(const map_gpu_sched *c, char *buf, size_t size);

/* The chosen schedule, its cost breakdown and the next `top` alternatives. */
cov_status map_gpu_explain(const cov_acg *acg, const char *layer, const map_gpu_problem *p,
                           const map_gpu_result *r, int top, FILE *out);

/* Fused attention, softmax(Q K^T * scale) V over [batch][heads][seq][dim]
 * (map_gpu_attn.c): the GPU backend's flash-attention tile. */
typedef struct map_gpu_attn_problem {
  int64_t batch, heads, seq, dim;
} map_gpu_attn_problem;

typedef struct map_gpu_attn_sched {
  int bm;          /* query rows per workgroup */
  int wm;          /* per warp (16, 32), or 64: one warpgroup */
  int bn;          /* keys per block (64, 128) */
  bool warpgroup;  /* both products as warpgroup MMAs */
  bool pipe;       /* warpgroup form: the softmax overlapped with the previous block's P V */
  bool chain;      /* warpgroup form: block j's P V and block j+1's S issued as one batch */
} map_gpu_attn_sched;

/* The form and tile of fused attention for p on acg; `warpgroup`: the
 * lowering implements the warpgroup form (head dim 64); `where` names the
 * layer in a diagnostic. */
cov_status map_gpu_attn_plan(const cov_acg *acg, const map_gpu_attn_problem *p, bool warpgroup, const char *where,
                             map_gpu_attn_sched *out);

/* A depthwise convolution on channels-last tensors (groups == C == K, NHWC
 * 16-bit in and out; map_gpu_dw.c): the GPU backend's depthwise kernel
 * (backends/gpu/gpu_lower_dw.c), one thread per `pw` consecutive output
 * pixels of a row x 8 channels. */
typedef struct map_gpu_dw_problem {
  int64_t n, c, h, w, oh, ow; /* batch, channels, input and output sizes */
  int r, s, stride, es;       /* filter, stride, bytes per element */
} map_gpu_dw_problem;

typedef struct map_gpu_dw_sched {
  int pw;        /* output pixels per thread along the row */
  int threads;   /* per workgroup */
  double cycles; /* the model's time */
} map_gpu_dw_sched;

enum { MAP_GPU_DW_MAX = 4 };

/* The candidates for p on acg, cheapest first (at most MAP_GPU_DW_MAX in
 * out[], their number in *n); `where` names the layer in a diagnostic. */
cov_status map_gpu_dw_plan(const cov_acg *acg, const map_gpu_dw_problem *p, const char *where, map_gpu_dw_sched *out,
                           int *n);

#endif
