/* backends/amdgpu/amdgpu_target.c: the AMDGPU target operations.
 *
 * MFMA operand layouts (AMD CDNA2/CDNA3 ISA guides, "Matrix fused multiply
 * add"; lane l of 64, four f16/bf16 per operand register pair):
 *   16x16x16: a[i] = A[l%16][4(l/16)+i]   b[i] = B[4(l/16)+i][l%16]
 *             d[i] = D[4(l/16)+i][l%16]                     i = 0..3
 *   32x32x8:  a[i] = A[l%32][4(l/32)+i]   b[i] = B[4(l/32)+i][l%32]
 *             d[j] = D[8(j/4)+4(l/32)+j%4][l%32]            j = 0..15
 * A fragments are one 8-byte LDS read from the [m][k] tile; B fragments are
 * four 2-byte reads down a column of the [k][n] tile. */
#include "backends/amdgpu/amdgpu_target.h"

#include <stdio.h>
#include <string.h>

static void attr(gpu_gen *g, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(g->ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

static void amd_mark_kernel(gpu_gen *g, LLVMValueRef fn) {
  LLVMSetFunctionCallConv(fn, LLVMAMDGPUKERNELCallConv);
  char v[32];
  snprintf(v, sizeof v, "%d,%d", g->plan->threads, g->plan->threads);
  attr(g, fn, "amdgpu-flat-work-group-size", v);
  /* at least two waves per SIMD: the register allocator keeps VGPR+AGPR
   * use within half the file (checked again on the code object) */
  attr(g, fn, "amdgpu-waves-per-eu", "2");
}

static LLVMValueRef amd_thread_id(gpu_gen *g) {
  return gpu_call_intrinsic(g, "llvm.amdgcn.workitem.id.x", NULL, 0, NULL, 0);
}

static LLVMValueRef amd_block_id(gpu_gen *g, int dim) {
  static const char *names[3] = {"llvm.amdgcn.workgroup.id.x", "llvm.amdgcn.workgroup.id.y",
                                 "llvm.amdgcn.workgroup.id.z"};
  return gpu_call_intrinsic(g, names[dim], NULL, 0, NULL, 0);
}

static void amd_barrier(gpu_gen *g) {
  /* __syncthreads for LDS: wait for this wave's outstanding memory and LDS
   * operations, then s_barrier. The inline asm clobbers memory so LLVM
   * moves no load or store across it (llvm.amdgcn.s.barrier is IntrNoMem,
   * and LLVM 19's C API cannot build a workgroup-scope fence). */
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), NULL, 0, 0);
  const char *code = "s_waitcnt vmcnt(0) lgkmcnt(0)\n\ts_barrier", *cons = "~{memory}";
  LLVMValueRef asm_fn = LLVMGetInlineAsm(ft, code, strlen(code), cons, strlen(cons), 1, 0,
                                         LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(g->b, ft, asm_fn, NULL, 0, "");
}

static LLVMValueRef amd_shared_array(gpu_gen *g, unsigned bytes) {
  LLVMTypeRef t = LLVMArrayType2(g->i8, bytes);
  LLVMValueRef v = LLVMAddGlobalInAddressSpace(g->mod, t, "covenant_lds", 3);
  LLVMSetInitializer(v, LLVMGetUndef(t));
  LLVMSetLinkage(v, LLVMInternalLinkage);
  LLVMSetAlignment(v, 16);
  return v;
}

static int frag_w(gpu_gen *g) { return g->plan->fm; } /* 16 or 32 */

static LLVMValueRef mfma_load_a(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, int k0) {
  int w = frag_w(g);
  LLVMValueRef row = LLVMBuildAdd(g->b, row0, LLVMBuildURem(g->b, g->lane, gpu_i32(g, w), ""), "");
  LLVMValueRef col = LLVMBuildAdd(g->b, gpu_i32(g, k0),
                                  LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, w), ""), gpu_i32(g, 4), ""), "");
  LLVMValueRef v = LLVMBuildLoad2(g->b, LLVMVectorType(g->i16, 4), gpu_tile_addr(g, a, row, col), "");
  LLVMSetAlignment(v, 8);
  return v;
}

static LLVMValueRef mfma_load_b(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0) {
  int w = frag_w(g);
  LLVMValueRef col = LLVMBuildAdd(g->b, col0, LLVMBuildURem(g->b, g->lane, gpu_i32(g, w), ""), "");
  LLVMValueRef kb = LLVMBuildAdd(g->b, gpu_i32(g, k0),
                                 LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, w), ""), gpu_i32(g, 4), ""), "");
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(g->i16, 4));
  for (int i = 0; i < 4; i++) {
    LLVMValueRef x = LLVMBuildLoad2(g->b, g->i16, gpu_tile_addr(g, b, LLVMBuildAdd(g->b, kb, gpu_i32(g, i), ""), col), "");
    v = LLVMBuildInsertElement(g->b, v, x, gpu_i32(g, i), "");
  }
  return v;
}

static void mfma_op(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *acc) {
  int w = frag_w(g), n = w == 16 ? 4 : 16, bf = g->in_t == g->bf16;
  const char *name = w == 16 ? (bf ? "llvm.amdgcn.mfma.f32.16x16x16bf16.1k" : "llvm.amdgcn.mfma.f32.16x16x16f16")
                             : (bf ? "llvm.amdgcn.mfma.f32.32x32x8bf16.1k" : "llvm.amdgcn.mfma.f32.32x32x8f16");
  LLVMTypeRef vf = LLVMVectorType(g->f32, (unsigned)n);
  LLVMValueRef c = LLVMGetUndef(vf);
  for (int i = 0; i < n; i++) c = LLVMBuildInsertElement(g->b, c, acc[i], gpu_i32(g, i), "");
  if (!bf) {
    a = LLVMBuildBitCast(g->b, a, LLVMVectorType(g->f16, 4), "");
    b = LLVMBuildBitCast(g->b, b, LLVMVectorType(g->f16, 4), "");
  }
  LLVMValueRef args[6] = {a, b, c, gpu_i32(g, 0), gpu_i32(g, 0), gpu_i32(g, 0)};
  LLVMValueRef d = gpu_call_intrinsic(g, name, NULL, 0, args, 6);
  for (int i = 0; i < n; i++) acc[i] = LLVMBuildExtractElement(g->b, d, gpu_i32(g, i), "");
}

static void mfma_acc_coord(gpu_gen *g, int i, LLVMValueRef *row, LLVMValueRef *col) {
  int w = frag_w(g);
  LLVMValueRef quad = LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, g->lane, gpu_i32(g, w), ""), gpu_i32(g, 4), "");
  int base = w == 16 ? i : 8 * (i / 4) + i % 4;
  *row = LLVMBuildAdd(g->b, quad, gpu_i32(g, base), "");
  *col = LLVMBuildURem(g->b, g->lane, gpu_i32(g, w), "");
}

/* v_dot4_i32_i8 (gfx90a, gfx942: dot1 instructions), no clamp: wraps */
static LLVMValueRef amd_dot4_i8(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[4] = {a, b, c, LLVMConstInt(g->i1, 0, 0)};
  return gpu_call_intrinsic(g, "llvm.amdgcn.sdot4", NULL, 0, args, 4);
}

/* ds_bpermute reads lane (address / 4) of the wave; lanes xor'ed below
 * 32 stay in their half of a wave of 64 */
static LLVMValueRef amd_lane_xor(gpu_gen *g, LLVMValueRef x, int mask) {
  LLVMValueRef lo_args[2] = {gpu_i32(g, -1), gpu_i32(g, 0)};
  LLVMValueRef lo = gpu_call_intrinsic(g, "llvm.amdgcn.mbcnt.lo", NULL, 0, lo_args, 2);
  LLVMValueRef hi_args[2] = {gpu_i32(g, -1), lo};
  LLVMValueRef lane = gpu_call_intrinsic(g, "llvm.amdgcn.mbcnt.hi", NULL, 0, hi_args, 2);
  LLVMValueRef addr = LLVMBuildShl(g->b, LLVMBuildXor(g->b, lane, gpu_i32(g, mask), ""), gpu_i32(g, 2), "");
  LLVMValueRef args[2] = {addr, x};
  return gpu_call_intrinsic(g, "llvm.amdgcn.ds.bpermute", NULL, 0, args, 2);
}

static LLVMValueRef amd_exp2(gpu_gen *g, LLVMValueRef x) {
  return gpu_call_intrinsic(g, "llvm.exp2", &g->f32, 1, &x, 1); /* v_exp_f32 */
}

static const gpu_frag_ops mfma16 = {16, 16, 16, 4, mfma_load_a, mfma_load_b, mfma_op, mfma_acc_coord, NULL, 0};
static const gpu_frag_ops mfma32 = {32, 32, 8, 16, mfma_load_a, mfma_load_b, mfma_op, mfma_acc_coord, NULL, 0};

static const gpu_frag_ops *amd_matrix_frag(const gpu_plan *p) {
  if (p->prob.in_dtype != COV_F16 && p->prob.in_dtype != COV_BF16) return NULL;
  if (p->fm == 16 && p->fn == 16 && p->fk == 16) return &mfma16;
  if (p->fm == 32 && p->fn == 32 && p->fk == 8) return &mfma32;
  return NULL;
}

static int amd_matrix_shapes(cov_dtype in, int (*out)[3], int max) {
  if ((in != COV_F16 && in != COV_BF16) || max < 2) return 0;
  out[0][0] = 16, out[0][1] = 16, out[0][2] = 16;
  out[1][0] = 32, out[1][1] = 32, out[1][2] = 8;
  return 2;
}

const gpu_target_ops amdgpu_target_ops = {
    .name = "amdgpu",
    .global_as = 1,
    .shared_as = 3,
    .mark_kernel = amd_mark_kernel,
    .thread_id = amd_thread_id,
    .block_id = amd_block_id,
    .barrier = amd_barrier,
    .shared_array = amd_shared_array,
    .async_copy16 = NULL,
    .async_commit = NULL,
    .async_wait = NULL,
    .exp2 = amd_exp2,
    .dot4_i8 = amd_dot4_i8,
    .lane_xor = amd_lane_xor,
    .matrix_frag = amd_matrix_frag,
    .matrix_shapes = amd_matrix_shapes,
};
