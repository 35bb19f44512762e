/* backends/gpu/gpu_lower_tile.c: the operand tiles of a contraction
 * kernel's pipeline stages in shared memory (swizzled addressing, the A and
 * B tiles of a stage), the split of a cooperative copy's element index, and
 * a warpgroup's batch of MMAs on a stage: what the tiled kernel
 * (gpu_lower.c), the FMA fragment (gpu_fma.c) and the warp-specialised
 * kernel (gpu_lower_ws.c) share. */
#include "backends/gpu/gpu_lower.h"

LLVMValueRef gpu_tile_addr(gpu_gen *g, const gpu_tile *t, LLVMValueRef row, LLVMValueRef col) {
  int row_bytes = t->cols * t->esize, row_chunks = row_bytes / 16;
  LLVMValueRef slab_off = NULL;
  if (t->slab) { /* slab col / slab, then column col % slab of its [rows][slab] */
    row_bytes = t->slab * t->esize, row_chunks = row_bytes / 16;
    slab_off = mul(g, udiv(g, col, t->slab), C((long long)t->rows * row_bytes));
    col = urem(g, col, t->slab);
  }
  LLVMValueRef byte = mul(g, col, C(t->esize));
  LLVMValueRef chunk = LLVMBuildLShr(g->b, byte, C(4), "");
  LLVMValueRef within = LLVMBuildAnd(g->b, byte, C(15), "");
  LLVMValueRef key; /* mirrors gpu_swizzle_chunk */
  if (row_chunks >= 8)
    key = LLVMBuildAnd(g->b, row, C(7), "");
  else
    key = LLVMBuildAnd(g->b, udiv(g, row, 8 / row_chunks), C(row_chunks - 1), "");
  LLVMValueRef swz = LLVMBuildXor(g->b, chunk, key, "");
  LLVMValueRef off = add(g, add(g, mul(g, row, C(row_bytes)), LLVMBuildShl(g->b, swz, C(4), "")), within);
  if (slab_off) off = add(g, slab_off, off);
  return gep8(g, t->base, off);
}

gpu_tile gpu_k_tile_a(kernel *k, LLVMValueRef stage) {
  gpu_gen *g = k->g;
  gpu_tile t = {gep8(g, k->smem, mul(g, stage, C(k->stage_bytes))), k->p->bm, k->p->bk, k->esize, 0};
  return t;
}
gpu_tile gpu_k_tile_b(kernel *k, LLVMValueRef stage) {
  gpu_gen *g = k->g;
  LLVMValueRef off = add(g, mul(g, stage, C(k->stage_bytes)), C(k->a_bytes));
  /* warpgroup MMAs read B as 128-byte (64-column) slabs */
  gpu_tile t = {gep8(g, k->smem, off), k->p->bk, k->p->bn, k->esize, k->p->wgmma ? 128 / k->esize : 0};
  return t;
}

/* Element/chunk e = tid + i*threads of a copy, split as (e / width,
 * e % width); written so that when `threads` is a multiple of `width` the
 * per-thread part is visibly loop-invariant (LLVM hoists it out of the K
 * loop: the conv gather's pixel decomposition then costs nothing per tile). */
void gpu_k_split(kernel *k, int i, int width, LLVMValueRef *major, LLVMValueRef *minor) {
  gpu_gen *g = k->g;
  int T = k->p->threads;
  if (T % width == 0) {
    *minor = urem(g, k->tid, width);
    *major = add(g, udiv(g, k->tid, width), C((long long)i * (T / width)));
  } else {
    LLVMValueRef e = add(g, k->tid, C((long long)i * T));
    *major = udiv(g, e, width), *minor = urem(g, e, width);
  }
}

/* Warpgroup MMA on stage `stage`: issues the bk/16 instructions of the
 * warpgroup's tile as one batch, which runs while the caller issues the next
 * copies; wg_stage_wait then waits until `pending` batches are left. The
 * accumulators travel in acc[] from the issue to the wait (and through the
 * slots, which become registers, to the next step). */
void gpu_k_wg_issue(kernel *k, LLVMValueRef stage, LLVMValueRef *acc) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  gpu_tile ta = gpu_k_tile_a(k, stage), tb = gpu_k_tile_b(k, stage);
  int n = p->wn / 2;
  for (int i = 0; i < n; i++) acc[i] = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
  g->target->wg_fence(g);
  for (int kk = 0; kk < p->bk; kk += p->fk) g->target->wg_mma(g, &ta, k->wg_row, &tb, k->wg_col, kk, p->wn, acc);
  g->target->wg_commit(g);
}
void gpu_k_wg_wait(kernel *k, LLVMValueRef *acc, int pending) {
  gpu_gen *g = k->g;
  int n = k->p->wn / 2;
  g->target->wg_wait(g, pending, acc, n);
  for (int i = 0; i < n; i++) LLVMBuildStore(g->b, acc[i], k->acc_slots[i]);
}

