/* backends/gpu/gpu_lower.h: the contraction kernel's builder state and the
 * pieces the tiled kernel (gpu_lower.c), the warp-specialised kernel
 * (gpu_lower_ws.c), the FMA fragment and the depthwise kernel share:
 * operand tiles of a pipeline stage and a warpgroup-MMA batch
 * (gpu_lower_tile.c), the epilogues (gpu_lower_epi.c). Internal to
 * backends/gpu. */
#ifndef COV_GPU_LOWER_H
#define COV_GPU_LOWER_H

#include "backends/gpu/gpu_ir.h"

typedef struct kernel {
  gpu_gen *g;
  const gpu_plan *p;
  const gpu_frag_ops *fr;
  LLVMValueRef A, B, Cout, bias;
  LLVMValueRef tid, gidx, m0, n0, wrow, wcol, smem, ktable;
  LLVMValueRef wg_row, wg_col; /* warpgroup MMA: the warpgroup's tile origin */
  /* split-K (plan.split): this workgroup's range index and first K tile,
   * the workspace and counters (arguments 4, 5) */
  LLVMValueRef split_z, kt0, split_ws, split_count;
  LLVMValueRef resid; /* epi.residual: the addend (argument 6), laid out as the output */
  LLVMValueRef apro; /* prob.a_pro: its operand (argument GPU_APRO_ARG) */
  int esize, a_bytes, stage_bytes, nmf, nnf;
  LLVMValueRef *acc_slots; /* allocas: nmf * nnf * n_acc */
} kernel;

/* The A element of GEMM row m, column kk at input index idx (ok: in
 * range, else 0) read through the problem's prologue (gpu_lower_gate.c). */
LLVMValueRef gpu_k_prologue_a(kernel *k, LLVMValueRef idx, LLVMValueRef ok, LLVMValueRef m, LLVMValueRef kk);

/* Element/chunk e = tid + i*threads of a cooperative copy, split as
 * (e / width, e % width) (gpu_lower_tile.c). */
void gpu_k_split(kernel *k, int i, int width, LLVMValueRef *major, LLVMValueRef *minor);
/* The A and B tiles of pipeline stage `stage` (i32). */
gpu_tile gpu_k_tile_a(kernel *k, LLVMValueRef stage);
gpu_tile gpu_k_tile_b(kernel *k, LLVMValueRef stage);
/* A warpgroup's batch of MMAs on stage `stage`: accumulators from the slots
 * into acc[], issued, committed; gpu_k_wg_wait waits until `pending`
 * batches remain and stores acc[] back into the slots. */
void gpu_k_wg_issue(kernel *k, LLVMValueRef stage, LLVMValueRef *acc);
void gpu_k_wg_wait(kernel *k, LLVMValueRef *acc, int pending);
/* Bias, activation and the stores of the accumulator slots at the tile
 * (k->m0, k->n0) of batch k->gidx, from the registers (no shared memory). */
void gpu_k_epilogue(kernel *k);
/* The epilogue through shared memory (gpu_lower_epi.c): the tile staged
 * there, then stored into a convolution's NCHW or NHWC output, or a row
 * softmax of it. */
void gpu_k_stage_out(kernel *k);
void gpu_k_conv_staged_store(kernel *k);
void gpu_k_conv_staged_store_nhwc(kernel *k);
void gpu_k_softmax_rows(kernel *k);
/* Split-K after the K loop (gpu_lower_split.c): the partial tile stored,
 * the tile's counter bumped; a workgroup that is not the tile's last
 * returns, the last resets the counter and leaves the sum of the split
 * partials, in range order, in the accumulator slots. */
void gpu_k_split_combine(kernel *k);
/* The warp-specialised, persistent kernel of a plan.tma (gpu_lower_ws.c);
 * k->fr, esize, a_bytes, stage_bytes, nmf, nnf are set, g->fn is the kernel
 * with the builder at its entry. */
cov_status gpu_lower_ws(kernel *k);

#endif
