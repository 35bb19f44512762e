/* backends/gpu/gpu_fma.c: the plain-FMA fragment shared by every target.
 *
 * For f32 inputs, and for dtypes a target's matrix unit does not take, the
 * warp computes a (warp_size/8) x 8 block of C per fragment, one element
 * per lane (row lane/8, column lane%8), over fk = 4 steps of K with fused
 * multiply-adds in f32. Operands are widened to f32 as they are read. */
#include "backends/gpu/gpu_target.h"

enum { FMA_K = 4 };

static LLVMValueRef widen(gpu_gen *g, LLVMValueRef v) {
  return g->in_t == g->f32 ? v : LLVMBuildFPExt(g->b, v, g->f32, "");
}

static LLVMValueRef fma_load_a(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, int k0) {
  LLVMValueRef row = LLVMBuildAdd(g->b, row0, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 8), ""), "");
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(g->f32, FMA_K));
  for (int i = 0; i < FMA_K; i++) {
    LLVMValueRef x = LLVMBuildLoad2(g->b, g->in_t, gpu_tile_addr(g, a, row, gpu_i32(g, k0 + i)), "");
    v = LLVMBuildInsertElement(g->b, v, widen(g, x), gpu_i32(g, i), "");
  }
  return v;
}

static LLVMValueRef fma_load_b(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0) {
  LLVMValueRef col = LLVMBuildAdd(g->b, col0, LLVMBuildURem(g->b, g->lane, gpu_i32(g, 8), ""), "");
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(g->f32, FMA_K));
  for (int i = 0; i < FMA_K; i++) {
    LLVMValueRef x = LLVMBuildLoad2(g->b, g->in_t, gpu_tile_addr(g, b, gpu_i32(g, k0 + i), col), "");
    v = LLVMBuildInsertElement(g->b, v, widen(g, x), gpu_i32(g, i), "");
  }
  return v;
}

static void fma_mma(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *acc) {
  for (int i = 0; i < FMA_K; i++) {
    LLVMValueRef args[3] = {LLVMBuildExtractElement(g->b, a, gpu_i32(g, i), ""),
                            LLVMBuildExtractElement(g->b, b, gpu_i32(g, i), ""), acc[0]};
    acc[0] = gpu_call_intrinsic(g, "llvm.fma", &g->f32, 1, args, 3);
  }
}

static void fma_acc_coord(gpu_gen *g, int i, LLVMValueRef *row, LLVMValueRef *col) {
  (void)i;
  *row = LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, 8), "");
  *col = LLVMBuildURem(g->b, g->lane, gpu_i32(g, 8), "");
}

static const gpu_frag_ops fma32 = {4, 8, FMA_K, 1, fma_load_a, fma_load_b, fma_mma, fma_acc_coord, NULL, 0};
static const gpu_frag_ops fma64 = {8, 8, FMA_K, 1, fma_load_a, fma_load_b, fma_mma, fma_acc_coord, NULL, 0};

const gpu_frag_ops *gpu_fma_frag(int warp_size) {
  return warp_size == 32 ? &fma32 : warp_size == 64 ? &fma64 : NULL;
}
