/* backends/gpu/gpu_lower_gate.c: the A-operand prologue of the tiled
 * matrix kernel (gpu_problem.a_pro), applied where the NCHW gather reads an
 * element into registers, before it is stored to the shared-memory tile.
 *
 * GPU_APRO_GATE: the element of GEMM row m = (n, oh, ow), column
 * kk = (c, r, s) is x[idx] (f32) * gate[n][gidx * C/groups + c] (f32),
 * rounded once to the operand's 16-bit type. The image n is the row's own
 * (rows of one tile may belong to two images), so it is taken per
 * element; out-of-range elements (padding, rows past M, columns past K)
 * read nothing and are zero. GPU_APRO_CAST: x[idx] alone, rounded. */
#include "backends/gpu/gpu_lower.h"

LLVMValueRef gpu_k_prologue_a(kernel *k, LLVMValueRef idx, LLVMValueRef ok, LLVMValueRef m, LLVMValueRef kk) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_problem *q = &p->prob;
  LLVMValueRef xi = LLVMBuildSelect(g->b, ok, idx, C(0), "");
  LLVMValueRef x = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->A, xi), "");
  if (q->a_pro == GPU_APRO_GATE) {
    LLVMValueRef n = udiv(g, m, p->oh * p->ow), c = udiv(g, kk, q->cr * q->cs);
    LLVMValueRef ch = add(g, mul(g, k->gidx, C(q->cc / q->groups)), c);
    LLVMValueRef gi = LLVMBuildSelect(g->b, ok, add(g, mul(g, n, C(q->cc)), ch), C(0), "");
    x = LLVMBuildFMul(g->b, x, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->apro, gi), ""), "");
  }
  LLVMValueRef v = LLVMBuildFPTrunc(g->b, x, g->in_t, "");
  return LLVMBuildSelect(g->b, ok, v, LLVMConstNull(g->in_t), "");
}
